//! Advisory locks and live-session detection.
//!
//! Every write takes an exclusive `flock` on the session file and checks
//! that the locked file is still the one at the path (a rewrite may have
//! renamed a new file over it meanwhile). An agent that appends the same
//! way never loses a line to a rewrite; docs/reliability.md describes the
//! protocol.

use std::fs::{self, File, TryLockError};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::UNIX_EPOCH;

use crate::error::{LiveSign, SessionError};
use crate::fsutil::open_regular;

/// How recent a write must be for a session to count as live: 5 seconds.
///
/// An agent writes its session on every message, so a file it is using in
/// a turn has usually changed within the last few seconds; a file nobody
/// has written for longer is most likely idle. musepi's own writes count
/// too, so a second in-place command right after a first one waits the
/// window out or passes `--force`.
pub const LIVE_WINDOW_MS: i64 = 5_000;

/// Locks `path` exclusively, making sure the lock is on the file that is at
/// `path` now.
pub(crate) fn lock_file(path: &Path) -> Result<File, SessionError> {
    let io = |source| SessionError::WriteFailed {
        path: path.to_owned(),
        source,
    };
    loop {
        let file = open_regular(path)?;
        file.lock().map_err(io)?;
        let locked = file.metadata().map_err(io)?;
        let current = fs::metadata(path).map_err(io)?;
        if locked.dev() == current.dev() && locked.ino() == current.ino() {
            return Ok(file);
        }
    }
}

/// What makes the file at `path` look live at `now_ms` (epoch
/// milliseconds): another process holding its lock, or a modification
/// within `window_ms`.
pub(crate) fn live_sign(
    path: &Path,
    now_ms: i64,
    window_ms: i64,
) -> Result<Option<LiveSign>, SessionError> {
    let io = |source| SessionError::WriteFailed {
        path: path.to_owned(),
        source,
    };
    let file = open_regular(path)?;
    match file.try_lock() {
        Ok(()) => {
            file.unlock().map_err(io)?;
        }
        Err(TryLockError::WouldBlock) => return Ok(Some(LiveSign::Locked)),
        Err(TryLockError::Error(e)) => return Err(io(e)),
    }
    let modified = file.metadata().and_then(|m| m.modified()).map_err(io)?;
    let modified_ms = match modified.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(_) => 0,
    };
    // A modification slightly in the future (clocks of two machines on a
    // network file system) counts as recent; one far in the future does not.
    let ago = now_ms.saturating_sub(modified_ms);
    Ok(
        (ago.saturating_abs() < window_ms).then(|| LiveSign::RecentWrite {
            seconds_ago: u64::try_from(ago.max(0) / 1000).unwrap_or(0),
        }),
    )
}
