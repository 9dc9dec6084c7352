//! Turning flags (and, when present, settings files) into the plain
//! settings of the library crates.

use musepi_compaction::CompactionSettings;

use crate::cli::BudgetArgs;

/// The context window assumed when neither a flag nor a setting names one.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;

/// Compaction settings from the budget flags over `base`.
pub fn compaction_settings(base: CompactionSettings, budget: &BudgetArgs) -> CompactionSettings {
    let mut s = base;
    if let Some(k) = budget.keep_recent {
        s.keep_recent_tokens = k;
    }
    if let Some(r) = budget.reserve {
        s.reserve_tokens = r;
    }
    s
}

/// The context window: the flag, else the default.
pub fn context_window(budget: &BudgetArgs, configured: Option<u64>) -> u64 {
    budget
        .context_window
        .or(configured)
        .unwrap_or(DEFAULT_CONTEXT_WINDOW)
}
