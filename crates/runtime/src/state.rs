//! The runtime's recovery state, its clock and why a call could not be made.

use std::sync::Arc;

use musepi_hooks::NavigateError;
use musepi_session_model::{EntryId, SessionError};

/// "Now" in epoch milliseconds.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// The recovery state of one agent run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MaintenanceState {
    /// An overflow recovery ran in this run (reset by user input and by a
    /// non-error assistant message).
    pub overflow_recovery_attempted: bool,
    /// Empty truncated answers retried in a row (reset by user input and
    /// by actionable output).
    pub empty_incomplete_recoveries: u32,
    /// The assistant whose usage the last compaction acted on.
    pub acted_usage: Option<EntryId>,
}

/// Why a runtime call could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MaintenanceError {
    /// No entry has this id.
    #[error("Entry {0} not found")]
    NotFound(String),
    /// The entry is not an assistant message.
    #[error("entry {0} is not an assistant message")]
    NotAssistant(String),
    /// The session is empty.
    #[error("the session has no entries")]
    Empty,
    /// The journal could not be written.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// A navigation failed (no model for the summary, the summarizer failed).
    #[error(transparent)]
    Navigate(NavigateError),
}

/// The system clock, in epoch milliseconds: the runtime's default
/// [`Clock`], and "now" for every program that has no other.
pub fn system_clock() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
