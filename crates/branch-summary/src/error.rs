//! The crate's error type.

use musepi_session_model::{EntryId, SessionError};

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BranchError {
    /// An entry id the session does not have (the message is pi's).
    #[error("Entry {id} not found")]
    EntryNotFound {
        /// The id that was asked for.
        id: EntryId,
    },
    /// An entry position beyond the end of the session.
    #[error("entry position {position} is out of range: the session has {len} entries")]
    PositionOutOfRange {
        /// The position that was asked for.
        position: usize,
        /// Number of entries in the session.
        len: usize,
    },
    /// The session or its journal file refused a change.
    #[error(transparent)]
    Session(#[from] SessionError),
}
