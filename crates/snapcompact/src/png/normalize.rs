//! Normalization for printing: the archive text is reduced to
//! what the bundled bitmap fonts can print, and whitespace is collapsed so
//! that every cell carries ink.
//!
//! All bundled fonts cover the same characters: printable ASCII, Latin-1
//! and U+2588 (the newline glyph). Anything else is folded to ASCII when a
//! fold or a compatibility decomposition allows it, dropped when it is
//! decoration, and printed as `?` otherwise.

use std::sync::OnceLock;

use crate::png::serialize::{DIM_OFF, DIM_ON};

/// The glyph that stands for a line break: U+2588 FULL BLOCK, printed as a
/// solid black cell.
pub const NEWLINE_GLYPH: char = '\u{2588}';

/// Normalizes `text` for printing on frames.
pub fn normalize(text: &str) -> String {
    let stripped = strip_ansi(text);
    let collapsed = collapse_runs(&stripped);
    let mut mapped = String::with_capacity(collapsed.len());
    for c in collapsed.chars() {
        map_char(c, &mut mapped);
    }
    squeeze_and_trim(&mapped)
}

/// How much of a text the bundled fonts can print (`scanRenderability`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Renderability {
    /// Graphic characters seen (not whitespace, format or control).
    pub graphic: usize,
    /// Of those, the ones that would print as `?`.
    pub fallback: usize,
}

impl Renderability {
    /// Unsafe when more than 5% of the graphic characters fall back to `?`.
    pub fn is_safe(&self) -> bool {
        self.fallback * 20 <= self.graphic
    }
}

/// Counts the graphic characters of `text` and those that normalization
/// would replace by `?`.
pub fn scan_renderability(text: &str) -> Renderability {
    let mut scan = Renderability::default();
    let mut sink = String::new();
    for c in strip_ansi(text).chars() {
        if is_space(c) || is_line_break(c) || is_format(c) || c.is_control() || is_combining(c) {
            continue;
        }
        scan.graphic += 1;
        sink.clear();
        if map_char(c, &mut sink) {
            scan.fallback += 1;
        }
    }
    scan
}

/// Removes ANSI escape sequences (CSI, OSC and other `ESC` sequences).
fn strip_ansi(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\u{1B}', '\u{9B}']) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let csi = match c {
            '\u{9B}' => true,
            '\u{1B}' => match chars.peek() {
                Some('[') => {
                    chars.next();
                    true
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    // A string sequence: until BEL or ESC \.
                    while let Some(s) = chars.next() {
                        if s == '\u{7}' || s == '\u{9C}' {
                            break;
                        }
                        if s == '\u{1B}' {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                            }
                            break;
                        }
                    }
                    continue;
                }
                Some(_) => {
                    // Intermediates, then one final byte.
                    while let Some(&n) = chars.peek() {
                        chars.next();
                        if !('\u{20}'..='\u{2F}').contains(&n) {
                            break;
                        }
                    }
                    continue;
                }
                None => continue,
            },
            _ => false,
        };
        if csi {
            while let Some(&n) = chars.peek() {
                chars.next();
                if ('\u{40}'..='\u{7E}').contains(&n) || !('\u{20}'..='\u{3F}').contains(&n) {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    std::borrow::Cow::Owned(out)
}

fn is_line_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// Whitespace other than line breaks (JavaScript's `\s`, minus the BOM).
fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\u{B}' | '\u{C}' | ' ' | '\u{85}' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// Invisible format characters: zero-width spaces and joiners, bidi marks,
/// the BOM, the soft hyphen and tag characters.
fn is_format(c: char) -> bool {
    matches!(
        c,
        '\u{AD}'
            | '\u{61C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{E0001}'
            | '\u{E0020}'..='\u{E007F}'
    )
}

fn is_combining(c: char) -> bool {
    matches!(
        c,
        '\u{300}'..='\u{36F}'
            | '\u{483}'..='\u{489}'
            | '\u{1AB0}'..='\u{1AFF}'
            | '\u{1DC0}'..='\u{1DFF}'
            | '\u{20D0}'..='\u{20FF}'
            | '\u{3099}'..='\u{309A}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FE20}'..='\u{FE2F}'
            | '\u{E0100}'..='\u{E01EF}'
    )
}

fn is_emoji(c: char) -> bool {
    matches!(
        c,
        '\u{1F000}'..='\u{1FAFF}'
            | '\u{2600}'..='\u{27BF}'
            | '\u{2B00}'..='\u{2BFF}'
            | '\u{231A}'..='\u{231B}'
            | '\u{2328}'
            | '\u{23CF}'
            | '\u{23E9}'..='\u{23FA}'
            | '\u{25B6}'
            | '\u{25C0}'
            | '\u{25FB}'..='\u{25FE}'
            | '\u{2934}'..='\u{2935}'
            | '\u{3030}'
            | '\u{303D}'
            | '\u{3297}'
            | '\u{3299}'
    )
}

/// Step 2: whitespace runs become one space or (with a line break) one
/// newline glyph; runs of format characters vanish. Ink toggles inside a
/// run do not break it.
fn collapse_runs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run_break = false;
    let mut run_space = false;
    let mut in_run = false;
    let mut toggles = String::new();
    for c in text.chars() {
        if is_line_break(c) || is_space(c) || is_format(c) {
            in_run = true;
            run_break |= is_line_break(c);
            run_space |= is_space(c);
            continue;
        }
        if in_run && (c == DIM_ON || c == DIM_OFF) {
            toggles.push(c);
            continue;
        }
        if in_run {
            flush_run(&mut out, run_break, run_space, &mut toggles);
            in_run = false;
            run_break = false;
            run_space = false;
        }
        out.push(c);
    }
    if in_run {
        flush_run(&mut out, run_break, run_space, &mut toggles);
    }
    out
}

fn flush_run(out: &mut String, run_break: bool, run_space: bool, toggles: &mut String) {
    if run_break {
        out.push(NEWLINE_GLYPH);
    } else if run_space {
        out.push(' ');
    }
    out.push_str(toggles);
    toggles.clear();
}

/// Step 4: collapses repeated spaces and trims spaces and newline glyphs
/// from both ends, keeping ink toggles.
fn squeeze_and_trim(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut started = false;
    let mut last_space = false;
    for c in text.chars() {
        match c {
            DIM_ON | DIM_OFF => out.push(c),
            ' ' | NEWLINE_GLYPH if !started => {}
            ' ' if last_space => {}
            _ => {
                started = true;
                last_space = c == ' ';
                out.push(c);
            }
        }
    }
    // Trailing spaces and glyphs go; toggles after them stay.
    let mut toggles = String::new();
    while let Some(c) = out.chars().next_back() {
        match c {
            DIM_ON | DIM_OFF => toggles.insert(0, c),
            ' ' | NEWLINE_GLYPH => {}
            _ => break,
        }
        out.pop();
    }
    out.push_str(&toggles);
    out
}

/// Step 3 for one character; returns whether it fell back to `?`.
fn map_char(c: char, out: &mut String) -> bool {
    if (' '..='~').contains(&c) || ('\u{A0}'..='\u{FF}').contains(&c) {
        out.push(c);
        return false;
    }
    if c == DIM_ON || c == DIM_OFF || c == NEWLINE_GLYPH {
        out.push(c);
        return false;
    }
    if let Some(s) = emoji_fold(c).or_else(|| punctuation_fold(c)) {
        out.push_str(s);
        return false;
    }
    if ('\u{2500}'..='\u{257F}').contains(&c) {
        out.push(match c {
            '\u{2502}' | '\u{2503}' => '|',
            '\u{2500}' | '\u{2501}' => '-',
            _ => '+',
        });
        return false;
    }
    if let Some(decomposed) = decomposition(c) {
        for d in decomposed {
            if (' '..='~').contains(&d) || ('\u{A0}'..='\u{FF}').contains(&d) {
                out.push(d);
            } else if let Some(s) = punctuation_fold(d) {
                out.push_str(s);
            } else {
                out.push('?');
            }
        }
        return false;
    }
    if is_emoji(c) || c.is_control() || is_combining(c) || is_format(c) {
        return false;
    }
    out.push('?');
    true
}

fn emoji_fold(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2705}' | '\u{2611}' | '\u{2714}' => "[OK]",
        '\u{274C}' | '\u{274E}' | '\u{2716}' => "[FAIL]",
        '\u{26A0}' => "[WARN]",
        '\u{1F6A8}' => "[ALERT]",
        '\u{2139}' => "[INFO]",
        '\u{1F41B}' => "[BUG]",
        '\u{1F4A5}' => "[CRASH]",
        '\u{1F525}' => "[HOT]",
        '\u{1F512}' => "[LOCK]",
        '\u{1F513}' => "[UNLOCK]",
        '\u{1F4C1}' | '\u{1F4C2}' => "[DIR]",
        '\u{1F4C4}' => "[FILE]",
        '\u{1F4DD}' => "[NOTE]",
        '\u{1F9EA}' => "[TEST]",
        '\u{23F3}' | '\u{231B}' => "[WAIT]",
        '\u{1F680}' => "[RUN]",
        _ => return None,
    })
}

/// Quotes, dashes, ellipses, bullets, arrows and check marks. The keys are
/// mirrored in `data/nfkd_to_table.py` (`FOLDABLE`).
fn punctuation_fold(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{2035}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{2036}' => "\"",
        '\u{2034}' | '\u{2037}' => "'''",
        '\u{2039}' => "<",
        '\u{203A}' => ">",
        '\u{2010}'..='\u{2015}'
        | '\u{2212}'
        | '\u{2E3A}'
        | '\u{2E3B}'
        | '\u{FE58}'
        | '\u{FE63}'
        | '\u{FF0D}'
        | '\u{2043}' => "-",
        '\u{2044}' | '\u{2215}' => "/",
        '\u{2025}' => "..",
        '\u{2026}' | '\u{22EF}' => "...",
        '\u{2022}' | '\u{2023}' | '\u{2219}' | '\u{25CF}' | '\u{25E6}' | '\u{25AA}'
        | '\u{25AB}' | '\u{25B8}' | '\u{25B9}' | '\u{25BA}' | '\u{2981}' => "*",
        '\u{2190}' => "<-",
        '\u{2191}' => "^",
        '\u{2192}' => "->",
        '\u{2193}' | '\u{2713}' => "v",
        '\u{2194}' => "<->",
        '\u{21D0}' => "<=",
        '\u{21D2}' => "=>",
        '\u{21D4}' => "<=>",
        '\u{2717}' | '\u{2718}' => "x",
        _ => return None,
    })
}

/// One row of the NFKD fallback table: `start..=end` maps to `first + i`
/// for ranges, or to the whole `to` sequence for single code points.
#[derive(Debug, Clone, PartialEq)]
struct Decomposition {
    start: u32,
    end: u32,
    to: Vec<char>,
}

static NFKD_TABLE: &str = include_str!("../../data/nfkd_fold.txt");

/// The parsed table; a malformed line is skipped (a test checks there is none).
fn nfkd_table() -> &'static [Decomposition] {
    static TABLE: OnceLock<Vec<Decomposition>> = OnceLock::new();
    TABLE.get_or_init(|| {
        NFKD_TABLE
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(parse_decomposition)
            .collect()
    })
}

fn parse_decomposition(line: &str) -> Option<Decomposition> {
    let mut fields = line.split_whitespace();
    let key = fields.next()?;
    let (start, end) = if let Some((a, b)) = key.split_once('-') {
        (
            u32::from_str_radix(a, 16).ok()?,
            u32::from_str_radix(b, 16).ok()?,
        )
    } else {
        let v = u32::from_str_radix(key, 16).ok()?;
        (v, v)
    };
    let to = fields
        .map(|f| u32::from_str_radix(f, 16).ok().and_then(char::from_u32))
        .collect::<Option<Vec<char>>>()?;
    if to.is_empty() || end < start || (end > start && to.len() != 1) {
        return None;
    }
    Some(Decomposition { start, end, to })
}

/// The compatibility decomposition of `c` without combining marks, when it
/// is printable after the folds.
fn decomposition(c: char) -> Option<Vec<char>> {
    let cp = c as u32;
    let table = nfkd_table();
    let i = table.partition_point(|d| d.end < cp);
    let d = table.get(i).filter(|d| d.start <= cp)?;
    if d.start == d.end {
        return Some(d.to.clone());
    }
    let first = *d.to.first()? as u32;
    char::from_u32(first + (cp - d.start)).map(|ch| vec![ch])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: &str) {
        assert_eq!(normalize(input), expected, "normalizing {input:?}");
    }

    #[test]
    fn ansi_sequences_are_stripped() {
        check(
            "\u{1B}[31mred\u{1B}[0m \u{1B}]0;title\u{7}ok \u{1B}(Bx",
            "red ok x",
        );
    }

    #[test]
    fn whitespace_runs_collapse_to_one_space_or_one_newline_glyph() {
        check("a  \t b", "a b");
        check("a \n\n  b\r\nc\u{2028}d", "a█b█c█d");
        check("zero\u{200B}\u{FEFF}width", "zerowidth");
        check("  \n lead and trail \n ", "lead and trail");
    }

    #[test]
    fn ink_toggles_survive_and_do_not_split_runs() {
        check("a \u{E} b\u{F}", "a \u{E}b\u{F}");
        check("\u{E}\n x", "\u{E}x");
    }

    #[test]
    fn ascii_and_latin1_are_kept() {
        check("Grüße, café — naïve", "Grüße, café - naïve");
        check("¿Qué? ½ × ÷ ©", "¿Qué? ½ × ÷ ©");
    }

    #[test]
    fn status_emoji_fold_to_bracketed_words() {
        check(
            "✅ done ❌ failed ⚠️ careful 🚀 go 📁 src ⏳",
            "[OK] done [FAIL] failed [WARN] careful [RUN] go [DIR] src [WAIT]",
        );
    }

    #[test]
    fn punctuation_folds_to_ascii() {
        check(
            "‘a’ “b” ‹c› x–y—z −1 ½⁄3 ‥ … ⋯",
            "'a' \"b\" <c> x-y-z -1 ½/3 .. ... ...",
        );
        check(
            "• one ⁃ two ← ↑ → ↓ ↔ ⇐ ⇒ ⇔ ✓ ✗",
            "* one - two <- ^ -> v <-> <= => <=> v x",
        );
    }

    #[test]
    fn box_drawing_becomes_pipes_dashes_and_pluses() {
        check("┌─┬━┐\n│ ┃ │\n└─┴─┘", "+-+-+█| | |█+-+-+");
    }

    #[test]
    fn compatibility_decompositions_fall_back_to_ascii() {
        check(
            "Łódź Ångström ﬁle Ｆｕｌｌ 𝐁𝐨𝐥𝐝 ① ™ ⅓",
            "?ódz Ångström file Full Bold 1 TM 1/3",
        );
        check("e\u{301}", "e");
    }

    #[test]
    fn decorative_emoji_and_controls_vanish_and_the_rest_prints_as_question_marks() {
        check("nice 🎉 work \u{7} ok", "nice work ok");
        check("日本 ok", "?? ok");
    }

    #[test]
    fn renderability_flags_text_that_would_be_mostly_question_marks() {
        let english = scan_renderability("plain English text with one 日 character in it");
        assert_eq!(english.fallback, 1);
        assert!(english.is_safe());
        let cjk = scan_renderability("这是一个中文句子 with a few words");
        assert_eq!(cjk.fallback, 8);
        assert!(!cjk.is_safe());
        assert_eq!(scan_renderability("").graphic, 0);
        assert!(scan_renderability("").is_safe());
    }

    #[test]
    fn the_bundled_decomposition_table_parses_completely() {
        let lines = NFKD_TABLE
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .count();
        assert_eq!(nfkd_table().len(), lines);
        assert!(nfkd_table().windows(2).all(|w| w[0].end < w[1].start));
    }
}
