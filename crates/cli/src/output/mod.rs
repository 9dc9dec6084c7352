//! What a command writes: terminal output (colour as `--color`,
//! `NO_COLOR` and `CLICOLOR_FORCE` say, aligned columns, short previews, JSON documents,
//! error chains), and whole files written atomically.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, IsTerminal, Write};
use std::sync::OnceLock;

mod width;

pub use width::{
    aligned, char_width, column_width, display_width, fit, pad_end, pad_start, stdout_columns,
    truncate,
};

/// A count with thousands separators (`31,315`): every number a person
/// reads in a report is printed with it.
pub use musepi_session_model::json::thousands;

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

/// `--color`: when to colour what musepi prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorWhen {
    /// On a terminal, unless `NO_COLOR` is set (a `CLICOLOR_FORCE` other
    /// than `0` colours anyway, `CLICOLOR=0` never).
    #[default]
    Auto,
    /// Always, terminal or not.
    Always,
    /// Never.
    Never,
}

/// The `--color` of this run, set once the line is read.
static COLOR_WHEN: OnceLock<ColorWhen> = OnceLock::new();

/// Sets the `--color` every [`Style`] follows from now on (the first call
/// wins: the command line is read once).
pub fn set_color_when(when: ColorWhen) {
    let _ = COLOR_WHEN.set(when);
}

/// Whether to colour a stream: `--color always` and `never` decide alone;
/// `auto` colours a terminal, except that a non-empty `NO_COLOR` never
/// colours, then a `CLICOLOR_FORCE` other than empty or `0` always does,
/// then `CLICOLOR=0` never does. `env` reads a variable.
pub fn wants_color(
    when: ColorWhen,
    is_terminal: bool,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> bool {
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            if env("NO_COLOR").is_some_and(|v| !v.is_empty()) {
                false
            } else if env("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0") {
                true
            } else if env("CLICOLOR").is_some_and(|v| v == "0") {
                false
            } else {
                is_terminal
            }
        }
    }
}

/// Whether to colour one output stream.
#[derive(Debug, Clone, Copy, Default)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Colour as [`wants_color`] decides for a stream that is a terminal
    /// or not, under this run's `--color`.
    pub fn detect(is_terminal: bool) -> Self {
        let when = COLOR_WHEN.get().copied().unwrap_or_default();
        Self {
            color: wants_color(when, is_terminal, |k| std::env::var_os(k)),
        }
    }

    /// Whether this style colours.
    pub fn colors(self) -> bool {
        self.color
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

/// A message as an error line starts it: lowercase, as every message of
/// musepi is, also when it comes from pi's own wording (`Compaction
/// cancelled`, `Summarization failed: …`). Only a capitalised plain word
/// is lowered; a name such as `OpenAI`, `OPENAI_API_KEY` or a path stays
/// as it is.
pub fn lowercase_start(message: &str) -> String {
    let word: &str = message
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or_default();
    let mut chars = word.chars();
    let capitalised = chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && word.len() > 1
        && chars.all(|c| c.is_ascii_lowercase());
    if capitalised {
        let mut out = message[..1].to_ascii_lowercase();
        out.push_str(&message[1..]);
        out
    } else {
        message.to_owned()
    }
}

/// Whether a terminal must not be given `c` as it is: a control character
/// (C0, DEL, C1), a bidirectional control that can reorder what a line
/// shows ("Trojan Source": U+061C, U+200E, U+200F, U+202A–U+202E,
/// U+2066–U+2069), or an invisible format character that can hide text in
/// plain sight: the zero-width space U+200B, the word joiner and invisible
/// operators U+2060–U+2064, the deprecated format characters
/// U+206A–U+206F, the byte order mark U+FEFF, the interlinear annotation
/// characters U+FFF9–U+FFFB and the tag characters U+E0001 and
/// U+E0020–U+E007F (which can carry a whole line of ASCII no terminal
/// shows; the three subdivision flag emoji, the only legitimate use, show
/// their tags escaped after 🏴, deliberately).
///
/// The zero-width non-joiner and joiner (U+200C, U+200D) are kept: Persian
/// and Indic scripts need them to render correctly, and emoji sequences
/// such as 👨‍👩‍👧 are joined by U+200D. Variation selectors and the soft
/// hyphen are kept too: they change how a visible character looks, never
/// what a line says.
///
/// The one classification of both the command line's escaping
/// ([`escape_controls`]) and the terminal UI's stand-ins.
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206f}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{e0001}'
                | '\u{e0020}'..='\u{e007f}'
        )
}

/// `text` as it may reach a terminal on one line: each character
/// [`is_unsafe_char`] names (an escape sequence's ESC, a carriage return, a
/// newline, a tab, any other C0 or C1 control, a bidirectional control, an
/// invisible format character) is written as JSON writes it (`\n`, `\r`,
/// `\t`, `\u001b`, `\u202e`; a character beyond U+FFFF as its UTF-16 pair,
/// `\udb40\udc41`), so what a session holds cannot move the cursor,
/// recolour or clear the screen, reorder a line or hide in it; every other
/// character is kept. Names read from a session (labels, entry types, ids,
/// file names) go through it in human output; JSON output carries them
/// exactly.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_unsafe_char(c) => {
                for unit in c.encode_utf16(&mut [0; 2]) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The lines of a multi-line text from a session or a model (a summary, a
/// handoff document, a prompt) as they may reach a terminal: a line break
/// (`\n`, or `\r\n`) stays a line break, and every other character
/// [`is_unsafe_char`] names, a lone `\r`, a tab, DEL and a bidirectional
/// control included, is escaped on its line as [`escape_controls`]
/// escapes it.
pub fn escaped_lines(text: &str) -> impl Iterator<Item = Cow<'_, str>> {
    text.lines().map(escape_controls)
}

/// A multi-line text with [`escaped_lines`]' rule, its lines joined again.
pub fn escaped_text(text: &str) -> String {
    escaped_lines(text).collect::<Vec<_>>().join("\n")
}

/// Appends the first `max` lines of a multi-line text (a summary, a
/// handoff document) to a report, each indented two spaces and escaped as
/// [`escaped_lines`] escapes it, then a dim `…` line when the text has
/// more: a cut preview always says it was cut.
pub fn push_lines_preview(out: &mut String, text: &str, max: usize, st: Style) {
    let mut lines = escaped_lines(text);
    for l in lines.by_ref().take(max) {
        let _ = writeln!(out, "  {l}");
    }
    if lines.next().is_some() {
        let _ = writeln!(out, "  {}", st.paint(Color::Dim, "…"));
    }
}

/// One line of at most `max` characters: whitespace runs become one space,
/// and a cut text ends with `…`.
pub fn preview(text: &str, max: usize) -> String {
    let mut p = Preview::new(max);
    p.push(text);
    p.finish()
}

/// A [`preview`] of a text given in pieces (the text is their
/// concatenation), which reads each piece only until the preview is full:
/// a message's preview costs its first characters, not its whole text.
#[derive(Debug)]
pub struct Preview {
    /// The text so far, whitespace runs made one space, at most `max + 2`
    /// characters: enough to know whether to cut.
    chars: Vec<char>,
    max: usize,
    /// Whitespace came after the last character kept.
    space: bool,
}

impl Preview {
    /// An empty preview of at most `max` characters.
    pub fn new(max: usize) -> Self {
        Self {
            chars: Vec::with_capacity(max + 2),
            max,
            space: false,
        }
    }

    /// Whether the preview is decided: no further text changes it.
    pub fn is_full(&self) -> bool {
        self.chars.len() > self.max
    }

    /// Adds the next piece of the text, reading it only while the preview
    /// is not full.
    pub fn push(&mut self, piece: &str) {
        for c in piece.chars() {
            if self.is_full() {
                return;
            }
            if c.is_whitespace() {
                self.space = !self.chars.is_empty();
            } else {
                if self.space {
                    self.chars.push(' ');
                    self.space = false;
                }
                self.chars.push(c);
            }
        }
    }

    /// The preview: the text if it fits in `max` characters, else its first
    /// `max - 1` and `…`.
    pub fn finish(mut self) -> String {
        if self.is_full() {
            self.chars.truncate(self.max.saturating_sub(1));
            while self.chars.last() == Some(&' ') {
                self.chars.pop();
            }
            self.chars.push('…');
        }
        self.chars.into_iter().collect()
    }
}

/// Standard output for what a command prints there (a report, a JSON
/// document, the session of `-o -`): once its reader has closed the pipe
/// (`musepi … | head`, or `less` quit early), whatever follows is dropped
/// and the command ends as it would have, quietly, instead of failing with
/// "Broken pipe".
pub struct Stdout {
    inner: io::StdoutLock<'static>,
    closed: bool,
}

/// Standard output, locked, that takes a closed pipe quietly ([`Stdout`]).
pub fn stdout() -> Stdout {
    Stdout {
        inner: io::stdout().lock(),
        closed: false,
    }
}

impl Stdout {
    /// `result`, unless it is the pipe closing: then from now on nothing
    /// more is written, and the write counts as done.
    fn unless_closed<T>(&mut self, result: io::Result<T>, done: T) -> io::Result<T> {
        match result {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(done)
            }
            other => other,
        }
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let written = self.inner.write(buf);
        self.unless_closed(written, buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let flushed = self.inner.flush();
        self.unless_closed(flushed, ())
    }
}

/// Prints `doc` (a document type, or a value) on stdout as one
/// pretty-printed JSON document, ignoring a closed pipe (`musepi … --json
/// | head`).
///
/// Integral floats print as integers (`35870`, not `35870.0`), as in the
/// session files.
pub fn print_json<T: serde::Serialize + ?Sized>(doc: &T) -> io::Result<()> {
    let mut value = serde_json::to_value(doc).map_err(io::Error::other)?;
    musepi_session_model::json::js_numbers(&mut value);
    let mut out = stdout();
    serde_json::to_writer_pretty(&mut out, &value)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Prints text on stdout, ignoring a closed pipe (`musepi … | head`).
pub fn print_text(text: &str) -> io::Result<()> {
    let mut out = stdout();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// The pager a long report goes through, as git chooses it: none when
/// standard output is not a terminal or `--no-pager` was given, else
/// `MUSEPI_PAGER`, then `PAGER`, then `less`; an empty value or `cat`
/// means none. `env` reads a variable.
pub fn pager_command(
    stdout_is_terminal: bool,
    no_pager: bool,
    env: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    if !stdout_is_terminal || no_pager {
        return None;
    }
    let chosen = env("MUSEPI_PAGER")
        .or_else(|| env("PAGER"))
        .unwrap_or_else(|| "less".to_owned());
    let chosen = chosen.trim();
    (!chosen.is_empty() && chosen != "cat").then(|| chosen.to_owned())
}

/// Prints a long report (`plan --show-prompts`) through the pager
/// [`pager_command`] chooses, run by `sh -c` with `LESS=FRX` unless `LESS`
/// is set (so `less` quits when the text fits one screen and keeps the
/// colours), and waits for it; a pager that cannot start, or none, prints
/// the text as [`print_text`] does.
pub fn print_paged(text: &str, no_pager: bool) -> io::Result<()> {
    let Some(pager) = pager_command(io::stdout().is_terminal(), no_pager, |k| {
        std::env::var(k).ok()
    }) else {
        return print_text(text);
    };
    let mut command = std::process::Command::new("sh");
    command
        .args(["-c", &pager])
        .stdin(std::process::Stdio::piped());
    if std::env::var_os("LESS").is_none() {
        command.env("LESS", "FRX");
    }
    let Ok(mut child) = command.spawn() else {
        return print_text(text);
    };
    if let Some(mut stdin) = child.stdin.take() {
        // The reader quitting early (`q` in less) closes the pipe: the
        // rest is dropped, as a closed standard output is.
        let _ = stdin.write_all(text.as_bytes());
    }
    let _ = child.wait();
    Ok(())
}

/// `n` and its noun, singular or plural as `n` asks: `counted(1, "entry",
/// "entries")` is "1 entry", `counted(3, "entry", "entries")` "3 entries".
/// Every count a person reads is worded with it, never "entry(s)".
pub fn counted<N>(n: N, one: &str, many: &str) -> String
where
    N: Copy + std::fmt::Display + PartialEq + From<u8>,
{
    format!("{n} {}", if n == N::from(1) { one } else { many })
}

/// Prints an error and its source chain on stderr:
/// `musepi: error: …` then one `caused by: …` line per source.
pub fn print_error(error: &anyhow::Error) {
    let style = Style::stderr();
    // A message may quote the session (an id, a hook's words): its control
    // characters are escaped, its line breaks kept.
    let mut text = format!(
        "musepi: {} {}\n",
        style.paint(Color::Red, "error:"),
        escaped_text(&lowercase_start(&error.to_string()))
    );
    let mut previous = error.to_string();
    for cause in error.chain().skip(1) {
        let message = cause.to_string();
        // Errors that already print their source (`path: reason`, or the reason
        // inside, as a failed write does) are not repeated.
        if !previous.contains(&message) {
            let _ = writeln!(text, "  caused by: {}", escaped_text(&message));
        }
        previous = message;
    }
    let _ = io::stderr().write_all(text.as_bytes());
}

/// Prints a note on stderr unless quiet, with [`escaped_lines`]' rule: a
/// warning may quote the session or a hook. A spinner on stderr steps
/// aside for it ([`on_stderr`]).
pub fn note(quiet: bool, text: &str) {
    if !quiet {
        let end = if text.ends_with('\n') { "\n" } else { "" };
        on_stderr(|| {
            let _ = writeln!(io::stderr(), "{}{end}", escaped_text(text));
        });
    }
}

/// The spinner drawn on stderr now, if any.
static SPINNER: std::sync::Mutex<Option<indicatif::ProgressBar>> = std::sync::Mutex::new(None);

/// Makes `bar` the spinner that [`on_stderr`] hides while a line is
/// written (`None`: no spinner any more).
pub fn set_spinner(bar: Option<indicatif::ProgressBar>) {
    if let Ok(mut s) = SPINNER.lock() {
        *s = bar;
    }
}

/// Runs `write`, which writes to stderr, with the spinner (if one is
/// drawn) cleared meanwhile and drawn again after, so a line never lands
/// in the middle of the spinner's.
pub fn on_stderr<T>(write: impl FnOnce() -> T) -> T {
    let bar = SPINNER.lock().ok().and_then(|s| s.clone());
    match bar {
        Some(bar) => bar.suspend(write),
        None => write(),
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
pub(crate) mod tests {
    use super::*;

    /// The preview as it was made before [`Preview`]: the whole text split
    /// at whitespace, then cut.
    pub(crate) fn cut_whole(text: &str, max: usize) -> String {
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

    #[test]
    fn a_preview_in_pieces_is_the_preview_of_their_concatenation() {
        let words = [
            "", " ", "  ", "a", "ab ", " cd", "\n\t", "日本", "x y z", "\u{3000}", "…",
        ];
        let mut seed = 7_u64;
        for _ in 0..4_000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let count = usize::try_from(seed >> 59).unwrap_or(0);
            let max = usize::try_from((seed >> 40) % 12).unwrap_or(0);
            let pieces: Vec<&str> = (0..count)
                .map(|i| words[usize::try_from((seed >> (i * 3 % 40)) % 11).unwrap_or(0)])
                .collect();
            let mut p = Preview::new(max);
            for piece in &pieces {
                p.push(piece);
            }
            let whole = pieces.concat();
            assert_eq!(p.finish(), cut_whole(&whole, max), "{pieces:?} at {max}");
            assert_eq!(preview(&whole, max), cut_whole(&whole, max));
        }
    }

    #[test]
    fn previews_are_one_short_line() {
        assert_eq!(preview("  hello\n\n  world  ", 40), "hello world");
        assert_eq!(preview("abcdefghij", 5), "abcd…");
        assert_eq!(preview("ab cd", 5), "ab cd");
        assert_eq!(preview("日本語のテキスト", 4), "日本語…");
    }

    #[test]
    fn columns_align_on_the_widest_key() {
        // (the keys, the table): a wide character takes two columns, a
        // combining mark none.
        let cases: [(&[&str], &str); 3] = [
            (&["a", "long key"], "a         1\nlong key  2\n"),
            (&["日本語", "abc"], "日本語  1\nabc     2\n"),
            (&["ce\u{301}", "abc"], "ce\u{301}   1\nabc  2\n"),
        ];
        for (keys, table) in cases {
            let rows: Vec<(String, String)> = keys
                .iter()
                .zip(["1", "2"])
                .map(|(k, v)| ((*k).to_owned(), v.to_owned()))
                .collect();
            assert_eq!(aligned(&rows), table, "{keys:?}");
        }
    }

    #[test]
    fn display_width_counts_the_columns_a_terminal_shows() {
        for (text, width) in [
            ("", 0),
            ("abc", 3),
            ("日本語", 6),
            ("ｗｉｄｅ", 8),
            ("e\u{301}", 1),
            ("🦀", 2),
            ("👨\u{200d}👩\u{200d}👧", 2),
            ("\x1b[36m日本\x1b[0m x", 6),
            ("a\x1b[1", 1),
        ] {
            assert_eq!(display_width(text), width, "{text:?}");
        }
        assert_eq!(char_width('語'), 2);
        assert_eq!(char_width('\u{301}'), 0);
        assert_eq!(pad_end("日本", 6), "日本  ");
        assert_eq!(pad_start("e\u{301}", 3), "  e\u{301}");
        assert_eq!(pad_end("日本語", 2), "日本語");
    }

    #[test]
    fn a_column_is_as_wide_as_its_widest_cell_and_at_least_its_minimum() {
        assert_eq!(column_width(["ab", "日本語", "\x1b[36mabcd\x1b[0m"], 0), 6);
        assert_eq!(column_width(["ab"], 4), 4);
        assert_eq!(column_width(Vec::<String>::new(), 8), 8);
    }

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(
            escape_controls("a\x1b[31mb\r\n\tc\u{7}\u{9b}2J"),
            "a\\u001b[31mb\\r\\n\\tc\\u0007\\u009b2J"
        );
        assert!(matches!(
            escape_controls("plain, 日本語 🦀 \\n"),
            Cow::Borrowed("plain, 日本語 🦀 \\n")
        ));
    }

    #[test]
    fn bidirectional_and_invisible_format_characters_are_escaped() {
        // "Trojan Source": an override and isolates reorder what a line shows.
        assert_eq!(
            escape_controls("if x \u{202e}} \u{2066}// admin\u{2069} {\u{202c}"),
            "if x \\u202e} \\u2066// admin\\u2069 {\\u202c"
        );
        for (c, shown) in [
            ('\u{061c}', "\\u061c"),
            ('\u{200b}', "\\u200b"),
            ('\u{200e}', "\\u200e"),
            ('\u{200f}', "\\u200f"),
            ('\u{202a}', "\\u202a"),
            ('\u{202b}', "\\u202b"),
            ('\u{202d}', "\\u202d"),
            ('\u{2060}', "\\u2060"),
            ('\u{2064}', "\\u2064"),
            ('\u{2067}', "\\u2067"),
            ('\u{2068}', "\\u2068"),
            ('\u{206f}', "\\u206f"),
            ('\u{feff}', "\\ufeff"),
            ('\u{fffb}', "\\ufffb"),
            ('\u{e0001}', "\\udb40\\udc01"),
            ('\u{e0041}', "\\udb40\\udc41"),
            ('\u{e007f}', "\\udb40\\udc7f"),
        ] {
            assert!(is_unsafe_char(c), "{c:?}");
            assert_eq!(escape_controls(&format!("a{c}b")), format!("a{shown}b"));
        }
        let lines: Vec<_> = escaped_lines("one\u{202e}\ntwo\u{200f}").collect();
        assert_eq!(lines, ["one\\u202e", "two\\u200f"]);
    }

    #[test]
    fn joiners_and_emoji_are_kept_as_they_are() {
        // A family (U+200D joins it), a flag, a keycap and a heart with
        // their variation selectors, Persian with a non-joiner, a soft
        // hyphen, right-to-left text without any control.
        let text = "👨\u{200d}👩\u{200d}👧 🇫🇷 1\u{fe0f}\u{20e3} ❤\u{fe0f} \
                    می\u{200c}خواهم co\u{ad}operate שלום";
        assert!(!text.chars().any(is_unsafe_char));
        assert!(matches!(escape_controls(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn multi_line_text_keeps_its_line_breaks_and_escapes_the_rest() {
        let lines: Vec<_> =
            escaped_lines("one\r\ntwo\x1b[2J\rthree\n\tfour\u{7f}\u{85}\n\nlast").collect();
        assert_eq!(
            lines,
            [
                "one",
                "two\\u001b[2J\\rthree",
                "\\tfour\\u007f\\u0085",
                "",
                "last"
            ]
        );
    }

    #[test]
    fn a_cut_lines_preview_ends_with_an_ellipsis_line() {
        let preview = |text: &str, max: usize| {
            let mut out = String::new();
            push_lines_preview(&mut out, text, max, Style::plain());
            out
        };
        assert_eq!(preview("a\nb\x1b\nc", 2), "  a\n  b\\u001b\n  …\n");
        assert_eq!(preview("a\nb\n", 2), "  a\n  b\n");
        assert_eq!(preview("", 2), "");
        let painted = {
            let mut out = String::new();
            push_lines_preview(&mut out, "a\nb", 1, Style { color: true });
            out
        };
        assert_eq!(painted, "  a\n  \x1b[2m…\x1b[0m\n");
    }

    #[test]
    fn painted_keys_align_as_they_show() {
        let st = Style { color: true };
        let rows = vec![
            ("labels".to_owned(), "1".to_owned()),
            (
                format!("  {}", st.paint(Color::Cyan, "00000001")),
                "x".to_owned(),
            ),
        ];
        assert_eq!(
            aligned(&rows),
            "labels      1\n  \x1b[36m00000001\x1b[0m  x\n"
        );
        assert_eq!(display_width(&st.paint(Color::Green, "◀ leaf")), 6);
    }

    #[test]
    fn plain_style_never_colours() {
        assert_eq!(Style::plain().paint(Color::Red, "x"), "x");
    }
}
