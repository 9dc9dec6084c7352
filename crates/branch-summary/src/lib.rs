//! Summaries of abandoned branches.
//!
//! When the user navigates the session tree (`/tree`) away from the current
//! leaf, the entries left behind can be summarized so the conversation
//! remembers what was tried there (SPEC §13). This crate owns that
//! pipeline, as pure synchronous steps:
//!
//! 1. [`collect_entries`]: the abandoned entries, from the old leaf up to
//!    the deepest entry the old leaf and the target share (§13.2).
//! 2. [`prepare_branch`]: their messages, newest first, within a token
//!    budget ([`token_budget`]), with the files they read and changed
//!    (§13.3, §13.4, §11.2).
//!
//! It builds on `musepi-session-model` (the tree) and
//! `musepi-context-builder` (token estimates, the summarizer serialization,
//! file-operation tracking). It must not know how requests are sent, how
//! hooks run, or anything of compaction.
//!
//! Tool results follow our decision by default ([`ToolResults::Truncated`]);
//! [`ToolResults::Skip`] reproduces the reference, which is what the
//! conformance answers record.

mod collect;
mod error;
mod prepare;
#[cfg(test)]
mod test_support;

pub use collect::{Collected, collect_entries, collect_entries_by_id};
pub use error::BranchError;
pub use prepare::{
    BranchItem, BranchPreparation, DEFAULT_RESERVE_TOKENS, FALLBACK_CONTEXT_WINDOW,
    PrepareOptions, ToolResults, prepare_branch, token_budget,
};
