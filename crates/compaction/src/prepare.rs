//! Preparing a compaction (docs/design.md, "Cut points and regions" and "Where musepi differs from pi"): the
//! boundary, the cut, the three regions, `tokensBefore`, the previous
//! summary and the cumulative file operations.

use std::borrow::Cow;

use musepi_context_builder::{
    ContextMessage, FileOps, adapt_keep_recent_tokens, calculate_prompt_tokens, entry_message,
    entry_time, estimate_context_tokens, estimate_tokens,
};
use musepi_session_model::{
    AgentMessage, BranchSummaryMessage, CompactionSummaryMessage, EntryBody, EntryId, RawJson,
    Session,
};

use crate::cut::{CutPoint, find_cut_point};
use crate::settings::CompactionSettings;

/// Why there is nothing to compact.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NothingToCompact {
    /// The leaf is a compaction entry.
    #[error("Already compacted")]
    AlreadyCompacted,
    /// Everything fits in the kept window (or the path is empty).
    #[error("Nothing to compact (session too small)")]
    TooSmall,
    /// The first kept entry has no id (an unmigrated v1 file).
    #[error("First kept entry has no ID - session may need migration")]
    NoFirstKeptId,
}

/// Everything a summarizer needs to compact the path at a leaf.
#[derive(Debug, Clone)]
pub struct Preparation<'a> {
    /// The session prepared: the entries the messages below come from.
    pub session: &'a Session,
    /// The path, as entry positions, root first.
    pub path: Vec<usize>,
    /// Path position of the previous compaction, if any.
    pub previous_compaction: Option<usize>,
    /// Where the cut search starts (just after the previous compaction).
    pub boundary_start: usize,
    /// The path length.
    pub boundary_end: usize,
    /// The cut, in path positions.
    pub cut: CutPoint,
    /// Id of the first kept entry.
    pub first_kept_entry_id: EntryId,
    /// Messages summarized and dropped: the previous compaction's kept
    /// messages (docs/design.md, "Where musepi differs from pi") and the complete turns before the cut.
    pub messages_to_summarize: Vec<ContextMessage<'a>>,
    /// The prefix of a split turn, summarized separately.
    pub turn_prefix_messages: Vec<ContextMessage<'a>>,
    /// Messages from the cut to the end, kept verbatim.
    pub recent_messages: Vec<ContextMessage<'a>>,
    /// Context size before compaction: the context estimate over the
    /// messages from the previous compaction (its summary included) to the end.
    pub tokens_before: f64,
    /// The previous compaction's summary.
    pub previous_summary: Option<String>,
    /// The previous compaction's `preserveData`.
    pub previous_preserve_data: Option<RawJson>,
    /// The previous compaction's `details` (a text archive rides there), even
    /// when an extension made it.
    pub previous_details: Option<serde_json::Value>,
    /// Path position of the entry the previous compaction kept first.
    pub previously_kept_start: Option<usize>,
    /// Files read and changed by what is summarized, plus the previous
    /// compaction's lists (unless an extension made it).
    pub file_ops: FileOps,
    /// The `keepRecentTokens` the cut used (after adaptation).
    pub keep_recent_tokens: u64,
}

impl Preparation<'_> {
    /// Whether the cut splits a turn.
    pub fn is_split_turn(&self) -> bool {
        self.cut.is_split_turn
    }
}

/// The message an entry gives a summarizer: like the context, but every
/// branch summary counts (even an empty one) and compactions read as their
/// summary.
pub fn summary_message(session: &Session, i: usize) -> Option<Cow<'_, AgentMessage>> {
    let e = &session.entries()[i];
    match &e.body {
        EntryBody::BranchSummary(b) => Some(Cow::Owned(AgentMessage::BranchSummary(
            BranchSummaryMessage {
                summary: b.summary.clone(),
                from_id: b.from_id.clone(),
                timestamp: entry_time(e),
            },
        ))),
        EntryBody::Compaction(c) => Some(Cow::Owned(AgentMessage::CompactionSummary(
            CompactionSummaryMessage {
                summary: c.summary.clone(),
                tokens_before: c.tokens_before,
                timestamp: entry_time(e),
                short_summary: c.short_summary.clone(),
            },
        ))),
        _ => entry_message(e),
    }
}

fn messages_in<'a>(
    session: &'a Session,
    path: &[usize],
    from: usize,
    to: usize,
) -> Vec<ContextMessage<'a>> {
    path[from..to]
        .iter()
        .filter(|&&i| !matches!(session.entries()[i].body, EntryBody::Compaction(_)))
        .filter_map(|&i| {
            summary_message(session, i).map(|message| ContextMessage {
                entry_index: i,
                message,
            })
        })
        .collect()
}

/// The `keepRecentTokens` a compaction at `leaf` cuts with: the setting,
/// shrunk when the last provider usage since the previous compaction shows
/// the estimate of those messages runs low (the ratio of the usage's prompt
/// tokens to the estimate; never enlarged). `settings.adapt_keep_recent`
/// off, or no usage, leaves the setting as it is.
///
/// The usage measured the messages as they were sent, so a caller that
/// prunes before preparing measures this on the session before pruning
/// (see [`crate::prune_first`]).
pub fn adapted_keep_recent_tokens(
    session: &Session,
    leaf: Option<usize>,
    settings: &CompactionSettings,
) -> u64 {
    let keep = settings.keep_recent_tokens;
    let Some(leaf) = leaf.filter(|_| settings.adapt_keep_recent) else {
        return keep;
    };
    let path = session.path_indices(leaf);
    let entries = session.entries();
    let start = path
        .iter()
        .rposition(|&i| matches!(entries[i].body, EntryBody::Compaction(_)))
        .map_or(0, |p| p + 1);
    adapt_over(session, &path[start..], keep)
}

/// The adaptation over the entries since the previous compaction.
fn adapt_over(session: &Session, since: &[usize], keep: u64) -> u64 {
    let entries = session.entries();
    let last_usage = since.iter().rev().find_map(|&i| match &entries[i].body {
        EntryBody::Message(m) => musepi_context_builder::anchoring_usage(m),
        _ => None,
    });
    let Some(usage) = last_usage else {
        return keep;
    };
    let estimated: u64 = since
        .iter()
        .filter_map(|&i| summary_message(session, i))
        .map(|m| estimate_tokens(&m))
        .sum();
    adapt_keep_recent_tokens(keep, calculate_prompt_tokens(usage), estimated)
}

/// The position of the entry `id` names among the first `before`
/// positions of `path`, the path from the root: an entry's position on it
/// is its depth, so no walk along the path is needed unless ids repeat.
fn position_before(
    session: &Session,
    path: &[usize],
    before: usize,
    id: &EntryId,
) -> Option<usize> {
    let entries = session.entries();
    if session.has_duplicate_ids() {
        return path[..before].iter().position(|&i| entries[i].id == *id);
    }
    let i = session.index_of(id.as_ref())?;
    let depth = session.path_summary(i).depth as usize;
    (depth < before && path.get(depth) == Some(&i)).then_some(depth)
}

/// Prepares a compaction of the path at `leaf`.
pub fn prepare<'a>(
    session: &'a Session,
    leaf: Option<usize>,
    settings: &CompactionSettings,
) -> Result<Preparation<'a>, NothingToCompact> {
    let Some(leaf) = leaf else {
        return Err(NothingToCompact::TooSmall);
    };
    let entries = session.entries();
    let path = session.path_indices(leaf);
    let end = path.len();
    if matches!(entries[path[end - 1]].body, EntryBody::Compaction(_)) {
        return Err(NothingToCompact::AlreadyCompacted);
    }
    let prev = path
        .iter()
        .rposition(|&i| matches!(entries[i].body, EntryBody::Compaction(_)));
    let start = prev.map_or(0, |p| p + 1);

    let usage_from = prev.unwrap_or(0);
    let usage_messages: Vec<Cow<'_, AgentMessage>> = path[usage_from..]
        .iter()
        .filter_map(|&i| summary_message(session, i))
        .collect();
    let tokens_before = estimate_context_tokens(usage_messages.iter().map(AsRef::as_ref)).tokens;

    let keep = if settings.adapt_keep_recent {
        adapt_over(session, &path[start..], settings.keep_recent_tokens)
    } else {
        settings.keep_recent_tokens
    };

    let cut = find_cut_point(entries, &path, start, end, keep);
    let first_kept = &entries[path[cut.first_kept_index.min(end - 1)]];
    if cut.first_kept_index >= end || first_kept.id.as_str().is_empty() {
        return Err(NothingToCompact::NoFirstKeptId);
    }

    let (previous_summary, previous_preserve_data, harvested_details, previously_kept_start) =
        match prev {
            Some(p) => {
                let EntryBody::Compaction(c) = &entries[path[p]].body else {
                    unreachable!("found above")
                };
                let kept = c
                    .first_kept_entry_id
                    .as_ref()
                    .and_then(|fk| position_before(session, &path, p, fk));
                let details = c
                    .carries_file_lists()
                    .then_some(c.details.as_ref())
                    .flatten();
                (
                    Some(c.summary.as_str().to_owned()),
                    c.preserve_data.clone(),
                    details,
                    kept,
                )
            }
            None => (None, None, None, None),
        };

    let previous_details = prev.and_then(|p| match &entries[path[p]].body {
        EntryBody::Compaction(c) => c.details.clone(),
        _ => None,
    });
    let history_end = if cut.is_split_turn {
        cut.turn_start_index.unwrap_or(cut.first_kept_index)
    } else {
        cut.first_kept_index
    };
    let mut messages_to_summarize = match (prev, previously_kept_start) {
        (Some(p), Some(k)) => messages_in(session, &path, k, p),
        _ => Vec::new(),
    };
    messages_to_summarize.extend(messages_in(session, &path, start, history_end));
    let turn_prefix_messages = match cut.turn_start_index {
        Some(ts) if cut.is_split_turn => messages_in(session, &path, ts, cut.first_kept_index),
        _ => Vec::new(),
    };
    if messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        return Err(NothingToCompact::TooSmall);
    }
    let recent_messages = messages_in(session, &path, cut.first_kept_index, end);

    let mut file_ops = FileOps::default();
    if let Some(d) = harvested_details {
        file_ops.add_details(d);
    }
    for m in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        file_ops.add_message(&m.message);
    }

    Ok(Preparation {
        session,
        first_kept_entry_id: first_kept.id.clone(),
        path,
        previous_compaction: prev,
        boundary_start: start,
        boundary_end: end,
        cut,
        messages_to_summarize,
        turn_prefix_messages,
        recent_messages,
        tokens_before,
        previous_summary,
        previous_preserve_data,
        previous_details,
        previously_kept_start,
        file_ops,
        keep_recent_tokens: keep,
    })
}
