//! The file lists that ride along with an archive.
//!
//! Tracking belongs to context-builder ([`FileOps`], with `computeFileLists`
//! as [`FileOps::lists`]); this module only renders those lists the way the
//! two archives show them: the flat `path (Read|Write|RW)` lines of the
//! text-frame summary and the folded tree of the PNG-frame summary.

use std::fmt::Write as _;

use musepi_context_builder::{FILE_LIST_LIMIT, FileLists, FileOps, PathSet, format_grouped_paths};

use crate::util::len16;

/// Files read and modified by the archived history, each to be marked
/// `Read`, `Write` or `RW`: context-builder's [`FileLists`] and the set of
/// files read, which tells a modified file that was also read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MarkedFiles {
    /// `computeFileLists`: files read and never modified, and files written
    /// or edited, both sorted, paths with a URL scheme left out.
    pub lists: FileLists,
    /// Every file read, modified or not: a modified file in it is `RW`.
    pub read: PathSet,
}

impl MarkedFiles {
    /// The lists of a preparation's (cumulative) file operations.
    pub fn from_file_ops(ops: &FileOps) -> Self {
        Self {
            lists: ops.lists(),
            read: ops.read.clone(),
        }
    }

    /// The lists of plain path lists, for callers without a [`FileOps`]:
    /// the paths are taken as given (no read selector is stripped).
    pub fn from_ops<'a>(
        read: impl IntoIterator<Item = &'a str>,
        written: impl IntoIterator<Item = &'a str>,
        edited: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let mut ops = FileOps::default();
        read.into_iter().for_each(|p| ops.read.insert(p));
        written.into_iter().for_each(|p| ops.written.insert(p));
        edited.into_iter().for_each(|p| ops.edited.insert(p));
        Self::from_file_ops(&ops)
    }

    /// Files read and never modified, sorted (`details.readFiles`).
    pub fn read_files(&self) -> &[String] {
        &self.lists.read_files
    }

    /// Files written or edited, sorted (`details.modifiedFiles`).
    pub fn modified_files(&self) -> &[String] {
        &self.lists.modified_files
    }

    /// Whether there is no file at all.
    pub fn is_empty(&self) -> bool {
        self.lists.is_empty()
    }

    /// How many files there are, read or modified.
    pub fn len(&self) -> usize {
        self.lists.read_files.len() + self.lists.modified_files.len()
    }

    /// The flat FILES section of the text summary with at most
    /// [`FILE_LIST_LIMIT`] files (see [`MarkedFiles::section_within`]).
    pub fn section(&self) -> String {
        self.section_with(FILE_LIST_LIMIT)
    }

    /// The flat FILES section of the text summary: sorted
    /// `path (Read|Write|RW)` lines inside `<files>`, every file when the
    /// section is at most `max_chars` UTF-16 units long, else as many as fit
    /// (never fewer than [`FILE_LIST_LIMIT`]) and `[…N files elided…]`;
    /// empty when there is no file. Also returns how many files it lists.
    pub fn section_within(&self, max_chars: usize) -> (String, usize) {
        let lines = self.marked_lines();
        let mut used = "<files>\n</files>".len() + "[…99999 files elided…]\n".len();
        let all: usize =
            lines.iter().map(|l| len16(l) + 1).sum::<usize>() + "<files>\n</files>".len();
        let mut fit = lines.len();
        if all > max_chars {
            fit = 0;
            for line in &lines {
                used += len16(line) + 1;
                if used > max_chars {
                    break;
                }
                fit += 1;
            }
            fit = fit.max(FILE_LIST_LIMIT.min(lines.len()));
        }
        (self.section_with(fit), fit.min(lines.len()))
    }

    fn section_with(&self, limit: usize) -> String {
        let lines = self.marked_lines();
        if lines.is_empty() {
            return String::new();
        }
        let mut out = String::from("<files>\n");
        for line in lines.iter().take(limit) {
            out.push_str(line);
            out.push('\n');
        }
        if lines.len() > limit {
            let _ = writeln!(out, "[…{} files elided…]", lines.len() - limit);
        }
        out.push_str("</files>");
        out
    }

    /// Every file with its marker, sorted by path.
    pub fn marked_lines(&self) -> Vec<String> {
        self.lists
            .marked(&self.read)
            .into_iter()
            .map(|(p, m)| format!("{p} ({m})"))
            .collect()
    }

    /// The grouped, prefix-folded file tree of every file, without a
    /// `<files>` wrapper (the PNG-frame summary); empty when there is no
    /// file.
    pub fn tree(&self) -> String {
        let all: Vec<(String, String)> = self
            .lists
            .marked(&self.read)
            .into_iter()
            .map(|(p, m)| (p, format!(" ({m})")))
            .collect();
        if all.is_empty() {
            return String::new();
        }
        format_grouped_paths(&all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_follow_the_read_set_and_urls_are_left_out() {
        let lists = MarkedFiles::from_ops(
            ["src/a.ts", "src/b.ts", "https://example.com/doc"],
            ["src/b.ts"],
            ["src/c.ts"],
        );
        assert_eq!(lists.read_files(), ["src/a.ts"]);
        assert_eq!(lists.modified_files(), ["src/b.ts", "src/c.ts"]);
        assert_eq!(
            lists.section(),
            "<files>\nsrc/a.ts (Read)\nsrc/b.ts (RW)\nsrc/c.ts (Write)\n</files>"
        );
        assert!(!lists.section().contains("example.com"));
        assert_eq!(lists.tree(), "# src/\na.ts (Read)\nb.ts (RW)\nc.ts (Write)");
    }

    #[test]
    fn more_than_twenty_files_are_counted() {
        let names: Vec<String> = (0..21).map(|i| format!("f{i:02}.rs")).collect();
        let lists = MarkedFiles::from_ops(names.iter().map(String::as_str), [], []);
        let section = lists.section();
        assert_eq!(section.lines().count(), 1 + 20 + 1 + 1);
        assert!(section.contains("f19.rs (Read)\n[…1 files elided…]\n</files>"));
        assert!(!section.contains("f20.rs"));
        assert!(lists.tree().ends_with("f20.rs (Read)"), "{}", lists.tree());
        let (all, listed) = lists.section_within(10_000);
        assert_eq!((all.lines().count(), listed), (1 + 21 + 1, 21));
        let (some, listed) = lists.section_within(30);
        assert_eq!(listed, 20);
        assert!(some.contains("[…1 files elided…]"));
    }

    #[test]
    fn no_files_give_an_empty_section() {
        assert_eq!(MarkedFiles::default().section(), "");
        assert_eq!(MarkedFiles::default().tree(), "");
        assert!(MarkedFiles::default().is_empty());
    }

    #[test]
    fn file_ops_keep_their_cumulative_read_set() {
        let mut ops = FileOps::default();
        ops.read.insert("src/main.rs");
        ops.edited.insert("src/main.rs");
        let lists = MarkedFiles::from_file_ops(&ops);
        assert!(lists.read_files().is_empty());
        assert_eq!(lists.marked_lines(), ["src/main.rs (RW)"]);
    }
}
