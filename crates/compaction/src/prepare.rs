//! Preparing a compaction (docs/design.md, "Cut points and regions" and "Where musepi differs from pi"): the
//! boundary, the cut, the three regions, `tokensBefore`, the previous
//! summary and the cumulative file operations.

use std::borrow::Cow;

use musepi_context_builder::{
    ContextMessage, FileOps, context_thinking_level, entry_message, entry_time,
    estimate_context_at, estimate_tokens, summary_reasoning,
};
use musepi_session_model::{
    AgentMessage, BranchSummaryMessage, Compaction, CompactionSummaryMessage, Entry, EntryBody,
    EntryId, RawJson, Session, SummaryEntry,
};

use crate::cut::{CutPoint, find_cut_point, is_valid_cut_point};
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
    /// The tool results after the last cut point alone fill the kept
    /// window: a cut never separates a result from its call, so the cut
    /// falls back to the first cut point and everything is kept, as pi
    /// does. Said as pi says [`NothingToCompact::TooSmall`].
    #[error("Nothing to compact (session too small)")]
    ToolResultsFillWindow {
        /// The tokens of the messages after the last cut point.
        tail_tokens: u64,
        /// The kept window the cut used (after adaptation).
        keep_recent_tokens: u64,
    },
    /// The first kept entry has no id (an unmigrated v1 file).
    #[error("First kept entry has no ID - session may need migration")]
    NoFirstKeptId,
}

/// Everything a summarizer needs to compact the path at a leaf.
///
/// Positions are path positions: an entry's position on the path from the
/// root is its depth (the root's is 0). The preparation reads the path only
/// from [`Preparation::path_start`] on; [`Preparation::branch`] walks the
/// rest when a caller needs the whole branch.
#[derive(Debug, Clone)]
pub struct Preparation<'a> {
    /// The session prepared: the entries the messages below come from.
    pub session: &'a Session,
    /// The leaf prepared at, as an entry position.
    pub leaf: usize,
    /// Path position of the previous compaction, if any.
    pub previous_compaction: Option<usize>,
    /// Where the range the cut and the regions cover starts: the previous
    /// compaction's first kept entry when it is on the path, else just after
    /// the previous compaction, else the root. The cut may fall before the
    /// previous compaction, inside what it kept.
    pub boundary_start: usize,
    /// The path length.
    pub boundary_end: usize,
    /// The cut, in path positions.
    pub cut: CutPoint,
    /// Id of the first kept entry.
    pub first_kept_entry_id: EntryId,
    /// Messages summarized and dropped: the complete turns from
    /// [`Preparation::boundary_start`] to the cut (what the previous
    /// compaction kept included, unless the cut keeps it again). A
    /// compaction entry is in no region.
    pub messages_to_summarize: Vec<ContextMessage<'a>>,
    /// The prefix of a split turn, summarized separately.
    pub turn_prefix_messages: Vec<ContextMessage<'a>>,
    /// Messages from the cut to the end, kept verbatim.
    pub recent_messages: Vec<ContextMessage<'a>>,
    /// Context size before compaction, as pi estimates it: the context
    /// estimate over the whole context at the leaf
    /// ([`musepi_context_builder::estimate_context_at`]).
    pub tokens_before: u64,
    /// The context's tokens at the leaf ([`musepi_context_builder::context_tokens`],
    /// musepi's own size of the context), when the caller measured them
    /// ([`crate::PruneFirst::prepare`] does, before pruning); a snapcompact
    /// archive names them as the tokens before compaction.
    pub context_tokens: Option<u64>,
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
    /// The reasoning effort every summary request of this compaction asks
    /// for: the session's thinking level at the leaf (the latest
    /// `thinking_level_change` on the path), none when it is `off`, as pi
    /// 0.73.1 sends it ([`musepi_context_builder::summary_reasoning`]).
    pub reasoning: Option<String>,
    /// The path read, as entry positions: positions `path_start..boundary_end`.
    path: Vec<usize>,
    /// The path position of `path[0]`.
    path_start: usize,
}

impl Preparation<'_> {
    /// Whether the cut splits a turn.
    pub fn is_split_turn(&self) -> bool {
        self.cut.is_split_turn
    }

    /// The first path position the preparation read: the previous
    /// compaction's first kept entry, else the previous compaction, else
    /// the root (0). Every position this preparation names is at or after it.
    pub fn path_start(&self) -> usize {
        self.path_start
    }

    /// The entries the preparation read, as entry positions: path
    /// positions [`Preparation::path_start`] to the leaf.
    pub fn path_read(&self) -> &[usize] {
        &self.path
    }

    /// The entry at path position `pos`, as an entry position; `None`
    /// before [`Preparation::path_start`] or past the leaf.
    pub fn entry_at(&self, pos: usize) -> Option<usize> {
        self.path.get(pos.checked_sub(self.path_start)?).copied()
    }

    /// The entry the split turn starts at (the entry at
    /// `cut.turn_start_index`), as an entry position; `None` when the cut
    /// splits no turn.
    pub fn turn_start_entry(&self) -> Option<usize> {
        self.cut.turn_start_index.and_then(|pos| self.entry_at(pos))
    }

    /// The whole branch: every entry from the root to the leaf, as entry
    /// positions, root first. It walks the parent links, one step per
    /// entry; the preparation itself never reads the path before
    /// [`Preparation::path_start`].
    pub fn branch(&self) -> Vec<usize> {
        self.session.path_indices(self.leaf)
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
                first_kept_entry_id: None,
            },
        ))),
        _ => entry_message(e),
    }
}

/// The summarizer messages of `path[from..to]`, compactions left out.
pub(crate) fn messages_in<'a>(
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

/// What a preparation reads of the path to its leaf.
struct PathRead<'a> {
    /// Entry positions of path positions `start..` to the leaf.
    path: Vec<usize>,
    /// The path position of `path[0]`.
    start: usize,
    /// The previous compaction (the latest on the path): its path position
    /// and the entry.
    previous: Option<(usize, &'a Compaction)>,
    /// The path position of the entry it kept first, when that is on the
    /// path before it.
    kept: Option<usize>,
}

/// Reads the path to `leaf` from the previous compaction's first kept
/// entry on (from the previous compaction when that entry is not on the
/// path before it; from the root when there is no compaction). The
/// compaction and its first kept entry are found at their depths, so the
/// path before them is never walked; only when the file repeats ids is the
/// first kept entry searched on the whole path from the root, as the first
/// entry with its id.
fn read_path(session: &Session, leaf: usize) -> PathRead<'_> {
    let entries = session.entries();
    let latest = session.path_summary(leaf).compaction.map(|c| c as usize);
    let Some((c, compaction)) = latest.and_then(|c| match &entries[c].body {
        EntryBody::Compaction(compaction) => Some((c, compaction)),
        _ => None,
    }) else {
        return PathRead {
            path: session.path_indices(leaf),
            start: 0,
            previous: None,
            kept: None,
        };
    };
    let at = session.path_summary(c).depth as usize;
    let previous = Some((at, compaction));
    let first_kept = compaction.first_kept_entry_id.as_ref();
    if session.has_duplicate_ids() {
        let path = session.path_indices(leaf);
        let kept = first_kept.and_then(|id| path[..at].iter().position(|&i| entries[i].id == *id));
        return PathRead {
            path,
            start: 0,
            previous,
            kept,
        };
    }
    let kept = first_kept
        .and_then(|id| session.index_of(id.as_ref()))
        .map(|k| (k, session.path_summary(k).depth as usize))
        .filter(|&(_, depth)| depth < at);
    let start = kept.map_or(at, |(_, depth)| depth);
    let mut path = session.path_indices_from(leaf, start);
    match kept {
        Some((k, depth)) if path.first() == Some(&k) => PathRead {
            path,
            start,
            previous,
            kept: Some(depth),
        },
        _ => {
            path.drain(..at - start);
            PathRead {
                path,
                start: at,
                previous,
                kept: None,
            }
        }
    }
}

/// Why a path with nothing before its cut has nothing to compact: the
/// messages after its last cut point (tool results) reach the kept window
/// `keep` alone, or everything fits.
fn too_small(entries: &[Entry], path: &[usize], keep: u64) -> NothingToCompact {
    let Some(last_cut) = path.iter().rposition(|&i| is_valid_cut_point(&entries[i])) else {
        return NothingToCompact::TooSmall;
    };
    let tail_tokens: u64 = path[last_cut + 1..]
        .iter()
        .filter_map(|&i| match &entries[i].body {
            EntryBody::Message(m) => Some(estimate_tokens(m)),
            _ => None,
        })
        .sum();
    if tail_tokens > 0 && tail_tokens >= keep {
        NothingToCompact::ToolResultsFillWindow {
            tail_tokens,
            keep_recent_tokens: keep,
        }
    } else {
        NothingToCompact::TooSmall
    }
}

/// Prepares a compaction of the path at `leaf`.
///
/// It reads the path from the previous compaction's first kept entry on,
/// and of that the cut reads only the kept window and what borders it.
pub fn prepare<'a>(
    session: &'a Session,
    leaf: Option<usize>,
    settings: &CompactionSettings,
) -> Result<Preparation<'a>, NothingToCompact> {
    let Some(leaf) = leaf else {
        return Err(NothingToCompact::TooSmall);
    };
    let entries = session.entries();
    if matches!(entries[leaf].body, EntryBody::Compaction(_)) {
        return Err(NothingToCompact::AlreadyCompacted);
    }
    let PathRead {
        path,
        start: path_start,
        previous,
        kept: previously_kept_start,
    } = read_path(session, leaf);
    // Positions into `path`, which starts at path position `path_start`.
    let local = |pos: usize| pos - path_start;
    let end = path_start + path.len();
    let prev = previous.map(|(p, _)| p);
    // The range the cut and the regions cover: from the entry the previous
    // compaction kept first when it is on the path (what it kept is
    // summarized again or kept again), else from just after the previous
    // compaction, else from the root.
    let start = previously_kept_start.unwrap_or_else(|| prev.map_or(0, |p| p + 1));
    let tokens_before = estimate_context_at(session, Some(leaf)).tokens;

    let keep = crate::adapted_keep_recent_tokens(session, Some(leaf), settings);

    let cut = find_cut_point(entries, &path, local(start), path.len(), keep).shifted(path_start);
    let first_kept = &entries[path[local(cut.first_kept_index).min(path.len() - 1)]];
    if cut.first_kept_index >= end || first_kept.id.as_str().is_empty() {
        return Err(NothingToCompact::NoFirstKeptId);
    }

    let (previous_summary, previous_preserve_data, previous_details, harvested_details) =
        match previous {
            Some((_, c)) => (
                Some(c.summary.as_str().to_owned()),
                c.preserve_data.clone(),
                c.details.clone(),
                c.carries_file_lists()
                    .then_some(c.details.as_ref())
                    .flatten(),
            ),
            None => (None, None, None, None),
        };
    let history_end = if cut.is_split_turn {
        cut.turn_start_index.unwrap_or(cut.first_kept_index)
    } else {
        cut.first_kept_index
    };
    let regions = |from: usize, to: usize| messages_in(session, &path, local(from), local(to));
    let messages_to_summarize = regions(start, history_end);
    let turn_prefix_messages = match cut.turn_start_index {
        Some(ts) if cut.is_split_turn => regions(ts, cut.first_kept_index),
        _ => Vec::new(),
    };
    if messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        return Err(too_small(entries, &path[local(start)..], keep));
    }
    let recent_messages = regions(cut.first_kept_index, end);

    let mut file_ops = FileOps::default();
    if let Some(d) = harvested_details {
        file_ops.add_details(d);
    }
    for m in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        file_ops.add_message(&m.message);
    }

    Ok(Preparation {
        session,
        leaf,
        first_kept_entry_id: first_kept.id.clone(),
        previous_compaction: prev,
        boundary_start: start,
        boundary_end: end,
        cut,
        messages_to_summarize,
        turn_prefix_messages,
        recent_messages,
        tokens_before,
        context_tokens: None,
        previous_summary,
        previous_preserve_data,
        previous_details,
        previously_kept_start,
        file_ops,
        keep_recent_tokens: keep,
        reasoning: summary_reasoning(&context_thinking_level(session, Some(leaf))),
        path,
        path_start,
    })
}
