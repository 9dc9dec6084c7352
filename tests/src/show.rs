//! How message content appears in golden snapshots.
//!
//! Our own fixtures show a short preview of each message; the real pi
//! sessions of `../shared/fixtures/pi` show only a hash of it, so that no
//! text of theirs ever lands in the repository.

use musepi_session_model::{AgentMessage, Content, ContentBlock};

use crate::sha256_hex;

/// Characters of a preview before it is cut with `…`.
pub const PREVIEW_CHARS: usize = 56;

/// How message text is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Show {
    /// A short preview in quotes, newlines written as `\n` (our fixtures).
    Preview,
    /// The first 12 hex digits of the SHA-256 of the text (real sessions).
    Hash,
}

impl Show {
    /// The text as this mode renders it; `(empty)` for an empty text.
    pub fn text(self, text: &str) -> String {
        match self {
            Self::Preview => preview(text, PREVIEW_CHARS),
            Self::Hash => hash12(text),
        }
    }
}

/// The first 12 hex digits of the SHA-256 of `text`, or `(empty)`.
pub fn hash12(text: &str) -> String {
    if text.is_empty() {
        return "(empty)".to_owned();
    }
    sha256_hex(text.as_bytes())[..12].to_owned()
}

/// `text` in quotes with newlines and tabs escaped, cut after `max`
/// characters with `…`; `(empty)` for an empty text.
pub fn preview(text: &str, max: usize) -> String {
    if text.is_empty() {
        return "(empty)".to_owned();
    }
    let mut out = String::from("\"");
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The text of a message, flattened: text and thinking blocks, tool calls
/// as `name(arguments)`, images as `[image <mime>]`, a bash execution as
/// `$ command` and its output, summaries as their summary. Blocks are
/// joined with newlines. Unknown roles have no text.
pub fn message_text(message: &AgentMessage) -> String {
    match message {
        AgentMessage::User(m) => content_text(&m.content),
        AgentMessage::Assistant(m) => content_text(&m.content),
        AgentMessage::ToolResult(m) => content_text(&m.content),
        AgentMessage::Custom(m) => content_text(&m.content),
        AgentMessage::BashExecution(m) => {
            format!("$ {}\n{}", m.command.as_str(), m.output.as_str())
        }
        AgentMessage::BranchSummary(m) => m.summary.as_str().to_owned(),
        AgentMessage::CompactionSummary(m) => m.summary.as_str().to_owned(),
        AgentMessage::Other { .. } => String::new(),
    }
}

/// The text of message content (see [`message_text`]).
pub fn content_text(content: &Content) -> String {
    match content {
        Content::Text(t) => t.as_str().to_owned(),
        Content::Blocks(blocks) => blocks_text(blocks),
    }
}

/// The text of content blocks (see [`message_text`]).
pub fn blocks_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str().to_owned()),
            ContentBlock::Thinking { thinking, .. } => Some(thinking.as_str().to_owned()),
            ContentBlock::RedactedThinking { .. } => Some("[redacted thinking]".to_owned()),
            ContentBlock::Image { mime_type, .. } => Some(format!("[image {mime_type}]")),
            ContentBlock::ToolCall(call) => Some(format!(
                "{}({})",
                call.name.as_str(),
                musepi_session_model::json::js_stringify(call.arguments.value())
            )),
            ContentBlock::Other { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The kinds of the blocks, joined with `+` (`text` for string content;
/// a tool call names its tool: `toolCall:read`).
pub fn block_kinds(blocks: &[ContentBlock]) -> String {
    if blocks.is_empty() {
        return "(none)".to_owned();
    }
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text { .. } => "text".to_owned(),
            ContentBlock::Thinking {
                thinking_signature: Some(_),
                ..
            } => "thinking(signed)".to_owned(),
            ContentBlock::Thinking { .. } => "thinking".to_owned(),
            ContentBlock::RedactedThinking { .. } => "redactedThinking".to_owned(),
            ContentBlock::Image { mime_type, .. } => format!("image({mime_type})"),
            ContentBlock::ToolCall(call) => format!("toolCall:{}", call.name.as_str()),
            ContentBlock::Other { type_name } => format!("?{type_name}"),
        })
        .collect::<Vec<_>>()
        .join("+")
}

/// The block kinds of message content (see [`block_kinds`]).
pub fn content_kinds(content: &Content) -> String {
    match content {
        Content::Text(_) => "text".to_owned(),
        Content::Blocks(blocks) => block_kinds(blocks),
    }
}
