//! The file lists that ride along with an archive (SPEC §11.3, §15.5 step 5).
//!
//! Context-builder owns file-operation tracking; this is the plain-data
//! seam the engine takes, with a small [`FileLists::from_ops`] that applies
//! the `computeFileLists` rules so the engine can be used and tested alone.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::util::cmp_utf16;

/// At most this many files are listed; the rest are counted.
pub const FILE_LIST_LIMIT: usize = 20;

/// Files read and modified by the archived history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileLists {
    /// Files read and never modified, sorted.
    pub read_files: Vec<String>,
    /// Files written or edited, sorted.
    pub modified_files: Vec<String>,
    /// Every file read, modified or not: a modified file in it is `RW`.
    pub read_set: BTreeSet<String>,
}

impl FileLists {
    /// `computeFileLists` (SPEC §11.3): `modified = edited ∪ written`,
    /// `read_files = read − modified`, both sorted by UTF-16 code units,
    /// and paths with a URL scheme (`https://…`, `artifact://3`) left out.
    pub fn from_ops<'a>(
        read: impl IntoIterator<Item = &'a str>,
        written: impl IntoIterator<Item = &'a str>,
        edited: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let read_set: BTreeSet<String> = read.into_iter().map(str::to_owned).collect();
        let modified: BTreeSet<&str> = written
            .into_iter()
            .chain(edited)
            .filter(|p| !has_url_scheme(p))
            .collect();
        let mut read_files: Vec<String> = read_set
            .iter()
            .filter(|p| !modified.contains(p.as_str()) && !has_url_scheme(p))
            .cloned()
            .collect();
        let mut modified_files: Vec<String> = modified.into_iter().map(str::to_owned).collect();
        read_files.sort_by(|a, b| cmp_utf16(a, b));
        modified_files.sort_by(|a, b| cmp_utf16(a, b));
        Self {
            read_files,
            modified_files,
            read_set,
        }
    }

    /// Whether there is no file at all.
    pub fn is_empty(&self) -> bool {
        self.read_files.is_empty() && self.modified_files.is_empty()
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
        let mut all: Vec<(&str, &str)> = self
            .read_files
            .iter()
            .map(|p| (p.as_str(), "Read"))
            .chain(self.modified_files.iter().map(|p| {
                let marker = if self.read_set.contains(p) {
                    "RW"
                } else {
                    "Write"
                };
                (p.as_str(), marker)
            }))
            .collect();
        all.sort_by(|a, b| cmp_utf16(a.0, b.0));
        all.dedup_by(|a, b| a.0 == b.0);
        all.into_iter().map(|(p, m)| format!("{p} ({m})")).collect()
    }
}

/// Whether `path` contains a URL scheme (`[a-z][a-z0-9+.-]*://`, any case,
/// anywhere).
pub fn has_url_scheme(path: &str) -> bool {
    let bytes = path.as_bytes();
    let mut from = 0;
    while let Some(found) = path[from..].find("://") {
        let at = from + found;
        let scheme = bytes[..at]
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'));
        if scheme.clone().any(u8::is_ascii_alphabetic) {
            return true;
        }
        from = at + 3;
    }
    false
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
        assert_eq!(lists.read_files, ["src/a.ts"]);
        assert_eq!(lists.modified_files, ["src/b.ts", "src/c.ts"]);
        assert_eq!(
            lists.section(),
            "<files>\nsrc/a.ts (Read)\nsrc/b.ts (RW)\nsrc/c.ts (Write)\n</files>"
        );
        assert!(!lists.section().contains("example.com"));
    }

    #[test]
    fn more_than_twenty_files_are_counted() {
        let names: Vec<String> = (0..21).map(|i| format!("f{i:02}.rs")).collect();
        let lists = FileLists::from_ops(names.iter().map(String::as_str), [], []);
        let section = lists.section();
        assert_eq!(section.lines().count(), 1 + 20 + 1 + 1);
        assert!(section.contains("f19.rs (Read)\n[…1 files elided…]\n</files>"));
        assert!(!section.contains("f20.rs"));
    }

    #[test]
    fn no_files_give_an_empty_section() {
        assert_eq!(FileLists::default().section(), "");
        assert!(FileLists::default().is_empty());
    }

    #[test]
    fn url_schemes_are_found_anywhere() {
        assert!(has_url_scheme("artifact://3"));
        assert!(has_url_scheme("a.ts:conflict://1"));
        assert!(has_url_scheme("HTTPS://x"));
        assert!(!has_url_scheme("src/a.ts"));
        assert!(!has_url_scheme("1://x"));
        assert!(!has_url_scheme("://x"));
    }
}
