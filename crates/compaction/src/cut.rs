//! Where to cut (docs/design.md, "Cut points and regions" and "Where musepi differs from pi").

use musepi_session_model::{AgentMessage, Entry, EntryBody};

use musepi_context_builder::estimate_tokens;

/// Whether the entry can be the first kept entry: a message other than a
/// tool result (a result must stay with its call), a `custom_message` or a
/// `branch_summary`.
pub fn is_valid_cut_point(entry: &Entry) -> bool {
    match &entry.body {
        EntryBody::Message(m) => matches!(
            m,
            AgentMessage::User(_)
                | AgentMessage::Assistant(_)
                | AgentMessage::BashExecution(_)
                | AgentMessage::Custom(_)
                | AgentMessage::BranchSummary(_)
                | AgentMessage::CompactionSummary(_)
        ),
        EntryBody::CustomMessage(_) | EntryBody::BranchSummary(_) => true,
        _ => false,
    }
}

/// Whether the entry starts a turn: a user or bash-execution message, a
/// `custom_message` or a `branch_summary`.
pub fn is_turn_start(entry: &Entry) -> bool {
    match &entry.body {
        EntryBody::Message(m) => {
            matches!(m, AgentMessage::User(_) | AgentMessage::BashExecution(_))
        }
        EntryBody::CustomMessage(_) | EntryBody::BranchSummary(_) => true,
        _ => false,
    }
}

/// Whether the entry yields a message for summarization (every
/// `branch_summary` does, even an empty one).
pub fn yields_message(entry: &Entry) -> bool {
    matches!(
        entry.body,
        EntryBody::Message(_) | EntryBody::CustomMessage(_) | EntryBody::BranchSummary(_)
    )
}

/// The cut: positions into the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutPoint {
    /// The first kept entry.
    pub first_kept_index: usize,
    /// Where the split turn starts, when the cut splits one.
    pub turn_start_index: Option<usize>,
    /// Whether the cut splits a turn: the kept part starts inside a turn
    /// whose beginning (the prefix) is summarized separately.
    pub is_split_turn: bool,
}

impl CutPoint {
    /// A cut at `first_kept_index` that splits no turn.
    pub fn at(first_kept_index: usize) -> Self {
        Self {
            first_kept_index,
            turn_start_index: None,
            is_split_turn: false,
        }
    }

    /// A cut at `first_kept_index` inside the turn that starts at
    /// `turn_start_index`.
    pub fn splitting(first_kept_index: usize, turn_start_index: usize) -> Self {
        Self {
            first_kept_index,
            turn_start_index: Some(turn_start_index),
            is_split_turn: true,
        }
    }

    /// The same cut with every position moved `by` further along the path.
    #[must_use]
    pub fn shifted(self, by: usize) -> Self {
        Self {
            first_kept_index: self.first_kept_index + by,
            turn_start_index: self.turn_start_index.map(|ts| ts + by),
            is_split_turn: self.is_split_turn,
        }
    }
}

/// Finds the cut in `path[start..end]` keeping about `keep_recent_tokens`
/// (docs/design.md, "Cut points and regions"): walk back from the end summing message estimates until the
/// budget is reached, cut at the first valid cut point at or after that
/// entry, pull metadata entries in front of the cut into the kept side.
///
/// A turn is split only when the first kept message does not start a turn
/// and the turn's beginning lies before the cut (docs/design.md, "Where musepi differs from pi").
///
/// Only the kept window is read, and what borders it: the walk back stops
/// where the budget is reached, the search for the turn's beginning where
/// it begins. The path before the window is searched from `start` only
/// when the window holds no valid cut point (the budget is never reached,
/// or no valid cut point follows where it is), and then only up to the
/// first valid cut point.
pub fn find_cut_point(
    entries: &[Entry],
    path: &[usize],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
) -> CutPoint {
    let at = |p: usize| &entries[path[p]];
    let first_cut_from = |from: usize, to: usize| (from..to).find(|&p| is_valid_cut_point(at(p)));
    let reached = budget_reached(entries, path, start, end, keep_recent_tokens);
    let window_cut = reached.and_then(|p| first_cut_from(p, end));
    let found = window_cut.or_else(|| first_cut_from(start, reached.unwrap_or(end)));
    let Some(mut cut) = found else {
        return CutPoint::at(start);
    };
    while cut > start {
        let prev = at(cut - 1);
        if matches!(prev.body, EntryBody::Compaction(_) | EntryBody::Message(_)) {
            break;
        }
        cut -= 1;
    }
    // The first message on the kept side decides whether a turn is split.
    let first_message = (cut..end).find(|&p| yields_message(at(p)));
    if first_message.is_none_or(|p| is_turn_start(at(p))) {
        return CutPoint::at(cut);
    }
    let turn_start = (start..=cut).rev().find(|&p| is_turn_start(at(p)));
    match turn_start {
        Some(ts) if (ts..cut).any(|p| yields_message(at(p))) => CutPoint::splitting(cut, ts),
        _ => CutPoint::at(cut),
    }
}

/// The position where the messages from the end back to it first sum to
/// `keep_recent_tokens`, walking back from `end`; `None` when all of
/// `path[start..end]` stays under it.
fn budget_reached(
    entries: &[Entry],
    path: &[usize],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
) -> Option<usize> {
    let mut acc = 0u64;
    (start..end).rev().find(|&p| {
        let EntryBody::Message(m) = &entries[path[p]].body else {
            return false;
        };
        acc += estimate_tokens(m);
        acc >= keep_recent_tokens
    })
}
