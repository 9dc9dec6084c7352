//! The crate's error type.

use std::io;
use std::path::PathBuf;

use crate::id::EntryId;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// An entry id that the session does not have.
    #[error("Entry {0} not found")]
    EntryNotFound(EntryId),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The file is empty (or only blank lines): there is no session header.
    #[error("{}: the file is empty; a session file starts with a header line", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// A non-empty file whose first JSON object is not a session header.
    /// It is left untouched.
    #[error("{}:{line}: not a pi session file: {reason}", path.display())]
    NotASession {
        /// The file.
        path: PathBuf,
        /// The line that should have been the header (0 if none parsed).
        line: u64,
        /// What was found instead.
        reason: String,
    },
    /// The file ends with a torn line (a write cut short); writing to it
    /// would bury the fragment, so writes wait for an explicit repair.
    #[error(
        "{}:{line}: the last line is torn (a write was cut short); nothing was written. Repair a copy with `musepi session check --repair -o OUT`",
        path.display()
    )]
    TornTail {
        /// The file.
        path: PathBuf,
        /// The torn line.
        line: u64,
    },
    /// The file changed on disk after it was read; nothing was written.
    #[error(
        "{}: the file changed on disk since it was read (another writer?); nothing was written",
        path.display()
    )]
    ChangedOnDisk {
        /// The file.
        path: PathBuf,
    },
    /// The session has lines that live only in a file it no longer knows.
    #[error("the session was not read from a file, so its stored lines are unavailable")]
    NoOrigin,
    /// The file already exists where a new session was to be created.
    #[error("{}: the file already exists", path.display())]
    AlreadyExists {
        /// The file.
        path: PathBuf,
    },
}
