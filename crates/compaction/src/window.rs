//! Summarizing history too large for the summarizer in windows (docs/design.md, "Summaries"):
//! the messages are split into windows that fit, and each window's summary
//! is folded into the next with the update prompt.

use std::ops::Range;

use musepi_context_builder::{
    ContextMessage, SummaryRequest, serialize_for_summary, truncate_for_summary,
};
use musepi_session_model::json::utf16_len;

use crate::request::{RequestOptions, history_max_tokens, history_summary};
use crate::settings::CompactionSettings;

/// The context window assumed for a summarizer that does not say (docs/design.md, "Summaries").
pub const DEFAULT_SUMMARIZER_WINDOW: u64 = 200_000;

/// The smallest input a window may have, in tokens:
/// `min(16384, max(1024, floor(window / 8)))`.
pub fn min_window_tokens(summarizer_window: u64) -> u64 {
    (summarizer_window / 8).clamp(1024, 16_384)
}

/// The summarizer input budget in tokens:
/// `max(minInput, floor(window × 0.8) − maxTokens − 16384)`.
pub fn input_budget_tokens(summarizer_window: u64, max_tokens: u32) -> u64 {
    let room = (summarizer_window * 8 / 10)
        .saturating_sub(u64::from(max_tokens))
        .saturating_sub(16_384);
    room.max(min_window_tokens(summarizer_window))
}

/// The context window an overflow rejection states, when it does
/// (`maximum context length is 4096 tokens`, `exceeds the limit of 8192`,
/// `too large for model with 8192 maximum context length`, `maximum prompt
/// length is 4096`).
pub fn window_from_overflow_message(message: &str) -> Option<u64> {
    let lower = message.to_ascii_lowercase();
    let after = |marker: &str| {
        let at = lower.find(marker)? + marker.len();
        let digits: String = lower[at..]
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    let before = |marker: &str| {
        let at = lower.find(marker)?;
        let head = lower[..at].trim_end();
        let digits: String = head
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        digits.parse().ok()
    };
    after("maximum context length is")
        .or_else(|| after("maximum prompt length is"))
        .or_else(|| after("exceeds the limit of"))
        .or_else(|| before("maximum context length"))
        .filter(|&w| w > 0)
}

/// The history to summarize, as units that windows are cut from: each
/// message's serialization (non-empty ones only).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HistoryUnits {
    units: Vec<String>,
    previous_summary: Option<String>,
    options: RequestOptions,
    max_tokens: u32,
    reasoning: Option<String>,
}

impl HistoryUnits {
    /// The units of `messages`, with the previous summary, the request
    /// options and the reasoning effort each window's request asks for.
    pub fn new(
        messages: &[ContextMessage<'_>],
        previous_summary: Option<String>,
        settings: &CompactionSettings,
        options: &RequestOptions,
        reasoning: Option<String>,
    ) -> Self {
        let units = messages
            .iter()
            .map(|m| serialize_for_summary(std::slice::from_ref(m)))
            .filter(|s| !s.is_empty())
            .collect();
        Self {
            units,
            previous_summary,
            options: options.clone(),
            max_tokens: history_max_tokens(settings),
            reasoning,
        }
    }

    /// Number of units.
    pub fn len(&self) -> usize {
        self.units.len()
    }

    /// Whether there is nothing to summarize.
    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// The output limit of each window's request.
    pub fn max_tokens(&self) -> u32 {
        self.max_tokens
    }

    /// The previous compaction's summary, which the first window folds into.
    pub fn previous_summary(&self) -> Option<&str> {
        self.previous_summary.as_deref()
    }

    /// Estimated tokens of the whole serialized history.
    pub fn tokens(&self) -> u64 {
        let chars: usize = self.units.iter().map(|u| utf16_len(u) + 2).sum();
        (chars as u64).div_ceil(4)
    }

    /// The next window starting at unit `start`: as many units as fit in
    /// `budget_tokens` of conversation (at least one).
    pub fn next_window(&self, start: usize, budget_tokens: u64) -> Range<usize> {
        let budget_chars = usize::try_from(budget_tokens.saturating_mul(4)).unwrap_or(usize::MAX);
        let mut used = 0usize;
        let mut end = start;
        while end < self.units.len() {
            let len = utf16_len(&self.units[end]) + 2;
            if end > start && used + len > budget_chars {
                break;
            }
            used += len;
            end += 1;
        }
        start..end
    }

    /// How many windows of `budget_tokens` the units from `start` on take:
    /// the requests a windowed summary sends when none is rejected.
    pub fn window_count(&self, start: usize, budget_tokens: u64) -> usize {
        let mut count = 0;
        let mut at = start;
        while at < self.units.len() {
            at = self.next_window(at, budget_tokens).end;
            count += 1;
        }
        count
    }

    /// The request for the units in `window`, folding into `previous` (the
    /// summary so far) with the update prompt when there is one. A single
    /// unit larger than `budget_tokens` is cut to fit, with a marker.
    pub fn window_request(
        &self,
        window: Range<usize>,
        previous: Option<&str>,
        budget_tokens: u64,
    ) -> SummaryRequest {
        let budget_chars = usize::try_from(budget_tokens.saturating_mul(4)).unwrap_or(usize::MAX);
        let units = &self.units[window];
        let conversation = if units.len() == 1 && utf16_len(&units[0]) > budget_chars {
            truncate_for_summary(&units[0], budget_chars).into_owned()
        } else {
            units.join("\n\n")
        };
        history_summary(
            &conversation,
            previous,
            &self.options,
            self.max_tokens,
            self.reasoning.clone(),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use musepi_session_model::{AgentMessage, Content, Text, UserMessage};

    use super::*;

    fn messages(sizes: &[usize]) -> Vec<ContextMessage<'static>> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| ContextMessage {
                entry_index: i,
                message: Cow::Owned(AgentMessage::User(UserMessage {
                    content: Content::Text(Text::new("u".repeat(n))),
                    ..Default::default()
                })),
            })
            .collect()
    }

    #[test]
    fn overflow_messages_state_the_window() {
        assert_eq!(
            window_from_overflow_message(
                "This model's maximum context length is 4096 tokens. However…"
            ),
            Some(4096)
        );
        assert_eq!(
            window_from_overflow_message("input exceeds the limit of 8192"),
            Some(8192)
        );
        assert_eq!(
            window_from_overflow_message(
                "Request too large for model with 32768 maximum context length"
            ),
            Some(32_768)
        );
        assert_eq!(window_from_overflow_message("prompt is too long"), None);
    }

    #[test]
    fn budgets_follow_the_summarizer_window() {
        assert_eq!(min_window_tokens(200_000), 16_384);
        assert_eq!(min_window_tokens(2_048), 1_024);
        assert_eq!(input_budget_tokens(200_000, 13_107), 130_509);
        assert_eq!(input_budget_tokens(8_192, 4_096), 1_024);
    }

    #[test]
    fn windows_take_what_fits_and_at_least_one_unit() {
        let h = HistoryUnits::new(
            &messages(&[400, 400, 400, 4_000]),
            None,
            &CompactionSettings::default(),
            &RequestOptions::default(),
            None,
        );
        // 400 + "[User]: " (8) + 2 separators: 410 chars each.
        assert_eq!(h.next_window(0, 210), 0..2);
        assert_eq!(h.next_window(2, 210), 2..3);
        assert_eq!(h.next_window(3, 210), 3..4);
        assert_eq!(h.next_window(0, 100_000), 0..4);
        assert_eq!(h.window_count(0, 210), 3);
        assert_eq!(h.window_count(2, 210), 2);
        assert_eq!(h.window_count(4, 210), 0);
        assert_eq!(h.window_count(0, 100_000), 1);
    }

    #[test]
    fn later_windows_fold_into_the_summary_so_far_and_oversized_units_are_cut() {
        let h = HistoryUnits::new(
            &messages(&[10, 4_000]),
            Some("PREV".into()),
            &CompactionSettings::default(),
            &RequestOptions::default(),
            Some("low".into()),
        );
        let first = h.window_request(0..1, h.previous_summary(), 100);
        assert!(
            first
                .prompt_text()
                .contains("<previous-summary>\nPREV\n</previous-summary>")
        );
        assert_eq!(first.reasoning.as_deref(), Some("low"));
        let second = h.window_request(1..2, Some("SO FAR"), 100);
        let text = second.prompt_text();
        assert!(text.contains("<previous-summary>\nSO FAR\n</previous-summary>"));
        assert!(text.contains("more characters truncated]"), "{text}");
        assert!(text.contains("Write an updated checkpoint"));
    }
}
