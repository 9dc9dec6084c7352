//! ISO-8601 timestamps as JavaScript's `Date` reads and writes them.
//!
//! Entry timestamps are ISO strings (`Date.prototype.toISOString`); message
//! timestamps are epoch milliseconds. The crate never reads the clock: "now"
//! is always a parameter.

/// Milliseconds since the Unix epoch, as JavaScript's `Date.now()` gives them.
pub type EpochMillis = i64;

/// Formats `ms` as `YYYY-MM-DDTHH:MM:SS.sssZ`, like `toISOString`.
pub fn format_iso(ms: EpochMillis) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let h = rem / 3_600_000;
    let min = rem / 60_000 % 60;
    let s = rem / 1000 % 60;
    let milli = rem % 1000;
    if (0..=9999).contains(&y) {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z")
    } else {
        let sign = if y < 0 { '-' } else { '+' };
        format!(
            "{sign}{:06}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z",
            y.abs()
        )
    }
}

/// Parses an ISO-8601 date-time the way `Date.parse` reads the forms that
/// agents write: `YYYY-MM-DD`, optionally `THH:MM`, `:SS`, `.fraction`, and a
/// `Z` or `±HH:MM` offset (no offset means UTC here, which is what every
/// session writer produces). Returns `None` for anything else.
pub fn parse_iso(s: &str) -> Option<EpochMillis> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let year = num(0, 4)?;
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    let month = num(5, 2)?;
    let day = num(8, 2)?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut ms = days_from_civil(year, month, day) * 86_400_000;
    let mut i = 10;
    if b.len() == i {
        return Some(ms);
    }
    if b[i] != b'T' && b[i] != b't' && b[i] != b' ' {
        return None;
    }
    let hour = num(i + 1, 2)?;
    if b.get(i + 3) != Some(&b':') {
        return None;
    }
    let minute = num(i + 4, 2)?;
    if hour > 24 || minute > 59 {
        return None;
    }
    ms += hour * 3_600_000 + minute * 60_000;
    i += 6;
    if b.get(i) == Some(&b':') {
        let second = num(i + 1, 2)?;
        if second > 59 {
            return None;
        }
        ms += second * 1000;
        i += 3;
        if b.get(i) == Some(&b'.') || b.get(i) == Some(&b',') {
            let start = i + 1;
            let mut end = start;
            while end < b.len() && b[end].is_ascii_digit() {
                end += 1;
            }
            if end == start {
                return None;
            }
            let digits = &s[start..end.min(start + 3)];
            let mut frac: i64 = digits.parse().ok()?;
            for _ in digits.len()..3 {
                frac *= 10;
            }
            ms += frac;
            i = end;
        }
    }
    match b.get(i) {
        None | Some(b'Z' | b'z') if b.len() <= i + 1 => Some(ms),
        Some(&sign @ (b'+' | b'-')) => {
            let oh = num(i + 1, 2)?;
            let colon = usize::from(b.get(i + 3) == Some(&b':'));
            let om = num(i + 3 + colon, 2)?;
            if b.len() != i + 5 + colon {
                return None;
            }
            let offset = oh * 3_600_000 + om * 60_000;
            Some(if sign == b'+' {
                ms - offset
            } else {
                ms + offset
            })
        }
        _ => None,
    }
}

// Howard Hinnant's civil-date algorithms.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Epoch milliseconds and what JavaScript's `toISOString` gives for them.
    const DATES: [(i64, &str); 5] = [
        (0, "1970-01-01T00:00:00.000Z"),
        (1_746_093_601_000, "2025-05-01T10:00:01.000Z"),
        (951_782_400_123, "2000-02-29T00:00:00.123Z"),
        (1_763_681_630_791, "2025-11-20T23:33:50.791Z"),
        (-86_400_001, "1969-12-30T23:59:59.999Z"),
    ];

    #[test]
    fn formats_like_to_iso_string() {
        for (ms, iso) in DATES {
            assert_eq!(format_iso(ms), iso, "{ms}");
        }
    }

    #[test]
    fn parses_what_it_formats() {
        for (ms, _) in DATES {
            assert_eq!(parse_iso(&format_iso(ms)), Some(ms), "{ms}");
        }
    }

    #[test]
    fn parses_offsets_and_short_forms() {
        assert_eq!(parse_iso("2025-05-01"), Some(1_746_057_600_000));
        assert_eq!(parse_iso("2025-05-01T10:00Z"), Some(1_746_093_600_000));
        assert_eq!(
            parse_iso("2025-05-01T12:00:00.5+02:00"),
            Some(1_746_093_600_500)
        );
        assert_eq!(
            parse_iso("2025-05-01T10:00:00.123456Z"),
            Some(1_746_093_600_123)
        );
        assert_eq!(parse_iso("yesterday"), None);
        assert_eq!(parse_iso("2025-13-01"), None);
        assert_eq!(parse_iso("2025-05-01T10:00:00Zjunk"), None);
    }
}
