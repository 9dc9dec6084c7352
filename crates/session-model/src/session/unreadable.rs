//! Whether the path to an entry runs through a line that cannot be read.
//!
//! An unreadable line is left out of the tree, so the path to the leaf
//! stops above it (its child's parent names no entry), or, in a v1 file,
//! whose entries follow each other in file order, the path goes on without
//! it. Either way what the model sees would silently lose messages, so the
//! commands that write a compaction, a pruning or a branch summary ask this
//! first and refuse.

use std::path::Path;

use rustc_hash::FxHashSet;

use super::Session;
use crate::error::SessionError;
use crate::problem::{Problem, ProblemKind};

impl Session {
    /// The problem of the first line on the path to entry `i` that cannot
    /// be read: an entry on the path whose fields could not be read, or the
    /// unreadable line the path breaks at (in a v2 or v3 file, the nearest
    /// unreadable line above the path's first entry when that entry's
    /// parent names no entry; in a v1 file, any unreadable line before
    /// `i`). `None` when every entry of the path was read.
    pub fn unreadable_on_path(&self, i: usize) -> Option<&Problem> {
        let unreadable = |p: &&Problem| {
            matches!(
                p.kind,
                ProblemKind::MalformedJson { .. } | ProblemKind::NotAnObject
            )
        };
        let invalid: FxHashSet<u64> = self
            .problems
            .iter()
            .filter(|p| matches!(p.kind, ProblemKind::InvalidEntry { .. }))
            .map(|p| p.line)
            .collect();
        let path = self.path_indices(i);
        if let Some(&at) = path.iter().find(|&&p| invalid.contains(&self.lines[p])) {
            let line = self.lines[at];
            return self
                .problems
                .iter()
                .find(|p| p.line == line && matches!(p.kind, ProblemKind::InvalidEntry { .. }));
        }
        if self.original_version < 2 {
            let end = self.lines[i];
            return self
                .problems
                .iter()
                .filter(unreadable)
                .find(|p| p.line < end);
        }
        let root = *path.first()?;
        let cut = self.entries[root]
            .parent_id
            .as_ref()
            .is_some_and(|parent| !self.index.contains_key(parent));
        if !cut {
            return None;
        }
        let root_line = self.lines[root];
        self.problems
            .iter()
            .rev()
            .filter(unreadable)
            .find(|p| p.line < root_line)
    }

    /// [`Session::unreadable_on_path`] as the error a writer refuses with,
    /// naming `file`.
    pub fn check_path_readable(&self, i: usize, file: &Path) -> Result<(), SessionError> {
        match self.unreadable_on_path(i) {
            None => Ok(()),
            Some(p) => Err(SessionError::UnreadableOnPath {
                path: file.to_owned(),
                line: p.line,
                problem: p.kind.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{SequentialIds, load_bytes};

    const HEADER3: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#;

    fn msg(id: &str, parent: Option<&str>, text: &str) -> String {
        let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
        )
    }

    fn load(lines: &[String]) -> crate::Session {
        let text = lines.join("\n") + "\n";
        load_bytes(
            "s.jsonl".as_ref(),
            text.as_bytes(),
            &mut SequentialIds::new(),
        )
        .unwrap()
    }

    #[test]
    fn a_malformed_line_that_cuts_the_path_is_named() {
        let s = load(&[
            HEADER3.to_owned(),
            msg("a", None, "one"),
            msg("b", Some("a"), "two").replace("\"two\"", "\"two\",,"),
            msg("c", Some("b"), "three"),
        ]);
        let leaf = s.leaf_index().unwrap();
        assert_eq!(s.unreadable_on_path(leaf).map(|p| p.line), Some(3));
    }

    #[test]
    fn an_orphan_without_unreadable_lines_is_not_refused() {
        let s = load(&[
            HEADER3.to_owned(),
            msg("a", None, "one"),
            msg("c", Some("gone"), "three"),
        ]);
        assert!(s.unreadable_on_path(s.leaf_index().unwrap()).is_none());
    }

    #[test]
    fn a_malformed_line_on_another_branch_is_not_refused() {
        let s = load(&[
            HEADER3.to_owned(),
            msg("a", None, "one"),
            "{not json".to_owned(),
            msg("c", Some("a"), "three"),
        ]);
        assert!(s.unreadable_on_path(s.leaf_index().unwrap()).is_none());
    }

    #[test]
    fn a_lone_surrogate_is_read_and_keeps_the_path_whole() {
        let s = load(&[
            HEADER3.to_owned(),
            msg("a", None, "one"),
            msg("b", Some("a"), "cut \\ud83d"),
            msg("c", Some("b"), "three"),
        ]);
        assert!(s.problems().is_empty(), "{:?}", s.problems());
        assert_eq!(s.path_indices(s.leaf_index().unwrap()).len(), 3);
    }

    #[test]
    fn in_a_v1_file_any_unreadable_line_before_the_leaf_is_on_the_path() {
        let v1 = |text: &str| {
            format!(
                r#"{{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
            )
        };
        let s = load(&[
            r#"{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#
                .to_owned(),
            v1("one"),
            "[1,2]".to_owned(),
            v1("two"),
        ]);
        assert_eq!(
            s.unreadable_on_path(s.leaf_index().unwrap())
                .map(|p| p.line),
            Some(3)
        );
    }
}
