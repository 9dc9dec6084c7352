//! Writing a session's lines: unchanged lines copied byte for byte from the
//! file they were read from, changed and new lines from memory.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::SessionError;
use crate::session::{LineSource, Session};

/// Where each line went in a file just written.
pub(crate) struct Written {
    pub(crate) header: LineSource,
    pub(crate) entries: Vec<LineSource>,
    pub(crate) kept: Vec<LineSource>,
    /// Bytes written.
    pub(crate) len: u64,
}

/// Writes every line of `session` to `out`, in file order: kept lines
/// before the header, the header, then entries with the kept lines between
/// them. `origin` is the open file the session was read from, if the
/// caller has it; otherwise the session's origin path is opened.
pub(crate) fn write_lines(
    out: &mut dyn Write,
    session: &Session,
    origin: Option<&File>,
    name: &Path,
) -> Result<Written, SessionError> {
    let io = |source| SessionError::WriteFailed {
        path: name.to_owned(),
        source,
    };
    let mut offset = 0u64;
    let mut reader = OriginReader::new(session.origin(), origin);
    let mut scratch = Vec::new();
    let mut out = BufWriter::with_capacity(1 << 20, out);
    let mut put = |out: &mut BufWriter<&mut dyn Write>,
                   source: &LineSource|
     -> Result<LineSource, SessionError> {
        let bytes = reader.bytes(source, &mut scratch)?;
        out.write_all(bytes).map_err(io)?;
        out.write_all(b"\n").map_err(io)?;
        let written = LineSource::File {
            offset,
            len: bytes.len() as u64,
        };
        offset += bytes.len() as u64 + 1;
        Ok(written)
    };
    let mut kept = Vec::with_capacity(session.kept_lines.len());
    for k in session.kept_lines.iter().filter(|k| k.before_header) {
        kept.push(put(&mut out, &k.source)?);
    }
    let header = put(&mut out, &session.header_source)?;
    let mut entries = Vec::with_capacity(session.len());
    let mut pending = session
        .kept_lines
        .iter()
        .filter(|k| !k.before_header)
        .peekable();
    for i in 0..session.len() {
        while let Some(k) = pending.next_if(|k| k.before_entry <= i) {
            kept.push(put(&mut out, &k.source)?);
        }
        entries.push(put(&mut out, &session.sources[i])?);
    }
    for k in pending {
        kept.push(put(&mut out, &k.source)?);
    }
    out.flush().map_err(io)?;
    Ok(Written {
        header,
        entries,
        kept,
        len: offset,
    })
}

/// Reads stored lines from the session's origin file through one handle.
pub(crate) struct OriginReader<'a> {
    path: Option<&'a Path>,
    given: Option<&'a File>,
    opened: Option<File>,
}

impl<'a> OriginReader<'a> {
    pub(crate) fn new(path: Option<&'a Path>, given: Option<&'a File>) -> Self {
        Self {
            path,
            given,
            opened: None,
        }
    }

    pub(crate) fn bytes<'s>(
        &mut self,
        source: &'s LineSource,
        scratch: &'s mut Vec<u8>,
    ) -> Result<&'s [u8], SessionError> {
        match source {
            LineSource::Text(t) => Ok(t.as_bytes()),
            LineSource::Edited { offset, len, edit } => {
                let mut line = Vec::new();
                self.read_at(*offset, *len, &mut line)?;
                let text = edit.print(&line).map_err(|e| SessionError::WriteFailed {
                    path: self.path.map(Path::to_owned).unwrap_or_default(),
                    source: io::Error::new(io::ErrorKind::InvalidData, e),
                })?;
                scratch.clear();
                scratch.extend_from_slice(text.as_bytes());
                Ok(scratch)
            }
            LineSource::File { offset, len } => {
                self.read_at(*offset, *len, scratch)?;
                Ok(scratch)
            }
        }
    }

    /// Reads `len` bytes at `offset` of the origin file into `buf`.
    fn read_at(&mut self, offset: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), SessionError> {
        let path = self.path.ok_or(SessionError::NoOrigin)?;
        let io = |source| SessionError::WriteFailed {
            path: path.to_owned(),
            source,
        };
        let file = if let Some(f) = self.given {
            f
        } else {
            if self.opened.is_none() {
                self.opened = Some(crate::fsutil::open_regular(path)?);
            }
            self.opened.as_ref().ok_or(SessionError::NoOrigin)?
        };
        buf.clear();
        buf.resize(usize::try_from(len).unwrap_or(usize::MAX), 0);
        file.read_exact_at(buf, offset).map_err(io)
    }
}

/// `path` as the origin of a session read from it: its lines are read
/// back with [`read_span`].
pub(crate) fn file_origin(path: &Path) -> crate::session::Origin {
    crate::session::Origin {
        path: path.to_owned(),
        read: read_span,
    }
}

/// Reads `len` bytes at `offset` of `path` as text.
fn read_span(path: &Path, offset: u64, len: u64) -> io::Result<String> {
    let file = File::open(path)?;
    let mut buf = vec![
        0u8;
        usize::try_from(len)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?
    ];
    file.read_exact_at(&mut buf, offset)?;
    String::from_utf8(buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}
