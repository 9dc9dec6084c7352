//! The summarizer's view of a conversation (docs/design.md, "Summaries"): labelled blocks
//! joined by blank lines, tool results cut at 2,000 UTF-16 units, useless
//! call/result pairs left out.

use std::borrow::Cow;
use std::collections::HashSet;

use musepi_session_model::json::{js_key_order, js_stringify, utf16_floor_byte, utf16_len};
use musepi_session_model::{AgentMessage, Content, ContentBlock};
use serde_json::Value;

use crate::context::ContextMessage;
use crate::convert::{ConvertOptions, convert_to_llm};
use crate::llm::{LlmMessage, resolve_replays};

/// The summary text when there is no earlier history to summarize: what a
/// compaction with nothing before its cut records, whatever wrote it.
pub const NO_PRIOR_HISTORY: &str = "No prior history.";

/// Tool results longer than this many UTF-16 units are cut for the summarizer.
pub const TOOL_RESULT_MAX_CHARS: usize = 2000;

/// The summarizer input for context messages: useless pairs dropped,
/// converted without refinements, serialized.
pub fn serialize_for_summary(messages: &[ContextMessage<'_>]) -> String {
    let kept = drop_useless_pairs(messages);
    serialize_conversation(&convert_to_llm(&kept, &ConvertOptions::for_summary()))
}

/// Serializes provider messages for a summarizer. A summarizer replays no
/// provider's native history: a provider history reads as its summary
/// followed by its kept messages.
pub fn serialize_conversation(messages: &[LlmMessage]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for m in resolve_replays(messages, None) {
        match m {
            LlmMessage::User { content } | LlmMessage::Developer { content } => {
                let text = ContentBlock::joined_text(content);
                if !text.is_empty() {
                    parts.push(format!("[User]: {text}"));
                }
            }
            LlmMessage::Assistant { content, .. } => {
                let mut texts = Vec::new();
                let mut thinking = Vec::new();
                let mut calls = Vec::new();
                for b in content {
                    match b {
                        ContentBlock::Text { text, .. } => texts.push(text.as_str()),
                        ContentBlock::Thinking { thinking: t, .. } => thinking.push(t.as_str()),
                        ContentBlock::ToolCall(call) => {
                            calls.push(format!(
                                "{}({})",
                                call.name.as_str(),
                                format_arguments(call.arguments.value())
                            ));
                        }
                        _ => {}
                    }
                }
                if !thinking.is_empty() {
                    parts.push(format!("[Assistant thinking]: {}", thinking.join("\n")));
                }
                if !texts.is_empty() {
                    parts.push(format!("[Assistant]: {}", texts.join("\n")));
                }
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            LlmMessage::ToolResult { content, .. } => {
                let text = ContentBlock::joined_text(content);
                if !text.is_empty() {
                    parts.push(format!(
                        "[Tool result]: {}",
                        truncate_for_summary(&text, TOOL_RESULT_MAX_CHARS)
                    ));
                }
            }
            // Resolved above into the summary and the kept messages; one
            // left in place reads as its summary.
            LlmMessage::ProviderHistory(h) => {
                let text = ContentBlock::joined_text(h.summary.content());
                if !text.is_empty() {
                    parts.push(format!("[User]: {text}"));
                }
            }
        }
    }
    parts.join("\n\n")
}

/// `k1=<JSON>, k2=<JSON>` in JavaScript's key order.
fn format_arguments(args: &Value) -> String {
    match args {
        Value::Object(map) => js_key_order(map)
            .into_iter()
            .map(|(k, v)| format!("{k}={}", js_stringify(v)))
            .collect::<Vec<_>>()
            .join(", "),
        _ => String::new(),
    }
}

/// Cuts `text` after `max` UTF-16 units and says how many were left out.
/// A cut that would split a surrogate pair lands before the pair
/// (docs/design.md, "Where musepi differs from pi"); the count still reports the units beyond `max`.
pub fn truncate_for_summary(text: &str, max: usize) -> Cow<'_, str> {
    let len = utf16_len(text);
    if len <= max {
        return Cow::Borrowed(text);
    }
    let cut = utf16_floor_byte(text, max);
    Cow::Owned(format!(
        "{}\n\n[... {} more characters truncated]",
        &text[..cut],
        len - max
    ))
}

/// Context messages with every useless tool result (flagged useless and
/// not an error) removed, together with the call that asked for it
/// (docs/design.md, "Pruning"). Other messages are kept as they are.
pub fn drop_useless_pairs<'a>(messages: &[ContextMessage<'a>]) -> Vec<ContextMessage<'a>> {
    let useless: HashSet<&str> = messages
        .iter()
        .filter_map(|m| match m.message.as_ref() {
            AgentMessage::ToolResult(t) if t.is_useless() => Some(t.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    if useless.is_empty() {
        return messages.to_vec();
    }
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        match m.message.as_ref() {
            AgentMessage::ToolResult(t) if t.is_useless() => {}
            AgentMessage::Assistant(a)
                if a.tool_calls().any(|c| useless.contains(c.id.as_str())) =>
            {
                let mut a = a.clone();
                if let Content::Blocks(blocks) = &mut a.content {
                    blocks.retain(|b| !matches!(b, ContentBlock::ToolCall(c) if useless.contains(c.id.as_str())));
                }
                out.push(ContextMessage {
                    entry_index: m.entry_index,
                    message: Cow::Owned(AgentMessage::Assistant(a)),
                });
            }
            _ => out.push(m.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use musepi_session_model::{
        AssistantMessage, JsonValue, Text, ToolCall, ToolResultMessage, UserMessage,
    };

    use super::*;

    fn tool_result(text: &str) -> LlmMessage {
        LlmMessage::ToolResult {
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            content: vec![ContentBlock::text(text)],
            is_error: false,
        }
    }

    #[test]
    fn long_tool_results_are_cut_at_two_thousand_units() {
        let out = serialize_conversation(&[tool_result(&"x".repeat(5000))]);
        assert!(out.starts_with("[Tool result]: "));
        assert!(out.contains("[... 3000 more characters truncated]"));
        assert!(out.contains(&"x".repeat(2000)));
        assert!(!out.contains(&"x".repeat(2001)));
    }

    #[test]
    fn short_tool_results_are_verbatim() {
        let text = "y".repeat(1500);
        assert_eq!(
            serialize_conversation(&[tool_result(&text)]),
            format!("[Tool result]: {text}")
        );
    }

    #[test]
    fn user_and_assistant_text_is_never_cut() {
        let long = "z".repeat(5000);
        let msgs = [
            LlmMessage::user_text(long.clone()),
            LlmMessage::Assistant {
                content: vec![ContentBlock::text(long.clone())],
                provider: None,
                model: None,
                stop_reason: None,
            },
        ];
        let out = serialize_conversation(&msgs);
        assert_eq!(out, format!("[User]: {long}\n\n[Assistant]: {long}"));
    }

    #[test]
    fn a_cut_inside_a_surrogate_pair_lands_before_it() {
        let text = format!("{}😀{}", "a".repeat(1999), "b".repeat(10));
        let out = truncate_for_summary(&text, 2000);
        assert_eq!(
            out,
            format!("{}\n\n[... 11 more characters truncated]", "a".repeat(1999))
        );
    }

    #[test]
    fn assistant_blocks_read_thinking_text_then_calls() {
        let call = |name: &str, args: Value| {
            ContentBlock::ToolCall(ToolCall {
                id: "1".into(),
                name: Text::new(name),
                arguments: JsonValue::new(args),
                intent: None,
            })
        };
        let m = LlmMessage::Assistant {
            content: vec![
                ContentBlock::Text {
                    text: "Reading.".into(),
                    text_signature: None,
                },
                ContentBlock::Thinking {
                    thinking: "look first".into(),
                    thinking_signature: None,
                    redacted: None,
                },
                call("read", serde_json::json!({"path": "a.ts", "10": 1})),
                call("ls", serde_json::json!({})),
            ],
            provider: None,
            model: None,
            stop_reason: None,
        };
        assert_eq!(
            serialize_conversation(&[m]),
            "[Assistant thinking]: look first\n\n[Assistant]: Reading.\n\n[Assistant tool calls]: read(10=1, path=\"a.ts\"); ls()"
        );
    }

    #[test]
    fn useless_pairs_are_dropped_but_errors_are_kept() {
        let call = |id: &str| {
            ContentBlock::ToolCall(ToolCall {
                id: id.into(),
                name: Text::new("grep"),
                arguments: JsonValue::new(serde_json::json!({"q": id})),
                intent: None,
            })
        };
        let result = |id: &str, useless: bool, is_error: bool| {
            AgentMessage::ToolResult(ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: "grep".into(),
                content: Content::text(format!("result {id}")),
                is_error,
                useless: Some(useless),
                ..Default::default()
            })
        };
        let msgs: Vec<ContextMessage<'static>> = [
            AgentMessage::User(UserMessage {
                content: Content::text("find"),
                ..Default::default()
            }),
            AgentMessage::Assistant(AssistantMessage {
                content: Content::Blocks(vec![call("u"), call("e")]),
                ..Default::default()
            }),
            result("u", true, false),
            result("e", true, true),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, m)| ContextMessage {
            entry_index: i,
            message: Cow::Owned(m),
        })
        .collect();
        let out = serialize_for_summary(&msgs);
        assert_eq!(
            out,
            "[User]: find\n\n[Assistant tool calls]: grep(q=\"e\")\n\n[Tool result]: result e"
        );
    }
}
