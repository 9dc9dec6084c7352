//! What the view shows, as plain data: the display transcript (docs/design.md, "What the model sees")
//! turned into blocks of text parts, some of them folded.
//!
//! Nothing here knows about terminals: [`Transcript::from_session`] reads a
//! session once, and the owned result can be laid out at any width and sent
//! between threads.

use std::fmt::Write as _;

use musepi_runtime::context::{TranscriptOptions, build_transcript};
use musepi_session_model::{
    AgentMessage, Content, ContentBlock, EntryBody, Session, SummaryEntry as _,
};

use super::archive::{ArchiveInfo, stored_archive};
use super::text::{line_count, one_line};
use crate::output::counted;

/// The display transcript at a session's leaf.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcript {
    /// The blocks, oldest first; the last one is the leaf's.
    pub blocks: Vec<Block>,
    /// The leaf's entry id.
    pub leaf_id: Option<String>,
    /// The context's tokens at the leaf, as `musepi context` counts them.
    pub context_tokens: u64,
}

/// One transcript line of the session: a message or a compaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// Position of the entry in the session.
    pub entry_index: usize,
    /// The entry's id.
    pub entry_id: String,
    /// What kind of message it is.
    pub kind: BlockKind,
    /// The heading (`user`, `assistant · model`, …); none for tool results,
    /// which read as part of the call before them.
    pub title: Option<String>,
    /// The content.
    pub parts: Vec<Part>,
    /// The model no longer sees it (before the active compaction's kept region).
    pub compacted_away: bool,
}

/// The kind of a block, which decides its colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// A user message.
    User,
    /// An assistant message.
    Assistant,
    /// A tool result.
    ToolResult,
    /// A shell command the user ran.
    Bash,
    /// An extension message.
    Custom,
    /// A branch summary.
    BranchSummary,
    /// A compaction, shown as a divider.
    Compaction,
    /// A role this version does not know.
    Other,
}

/// How a text part is coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Ordinary text.
    Plain,
    /// Secondary text.
    Dim,
    /// An error.
    Error,
}

/// One piece of a block.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// Text shown as it is.
    Text {
        /// The text (may span lines).
        text: String,
        /// Its colour.
        tone: Tone,
    },
    /// One summary line that expands into a body (thinking, a tool call or
    /// its result, a branch summary).
    Fold {
        /// The line shown while folded.
        summary: String,
        /// What expanding adds.
        body: String,
        /// Its colour.
        tone: Tone,
    },
    /// A compaction divider (`── 📷 compacted · ctrl+o ──`).
    Divider(Divider),
}

/// What a compaction divider shows when expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct Divider {
    /// The summary (the placeholder for a superseded compaction).
    pub summary: String,
    /// The one-line summary, if any.
    pub short_summary: Option<String>,
    /// Context tokens before it.
    pub tokens_before: u64,
    /// The first entry it kept.
    pub first_kept: Option<String>,
    /// A newer compaction on the path replaced it.
    pub superseded: bool,
    /// A hook or extension wrote it.
    pub from_extension: bool,
    /// The snapcompact archive it holds, if any.
    pub archive: Option<ArchiveInfo>,
    /// How it was made, when its entry records it (`method`).
    pub method: Option<String>,
    /// The context's tokens after it, when its entry records it
    /// (`tokensAfter`).
    pub tokens_after: Option<u64>,
}

impl Part {
    fn text(text: impl Into<String>, tone: Tone) -> Self {
        Self::Text {
            text: text.into(),
            tone,
        }
    }

    fn fold(summary: String, body: String, tone: Tone) -> Self {
        Self::Fold {
            summary,
            body,
            tone,
        }
    }

    /// Whether the part can be expanded.
    pub fn is_foldable(&self) -> bool {
        !matches!(self, Self::Text { .. })
    }
}

/// Characters of a folded line's preview.
const PREVIEW: usize = 72;

impl Transcript {
    /// The transcript at `session`'s leaf: every path entry in order, each
    /// compaction inline where it fired.
    pub fn from_session(session: &Session) -> Self {
        let items = build_transcript(session, session.leaf_index(), TranscriptOptions::default());
        let blocks = items
            .iter()
            .map(|item| {
                let entry = &session.entries()[item.entry_index];
                let (kind, title, parts) = match item.message.as_ref() {
                    AgentMessage::CompactionSummary(c) => {
                        let stored = match &entry.body {
                            EntryBody::Compaction(ec) => Some(ec),
                            _ => None,
                        };
                        let divider = Divider {
                            summary: c.summary.as_str().to_owned(),
                            short_summary: c.short_summary.clone(),
                            tokens_before: c.tokens_before,
                            first_kept: stored
                                .and_then(|s| s.first_kept_entry_id.as_ref())
                                .map(ToString::to_string),
                            superseded: item.superseded,
                            from_extension: stored
                                .is_some_and(musepi_session_model::Compaction::is_from_extension),
                            archive: stored.and_then(stored_archive),
                            method: stored.and_then(|s| s.method.clone()),
                            tokens_after: stored.and_then(|s| s.tokens_after),
                        };
                        (BlockKind::Compaction, None, vec![Part::Divider(divider)])
                    }
                    message => message_parts(message),
                };
                Block {
                    entry_index: item.entry_index,
                    entry_id: entry.id.to_string(),
                    kind,
                    title,
                    parts,
                    compacted_away: item.compacted_away,
                }
            })
            .collect();
        Self {
            blocks,
            leaf_id: session.leaf_id().map(ToString::to_string),
            context_tokens: crate::report::context::context_tokens(session, session.leaf_index()),
        }
    }
}

fn message_parts(message: &AgentMessage) -> (BlockKind, Option<String>, Vec<Part>) {
    match message {
        AgentMessage::User(u) => (
            BlockKind::User,
            Some("user".to_owned()),
            content_parts(&u.content),
        ),
        AgentMessage::Assistant(a) => {
            let title = match &a.model {
                Some(model) => format!("assistant · {model}"),
                None => "assistant".to_owned(),
            };
            let mut parts = content_parts(&a.content);
            if let Some(error) = &a.error_message {
                parts.push(Part::text(format!("error: {error}"), Tone::Error));
            }
            (BlockKind::Assistant, Some(title), parts)
        }
        AgentMessage::ToolResult(t) => {
            let text = content_text(&t.content);
            let mark = if t.is_error { "✗" } else { "✓" };
            let lines = line_count(&text);
            let mut summary = format!(
                "{mark} {} · {}",
                t.tool_name,
                counted(lines, "line", "lines")
            );
            if t.pruned_at.is_some() {
                summary.push_str(" · pruned");
            }
            if t.is_useless() {
                summary.push_str(" · useless");
            }
            let _ = write!(summary, ": {}", one_line(&text, PREVIEW));
            let tone = if t.is_error { Tone::Error } else { Tone::Dim };
            (
                BlockKind::ToolResult,
                None,
                vec![Part::fold(summary, text, tone)],
            )
        }
        AgentMessage::BashExecution(b) => {
            let mut parts = vec![Part::text(format!("$ {}", b.command.as_str()), Tone::Plain)];
            let exit = match (b.exit_code, b.cancelled) {
                (_, true) => "cancelled".to_owned(),
                (Some(code), false) => format!("exit {code}"),
                (None, false) => "no exit code".to_owned(),
            };
            let output = b.output.as_str();
            let lines = line_count(output);
            parts.push(Part::fold(
                format!("{exit} · {} of output", counted(lines, "line", "lines")),
                output.to_owned(),
                Tone::Dim,
            ));
            (BlockKind::Bash, Some("bash".to_owned()), parts)
        }
        AgentMessage::Custom(c) => {
            let title = if c.display {
                format!("custom · {}", c.custom_type)
            } else {
                format!("custom · {} (hidden)", c.custom_type)
            };
            (BlockKind::Custom, Some(title), content_parts(&c.content))
        }
        AgentMessage::BranchSummary(b) => {
            let text = b.summary.as_str();
            let summary = one_line(text, PREVIEW);
            (
                BlockKind::BranchSummary,
                Some(format!("branch summary · from {}", b.from_id)),
                vec![Part::fold(summary, text.to_owned(), Tone::Plain)],
            )
        }
        AgentMessage::CompactionSummary(c) => (
            BlockKind::Compaction,
            Some("compaction summary".to_owned()),
            vec![Part::text(c.summary.as_str(), Tone::Plain)],
        ),
        AgentMessage::Other { role, .. } => (BlockKind::Other, Some(role.clone()), Vec::new()),
    }
}

/// Text and image blocks as parts: text shown, the rest folded.
fn content_parts(content: &Content) -> Vec<Part> {
    let blocks = match content {
        Content::Text(t) => return vec![Part::text(t.as_str(), Tone::Plain)],
        Content::Blocks(b) => b,
    };
    let mut parts = Vec::new();
    for block in blocks {
        let part = match block {
            ContentBlock::Text { text, .. } => Part::text(text.as_str(), Tone::Plain),
            ContentBlock::Thinking { thinking, .. } => {
                let lines = line_count(thinking.as_str());
                Part::fold(
                    format!("thinking · {}", counted(lines, "line", "lines")),
                    thinking.as_str().to_owned(),
                    Tone::Dim,
                )
            }
            ContentBlock::RedactedThinking { .. } => Part::text("[redacted thinking]", Tone::Dim),
            ContentBlock::Image { mime_type, .. } => {
                Part::text(format!("[image {mime_type}]"), Tone::Dim)
            }
            ContentBlock::ToolCall(call) => {
                let args = call.arguments.value();
                let mut summary = format!(
                    "→ {}({})",
                    call.name.as_str(),
                    one_line(&args.to_string(), PREVIEW)
                );
                if let Some(intent) = &call.intent {
                    let _ = write!(summary, " // {intent}");
                }
                let body = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
                Part::fold(summary, body, Tone::Plain)
            }
            ContentBlock::Other { type_name } => Part::text(format!("[{type_name}]"), Tone::Dim),
        };
        parts.push(part);
    }
    parts
}

/// The text of a tool result: text blocks joined by newlines, images named.
fn content_text(content: &Content) -> String {
    match content {
        Content::Text(t) => t.as_str().to_owned(),
        Content::Blocks(blocks) => {
            let pieces: Vec<String> = blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text, .. } => Some(text.as_str().to_owned()),
                    ContentBlock::Image { mime_type, .. } => Some(format!("[image {mime_type}]")),
                    _ => None,
                })
                .collect();
            pieces.join("\n")
        }
    }
}
