//! File-operation tracking in summaries (docs/design.md, "Summaries"): which files the
//! summarized history read and changed, and the `<files>` block that lists
//! them.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt::Write as _;

use musepi_session_model::{AgentMessage, ContentBlock};
use serde_json::Value;

use crate::pathtree::has_url_scheme;

/// At most this many files are listed; the rest are counted (docs/design.md, "Summaries").
pub const FILE_LIST_LIMIT: usize = 20;

/// Orders strings by UTF-16 code units, as JavaScript's default sort does.
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// A set of paths that remembers nothing of order and lists itself sorted
/// by UTF-16 code units.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathSet(HashSet<String>);

impl PathSet {
    /// Adds a path.
    pub fn insert(&mut self, path: impl Into<String>) {
        self.0.insert(path.into());
    }

    /// Whether the path is in the set.
    pub fn contains(&self, path: &str) -> bool {
        self.0.contains(path)
    }

    /// Number of paths.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The paths, sorted.
    pub fn sorted(&self) -> Vec<String> {
        let mut v: Vec<String> = self.0.iter().cloned().collect();
        v.sort_by(|a, b| cmp_utf16(a, b));
        v
    }

    fn iter(&self) -> impl Iterator<Item = &String> {
        self.0.iter()
    }
}

/// Paths read, written and edited by tool calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOps {
    /// Files read.
    pub read: PathSet,
    /// Files written.
    pub written: PathSet,
    /// Files edited.
    pub edited: PathSet,
}

/// The persisted lists: read-only files and modified files.
///
/// Serialized, it is `{"readFiles": [...], "modifiedFiles": [...]}`, as
/// compaction details and hook payloads spell them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileLists {
    /// Files read and never modified, sorted.
    pub read_files: Vec<String>,
    /// Files written or edited, sorted.
    pub modified_files: Vec<String>,
}

impl FileOps {
    /// Adds the operations of one message: `read`, `write` and `edit` tool
    /// calls of an assistant with a non-empty string `path` (docs/design.md, "Summaries").
    /// URL-like paths are skipped; read selectors (`:10-20`, `:raw`) are
    /// stripped from read paths.
    pub fn add_message(&mut self, message: &AgentMessage) {
        let AgentMessage::Assistant(a) = message else {
            return;
        };
        for block in a.content.blocks() {
            let ContentBlock::ToolCall(call) = block else {
                continue;
            };
            let Some(Value::String(path)) = call.arguments.value().get("path") else {
                continue;
            };
            if path.is_empty() || has_url_scheme(path) {
                continue;
            }
            match call.name.as_str() {
                "read" => self.read.insert(strip_read_selector(path)),
                "write" => self.written.insert(path.clone()),
                "edit" => self.edited.insert(path.clone()),
                _ => {}
            }
        }
    }

    /// Adds a previous summary's persisted lists: `readFiles` as read,
    /// `modifiedFiles` as edited (docs/design.md, "Summaries").
    pub fn add_details(&mut self, details: &Value) {
        let list = |key: &str| {
            details
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
        };
        for p in list("readFiles") {
            self.read.insert(strip_read_selector(p));
        }
        for p in list("modifiedFiles") {
            self.edited.insert(p);
        }
    }

    /// `computeFileLists` (docs/design.md, "Summaries"): modified = edited ∪ written, read =
    /// read − modified, both sorted, URL-like paths left out.
    pub fn lists(&self) -> FileLists {
        let mut modified = PathSet::default();
        for p in self.edited.iter().chain(self.written.iter()) {
            if !has_url_scheme(p) {
                modified.insert(p.clone());
            }
        }
        let mut read = PathSet::default();
        for p in self.read.iter() {
            if !modified.contains(p) && !has_url_scheme(p) {
                read.insert(p.clone());
            }
        }
        FileLists {
            read_files: read.sorted(),
            modified_files: modified.sorted(),
        }
    }
}

impl FileLists {
    /// Whether both lists are empty.
    pub fn is_empty(&self) -> bool {
        self.read_files.is_empty() && self.modified_files.is_empty()
    }

    /// `{ "readFiles": [...], "modifiedFiles": [...] }`, the compaction's `details`.
    pub fn to_details(&self) -> Value {
        serde_json::json!({ "readFiles": self.read_files, "modifiedFiles": self.modified_files })
    }

    /// Every path with its marker (`Read`, `Write` or `RW`), sorted.
    /// A modified file is `RW` when `read` (the cumulative read set, before
    /// modified files were taken out) holds it.
    pub fn marked(&self, read: &PathSet) -> Vec<(String, &'static str)> {
        let mut all: Vec<(String, &'static str)> = self
            .read_files
            .iter()
            .map(|p| (p.clone(), "Read"))
            .chain(
                self.modified_files
                    .iter()
                    .map(|p| (p.clone(), if read.contains(p) { "RW" } else { "Write" })),
            )
            .collect();
        all.sort_by(|a, b| cmp_utf16(&a.0, &b.0));
        all
    }
}

/// Strips a trailing read selector (`:50`, `:50-200`, `:L10-L20`, `:raw`,
/// `:conflicts`, or one of each) from a read path (docs/design.md, "Summaries").
pub fn strip_read_selector(path: &str) -> String {
    let mut out = path;
    let mut seen_range = false;
    let mut seen_mode = false;
    for _ in 0..2 {
        let Some(colon) = out.rfind(':') else { break };
        if colon == 0 {
            break;
        }
        let chunk = &out[colon + 1..];
        if !seen_mode
            && (chunk.eq_ignore_ascii_case("raw") || chunk.eq_ignore_ascii_case("conflicts"))
        {
            seen_mode = true;
        } else if !seen_range && is_range_list(chunk) {
            seen_range = true;
        } else {
            break;
        }
        out = &out[..colon];
    }
    out.to_owned()
}

fn is_range_list(chunk: &str) -> bool {
    !chunk.is_empty() && chunk.split(',').all(is_range)
}

/// `L?\d+(?:(?:[-+]|\.\.)L?\d+|-|\.\.)?`
fn is_range(s: &str) -> bool {
    fn number(s: &str) -> Option<&str> {
        let s = s.strip_prefix('L').unwrap_or(s);
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        (digits > 0).then(|| &s[digits..])
    }
    let Some(rest) = number(s) else { return false };
    if rest.is_empty() || rest == "-" || rest == ".." {
        return true;
    }
    let after_sep = rest
        .strip_prefix("..")
        .or_else(|| rest.strip_prefix('-'))
        .or_else(|| rest.strip_prefix('+'));
    matches!(after_sep.and_then(number), Some(""))
}

/// The `<files>` block (docs/design.md, "Summaries"): at most 20 files in the grouped,
/// prefix-folded tree, then `[…N files elided…]`. Empty when there are no files.
pub fn format_files_block(lists: &FileLists, read: &PathSet) -> String {
    let all = lists.marked(read);
    if all.is_empty() {
        return String::new();
    }
    let shown: Vec<(String, String)> = all
        .iter()
        .take(FILE_LIST_LIMIT)
        .map(|(p, m)| (p.clone(), format!(" ({m})")))
        .collect();
    let mut body = crate::pathtree::format_grouped_paths(&shown);
    if all.len() > FILE_LIST_LIMIT {
        let _ = write!(
            body,
            "
[…{} files elided…]",
            all.len() - FILE_LIST_LIMIT
        );
    }
    format!("<files>\n{body}\n</files>")
}

/// pi's legacy rendering (docs/design.md, "Summaries"): `\n\n<read-files>…` and
/// `<modified-files>…` sections, or nothing.
pub fn format_legacy(lists: &FileLists) -> String {
    let mut sections = Vec::new();
    if !lists.read_files.is_empty() {
        sections.push(format!(
            "<read-files>\n{}\n</read-files>",
            lists.read_files.join("\n")
        ));
    }
    if !lists.modified_files.is_empty() {
        sections.push(format!(
            "<modified-files>\n{}\n</modified-files>",
            lists.modified_files.join("\n")
        ));
    }
    if sections.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", sections.join("\n\n"))
    }
}

/// Replaces any file lists in `summary` with `block` (docs/design.md, "Summaries"
/// `upsertFileOperations`): every `<files>`, `<read-files>` and
/// `<modified-files>` block is removed with the whitespace after it, then
/// the new block is appended after a blank line.
pub fn upsert_file_operations(summary: &str, block: &str) -> String {
    let mut stripped = summary.to_owned();
    for tag in ["files", "read-files", "modified-files"] {
        stripped = strip_blocks(&stripped, tag);
    }
    let stripped = stripped.trim_end();
    match (stripped.is_empty(), block.is_empty()) {
        (_, true) => stripped.to_owned(),
        (true, false) => block.to_owned(),
        (false, false) => format!("{stripped}\n\n{block}"),
    }
}

fn strip_blocks(text: &str, tag: &str) -> String {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        let Some(end_rel) = rest[start + open.len()..].find(&close) else {
            break;
        };
        out.push_str(&rest[..start]);
        let after = &rest[start + open.len() + end_rel + close.len()..];
        rest = after.trim_start();
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_order_differs_from_code_point_order() {
        let mut v = vec!["ｆｕｌｌ.ts".to_owned(), "🦀crab.rs".to_owned()];
        v.sort_by(|a, b| cmp_utf16(a, b));
        assert_eq!(v, ["🦀crab.rs", "ｆｕｌｌ.ts"]);
    }

    #[test]
    fn url_schemes_are_found_anywhere() {
        for p in [
            "artifact://3",
            "skill://x",
            "https://a.b",
            "history://c",
            "a.ts:conflict://1",
            "HTTP://X",
        ] {
            assert!(has_url_scheme(p), "{p}");
        }
        for p in ["src/a.ts", "1://x", "C:\\dir", "x_://y", "a ://b"] {
            assert!(!has_url_scheme(p), "{p}");
        }
    }

    #[test]
    fn read_selectors_are_stripped() {
        for (input, out) in [
            ("a.ts:50", "a.ts"),
            ("a.ts:50-200", "a.ts"),
            ("a.ts:50+10", "a.ts"),
            ("a.ts:5-16,960-973", "a.ts"),
            ("a.ts:L10-L20", "a.ts"),
            ("a.ts:10..20", "a.ts"),
            ("a.ts:50-", "a.ts"),
            ("a.ts:RAW", "a.ts"),
            ("a.ts:conflicts", "a.ts"),
            ("a.ts:1-50:raw", "a.ts"),
            ("a.ts:raw:1-50", "a.ts"),
            (":50", ":50"),
            ("a.ts:main", "a.ts:main"),
            ("C:50", "C"),
        ] {
            assert_eq!(strip_read_selector(input), out, "{input}");
        }
    }

    #[test]
    fn modified_files_leave_the_read_list_and_get_markers() {
        let mut ops = FileOps::default();
        for p in ["src/a.ts", "src/b.ts", "https://example.com/doc"] {
            ops.read.insert(p);
        }
        ops.written.insert("src/b.ts");
        ops.edited.insert("src/c.ts");
        let lists = ops.lists();
        assert_eq!(lists.read_files, ["src/a.ts"]);
        assert_eq!(lists.modified_files, ["src/b.ts", "src/c.ts"]);
        assert_eq!(
            format_files_block(&lists, &ops.read),
            "<files>\n# src/\na.ts (Read)\nb.ts (RW)\nc.ts (Write)\n</files>"
        );
    }

    #[test]
    fn more_than_twenty_files_are_counted() {
        let mut ops = FileOps::default();
        for i in 0..21 {
            ops.read.insert(format!("f{i:02}.ts"));
        }
        let block = format_files_block(&ops.lists(), &ops.read);
        assert_eq!(block.lines().count(), 1 + 20 + 1 + 1);
        assert!(block.contains("\n[…1 files elided…]\n</files>"));
        assert!(!block.contains("f20.ts"));
    }

    #[test]
    fn legacy_rendering_lists_each_nonempty_section() {
        let lists = FileLists {
            read_files: vec!["a.ts".into(), "b.ts".into()],
            modified_files: vec!["c.ts".into()],
        };
        assert_eq!(
            format_legacy(&lists),
            "\n\n<read-files>\na.ts\nb.ts\n</read-files>\n\n<modified-files>\nc.ts\n</modified-files>"
        );
        assert_eq!(format_legacy(&FileLists::default()), "");
    }

    #[test]
    fn upsert_replaces_old_lists() {
        let old =
            "## Goal\nx\n\n<read-files>\na.ts\n</read-files>\n\n<files>\n# old/\n</files>\n\n";
        assert_eq!(
            upsert_file_operations(old, "<files>\nb.ts (Read)\n</files>"),
            "## Goal\nx\n\n<files>\nb.ts (Read)\n</files>"
        );
        assert_eq!(upsert_file_operations(old, ""), "## Goal\nx");
        assert_eq!(
            upsert_file_operations("", "<files>\n</files>"),
            "<files>\n</files>"
        );
    }

    #[test]
    fn details_feed_the_cumulative_sets() {
        let mut ops = FileOps::default();
        ops.add_details(&serde_json::json!({"readFiles": ["a.ts"], "modifiedFiles": ["b.ts"]}));
        assert!(ops.read.contains("a.ts") && ops.edited.contains("b.ts"));
    }
}
