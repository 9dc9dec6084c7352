//! The pipelines and their extension points.
//!
//! This crate owns the async pipelines that run compaction ([`compact()`])
//! and tree navigation ([`navigate()`]) on a journal end to end (prune,
//! prepare, ask the hooks, summarize or archive, commit, rebuild), the
//! choice between an LLM summary, a remote compaction and the snapcompact
//! archive ([`Strategy`], with the adapter from a preparation to an archive
//! in [`snapcompact`]), the five hook points (docs/design.md, "Hooks") with
//! their events ([`events`]), the handler registry and how answers combine
//! ([`Hooks`]), and hook processes with timeouts that kill the process
//! group and a minimal environment ([`ProcessHook`]).
//!
//! It is the first crate that uses tokio. It must not know when to
//! compact (the maintenance runtime of `musepi-runtime` decides), settings
//! files, or any wire protocol: the caller passes a [`Summarizer`], the
//! object-safe async trait that turns a
//! [`SummaryRequest`](musepi_context_builder::SummaryRequest) into text, and
//! [`SummarizeError`] names the failures it distinguishes (cancelled,
//! provider error, context overflow, empty answer, refusal, transport, and
//! the remote-compaction messages).
//!
//! Entry points: [`compact()`] with [`CompactOptions`], [`navigate()`] with
//! [`NavigateOptions`] (holding a [`TreeRequest`]), [`Hooks`], [`ProcessHook`], [`Summarizer`]
//! (or [`FromFn::summarizer`] to make one from an async closure),
//! [`branch_digest`].

pub mod compact;
mod digest;
pub mod events;
mod from_fn;
pub mod navigate;
pub mod process;
pub mod runner;
pub mod snapcompact;
pub mod summarizer;

pub use compact::{
    CompactError, CompactOptions, CompactOutcome, RemoteCompactInput, RemoteCompactor,
    RemoteFuture, SnapcompactStrategy, Strategy, compact,
};
pub use digest::branch_digest;
pub use events::{TreeRequest, names};
pub use from_fn::{AnswerFn, FromFn, StateFn};
pub use navigate::{BranchStrategy, NavigateError, NavigateOptions, NavigateOutcome, navigate};
pub use process::{HookConfigError, Invocation, ProcessHook, Reply, StderrMode, StderrSink};
pub use runner::{
    CancelReport, Dispatch, Hook, HookCancel, HookError, HookFuture, HookWarning, Hooks,
};
pub use snapcompact::{SnapSettings, SnapTarget, compact_preparation, with_frames_history};
pub use summarizer::{
    MAX_BYTES_PER_TOKEN, RemoteFailure, SummarizeError, SummarizeFuture, Summarizer,
    truncation_warning,
};
