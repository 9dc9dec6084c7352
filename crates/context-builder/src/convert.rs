//! Conversion of context messages into provider messages (docs/design.md, "What the model sees"), with
//! the safety refinements (docs/design.md, "What the model sees").
//!
//! # Remote replay
//!
//! A compaction made by a provider's native compaction (docs/design.md, "Remote summaries") stores
//! that provider's replacement history; docs/design.md, "What the model sees" sends it in place of the
//! summary and of the kept entries. The conversion does not know which
//! provider will send the messages, so it emits both forms in one message:
//! with [`ConvertOptions::session`] and [`ConvertOptions::refine`], the
//! summary of a compaction whose `preserveData.openaiRemoteCompaction` has a
//! non-empty `provider` and an array `replacementHistory` becomes a
//! [`LlmMessage::ProviderHistory`] that holds the payload, the summary
//! message and the messages of the kept entries (which therefore no longer
//! appear in the top-level list). Each provider then resolves it with
//! [`resolve_replays`](crate::resolve_replays): the provider named by the
//! payload sends the items and nothing of the kept messages; every other
//! one sends the summary followed by the kept messages, exactly what the
//! conversion without a session gives. The refinements run on the flat
//! list first, so both forms are already free of dangling calls.
//! The context message list and the summarizer input never change.

use std::collections::HashSet;

use musepi_session_model::{
    AgentMessage, AssistantMessage, BashExecutionMessage, Content, ContentBlock, EntryId, Session,
    StopReason, Text,
};

use crate::context::ContextMessage;
use crate::llm::{Converted, LlmMessage};
use crate::replay::attach_replays;
use crate::template::Template;

/// Wraps a compaction summary for the model (our wording, keeping the
/// `<summary>` boundary).
pub const COMPACTION_WRAPPER: Template = crate::template!("context/compaction-summary-context.md");
/// Wraps a compaction summary for a model that is sent it with its session
/// at hand: the wrapper also names the entries it replaced and the
/// `recall` tool that reads them back (docs/design.md, "Recall").
pub const COMPACTION_RECALL_WRAPPER: Template =
    crate::template!("context/compaction-summary-context-recall.md");
/// Wraps a branch summary for the model.
pub const BRANCH_WRAPPER: Template = crate::template!("context/branch-summary-context.md");

/// The `customType` of an extension message that keeps the error turn
/// before it (the model was interrupted while thinking).
pub const INTERRUPTED_THINKING: &str = "interrupted-thinking";

/// Supplies the archive blocks of a snapcompact compaction: the blocks
/// follow the summary text in the same user message, without a wrapper
/// (docs/snapcompact.md). Implemented by the snapcompact crate.
pub trait ArchiveBlocks {
    /// The blocks for the compaction entry at `entry_index`, or `None` when
    /// it carries no archive.
    fn blocks(&self, entry_index: usize) -> Option<Vec<ContentBlock>>;
}

/// How to convert.
#[derive(Clone, Copy)]
pub struct ConvertOptions<'a> {
    /// Apply the safety refinements (docs/design.md, "What the model sees"): drop error and
    /// aborted turns with their results, dangling tool calls and orphan
    /// tool results. Every request sent to a model uses them; the
    /// summarizer serialization does not (its input must equal the
    /// reference's).
    pub refine: bool,
    /// Send custom messages as developer messages (docs/design.md, "What the model sees");
    /// `false` for providers without a developer role (they become user
    /// messages).
    pub developer_role: bool,
    /// Archive blocks for snapcompact compactions.
    pub archive: Option<&'a dyn ArchiveBlocks>,
    /// The session the messages were built from. With it (and `refine`),
    /// a compaction summary whose entry stored a provider's native history
    /// becomes a [`LlmMessage::ProviderHistory`] holding the kept messages
    /// (docs/design.md, "What the model sees"; see the module docs).
    pub session: Option<&'a Session>,
}

impl Default for ConvertOptions<'_> {
    fn default() -> Self {
        Self {
            refine: true,
            developer_role: true,
            archive: None,
            session: None,
        }
    }
}

impl ConvertOptions<'_> {
    /// The conversion that feeds the summarizer serializer: no refinements.
    pub fn for_summary() -> Self {
        Self {
            refine: false,
            developer_role: true,
            archive: None,
            session: None,
        }
    }
}

/// Converts context messages to provider messages.
pub fn convert_to_llm(
    messages: &[ContextMessage<'_>],
    options: &ConvertOptions<'_>,
) -> Vec<LlmMessage> {
    convert_with_sources(messages, options)
        .into_iter()
        .map(|c| c.message)
        .collect()
}

/// Like [`convert_to_llm`], keeping each message's source entry.
pub fn convert_with_sources(
    messages: &[ContextMessage<'_>],
    options: &ConvertOptions<'_>,
) -> Vec<Converted> {
    let dropped = if options.refine {
        dead_turns(messages)
    } else {
        HashSet::new()
    };
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        if dropped.contains(&i) {
            continue;
        }
        if let Some(message) = convert_one(m, options) {
            out.push(Converted {
                entry_index: m.entry_index,
                message,
            });
        }
    }
    if options.refine {
        drop_dangling(&mut out);
        if let Some(session) = options.session {
            attach_replays(&mut out, session);
        }
    }
    out
}

/// Converts one message.
pub fn convert_one(m: &ContextMessage<'_>, options: &ConvertOptions<'_>) -> Option<LlmMessage> {
    Some(match m.message.as_ref() {
        AgentMessage::User(u) => LlmMessage::User {
            content: blocks_of(&u.content),
        },
        AgentMessage::Assistant(a) => LlmMessage::Assistant {
            content: blocks_of(&a.content),
            provider: a.provider.clone(),
            model: a.model.clone(),
            stop_reason: a.stop_reason.clone(),
        },
        AgentMessage::ToolResult(t) => {
            let content = if t.pruned_at.is_some() {
                pruned_content(&t.content)
            } else {
                blocks_of(&t.content)
            };
            LlmMessage::ToolResult {
                tool_call_id: t.tool_call_id.clone(),
                tool_name: t.tool_name.clone(),
                content,
                is_error: t.is_error,
            }
        }
        AgentMessage::BashExecution(b) => {
            if b.exclude_from_context == Some(true) {
                return None;
            }
            LlmMessage::user_text(bash_execution_to_text(b))
        }
        AgentMessage::Custom(c) => {
            let content = blocks_of(&c.content);
            if options.developer_role {
                LlmMessage::Developer { content }
            } else {
                LlmMessage::User { content }
            }
        }
        AgentMessage::BranchSummary(b) => LlmMessage::user_text(wrap(&BRANCH_WRAPPER, &b.summary)),
        AgentMessage::CompactionSummary(c) => {
            match options.archive.and_then(|a| a.blocks(m.entry_index)) {
                Some(blocks) => {
                    let mut content = vec![ContentBlock::text(c.summary.as_str())];
                    content.extend(blocks);
                    LlmMessage::User { content }
                }
                None => LlmMessage::user_text(wrap_compaction(
                    &c.summary,
                    c.first_kept_entry_id.as_ref().map(EntryId::as_str),
                )),
            }
        }
        AgentMessage::Other { .. } => return None,
    })
}

/// Wraps a compaction summary: with the entry it kept from, the wrapper
/// names the entries it replaced and the `recall` tool.
pub fn wrap_compaction(summary: &str, first_kept: Option<&str>) -> String {
    match first_kept {
        Some(id) => COMPACTION_RECALL_WRAPPER
            .render(&[("summary", summary), ("first_kept", id)])
            .unwrap_or_else(|_| wrap(&COMPACTION_WRAPPER, summary)),
        None => wrap(&COMPACTION_WRAPPER, summary),
    }
}

/// Renders a summary wrapper.
pub fn wrap(template: &Template, summary: &str) -> String {
    // The wrappers are compiled in and tested to have exactly this one
    // placeholder, so rendering cannot fail.
    template
        .render(&[("summary", summary)])
        .unwrap_or_else(|_| summary.to_owned())
}

fn blocks_of(content: &Content) -> Vec<ContentBlock> {
    match content {
        Content::Text(t) => vec![ContentBlock::Text {
            text: t.clone(),
            text_signature: None,
        }],
        Content::Blocks(b) => b.clone(),
    }
}

/// A pruned result keeps its text (or `[Output truncated]`) and its
/// non-text blocks.
fn pruned_content(content: &Content) -> Vec<ContentBlock> {
    let text = content.joined_text();
    let text = if text.is_empty() {
        "[Output truncated]".to_owned()
    } else {
        text
    };
    let mut out = vec![ContentBlock::text(text)];
    out.extend(
        content
            .blocks()
            .iter()
            .filter(|b| !matches!(b, ContentBlock::Text { .. }))
            .cloned(),
    );
    out
}

/// `bashExecutionToText` (docs/design.md, "What the model sees").
pub fn bash_execution_to_text(b: &BashExecutionMessage) -> String {
    let mut text = format!("Ran `{}`\n", b.command.as_str());
    if b.output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str("```\n");
        text.push_str(&b.output);
        text.push_str("\n```");
    }
    if b.cancelled {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = b.exit_code.filter(|c| *c != 0.0) {
        let mut n = String::new();
        musepi_session_model::json::push_js_number(&mut n, code);
        text.push_str("\n\nCommand exited with code ");
        text.push_str(&n);
    }
    if b.truncated
        && let Some(path) = &b.full_output_path
    {
        text.push_str("\n\n[Output truncated. Full output: ");
        text.push_str(path);
        text.push(']');
    }
    text
}

/// Whether the assistant's turn was aborted or failed: such a turn is not
/// sent, nor the results of its calls, unless [`keeps_failed_turn`].
pub(crate) fn is_failed_turn(a: &AssistantMessage) -> bool {
    matches!(a.stop_reason, Some(StopReason::Aborted | StopReason::Error))
}

/// Whether `m`, the first message after a failed turn that is not a tool
/// result, keeps that turn: an `interrupted-thinking` extension message.
pub(crate) fn keeps_failed_turn(m: &AgentMessage) -> bool {
    matches!(m, AgentMessage::Custom(c) if c.custom_type == INTERRUPTED_THINKING)
}

/// Positions of aborted and error assistant turns and of the tool results
/// that answer their calls, unless an `interrupted-thinking` custom
/// message follows the turn.
fn dead_turns(messages: &[ContextMessage<'_>]) -> HashSet<usize> {
    let mut dropped = HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        let AgentMessage::Assistant(a) = m.message.as_ref() else {
            continue;
        };
        if !is_failed_turn(a) {
            continue;
        }
        let interrupted = messages[i + 1..]
            .iter()
            .find(|n| !matches!(n.message.as_ref(), AgentMessage::ToolResult(_)))
            .is_some_and(|n| keeps_failed_turn(&n.message));
        if interrupted {
            continue;
        }
        dropped.insert(i);
        let calls: HashSet<&str> = a.tool_calls().map(|c| c.id.as_str()).collect();
        for (j, n) in messages.iter().enumerate().skip(i + 1) {
            if let AgentMessage::ToolResult(t) = n.message.as_ref()
                && calls.contains(t.tool_call_id.as_str())
            {
                dropped.insert(j);
            }
        }
    }
    dropped
}

/// Removes tool calls without a result, results without a call before
/// them, and turns left empty; a rewritten turn loses its thinking
/// signatures and redacted thinking.
fn drop_dangling(out: &mut Vec<Converted>) {
    let answered: HashSet<String> = out
        .iter()
        .filter_map(|c| match &c.message {
            LlmMessage::ToolResult { tool_call_id, .. } => Some(tool_call_id.clone()),
            _ => None,
        })
        .collect();
    let mut called: HashSet<String> = HashSet::new();
    out.retain_mut(|c| match &mut c.message {
        LlmMessage::Assistant { content, .. } => {
            drop_unanswered_calls(content, |id| answered.contains(id));
            for b in content.iter() {
                if let ContentBlock::ToolCall(call) = b {
                    called.insert(call.id.clone());
                }
            }
            !content.is_empty()
        }
        LlmMessage::ToolResult { tool_call_id, .. } => called.contains(tool_call_id.as_str()),
        _ => true,
    });
}

/// Removes from an assistant's `content` the tool calls that `answered`
/// says have no result; a turn that lost a call also loses its thinking
/// signatures and redacted thinking. An assistant left empty is not sent.
pub(crate) fn drop_unanswered_calls(
    content: &mut Vec<ContentBlock>,
    answered: impl Fn(&str) -> bool,
) {
    let before = content.len();
    content.retain(|b| !matches!(b, ContentBlock::ToolCall(call) if !answered(&call.id)));
    if content.len() != before {
        content.retain(|b| !matches!(b, ContentBlock::RedactedThinking { .. }));
        for b in content.iter_mut() {
            if let ContentBlock::Thinking {
                thinking_signature, ..
            } = b
            {
                *thinking_signature = None;
            }
        }
    }
}

/// A text block, for callers building messages.
pub fn text_block(s: &str) -> ContentBlock {
    ContentBlock::Text {
        text: Text::new(s),
        text_signature: None,
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use musepi_session_model::{AssistantMessage, JsonValue, ToolCall, ToolResultMessage};

    use super::*;

    fn cm(i: usize, m: AgentMessage) -> ContextMessage<'static> {
        ContextMessage {
            entry_index: i,
            message: Cow::Owned(m),
        }
    }

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: Text::new("read"),
            arguments: JsonValue::new(serde_json::json!({})),
            intent: None,
        })
    }

    fn assistant(blocks: Vec<ContentBlock>, stop: StopReason) -> AgentMessage {
        AgentMessage::Assistant(AssistantMessage {
            content: Content::Blocks(blocks),
            stop_reason: Some(stop),
            ..Default::default()
        })
    }

    fn result(id: &str) -> AgentMessage {
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: Content::text("ok"),
            ..Default::default()
        })
    }

    #[test]
    fn wrappers_render_with_the_summary_boundary() {
        let c = wrap(&COMPACTION_WRAPPER, "S");
        assert!(c.ends_with("\n\n<summary>\nS\n</summary>"), "{c}");
        let b = wrap(&BRANCH_WRAPPER, "S");
        assert!(b.ends_with("\n\n<summary>\nS</summary>"), "{b}");
        assert_eq!(COMPACTION_WRAPPER.placeholders().unwrap(), ["summary"]);
        assert_eq!(BRANCH_WRAPPER.placeholders().unwrap(), ["summary"]);
        let r = wrap_compaction("S", Some("0000002a"));
        assert!(r.ends_with("\n\n<summary>\nS\n</summary>"), "{r}");
        assert!(
            r.contains("before entry 0000002a") && r.contains("the `recall` tool"),
            "{r}"
        );
        assert_eq!(wrap_compaction("S", None), c);
    }

    #[test]
    fn bash_executions_read_as_text() {
        let mut b = BashExecutionMessage {
            command: "ls".into(),
            output: "a\nb".into(),
            ..Default::default()
        };
        assert_eq!(bash_execution_to_text(&b), "Ran `ls`\n```\na\nb\n```");
        b.exit_code = Some(2.0);
        b.truncated = true;
        b.full_output_path = Some("/tmp/x.log".into());
        assert_eq!(
            bash_execution_to_text(&b),
            "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code 2\n\n[Output truncated. Full output: /tmp/x.log]"
        );
        b.output = Text::default();
        b.cancelled = true;
        b.truncated = false;
        assert_eq!(
            bash_execution_to_text(&b),
            "Ran `ls`\n(no output)\n\n(command cancelled)"
        );
    }

    #[test]
    fn excluded_bash_executions_are_dropped() {
        let b = BashExecutionMessage {
            command: "ls".into(),
            exclude_from_context: Some(true),
            ..Default::default()
        };
        let msgs = [cm(0, AgentMessage::BashExecution(b))];
        assert!(convert_to_llm(&msgs, &ConvertOptions::for_summary()).is_empty());
    }

    #[test]
    fn dangling_calls_and_dead_turns_are_removed_when_refining() {
        let msgs = [
            cm(
                0,
                assistant(vec![call("a"), call("b")], StopReason::ToolUse),
            ),
            cm(1, result("a")),
            cm(2, assistant(vec![call("c")], StopReason::Error)),
            cm(3, result("c")),
            cm(4, result("orphan")),
        ];
        let out = convert_to_llm(&msgs, &ConvertOptions::default());
        assert_eq!(out.len(), 2);
        let LlmMessage::Assistant { content, .. } = &out[0] else {
            panic!()
        };
        assert_eq!(content.len(), 1);
        assert!(
            matches!(&out[1], LlmMessage::ToolResult { tool_call_id, .. } if tool_call_id == "a")
        );
        assert_eq!(
            convert_to_llm(&msgs, &ConvertOptions::for_summary()).len(),
            5
        );
    }

    #[test]
    fn custom_messages_are_developer_messages_unless_the_provider_has_none() {
        let c = AgentMessage::Custom(musepi_session_model::CustomMessage {
            custom_type: "note".into(),
            content: Content::Text("hi".into()),
            ..Default::default()
        });
        let msgs = [cm(0, c)];
        assert_eq!(
            convert_to_llm(&msgs, &ConvertOptions::default())[0].role(),
            "developer"
        );
        let no_dev = ConvertOptions {
            developer_role: false,
            ..ConvertOptions::default()
        };
        assert_eq!(convert_to_llm(&msgs, &no_dev)[0].role(), "user");
    }
}
