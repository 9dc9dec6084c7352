//! After the rename: lines an appender wrote to the replaced file.
//!
//! An appender that opened the old file before the rename may still write
//! to it. Those late bytes belong right after what the new file was given,
//! before anything appended to the new file since; so the new file is
//! written again with them in their place, as many times as late bytes
//! keep coming (an appender without the lock, caught by each rename in the
//! moment between its open and its write). Every copy goes through a buffer
//! of [`CHUNK`] bytes, so memory stays bounded however much arrives.

use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use crate::error::SessionError;
use crate::journal::disk::Temp;
use crate::journal::holders::{CLOSE_WAIT, wait_closed_elsewhere};

/// The bytes read from the old file at a time.
pub(crate) const CHUNK: usize = 1 << 20;

/// How many times a rewrite is redone to put late lines in their place
/// before it settles for appending them. Each rename can catch an appender
/// that takes no lock between its open and its write; one that appends
/// without pause was caught by about 3 renames in 10, so 5 rounds left
/// its lines out of order about once in 400 rewrites.
const REORDER_ROUNDS: usize = 32;

/// Puts what reached the replaced file `locked` after the last copy (its
/// bytes past `copied`) in its place in the new file `first`, whose
/// content in place is `end` bytes long. Returns the length of the content
/// in place when no more late bytes were found, and whether a replaced file
/// was still open for writing elsewhere when the wait for it ran out.
pub(crate) fn settle_late(
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
        still_open |= wait_closed_elsewhere(old, CLOSE_WAIT);
        let old_len = old.metadata().map_err(io)?.len();
        if old_len <= old_copied {
            return Ok((end, still_open));
        }
        let late = old_len - old_copied;
        if round + 1 == REORDER_ROUNDS {
            // Never lose a byte, even when the order cannot be kept.
            let out = std::fs::OpenOptions::new()
                .append(true)
                .open(target)
                .map_err(io)?;
            copy_range(old, old_copied, old_len, &out).map_err(io)?;
            out.sync_data().map_err(io)?;
            return Ok((end + late, still_open));
        }
        let mut next = Temp::create(target, Some(original.mode()))?;
        next.take_identity(target, original)?;
        copy_range(cur, 0, end, &next.file).map_err(io)?;
        copy_range(old, old_copied, old_len, &next.file).map_err(io)?;
        next.file.lock().map_err(io)?;
        let mut cur_copied = copy_past(cur, end, &next.file).map_err(io)?;
        next.sync(target)?;
        cur_copied = copy_past(cur, cur_copied, &next.file).map_err(io)?;
        next.rename_over(target)?;
        next.sync(target)?;
        next.sync_folder(target)?;
        end = cur_copied + late;
        old_copied = cur_copied;
        held.push(next);
    }
    Ok((end, still_open))
}

/// Copies bytes `[start, end)` of `from` to the end of `to`, through a
/// buffer of [`CHUNK`] bytes.
fn copy_range(from: &File, start: u64, end: u64, to: &File) -> std::io::Result<()> {
    let mut buf = vec![0; CHUNK];
    let mut at = start;
    let mut out = to;
    while at < end {
        let n = usize::try_from((end - at).min(CHUNK as u64)).unwrap_or(CHUNK);
        from.read_exact_at(&mut buf[..n], at)?;
        std::io::Write::write_all(&mut out, &buf[..n])?;
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
