//! The crate's error type.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::id::EntryId;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    /// Writing failed (a folder that cannot be written, a full disk, …);
    /// the file the write was for is as it was.
    #[error(
        "{}: writing failed: {source}; nothing was changed, the original file is intact",
        path.display()
    )]
    WriteFailed {
        /// The file that was to be written.
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
    /// The header's `version` is not 1, 2 or 3 (a number): the file is
    /// neither read nor migrated.
    #[error(
        "{}:{line}: unrecognised session version {found}: musepi reads versions 1, 2 and 3 (a JSON number); nothing was read or changed",
        path.display()
    )]
    UnknownVersion {
        /// The file.
        path: PathBuf,
        /// The header's line.
        line: u64,
        /// The `version` value as written.
        found: String,
    },
    /// The path is a FIFO, a device, a folder or a socket: reading it could
    /// block forever or never end, so it is refused before any read.
    #[error("{}: is a {kind}, not a regular file; a session is a regular file", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is instead (`FIFO`, `character device`, `folder`, …).
        kind: &'static str,
    },
    /// A line longer than the cap (see [`crate::MAX_LINE_BYTES`]).
    #[error(
        "{}:{line}: the line is longer than {limit} bytes; musepi does not read lines that long",
        path.display()
    )]
    LineTooLong {
        /// The file.
        path: PathBuf,
        /// The line.
        line: u64,
        /// The cap in bytes.
        limit: u64,
    },
    /// The file ends with a torn line (a write was cut short); writing to it
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
    /// The file changed on disk after it was read in a way a write cannot
    /// build on; nothing was written.
    #[error(
        "{}: the file changed while musepi worked ({what}); nothing was written, retry",
        path.display()
    )]
    ChangedOnDisk {
        /// The file.
        path: PathBuf,
        /// What changed.
        what: String,
    },
    /// Another process looks to be using the session right now.
    #[error(
        "{}: the session is live: {sign}; nothing was written. Quit the agent first, let it keep the session through `musepi serve` (or the pi extension), or pass --force",
        path.display()
    )]
    Live {
        /// The file.
        path: PathBuf,
        /// What was seen.
        sign: LiveSign,
    },
    /// The file has a problem that a rewrite would carry into the new file
    /// wrongly: a v1 compaction index that names no earlier entry, which
    /// migration drops ([`crate::Journal::drop_unresolved_first_kept`]
    /// lets a write drop it, as pi does).
    #[error(
        "{}:{line}: {problem}, so nothing was written; `musepi session migrate --force` (or --force on compact, prune or branch) rewrites the file as pi does, dropping the index so that the compaction keeps no entry from before it, and `musepi session check --repair` writes a copy without the index",
        path.display()
    )]
    Blocked {
        /// The file.
        path: PathBuf,
        /// The line with the problem.
        line: u64,
        /// The problem.
        problem: String,
    },
    /// A line on the path to the leaf cannot be read, so the entries before
    /// it would be missing from what a compaction, a pruning or a branch
    /// summary works on.
    #[error(
        "{}:{line}: {problem}; this line is on the path to the leaf, so what comes before it would be left out of what the model sees. Nothing was written: fix the line (`musepi session check` lists it) and run again",
        path.display()
    )]
    UnreadableOnPath {
        /// The file.
        path: PathBuf,
        /// The line that cannot be read.
        line: u64,
        /// What is wrong with it.
        problem: String,
    },
    /// A new entry that would not pass `session check`; it is not written.
    #[error("the new {kind} entry is invalid: {problem}; nothing was written")]
    InvalidEntry {
        /// The entry's type (`message:user`, `compaction`, …).
        kind: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The caller may not write the file; it is not replaced either.
    #[error("{}: the file is not writable by you; nothing was written", path.display())]
    NotWritable {
        /// The file.
        path: PathBuf,
    },
    /// The file has other hard links, which a rewrite through a temporary
    /// file and a rename would break.
    #[error(
        "{}: the file has {links} hard links; a rewrite would leave the other names with the old content, so nothing was written (write a copy with -o OUT)",
        path.display()
    )]
    HardLinked {
        /// The file.
        path: PathBuf,
        /// Its link count.
        links: u64,
    },
    /// The rewritten file could not keep the original's owner or group.
    #[error(
        "{}: {what}; a rewrite would change it, so nothing was written",
        path.display()
    )]
    OwnerChange {
        /// The file.
        path: PathBuf,
        /// Whose file it is.
        what: String,
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

/// What made a session look live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveSign {
    /// Another process holds the file's advisory lock.
    Locked,
    /// The file was modified this many whole seconds ago, within the live
    /// window ([`crate::LIVE_WINDOW_MS`]).
    RecentWrite {
        /// Seconds since the last modification.
        seconds_ago: u64,
    },
}

impl fmt::Display for LiveSign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Locked => f.write_str("another process holds its lock"),
            Self::RecentWrite { seconds_ago } => {
                write!(
                    f,
                    "it was written {seconds_ago} s ago (an agent may be appending to it)"
                )
            }
        }
    }
}

/// The class of a condition, which decides how a command reports it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    /// The operation failed.
    Failed,
    /// The file (or the entry) is not something musepi reads or writes as
    /// it is.
    BadInput,
    /// Another process is using or changing the file; a retry may work.
    Busy,
}

impl SessionError {
    /// Each condition's stable code and class, one row per variant.
    fn condition(&self) -> (&'static str, Class) {
        use Class::{BadInput, Busy, Failed};
        match self {
            Self::EntryNotFound(_) => ("unknown-entry", BadInput),
            Self::Io { source, .. } => match source.kind() {
                io::ErrorKind::NotFound => ("not-found", BadInput),
                io::ErrorKind::Interrupted | io::ErrorKind::OutOfMemory => ("io-error", Failed),
                _ => ("io-error", BadInput),
            },
            Self::WriteFailed { .. } => ("write-failed", Failed),
            Self::Empty { .. } => ("empty-file", BadInput),
            Self::NotASession { .. } => ("not-a-session", BadInput),
            Self::UnknownVersion { .. } => ("unknown-version", BadInput),
            Self::NotRegular { .. } => ("not-a-regular-file", BadInput),
            Self::LineTooLong { .. } => ("line-too-long", BadInput),
            Self::TornTail { .. } => ("torn-tail", BadInput),
            Self::ChangedOnDisk { .. } => ("changed-on-disk", Busy),
            Self::Live { .. } => ("session-live", Busy),
            Self::Blocked { .. } => ("problems-block-rewrite", BadInput),
            Self::UnreadableOnPath { .. } => ("unreadable-line", BadInput),
            Self::InvalidEntry { .. } => ("invalid-entry", BadInput),
            Self::NotWritable { .. } => ("not-writable", BadInput),
            Self::HardLinked { .. } => ("hard-linked", BadInput),
            Self::OwnerChange { .. } => ("owner-change", BadInput),
            Self::NoOrigin => ("no-origin", Failed),
            Self::AlreadyExists { .. } => ("already-exists", BadInput),
        }
    }

    /// A stable kebab-case name for the condition, for `--json` errors.
    pub fn code(&self) -> &'static str {
        self.condition().0
    }

    /// A failed write of the file at `path`, for `map_err`.
    pub(crate) fn write_failed(path: &Path) -> impl FnOnce(io::Error) -> Self + '_ {
        move |source| Self::WriteFailed {
            path: path.to_owned(),
            source,
        }
    }

    /// The file line the error is about, when there is one.
    pub fn line(&self) -> Option<u64> {
        match self {
            Self::NotASession { line, .. }
            | Self::UnknownVersion { line, .. }
            | Self::LineTooLong { line, .. }
            | Self::TornTail { line, .. }
            | Self::Blocked { line, .. }
            | Self::UnreadableOnPath { line, .. } => Some(*line).filter(|&l| l > 0),
            _ => None,
        }
    }

    /// Whether the condition is "busy": another process is using or
    /// changing the file, nothing was written, and a later retry may work.
    pub fn is_busy(&self) -> bool {
        self.condition().1 == Class::Busy
    }

    /// Whether the condition is bad input: the file (or the entry) is not
    /// something musepi reads or writes as it is.
    pub fn is_bad_input(&self) -> bool {
        self.condition().1 == Class::BadInput
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io_error(kind: io::ErrorKind) -> SessionError {
        SessionError::Io {
            path: PathBuf::from("s.jsonl"),
            source: io::Error::from(kind),
        }
    }

    #[test]
    fn each_condition_has_one_code_and_one_class() {
        let path = PathBuf::from("s.jsonl");
        let cases = [
            (io_error(io::ErrorKind::NotFound), "not-found", false, true),
            (
                io_error(io::ErrorKind::PermissionDenied),
                "io-error",
                false,
                true,
            ),
            (
                io_error(io::ErrorKind::Interrupted),
                "io-error",
                false,
                false,
            ),
            (
                SessionError::WriteFailed {
                    path: path.clone(),
                    source: io::Error::from(io::ErrorKind::StorageFull),
                },
                "write-failed",
                false,
                false,
            ),
            (
                SessionError::TornTail {
                    path: path.clone(),
                    line: 3,
                },
                "torn-tail",
                false,
                true,
            ),
            (
                SessionError::ChangedOnDisk {
                    path: path.clone(),
                    what: "it grew".to_owned(),
                },
                "changed-on-disk",
                true,
                false,
            ),
            (
                SessionError::Live {
                    path,
                    sign: LiveSign::Locked,
                },
                "session-live",
                true,
                false,
            ),
            (SessionError::NoOrigin, "no-origin", false, false),
        ];
        for (e, code, busy, bad_input) in cases {
            assert_eq!(
                (e.code(), e.is_busy(), e.is_bad_input()),
                (code, busy, bad_input),
                "{e}"
            );
        }
    }
}
