//! Small helpers shared by the modules: UTF-16 slicing and number formatting.

use musepi_session_model::json::{utf16_ceil_byte_from_end, utf16_floor_byte, utf16_len};

/// The first `units` UTF-16 units of `s` (a surrogate pair that would be
/// split is left out).
pub(crate) fn head_units(s: &str, units: usize) -> &str {
    &s[..utf16_floor_byte(s, units)]
}

/// The last `units` UTF-16 units of `s` (a surrogate pair that would be
/// split is left out).
pub(crate) fn tail_units(s: &str, units: usize) -> &str {
    &s[utf16_ceil_byte_from_end(s, units)..]
}

/// UTF-16 length, re-exported for the modules.
pub(crate) fn len16(s: &str) -> usize {
    utf16_len(s)
}

pub(crate) use musepi_session_model::json::thousands;

/// JavaScript's `Math.round` for non-negative values: halves round up.
pub(crate) fn js_round(x: f64) -> f64 {
    (x + 0.5).floor()
}

/// `ceil(chars / 4)`: the chars/4 token estimate.
pub(crate) fn ceil_div4(chars: usize) -> usize {
    chars.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators_group_by_three() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(36_011), "36,011");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn slices_never_split_a_surrogate_pair() {
        assert_eq!(head_units("a😀b", 2), "a");
        assert_eq!(tail_units("a😀b", 2), "b");
        assert_eq!(head_units("abc", 10), "abc");
    }

    #[test]
    fn js_round_rounds_halves_up() {
        assert!((js_round(59.5) - 60.0).abs() < f64::EPSILON);
        assert!((js_round(59.4) - 59.0).abs() < f64::EPSILON);
    }
}
