//! Where the bytes of each line of a session live, and reading them back
//! through the reader the journal gave the session.

use std::path::{Path, PathBuf};

use super::Session;
use crate::error::SessionError;

/// Where the bytes of one line live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineSource {
    /// In the file the session was loaded from (or last written to).
    File {
        /// Byte offset of the line's first byte.
        offset: u64,
        /// Length without the newline.
        len: u64,
    },
    /// Only in memory: a new entry, or a line that migration changed in a
    /// session that has no file to read it back from.
    Text(Box<str>),
    /// In the file, edited: the line's text is the line at `offset` with
    /// `edit` applied (what migration or pruning changes in it), printed as
    /// `JSON.stringify` prints it when it is read or written.
    Edited {
        /// Byte offset of the line's first byte.
        offset: u64,
        /// Length without the newline.
        len: u64,
        /// What migration or pruning changes in it.
        edit: Box<crate::migrate::LineEdit>,
    },
}

/// A line that could not be read, kept so rewrites lose nothing.
#[derive(Debug, Clone)]
pub(crate) struct KeptLine {
    /// Number of entries that precede it in the file.
    pub(crate) before_entry: usize,
    /// Whether it came before the header.
    pub(crate) before_header: bool,
    pub(crate) source: LineSource,
}

/// The file a session's lines are read back from, and the reader the
/// journal gives it: only the journal touches the file system.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    /// The file.
    pub(crate) path: PathBuf,
    /// Reads `len` bytes at `offset` of the file as text.
    pub(crate) read: fn(&Path, u64, u64) -> std::io::Result<String>,
}

impl Session {
    /// The file the session was read from (or last written to), if any.
    pub fn origin(&self) -> Option<&Path> {
        self.origin.as_ref().map(|o| o.path.as_path())
    }

    /// The exact bytes of entry `i`'s line, without the newline.
    pub fn raw_line(&self, i: usize) -> Result<String, SessionError> {
        self.read_source(&self.sources[i])
    }

    /// The exact bytes of the header line.
    pub fn raw_header(&self) -> Result<String, SessionError> {
        self.read_source(&self.header_source)
    }

    pub(crate) fn read_source(&self, source: &LineSource) -> Result<String, SessionError> {
        match source {
            LineSource::Text(t) => Ok(t.to_string()),
            LineSource::File { offset, len } => self.read_span(*offset, *len),
            LineSource::Edited { offset, len, edit } => {
                let line = self.read_span(*offset, *len)?;
                edit.print(line.as_bytes()).map_err(|e| {
                    self.origin_error(std::io::Error::new(std::io::ErrorKind::InvalidData, e))
                })
            }
        }
    }

    fn read_span(&self, offset: u64, len: u64) -> Result<String, SessionError> {
        let origin = self.origin.as_ref().ok_or(SessionError::NoOrigin)?;
        (origin.read)(&origin.path, offset, len).map_err(|source| self.origin_error(source))
    }

    fn origin_error(&self, source: std::io::Error) -> SessionError {
        match &self.origin {
            Some(origin) => SessionError::Io {
                path: origin.path.clone(),
                source,
            },
            None => SessionError::NoOrigin,
        }
    }
}
