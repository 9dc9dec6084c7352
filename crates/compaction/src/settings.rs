//! The settings compaction reads (docs/design.md, "Settings").

use musepi_context_builder::ThresholdSettings;

/// Compaction settings, with the design-era defaults.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CompactionSettings {
    /// Automatic maintenance on or off (manual compaction always works).
    pub enabled: bool,
    /// Floor of the reserve; also drives the summarizer output limits.
    pub reserve_tokens: u64,
    /// The recent window kept verbatim.
    pub keep_recent_tokens: u64,
    /// Shrink the kept window when provider usage shows the estimate runs
    /// low (docs/design.md, "When to compact"). The reference does not; the design era does.
    pub adapt_keep_recent: bool,
    /// Percent threshold (≤ 0: unset).
    pub threshold_percent: f64,
    /// Fixed threshold (≤ 0: unset).
    pub threshold_tokens: f64,
    /// The model's output cap, when known: output limits never exceed it.
    pub model_max_tokens: Option<u64>,
    /// What every request to the agent's model carries besides its
    /// messages (the system prompt, the tool definitions), estimated as
    /// messages are, when the caller knows it: the kept window's adaptation
    /// leaves it out of the ratio instead of measuring it
    /// ([`crate::adapted_keep_recent_tokens`]).
    pub overhead_tokens: Option<u64>,
    /// After an LLM summary, ask the model for a one-line short summary
    /// too (stored as the entry's `shortSummary`); off, a compaction sends
    /// no more requests than pi's: the history, and the turn prefix of a
    /// split turn.
    pub short_summary: bool,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
            adapt_keep_recent: true,
            threshold_percent: -1.0,
            threshold_tokens: -1.0,
            model_max_tokens: None,
            overhead_tokens: None,
            short_summary: true,
        }
    }
}

impl CompactionSettings {
    /// The threshold view of these settings.
    pub fn thresholds(&self, strategy_off: bool) -> ThresholdSettings {
        ThresholdSettings {
            enabled: self.enabled,
            strategy_off,
            reserve_tokens: self.reserve_tokens,
            threshold_percent: self.threshold_percent,
            threshold_tokens: self.threshold_tokens,
        }
    }
}
