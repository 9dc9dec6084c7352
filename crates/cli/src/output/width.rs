//! Text measured as a terminal shows it: columns of a character and of a
//! string, cells padded to a width, text cut to fit, and the terminal's
//! own width.

use std::fmt::Write as _;
use std::io::{self, IsTerminal};

use unicode_width::UnicodeWidthStr;

/// The columns of the terminal standard output is, or `None` when it is
/// not one (a pipe, a file): a report fits its rows to the width only on
/// a terminal, and prints them whole otherwise.
pub fn stdout_columns() -> Option<usize> {
    if !io::stdout().is_terminal() {
        return None;
    }
    crossterm::terminal::size()
        .ok()
        .map(|(w, _)| usize::from(w))
        .filter(|w| *w > 0)
}

/// Cuts `s` to at most `width` columns, ending with `…` when cut.
pub fn truncate(s: &str, width: usize) -> String {
    if display_width(s) <= width {
        return s.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = char_width(c);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    if width > 0 {
        out.push('…');
    }
    out
}

/// `text` in at most `width` columns as it shows ([`display_width`]),
/// ending with `…` when it was cut.
pub fn fit(text: &str, width: usize) -> String {
    truncate(text, width)
}

/// Two columns, the first padded to its widest cell, as it shows: the
/// colour codes of a painted cell take no room, a wide character takes
/// two columns and a combining mark none (see [`display_width`]).
pub fn aligned(rows: &[(String, String)]) -> String {
    let width = column_width(rows.iter().map(|(k, _)| k), 0);
    let mut out = String::new();
    for (k, v) in rows {
        if v.is_empty() {
            let _ = writeln!(out, "{k}");
        } else {
            let _ = writeln!(out, "{}  {v}", pad_end(k, width));
        }
    }
    out
}

/// The terminal columns `text` takes as it shows, the one measure of every
/// aligned column the binary prints and of the terminal UI: a wide
/// character (CJK, most emoji) takes two, a combining mark or a joiner
/// none, an emoji sequence joined by U+200D two, and the colour codes
/// [`Style::paint`](super::Style::paint) adds (`ESC [ … m`) none. Text from a session has no
/// other escape left (see [`escape_controls`](super::escape_controls)).
///
/// Columns are never padded with `format!("{:<w$}")`, which counts
/// characters: [`pad_end`] and [`pad_start`] pad to this measure.
pub fn display_width(text: &str) -> usize {
    let mut n = 0;
    let mut rest = text;
    while let Some(at) = rest.find('\x1b') {
        n += UnicodeWidthStr::width(&rest[..at]);
        // `ESC [ … m`: up to its `m`, or to the end when it has none.
        rest = rest[at..].find('m').map_or("", |m| &rest[at + m + 1..]);
    }
    n + UnicodeWidthStr::width(rest)
}

/// The width of a column: its widest cell as [`display_width`] measures
/// it, and at least `min` (a header's width, or the width a column keeps
/// when its cells are short or there are none).
pub fn column_width<S: AsRef<str>>(cells: impl IntoIterator<Item = S>, min: usize) -> usize {
    cells
        .into_iter()
        .map(|c| display_width(c.as_ref()))
        .fold(min, usize::max)
}

/// The terminal columns one character takes, as [`display_width`]
/// measures it alone: 2 for a wide one, 0 for a combining mark.
pub fn char_width(c: char) -> usize {
    UnicodeWidthStr::width(c.encode_utf8(&mut [0; 4]) as &str)
}

/// `text`, then the spaces that make it `width` columns wide as it shows
/// (none when it is that wide already): a cell aligned to the left.
pub fn pad_end(text: &str, width: usize) -> String {
    let pad = width.saturating_sub(display_width(text));
    format!("{text}{:pad$}", "")
}

/// The spaces that make `text` `width` columns wide as it shows, then
/// `text`: a cell aligned to the right.
pub fn pad_start(text: &str, width: usize) -> String {
    let pad = width.saturating_sub(display_width(text));
    format!("{:pad$}{text}", "")
}
