//! The display transcript (docs/design.md, "What the model sees"): the whole path in order, with each
//! compaction inline where it fired.

use std::borrow::Cow;

use musepi_session_model::{AgentMessage, CompactionSummaryMessage, EntryBody, Session, Text};

use crate::context::{entry_message, entry_time};

/// Summary text of a compaction a newer one replaced.
pub const SUPERSEDED_SUMMARY: &str =
    "[Superseded compaction summary elided after a newer compaction]";
/// Short summary of a compaction a newer one replaced.
pub const SUPERSEDED_SHORT_SUMMARY: &str = "Superseded compaction elided";

/// One transcript line: a message, or a compaction divider.
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptItem<'a> {
    /// Position of the source entry.
    pub entry_index: usize,
    /// The message (a compaction reads as a `compactionSummary`).
    pub message: Cow<'a, AgentMessage>,
    /// A compaction a newer one on the path replaced.
    pub superseded: bool,
    /// The message is no longer in the model's context (before the active
    /// compaction's kept region).
    pub compacted_away: bool,
}

/// Options of [`build_transcript`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TranscriptOptions {
    /// Show only the latest compacted tail: the kept entries, then the
    /// summary, then what came after it.
    pub collapse_compacted_history: bool,
}

/// The transcript at entry `leaf` (`None`: empty).
pub fn build_transcript(
    session: &Session,
    leaf: Option<usize>,
    options: TranscriptOptions,
) -> Vec<TranscriptItem<'_>> {
    let Some(leaf) = leaf else { return Vec::new() };
    let entries = session.entries();
    let path = session.path_indices(leaf);
    let latest = path
        .iter()
        .rposition(|&i| matches!(entries[i].body, EntryBody::Compaction(_)));
    // The kept region of the active compaction starts at its first kept entry.
    let kept_from = latest.and_then(|cpos| {
        let EntryBody::Compaction(c) = &entries[path[cpos]].body else {
            return None;
        };
        let first = c.first_kept_entry_id.as_ref()?;
        path[..cpos].iter().position(|&i| entries[i].id == *first)
    });
    let mut items = Vec::with_capacity(path.len());
    for (pos, &i) in path.iter().enumerate() {
        let e = &entries[i];
        let before_kept = latest.is_some_and(|c| pos < c) && kept_from.is_none_or(|k| pos < k);
        if options.collapse_compacted_history && before_kept {
            continue;
        }
        let item = match &e.body {
            EntryBody::Compaction(c) => {
                let superseded = latest != Some(pos);
                let (summary, short) = if superseded {
                    (
                        Text::new(SUPERSEDED_SUMMARY),
                        Some(SUPERSEDED_SHORT_SUMMARY.to_owned()),
                    )
                } else {
                    (c.summary.clone(), c.short_summary.clone())
                };
                TranscriptItem {
                    entry_index: i,
                    message: Cow::Owned(AgentMessage::CompactionSummary(
                        CompactionSummaryMessage {
                            summary,
                            tokens_before: c.tokens_before,
                            timestamp: entry_time(e),
                            short_summary: short,
                            first_kept_entry_id: None,
                        },
                    )),
                    superseded,
                    compacted_away: before_kept,
                }
            }
            _ => match entry_message(e) {
                Some(message) => TranscriptItem {
                    entry_index: i,
                    message,
                    superseded: false,
                    compacted_away: before_kept,
                },
                None => continue,
            },
        };
        items.push(item);
    }
    if options.collapse_compacted_history {
        // The summary reads after the kept entries, where it fired.
        if let Some(cpos) = latest {
            let ci = path[cpos];
            if let Some(at) = items.iter().position(|it| it.entry_index == ci) {
                let summary = items.remove(at);
                let after = items
                    .iter()
                    .position(|it| path.iter().position(|&p| p == it.entry_index) > Some(cpos));
                items.insert(after.unwrap_or(items.len()), summary);
            }
        }
    }
    items
}
