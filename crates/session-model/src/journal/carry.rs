//! Rewriting a session in place without losing a byte that another process
//! appends meanwhile.
//!
//! The new file is written to a temporary file beside the old one. Under
//! the old file's lock, with the temporary file locked too, every byte the
//! old file gained since it was read is copied over, line by line and
//! checked (an incomplete or invalid appended line stops the rewrite: the
//! old file stays as it is). Then the temporary file is renamed over the
//! old one, and the old file, which an appender may still have open, is
//! checked again: if anything reached it after the last copy, the new file
//! is written once more with those bytes in their place, before whatever
//! was appended to the new file since.
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
use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::time::Duration;

use crate::error::SessionError;
use crate::journal::disk::Temp;
use crate::journal::lines::{Written, write_lines};
use crate::session::Session;
use crate::wire::{LineRead, read_entry};

/// How long an appended line may stay incomplete before the rewrite gives
/// up: 50 looks, 2 ms apart.
const INCOMPLETE_TRIES: u32 = 50;
const INCOMPLETE_PAUSE: Duration = Duration::from_millis(2);

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
    let mut copied = carry_checked(target, locked, &tmp.file, read_len, appends)?;
    tmp.sync(target)?;
    // What arrived during the sync is copied right before the rename, and
    // made durable right after it, so no sync widens the gap between the
    // last copy and the rename.
    copied = carry_checked(target, locked, &tmp.file, copied, appends)?;
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

/// How many times a rewrite is redone to put late lines in their place
/// before it settles for appending them. Each rename can catch an appender
/// that takes no lock between its open and its write; one that appends
/// without pause was caught by about 3 renames in 10, so 5 rounds left
/// its lines out of order about once in 400 rewrites.
const REORDER_ROUNDS: usize = 32;

/// After the rename: an appender that opened the old file before it may
/// still have written to it. Those late bytes belong right after what the
/// new file was given (`end`), before anything appended to the new file
/// since; so the new file is written again with them in their place, as
/// many times as late bytes keep coming (an appender without the lock, in
/// the moment of the rename). Returns the length of the content in place
/// when no more late bytes were found, and whether a replaced file was
/// still open for writing elsewhere when the wait for it ran out.
fn settle_late(
    target: &Path,
    original: &std::fs::Metadata,
    locked: &File,
    copied: u64,
    first: Temp,
    end: u64,
) -> Result<(u64, bool), SessionError> {
    let io = |source| SessionError::WriteFailed {
        path: target.to_owned(),
        source,
    };
    // Every renamed file stays open until the rewrite is done, and locked
    // until a newer one replaces it.
    let mut held = vec![first];
    let (mut old_copied, mut end) = (copied, end);
    let mut still_open = false;
    for round in 0..REORDER_ROUNDS {
        let old = if round == 0 {
            locked
        } else {
            &held[held.len() - 2].file
        };
        let cur = &held[held.len() - 1].file;
        // Nobody can open the replaced file any more; once no other process
        // holds it open for writing, nothing more can reach it. Its lock is
        // let go first: an appender waiting for it then finds the file
        // replaced, closes it and appends to the new one (still locked).
        old.unlock().map_err(io)?;
        still_open |= super::holders::wait_closed_elsewhere(old, super::holders::CLOSE_WAIT);
        let late = read_past(old, old_copied).map_err(io)?;
        if late.is_empty() {
            return Ok((end, still_open));
        }
        if round + 1 == REORDER_ROUNDS {
            // Never lose a byte, even when the order cannot be kept.
            let mut out = std::fs::OpenOptions::new()
                .append(true)
                .open(target)
                .map_err(io)?;
            out.write_all(&late).map_err(io)?;
            out.sync_data().map_err(io)?;
            return Ok((end + late.len() as u64, still_open));
        }
        let next = Temp::create(target, Some(original.mode()))?;
        next.take_identity(target, original)?;
        copy_range(cur, 0, end, &next.file).map_err(io)?;
        (&next.file).write_all(&late).map_err(io)?;
        next.file.lock().map_err(io)?;
        let mut cur_copied = copy_past(cur, end, &next.file).map_err(io)?;
        next.sync(target)?;
        cur_copied = copy_past(cur, cur_copied, &next.file).map_err(io)?;
        let mut next = next;
        next.rename_over(target)?;
        next.sync(target)?;
        next.sync_folder(target)?;
        end = cur_copied + late.len() as u64;
        old_copied = cur_copied;
        held.push(next);
    }
    Ok((end, still_open))
}

/// The bytes of `file` past `from`.
fn read_past(file: &File, from: u64) -> std::io::Result<Vec<u8>> {
    let len = file.metadata()?.len();
    let mut bytes = vec![0; usize::try_from(len.saturating_sub(from)).unwrap_or(usize::MAX)];
    file.read_exact_at(&mut bytes, from)?;
    Ok(bytes)
}

/// Copies bytes `[start, end)` of `from` to the end of `to`.
fn copy_range(from: &File, start: u64, end: u64, to: &File) -> std::io::Result<()> {
    let mut buf = vec![0; 1 << 20];
    let mut at = start;
    let mut out = to;
    while at < end {
        let n = usize::try_from((end - at).min(buf.len() as u64)).unwrap_or(buf.len());
        from.read_exact_at(&mut buf[..n], at)?;
        out.write_all(&buf[..n])?;
        at += n as u64;
    }
    Ok(())
}

/// Copies everything `from` holds past `start` to the end of `to`; returns
/// the offset copied up to.
fn copy_past(from: &File, start: u64, to: &File) -> std::io::Result<u64> {
    let end = from.metadata()?.len();
    copy_range(from, start, end, to)?;
    Ok(end.max(start))
}

/// Copies the complete, valid lines `old` gained past `from` to the end of
/// `new` (not yet renamed, so only this process writes it); returns the
/// offset copied up to.
fn carry_checked(
    target: &Path,
    old: &File,
    new: &File,
    from: u64,
    appends: Appends,
) -> Result<u64, SessionError> {
    let changed = |what: String| SessionError::ChangedOnDisk {
        path: target.to_owned(),
        what,
    };
    let io = |source| SessionError::WriteFailed {
        path: target.to_owned(),
        source,
    };
    let mut copied = from;
    let mut tries = 0;
    loop {
        let len = old.metadata().map_err(io)?.len();
        if len < copied {
            return Err(changed("it was shortened".into()));
        }
        if len == copied {
            return Ok(copied);
        }
        if let Appends::Refuse(why) = appends {
            return Err(changed(format!(
                "another process appended {} bytes; {why}",
                len - copied
            )));
        }
        let mut bytes = vec![0; usize::try_from(len - copied).unwrap_or(usize::MAX)];
        old.read_exact_at(&mut bytes, copied).map_err(io)?;
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        check_lines(&bytes[..complete], copied).map_err(changed)?;
        let mut out = new;
        out.write_all(&bytes[..complete]).map_err(io)?;
        copied += complete as u64;
        if complete == bytes.len() {
            return Ok(copied);
        }
        tries += 1;
        if tries >= INCOMPLETE_TRIES {
            return Err(changed(format!(
                "the line another process is appending at byte {copied} stays incomplete"
            )));
        }
        std::thread::sleep(INCOMPLETE_PAUSE);
    }
}

/// Every non-blank line of `bytes` (which start at byte `at` of the old
/// file) must be a JSON object with an `id`, as every v2 and v3 entry is.
fn check_lines(bytes: &[u8], at: u64) -> Result<(), String> {
    let mut offset = at;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let start = offset;
        offset += line.len() as u64;
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let problem = match read_entry(text) {
            LineRead::Entry(parsed) if parsed.has_id => continue,
            LineRead::Entry(_) => "has no `id`".to_owned(),
            LineRead::NotAnObject => "is not a JSON object".to_owned(),
            LineRead::Malformed(e) => format!("is not valid JSON ({e})"),
        };
        return Err(format!(
            "the line another process appended at byte {start} {problem}"
        ));
    }
    Ok(())
}
