//! One-line descriptions of entries and messages, shared by the commands'
//! text output and the terminal UI.

use musepi_session_model::{
    AgentMessage, AssistantMessage, Content, ContentBlock, Entry, EntryBody,
};

use crate::output::{Preview, preview};

/// The role of a message entry, or the entry type.
pub(crate) fn kind_of(entry: &Entry) -> &str {
    match &entry.body {
        EntryBody::Message(m) => m.role(),
        other => other.type_name(),
    }
}

/// Characters in a preview.
const PREVIEW: usize = 60;

/// A one-line preview of what the entry holds.
pub(crate) fn preview_of(entry: &Entry) -> String {
    let text = match &entry.body {
        EntryBody::Message(m) => return message_preview(m, PREVIEW),
        EntryBody::CustomMessage(c) => {
            let mut p = Preview::new(PREVIEW);
            p.push(&c.custom_type);
            p.push(": ");
            push_content(&mut p, &c.content);
            return p.finish();
        }
        EntryBody::ThinkingLevelChange { thinking_level } => {
            thinking_level.clone().unwrap_or_else(|| "null".into())
        }
        EntryBody::ModelChange(mc) => mc
            .provider_and_model()
            .map(|(p, m)| format!("{p}/{m}"))
            .or_else(|| mc.model.clone())
            .unwrap_or_default(),
        // `{tokens} tokens before; keeps from {id}: {summary}`, in pieces:
        // the summary is read only until the preview is full.
        EntryBody::Compaction(c) => {
            let mut p = Preview::new(PREVIEW);
            p.push(&crate::view::text::thousands(c.tokens_before));
            p.push(" tokens before; keeps from ");
            p.push(c.first_kept_entry_id.as_ref().map_or("?", |id| id.as_str()));
            p.push(": ");
            p.push(c.short_summary.as_deref().unwrap_or(c.summary.as_str()));
            return p.finish();
        }
        // `from {id}: {summary}`, in pieces, as a compaction's.
        EntryBody::BranchSummary(b) => {
            let mut p = Preview::new(PREVIEW);
            p.push("from ");
            p.push(&b.from_id);
            p.push(": ");
            p.push(b.summary.as_str());
            return p.finish();
        }
        EntryBody::Custom { custom_type, .. } => custom_type.clone(),
        EntryBody::Label { target_id, label } => match label.as_deref() {
            Some(l) if !l.is_empty() => format!("{target_id} = {l}"),
            _ => format!("{target_id} cleared"),
        },
        EntryBody::SessionInfo { name } => name.clone().unwrap_or_default(),
        EntryBody::Other { .. } => String::new(),
    };
    preview(&text, PREVIEW)
}

/// Adds the content's text (the string, or the text blocks concatenated
/// with no separator) to `p`, block by block until it is full.
fn push_content(p: &mut Preview, content: &Content) {
    match content {
        Content::Text(t) => p.push(t.as_str()),
        Content::Blocks(blocks) => {
            for b in blocks {
                if p.is_full() {
                    return;
                }
                if let ContentBlock::Text { text, .. } = b {
                    p.push(text.as_str());
                }
            }
        }
    }
}

/// A one-line preview of at most `max` characters of what the message
/// says: its text, an assistant's tool calls as `[name, …]` (or
/// `(thinking)` when it has nothing else) after an `error: …` it carries.
/// It reads the message only until the preview is full.
pub(crate) fn message_preview(m: &AgentMessage, max: usize) -> String {
    let mut p = Preview::new(max);
    match m {
        AgentMessage::User(u) => push_content(&mut p, &u.content),
        AgentMessage::Assistant(a) => push_assistant(&mut p, a),
        AgentMessage::ToolResult(t) => {
            p.push(&t.tool_name);
            p.push(if t.is_error { " error: " } else { ": " });
            push_content(&mut p, &t.content);
        }
        AgentMessage::BashExecution(b) => {
            p.push("$ ");
            p.push(b.command.as_str());
        }
        AgentMessage::Custom(c) => {
            p.push(&c.custom_type);
            p.push(": ");
            push_content(&mut p, &c.content);
        }
        AgentMessage::BranchSummary(b) => p.push(b.summary.as_str()),
        AgentMessage::CompactionSummary(c) => p.push(c.summary.as_str()),
        AgentMessage::Other { .. } => {}
    }
    p.finish()
}

/// An assistant's part of [`message_preview`]: `error: …`, its text, then
/// `[name, …]` of its tool calls, or `(thinking)` when it has neither.
fn push_assistant(p: &mut Preview, a: &AssistantMessage) {
    if let Some(err) = &a.error_message {
        p.push("error: ");
        p.push(err);
        p.push(" ");
    }
    push_content(p, &a.content);
    if p.is_full() {
        return;
    }
    let mut calls = a.tool_calls().peekable();
    if calls.peek().is_some() {
        // A space before the calls: whitespace between words is one space,
        // and none is kept at the start.
        p.push(" [");
        for (i, c) in calls.enumerate() {
            if p.is_full() {
                return;
            }
            if i > 0 {
                p.push(", ");
            }
            p.push(c.name.as_str());
        }
        p.push("]");
        return;
    }
    let blocks = a.content.blocks();
    let no_text = a.content.as_text().is_none_or(|t| t.is_empty())
        && blocks.iter().all(|b| match b {
            ContentBlock::Text { text, .. } => text.is_empty(),
            _ => true,
        });
    if no_text
        && blocks
            .iter()
            .any(|b| matches!(b, ContentBlock::Thinking { .. }))
    {
        p.push("(thinking)");
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::fmt::Write as _;
    use std::path::Path;

    use musepi_session_model::{SequentialIds, Session, load_bytes};
    use serde_json::{Value, json};

    use super::*;
    use crate::output::tests::cut_whole;

    /// The preview as it was made before it was read in pieces: the
    /// message's whole text joined, then cut.
    fn joined_then_cut(m: &AgentMessage, max: usize) -> String {
        let joined = match m {
            AgentMessage::User(u) => u.content.joined_text(),
            AgentMessage::Assistant(a) => {
                let text = a.content.joined_text();
                let calls: Vec<&str> = a.tool_calls().map(|c| c.name.as_str()).collect();
                let thinking = a
                    .content
                    .blocks()
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Thinking { .. }));
                let mut s = text;
                if !calls.is_empty() {
                    if !s.is_empty() {
                        s.push(' ');
                    }
                    let _ = write!(s, "[{}]", calls.join(", "));
                }
                if s.is_empty() && thinking {
                    s.push_str("(thinking)");
                }
                if let Some(err) = &a.error_message {
                    s = format!("error: {err} {s}");
                }
                s
            }
            AgentMessage::ToolResult(t) => {
                let mark = if t.is_error { " error" } else { "" };
                format!("{}{mark}: {}", t.tool_name, t.content.joined_text())
            }
            AgentMessage::BashExecution(b) => format!("$ {}", b.command.as_str()),
            AgentMessage::Custom(c) => format!("{}: {}", c.custom_type, c.content.joined_text()),
            AgentMessage::BranchSummary(b) => b.summary.as_str().to_owned(),
            AgentMessage::CompactionSummary(c) => c.summary.as_str().to_owned(),
            AgentMessage::Other { .. } => String::new(),
        };
        cut_whole(&joined, max)
    }

    /// A session of one chain of message entries, one per message.
    pub(crate) fn session_of_messages(messages: &[Value]) -> Session {
        let entries: Vec<Value> = messages
            .iter()
            .map(|m| json!({"type": "message", "message": m}))
            .collect();
        session_of_entries(&entries)
    }

    /// A session of one chain of entries, given without their ids, parent
    /// links and timestamps: the `n`th (from 1) gets id `n` in eight hex
    /// digits.
    fn session_of_entries(entries: &[Value]) -> Session {
        let mut text = String::from(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n",
        );
        let mut parent = Value::Null;
        for (i, e) in entries.iter().enumerate() {
            let id = format!("{:08x}", i + 1);
            let mut line = e.clone();
            line["id"] = json!(id);
            line["parentId"] = parent;
            line["timestamp"] = json!("2025-01-01T00:00:00.000Z");
            let _ = writeln!(text, "{line}");
            parent = json!(id);
        }
        let session = load_bytes(
            Path::new("<test>"),
            text.as_bytes(),
            &mut SequentialIds::new(),
        )
        .expect("the session loads");
        assert_eq!(
            session.entries().len(),
            entries.len(),
            "{:?}",
            session.problems()
        );
        session
    }

    /// Text blocks that split words across blocks and runs of whitespace,
    /// with images and thinking between them, and a huge text in the middle.
    pub(crate) fn many_blocks(count: usize) -> Vec<Value> {
        let huge = "w\u{e9}rd ".repeat(200_000);
        let middle = count / 2 - count / 2 % 7 + 5;
        (0..count)
            .map(|i| match i % 7 {
                0 => json!({"type": "text", "text": format!("pa{i}")}),
                1 => json!({"type": "text", "text": format!("rt{i}  \n\t ")}),
                2 => json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
                3 => json!({"type": "text", "text": ""}),
                4 => json!({"type": "thinking", "thinking": format!("thought {i}")}),
                5 if i == middle => json!({"type": "text", "text": huge}),
                _ => json!({"type": "text", "text": format!(" 日本語{i}")}),
            })
            .collect()
    }

    pub(crate) fn call(name: &str) -> Value {
        json!({"type": "toolCall", "id": format!("call-{name}"), "name": name,
            "arguments": {"path": "x".repeat(100_000)}})
    }

    pub(crate) fn assistant(content: Value, error: Option<&str>) -> Value {
        let mut m = json!({"role": "assistant", "provider": "p", "model": "m",
            "stopReason": "stop", "timestamp": 1});
        m["content"] = content;
        if let Some(e) = error {
            m["errorMessage"] = json!(e);
            m["stopReason"] = json!("error");
        }
        m
    }

    #[test]
    fn a_preview_read_until_full_is_the_whole_text_joined_and_cut() {
        let huge = format!("  {}", "sp\u{f6}ken   words\n".repeat(100_000));
        let blocks = many_blocks(10_000);
        let mut with_calls = blocks.clone();
        with_calls.extend([call("read"), call("edit")]);
        let thinking = json!([{"type": "thinking", "thinking": "hmm"}]);
        let messages = [
            json!({"role": "user", "content": huge, "timestamp": 1}),
            json!({"role": "user", "content": blocks, "timestamp": 1}),
            assistant(json!(with_calls), Some("overloaded")),
            assistant(json!(blocks), None),
            assistant(json!([call("bash"), call("write")]), None),
            assistant(
                json!([{"type": "text", "text": "short"}, call("ls")]),
                Some("e"),
            ),
            assistant(thinking.clone(), None),
            assistant(thinking, Some("prompt is too long")),
            assistant(
                json!([{"type": "text", "text": "  "}, {"type": "thinking", "thinking": "t"}]),
                None,
            ),
            assistant(json!([]), Some("x")),
            json!({"role": "toolResult", "toolCallId": "call-read", "toolName": "read",
                "content": blocks, "isError": true, "timestamp": 1}),
            json!({"role": "toolResult", "toolCallId": "call-edit", "toolName": "edit",
                "content": [{"type": "text", "text": "ok"}], "isError": false, "timestamp": 1}),
            json!({"role": "bashExecution", "command": huge, "output": "", "exitCode": 0,
                "cancelled": false, "truncated": false, "timestamp": 1}),
            json!({"role": "custom", "customType": "note", "content": blocks, "display": true,
                "timestamp": 1}),
        ];
        let session = session_of_messages(&messages);
        let mut cut = 0;
        for entry in session.entries() {
            let m = entry.message().expect("a message entry");
            for max in [0, 1, 2, 5, 13, 60, 72, 400] {
                let read = message_preview(m, max);
                assert_eq!(read, joined_then_cut(m, max), "{} at {max}", entry.id);
                cut += usize::from(read.ends_with('…'));
            }
            assert_eq!(preview_of(entry), joined_then_cut(m, PREVIEW));
        }
        // The huge texts are cut, not shown whole.
        assert!(cut > 60, "{cut}");
    }

    /// The preview of a compaction or branch summary as it was made before
    /// it was read in pieces: the whole line formatted, then cut.
    fn formatted_then_cut(entry: &Entry) -> String {
        let text = match &entry.body {
            EntryBody::Compaction(c) => format!(
                "{} tokens before; keeps from {}: {}",
                crate::view::text::thousands(c.tokens_before),
                c.first_kept_entry_id.as_ref().map_or("?", |id| id.as_str()),
                c.short_summary.as_deref().unwrap_or(c.summary.as_str())
            ),
            EntryBody::BranchSummary(b) => format!("from {}: {}", b.from_id, b.summary.as_str()),
            other => panic!("not a summary: {}", other.type_name()),
        };
        preview(&text, PREVIEW)
    }

    #[test]
    fn a_summary_preview_read_in_pieces_is_the_whole_line_formatted_and_cut() {
        let huge = format!("  {}", "sum\u{e4}rized   history\n".repeat(200_000));
        let summaries = [huge.as_str(), "", "   ", "short one", "x\ny"];
        let mut entries = vec![json!({"type": "message",
            "message": {"role": "user", "content": "hi", "timestamp": 1}})];
        for (i, summary) in summaries.iter().enumerate() {
            entries.push(json!({"type": "compaction", "summary": summary,
                "firstKeptEntryId": "00000001", "tokensBefore": 1_000 * i + 7}));
            entries.push(json!({"type": "compaction", "summary": huge,
                "shortSummary": summary, "firstKeptEntryId": "00000001",
                "tokensBefore": 12.5}));
            entries.push(json!({"type": "branch_summary", "fromId": "00000001",
                "summary": summary}));
            entries.push(json!({"type": "branch_summary",
                "fromId": format!("{}{i}", "long-id ".repeat(20)), "summary": summary}));
        }
        let session = session_of_entries(&entries);
        let mut cut = 0;
        for entry in &session.entries()[1..] {
            let read = preview_of(entry);
            assert_eq!(read, formatted_then_cut(entry), "{}", entry.id);
            cut += usize::from(read.ends_with('…'));
        }
        // The huge summaries (and the long ids) are cut, not shown whole.
        assert!(cut >= 8, "{cut}");
    }
}
