//! What the path from the root to each entry holds, kept per entry.
//!
//! Building the context at a leaf needs the latest compaction, thinking
//! level and model on the leaf's path, which may lie anywhere between the
//! root and the leaf. Each entry records them for its own path, computed
//! from its parent's record when the entry is added (and for every entry
//! once the tree of a loaded file is linked), so they are known at any
//! entry without walking the path: a leaf move or a branch switch needs
//! nothing recomputed, and an append costs one record.

use crate::entry::{Entry, EntryBody};
use crate::message::AgentMessage;

/// The record of one entry's path (root to the entry, both included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PathSummary {
    /// Entries on the path before this one (0 for a root).
    pub depth: u32,
    /// The latest `compaction` on the path.
    pub compaction: Option<u32>,
    /// The latest `thinking_level_change` on the path.
    pub thinking_level_change: Option<u32>,
    /// The entries on the path that name the model.
    pub model: PathModel,
}

/// The entries on a path that name the model: its latest main-model change
/// and the assistant message after it that names the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PathModel {
    /// The latest `model_change` that names the main model (no role, or
    /// the role `default`) on the path.
    pub change: Option<u32>,
    /// The latest assistant message that names the model: one after
    /// [`PathModel::change`], unless that change set an explicit default
    /// (role `default`), which later assistants do not override.
    pub assistant: Option<u32>,
    /// Whether the latest model change set an explicit default.
    explicit_default: bool,
}

impl PathModel {
    /// The record once entry `i`, with `body`, is on the path.
    fn after(mut self, i: u32, body: &EntryBody) -> Self {
        match body {
            EntryBody::ModelChange(mc) => {
                let role = mc.role.as_deref();
                if matches!(role, None | Some("default")) && mc.provider_and_model().is_some() {
                    self.change = Some(i);
                    self.assistant = None;
                    self.explicit_default = role.is_some();
                }
            }
            EntryBody::Message(AgentMessage::Assistant(_)) if !self.explicit_default => {
                self.assistant = Some(i);
            }
            _ => {}
        }
        self
    }
}

impl PathSummary {
    /// The record of entry `i`, whose parent's record is `parent` (`None`: a root).
    pub(crate) fn of(parent: Option<&PathSummary>, i: usize, entry: &Entry) -> Self {
        let mut s = parent.map_or_else(Self::default, |p| Self {
            depth: p.depth + 1,
            ..*p
        });
        let i = i as u32;
        match &entry.body {
            EntryBody::Compaction(_) => s.compaction = Some(i),
            EntryBody::ThinkingLevelChange { .. } => s.thinking_level_change = Some(i),
            body => s.model = s.model.after(i, body),
        }
        s
    }

    /// Whether `entry` changes what a record holds (so a replacement of it
    /// needs its descendants' records recomputed).
    pub(crate) fn matters(entry: &Entry) -> bool {
        matches!(
            entry.body,
            EntryBody::Compaction(_)
                | EntryBody::ThinkingLevelChange { .. }
                | EntryBody::ModelChange(_)
                | EntryBody::Message(AgentMessage::Assistant(_))
        )
    }
}

/// The records of every entry, given each entry's parent (`parents`, with
/// no cycles): parents first, whatever the file order.
pub(crate) fn summarize_all(entries: &[Entry], parents: &[Option<u32>]) -> Vec<PathSummary> {
    let n = entries.len();
    let mut out: Vec<Option<PathSummary>> = vec![None; n];
    let mut chain = Vec::new();
    for start in 0..n {
        let mut cur = Some(start);
        // Climb to the nearest entry with a record (or past the root).
        while let Some(c) = cur {
            if out[c].is_some() {
                break;
            }
            chain.push(c);
            cur = parents[c].map(|p| p as usize);
        }
        let mut above = cur.and_then(|c| out[c]);
        for c in chain.drain(..).rev() {
            let s = PathSummary::of(above.as_ref(), c, &entries[c]);
            out[c] = Some(s);
            above = Some(s);
        }
    }
    out.into_iter().map(Option::unwrap_or_default).collect()
}
