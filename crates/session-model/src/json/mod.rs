//! JavaScript-compatible JSON: `JSON.stringify` output and UTF-16 lengths.
//!
//! The reference implementation is JavaScript, so every length that feeds a
//! token estimate, a truncation point or a budget counts UTF-16 code units,
//! and every object it rewrites is printed the way `JSON.stringify` prints it:
//! integer-like keys first in ascending order, then the other keys in
//! insertion order, numbers in ECMAScript form, no whitespace.

use std::fmt::Write as _;

use serde_json::{Map, Value};

mod surrogates;

pub(crate) use surrogates::Edited;
pub use surrogates::{parse_js, readable};

/// Number of UTF-16 code units in `s`, counted from its UTF-8 bytes.
///
/// Every byte that is not a continuation byte starts one code point; a
/// four-byte sequence (lead byte `>= 0xF0`) is a surrogate pair, two units.
///
/// Eight bytes are counted at a time (every text of a session is counted
/// once, when it is read, so this is on the loading path of every byte).
pub fn utf16_len(s: &str) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut rest = s.as_bytes();
    let mut n = 0usize;
    while rest.len() >= 8 {
        // Per block of words, in byte lanes: continuation bytes
        // (`10xxxxxx`) and four-byte lead bytes (`11110xxx`), at most 255
        // per lane.
        let (block, after) = rest.split_at((rest.len() / 8).min(255) * 8);
        let (mut continuation, mut four) = (0u64, 0u64);
        for word in block.chunks_exact(8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            let w = u64::from_le_bytes(w);
            continuation += (w & !(w << 1) & HIGH) >> 7;
            four += (w & (w << 1) & (w << 2) & (w << 3) & HIGH) >> 7;
        }
        n += block.len() + lane_sum(four) - lane_sum(continuation);
        rest = after;
    }
    for &b in rest {
        n += usize::from((b & 0xC0) != 0x80) + usize::from(b >= 0xF0);
    }
    n
}

/// The sum of the eight byte lanes of `lanes`.
fn lane_sum(lanes: u64) -> usize {
    const BYTES: u64 = 0x00FF_00FF_00FF_00FF;
    let pairs = (lanes & BYTES) + ((lanes >> 8) & BYTES);
    (pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48) as usize
}

/// The byte offset in `s` of UTF-16 unit `units`, never inside a surrogate
/// pair: a cut that would split a pair lands before it.
///
/// Returns `s.len()` when `s` is shorter than `units`.
pub fn utf16_floor_byte(s: &str, units: usize) -> usize {
    let mut count = 0usize;
    for (i, c) in s.char_indices() {
        let w = c.len_utf16();
        if count + w > units {
            return i;
        }
        count += w;
    }
    s.len()
}

/// The byte offset in `s` where the last `units` UTF-16 units begin, never
/// inside a surrogate pair: a pair that would be split is left out.
pub fn utf16_ceil_byte_from_end(s: &str, units: usize) -> usize {
    let mut count = 0usize;
    for (i, c) in s.char_indices().rev() {
        let w = c.len_utf16();
        if count + w > units {
            return i + c.len_utf8();
        }
        count += w;
    }
    0
}

/// A token count a file or an extension wrote as a JSON number, as the
/// one integer type musepi counts tokens in: a fraction rounded, anything
/// below zero, not finite or not a number 0. Files keep their own bytes (a
/// line is never printed again from these values); only what musepi
/// computes and reports uses the count.
pub fn whole_tokens(n: f64) -> u64 {
    if n.is_finite() && n > 0.0 {
        // A float-to-int cast saturates at u64::MAX.
        n.round() as u64
    } else {
        0
    }
}

/// `n` with `,` thousands separators, as `toLocaleString("en-US")` prints
/// it: `41,234`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// Writes `n` as ECMAScript's `Number.prototype.toString` would.
pub fn push_js_number(out: &mut String, n: f64) {
    if !n.is_finite() {
        // JSON.stringify writes NaN and the infinities as null.
        out.push_str("null");
        return;
    }
    let mut buf = ryu_js::Buffer::new();
    out.push_str(buf.format_finite(n));
}

/// A JSON number as JavaScript holds it: every number is an IEEE double.
pub fn js_number_value(n: &serde_json::Number) -> f64 {
    if let Some(u) = n.as_u64() {
        u as f64
    } else if let Some(i) = n.as_i64() {
        i as f64
    } else {
        n.as_f64().unwrap_or(f64::NAN)
    }
}

/// `JSON.stringify(value)`.
pub fn js_stringify(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// `JSON.stringify(value).length`, without building the string.
pub fn js_stringify_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(b) => {
            if *b {
                4
            } else {
                5
            }
        }
        Value::Number(n) => {
            let mut s = String::new();
            push_js_number(&mut s, js_number_value(n));
            s.len()
        }
        Value::String(s) => quoted_len(s),
        Value::Array(items) => {
            2 + items.iter().map(js_stringify_len).sum::<usize>() + items.len().saturating_sub(1)
        }
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| quoted_len(k) + 1 + js_stringify_len(v))
                .sum::<usize>()
                + map.len().saturating_sub(1)
        }
    }
}

/// Writes `s` as a JSON string literal the way `JSON.stringify` does.
pub fn push_js_string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0x00..=0x1f => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match escape {
            Some(e) => out.push_str(e),
            None => {
                let _ = write!(out, "\\u{b:04x}");
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// UTF-16 length of `s` printed as a JSON string literal, quotes included.
fn quoted_len(s: &str) -> usize {
    let mut n = 2 + utf16_len(s);
    for b in s.bytes() {
        n += match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
            0x00..=0x1f => 5,
            _ => 0,
        };
    }
    n
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => push_js_number(out, js_number_value(n)),
        Value::String(s) => push_js_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in js_key_order(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_js_string(out, k);
                out.push(':');
                write_value(out, v);
            }
            out.push('}');
        }
    }
}

/// The members of `map` in the order JavaScript enumerates them: keys that
/// are array indices (canonical integers below 2^32 - 1) first, ascending,
/// then the remaining keys in insertion order.
pub fn js_key_order(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut indexed: Vec<(u32, (&String, &Value))> = Vec::new();
    let mut named: Vec<(&String, &Value)> = Vec::with_capacity(map.len());
    for (k, v) in map {
        match array_index(k) {
            Some(i) => indexed.push((i, (k, v))),
            None => named.push((k, v)),
        }
    }
    if indexed.is_empty() {
        return named;
    }
    indexed.sort_by_key(|(i, _)| *i);
    let mut all: Vec<(&String, &Value)> = indexed.into_iter().map(|(_, kv)| kv).collect();
    all.extend(named);
    all
}

/// `Some(n)` when `key` is an ECMAScript array index: the canonical decimal
/// form of an integer in `0..2^32 - 1`.
pub fn array_index(key: &str) -> Option<u32> {
    let bytes = key.as_bytes();
    if bytes.is_empty() || bytes.len() > 10 || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if bytes.len() > 1 && bytes[0] == b'0' {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    if n < u64::from(u32::MAX) {
        Some(n as u32)
    } else {
        None
    }
}

/// Sets `key` on `map` the way a JavaScript assignment does: an existing key
/// keeps its position, a new key is appended.
pub fn js_set(map: &mut Map<String, Value>, key: &str, value: Value) {
    if let Some(slot) = map.get_mut(key) {
        *slot = value;
    } else {
        map.insert(key.to_owned(), value);
    }
}

/// Removes `key` from `map` the way `delete` does, keeping the order of the
/// remaining keys.
pub fn js_delete(map: &mut Map<String, Value>, key: &str) {
    map.shift_remove(key);
}

/// Rewrites every number in `value` as JavaScript would print it where
/// serde would not: an integral float (`1746093600000.0`, from a field held
/// as `f64`) becomes an integer, so JSON documents for machines read the
/// way the session files do.
pub fn js_numbers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|_| n.is_f64())
                && f.fract() == 0.0
                && f.abs() < 9_007_199_254_740_992.0
            {
                *n = serde_json::Number::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(js_numbers),
        Value::Object(map) => map.values_mut().for_each(js_numbers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(json: &str, expected: &str) {
        let v: Value = serde_json::from_str(json).unwrap();
        assert_eq!(js_stringify(&v), expected);
        assert_eq!(js_stringify_len(&v), utf16_len(expected));
    }

    #[test]
    fn a_token_count_from_a_json_number_is_whole_and_never_negative() {
        for (n, count) in [
            (0.0, 0),
            (41_234.0, 41_234),
            (2.5, 3),
            (2.4, 2),
            (-1.0, 0),
            (f64::NAN, 0),
            (f64::INFINITY, 0),
            (1e30, u64::MAX),
        ] {
            assert_eq!(whole_tokens(n), count, "{n}");
        }
    }

    #[test]
    fn integral_floats_become_integers() {
        let mut v =
            serde_json::json!({"a": 1_746_093_600_000.0, "b": [2.5, 3.0, -0.0], "c": "4.0"});
        js_numbers(&mut v);
        assert_eq!(
            v.to_string(),
            r#"{"a":1746093600000,"b":[2.5,3,0],"c":"4.0"}"#
        );
    }

    #[test]
    fn numbers_print_as_javascript_does() {
        check(
            "[1.0, -0.0, 1E3, 12345678901234567890, 1e21, 1e-7, 5e-324]",
            "[1,0,1000,12345678901234567000,1e+21,1e-7,5e-324]",
        );
        check(
            "[0.30000000000000004, 0.000001, 100, -5]",
            "[0.30000000000000004,0.000001,100,-5]",
        );
    }

    #[test]
    fn integer_like_keys_come_first_in_ascending_order() {
        check(
            r#"{"b":1,"10":2,"a":3,"2":4,"01":5,"4294967295":6}"#,
            r#"{"2":4,"10":2,"b":1,"a":3,"01":5,"4294967295":6}"#,
        );
    }

    #[test]
    fn strings_escape_as_javascript_does() {
        check(
            r#"["a\"b\\c\n\t\u0001\u001f/é😀\u007f"]"#,
            "[\"a\\\"b\\\\c\\n\\t\\u0001\\u001f/é😀\u{7f}\"]",
        );
    }

    #[test]
    fn duplicate_keys_keep_the_first_position_and_the_last_value() {
        check(r#"{"a":1,"b":2,"a":3}"#, r#"{"a":3,"b":2}"#);
    }

    #[test]
    fn utf16_lengths_count_surrogate_pairs_twice() {
        assert_eq!(utf16_len("abc"), 3);
        // Every length around the eight-byte words and the 255-word blocks,
        // with one-, two-, three- and four-byte characters at every offset.
        let pieces = [
            "a",
            "é",
            "€",
            "😀",
            "\u{7f}",
            "\u{80}",
            "\u{ffff}",
            "\u{10000}",
        ];
        for len in (0..40).chain(2030..2060) {
            for (k, piece) in pieces.iter().enumerate() {
                let s: String = (0..len)
                    .map(|i| {
                        if i % 7 == k % 7 {
                            *piece
                        } else {
                            pieces[(i + k) % pieces.len()]
                        }
                    })
                    .collect();
                assert_eq!(utf16_len(&s), s.encode_utf16().count(), "{s:?}");
            }
        }
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("日本"), 2);
        assert_eq!(utf16_len("😀x"), 3);
    }

    #[test]
    fn utf16_cuts_never_split_a_pair() {
        let s = "ab😀cd";
        assert_eq!(utf16_floor_byte(s, 2), 2);
        assert_eq!(utf16_floor_byte(s, 3), 2);
        assert_eq!(utf16_floor_byte(s, 4), 6);
        assert_eq!(utf16_floor_byte(s, 100), s.len());
        assert_eq!(&s[utf16_ceil_byte_from_end(s, 2)..], "cd");
        assert_eq!(&s[utf16_ceil_byte_from_end(s, 3)..], "cd");
        assert_eq!(&s[utf16_ceil_byte_from_end(s, 4)..], "😀cd");
    }

    #[test]
    fn assignment_keeps_position_and_appends_new_keys() {
        let mut v: Value =
            serde_json::from_str(r#"{"type":"session","version":2,"id":"x"}"#).unwrap();
        let map = v.as_object_mut().unwrap();
        js_set(map, "version", Value::from(3));
        js_set(map, "extra", Value::from(true));
        js_delete(map, "type");
        assert_eq!(js_stringify(&v), r#"{"version":3,"id":"x","extra":true}"#);
    }
}
