//! Token accounting (docs/design.md, "Token estimates"): the chars/4 estimate, provider usage, and
//! the context estimate that combines them.

use musepi_session_model::json::whole_tokens;
use musepi_session_model::{AgentMessage, Content, ContentBlock, StopReason, Usage};

/// Characters an image block counts for: about 1,200 tokens.
pub const IMAGE_CHARS: usize = 4800;

/// `ceil(chars / 4)` for one message (docs/design.md, "Token estimates":
/// custom messages count, and user images count 4,800 characters).
///
/// Characters are UTF-16 code units; a tool call counts its name plus its
/// arguments as compact `JSON.stringify` output.
pub fn estimate_tokens(message: &AgentMessage) -> u64 {
    chars_to_tokens(estimate_chars(message))
}

/// `ceil(chars / 4)`.
pub fn chars_to_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// The character count behind [`estimate_tokens`].
pub fn estimate_chars(message: &AgentMessage) -> usize {
    match message {
        AgentMessage::User(m) => content_chars(&m.content),
        AgentMessage::Assistant(m) => match &m.content {
            Content::Text(t) => t.utf16_len(),
            Content::Blocks(blocks) => blocks
                .iter()
                .map(|b| match b {
                    ContentBlock::Text { text, .. } => text.utf16_len(),
                    ContentBlock::Thinking { thinking, .. } => thinking.utf16_len(),
                    ContentBlock::ToolCall(call) => call.name.utf16_len() + call.arguments.js_len(),
                    _ => 0,
                })
                .sum(),
        },
        AgentMessage::ToolResult(m) => content_chars(&m.content),
        AgentMessage::Custom(m) => content_chars(&m.content),
        AgentMessage::BashExecution(m) => m.command.utf16_len() + m.output.utf16_len(),
        AgentMessage::BranchSummary(m) => m.summary.utf16_len(),
        AgentMessage::CompactionSummary(m) => m.summary.utf16_len(),
        AgentMessage::Other { .. } => 0,
    }
}

/// Text lengths plus [`IMAGE_CHARS`] per image.
fn content_chars(content: &Content) -> usize {
    match content {
        Content::Text(t) => t.utf16_len(),
        Content::Blocks(blocks) => blocks
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text, .. } => text.utf16_len(),
                ContentBlock::Image { .. } => IMAGE_CHARS,
                _ => 0,
            })
            .sum(),
    }
}

/// The context size a provider reported (docs/design.md, "Token estimates"): `totalTokens` when
/// non-zero, else `input + output + cacheRead + cacheWrite`.
///
/// A session file stores usage as the provider reported it, JSON numbers;
/// this is where they become a token count, the one integer type every
/// figure of musepi uses ([`whole_tokens`](musepi_session_model::json::whole_tokens)).
pub fn calculate_context_tokens(usage: &Usage) -> u64 {
    whole_tokens(if usage.total_tokens == 0.0 {
        usage.input + usage.output + usage.cache_read + usage.cache_write
    } else {
        usage.total_tokens
    })
}

/// The prompt size a provider reported: `input + cacheRead + cacheWrite`
/// when positive, else [`calculate_context_tokens`].
pub fn calculate_prompt_tokens(usage: &Usage) -> u64 {
    let prompt = usage.input + usage.cache_read + usage.cache_write;
    if prompt > 0.0 {
        whole_tokens(prompt)
    } else {
        calculate_context_tokens(usage)
    }
}

/// The usage of `message` if it anchors a context estimate: an assistant
/// that was neither aborted nor an error, with usage whose context tokens
/// are not zero (a zero usage is a partial record).
pub fn anchoring_usage(message: &AgentMessage) -> Option<&Usage> {
    let AgentMessage::Assistant(a) = message else {
        return None;
    };
    if matches!(a.stop_reason, Some(StopReason::Aborted | StopReason::Error)) {
        return None;
    }
    a.usage
        .as_ref()
        .filter(|u| calculate_context_tokens(u) != 0)
}

/// The result of [`estimate_context_tokens`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextEstimate {
    /// `usage_tokens + trailing_tokens`.
    pub tokens: u64,
    /// Context tokens of the last anchoring usage (0 when there is none).
    pub usage_tokens: u64,
    /// Estimates of the messages after it (of all messages when there is none).
    pub trailing_tokens: u64,
    /// Index of the anchoring message.
    pub last_usage_index: Option<usize>,
}

/// The context size: the last anchoring usage plus estimates of what came
/// after it (docs/design.md, "Token estimates").
pub fn estimate_context_tokens<'a, I>(messages: I) -> ContextEstimate
where
    I: IntoIterator<Item = &'a AgentMessage>,
    I::IntoIter: DoubleEndedIterator + ExactSizeIterator,
{
    let iter = messages.into_iter();
    let n = iter.len();
    let mut trailing = 0u64;
    for (back, m) in iter.rev().enumerate() {
        if let Some(usage) = anchoring_usage(m) {
            let usage_tokens = calculate_context_tokens(usage);
            return ContextEstimate {
                tokens: usage_tokens.saturating_add(trailing),
                usage_tokens,
                trailing_tokens: trailing,
                last_usage_index: Some(n - 1 - back),
            };
        }
        trailing += estimate_tokens(m);
    }
    ContextEstimate {
        tokens: trailing,
        usage_tokens: 0,
        trailing_tokens: trailing,
        last_usage_index: None,
    }
}

#[cfg(test)]
mod tests {
    use musepi_session_model::{AssistantMessage, Text, ToolCall, UserMessage};

    use super::*;

    fn user(t: &str) -> AgentMessage {
        AgentMessage::User(UserMessage {
            content: Content::Text(Text::new(t)),
            ..Default::default()
        })
    }

    fn asst(t: &str, input: f64, output: f64, stop: StopReason) -> AgentMessage {
        AgentMessage::Assistant(AssistantMessage {
            content: Content::text(t),
            usage: Some(Usage {
                input,
                output,
                ..Default::default()
            }),
            stop_reason: Some(stop),
            ..Default::default()
        })
    }

    #[test]
    fn chars_are_utf16_units_rounded_up_to_tokens() {
        assert_eq!(estimate_tokens(&user("abcd")), 1);
        assert_eq!(estimate_tokens(&user("abcde")), 2);
        assert_eq!(estimate_tokens(&user("😀😀")), 1);
    }

    #[test]
    fn tool_calls_count_name_and_compact_json_arguments() {
        let call = ToolCall::new("c", "read", serde_json::json!({"path": "src/a.ts"}));
        let m = AgentMessage::Assistant(AssistantMessage {
            content: Content::Blocks(vec![ContentBlock::ToolCall(call)]),
            ..Default::default()
        });
        // "read" (4) + {"path":"src/a.ts"} (19) = 23 → 6
        assert_eq!(estimate_chars(&m), 23);
        assert_eq!(estimate_tokens(&m), 6);
    }

    #[test]
    fn user_images_count_like_tool_result_images() {
        let m = AgentMessage::User(UserMessage {
            content: Content::Blocks(vec![ContentBlock::Image {
                data: "AAAA".into(),
                mime_type: "image/png".into(),
                detail: None,
            }]),
            ..Default::default()
        });
        assert_eq!(estimate_tokens(&m), 1200);
    }

    #[test]
    fn context_tokens_prefer_total_then_the_sum() {
        let mut u = Usage {
            input: 1000.0,
            output: 500.0,
            cache_read: 200.0,
            cache_write: 100.0,
            ..Default::default()
        };
        assert_eq!(calculate_context_tokens(&u), 1800);
        u.total_tokens = 42.0;
        assert_eq!(calculate_context_tokens(&u), 42);
        assert_eq!(calculate_context_tokens(&Usage::default()), 0);
    }

    #[test]
    fn estimate_anchors_on_the_last_valid_usage() {
        let msgs = [
            user("Hello"),
            asst("Hi", 100.0, 50.0, StopReason::Stop),
            user("continue"),
            asst("Partial thinking", 0.0, 0.0, StopReason::Stop),
        ];
        let e = estimate_context_tokens(&msgs);
        assert_eq!(e.usage_tokens, 150);
        assert_eq!(e.last_usage_index, Some(1));
        assert_eq!(e.trailing_tokens, 2 + 4);
        assert_eq!(e.tokens, 156);
    }

    #[test]
    fn aborted_and_error_turns_do_not_anchor() {
        let msgs = [
            asst("a", 100.0, 50.0, StopReason::Stop),
            asst("b", 200.0, 100.0, StopReason::Aborted),
        ];
        assert_eq!(estimate_context_tokens(&msgs).usage_tokens, 150);
        let none = [user("x")];
        let e = estimate_context_tokens(&none);
        assert_eq!((e.last_usage_index, e.tokens), (None, 1));
    }
}
