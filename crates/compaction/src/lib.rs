//! When and where to compact.
//!
//! This crate owns the pure, synchronous heart of compaction: trigger
//! decisions, tool-output pruning and useless-result elision, preparation
//! of the cut and its regions ([`prune_first`] and [`prepare`]), the
//! summary requests and the compaction entry, and handoff requests
//! (docs/design.md: "When to compact", "Pruning", "Cut points and regions",
//! "Summaries", "Handoff").
//! It sends nothing over the network: a preparation produces plain-data
//! requests, and a finish step turns the answers into an entry, with the
//! history's ledger items the summary left out appended ([`verify`]).

mod adapt;
mod cut;
mod finish;
mod handoff;
mod plan;
mod prepare;
pub mod prompts;
mod prune;
mod prune_first;
mod request;
mod settings;
#[cfg(test)]
mod tests;
mod trigger;
pub mod verify;
mod window;

pub use adapt::{adapted_keep_recent_tokens, estimate_ratio};
pub use cut::{CutPoint, find_cut_point, is_turn_start, is_valid_cut_point, yields_message};
pub use finish::{
    CompactionResult, NO_PRIOR_HISTORY, finish, history_without_call, merge_summaries, sum_usage,
    with_file_list,
};
pub use handoff::{HANDOFF_CUSTOM_TYPE, handoff_prompt, handoff_request, handoff_session};
pub use plan::SummaryPlan;
pub use prepare::{NothingToCompact, Preparation, prepare, summary_message};
pub use prune::{
    Protected, PruneCandidate, PruneConfig, PruneKind, PrunePlan, SUPERSEDED_NOTICE,
    USELESS_NOTICE, age_notice, apply_prune, placeholder, plan_prune, plan_stale_results,
    supersede_key,
};
pub use prune_first::{PruneFirst, prune_first, prune_first_measured};
pub use request::{
    RequestOptions, assemble_prompt, history_max_tokens, history_request, short_summary_max_tokens,
    short_summary_request, turn_prefix_max_tokens, turn_prefix_request,
};
pub use settings::CompactionSettings;
pub use trigger::{
    Action, CompactionPlan, MAX_EMPTY_INCOMPLETE_RECOVERIES, REPEATED_OVERFLOW, Reason,
    TriggerContext, after_assistant, before_request, has_output, is_context_overflow,
    is_overflow_error, manual, when_idle,
};
pub use window::{
    DEFAULT_SUMMARIZER_WINDOW, HistoryUnits, input_budget_tokens, min_window_tokens,
    window_from_overflow_message,
};
