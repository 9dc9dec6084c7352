//! What a write that succeeded has to tell its caller.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Something a successful write wants the user to know.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteWarning {
    /// After a rewrite replaced the file, another process still held the
    /// old file open for writing when the rewrite stopped waiting for it:
    /// a line that process writes to the old file from now on reaches no
    /// file (docs/reliability.md).
    StillOpenElsewhere {
        /// The session file, as given.
        path: PathBuf,
        /// How long the rewrite waited for the old file to be closed.
        waited: Duration,
    },
    /// Another process appended to the file right after the entries the
    /// write added: they are in the file, and what it appended follows
    /// them, so the file's last line (where an agent that reads the file
    /// resumes) is no longer the last entry written. The session keeps its
    /// leaf at that entry.
    ArrivedAfter {
        /// The session file, as given.
        path: PathBuf,
        /// How many bytes arrived after the entries.
        bytes: u64,
    },
}

impl fmt::Display for WriteWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::StillOpenElsewhere { path, waited } => write!(
                f,
                "{}: another process still had the replaced file open for writing {} s after the rewrite; \
                 a line it writes to that file now is lost (see docs/reliability.md)",
                path.display(),
                waited.as_secs_f64()
            ),
            Self::ArrivedAfter { path, bytes } => write!(
                f,
                "{}: another process appended {bytes} bytes right after the entries musepi wrote; \
                 both are in the file, but it no longer ends with musepi's last entry",
                path.display()
            ),
        }
    }
}
