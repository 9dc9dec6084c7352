//! One-line descriptions of entries and messages, shared by the commands'
//! text output and the terminal UI.

use std::fmt::Write as _;

use musepi_session_model::{AgentMessage, ContentBlock, Entry, EntryBody};

use crate::output::preview;

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
        EntryBody::Message(m) => message_preview(m),
        EntryBody::ThinkingLevelChange { thinking_level } => {
            thinking_level.clone().unwrap_or_else(|| "null".into())
        }
        EntryBody::ModelChange(mc) => mc
            .provider_and_model()
            .map(|(p, m)| format!("{p}/{m}"))
            .or_else(|| mc.model.clone())
            .unwrap_or_default(),
        EntryBody::Compaction(c) => format!(
            "{} tokens before; keeps from {}: {}",
            c.tokens_before,
            c.first_kept_entry_id.as_ref().map_or("?", |id| id.as_str()),
            c.short_summary.as_deref().unwrap_or(c.summary.as_str())
        ),
        EntryBody::BranchSummary(b) => format!("from {}: {}", b.from_id, b.summary.as_str()),
        EntryBody::Custom { custom_type, .. } => custom_type.clone(),
        EntryBody::CustomMessage(c) => format!("{}: {}", c.custom_type, c.content.joined_text()),
        EntryBody::Label { target_id, label } => match label.as_deref() {
            Some(l) if !l.is_empty() => format!("{target_id} = {l}"),
            _ => format!("{target_id} cleared"),
        },
        EntryBody::SessionInfo { name } => name.clone().unwrap_or_default(),
        EntryBody::Other { .. } => String::new(),
    };
    preview(&text, PREVIEW)
}

/// A one-line preview of what the message says.
pub(crate) fn message_preview(m: &AgentMessage) -> String {
    match m {
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
    }
}
