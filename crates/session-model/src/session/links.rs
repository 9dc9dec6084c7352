//! Linking the entries of a loaded session: each read entry is pushed as
//! it comes, then every parent link is resolved against the index, and the
//! tree's problems (duplicate ids, dangling parents, cycles) are found.

use rustc_hash::FxHashMap;

use super::{LineSource, Session};
use crate::entry::{Entry, EntryBody};
use crate::pathinfo::{PathSummary, summarize_all};
use crate::problem::{Problem, ProblemKind};

impl Session {
    /// Adds a read entry without resolving its parent (see [`Session::finish_tree`]).
    pub(crate) fn push_loaded(&mut self, entry: Entry, source: LineSource, line: u64) {
        let i = self.entries.len() as u32;
        if let EntryBody::Label { target_id, label } = &entry.body {
            match label.as_deref() {
                Some(l) if !l.is_empty() => {
                    self.labels.insert(target_id.clone(), l.to_owned());
                }
                _ => {
                    self.labels.remove(target_id.as_str());
                }
            }
        }
        if !entry.id.as_str().is_empty() {
            self.index.insert(entry.id.clone(), i);
        }
        self.calls.add(i as usize, &entry);
        self.entries.push(entry);
        self.sources.push(source);
        self.lines.push(line);
        self.parents.push(None);
        self.summaries.push(PathSummary::default());
    }

    /// Resolves entry `i`'s parent link against the index.
    pub(super) fn link(&mut self, i: usize) {
        let parent = self.entries[i]
            .parent_id
            .as_ref()
            .and_then(|p| self.index.get(p.as_str()).copied());
        self.parents[i] = parent.filter(|&p| p as usize != i);
    }

    /// Resolves every parent link, reports dangling parents, duplicate ids
    /// and cycles, and cuts each cycle so every path ends at a root.
    pub(crate) fn finish_tree(&mut self) {
        let mut first_line: FxHashMap<&str, u64> = FxHashMap::default();
        let mut problems = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            if e.id.as_str().is_empty() {
                continue;
            }
            if let Some(&first) = first_line.get(e.id.as_str()) {
                problems.push(Problem {
                    line: self.lines[i],
                    entry_id: Some(e.id.clone()),
                    kind: ProblemKind::DuplicateId { first_line: first },
                });
            } else {
                first_line.insert(e.id.as_str(), self.lines[i]);
            }
        }
        for i in 0..self.entries.len() {
            self.link(i);
            if self.parents[i].is_none()
                && let Some(p) = &self.entries[i].parent_id
                && p != &self.entries[i].id
            {
                problems.push(Problem {
                    line: self.lines[i],
                    entry_id: Some(self.entries[i].id.clone()),
                    kind: ProblemKind::DanglingParent {
                        parent_id: p.clone(),
                    },
                });
            }
        }
        // Cut cycles: walk each unvisited chain, marking it in progress; a
        // link back into the chain in progress closes a cycle.
        let n = self.entries.len();
        let mut state = vec![0u8; n]; // 0 new, 1 on the current chain, 2 done
        let mut chain = Vec::new();
        for start in 0..n {
            if state[start] != 0 {
                continue;
            }
            let mut cur = start;
            loop {
                state[cur] = 1;
                chain.push(cur);
                match self.parents[cur] {
                    Some(p) if state[p as usize] == 0 => cur = p as usize,
                    Some(p) if state[p as usize] == 1 => {
                        self.parents[cur] = None;
                        problems.push(Problem {
                            line: self.lines[cur],
                            entry_id: Some(self.entries[cur].id.clone()),
                            kind: ProblemKind::Cycle,
                        });
                        break;
                    }
                    _ => break,
                }
            }
            for c in chain.drain(..) {
                state[c] = 2;
            }
        }
        self.edits += 1;
        self.duplicate_ids = problems
            .iter()
            .any(|p| matches!(p.kind, ProblemKind::DuplicateId { .. }));
        self.summaries = summarize_all(&self.entries, &self.parents);
        crate::validate::every_link_problem(self, &mut problems);
        self.problems.extend(problems);
        self.problems.sort_by_key(|p| p.line);
    }
}
