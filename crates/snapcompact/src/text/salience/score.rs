//! What a piece of text is worth to a reader who cannot see the rest, and
//! whether it states a fact: something specific (a value, a path, an
//! identifier, a name, a quoted text, a command) said as a constraint, a
//! decision, trouble, or a value it has. Also which lines of tool output
//! look like errors, and which read as statements rather than code.

use std::sync::LazyLock;

use rustc_hash::FxHashSet;

use super::lexicon::{
    CONSTRAINTS, COUNTERS, DECISIONS, DECLARATIONS, FAILURE, FILLER_OPENINGS, FIRM, PROGRAMS,
    TROUBLE_STEMS, Words,
};
use crate::util::len16;

/// Whether a piece states a constraint or a decision (for user text).
pub(crate) fn states_constraint(piece: &str) -> bool {
    let lower = piece.to_lowercase();
    let words = Words::new(&lower);
    words.any(&CONSTRAINTS) || words.any(&DECISIONS)
}

/// What the tokens of a piece hold.
#[derive(Debug, Default)]
struct Specifics {
    /// Numbers of two digits or more (or with a decimal point) that are
    /// not counts of steps or lines: values.
    values: i32,
    /// Other numbers.
    small: i32,
    paths: i32,
    /// `snake_case`, `camelCase`, `PascalCase` compounds, `a::b`, `f()`,
    /// `--flags`, and codes in capitals (`EPIPE`, `HTTP`).
    idents: i32,
    /// Capitalised words after the first: names of things.
    names: i32,
    /// A quoted text of three characters or more.
    quoted: bool,
    /// A command line in backticks.
    command: bool,
}

impl Specifics {
    fn any(&self) -> bool {
        self.values + self.paths + self.idents + self.names > 0 || self.quoted || self.command
    }
}

/// A token without the punctuation around it.
fn bare(token: &str) -> &str {
    token.trim_matches(|c: char| {
        matches!(
            c,
            '(' | ')'
                | '['
                | ']'
                | '{'
                | '}'
                | ','
                | ';'
                | ':'
                | '"'
                | '\''
                | '.'
                | '!'
                | '?'
                | '`'
        )
    })
}

fn is_path(t: &str) -> bool {
    (t.contains('/') && t.len() > 2 && t.chars().any(char::is_alphabetic))
        || t.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_lowercase())
                && stem.chars().any(char::is_alphabetic)
                && !stem.ends_with('.')
        })
}

fn is_ident(t: &str) -> bool {
    let letters = t.chars().filter(char::is_ascii_alphabetic).count();
    let upper = t.chars().filter(char::is_ascii_uppercase).count();
    let lower_then_upper = t
        .as_bytes()
        .windows(2)
        .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
    t.contains("::")
        || t.contains("()")
        || (t.contains('_') && letters > 0)
        || (t.len() > 3 && lower_then_upper)
        || (t.starts_with('-') && t.trim_start_matches('-').starts_with(|c: char| c.is_ascii_alphabetic()) && t.len() > 2)
        // Codes and constants in capitals: `EPIPE`, `SQLITE_BUSY`, `E0502`.
        || (upper >= 2 && upper * 2 >= letters && t.len() >= 3 && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// Whether a backticked span is a command line: a program (or a path to
/// one, or `VAR=value` then a program) and its arguments.
fn is_command(span: &str) -> bool {
    let mut words = span.split_whitespace().skip_while(|w| {
        w.contains('=')
            && w.split('=')
                .next()
                .is_some_and(|k| k.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
    });
    let Some(program) = words.next() else {
        return false;
    };
    let rest: Vec<&str> = words.collect();
    if rest.is_empty() {
        return false;
    }
    is_program(program)
        || program.starts_with("./")
        || (program
            .chars()
            .all(|c| c.is_ascii_lowercase() || c == '-' || c.is_ascii_digit())
            && rest.iter().any(|w| w.starts_with('-')))
}

fn specifics(piece: &str) -> Specifics {
    let mut s = Specifics::default();
    let mut previous = "";
    for (i, token) in piece.split_whitespace().enumerate() {
        let t = bare(token);
        let alnum = t.chars().filter(|c| c.is_alphanumeric()).count();
        let digits = t.chars().filter(char::is_ascii_digit).count();
        // A number is mostly digits: `2500`, `1.4s`, `v0.14.2`, not a hex
        // color or an id with a few digits in it.
        let number = digits > 0 && digits * 2 >= alnum && !t.starts_with('#');
        if number {
            let counter = COUNTERS.iter().any(|c| c.eq_ignore_ascii_case(previous));
            if !counter && (digits >= 2 || t.contains('.')) {
                s.values += 1;
            } else {
                s.small += 1;
            }
        } else if digits > 0 {
            s.small += 1;
        }
        let path = is_path(t) || t.starts_with("http://") || t.starts_with("https://");
        s.paths += i32::from(path);
        if !path && !number {
            if is_ident(t) {
                s.idents += 1;
            } else if i > 0
                && t.len() > 1
                && t.starts_with(|c: char| c.is_uppercase())
                && t.chars().skip(1).all(char::is_alphanumeric)
                && !previous.ends_with(['.', '!', '?', ':'])
            {
                s.names += 1;
            }
        }
        previous = t;
    }
    s.quoted = quoted(piece, '"') || quoted(piece, '\'');
    s.command = piece.contains('`') && piece.split('`').skip(1).step_by(2).any(is_command)
        || inline_command(piece);
    s
}

/// Whether `piece` quotes a text of three characters or more between two
/// `quote`s, the first of them at the start or after whitespace (an
/// apostrophe inside a word is not a quote). The quotes pair up in order.
fn quoted(piece: &str, quote: char) -> bool {
    let mut rest = piece;
    while let Some(open) = rest.find(quote) {
        let starts = rest[..open]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        let after = &rest[open + quote.len_utf8()..];
        let Some(close) = after.find(quote) else {
            return false;
        };
        if starts && after[..close].chars().count() >= 3 {
            return true;
        }
        rest = &after[close + quote.len_utf8()..];
    }
    false
}

/// A command line written without backticks: a program followed, within
/// three words, by a flag, a path or a `$VARIABLE` (`go test ./x -v`, not
/// "go through the list").
fn inline_command(piece: &str) -> bool {
    let mut tokens = piece.split_whitespace();
    while let Some(t) = tokens.next() {
        if !is_program(bare(t)) {
            continue;
        }
        if tokens.clone().take(3).any(|a| {
            let a = a.trim_end_matches([',', ';', '.']);
            (a.starts_with('-')
                && a.len() > 1
                && a[1..].starts_with(|c: char| c.is_ascii_alphabetic() || c == '-'))
                || a.starts_with("./")
                || a.starts_with('$')
                || (a.contains('/') && !a.contains("//"))
        }) {
            return true;
        }
    }
    false
}

/// Whether `word` is one of [`PROGRAMS`].
fn is_program(word: &str) -> bool {
    static SET: LazyLock<FxHashSet<&'static str>> =
        LazyLock::new(|| PROGRAMS.iter().copied().collect());
    word.starts_with(|c: char| c.is_ascii_lowercase()) && SET.contains(word)
}

/// What a piece is worth, and whether it states a fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reading {
    pub score: i32,
    /// Something specific said as a constraint, a decision, trouble, a
    /// command, or a value it has.
    pub fact: bool,
}

/// Reads a piece: numbers, paths, identifiers, names, quotes and commands
/// make it specific; constraints, decisions and trouble make it a
/// statement; a value (a number that counts no step or line) and a command
/// are statements by themselves. Short filler scores below zero.
pub(crate) fn read(piece: &str) -> Reading {
    let sp = specifics(piece);
    let mut s = 0i32;
    s += match sp.values {
        0 => i32::from(sp.small > 0),
        1 => 4,
        _ => 6,
    };
    s += match sp.paths {
        0 => 0,
        1 => 4,
        _ => 5,
    };
    s += sp.idents.min(2) * 2 + sp.names.min(2);
    if piece.matches('`').count() >= 2 {
        s += 2;
    }
    if sp.quoted {
        s += 2;
    }
    if sp.command {
        s += 3;
    }
    let lower = piece.to_lowercase();
    let words = Words::new(&lower);
    let specific = sp.any();
    let mut stated = sp.values > 0 || sp.command;
    if words.any(&CONSTRAINTS) {
        s += 4;
        stated = true;
    }
    if words.any(&DECISIONS) {
        s += 4;
        stated = true;
    }
    if words.any_stem(TROUBLE_STEMS) {
        s += 3;
        stated = true;
    }
    // A statement about something specific is a fact, and so is a
    // decision or a rule said as one.
    let fact = (specific && stated) || words.any(&FIRM);
    if fact {
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
    Reading { score: s, fact }
}

/// [`read`]'s score alone.
pub(crate) fn score(piece: &str) -> i32 {
    read(piece).score
}

/// Whether a line of tool output reads as a statement rather than code or
/// data: `key: value` with a value that holds a number, or mostly words
/// and numbers with little code punctuation and no columns aligned with
/// spaces (a row of a table or a listing).
pub(crate) fn reads_as_statement(line: &str) -> bool {
    let line = line
        .trim()
        .trim_start_matches(['*', '-', '#', '>', '|', '•', '→', ' ']);
    if line.is_empty() || line.starts_with("//") && line.contains(['{', ';']) {
        return false;
    }
    // `peak RSS: 1843 MB`, `cursor_ttl = 99`.
    if key_value(line) {
        return true;
    }
    // Columns aligned with spaces: a row of a table or a listing.
    if line.contains("  ") {
        return false;
    }
    let code = line
        .chars()
        .filter(|c| {
            matches!(
                c,
                '{' | '}' | ';' | '=' | '<' | '>' | '(' | ')' | '[' | ']' | '&' | '|'
            )
        })
        .count();
    if code > 3 {
        return false;
    }
    // Dot leaders and rules are no tokens.
    let (mut tokens, mut words, mut numbers) = (0usize, 0usize, 0usize);
    for t in line.split_whitespace() {
        if !t.chars().any(char::is_alphanumeric) {
            continue;
        }
        tokens += 1;
        let w = bare(t);
        if w.len() >= 2
            && w.chars()
                .all(|c| c.is_alphabetic() || c == '\'' || c == '-')
        {
            words += 1;
        }
        let n = w.trim_end_matches(['%', 's']);
        if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.') {
            numbers += 1;
        }
    }
    words >= 3 && words > numbers && (words + numbers) * 3 >= tokens * 2
}

/// `key: value` or `key = value`: a short key of words, a value that holds
/// a digit, and at most a unit after it.
fn key_value(line: &str) -> bool {
    // `name ....... 705 ms`: a leader of dots stands for the colon.
    if let Some(at) = line.find("...")
        && line[..at].ends_with(' ')
    {
        let value = line[at..].trim_start_matches('.');
        return value.starts_with(' ')
            && key_value(&format!("{}: {}", line[..at].trim(), value.trim()));
    }
    let Some(at) = line.find([':', '=']) else {
        return false;
    };
    let (key, value) = (line[..at].trim(), &line[at + 1..]);
    // `a::b` and `key:value` are code.
    if line.as_bytes()[at] == b':' && !value.starts_with(char::is_whitespace) {
        return false;
    }
    let value = value.trim().trim_start_matches('=').trim();
    // A statement of code: `const limit = 10;`, `"size": 3,`.
    if line.ends_with([';', ',', '{', '(', '['])
        || key
            .split_whitespace()
            .next()
            .is_some_and(|w| DECLARATIONS.contains(&w))
    {
        return false;
    }
    let key_words = key.split_whitespace().count();
    (1..=4).contains(&key_words)
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ' '))
        && value.split_whitespace().count() <= 3
        && value
            .split_whitespace()
            .next()
            .is_some_and(|v| v.chars().any(|c| c.is_ascii_digit()))
}

/// Whether a line of tool output looks like an error: error, panic,
/// failed, exception, fatal or traceback words, a non-zero exit code, or a
/// compiler code such as `E0308` or `TS2345`.
pub(crate) fn is_error_line(line: &str) -> bool {
    if !might_report_failure(line.as_bytes()) {
        return false;
    }
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
    if Words::new(&lower).any(&FAILURE)
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

/// Whether a line holds, in any case, a word that [`is_error_line`]
/// looks for (err, fail, panic, exception, traceback, fatal,
/// segmentation, exit) or a compiler code: one pass over its bytes, no
/// allocation, so that the lines of output that cannot be errors (nearly
/// all) cost little.
fn might_report_failure(line: &[u8]) -> bool {
    const WORDS: [&[u8]; 8] = [
        b"err",
        b"fail",
        b"panic",
        b"exception",
        b"traceback",
        b"fatal",
        b"segmentation",
        b"exit",
    ];
    let digits = |at: usize| {
        line.get(at..at + 4)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    for (i, &b) in line.iter().enumerate() {
        let c = b.to_ascii_lowercase();
        if matches!(c, b'e' | b'f' | b'p' | b't' | b's') {
            let rest = &line[i..];
            if WORDS.iter().any(|w| {
                w[0] == c && rest.len() >= w.len() && rest[..w.len()].eq_ignore_ascii_case(w)
            }) {
                return true;
            }
        }
        if (b == b'E' && digits(i + 1))
            || (b == b'T' && line.get(i + 1) == Some(&b'S') && digits(i + 2))
        {
            return true;
        }
    }
    false
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
#[path = "score_tests.rs"]
mod tests;
