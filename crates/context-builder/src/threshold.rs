//! When the context is too big (docs/design.md, "When to compact") and how much recent history to
//! keep when it is (docs/design.md, "When to compact").

/// The settings thresholds read.
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdSettings {
    /// Automatic compaction on or off.
    pub enabled: bool,
    /// The strategy is `off`: never compact automatically.
    pub strategy_off: bool,
    /// Floor of the reserve (default 16,384).
    pub reserve_tokens: u64,
    /// Percent threshold; values ≤ 0 mean unset (-1 by default).
    pub threshold_percent: f64,
    /// Fixed threshold; values ≤ 0 mean unset (-1 by default). Wins over the percent.
    pub threshold_tokens: f64,
}

impl Default for ThresholdSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            strategy_off: false,
            reserve_tokens: 16_384,
            threshold_percent: -1.0,
            threshold_tokens: -1.0,
        }
    }
}

/// `max(floor(window × 0.15), reserveTokens)`.
pub fn effective_reserve_tokens(window: u64, reserve_tokens: u64) -> u64 {
    (window * 15 / 100).max(reserve_tokens)
}

/// The context size above which automatic compaction runs: a fixed
/// threshold (clamped to `[1, window − 1]`), else a percentage (clamped to
/// 1–99 %), else `window − effective reserve` (may be negative for tiny
/// windows: then every context is over it).
pub fn resolve_threshold_tokens(window: u64, s: &ThresholdSettings) -> i64 {
    let window_i = window as i64;
    if s.threshold_tokens.is_finite() && s.threshold_tokens > 0.0 {
        let t = s.threshold_tokens.floor().max(1.0) as i64;
        return t.min(window_i - 1);
    }
    if s.threshold_percent.is_finite() && s.threshold_percent > 0.0 {
        let p = s.threshold_percent.clamp(1.0, 99.0);
        return (window as f64 * p / 100.0).floor() as i64;
    }
    window_i - effective_reserve_tokens(window, s.reserve_tokens) as i64
}

/// Whether `tokens` is over the threshold for `window`.
pub fn should_compact(tokens: u64, window: u64, s: &ThresholdSettings) -> bool {
    if !s.enabled || s.strategy_off || window == 0 {
        return false;
    }
    i128::from(tokens) > i128::from(resolve_threshold_tokens(window, s))
}

/// Shrinks `keep_recent_tokens` by `ratio`, the provider tokens per
/// estimated token (docs/design.md, "When to compact"):
/// `floor(keep / ratio)` when the ratio is above 1 (at least 1 token);
/// never enlarges it.
pub fn adapt_keep_recent_tokens(keep_recent_tokens: u64, ratio: f64) -> u64 {
    if ratio.is_finite() && ratio > 1.0 {
        ((keep_recent_tokens as f64 / ratio).floor() as u64).max(1)
    } else {
        keep_recent_tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(percent: f64, tokens: f64, reserve: u64) -> ThresholdSettings {
        ThresholdSettings {
            threshold_percent: percent,
            threshold_tokens: tokens,
            reserve_tokens: reserve,
            ..Default::default()
        }
    }

    #[test]
    fn the_threshold_table_of_spec_3_3() {
        assert_eq!(
            resolve_threshold_tokens(200_000, &ThresholdSettings::default()),
            170_000
        );
        assert_eq!(
            resolve_threshold_tokens(128_000, &ThresholdSettings::default()),
            108_800
        );
        assert_eq!(
            resolve_threshold_tokens(100_000, &s(-1.0, -1.0, 10_000)),
            85_000
        );
        assert_eq!(
            resolve_threshold_tokens(200_000, &s(80.0, -1.0, 16_384)),
            160_000
        );
        assert_eq!(
            resolve_threshold_tokens(200_000, &s(150.0, -1.0, 16_384)),
            198_000
        );
        assert_eq!(
            resolve_threshold_tokens(200_000, &s(-1.0, 300_000.0, 16_384)),
            199_999
        );
        assert_eq!(
            resolve_threshold_tokens(200_000, &s(50.0, 90_000.0, 16_384)),
            90_000
        );
        assert_eq!(
            resolve_threshold_tokens(16_000, &ThresholdSettings::default()),
            -384
        );
    }

    #[test]
    fn should_compact_respects_the_switches() {
        let on = s(-1.0, -1.0, 10_000);
        assert!(should_compact(95_000, 100_000, &on));
        assert!(!should_compact(84_000, 100_000, &on));
        assert!(!should_compact(
            95_000,
            100_000,
            &ThresholdSettings {
                enabled: false,
                ..on.clone()
            }
        ));
        assert!(!should_compact(
            95_000,
            100_000,
            &ThresholdSettings {
                strategy_off: true,
                ..on.clone()
            }
        ));
        assert!(!should_compact(95_000, 0, &on));
    }

    #[test]
    fn keep_recent_shrinks_but_never_grows() {
        assert_eq!(adapt_keep_recent_tokens(20_000, 1.5), 13_333);
        assert_eq!(adapt_keep_recent_tokens(20_000, 0.75), 20_000);
        assert_eq!(adapt_keep_recent_tokens(20_000, f64::NAN), 20_000);
        assert_eq!(adapt_keep_recent_tokens(3, 1e9), 1);
    }
}
