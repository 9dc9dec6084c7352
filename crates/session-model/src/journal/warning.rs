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
        }
    }
}
