//! The session: entries in file order, the id index, the tree links, labels
//! and the leaf (docs/design.md, "The session file and its tree").

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::entry::{Entry, EntryBody, Header};
use crate::error::SessionError;
use crate::id::{EntryId, IdSource, fresh_id};
use crate::message::AgentMessage;
use crate::pathinfo::{PathSummary, summarize_all};
use crate::problem::Problem;
use crate::time::{EpochMillis, format_iso};

mod calls;
mod lines;
mod links;
mod replace;
mod unreadable;

pub use lines::LineSource;
pub(crate) use lines::{KeptLine, Origin};
pub use replace::Replacement;

/// The parts of a session an append changes.
pub(crate) struct Snapshot {
    len: usize,
    leaf: Option<u32>,
    labels: BTreeMap<EntryId, String>,
}

/// What the caller supplies to make new entries: ids and the time.
pub struct Stamp<'a> {
    /// Where new ids come from.
    pub ids: &'a mut dyn IdSource,
    /// "Now", in epoch milliseconds.
    pub now: EpochMillis,
}

/// A session: header, entries, tree and leaf.
///
/// Build one with [`crate::load_file`], [`crate::load_bytes`], [`crate::Journal::open`] or [`Session::new`].
#[derive(Debug, Clone)]
pub struct Session {
    pub(crate) header: Header,
    pub(crate) header_source: LineSource,
    pub(crate) original_version: u32,
    pub(crate) entries: Vec<Entry>,
    pub(crate) sources: Vec<LineSource>,
    pub(crate) lines: Vec<u64>,
    pub(crate) parents: Vec<Option<u32>>,
    pub(crate) index: FxHashMap<EntryId, u32>,
    pub(crate) labels: BTreeMap<EntryId, String>,
    pub(crate) leaf: Option<u32>,
    pub(crate) problems: Vec<Problem>,
    pub(crate) kept_lines: Vec<KeptLine>,
    pub(crate) origin: Option<Origin>,
    /// What each entry's path holds (see [`PathSummary`]).
    pub(crate) summaries: Vec<PathSummary>,
    /// Whether two entries share an id (a problem of the file).
    pub(crate) duplicate_ids: bool,
    /// Changes to entries already there (see [`Session::edits`]).
    pub(crate) edits: u64,
    /// Which entries name each tool call id (see [`Session::entries_calling`]).
    pub(crate) calls: calls::CallIndex,
}

impl Session {
    /// An empty session with this header (written as a v3 file).
    pub fn new(header: Header) -> Self {
        let text = crate::json::js_stringify(&header.to_json());
        Self {
            original_version: header.version,
            header,
            header_source: LineSource::Text(text.into_boxed_str()),
            entries: Vec::new(),
            sources: Vec::new(),
            lines: Vec::new(),
            parents: Vec::new(),
            index: FxHashMap::default(),
            labels: BTreeMap::new(),
            leaf: None,
            problems: Vec::new(),
            kept_lines: Vec::new(),
            origin: None,
            summaries: Vec::new(),
            duplicate_ids: false,
            edits: 0,
            calls: calls::CallIndex::default(),
        }
    }

    /// The header (after migration: version 3).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The version the file had when it was read (1 when absent).
    pub fn original_version(&self) -> u32 {
        self.original_version
    }

    /// Whether loading migrated the session, so the file on disk is older
    /// than what is in memory.
    pub fn was_migrated(&self) -> bool {
        self.original_version < crate::CURRENT_VERSION
    }

    /// Every entry, in file order (the header excluded).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Problems found while loading, in line order.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The entry with this id (the later one when ids repeat).
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.index_of(id).map(|i| &self.entries[i])
    }

    /// Position of the entry with this id in [`Session::entries`].
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.index.get(id).map(|&i| i as usize)
    }

    /// 1-based file line of entry `i` (0 for entries not yet written).
    pub fn line_of(&self, i: usize) -> u64 {
        self.lines[i]
    }

    /// Where the bytes of entry `i` are.
    pub fn source_of(&self, i: usize) -> &LineSource {
        &self.sources[i]
    }

    /// Where the header's bytes are.
    pub fn header_source(&self) -> &LineSource {
        &self.header_source
    }

    /// Position of entry `i`'s parent, `None` for roots and orphans.
    pub fn parent_index(&self, i: usize) -> Option<usize> {
        self.parents[i].map(|p| p as usize)
    }

    /// The current leaf, `None` before the first entry or after [`Session::reset_leaf`].
    pub fn leaf_id(&self) -> Option<&EntryId> {
        self.leaf.map(|i| &self.entries[i as usize].id)
    }

    /// Position of the current leaf.
    pub fn leaf_index(&self) -> Option<usize> {
        self.leaf.map(|i| i as usize)
    }

    /// The leaf a caller names: the current leaf for `None`, the empty
    /// path (before the first entry) for `"null"`, else the entry with
    /// that id; `Err` gives back an id no entry has.
    pub fn leaf_named<'a>(&self, leaf: Option<&'a str>) -> Result<Option<usize>, &'a str> {
        match leaf {
            None => Ok(self.leaf_index()),
            Some("null") => Ok(None),
            Some(id) => self.index_of(id).map(Some).ok_or(id),
        }
    }

    /// The leaf entry.
    pub fn leaf_entry(&self) -> Option<&Entry> {
        self.leaf.map(|i| &self.entries[i as usize])
    }

    /// Positions on the path from the root to entry `i`, root first.
    ///
    /// Takes time proportional to the depth of `i`; parent links never
    /// cycle (cycles are cut when loading).
    pub fn path_indices(&self, i: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut cur = Some(i);
        while let Some(c) = cur {
            path.push(c);
            cur = self.parent_index(c);
        }
        path.reverse();
        path
    }

    /// Positions on the path to entry `i` from the entry at depth `depth`
    /// on (its first entry), root-most first; the whole path when `depth`
    /// is 0, and `[i]` alone when `i` is no deeper than `depth`.
    ///
    /// Takes time proportional to the entries returned: the walk back from
    /// `i` stops at `depth`.
    pub fn path_indices_from(&self, i: usize, depth: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut cur = Some(i);
        while let Some(c) = cur {
            path.push(c);
            if self.summaries[c].depth as usize <= depth {
                break;
            }
            cur = self.parent_index(c);
        }
        path.reverse();
        path
    }

    /// Entries from the root to `id` (default: the leaf), root first (`getBranch`).
    pub fn branch(&self, id: Option<&str>) -> Result<Vec<&Entry>, SessionError> {
        let end = match id {
            Some(id) => Some(
                self.index_of(id)
                    .ok_or_else(|| SessionError::EntryNotFound(EntryId::new(id)))?,
            ),
            None => self.leaf_index(),
        };
        Ok(end.map_or_else(Vec::new, |e| {
            self.path_indices(e)
                .into_iter()
                .map(|i| &self.entries[i])
                .collect()
        }))
    }

    /// Positions of the entries whose parent is entry `i`, in file order.
    pub fn children_of(&self, i: usize) -> Vec<usize> {
        (0..self.entries.len())
            .filter(|&c| self.parent_index(c) == Some(i))
            .collect()
    }

    /// Labels by target, after replaying every label entry in file order.
    pub fn labels(&self) -> &BTreeMap<EntryId, String> {
        &self.labels
    }

    /// The label of an entry.
    pub fn label(&self, id: &str) -> Option<&str> {
        self.labels.get(id).map(String::as_str)
    }

    /// The session's name, as pi reads it: the name of the newest
    /// `session_info` entry in file order, trimmed as JavaScript trims;
    /// `None` when there is no such entry or its name is absent, empty or
    /// blank (a blank name clears an earlier one).
    pub fn session_name(&self) -> Option<&str> {
        let name = self.entries.iter().rev().find_map(|e| match &e.body {
            EntryBody::SessionInfo { name } => Some(name.as_deref()),
            _ => None,
        })??;
        let name = name.trim_matches(is_js_whitespace);
        (!name.is_empty()).then_some(name)
    }

    /// Puts `entry`, written by `source`, at position `i`, keeping every
    /// path record true; returns what was there.
    pub(crate) fn put_entry(
        &mut self,
        i: usize,
        entry: Entry,
        source: LineSource,
    ) -> (Entry, LineSource) {
        self.edits += 1;
        self.calls.remove(i, &self.entries[i]);
        self.calls.add(i, &entry);
        let old_entry = std::mem::replace(&mut self.entries[i], entry);
        let old_source = std::mem::replace(&mut self.sources[i], source);
        if PathSummary::matters(&old_entry) || PathSummary::matters(&self.entries[i]) {
            self.summaries = summarize_all(&self.entries, &self.parents);
        }
        (old_entry, old_source)
    }

    /// What the path from the root to entry `i` holds: its depth and the
    /// latest compaction, thinking level change and model on it.
    pub fn path_summary(&self, i: usize) -> PathSummary {
        self.summaries[i]
    }

    /// How many times entries already in the session changed: replaced in
    /// place, appends undone, the tree resolved. Appends and leaf moves do
    /// not count, so what follows a session as it grows (the runtime's
    /// token account) knows when to start over.
    pub fn edits(&self) -> u64 {
        self.edits
    }

    /// Whether two entries of the file share an id.
    pub fn has_duplicate_ids(&self) -> bool {
        self.duplicate_ids
    }

    /// Whether entry `i` is on the path from the root to entry `end`.
    pub fn is_on_path(&self, i: usize, end: usize) -> bool {
        let depth = self.summaries[i].depth;
        let mut cur = Some(end);
        while let Some(c) = cur {
            if self.summaries[c].depth <= depth {
                return c == i;
            }
            cur = self.parent_index(c);
        }
        false
    }

    /// Moves the leaf to `id` (`branch(id)`); entries are not modified.
    pub fn set_leaf(&mut self, id: &str) -> Result<(), SessionError> {
        let i = self
            .index_of(id)
            .ok_or_else(|| SessionError::EntryNotFound(EntryId::new(id)))?;
        self.leaf = Some(i as u32);
        Ok(())
    }

    /// Clears the leaf: the next entry starts a new root.
    pub fn reset_leaf(&mut self) {
        self.leaf = None;
    }

    /// Appends an entry under the leaf and moves the leaf to it.
    pub fn append(&mut self, body: EntryBody, stamp: &mut Stamp<'_>) -> EntryId {
        let parent = self.leaf_id().cloned();
        self.append_with_parent(parent, body, stamp)
    }

    /// The label entry that sets `target`'s label, or clears it when the
    /// label is empty or absent; the target must exist.
    pub(crate) fn label_body(
        &self,
        target: &str,
        label: Option<&str>,
    ) -> Result<EntryBody, SessionError> {
        if self.index_of(target).is_none() {
            return Err(SessionError::EntryNotFound(EntryId::new(target)));
        }
        Ok(EntryBody::Label {
            target_id: EntryId::new(target),
            label: label.map(str::to_owned),
        })
    }

    /// Appends a `session_info` with the trimmed name.
    pub fn append_session_info(&mut self, name: &str, stamp: &mut Stamp<'_>) -> EntryId {
        self.append(
            EntryBody::SessionInfo {
                name: Some(name.trim().to_owned()),
            },
            stamp,
        )
    }

    /// A new session holding only the path from the root to `leaf`, with the
    /// labels of entries on that path re-created after the last path entry
    /// (`createBranchedSession`, docs/design.md, "The session file and its tree"). The header gets `header`'s id,
    /// time and cwd, and `parentSession` as given.
    pub fn branched(
        &self,
        leaf: &str,
        header: Header,
        stamp: &mut Stamp<'_>,
    ) -> Result<Session, SessionError> {
        let end = self
            .index_of(leaf)
            .ok_or_else(|| SessionError::EntryNotFound(EntryId::new(leaf)))?;
        let mut out = Session::new(header);
        let path = self.path_indices(end);
        for &i in &path {
            let e = &self.entries[i];
            if matches!(e.body, EntryBody::Label { .. }) {
                continue;
            }
            let text = self.raw_line(i)?;
            out.push_loaded(e.clone(), LineSource::Text(text.into_boxed_str()), 0);
        }
        out.finish_tree();
        out.leaf = out.entries.len().checked_sub(1).map(|i| i as u32);
        for &i in &path {
            let id = &self.entries[i].id;
            if let Some(label) = self.labels.get(id)
                && out.index.contains_key(id.as_str())
            {
                out.append(
                    EntryBody::Label {
                        target_id: id.clone(),
                        label: Some(label.clone()),
                    },
                    stamp,
                );
            }
        }
        Ok(out)
    }

    /// Whether any entry is an assistant message (the deferred first flush
    /// waits for one, docs/design.md, "The session file and its tree").
    pub fn has_assistant_message(&self) -> bool {
        self.entries
            .iter()
            .any(|e| matches!(e.message(), Some(AgentMessage::Assistant(_))))
    }

    /// What an append changes, so a failed write can be undone.
    pub(crate) fn clone_state(&self) -> Snapshot {
        Snapshot {
            len: self.entries.len(),
            leaf: self.leaf,
            labels: self.labels.clone(),
        }
    }

    /// Undoes appends made after `snapshot`.
    pub(crate) fn restore_state(&mut self, snapshot: Snapshot) {
        self.edits += 1;
        for i in snapshot.len..self.entries.len() {
            let id = &self.entries[i].id;
            if self.index.get(id.as_str()) == Some(&(i as u32)) {
                self.index.remove(id.as_str());
            }
            self.calls.remove(i, &self.entries[i]);
        }
        self.entries.truncate(snapshot.len);
        self.sources.truncate(snapshot.len);
        self.lines.truncate(snapshot.len);
        self.parents.truncate(snapshot.len);
        self.summaries.truncate(snapshot.len);
        self.leaf = snapshot.leaf;
        self.labels = snapshot.labels;
    }

    pub(crate) fn append_with_parent(
        &mut self,
        parent: Option<EntryId>,
        body: EntryBody,
        stamp: &mut Stamp<'_>,
    ) -> EntryId {
        let index = &self.index;
        let id = fresh_id(stamp.ids, &|c| index.contains_key(c));
        let entry = Entry {
            id: id.clone(),
            parent_id: parent,
            timestamp: format_iso(stamp.now),
            body,
        };
        let text = crate::json::js_stringify(&entry.to_json());
        let i = self.entries.len();
        self.push_loaded(entry, LineSource::Text(text.into_boxed_str()), 0);
        self.link(i);
        let parent = self.parents[i].map(|p| self.summaries[p as usize]);
        self.summaries[i] = PathSummary::of(parent.as_ref(), i, &self.entries[i]);
        self.leaf = Some(i as u32);
        id
    }
}

/// Whether `String.prototype.trim` removes `c`: JavaScript's white space
/// and line terminators. Unlike Rust's `char::is_whitespace` it removes
/// U+FEFF and keeps U+0085.
fn is_js_whitespace(c: char) -> bool {
    c == '\u{feff}' || (c.is_whitespace() && c != '\u{85}')
}
