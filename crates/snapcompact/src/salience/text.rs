//! Reading text for salience: where it splits into pieces, what a piece is
//! worth, which lines of tool output look like errors, and shortening that
//! keeps the head of a text and breaks at whitespace.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::LazyLock;

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
/// after `.`, `!` or `?` followed by whitespace. A piece longer than `max`
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
        while i < text.len() {
            let b = bytes[i];
            if b == b'\n' {
                end = i;
                break;
            }
            if sentences
                && matches!(b, b'.' | b'!' | b'?')
                && bytes.get(i + 1).is_some_and(u8::is_ascii_whitespace)
            {
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

/// Words that state a constraint or a preference.
const CONSTRAINT_WORDS: &[&str] = &[
    "must",
    "never",
    "always",
    "don't",
    "dont",
    "do not",
    "should",
    "shouldn't",
    "cannot",
    "can't",
    "required",
    "requires",
    "require",
    "avoid",
    "instead",
    "make sure",
    "ensure",
    "prefer",
    "keep",
    "no more than",
    "at most",
    "at least",
];

/// Words that state a decision or a cause.
const DECISION_WORDS: &[&str] = &[
    "decided",
    "decide",
    "decision",
    "chose",
    "choose",
    "going with",
    "we'll",
    "i'll use",
    "let's use",
    "plan is",
    "because",
    "root cause",
    "the fix",
    "the problem",
    "the issue",
    "turns out",
    "caused by",
    "so that",
    "conclusion",
];

/// Words that report trouble.
const TROUBLE_WORDS: &[&str] = &[
    "error",
    "panic",
    "failed",
    "fails",
    "failing",
    "failure",
    "exception",
    "crash",
    "bug",
    "broken",
    "regression",
    "timeout",
    "timed out",
    "flaky",
];

/// Openings of filler sentences that carry no fact by themselves.
const FILLER_OPENINGS: &[&str] = &[
    "let me",
    "now let me",
    "let's",
    "now i",
    "now,",
    "perfect",
    "great",
    "good",
    "okay",
    "ok,",
    "alright",
    "excellent",
    "done",
    "i'll",
    "i will",
    "first,",
    "next,",
];

/// The words of a lowercase text (letters, digits and apostrophes), for
/// finding words and phrases without scanning the text once per word.
struct Words<'t>(Vec<&'t str>);

impl<'t> Words<'t> {
    fn new(lower: &'t str) -> Self {
        Self(
            lower
                .split(|c: char| !(c.is_alphanumeric() || c == '\''))
                .filter(|w| !w.is_empty())
                .collect(),
        )
    }

    /// Whether any of `phrases` occurs: one look-up per word.
    fn any(&self, phrases: &Phrases) -> bool {
        let words = &self.0;
        words.iter().enumerate().any(|(i, w)| {
            phrases.by_first.get(w).is_some_and(|rests| {
                rests.iter().any(|rest| {
                    rest.iter()
                        .enumerate()
                        .all(|(k, r)| words.get(i + 1 + k) == Some(r))
                })
            })
        })
    }
}

/// A list of words and phrases by their first word.
struct Phrases {
    by_first: HashMap<&'static str, Vec<Vec<&'static str>>>,
}

impl Phrases {
    fn new(list: &[&'static str]) -> Self {
        let mut by_first: HashMap<&'static str, Vec<Vec<&'static str>>> = HashMap::new();
        for phrase in list {
            let mut parts = phrase.split(' ');
            if let Some(first) = parts.next() {
                by_first.entry(first).or_default().push(parts.collect());
            }
        }
        Self { by_first }
    }
}

static CONSTRAINTS: LazyLock<Phrases> = LazyLock::new(|| Phrases::new(CONSTRAINT_WORDS));
static DECISIONS: LazyLock<Phrases> = LazyLock::new(|| Phrases::new(DECISION_WORDS));
static TROUBLE: LazyLock<Phrases> = LazyLock::new(|| Phrases::new(TROUBLE_WORDS));
/// Words that report a failure wherever they stand in a line of output; a
/// bare "error" is too common in code and prose, so it counts only as
/// `error:`, `error[` or `error TS…`.
static FAILURE: LazyLock<Phrases> = LazyLock::new(|| {
    Phrases::new(&[
        "panic",
        "panicked",
        "failed",
        "fail",
        "exception",
        "traceback",
        "fatal",
        "segmentation fault",
    ])
});

fn any_word(lower: &str, words: &Phrases) -> bool {
    Words::new(lower).any(words)
}

/// Whether a piece states a constraint or a decision (for user text).
pub(crate) fn states_constraint(piece: &str) -> bool {
    let lower = piece.to_lowercase();
    let words = Words::new(&lower);
    words.any(&CONSTRAINTS) || words.any(&DECISIONS)
}

/// What a token looks like.
fn token_kinds(token: &str) -> (bool, bool, bool, usize) {
    let t = token.trim_matches(|c: char| {
        matches!(
            c,
            '(' | ')' | '[' | ']' | '{' | '}' | ',' | ';' | ':' | '"' | '\'' | '.' | '!' | '?'
        )
    });
    // A number is mostly digits: `2500`, `1.4s`, `v0.14.2`, not a hex color
    // or an id with a few digits in it.
    let alnum = t.chars().filter(|c| c.is_alphanumeric()).count();
    let mut digits = t.chars().filter(char::is_ascii_digit).count();
    if t.starts_with('#') || digits * 2 < alnum {
        digits = digits.min(2);
    }
    let path = (t.contains('/') && t.len() > 2 && t.chars().any(char::is_alphabetic))
        || t.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_lowercase())
                && stem.chars().any(char::is_alphabetic)
                && !stem.ends_with('.')
        });
    let ident = t.contains("::")
        || t.contains("()")
        || (t.contains('_') && t.chars().any(char::is_alphabetic))
        || (t.len() > 3
            && t.chars().next().is_some_and(char::is_lowercase)
            && t.chars().skip(1).any(char::is_uppercase));
    let url = t.starts_with("http://") || t.starts_with("https://");
    (path || url, ident, t.contains('`'), digits)
}

/// What a piece is worth to a reader who cannot see the rest: numbers,
/// paths, identifiers, constraints, decisions and trouble raise it;
/// short filler lowers it.
pub(crate) fn score(piece: &str) -> i32 {
    let mut s = 0i32;
    let (mut numbers, mut small, mut paths, mut idents) = (0, 0, 0, 0);
    for token in piece.split_whitespace() {
        let (path, ident, _, digits) = token_kinds(token);
        if digits >= 3 {
            numbers += 1;
        } else if digits > 0 {
            small += 1;
        }
        paths += i32::from(path);
        idents += i32::from(ident);
    }
    s += match numbers {
        0 => i32::from(small > 0),
        1 => 4,
        _ => 6,
    };
    s += match paths {
        0 => 0,
        1 => 4,
        _ => 5,
    };
    s += idents.min(2) * 2;
    if piece.matches('`').count() >= 2 {
        s += 2;
    }
    let lower = piece.to_lowercase();
    let words = Words::new(&lower);
    let specific = numbers + paths + idents > 0;
    let mut stated = false;
    if words.any(&CONSTRAINTS) {
        s += 4;
        stated = true;
    }
    if words.any(&DECISIONS) {
        s += 4;
        stated = true;
    }
    if words.any(&TROUBLE) {
        s += 3;
        stated = true;
    }
    // A statement about something specific is a fact.
    if specific && stated {
        s += 3;
    }
    let units = len16(piece);
    if units < 16 {
        s -= 4;
    } else if units < 60 && !specific && FILLER_OPENINGS.iter().any(|f| lower.starts_with(f)) {
        s -= 3;
    }
    if units > 300 {
        s -= 2;
    }
    s
}

/// Whether a line of tool output looks like an error: error, panic,
/// failed, exception, fatal or traceback words, a non-zero exit code, or a
/// compiler code such as `E0308` or `TS2345`.
pub(crate) fn is_error_line(line: &str) -> bool {
    let lower = line.to_lowercase();
    let trimmed = lower.trim();
    if trimmed.is_empty() {
        return false;
    }
    for quiet in [
        "0 errors",
        "no errors",
        "0 failed",
        "error(s): 0",
        "errors: 0",
    ] {
        if trimmed.contains(quiet) && !trimmed.contains("error:") {
            return false;
        }
    }
    if any_word(&lower, &FAILURE)
        || lower.contains("err!")
        || lower.contains("error:")
        || lower.contains("error[")
        || lower.contains("error ts")
    {
        return true;
    }
    if nonzero_exit(&lower) {
        return true;
    }
    line.split(|c: char| !c.is_ascii_alphanumeric())
        .any(compiler_code)
}

/// `exit code 2`, `exit status 1`, `exited with code 127`.
fn nonzero_exit(lower: &str) -> bool {
    for key in ["exit code", "exit status", "exited with code", "exit code:"] {
        let mut from = 0usize;
        while let Some(i) = lower[from..].find(key) {
            let rest = lower[from + i + key.len()..].trim_start_matches([' ', ':', '=']);
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if !digits.is_empty() && !digits.trim_start_matches('0').is_empty() {
                return true;
            }
            from += i + key.len();
        }
    }
    false
}

/// `E0308`, `TS2345`: one or two capitals then four digits.
fn compiler_code(token: &str) -> bool {
    let letters = token.chars().take_while(char::is_ascii_uppercase).count();
    let digits = token.len() - letters;
    (1..=2).contains(&letters)
        && digits == 4
        && token[letters..].chars().all(|c| c.is_ascii_digit())
        && (token.starts_with('E') || token.starts_with("TS"))
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
    fn facts_outscore_filler() {
        let fact = "The retry budget must stay at 2500 ms in `src/queue.rs` because CI is slow.";
        assert!(score(fact) > 15, "{}", score(fact));
        assert!(score("Let me check that.") < 0);
        assert!(score("Reading the file now to see what it does.") < score(fact));
    }

    #[test]
    fn error_lines_are_recognised() {
        for line in [
            "error[E0308]: mismatched types",
            "thread 'main' panicked at src/lib.rs:3:5",
            "test result: FAILED. 3 passed; 1 failed",
            "Command exited with code 2",
            "src/a.ts(3,1): TS2345 argument mismatch",
            "Traceback (most recent call last):",
        ] {
            assert!(is_error_line(line), "{line}");
        }
        for line in [
            "test result: ok. 12 passed; 0 failed",
            "Compiling musepi v0.1.0",
            "exit code 0",
            "Found 0 errors.",
            "E123 is not a code",
            "if (error) return null;",
        ] {
            assert!(!is_error_line(line), "{line}");
        }
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

    #[test]
    fn constraints_are_recognised() {
        assert!(states_constraint("Never edit the vendored folder."));
        assert!(states_constraint("We decided to keep the API."));
        assert!(!states_constraint("Here is the log."));
    }
}
