//! Columns people read line up as a terminal shows them: an id of CJK
//! characters (two columns each), one with a combining mark (none) and one
//! with an emoji (two) take the room they take on screen, in the tree, the
//! context's rows and the stats' table alike.

#![allow(clippy::unwrap_used)]

mod support;

use support::{code, musepi_in, stderr, stdout, write_file};

/// Three messages whose ids are wide, combining and emoji, and two labels
/// on the first two (our own content).
const SESSION: &str = concat!(
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
    "\n",
    r#"{"type":"message","id":"日本語ab","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"first question","timestamp":1}}"#,
    "\n",
    r#"{"type":"message","id":"ce\u0301dille","parentId":"日本語ab","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"second answer"}],"provider":"p","model":"m","stopReason":"stop","timestamp":2}}"#,
    "\n",
    r#"{"type":"message","id":"🦀crab03","parentId":"ce\u0301dille","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"user","content":"third question","timestamp":3}}"#,
    "\n",
    r#"{"type":"label","id":"00000004","parentId":"🦀crab03","timestamp":"2025-01-01T00:00:04.000Z","targetId":"日本語ab","label":"start"}"#,
    "\n",
    r#"{"type":"label","id":"00000005","parentId":"00000004","timestamp":"2025-01-01T00:00:05.000Z","targetId":"ce\u0301dille","label":"middle"}"#,
    "\n",
);

/// The terminal columns of `text`, counted here on their own: two for the
/// ideographs and the emoji of [`SESSION`], none for its combining accent.
fn columns(text: &str) -> usize {
    text.chars()
        .map(|c| match c {
            '\u{301}' => 0,
            '\u{3040}'..='\u{9fff}' | '🦀' => 2,
            _ => 1,
        })
        .sum()
}

/// Asserts that each of `rows` is a line of `text` (the first line after
/// the previous row's holding its first cell) and that its other cells,
/// found in order, start at the same columns on every row.
#[track_caller]
fn assert_columns(what: &str, text: &str, rows: &[&[&str]]) {
    let lines: Vec<&str> = text.lines().collect();
    let mut next = 0;
    let mut starts: Vec<Vec<usize>> = Vec::new();
    for row in rows {
        let at = next
            + lines[next..]
                .iter()
                .position(|l| l.contains(row[0]))
                .unwrap_or_else(|| panic!("{what}: no line holds {:?}\n{text}", row[0]));
        next = at + 1;
        let line = lines[at];
        let mut from = 0;
        let mut row_starts = Vec::new();
        for (n, cell) in row.iter().enumerate() {
            let start = from
                + line[from..]
                    .find(cell)
                    .unwrap_or_else(|| panic!("{what}: {cell:?} not in {line:?}"));
            if n > 0 {
                row_starts.push(columns(&line[..start]));
            }
            from = start + cell.len();
        }
        starts.push(row_starts);
    }
    for (row, row_starts) in rows.iter().zip(&starts) {
        assert_eq!(
            row_starts, &starts[0],
            "{what}: the cells of {row:?} start at other columns than {:?}\n{text}",
            rows[0]
        );
    }
}

/// What a case names, the command's arguments, and the rows it prints,
/// each by its cells.
type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a [&'a str]]);

#[test]
fn columns_line_up_with_wide_combining_and_emoji_ids() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "s.jsonl", SESSION);
    let file = "s.jsonl";
    let cases: [Case<'_>; 3] = [
        (
            "session tree",
            &["session", "tree", file],
            &[
                &["日本語ab", "user", "first question"],
                &["ce\u{301}dille", "assistant", "second answer"],
                &["🦀crab03", "user", "third question"],
                &["00000004", "label", "日本語ab = start"],
                &["00000005", "label", "ce\u{301}dille = middle"],
            ],
        ),
        (
            "context",
            &["context", file],
            &[
                &["user", "日本語ab", "4", "first question"],
                &["assistant", "ce\u{301}dille", "4", "second answer"],
                &["user", "🦀crab03", "4", "third question"],
            ],
        ),
        (
            "session stats",
            &["session", "stats", file],
            &[
                &["file", "s.jsonl"],
                &["leaf", "00000005"],
                &["ce\u{301}dille", "middle"],
                &["日本語ab", "start"],
            ],
        ),
    ];
    for (what, args, rows) in cases {
        let o = musepi_in(dir.path(), dir.path(), args, None);
        assert_eq!(code(&o), 0, "{what}: {}", stderr(&o));
        assert_columns(what, &stdout(&o), rows);
    }
}
