//! The kept window in the provider's tokens.
//!
//! `keepRecentTokens` is meant in the tokens the provider counts, while
//! the cut measures messages with the chars/4 estimate, which runs low on
//! code and on scripts other than Latin. The provider's usage tells by how
//! much: each assistant message records the prompt tokens of the request
//! that produced it, and the request held every message of the context
//! before it. The ratio of the two shrinks the window the cut measures, so
//! that what is kept is `keepRecentTokens` provider tokens.
//!
//! The comparison is like for like. A request also carries what is not a
//! message (the system prompt, the tool definitions); counting those as if
//! they were messages inflates the ratio, and after a compaction, when the
//! context is small, inflates it most, so each compaction would keep less
//! than the one before. So:
//!
//! - when the caller knows the size of what is not a message
//!   ([`CompactionSettings::overhead_tokens`], estimated as messages are),
//!   the ratio is the last request's prompt tokens over the estimate of its
//!   messages and that overhead;
//! - otherwise the ratio and the overhead are measured together, as the
//!   slope of a least-squares line `prompt = ratio × estimate + overhead`
//!   through the latest requests since the latest compaction (those of the
//!   segment before it when the latest are too few), taken over the last
//!   window's worth of messages: the overhead is the same for every request
//!   of a segment, so the slope is the ratio of the messages that came
//!   between them, the most recent ones, which are the ones to keep;
//! - a ratio that cannot be measured (one request, requests of nearly one
//!   size, a slope that is not positive) is 1, and a ratio below 1 never
//!   enlarges the window.

use musepi_context_builder::{
    anchoring_usage, build_context_at, calculate_prompt_tokens, estimate_tokens,
};
use musepi_session_model::Session;

use crate::CompactionSettings;
use crate::prepare::summary_message;

/// One measured request: the estimate of the messages it held, and the
/// prompt tokens the provider counted for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Measured {
    /// The chars/4 estimate of every message the request held.
    pub estimate: f64,
    /// The provider's prompt tokens (input and cache).
    pub prompt: f64,
}

/// The least spread of estimates, in estimated tokens, that a line
/// through measured requests needs to mean something.
const MIN_SPREAD: f64 = 500.0;

/// The provider tokens per estimated token at `leaf`, for a kept window
/// of `keep` tokens: 1 when it cannot be measured (see the module
/// documentation).
pub fn estimate_ratio(
    session: &Session,
    leaf: usize,
    keep: u64,
    overhead_tokens: Option<u64>,
) -> f64 {
    let (latest, earlier) = segments(session, leaf);
    match overhead_tokens {
        Some(overhead) => {
            let last = latest.last().copied().or_else(|| earlier().last().copied());
            last.map_or(1.0, |m| ratio_with_overhead(m, overhead as f64))
        }
        None => recent_slope(&latest, keep)
            .unwrap_or_else(|| recent_slope(&earlier(), keep).unwrap_or(1.0)),
    }
}

/// The `keepRecentTokens` a compaction at `leaf` cuts with: the setting,
/// shrunk by [`estimate_ratio`] when it is above 1 and
/// `settings.adapt_keep_recent` is on.
///
/// The usage measured the messages as they were sent, so a caller that
/// prunes before preparing measures this on the session before pruning
/// (see [`crate::prune_first`]).
pub fn adapted_keep_recent_tokens(
    session: &Session,
    leaf: Option<usize>,
    settings: &CompactionSettings,
) -> u64 {
    let keep = settings.keep_recent_tokens;
    match leaf.filter(|_| settings.adapt_keep_recent) {
        Some(leaf) => musepi_context_builder::adapt_keep_recent_tokens(
            keep,
            estimate_ratio(session, leaf, keep, settings.overhead_tokens),
        ),
        None => keep,
    }
}

/// `prompt / (estimate + overhead)`, or 1 when nothing was estimated.
fn ratio_with_overhead(m: Measured, overhead: f64) -> f64 {
    let estimated = m.estimate + overhead;
    if estimated > 0.0 && m.prompt > 0.0 {
        m.prompt / estimated
    } else {
        1.0
    }
}

/// The slope of the least-squares line `prompt = ratio × estimate +
/// overhead` through the latest requests of one segment (oldest first):
/// those within `keep` estimated tokens of the last, and older ones while
/// their estimates spread less than [`MIN_SPREAD`]. `None` when the
/// requests cannot carry a line (fewer than two, too close in size) or the
/// slope is not positive.
pub(crate) fn recent_slope(measured: &[Measured], keep: u64) -> Option<f64> {
    let last = measured.last()?;
    let window = (keep as f64).max(MIN_SPREAD);
    let from = measured
        .iter()
        .rposition(|m| last.estimate - m.estimate >= window)
        .unwrap_or(0);
    let points = &measured[from..];
    let spread = last.estimate
        - points
            .iter()
            .map(|m| m.estimate)
            .fold(f64::INFINITY, f64::min);
    if points.len() < 2 || spread.is_nan() || spread < MIN_SPREAD {
        return None;
    }
    let n = points.len() as f64;
    let mean_e = points.iter().map(|m| m.estimate).sum::<f64>() / n;
    let mean_p = points.iter().map(|m| m.prompt).sum::<f64>() / n;
    let (sxx, sxy) = points.iter().fold((0.0, 0.0), |(sxx, sxy), m| {
        let de = m.estimate - mean_e;
        (sxx + de * de, sxy + de * (m.prompt - mean_p))
    });
    let slope = sxy / sxx;
    (slope.is_finite() && slope > 0.0).then_some(slope)
}

/// The requests measured on the path to `leaf` since the latest
/// compaction, and (computed when asked) those of the segment before it,
/// between the compaction before and the latest; each oldest first. Each
/// request's estimate is of the context it was sent: the context at the
/// compaction that starts its segment, then every message of the path up
/// to it.
pub(crate) fn segments(
    session: &Session,
    leaf: usize,
) -> (Vec<Measured>, impl FnOnce() -> Vec<Measured> + '_) {
    let latest = session.path_summary(leaf).compaction.map(|c| c as usize);
    let earlier = move || {
        let Some(c) = latest else {
            return Vec::new();
        };
        let Some(before) = session.parent_index(c) else {
            return Vec::new();
        };
        let compaction = session.path_summary(before).compaction.map(|p| p as usize);
        segment(session, compaction, before)
    };
    (segment(session, latest, leaf), earlier)
}

/// The requests measured on the path from just after `compaction` (from
/// the root when `None`) to `last`, inclusive.
fn segment(session: &Session, compaction: Option<usize>, last: usize) -> Vec<Measured> {
    let start_depth = compaction.map_or(0, |c| session.path_summary(c).depth as usize + 1);
    if (session.path_summary(last).depth as usize) < start_depth {
        return Vec::new();
    }
    let mut sum: u64 = compaction.map_or(0, |c| {
        build_context_at(session, Some(c))
            .agent_messages()
            .map(estimate_tokens)
            .sum()
    });
    let mut measured = Vec::new();
    for i in session.path_indices_from(last, start_depth) {
        let Some(message) = summary_message(session, i) else {
            continue;
        };
        if let Some(usage) = anchoring_usage(&message) {
            measured.push(Measured {
                estimate: sum as f64,
                prompt: calculate_prompt_tokens(usage) as f64,
            });
        }
        sum += estimate_tokens(&message);
    }
    measured
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(ratio: f64, overhead: f64, estimates: &[f64]) -> Vec<Measured> {
        estimates
            .iter()
            .map(|&estimate| Measured {
                estimate,
                prompt: ratio * estimate + overhead,
            })
            .collect()
    }

    #[test]
    fn the_slope_separates_the_ratio_from_the_overhead() {
        let m = line(1.3, 5_000.0, &[800.0, 2_500.0, 4_000.0, 9_000.0]);
        assert!((recent_slope(&m, 20_000).unwrap() - 1.3).abs() < 1e-9);
        // Dividing the last request's prompt by its estimate alone, as the
        // adaptation once did, would say 1.86.
        let naive = m[3].prompt / m[3].estimate;
        assert!(naive > 1.8, "{naive}");
    }

    #[test]
    fn the_slope_is_of_the_latest_window_of_messages() {
        // Prose first (1.1), then code (1.6): the kept window is code.
        let mut m = line(1.1, 2_000.0, &[1_000.0, 5_000.0, 9_000.0, 13_000.0]);
        let at = m[3];
        m.extend([17_000.0, 21_000.0, 25_000.0].map(|e| Measured {
            estimate: e,
            prompt: at.prompt + 1.6 * (e - at.estimate),
        }));
        assert!((recent_slope(&m, 8_000).unwrap() - 1.6).abs() < 1e-9);
        // A window reaching back over both counts some of each.
        let both = recent_slope(&m, 20_000).unwrap();
        assert!(both > 1.1 && both < 1.6, "{both}");
    }

    #[test]
    fn what_cannot_carry_a_line_measures_nothing() {
        assert_eq!(recent_slope(&[], 1_000), None);
        assert_eq!(recent_slope(&line(1.5, 2_000.0, &[3_000.0]), 1_000), None);
        assert_eq!(
            recent_slope(&line(1.5, 2_000.0, &[3_000.0, 3_050.0, 3_100.0]), 1_000),
            None,
            "requests of nearly one size"
        );
        assert_eq!(
            recent_slope(&line(-0.5, 20_000.0, &[3_000.0, 6_000.0]), 1_000),
            None,
            "a slope that is not positive"
        );
        // Too close within the window, so older requests are taken in.
        let m = line(1.4, 1_000.0, &[1_000.0, 9_000.0, 9_100.0, 9_200.0]);
        assert!((recent_slope(&m, 150).unwrap() - 1.4).abs() < 1e-9);
    }

    #[test]
    fn a_known_overhead_is_left_out_of_the_ratio() {
        let m = Measured {
            estimate: 3_000.0,
            prompt: 1.25 * (3_000.0 + 2_000.0),
        };
        assert!((ratio_with_overhead(m, 2_000.0) - 1.25).abs() < 1e-9);
        assert_eq!(
            ratio_with_overhead(
                Measured {
                    estimate: 0.0,
                    prompt: 0.0
                },
                0.0
            ),
            1.0
        );
    }
}
