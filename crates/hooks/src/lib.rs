//! The pipelines and their extension points.
//!
//! This crate will own the async pipelines that run compaction and tree
//! navigation end to end (prune, prepare, summarize, commit), the five hook
//! points (docs/design.md, "Hooks") for Rust handlers and for hook processes with
//! timeouts, and the maintenance runtime that a live agent loop calls.
//! It is the first crate that uses tokio; it never talks to a provider
//! itself (the caller passes a summarizer).
//!
//! Entry points so far: [`Summarizer`], the object-safe async trait a
//! pipeline calls to turn a [`SummaryRequest`](musepi_context_builder::SummaryRequest)
//! into text, and [`SummarizeError`], the failures it distinguishes
//! (cancelled, provider error, context overflow, empty answer, refusal,
//! transport, and the remote-compaction messages).

pub mod compact;
mod digest;
pub mod events;
pub mod navigate;
pub mod process;
pub mod runner;
mod runtime;
mod runtime_decision;
mod runtime_measure;
mod runtime_promote;
mod runtime_run;
mod runtime_settings;
mod runtime_tree;
pub mod summarizer;

pub use compact::{
    CompactError, CompactOptions, CompactOutcome, RemoteCompactInput, RemoteCompactor,
    RemoteFuture, SnapSettings, SnapTarget, SnapcompactStrategy, Strategy, compact,
};
pub use digest::branch_digest;
pub use events::names;
pub use navigate::{BranchStrategy, NavigateError, NavigateOptions, NavigateOutcome, navigate};
pub use process::{HookConfigError, Invocation, ProcessHook, Reply, StderrMode, StderrSink};
pub use runner::{Dispatch, Hook, HookError, HookFuture, HookWarning, Hooks};
pub use runtime::{Clock, Maintenance, MaintenanceError, MaintenanceState};
pub use runtime_decision::{
    AbortHandle, CompactionReport, Decision, EventSink, MaintenanceEvent, Outcome, UsedStrategy,
};
pub use runtime_promote::PromotionTarget;
pub use runtime_settings::{MaintenanceSettings, MaintenanceStrategy};
pub use runtime_tree::{NAVIGATE_MARKER, TreeOutcome, TreeRequest};
pub use summarizer::{
    MAX_BYTES_PER_TOKEN, RemoteFailure, SummarizeError, SummarizeFuture, Summarizer,
    truncation_warning,
};

/// The provider messages at the session's leaf, as an agent should send
/// them: refined (no dangling calls or dead error turns), custom messages as
/// developer messages, snapcompact PNG archives as images between their
/// text edges, and a provider-native compaction's stored history as a
/// [`ProviderHistory`](musepi_context_builder::ProviderHistory) that each
/// provider resolves with [`resolve_replays`](musepi_context_builder::resolve_replays).
pub fn model_messages(
    session: &musepi_session_model::Session,
) -> Vec<musepi_context_builder::LlmMessage> {
    let ctx = musepi_context_builder::build_context(session);
    let archives = musepi_snapcompact::SessionArchives::new(session);
    let options = musepi_context_builder::ConvertOptions {
        archive: Some(&archives),
        session: Some(session),
        ..Default::default()
    };
    musepi_context_builder::convert_to_llm(&ctx.messages, &options)
}
