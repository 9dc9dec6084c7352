//! The file lists that ride along with an archive (SPEC §11.3, §15.5 step 5,
//! §14.6 step 9).
//!
//! Tracking belongs to context-builder ([`FileOps`], with `computeFileLists`
//! as [`FileOps::lists`]); this module only renders those lists the way the
//! two archives show them: the flat `path (Read|Write|RW)` lines of the
//! text-frame summary and the folded tree of the PNG-frame summary.

use std::fmt::Write as _;

use musepi_context_builder::{FILE_LIST_LIMIT, FileOps, PathSet, format_files_block};

/// Files read and modified by the archived history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileLists {
    /// `computeFileLists`: files read and never modified, and files written
    /// or edited, both sorted, paths with a URL scheme left out.
    pub lists: musepi_context_builder::FileLists,
    /// Every file read, modified or not: a modified file in it is `RW`.
    pub read: PathSet,
}

impl FileLists {
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

    /// The flat FILES section of the text-frame summary (SPEC §15.5 step 5):
    /// sorted `path (Read|Write|RW)` lines, at most [`FILE_LIST_LIMIT`], then
    /// `[…N files elided…]`, inside `<files>`; empty when there is no file.
    pub fn section(&self) -> String {
        let lines = self.marked_lines();
        if lines.is_empty() {
            return String::new();
        }
        let mut out = String::from("<files>\n");
        for line in lines.iter().take(FILE_LIST_LIMIT) {
            out.push_str(line);
            out.push('\n');
        }
        if lines.len() > FILE_LIST_LIMIT {
            let _ = writeln!(out, "[…{} files elided…]", lines.len() - FILE_LIST_LIMIT);
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

    /// The grouped, prefix-folded file tree of SPEC §11.5 without its
    /// `<files>` wrapper (the PNG-frame summary, §14.6 step 9); empty when
    /// there is no file.
    pub fn tree(&self) -> String {
        let block = format_files_block(&self.lists, &self.read);
        block
            .strip_prefix("<files>\n")
            .and_then(|b| b.strip_suffix("\n</files>"))
            .unwrap_or(&block)
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_follow_the_read_set_and_urls_are_left_out() {
        let lists = FileLists::from_ops(
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
        let lists = FileLists::from_ops(names.iter().map(String::as_str), [], []);
        let section = lists.section();
        assert_eq!(section.lines().count(), 1 + 20 + 1 + 1);
        assert!(section.contains("f19.rs (Read)\n[…1 files elided…]\n</files>"));
        assert!(!section.contains("f20.rs"));
        assert!(lists.tree().ends_with("[…1 files elided…]"));
    }

    #[test]
    fn no_files_give_an_empty_section() {
        assert_eq!(FileLists::default().section(), "");
        assert_eq!(FileLists::default().tree(), "");
        assert!(FileLists::default().is_empty());
    }

    #[test]
    fn file_ops_keep_their_cumulative_read_set() {
        let mut ops = FileOps::default();
        ops.read.insert("src/main.rs");
        ops.edited.insert("src/main.rs");
        let lists = FileLists::from_file_ops(&ops);
        assert!(lists.read_files().is_empty());
        assert_eq!(lists.marked_lines(), ["src/main.rs (RW)"]);
    }
}
