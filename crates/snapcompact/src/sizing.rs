//! How large a compaction's summary may be: the sizing rule.
//!
//! The whole summary (lead-in, reading guide, archive and file list) takes
//! at most the least of
//!
//! - what pi lets an LLM summary take: `floor(0.8 × reserveTokens)` tokens
//!   (pi asks the summarizing model for at most that many), so an archive
//!   never costs more than the LLM summary it stands in for may;
//! - a quarter of the history it replaces (the summarized messages and
//!   the earlier summary they continue): a short history is compressed
//!   four times at least, not kept almost whole;
//!
//! and never less than 3,600 tokens (the lead-in and the guide, and the
//! 12,000 characters an archive always had: a ledger needs room); then at
//! most an eighth of the context window left beside the reserve, whatever
//! the rest says (a 32,768-token window with the default reserve of
//! 16,384 leaves 16,384 tokens, so 2,048 tokens of summary), and at least
//! 1,000 tokens (the lead-in and the guide take about 550).
//!
//! With the default reserve and a window of 128,000 tokens or more, a long
//! history gets 13,107 tokens; the 18,500-token history of the example
//! session gets 4,625.
//!
//! Tokens are the context's estimate, four characters each.

/// The share of the reserve, in tenths, an LLM summary may take in pi.
pub const LLM_SUMMARY_TENTHS: u64 = 8;
/// The history is compressed at least this many times.
pub const MIN_COMPRESSION: u64 = 4;
/// The summary takes at most one part in this many of the window left
/// beside the reserve.
pub const WINDOW_PARTS: u64 = 8;
/// The smallest summary, in tokens, when the window leaves room for it.
pub const MIN_SUMMARY_TOKENS: u64 = 3_600;
/// The smallest summary in any window, in tokens.
pub const FLOOR_SUMMARY_TOKENS: u64 = 1_000;

use musepi_context_builder::{IMAGE_CHARS, LlmMessage};
use musepi_session_model::ContentBlock;

use crate::util::len16;

/// What the size of a summary depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizing {
    /// `compaction.reserveTokens`.
    pub reserve_tokens: u64,
    /// The model's context window, when known.
    pub context_window: Option<u64>,
    /// The tokens of the history the summary replaces.
    pub history_tokens: u64,
}

impl Sizing {
    /// The most tokens the whole summary may take (see the module
    /// documentation).
    pub fn summary_tokens(&self) -> u64 {
        let llm = self.reserve_tokens * LLM_SUMMARY_TENTHS / 10;
        let history = self.history_tokens / MIN_COMPRESSION;
        let tokens = llm.min(history).max(MIN_SUMMARY_TOKENS);
        match self.context_window {
            Some(window) => tokens
                .min(window.saturating_sub(self.reserve_tokens) / WINDOW_PARTS)
                .max(FLOOR_SUMMARY_TOKENS),
            None => tokens,
        }
    }

    /// [`Sizing::summary_tokens`] in UTF-16 units, four to a token.
    pub fn summary_chars(&self) -> usize {
        usize::try_from(self.summary_tokens().saturating_mul(4)).unwrap_or(usize::MAX)
    }
}

/// The tokens of `messages` as the context estimates them, four
/// characters to a token: their text, reasoning, tool calls (name and
/// arguments as JSON) and tool output, and an image as
/// [`IMAGE_CHARS`].
pub fn history_tokens(messages: &[LlmMessage]) -> u64 {
    let chars: usize = messages.iter().map(message_chars).sum();
    chars.div_ceil(4) as u64
}

fn message_chars(message: &LlmMessage) -> usize {
    if let LlmMessage::ProviderHistory(h) = message {
        return h.fallback().map(message_chars).sum();
    }
    message
        .content()
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text, .. } => text.utf16_len(),
            ContentBlock::Thinking { thinking, .. } => thinking.utf16_len(),
            ContentBlock::ToolCall(call) => len16(&call.name) + call.arguments.js_len(),
            ContentBlock::Image { .. } => IMAGE_CHARS,
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(reserve: u64, window: Option<u64>, history: u64) -> u64 {
        Sizing {
            reserve_tokens: reserve,
            context_window: window,
            history_tokens: history,
        }
        .summary_tokens()
    }

    #[test]
    fn a_history_counts_its_text_reasoning_calls_and_outputs() {
        use crate::testkit::{assistant, call, result};
        let messages = [
            LlmMessage::user_text("x".repeat(40)),
            assistant(vec![
                ContentBlock::text("y".repeat(40)),
                call("c1", "bash", serde_json::json!({"command": "ls"})),
            ]),
            result("c1", &"z".repeat(40), false),
        ];
        // 120 characters of text, 4 + 16 of the call.
        assert_eq!(history_tokens(&messages), 35);
    }

    #[test]
    fn a_long_history_gets_what_an_llm_summary_may_take() {
        assert_eq!(tokens(16_384, Some(200_000), 120_000), 13_107);
        assert_eq!(tokens(16_384, None, 1_000_000), 13_107);
        assert_eq!(tokens(65_536, Some(1_000_000), 1_000_000), 52_428);
    }

    #[test]
    fn a_short_history_is_compressed_four_times() {
        assert_eq!(tokens(16_384, Some(200_000), 18_500), 4_625);
        // But a ledger needs room.
        assert_eq!(tokens(16_384, Some(200_000), 2_000), 3_600);
    }

    #[test]
    fn a_small_window_gets_an_eighth_of_what_the_reserve_leaves() {
        assert_eq!(tokens(16_384, Some(32_768), 120_000), 2_048);
        assert_eq!(tokens(16_384, Some(128_000), 120_000), 13_107);
        assert_eq!(tokens(16_384, Some(64_000), 120_000), 5_952);
        // A window no larger than the reserve still gets the guide and a
        // little archive.
        assert_eq!(tokens(16_384, Some(16_000), 120_000), 1_000);
    }
}
