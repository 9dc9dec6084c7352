//! Text helpers of the view: terminal-safe characters, wrapping and
//! cutting to a number of columns (measured by [`display_width`], as
//! every aligned column the command line prints), previews and numbers.

pub use crate::output::truncate;
use crate::output::{char_width, display_width, is_unsafe_char};

/// Columns a tab becomes.
const TAB: &str = "    ";

/// Replaces what a terminal would interpret or hide (escape sequences,
/// other control characters, bidirectional controls, invisible format
/// characters: what [`is_unsafe_char`] names) with the visible stand-in
/// `�`; tabs become spaces, carriage returns are dropped, newlines kept.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str(TAB),
            '\r' => {}
            c if is_unsafe_char(c) => out.push('�'),
            c => out.push(c),
        }
    }
    out
}

/// Wraps `text` into lines of at most `width` columns: at spaces where it
/// can, inside words where it must. Every input line gives at least one
/// output line; a character wider than `width` gets a line of its own.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = Vec::new();
    for line in sanitize(text).split('\n') {
        wrap_line(line.trim_end(), width, &mut out);
    }
    out
}

fn wrap_line(line: &str, width: usize, out: &mut Vec<String>) {
    if display_width(line) <= width {
        out.push(line.to_owned());
        return;
    }
    let start = out.len();
    let mut current = String::new();
    let mut current_width = 0;
    // The byte position in `current` after its last space, for word breaks.
    let mut last_space: Option<usize> = None;
    for c in line.chars() {
        let w = char_width(c);
        if current_width + w > width && !current.is_empty() {
            match last_space {
                _ if c == ' ' => out.push(std::mem::take(&mut current).trim_end().to_owned()),
                Some(at) if !current[..at].trim().is_empty() => {
                    let rest = current.split_off(at);
                    out.push(current.trim_end().to_owned());
                    current = rest;
                }
                _ => out.push(std::mem::take(&mut current)),
            }
            current_width = display_width(&current);
            last_space = None;
            if c == ' ' {
                continue;
            }
        }
        if c == ' ' && current.is_empty() && out.len() > start {
            // No leading space on a continuation line.
            continue;
        }
        current.push(c);
        current_width += w;
        if c == ' ' {
            last_space = Some(current.len());
        }
    }
    out.push(current);
}

/// One line of at most `max` characters: whitespace runs become one
/// space, a cut text ends with `…`.
pub fn one_line(text: &str, max: usize) -> String {
    crate::output::preview(&sanitize(text), max)
}

/// Lines of a text (0 for an empty one).
pub fn line_count(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        text.lines().count().max(1)
    }
}

/// A count with thousands separators: `41,234`.
pub use musepi_session_model::json::thousands;

/// Byte ranges of `needle` in `hay`, ASCII case-insensitively; ranges
/// always fall on character boundaries.
pub fn find_all(hay: &str, needle: &str) -> Vec<(usize, usize)> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let mut out = Vec::new();
    if n.is_empty() || n.len() > h.len() {
        return out;
    }
    let mut i = 0;
    while i + n.len() <= h.len() {
        if h[i..i + n.len()].eq_ignore_ascii_case(n) && hay.is_char_boundary(i) {
            out.push((i, i + n.len()));
            i += n.len();
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_spaces_and_inside_long_words() {
        assert_eq!(wrap("one two three", 7), ["one two", "three"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("a\n\nb", 10), ["a", "", "b"]);
        assert_eq!(wrap("", 10), [""]);
    }

    #[test]
    fn wide_characters_never_loop() {
        assert_eq!(wrap("📷📷", 1), ["📷", "📷"]);
        assert_eq!(wrap("x📷", 2), ["x", "📷"]);
    }

    #[test]
    fn control_characters_are_made_visible() {
        assert_eq!(sanitize("a\x1b[31mb\r\n\tc"), "a�[31mb\n    c");
    }

    #[test]
    fn bidirectional_and_invisible_characters_are_made_visible() {
        assert_eq!(
            sanitize("a\u{202e}b\u{2066}c\u{2069}\u{200b}d\u{feff}\u{e0041}"),
            "a�b�c��d��"
        );
        let family = "👨\u{200d}👩\u{200d}👧 می\u{200c}خواهم";
        assert_eq!(sanitize(family), family);
    }

    #[test]
    fn truncates_to_width() {
        for (text, width, shown) in [("abcdef", 4, "abc…"), ("abc", 4, "abc"), ("abc", 0, "")] {
            assert_eq!(truncate(text, width), shown, "{text:?} in {width}");
        }
    }

    #[test]
    fn finds_case_insensitively() {
        assert_eq!(find_all("Foo foo FOO", "foo"), [(0, 3), (4, 7), (8, 11)]);
        assert_eq!(find_all("café", "É"), []);
        assert_eq!(find_all("abc", ""), []);
    }
}
