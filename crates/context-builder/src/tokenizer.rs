//! Token counts: the chars/4 heuristic the reference uses everywhere, or
//! exact counts with a real BPE vocabulary (o200k or cl100k, compiled in,
//! offline) for people who want true numbers.

use musepi_session_model::{AgentMessage, Content, ContentBlock};

use crate::convert::bash_execution_to_text;
use crate::estimate::{IMAGE_CHARS, chars_to_tokens, estimate_tokens};

/// How tokens are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tokenizer {
    /// `ceil(chars / 4)` in UTF-16 units (docs/design.md, "Token estimates"), what every decision uses.
    #[default]
    Heuristic,
    /// `OpenAI`'s o200k BPE (GPT-4o and later).
    O200k,
    /// `OpenAI`'s cl100k BPE (GPT-4, GPT-3.5).
    Cl100k,
}

impl Tokenizer {
    /// Parses `heuristic`, `o200k` or `cl100k`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "heuristic" | "chars4" => Some(Self::Heuristic),
            "o200k" | "o200k_base" => Some(Self::O200k),
            "cl100k" | "cl100k_base" => Some(Self::Cl100k),
            _ => None,
        }
    }

    /// The name `parse` reads.
    pub fn name(self) -> &'static str {
        match self {
            Self::Heuristic => "heuristic",
            Self::O200k => "o200k",
            Self::Cl100k => "cl100k",
        }
    }

    /// Tokens of one message: the same parts the heuristic counts (text,
    /// thinking, tool names and JSON arguments, bash command and output,
    /// summaries), encoded; an image counts the heuristic's 1,200 tokens.
    pub fn count_message(self, message: &AgentMessage) -> u64 {
        let bpe = match self {
            Self::Heuristic => return estimate_tokens(message),
            Self::O200k => bpe_openai::o200k_base(),
            Self::Cl100k => bpe_openai::cl100k_base(),
        };
        let text = |s: &str| bpe.count(s) as u64;
        let image_tokens = chars_to_tokens(IMAGE_CHARS);
        let content = |c: &Content| -> u64 {
            match c {
                Content::Text(t) => text(t),
                Content::Blocks(blocks) => blocks
                    .iter()
                    .map(|b| match b {
                        ContentBlock::Image { .. } => image_tokens,
                        other => self.count_block(other),
                    })
                    .sum(),
            }
        };
        match message {
            AgentMessage::User(m) => content(&m.content),
            AgentMessage::Assistant(m) => content(&m.content),
            AgentMessage::ToolResult(m) => content(&m.content),
            AgentMessage::Custom(m) => content(&m.content),
            AgentMessage::BashExecution(m) => text(&bash_execution_to_text(m)),
            AgentMessage::BranchSummary(m) => text(&m.summary),
            AgentMessage::CompactionSummary(m) => text(&m.summary),
            AgentMessage::Other { .. } => 0,
        }
    }
}

impl Tokenizer {
    /// Tokens of a block's text: a text, a thinking, or a tool call's name
    /// and compact JSON arguments (images and other blocks count 0 here).
    pub(crate) fn count_block(self, block: &ContentBlock) -> u64 {
        let bpe = match self {
            Self::Heuristic => return chars_to_tokens(block_chars(block)),
            Self::O200k => bpe_openai::o200k_base(),
            Self::Cl100k => bpe_openai::cl100k_base(),
        };
        let text = |s: &str| bpe.count(s) as u64;
        match block {
            ContentBlock::Text { text: t, .. } => text(t),
            ContentBlock::Thinking { thinking, .. } => text(thinking),
            ContentBlock::ToolCall(call) => {
                text(&call.name)
                    + text(&musepi_session_model::json::js_stringify(
                        call.arguments.value(),
                    ))
            }
            _ => 0,
        }
    }
}

/// UTF-16 units of a block's text as the estimate counts them: a text, a
/// thinking, or a tool call's name and compact JSON arguments (images are
/// counted apart, other blocks not at all).
pub(crate) fn block_chars(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text { text, .. } => text.utf16_len(),
        ContentBlock::Thinking { thinking, .. } => thinking.utf16_len(),
        ContentBlock::ToolCall(call) => call.name.utf16_len() + call.arguments.js_len(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use musepi_session_model::{Text, UserMessage};

    use super::*;

    #[test]
    fn bpe_counts_differ_from_the_heuristic_and_from_each_other() {
        let m = AgentMessage::User(UserMessage {
            content: Content::Text(Text::new("The quick brown fox jumps over the lazy dog.")),
            ..Default::default()
        });
        assert_eq!(Tokenizer::Heuristic.count_message(&m), 11);
        assert_eq!(Tokenizer::O200k.count_message(&m), 10);
        assert_eq!(Tokenizer::Cl100k.count_message(&m), 10);
        assert_eq!(Tokenizer::parse("o200k"), Some(Tokenizer::O200k));
        assert_eq!(Tokenizer::parse("gpt2"), None);
    }
}
