//! Extensions and summarizers, for a caller that sets them up itself:
//! hook processes and the events they are sent ([`events`]), the hook
//! registry a compaction or navigation runs ([`Hooks`]), and the
//! summarizer seam a provider implements ([`Summarizer`], or
//! [`FromFn::summarizer`] over an async closure).
//!
//! These are `musepi-hooks`' items, named here so that a program built on
//! this crate (the `musepi` command line) reaches them through the same
//! layer as the engines.

pub use musepi_hooks::events;
pub use musepi_hooks::process::payload;
pub use musepi_hooks::{
    CancelReport, FromFn, Hook, HookError, HookWarning, Hooks, ProcessHook, RemoteCompactInput,
    RemoteCompactor, RemoteFailure, Reply, StderrMode, StderrSink, SummarizeError, SummarizeFuture,
    Summarizer,
};
