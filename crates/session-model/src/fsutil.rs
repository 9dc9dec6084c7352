//! Opening session files safely: regular files only, never blocking on a
//! FIFO or a device, and lines read with a cap.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, BufRead, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use crate::error::SessionError;

/// Whether `a` and `b` name the same existing file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => a == b,
    }
}

/// The longest line musepi reads, in bytes (64 MiB, newline excluded).
///
/// pi truncates tool output and resizes images long before a line gets
/// this big; a longer line is far more likely a file that is not a session
/// (or a runaway write) than a real entry, and reading it whole would take
/// that much memory.
pub const MAX_LINE_BYTES: u64 = 64 << 20;

/// What a non-regular file is, in words.
pub(crate) fn kind_of(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("folder")
    } else if t.is_fifo() {
        Some("FIFO (named pipe)")
    } else if t.is_char_device() {
        Some("character device")
    } else if t.is_block_device() {
        Some("block device")
    } else if t.is_socket() {
        Some("socket")
    } else {
        Some("special file")
    }
}

/// Refuses a path that exists and is not a regular file (a folder, a FIFO,
/// a device, a socket; a symbolic link is followed), as
/// [`SessionError::NotRegular`]: nothing may be written there, with or
/// without `--force`. A path that does not exist passes.
pub fn refuse_special_file(path: &Path) -> Result<(), SessionError> {
    match std::fs::metadata(path).ok().as_ref().and_then(kind_of) {
        Some(kind) => Err(SessionError::NotRegular {
            path: path.to_owned(),
            kind,
        }),
        None => Ok(()),
    }
}

/// Opens `path` for reading, refusing anything but a regular file.
///
/// The file is opened without blocking (a FIFO with no writer would
/// otherwise hang the open) and checked on the open handle, so a file
/// swapped for a FIFO after a check cannot slip through.
pub(crate) fn open_regular(path: &Path) -> Result<File, SessionError> {
    let io = |source| SessionError::Io {
        path: path.to_owned(),
        source,
    };
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if let Some(kind) = kind_of(&meta) {
        return Err(SessionError::NotRegular {
            path: path.to_owned(),
            kind,
        });
    }
    Ok(file)
}

/// Reads one line including its newline into `buf`; returns the bytes
/// read, or `None` when the line is longer than `limit` (newline excluded).
pub(crate) fn read_line_capped(
    reader: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    limit: u64,
) -> io::Result<Option<usize>> {
    let n = Read::take(&mut *reader, limit + 1).read_until(b'\n', buf)?;
    if buf.last() != Some(&b'\n') && n as u64 > limit {
        return Ok(None);
    }
    Ok(Some(n))
}

/// Reads line `line_no` (with its newline) into `buf`; returns the bytes read.
pub(crate) fn next_line(
    path: &Path,
    line_no: u64,
    reader: &mut dyn BufRead,
    buf: &mut Vec<u8>,
) -> Result<usize, SessionError> {
    read_line_capped(reader, buf, MAX_LINE_BYTES)
        .map_err(|source| SessionError::Io {
            path: path.to_owned(),
            source,
        })?
        .ok_or_else(|| SessionError::LineTooLong {
            path: path.to_owned(),
            line: line_no,
            limit: MAX_LINE_BYTES,
        })
}

/// Why the first line of a file cannot be a header before JSON is even
/// tried: a byte-order mark, or bytes that are not UTF-8.
pub(crate) fn not_text(line: &[u8]) -> Option<String> {
    if line.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Some(
            "the line starts with a UTF-8 byte-order mark (EF BB BF); session files are UTF-8 without one"
                .into(),
        );
    }
    not_utf8(line)
}

/// Where a line stops being UTF-8: the first bad byte and its column.
pub(crate) fn not_utf8(line: &[u8]) -> Option<String> {
    let at = std::str::from_utf8(line).err()?.valid_up_to();
    Some(format!(
        "the line is not valid UTF-8 (byte {:#04x} at column {})",
        line[at],
        at + 1
    ))
}

pub(crate) fn trim_newline(buf: &mut Vec<u8>) {
    if buf.last() == Some(&b'\n') {
        buf.pop();
    }
}
