//! The salience archive: the archived history as text that keeps what
//! matters within a budget, without a model.
//!
//! The archive has two parts, each oldest first:
//!
//! - the **ledger**, never elided while the budget can hold it: every user
//!   message (a long one by its head, its tail and every sentence of its
//!   middle that states a constraint or holds a number or a path), every
//!   tool call as `name(args)` (paths whole, the head of a command, long
//!   values as `…`; a path named before by its tail, a command run in an
//!   earlier turn as a reference to it), the lines of each tool output
//!   that look like errors (`  ! `) and the last line a command printed
//!   (`  → `);
//! - the **conversation**: the assistant's reasoning and replies and the
//!   tool output, cut into sentences and lines that the rest of the budget
//!   keeps by salience (numbers, paths, identifiers, constraints,
//!   decisions, errors, and what no other message says), not by age.
//!   Every reply keeps its best sentence before any reply loses all of it,
//!   unless another states a fact, and tool output comes last.
//!
//! Wherever something was left out a marker says so (`[…]`); the last one
//! of a message names the session entry that still holds it (`[…ID…]`),
//! and a run of entries left out whole is one line, `[…ID to ID…]`. When even the ledger does not fit, it is
//! shortened in steps (shorter heads, fewer error lines) and, as a last
//! resort, its oldest entries are dropped; the first call line after them
//! that refers to a dropped one (`…/name`, `=#N`) is then written out
//! whole, and the later ones refer to it, so every reference shown can be
//! read from what is shown before it.
//!
//! A pure function: the same input gives the same text, and the text is
//! never longer than the budget.

mod blocks;
mod build;
mod calls;
mod earlier;
mod lexicon;
mod novelty;
mod outputs;
mod readback;
mod repeats;
mod score;
mod select;
mod text;

use std::collections::{BTreeSet, HashSet};

use musepi_context_builder::LlmMessage;

#[cfg(test)]
use self::blocks::Rank;
use self::blocks::{Block, LEVELS, Scope};
use self::build::{Builder, Source, outputs_in_order};
pub(crate) use self::earlier::Earlier;
use self::earlier::earlier_blocks;
pub use self::earlier::is_salience_text;
use self::outputs::{OutputCap, Outputs};
use self::select::{Kept, must_cost, render, select};

/// The heading of the ledger.
pub(crate) const LEDGER_HEADING: &str = "=== LEDGER ===";
/// The heading of the conversation.
pub(crate) const CONVERSATION_HEADING: &str = "=== CONVERSATION ===";

/// The share of the budget, in tenths, the guaranteed ledger may take
/// before a tighter level is tried: the rest goes to what the budget keeps
/// by salience.
const LEDGER_SHARE_TENTHS: usize = 7;

/// What the archive is built from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HistoryInput<'a> {
    /// The messages leaving the context, converted for a provider.
    pub messages: &'a [LlmMessage],
    /// The session entry of each message (empty when unknown).
    pub entry_ids: &'a [String],
    /// Call ids whose results were flagged useless (dropped with their call
    /// unless the result is an error).
    pub useless: &'a BTreeSet<String>,
    /// The history before these messages.
    pub earlier: Earlier<'a>,
    /// The longest the archive text may be, in UTF-16 units.
    pub budget: usize,
    /// The most of one tool output the archive shows, in UTF-16 units
    /// (its head and tail, `output_head_ratio` from the head); `None` for
    /// no cap.
    pub output_max_chars: Option<usize>,
    /// The share of a capped output taken from its head.
    pub output_head_ratio: f64,
}

/// How many of a kind of entry there were, and how many were shortened or
/// left out whole.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Count {
    /// Entries of this kind.
    pub total: usize,
    /// Shown in part.
    pub shortened: usize,
    /// Not shown at all.
    pub omitted: usize,
}

/// What the archive shortened, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Shortened {
    /// User messages.
    pub user_messages: Count,
    /// Tool calls (shortened: an argument cut).
    pub calls: Count,
    /// Assistant reasoning and replies.
    pub replies: Count,
    /// Tool outputs.
    pub outputs: Count,
    /// Entries of an earlier archive's ledger, and an earlier summary.
    pub earlier: Count,
    /// 0 when the ledger is as generous as it gets; 1 and 2 are tighter.
    pub ledger_level: usize,
}

impl Shortened {
    /// The count of every kind, the earlier archive's last.
    pub(crate) fn counts(&self) -> [Count; 5] {
        [
            self.user_messages,
            self.calls,
            self.replies,
            self.outputs,
            self.earlier,
        ]
    }

    /// Whether nothing at all was shortened or left out.
    pub(crate) fn is_nothing(&self) -> bool {
        self.counts()
            .iter()
            .all(|c| c.shortened == 0 && c.omitted == 0)
    }
}

/// The archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct History {
    /// The ledger and the conversation under their headings; empty when
    /// there is nothing to archive.
    pub text: String,
    /// What was shortened.
    pub shortened: Shortened,
    /// UTF-16 length of the history archived: the earlier archive and the
    /// messages, as text.
    pub source_chars: usize,
    /// The facts the archive shows (the sentences and output lines it
    /// ranked as facts and kept), as they read in the history.
    pub facts: Vec<String>,
}

/// Builds the archive of `input` (see the module documentation).
pub(crate) fn build_history(input: &HistoryInput<'_>) -> History {
    let sources: Vec<Source<'_>> = input
        .messages
        .iter()
        .enumerate()
        .map(|(i, message)| Source {
            message,
            id: input.entry_ids.get(i).map(String::as_str),
        })
        .collect();
    let cap = OutputCap {
        max: input.output_max_chars,
        head_ratio: input.output_head_ratio,
    };
    // The tool outputs are read once for every level tried, all at once.
    let mut outputs = Outputs::read_ahead(&outputs_in_order(&sources, input.useless), cap);
    let mut chosen = None;
    for (level, limits) in LEVELS.iter().enumerate() {
        let (mut blocks, turn) = earlier_blocks(input.earlier, limits);
        let mut builder = Builder::new(limits, input.useless, turn, cap, outputs);
        builder.messages(&sources);
        // The most generous ledger must leave the conversation a share of
        // the budget; a tighter one only has to fit.
        let share = if level == 0 {
            input.budget / 10 * LEDGER_SHARE_TENTHS
        } else {
            input.budget
        };
        let earlier = blocks.len();
        blocks.append(&mut builder.blocks);
        repeats::demote(&mut blocks);
        let fits = must_cost(&blocks) <= share;
        if fits || level + 1 == LEVELS.len() {
            builder.blocks = blocks;
            chosen = Some((level, builder.finish(earlier)));
            break;
        }
        outputs = builder.into_outputs();
    }
    let Some((level, mut blocks)) = chosen else {
        return History {
            text: String::new(),
            shortened: Shortened::default(),
            source_chars: 0,
            facts: Vec::new(),
        };
    };
    novelty::weigh(&mut blocks);
    let kept = select(&blocks, input.budget);
    let text = render(&blocks, &kept);
    let mut shortened = count(&blocks, &kept);
    shortened.ledger_level = level;
    let source_chars = blocks.iter().map(|b| b.source_chars).sum();
    let facts = blocks
        .iter()
        .zip(&kept)
        .flat_map(|(b, k)| b.pieces.iter().zip(k))
        .filter(|(p, k)| **k && p.fact)
        .map(|(p, _)| p.text.trim_end_matches('…').to_owned())
        .collect();
    History {
        text,
        shortened,
        source_chars,
        facts,
    }
}

/// `[…ID…]`, or `[…]` when the entry is unknown.
pub(crate) fn marker(id: Option<&str>) -> String {
    match id {
        Some(id) => format!("[…{id}…]"),
        None => "[…]".to_owned(),
    }
}

/// The marker of a run of blocks left out whole.
///
/// It names the first entry of the run and the entry that appears first
/// latest in it (an entry met again later, as a tool call's message is
/// after its results, names no end): one pass with a set of the ids seen,
/// since a run can hold a whole history.
pub(crate) fn run_marker(run: &[&Block]) -> String {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut first: Option<&str> = None;
    let mut last: Option<&str> = None;
    for block in run {
        if let Some(id) = block.id.as_deref()
            && seen.insert(id)
        {
            first.get_or_insert(id);
            last = Some(id);
        }
    }
    match (first, last) {
        (Some(first), Some(last)) if first != last => format!("[…{first} to {last}…]"),
        (one, _) => marker(one),
    }
}

fn count(blocks: &[Block], kept: &Kept) -> Shortened {
    let mut s = Shortened::default();
    for (block, kept) in blocks.iter().zip(kept) {
        let c = match block.scope {
            _ if block.earlier => &mut s.earlier,
            Scope::User => &mut s.user_messages,
            Scope::Call => &mut s.calls,
            Scope::Think | Scope::Ai => &mut s.replies,
            Scope::Out(_) => &mut s.outputs,
            Scope::Summary | Scope::EarlierLedger => &mut s.earlier,
            Scope::EarlierMarker => continue,
        };
        c.total += 1;
        let shown = kept.iter().filter(|&&k| k).count();
        let lost = block.pieces.iter().zip(kept).any(|(p, &k)| !k && !p.silent);
        if shown == 0 {
            c.omitted += 1;
        } else if lost || block.shortened {
            c.shortened += 1;
        }
    }
    s
}

/// Whether every guaranteed piece of `blocks` is kept (for tests).
#[cfg(test)]
fn guarantees_kept(blocks: &[Block], kept: &Kept) -> bool {
    blocks.iter().zip(kept).all(|(b, k)| {
        b.pieces
            .iter()
            .zip(k)
            .all(|(p, &k)| p.rank != Rank::Must || k)
    })
}

#[cfg(test)]
mod tests;
