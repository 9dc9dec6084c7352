//! Rewriting a session in place without losing a byte that another process
//! appends meanwhile.
//!
//! The new file is written to a temporary file beside the old one. Under
//! the old file's lock, with the temporary file locked too, every byte the
//! old file gained since it was read is copied over, line by line and
//! checked (an incomplete or invalid appended line stops the rewrite: the
//! old file stays as it is), in rounds until a look finds nothing new.
//! Then the temporary file is renamed over the old one, and the old file,
//! which an appender may still have open, is checked again (`late.rs`).
//!
//! Memory stays bounded whatever is appended: the appended bytes are
//! copied through a buffer of [`CHUNK`] bytes, holding at most one line
//! whole (a line longer than [`crate::MAX_LINE_BYTES`] stops the rewrite).
//! Time stays bounded too: a writer that never stops makes the rewrite
//! give up, leaving the old file as it is, once more than
//! [`CATCH_UP_BYTES`] were appended since the read or lines still arrived
//! after [`CATCH_UP_ROUNDS`] rounds of copying them.
//!
//! An appender that takes the file's lock while it appends (the protocol in
//! docs/reliability.md) cannot write between those steps, so for it the
//! guarantee is exact. An appender that takes no lock (pi) may have opened
//! the old file just before the rename and write to it at any time after:
//! each look at a replaced file waits until no other process holds it open
//! for writing (for at most 2 seconds), so such a line is lost only when
//! its writer keeps the file open longer than that, or is in the very
//! system call that opens it when musepi looks.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::time::Duration;

use crate::error::SessionError;
use crate::journal::disk::Temp;
use crate::journal::late::{CHUNK, settle_late};
use crate::journal::lines::{Written, write_lines};
use crate::session::Session;
use crate::wire::{LineRead, read_entry};

/// How long an appended line may stay incomplete, the file not growing,
/// before the rewrite gives up: 50 looks, 2 ms apart.
const INCOMPLETE_TRIES: u32 = 50;
const INCOMPLETE_PAUSE: Duration = Duration::from_millis(2);

/// How many rounds of copying what another process appended a rewrite
/// makes before it gives up, when every round found more: an agent
/// writes a line now and then, and the first round after a pause finds
/// nothing; only a writer that never stops keeps every round busy.
pub(crate) const CATCH_UP_ROUNDS: u32 = 8;

/// How much another process may append while a rewrite runs before the
/// rewrite gives up (64 MiB): far more than an agent writes in the time a
/// rewrite takes, and a bound on the time spent copying it.
pub(crate) const CATCH_UP_BYTES: u64 = 64 << 20;

/// What a rewrite in place did.
pub(crate) struct Rewritten {
    /// Where the session's lines went.
    pub(crate) written: Written,
    /// Bytes appended by another process and carried into the new file.
    pub(crate) carried: u64,
    /// Another process still held a replaced file open for writing when
    /// the rewrite stopped waiting for it: what it writes there now is in
    /// no file.
    pub(crate) still_open: bool,
}

/// Whether lines appended by another process may be carried over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Appends {
    /// Yes: the rewrite changes lines but adds none, and the file's ids
    /// stay as they are.
    Carry,
    /// No: the rewrite adds entries under the leaf that was read (they
    /// would hang under an older leaf than the file's), or renumbers a v1
    /// file (the appended lines would not fit).
    Refuse(&'static str),
}

/// Rewrites `target` from `session`. `locked` is the old file, locked by
/// the caller; `read_len` how much of it the session was read from.
pub(crate) fn rewrite_in_place(
    target: &Path,
    session: &Session,
    locked: &File,
    read_len: u64,
    appends: Appends,
) -> Result<Rewritten, SessionError> {
    let io = |source| SessionError::WriteFailed {
        path: target.to_owned(),
        source,
    };
    let original = locked.metadata().map_err(io)?;
    if original.nlink() > 1 {
        return Err(SessionError::HardLinked {
            path: target.to_owned(),
            links: original.nlink(),
        });
    }
    let mut tmp = Temp::create(target, Some(original.mode()))?;
    tmp.take_identity(target, &original)?;
    let mut out = &tmp.file;
    let written = write_lines(&mut out, session, Some(locked), target)?;
    // Appenders that follow the lock protocol and open the new file as soon
    // as it is renamed wait here until everything is carried over.
    tmp.file.lock().map_err(io)?;
    let mut carry = Carry {
        target,
        old: locked,
        new: &tmp.file,
        read_len,
        copied: read_len,
        appends,
    };
    carry.pass()?;
    tmp.sync(target)?;
    // What arrived during the sync is copied right before the rename, and
    // made durable right after it, so no sync widens the gap between the
    // last copy and the rename.
    carry.catch_up()?;
    let copied = carry.copied;
    tmp.rename_over(target)?;
    tmp.sync(target)?;
    tmp.sync_folder(target)?;
    let end = written.len + (copied - read_len);
    let (end, still_open) = settle_late(target, &original, locked, copied, tmp, end)?;
    let carried = end - written.len;
    Ok(Rewritten {
        written,
        carried,
        still_open,
    })
}

/// Copying the lines the old file gains to the end of the new one (not
/// yet renamed, so only this process writes it).
struct Carry<'a> {
    target: &'a Path,
    old: &'a File,
    new: &'a File,
    /// How much of the old file the session was read from.
    read_len: u64,
    /// How much of the old file is in the new one: every complete line
    /// before this offset.
    copied: u64,
    appends: Appends,
}

/// What one look at the old file found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// Nothing past what is copied.
    Nothing,
    /// Complete lines, now copied.
    Lines,
    /// Only part of a line, still being written (or torn).
    Partial,
}

impl Carry<'_> {
    fn changed(&self, what: String) -> SessionError {
        SessionError::ChangedOnDisk {
            path: self.target.to_owned(),
            what,
        }
    }

    fn io(&self, source: std::io::Error) -> SessionError {
        SessionError::WriteFailed {
            path: self.target.to_owned(),
            source,
        }
    }

    /// Copies what the old file holds now past what is copied, up to its
    /// last complete line.
    fn pass(&mut self) -> Result<Found, SessionError> {
        let len = self.old.metadata().map_err(|e| self.io(e))?.len();
        if len < self.copied {
            return Err(self.changed("it was shortened".into()));
        }
        if len == self.copied {
            return Ok(Found::Nothing);
        }
        if let Appends::Refuse(why) = self.appends {
            return Err(self.changed(format!(
                "another process appended {} bytes; {why}",
                len - self.copied
            )));
        }
        if len - self.read_len > CATCH_UP_BYTES {
            return Err(self.changed(format!(
                "another process appended more than {} MiB while the rewrite ran",
                CATCH_UP_BYTES >> 20
            )));
        }
        let end = copy_lines(self.old, self.copied, len, self.new).map_err(|e| match e {
            CopyError::Io(e) => self.io(e),
            CopyError::Line(what) => self.changed(what),
        })?;
        let found = if end > self.copied {
            Found::Lines
        } else {
            Found::Partial
        };
        self.copied = end;
        Ok(found)
    }

    /// Copies rounds of appended lines until a look finds nothing new;
    /// gives up when every one of [`CATCH_UP_ROUNDS`] rounds found more, or
    /// when a line stays incomplete.
    fn catch_up(&mut self) -> Result<(), SessionError> {
        let (mut rounds, mut waits) = (0, 0);
        loop {
            match self.pass()? {
                Found::Nothing => return Ok(()),
                Found::Lines => {
                    rounds += 1;
                    if rounds == CATCH_UP_ROUNDS {
                        return Err(self.changed(format!(
                            "another process kept appending: lines still arrived after {CATCH_UP_ROUNDS} rounds of copying them"
                        )));
                    }
                }
                Found::Partial => {
                    waits += 1;
                    if waits == INCOMPLETE_TRIES {
                        return Err(self.changed(format!(
                            "the line another process is appending at byte {} stays incomplete",
                            self.copied
                        )));
                    }
                    std::thread::sleep(INCOMPLETE_PAUSE);
                }
            }
        }
    }
}

/// Why appended lines could not be copied.
enum CopyError {
    Io(std::io::Error),
    /// An appended line is not an entry, or too long to read.
    Line(String),
}

impl From<std::io::Error> for CopyError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

/// Copies the complete lines of `old` between `from` and `len` to the end
/// of `new`, each checked to be an entry, through a buffer of [`CHUNK`]
/// bytes (a line longer than the buffer is gathered whole, up to
/// [`crate::MAX_LINE_BYTES`]). Returns the offset after the last complete
/// line: a line still being written at `len` is left for a later look.
fn copy_lines(old: &File, from: u64, len: u64, new: &File) -> Result<u64, CopyError> {
    let mut out = BufWriter::with_capacity(CHUNK, new);
    let mut buf = vec![0; CHUNK];
    // The start of the line being gathered, and its bytes so far when it
    // runs past one buffer.
    let mut line_start = from;
    let mut long_line: Vec<u8> = Vec::new();
    let mut at = from;
    while at < len {
        let n = usize::try_from((len - at).min(CHUNK as u64)).unwrap_or(CHUNK);
        old.read_exact_at(&mut buf[..n], at)?;
        let mut rest = &buf[..n];
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            let line = if long_line.is_empty() {
                &rest[..i]
            } else {
                long_line.extend_from_slice(&rest[..i]);
                &long_line[..]
            };
            if line.len() as u64 > crate::MAX_LINE_BYTES {
                return Err(too_long(line_start));
            }
            check_line(line, line_start).map_err(CopyError::Line)?;
            out.write_all(line)?;
            out.write_all(b"\n")?;
            line_start += line.len() as u64 + 1;
            long_line.clear();
            rest = &rest[i + 1..];
        }
        let gathered = long_line.len() as u64 + rest.len() as u64;
        if gathered > crate::MAX_LINE_BYTES {
            return Err(too_long(line_start));
        }
        long_line.extend_from_slice(rest);
        at += n as u64;
    }
    out.flush()?;
    Ok(line_start)
}

/// An appended line at byte `at` longer than musepi reads.
fn too_long(at: u64) -> CopyError {
    CopyError::Line(format!(
        "the line another process appended at byte {at} is longer than {} bytes",
        crate::MAX_LINE_BYTES
    ))
}

/// A non-blank line that another process appended at byte `at` must be a
/// JSON object with an `id`, as every v2 and v3 entry is.
fn check_line(text: &[u8], at: u64) -> Result<(), String> {
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let problem = match read_entry(text) {
        LineRead::Entry(parsed) if parsed.has_id => return Ok(()),
        LineRead::Entry(_) => "has no `id`".to_owned(),
        LineRead::NotAnObject => "is not a JSON object".to_owned(),
        LineRead::Malformed(e) => format!("is not valid JSON ({e})"),
    };
    Err(format!(
        "the line another process appended at byte {at} {problem}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A custom entry line of about `len` bytes, without its newline.
    fn entry_line(id: &str, len: usize) -> Vec<u8> {
        let head = format!("{{\"type\":\"custom\",\"id\":\"{id}\",\"data\":\"");
        let mut line = head.into_bytes();
        line.resize(len.saturating_sub(2).max(line.len()), b'x');
        line.extend_from_slice(b"\"}");
        line
    }

    /// `bytes` in a file of a temporary folder, opened for reading, and an
    /// empty file beside it to copy to.
    fn files(dir: &Path, bytes: &[u8]) -> (File, File) {
        std::fs::write(dir.join("old"), bytes).unwrap();
        let new = std::fs::OpenOptions::new()
            .create_new(true)
            .read(true)
            .append(true)
            .open(dir.join("new"))
            .unwrap();
        (File::open(dir.join("old")).unwrap(), new)
    }

    #[test]
    fn lines_longer_than_the_buffer_are_copied_whole_and_a_partial_last_line_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let mut complete = Vec::new();
        for (i, len) in [10, CHUNK + 5, 3 * CHUNK, 7, CHUNK - 1]
            .into_iter()
            .enumerate()
        {
            complete.extend_from_slice(&entry_line(&format!("e{i}"), len));
            complete.push(b'\n');
        }
        complete.extend_from_slice(b"   \n");
        let mut old = b"{\"type\":\"session\"}\n".to_vec();
        let from = old.len() as u64;
        old.extend_from_slice(&complete);
        // A line its writer is still writing, longer than the buffer.
        old.extend_from_slice(&entry_line("partial", 2 * CHUNK));
        let (old_file, new_file) = files(dir.path(), &old);
        let end = copy_lines(&old_file, from, old.len() as u64, &new_file)
            .map_err(|e| match e {
                CopyError::Io(e) => e.to_string(),
                CopyError::Line(what) => what,
            })
            .unwrap();
        assert_eq!(end, from + complete.len() as u64, "up to the partial line");
        assert!(
            std::fs::read(dir.path().join("new")).unwrap() == complete,
            "every complete line, byte for byte"
        );
    }

    #[test]
    fn an_appended_line_longer_than_the_cap_stops_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let cap = usize::try_from(crate::MAX_LINE_BYTES).unwrap();
        let mut old = entry_line("huge", cap + 1);
        old.push(b'\n');
        let (old_file, new_file) = files(dir.path(), &old);
        match copy_lines(&old_file, 0, old.len() as u64, &new_file) {
            Err(CopyError::Line(what)) => assert!(
                what.contains("at byte 0 is longer than 67108864 bytes"),
                "{what}"
            ),
            Err(CopyError::Io(e)) => panic!("{e}"),
            Ok(end) => panic!("copied up to {end}"),
        }
    }
}
