//! A compaction run by hand rather than by [`Maintenance`](crate::Maintenance):
//! where the cut falls and what pruning runs first ([`prune_first`],
//! [`Preparation`]), the summary's requests ([`SummaryPlan`]), the pipeline
//! that runs it with hooks ([`compact()`], [`compact_preparation`]), the
//! strategies it may use ([`Strategy`]), a handoff to a new session, and
//! pruning on its own ([`plan_prune`], [`apply_prune`]).
//!
//! These are `musepi-compaction`'s and `musepi-hooks`' items, named here so
//! that a program built on this crate (the `musepi` command line) reaches
//! compaction through one layer.

pub use musepi_compaction::prompts::SUMMARIZATION_SYSTEM;
pub use musepi_compaction::verify::Verified;
pub use musepi_compaction::{
    CompactionSettings, NothingToCompact, Preparation, PruneConfig, PruneFirst, PrunePlan, Reason,
    RequestOptions, SummaryPlan, apply_prune, handoff_request, handoff_session, history_max_tokens,
    plan_prune, prune_first, prune_first_measured,
};
pub use musepi_hooks::{
    CompactError, RemoteCompactInput, RemoteCompactor, RemoteFailure, SnapTarget,
    SnapcompactStrategy, Strategy, compact, compact_preparation, truncation_warning,
};
