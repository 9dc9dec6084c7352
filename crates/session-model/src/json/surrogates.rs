//! Lone UTF-16 surrogates in JSON text, as JavaScript reads and writes them.
//!
//! `JSON.parse` accepts an escape such as `"\ud83d"` that is half of a
//! surrogate pair, and `JSON.stringify` writes such a string back as the
//! same escape; pi can therefore write lines that hold one (a tool output
//! cut in the middle of an emoji). A Rust string cannot hold a lone
//! surrogate, so serde rejects the line.
//!
//! Reading replaces each lone surrogate escape by `\ufffd` before parsing:
//! the escape has the same six bytes (so a parser's column still points
//! into the line as written), and U+FFFD is one UTF-16 unit, as the lone
//! surrogate is, so lengths and estimates are unchanged. The line itself
//! is never rewritten by this: unchanged lines are copied byte for byte.
//!
//! Printing a line again after an edit (migration, pruning) keeps each lone
//! surrogate: it is read as a private-use character that the line does not
//! otherwise hold, and that character is written back as the lowercase
//! escape `JSON.stringify` writes.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::Value;

/// Where a lone surrogate escape starts in a line, and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Lone {
    /// The byte offset of the escape's backslash.
    at: usize,
    /// The surrogate, 0xD800..=0xDFFF.
    unit: u16,
}

/// The lone surrogate escapes of `line`, in order; empty when there are
/// none (or when the line is not JSON in a way that makes them unclear).
fn find(line: &[u8]) -> Vec<Lone> {
    let mut found = Vec::new();
    // Cheap exit for the common case: no `\u` with a surrogate's first digit.
    if !line
        .windows(3)
        .any(|w| w[0] == b'\\' && w[1] == b'u' && matches!(w[2], b'd' | b'D'))
    {
        return found;
    }
    let mut in_string = false;
    let mut i = 0;
    // A leading surrogate waiting for its trailing half.
    let mut pending: Option<Lone> = None;
    while i < line.len() {
        let b = line[i];
        if !in_string {
            if b == b'"' {
                in_string = true;
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                found.extend(pending.take());
                in_string = false;
                i += 1;
            }
            b'\\' => {
                let Some(&next) = line.get(i + 1) else {
                    break;
                };
                if next != b'u' {
                    found.extend(pending.take());
                    i += 2;
                    continue;
                }
                let Some(unit) = line
                    .get(i + 2..i + 6)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u16::from_str_radix(h, 16).ok())
                else {
                    // Not a valid escape: the parser will say so.
                    return Vec::new();
                };
                match unit {
                    0xD800..=0xDBFF => {
                        found.extend(pending.take());
                        pending = Some(Lone { at: i, unit });
                    }
                    0xDC00..=0xDFFF => {
                        if pending.take().is_none() {
                            found.push(Lone { at: i, unit });
                        }
                    }
                    _ => found.extend(pending.take()),
                }
                i += 6;
            }
            _ => {
                found.extend(pending.take());
                i += 1;
            }
        }
    }
    found.extend(pending);
    found
}

/// `line` with every lone surrogate escape written as `replace(unit)` (an
/// escape of six bytes), or `None` when it has none.
fn rewrite(line: &[u8], lone: &[Lone], replace: impl Fn(u16) -> u16) -> Vec<u8> {
    let mut out = line.to_vec();
    for l in lone {
        let escape = format!("\\u{:04x}", replace(l.unit));
        out[l.at..l.at + 6].copy_from_slice(escape.as_bytes());
    }
    out
}

/// `line` as it is, or with its lone surrogate escapes replaced by
/// `\ufffd` when it has any: what readers parse.
pub fn readable(line: &[u8]) -> Cow<'_, [u8]> {
    let lone = find(line);
    if lone.is_empty() {
        Cow::Borrowed(line)
    } else {
        Cow::Owned(rewrite(line, &lone, |_| 0xFFFD))
    }
}

/// Parses one line as `JSON.parse` would, lone surrogates included (each
/// read as U+FFFD). The error is the parser's on the line as written.
pub fn parse_js(line: &[u8]) -> Result<Value, serde_json::Error> {
    match serde_json::from_slice(line) {
        Ok(v) => Ok(v),
        Err(e) => match readable(line) {
            Cow::Owned(fixed) => serde_json::from_slice(&fixed),
            Cow::Borrowed(_) => Err(e),
        },
    }
}

/// The two private-use ranges a lone surrogate may stand in for while a
/// line is edited: 2,048 characters each, one per surrogate.
const STAND_INS: [u32; 2] = [0xE000, 0xF000];

/// Parses `line` for an edit whose result is printed again: each lone
/// surrogate is read as a private-use character the line does not hold
/// otherwise, and [`Edited::restore`] writes it back as its escape.
pub(crate) struct Edited {
    base: Option<u32>,
}

impl Edited {
    /// Parses `line`; `Err` as the parser says, or when every stand-in
    /// range is already used by the line's own text.
    pub(crate) fn parse(line: &[u8]) -> Result<(Value, Self), serde_json::Error> {
        let e = match serde_json::from_slice(line) {
            Ok(v) => return Ok((v, Self { base: None })),
            Err(e) => e,
        };
        let lone = find(line);
        if lone.is_empty() {
            return Err(e);
        }
        for base in STAND_INS {
            let fixed = rewrite(line, &lone, |u| (base + u32::from(u - 0xD800)) as u16);
            let value: Value = serde_json::from_slice(&fixed)?;
            if count_in(&value, base) == lone.len() {
                return Ok((value, Self { base: Some(base) }));
            }
        }
        Err(serde::de::Error::custom(
            "a lone surrogate escape in a line that also uses every private-use stand-in",
        ))
    }

    /// `printed` (the edited value as `JSON.stringify` wrote it) with each
    /// stand-in written back as its lone surrogate escape.
    pub(crate) fn restore(&self, printed: String) -> String {
        let Some(base) = self.base else {
            return printed;
        };
        let mut out = String::with_capacity(printed.len());
        for c in printed.chars() {
            match stand_in(c, base) {
                Some(unit) => {
                    let _ = write!(out, "\\u{unit:04x}");
                }
                None => out.push(c),
            }
        }
        out
    }
}

/// The surrogate `c` stands in for, when it is in the range at `base`.
fn stand_in(c: char, base: u32) -> Option<u32> {
    let c = c as u32;
    (base..base + 0x800).contains(&c).then(|| 0xD800 + c - base)
}

/// How many characters of the range at `base` the strings and keys of
/// `value` hold.
fn count_in(value: &Value, base: u32) -> usize {
    let in_str = |s: &str| s.chars().filter(|&c| stand_in(c, base).is_some()).count();
    match value {
        Value::String(s) => in_str(s),
        Value::Array(items) => items.iter().map(|v| count_in(v, base)).sum(),
        Value::Object(map) => map.iter().map(|(k, v)| in_str(k) + count_in(v, base)).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_lone_leading_and_trailing_surrogates_but_not_pairs() {
        let line =
            br#"{"a":"x\ud83d","b":"\ude00y","c":"\ud83d\ude00","d":"\\ud83d","e":"\uD800\u0041"}"#;
        let units: Vec<u16> = find(line).iter().map(|l| l.unit).collect();
        assert_eq!(units, vec![0xd83d, 0xde00, 0xd800]);
    }

    #[test]
    fn a_line_without_lone_surrogates_is_borrowed() {
        let line = br#"{"c":"\ud83d\ude00 ok"}"#;
        assert!(matches!(readable(line), Cow::Borrowed(_)));
    }

    #[test]
    fn parsing_reads_a_lone_surrogate_as_one_utf16_unit() {
        let v = parse_js(br#"{"t":"ab\ud83d"}"#).unwrap();
        let t = v["t"].as_str().unwrap();
        assert_eq!(t, "ab\u{fffd}");
        assert_eq!(t.encode_utf16().count(), 3);
    }

    #[test]
    fn an_edit_writes_each_lone_surrogate_back_as_javascript_does() {
        let line = br#"{"t":"ab\uD83D","k\udc00":1,"own":"\ue000"}"#;
        let (value, edited) = Edited::parse(line).unwrap();
        let printed = edited.restore(crate::json::js_stringify(&value));
        // The line's own U+E000 forces the second range; the escapes come
        // back lowercase, as JSON.stringify writes them.
        assert_eq!(
            printed,
            "{\"t\":\"ab\\ud83d\",\"k\\udc00\":1,\"own\":\"\u{e000}\"}"
        );
    }

    #[test]
    fn invalid_json_stays_an_error() {
        assert!(parse_js(br#"{"t":"\ud83d"#).is_err());
        assert!(Edited::parse(br#"{"t":"\ud83d",}"#).is_err());
    }
}
