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

/// Finds the cut in `path[start..end]` keeping about `keep_recent_tokens`
/// (docs/design.md, "Cut points and regions"): walk back from the end summing message estimates until the
/// budget is reached, cut at the first valid cut point at or after that
/// entry, pull metadata entries in front of the cut into the kept side.
///
/// A turn is split only when the first kept message does not start a turn
/// and the turn's beginning lies before the cut (docs/design.md, "Where musepi differs from pi").
pub fn find_cut_point(
    entries: &[Entry],
    path: &[usize],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
) -> CutPoint {
    let at = |p: usize| &entries[path[p]];
    let cuts: Vec<usize> = (start..end)
        .filter(|&p| is_valid_cut_point(at(p)))
        .collect();
    let Some(&first_cut) = cuts.first() else {
        return CutPoint {
            first_kept_index: start,
            turn_start_index: None,
            is_split_turn: false,
        };
    };
    let mut cut = first_cut;
    let mut acc = 0u64;
    for p in (start..end).rev() {
        let EntryBody::Message(m) = &at(p).body else {
            continue;
        };
        acc += estimate_tokens(m);
        if acc >= keep_recent_tokens {
            if let Some(&c) = cuts.iter().find(|&&c| c >= p) {
                cut = c;
            }
            break;
        }
    }
    while cut > start {
        let prev = at(cut - 1);
        if matches!(prev.body, EntryBody::Compaction(_) | EntryBody::Message(_)) {
            break;
        }
        cut -= 1;
    }
    // The first message on the kept side decides whether a turn is split.
    let first_message = (cut..end).find(|&p| yields_message(at(p)));
    let starts_turn = first_message.is_none_or(|p| is_turn_start(at(p)));
    if starts_turn {
        return CutPoint {
            first_kept_index: cut,
            turn_start_index: None,
            is_split_turn: false,
        };
    }
    let turn_start = (start..=cut).rev().find(|&p| is_turn_start(at(p)));
    match turn_start {
        Some(ts) if (ts..cut).any(|p| yields_message(at(p))) => CutPoint {
            first_kept_index: cut,
            turn_start_index: Some(ts),
            is_split_turn: true,
        },
        _ => CutPoint {
            first_kept_index: cut,
            turn_start_index: None,
            is_split_turn: false,
        },
    }
}
