//! Durable appends that leave no torn line behind.
//!
//! The bytes go to the end of the file in as few writes as the system
//! allows, then `fsync`. When a write fails part way (a full disk, a
//! file-size limit) or the `fsync` fails, the file is cut back to the
//! length it had, so the agent's next append does not glue itself to a
//! fragment. The cut happens only when the bytes past that length are
//! exactly ours: an append by another process that landed meanwhile is
//! never cut.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Seek, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use crate::error::SessionError;

/// Appends `bytes` to `path` durably. `locked` is the file as locked by the
/// caller; the append goes to that same file. Returns the file's metadata
/// after the write and the offset the bytes start at.
///
/// The offset is where the system put the first write, read from the
/// descriptor's position after it: an appender that takes no lock (the
/// agent) may add a line between reading the length and writing, and the
/// length read before would then point into its line.
pub(crate) fn append_durably(
    path: &Path,
    locked: &Metadata,
    bytes: &[u8],
) -> Result<(Metadata, u64), SessionError> {
    append_with(path, locked, bytes, || ())
}

/// [`append_durably`], running `between` after the file's length is read
/// and before the first write: where another process's append may land.
fn append_with(
    path: &Path,
    locked: &Metadata,
    bytes: &[u8],
    between: impl FnOnce(),
) -> Result<(Metadata, u64), SessionError> {
    let io = |source| SessionError::WriteFailed {
        path: path.to_owned(),
        source,
    };
    let mut out = match OpenOptions::new().read(true).append(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            return Err(SessionError::NotWritable {
                path: path.to_owned(),
            });
        }
        Err(e) => return Err(io(e)),
    };
    let before = out.metadata().map_err(io)?;
    if before.dev() != locked.dev() || before.ino() != locked.ino() {
        return Err(SessionError::ChangedOnDisk {
            path: path.to_owned(),
            what: "it was replaced".into(),
        });
    }
    let mut start = before.len();
    between();
    let mut done = 0;
    let failure = loop {
        if done == bytes.len() {
            break out.sync_data().err();
        }
        match out.write(&bytes[done..]) {
            Ok(0) => break Some(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(n) => {
                if done == 0 {
                    match out.stream_position() {
                        Ok(end) => start = end - n as u64,
                        Err(e) => break Some(e),
                    }
                }
                done += n;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Some(e),
        }
    };
    let Some(error) = failure else {
        return Ok((out.metadata().map_err(io)?, start));
    };
    let error = match undo(&out, start, &bytes[..done]) {
        Ok(()) => error,
        Err(left) => io::Error::new(error.kind(), format!("{error}; {left}")),
    };
    Err(io(error))
}

/// Cuts `file` back to `start` when everything past it is `ours`.
fn undo(file: &File, start: u64, ours: &[u8]) -> Result<(), String> {
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    if len == start {
        return Ok(());
    }
    let mut found = vec![0; ours.len()];
    let matches = len == start + ours.len() as u64
        && file.read_exact_at(&mut found, start).is_ok()
        && found == ours;
    if !matches {
        return Err(format!(
            "{} bytes of a partial line were left at byte {start}, and other bytes follow them, so they were not cut (`musepi session check` shows the line)",
            ours.len()
        ));
    }
    file.set_len(start)
        .and_then(|()| file.sync_data())
        .map_err(|e| format!("cutting the partial line at byte {start} failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_is_where_the_bytes_landed_when_another_process_appended_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, b"first\n").unwrap();
        let locked = std::fs::metadata(&path).unwrap();
        let agent = || {
            let mut f = OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(b"agent line\n").unwrap();
        };
        let (after, start) = append_with(&path, &locked, b"ours\n", agent).unwrap();
        let text = std::fs::read(&path).unwrap();
        assert_eq!(text, b"first\nagent line\nours\n");
        assert_eq!(start, 17, "the bytes start after the agent's line");
        assert_eq!(&text[start as usize..], b"ours\n");
        assert_eq!(after.len(), text.len() as u64);
    }
}
