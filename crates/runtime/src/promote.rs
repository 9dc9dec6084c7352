//! Context promotion (docs/design.md, "When to compact", `contextPromotion.enabled`): before an
//! overflow, incomplete-output or threshold compaction, switch to a
//! larger-context model the agent offers and go on without compacting.
//!
//! The agent declares the models it can switch to
//! ([`Maintenance::set_promotion_targets`](crate::Maintenance::set_promotion_targets)); the runtime picks the smallest
//! window larger than the current one under whose threshold the context
//! fits, records the switch as a `model_change` entry, and tells the loop to
//! retry (overflow, incomplete) or simply go on (threshold). Each promotion
//! strictly grows the window, so repeated overflows climb the list and then
//! fall back to compaction.

use musepi_compaction::Reason;

/// A larger-context model the agent can switch to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PromotionTarget {
    /// The provider name, as in `model_change`.
    pub provider: String,
    /// The model id, as in `model_change`.
    pub model_id: String,
    /// Its context window in tokens.
    pub context_window: u64,
}

impl PromotionTarget {
    /// A target.
    pub fn new(provider: &str, model_id: &str, context_window: u64) -> Self {
        Self {
            provider: provider.to_owned(),
            model_id: model_id.to_owned(),
            context_window,
        }
    }
}

/// Whether context promotion may stand in for a compaction for `reason`.
pub(crate) fn allowed_for(reason: Reason) -> bool {
    matches!(
        reason,
        Reason::Overflow | Reason::Incomplete | Reason::Threshold
    )
}

/// The target to promote to: the smallest window above `window` whose
/// threshold lies above `tokens`, not the current model; the first listed
/// on a tie.
pub(crate) fn pick_target<'a>(
    targets: &'a [PromotionTarget],
    current: Option<&(String, String)>,
    window: u64,
    tokens: u64,
    threshold: impl Fn(u64) -> i64,
) -> Option<&'a PromotionTarget> {
    targets
        .iter()
        .filter(|t| t.context_window > window)
        .filter(|t| current.is_none_or(|(p, m)| *p != t.provider || *m != t.model_id))
        .filter(|t| i128::from(tokens) < i128::from(threshold(t.context_window)))
        .fold(None, |best: Option<&PromotionTarget>, t| match best {
            Some(b) if b.context_window <= t.context_window => Some(b),
            _ => Some(t),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets() -> Vec<PromotionTarget> {
        vec![
            PromotionTarget::new("p", "huge", 1_000_000),
            PromotionTarget::new("p", "big", 400_000),
            PromotionTarget::new("q", "big-too", 400_000),
            PromotionTarget::new("p", "small", 100_000),
        ]
    }

    fn minus_reserve(w: u64) -> i64 {
        w as i64 - 16_384
    }

    #[test]
    fn the_smallest_larger_window_wins_and_ties_keep_the_listed_order() {
        let t = targets();
        let pick = pick_target(&t, None, 200_000, 190_000, minus_reserve).unwrap();
        assert_eq!(pick.model_id, "big");
    }

    #[test]
    fn a_target_whose_threshold_the_context_crosses_is_passed_over() {
        let t = targets();
        let pick = pick_target(&t, None, 200_000, 390_000, minus_reserve).unwrap();
        assert_eq!(pick.model_id, "huge");
        assert!(pick_target(&t, None, 200_000, 990_000, minus_reserve).is_none());
    }

    #[test]
    fn the_current_model_and_smaller_windows_are_never_picked() {
        let t = targets();
        let current = ("p".to_owned(), "big".to_owned());
        let pick = pick_target(&t, Some(&current), 200_000, 10, minus_reserve).unwrap();
        assert_eq!(pick.model_id, "big-too");
        assert!(pick_target(&t, None, 1_000_000, 10, minus_reserve).is_none());
    }
}
