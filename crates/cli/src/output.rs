//! What a command writes: terminal output (colour only on a terminal and
//! never with `NO_COLOR`, aligned columns, short previews, JSON documents,
//! error chains), and whole files written atomically.

use std::fmt::Write as _;
use std::io::{self, IsTerminal, Write};

/// Colours the binary uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Color {
    /// Errors.
    Red,
    /// Success, the leaf.
    Green,
    /// Warnings, labels.
    Yellow,
    /// Ids.
    Cyan,
    /// Secondary text.
    Dim,
    /// Headings.
    Bold,
}

impl Color {
    fn code(self) -> &'static str {
        match self {
            Self::Red => "31",
            Self::Green => "32",
            Self::Yellow => "33",
            Self::Cyan => "36",
            Self::Dim => "2",
            Self::Bold => "1",
        }
    }
}

/// Whether to colour one output stream.
#[derive(Debug, Clone, Copy, Default)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Colour when `is_terminal` and `NO_COLOR` is unset or empty.
    pub fn detect(is_terminal: bool) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self {
            color: is_terminal && !no_color,
        }
    }

    /// The style for standard output.
    pub fn stdout() -> Self {
        Self::detect(io::stdout().is_terminal())
    }

    /// The style for standard error.
    pub fn stderr() -> Self {
        Self::detect(io::stderr().is_terminal())
    }

    /// Plain text, never coloured.
    pub fn plain() -> Self {
        Self { color: false }
    }

    /// `text` in `color`, when colouring.
    pub fn paint(self, color: Color, text: &str) -> String {
        if self.color && !text.is_empty() {
            format!("\x1b[{}m{text}\x1b[0m", color.code())
        } else {
            text.to_owned()
        }
    }
}

/// Two columns, the first padded to its widest cell.
pub fn aligned(rows: &[(String, String)]) -> String {
    let width = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (k, v) in rows {
        if v.is_empty() {
            let _ = writeln!(out, "{k}");
        } else {
            let pad = width - k.chars().count();
            let _ = writeln!(out, "{k}{:pad$}  {v}", "");
        }
    }
    out
}

/// One line of at most `max` characters: whitespace runs become one space,
/// and a cut text ends with `…`.
pub fn preview(text: &str, max: usize) -> String {
    // Normalize at most `max + 1` characters: enough to know whether to cut.
    let mut chars: Vec<char> = Vec::with_capacity(max + 1);
    for word in text.split_whitespace() {
        if !chars.is_empty() {
            chars.push(' ');
        }
        chars.extend(word.chars().take(max + 1));
        if chars.len() > max {
            break;
        }
    }
    if chars.len() > max {
        chars.truncate(max.saturating_sub(1));
        while chars.last() == Some(&' ') {
            chars.pop();
        }
        chars.push('…');
    }
    chars.into_iter().collect()
}

/// Prints `value` on stdout as one pretty-printed JSON document.
///
/// Integral floats print as integers (`35870`, not `35870.0`), as in the
/// session files.
pub fn print_json(value: &serde_json::Value) -> io::Result<()> {
    let mut value = value.clone();
    musepi_session_model::json::js_numbers(&mut value);
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &value)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Prints text on stdout, ignoring a closed pipe (`musepi … | head`).
pub fn print_text(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Prints an error and its source chain on stderr:
/// `musepi: error: …` then one `caused by: …` line per source.
pub fn print_error(error: &anyhow::Error) {
    let style = Style::stderr();
    let mut text = format!("musepi: {} {error}\n", style.paint(Color::Red, "error:"));
    let mut previous = error.to_string();
    for cause in error.chain().skip(1) {
        let message = cause.to_string();
        // Errors that already print their source (`path: reason`) are not repeated.
        if !previous.ends_with(&message) {
            let _ = writeln!(text, "  caused by: {message}");
        }
        previous = message;
    }
    let _ = io::stderr().write_all(text.as_bytes());
}

/// Prints a note on stderr unless quiet.
pub fn note(quiet: bool, text: &str) {
    if !quiet {
        let _ = writeln!(io::stderr(), "{text}");
    }
}

/// Writes a file atomically (a temporary file in the same folder, `fsync`,
/// rename, `fsync` of the folder), replacing what is there and keeping an
/// existing file's permission bits. On error `path` is untouched.
pub fn write_atomically(
    path: &std::path::Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    musepi_session_model::write_file(path, None, musepi_session_model::Replace::Existing, fill)
        .map_err(|e| match e {
            musepi_session_model::SessionError::WriteFailed { source, .. }
            | musepi_session_model::SessionError::Io { source, .. } => source,
            other => io::Error::other(other.to_string()),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_one_short_line() {
        assert_eq!(preview("  hello\n\n  world  ", 40), "hello world");
        assert_eq!(preview("abcdefghij", 5), "abcd…");
        assert_eq!(preview("ab cd", 5), "ab cd");
        assert_eq!(preview("日本語のテキスト", 4), "日本語…");
    }

    #[test]
    fn columns_align_on_the_widest_key() {
        let rows = vec![
            ("a".to_owned(), "1".to_owned()),
            ("long key".to_owned(), "2".to_owned()),
        ];
        assert_eq!(aligned(&rows), "a         1\nlong key  2\n");
    }

    #[test]
    fn plain_style_never_colours() {
        assert_eq!(Style::plain().paint(Color::Red, "x"), "x");
    }
}
