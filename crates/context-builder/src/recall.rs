//! What compactions and pruning took out of the model's view, read back
//! (docs/design.md, "Recall"): the messages of the path that the context
//! at a leaf no longer holds (a compaction summarized them), and the tool
//! results pruning blanked, with their originals from the prune store.
//!
//! It reads no file: the caller hands in the originals it found
//! (`musepi recall` and `musepi serve` read the store beside the session).

use std::borrow::Cow;

use musepi_session_model::{AgentMessage, ContentBlock, Entry, EntryBody, Session};
use regex::{Regex, RegexBuilder};

use crate::context::{build_context_at, entry_message};

/// One entry of the history as the model had it, with where it stands now.
#[derive(Debug, Clone, PartialEq)]
pub struct Recalled<'a> {
    /// Position of the entry in [`Session::entries`].
    pub entry_index: usize,
    /// A compaction summarized it: the context at the leaf no longer holds it.
    pub summarized: bool,
    /// Pruning blanked it (a tool result): `message` is the original when
    /// the store had it, else the placeholder.
    pub pruned: bool,
    /// Whether `message` is what the agent wrote: not pruned, or the
    /// original from the store.
    pub original: bool,
    /// The message, as the agent wrote it when `original`.
    pub message: Cow<'a, AgentMessage>,
}

impl Recalled<'_> {
    /// Its text, as [`message_text`] prints it.
    pub fn text(&self) -> String {
        message_text(&self.message)
    }
}

/// Whether `entry` is a tool result that pruning blanked.
pub fn is_pruned(entry: &Entry) -> bool {
    matches!(&entry.body, EntryBody::Message(AgentMessage::ToolResult(t)) if t.pruned_at.is_some())
}

/// The entry at `index` as recall shows it: its message (the original of a
/// pruned result, when `original` has it), and whether the context at
/// `leaf` still holds it. `None` for an entry that carries no message (a
/// label, a model change, a compaction).
pub fn recall_entry<'a>(
    session: &'a Session,
    leaf: Option<usize>,
    index: usize,
    original: &mut dyn FnMut(&Entry) -> Option<Entry>,
) -> Option<Recalled<'a>> {
    let entry = session.entries().get(index)?;
    let in_context = build_context_at(session, leaf)
        .messages
        .iter()
        .any(|m| m.entry_index == index);
    let on_path = leaf.is_some_and(|l| session.path_indices(l).contains(&index));
    recalled(entry, index, on_path && !in_context, original)
}

fn recalled<'a>(
    entry: &'a Entry,
    index: usize,
    summarized: bool,
    original: &mut dyn FnMut(&Entry) -> Option<Entry>,
) -> Option<Recalled<'a>> {
    let pruned = is_pruned(entry);
    let (message, original) = match pruned.then(|| original(entry)).flatten() {
        Some(kept) => match kept.body {
            EntryBody::Message(m) => (Cow::Owned(m), true),
            _ => (entry_message(entry)?, false),
        },
        None => (entry_message(entry)?, !pruned),
    };
    Some(Recalled {
        entry_index: index,
        summarized,
        pruned,
        original,
        message,
    })
}

/// The history the model no longer sees at `leaf`, oldest first: every
/// entry of the path to `leaf` that gives a message the context at `leaf`
/// does not hold (compactions summarized it), and every pruned tool result
/// of the path, with its original when `original` has it.
pub fn lost_history<'a>(
    session: &'a Session,
    leaf: Option<usize>,
    original: &mut dyn FnMut(&Entry) -> Option<Entry>,
) -> Vec<Recalled<'a>> {
    let Some(leaf) = leaf else {
        return Vec::new();
    };
    let context = build_context_at(session, Some(leaf));
    let mut in_context = vec![false; session.len()];
    for m in &context.messages {
        in_context[m.entry_index] = true;
    }
    let entries = session.entries();
    session
        .path_indices(leaf)
        .into_iter()
        .filter(|&i| !in_context[i] || is_pruned(&entries[i]))
        .filter_map(|i| recalled(&entries[i], i, !in_context[i], original))
        .collect()
}

/// A message as text, whole: what the user, the assistant (its reasoning,
/// its replies, its tool calls as `name(arguments)`), a tool or a command
/// wrote, each block on its own line; an image is `[image]`. A tool
/// result of one text block is that text byte for byte.
pub fn message_text(message: &AgentMessage) -> String {
    let blocks = |content: &musepi_session_model::Content| match content.as_text() {
        Some(t) => t.as_str().to_owned(),
        None => blocks_text(content.blocks()),
    };
    match message {
        AgentMessage::User(u) => blocks(&u.content),
        AgentMessage::Assistant(a) => blocks(&a.content),
        AgentMessage::ToolResult(t) => blocks(&t.content),
        AgentMessage::BashExecution(b) => {
            format!("$ {}\n{}", b.command.as_str(), b.output.as_str())
        }
        AgentMessage::Custom(c) => blocks(&c.content),
        AgentMessage::BranchSummary(b) => b.summary.as_str().to_owned(),
        AgentMessage::CompactionSummary(c) => c.summary.as_str().to_owned(),
        AgentMessage::Other { .. } => String::new(),
    }
}

fn blocks_text(blocks: &[ContentBlock]) -> String {
    let mut parts: Vec<Cow<'_, str>> = Vec::with_capacity(blocks.len());
    for b in blocks {
        match b {
            ContentBlock::Text { text, .. } => parts.push(Cow::Borrowed(text.as_str())),
            ContentBlock::Thinking { thinking, .. } => {
                parts.push(Cow::Borrowed(thinking.as_str()));
            }
            ContentBlock::ToolCall(call) => parts.push(Cow::Owned(format!(
                "{}({})",
                call.name.as_str(),
                serde_json::to_string(call.arguments.value()).unwrap_or_default()
            ))),
            ContentBlock::Image { .. } => parts.push(Cow::Borrowed("[image]")),
            ContentBlock::RedactedThinking { .. } | ContentBlock::Other { .. } => {}
        }
    }
    parts.join("\n")
}

/// A search of recalled text: the text given, literally, in any case.
#[derive(Debug, Clone)]
pub struct Search {
    re: Regex,
}

/// One line a [`Search`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The line's number in the entry's text, from 1.
    pub line: usize,
    /// The line around the match, at most about `width` characters, with
    /// `…` where it was cut.
    pub context: String,
}

impl Search {
    /// A search for `text` (not a pattern: every character stands for
    /// itself), ignoring case. `None` for an empty text.
    pub fn new(text: &str) -> Option<Self> {
        if text.is_empty() {
            return None;
        }
        RegexBuilder::new(&regex::escape(text))
            .case_insensitive(true)
            .build()
            .ok()
            .map(|re| Self { re })
    }

    /// The lines of `text` that hold the search, each cut to about `width`
    /// characters around its first match.
    pub fn hits(&self, text: &str, width: usize) -> Vec<Hit> {
        text.split('\n')
            .enumerate()
            .filter_map(|(n, line)| {
                let m = self.re.find(line)?;
                Some(Hit {
                    line: n + 1,
                    context: around(line.trim_end_matches('\r'), m.start(), m.end(), width),
                })
            })
            .collect()
    }
}

/// `line` cut to about `width` characters around the bytes `start..end`,
/// with `…` where it was cut.
fn around(line: &str, start: usize, end: usize, width: usize) -> String {
    let chars = line.chars().count();
    if chars <= width {
        return line.to_owned();
    }
    let match_chars = line[start..end].chars().count();
    let before = line[..start].chars().count();
    let room = width.saturating_sub(match_chars) / 2;
    let from = before.saturating_sub(room);
    let to = (before + match_chars + room).max(from + width).min(chars);
    let from = from.min(to.saturating_sub(width));
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    out.extend(line.chars().skip(from).take(to - from));
    if to < chars {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_is_literal_and_ignores_case() {
        let s = Search::new("a.b (X)").unwrap();
        let hits = s.hits("one\nfound A.B (x) here\naxb (X)\n", 80);
        assert_eq!(
            hits,
            [Hit {
                line: 2,
                context: "found A.B (x) here".into()
            }]
        );
        assert!(Search::new("").is_none());
    }

    #[test]
    fn a_long_line_is_cut_around_its_match() {
        let line = format!("{}NEEDLE{}", "a".repeat(500), "b".repeat(500));
        let s = Search::new("needle").unwrap();
        let hit = &s.hits(&line, 40)[0];
        assert!(hit.context.contains("NEEDLE"), "{}", hit.context);
        assert!(hit.context.starts_with('…') && hit.context.ends_with('…'));
        assert_eq!(hit.context.chars().count(), 42, "{}", hit.context);
        // At the start of a line, the cut is at the end only.
        let hit = &s.hits(&format!("NEEDLE{}", "c".repeat(500)), 40)[0];
        assert!(hit.context.starts_with("NEEDLE") && hit.context.ends_with('…'));
    }
}
