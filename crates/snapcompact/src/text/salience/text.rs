//! Cutting text for salience: where it splits into pieces, the form of a
//! piece (for finding what repeats), and shortening that keeps the head
//! of a text and breaks at whitespace. What a piece is worth is in
//! `score`.

use std::ops::Range;

use crate::util::{head_units, len16};

/// A piece of a text and the separator in front of it, as byte ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Span {
    /// The whitespace between the previous piece and this one.
    pub sep: Range<usize>,
    /// The piece.
    pub text: Range<usize>,
}

/// Splits prose into sentences and lines: a piece ends at a line break or
/// after `.`, `!` or `?` followed by whitespace, outside backticks (a
/// `.` followed by a word in lowercase or a flag ends none). A piece longer than `max`
/// UTF-16 units is split again at whitespace. Whitespace between pieces is
/// kept as their separators, so joining every piece with its separator
/// gives the trimmed text back.
pub(crate) fn split_prose(text: &str, max: usize) -> Vec<Span> {
    split(text, max, true)
}

/// Splits text into its lines (a line longer than `max` UTF-16 units is
/// split again at whitespace); blank lines fold into the separators.
pub(crate) fn split_lines(text: &str, max: usize) -> Vec<Span> {
    split(text, max, false)
}

fn split(text: &str, max: usize, sentences: bool) -> Vec<Span> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut pos = 0usize;
    let mut sep_start = 0usize;
    while pos < text.len() {
        // Skip the separator.
        let start = pos + (text[pos..].len() - text[pos..].trim_start().len());
        if start >= text.len() {
            break;
        }
        let mut end = text.len();
        let mut i = start;
        let mut in_code = false;
        while i < text.len() {
            let b = bytes[i];
            if b == b'\n' {
                end = i;
                break;
            }
            in_code ^= b == b'`';
            if sentences && !in_code && ends_sentence(bytes, i) {
                end = i + 1;
                break;
            }
            i += 1;
        }
        let piece = text[start..end].trim_end();
        let piece_end = start + piece.len();
        for chunk in chunks(&text[start..piece_end], max) {
            let chunk_start = start + chunk.start;
            out.push(Span {
                sep: sep_start..chunk_start,
                text: chunk_start..start + chunk.end,
            });
            sep_start = start + chunk.end;
        }
        pos = end.max(piece_end);
        if pos == start {
            pos += 1;
        }
    }
    out
}

/// Whether the `.`, `!` or `?` at `i` ends a sentence: whitespace follows
/// it on the same line, and after a `.` the next word does not start in
/// lowercase (`e.g. this`, `./x/... -run`, an ellipsis that goes on).
fn ends_sentence(bytes: &[u8], i: usize) -> bool {
    if !matches!(bytes[i], b'.' | b'!' | b'?')
        || !bytes.get(i + 1).is_some_and(u8::is_ascii_whitespace)
    {
        return false;
    }
    if bytes[i] != b'.' {
        return true;
    }
    let next = bytes[i + 1..]
        .iter()
        .find(|b| **b == b'\n' || !b.is_ascii_whitespace());
    !next.is_some_and(|b| b.is_ascii_lowercase() || *b == b'-')
}

/// Cuts `piece` into chunks of at most `max` UTF-16 units at whitespace
/// (a word longer than `max` is cut hard), as ranges relative to `piece`.
fn chunks(piece: &str, max: usize) -> Vec<Range<usize>> {
    let max = max.max(8);
    let mut out = Vec::new();
    let mut start = 0usize;
    while start < piece.len() {
        let rest = &piece[start..];
        if len16(rest) <= max {
            out.push(start..piece.len());
            break;
        }
        let head = head_units(rest, max);
        let cut = head
            .rfind(char::is_whitespace)
            .filter(|&c| c > 0)
            .unwrap_or(
                head.len()
                    .max(rest.chars().next().map_or(1, char::len_utf8)),
            );
        out.push(start..start + cut);
        let next = &rest[cut..];
        start += cut + (next.len() - next.trim_start().len());
    }
    out
}

/// The first `max` UTF-16 units of `text`, cut back to whitespace when
/// there is some in the last third, with `…` appended when anything was
/// cut. The result, `…` included, is at most `max + 1` units long.
pub(crate) fn shorten_head(text: &str, max: usize) -> (String, bool) {
    if len16(text) <= max {
        return (text.to_owned(), false);
    }
    let head = head_units(text, max);
    let cut = head
        .rfind(char::is_whitespace)
        .filter(|&c| c * 3 >= head.len() * 2)
        .unwrap_or(head.len());
    (format!("{}…", head[..cut].trim_end()), true)
}

/// The form of a piece, for finding what repeats: lowercase, every run of
/// digits as `#`, every quoted or backticked span as `q` and every word
/// that names a file as `p`.
pub(crate) fn shape(piece: &str) -> String {
    let mut masked = String::with_capacity(piece.len());
    let mut quote: Option<char> = None;
    let mut digits = false;
    for c in piece.chars() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        if c.is_ascii_digit() {
            if !digits {
                masked.push('#');
            }
            digits = true;
            continue;
        }
        digits = false;
        if matches!(c, '\'' | '"' | '`') {
            // An apostrophe inside a word is not a quote.
            let in_word = c == '\'' && masked.chars().last().is_some_and(char::is_alphanumeric);
            if !in_word {
                quote = Some(c);
                masked.push('q');
                continue;
            }
        }
        masked.extend(c.to_lowercase());
    }
    let words: Vec<&str> = masked
        .split_whitespace()
        .map(|w| if names_file(w) { "p" } else { w })
        .collect();
    words.join(" ")
}

/// `src/a.rs:3`, `main.ts(1,2)`: a folder, or a name with a short
/// extension of letters.
fn names_file(word: &str) -> bool {
    if word.contains('/') {
        return true;
    }
    let bytes = word.as_bytes();
    word.char_indices().any(|(i, c)| {
        c == '.' && i > 0 && bytes[i - 1].is_ascii_alphanumeric() && {
            let ext = bytes[i + 1..]
                .iter()
                .take_while(|b| b.is_ascii_lowercase())
                .count();
            (1..=5).contains(&ext)
                && bytes
                    .get(i + 1 + ext)
                    .is_none_or(|b| !b.is_ascii_alphanumeric())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str, max: usize) -> Vec<&str> {
        split_prose(text, max)
            .into_iter()
            .map(|s| &text[s.text])
            .collect()
    }

    #[test]
    fn prose_splits_at_sentence_ends_and_lines_and_keeps_separators() {
        let text = "First one. Second one!\nThird line? yes\n\n  Fourth";
        assert_eq!(
            pieces(text, 400),
            ["First one.", "Second one!", "Third line?", "yes", "Fourth"]
        );
        let spans = split_prose(text, 400);
        let rebuilt: String = spans
            .iter()
            .flat_map(|s| [&text[s.sep.clone()], &text[s.text.clone()]])
            .collect();
        assert_eq!(rebuilt, text);
    }

    #[test]
    fn decimals_and_paths_do_not_end_a_sentence() {
        assert_eq!(
            pieces("Set it to 2.5 in src/main.rs now. Done.", 400),
            ["Set it to 2.5 in src/main.rs now.", "Done."]
        );
    }

    #[test]
    fn code_abbreviations_and_ellipses_that_go_on_do_not_end_a_sentence() {
        assert_eq!(
            pieces(
                "Run `go test ./pkg/... -run TestX` first. Use e.g. the cache. Then go test ./a/... -v to see. Wait... Fine.",
                400
            ),
            [
                "Run `go test ./pkg/... -run TestX` first.",
                "Use e.g. the cache.",
                "Then go test ./a/... -v to see.",
                "Wait...",
                "Fine."
            ]
        );
    }

    #[test]
    fn long_pieces_split_at_whitespace() {
        let text = "alpha beta gamma delta epsilon";
        assert_eq!(pieces(text, 12), ["alpha beta", "gamma delta", "epsilon"]);
        assert_eq!(pieces(&"x".repeat(20), 8), ["xxxxxxxx", "xxxxxxxx", "xxxx"]);
    }

    #[test]
    fn lines_keep_sentences_together() {
        let text = "a. b.\n\nc";
        let lines: Vec<&str> = split_lines(text, 100)
            .into_iter()
            .map(|s| &text[s.text])
            .collect();
        assert_eq!(lines, ["a. b.", "c"]);
    }

    #[test]
    fn heads_are_cut_at_whitespace_and_marked() {
        assert_eq!(shorten_head("short", 10), ("short".to_owned(), false));
        assert_eq!(
            shorten_head("cargo test --workspace", 15),
            ("cargo test…".to_owned(), true)
        );
        assert_eq!(
            shorten_head("cargo test --workspace --all-features", 20),
            ("cargo test --workspa…".to_owned(), true)
        );
        assert_eq!(shorten_head("abcdefghij", 4), ("abcd…".to_owned(), true));
    }

    #[test]
    fn shapes_mask_numbers_and_quotes() {
        assert_eq!(
            shape("error TS2307: Cannot find module './a.js' in 3 places"),
            shape("error TS2339: Cannot find module '../b/c.js' in 12 places")
        );
        assert_eq!(shape("Don't stop at 12"), "don't stop at #");
        assert_eq!(
            shape("src/a.ts(1,2): error TS2307"),
            shape("main.ts(3,4): error TS2339")
        );
        assert_ne!(shape("Cannot find module"), shape("Cannot load module"));
    }
}
