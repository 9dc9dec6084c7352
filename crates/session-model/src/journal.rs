//! The journal file: durable appends, the deferred first flush and atomic
//! rewrites (docs/design.md, "The session file and its tree").
//!
//! Invariants:
//! - a complete entry line on disk is never lost: appends add one whole line
//!   and `fsync`; rewrites write a temporary file in the same folder, `fsync`
//!   it, rename it over the original and `fsync` the folder;
//! - writers take an exclusive advisory lock on the file and check that it
//!   is still the file they read (same inode and length); if it is not, they
//!   write nothing and report [`SessionError::ChangedOnDisk`];
//! - a file that ends with a torn line is not written to until it is
//!   repaired explicitly; a file that cannot be read is never written.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::entry::{Entry, EntryBody, Header};
use crate::error::SessionError;
use crate::id::{EntryId, IdSource};
use crate::load::{FileTail, load_file};
use crate::message::Usage;
use crate::session::{LineSource, Session, Stamp};

/// Identity of the file as last seen: inode, length and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
}

impl Seen {
    fn of(meta: &fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
        }
    }
}

/// A session bound to its file.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    session: Session,
    /// What the file looked like after our last read or write; `None` while
    /// the first flush is deferred (nothing on disk yet).
    seen: Option<Seen>,
    ends_with_newline: bool,
    torn_line: Option<u64>,
    /// Entries `[0, written)` are on disk.
    written: usize,
    /// The file on disk is an older version than the session in memory.
    migration_pending: bool,
    /// Replacements made in memory only (see [`Journal::stage_replacements`]),
    /// with what they replaced.
    staged: Vec<(usize, Entry, LineSource)>,
}

impl Journal {
    /// Reads the session at `path`; v1 and v2 files are migrated in memory
    /// only (see [`Journal::persist_migration`]).
    pub fn open(path: impl AsRef<Path>, ids: &mut dyn IdSource) -> Result<Self, SessionError> {
        let path = path.as_ref().to_owned();
        let meta = fs::metadata(&path).map_err(|source| SessionError::Io {
            path: path.clone(),
            source,
        })?;
        let (session, tail) = load_file(&path, ids)?;
        Ok(Self::from_loaded(path, session, &tail, &meta))
    }

    fn from_loaded(path: PathBuf, session: Session, tail: &FileTail, meta: &fs::Metadata) -> Self {
        let mut seen = Seen::of(meta);
        seen.len = tail.len;
        Self {
            migration_pending: session.was_migrated(),
            written: session.len(),
            path,
            session,
            seen: Some(seen),
            ends_with_newline: tail.ends_with_newline,
            torn_line: tail.torn.map(|(line, _)| line),
            staged: Vec::new(),
        }
    }

    /// A new, empty session at `path`. Nothing is written until the session
    /// holds an assistant message (the deferred first flush).
    pub fn create(path: impl AsRef<Path>, header: Header) -> Result<Self, SessionError> {
        Self::with_session(path, Session::new(header))
    }

    /// Binds an in-memory session (for example [`Session::branched`]) to a
    /// new file at `path`; it is written at once if it holds an assistant
    /// message, otherwise at the first append after one exists.
    pub fn with_session(path: impl AsRef<Path>, session: Session) -> Result<Self, SessionError> {
        let path = path.as_ref().to_owned();
        if path.exists() {
            return Err(SessionError::AlreadyExists { path });
        }
        let mut journal = Self {
            path,
            session,
            seen: None,
            ends_with_newline: true,
            torn_line: None,
            written: 0,
            migration_pending: false,
            staged: Vec::new(),
        };
        if journal.session.has_assistant_message() {
            journal.flush_all()?;
        }
        Ok(journal)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Whether anything is on disk yet.
    pub fn is_flushed(&self) -> bool {
        self.seen.is_some()
    }

    /// Whether the file on disk is older than the session in memory.
    pub fn migration_pending(&self) -> bool {
        self.migration_pending
    }

    /// Moves the leaf (in memory; the file records the leaf as its last line).
    pub fn set_leaf(&mut self, id: &str) -> Result<(), SessionError> {
        self.session.set_leaf(id)
    }

    /// Clears the leaf (in memory).
    pub fn reset_leaf(&mut self) {
        self.session.reset_leaf();
    }

    /// Appends an entry under the leaf and makes it durable.
    ///
    /// On error the session is left as it was.
    pub fn append(
        &mut self,
        body: EntryBody,
        stamp: &mut Stamp<'_>,
    ) -> Result<EntryId, SessionError> {
        self.check_writable()?;
        let before = self.session.clone_state();
        let id = self.session.append(body, stamp);
        match self.persist_new() {
            Ok(()) => Ok(id),
            Err(e) => {
                self.session.restore_state(before);
                Err(e)
            }
        }
    }

    /// Appends a label entry durably.
    pub fn append_label(
        &mut self,
        target: &str,
        label: Option<&str>,
        stamp: &mut Stamp<'_>,
    ) -> Result<EntryId, SessionError> {
        if self.session.index_of(target).is_none() {
            return Err(SessionError::EntryNotFound(EntryId::new(target)));
        }
        let body = EntryBody::Label {
            target_id: EntryId::new(target),
            label: label.map(str::to_owned),
        };
        self.append(body, stamp)
    }

    /// `branchWithSummary`, durably.
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: &str,
        details: Option<Value>,
        from_extension: bool,
        usage: Option<Usage>,
        stamp: &mut Stamp<'_>,
    ) -> Result<EntryId, SessionError> {
        self.check_writable()?;
        let before = self.session.clone_state();
        let id = self.session.branch_with_summary(
            from,
            summary,
            details,
            from_extension,
            usage,
            stamp,
        )?;
        match self.persist_new() {
            Ok(()) => Ok(id),
            Err(e) => {
                self.session.restore_state(before);
                Err(e)
            }
        }
    }

    /// Replaces entries in memory only, so what follows (a compaction) sees
    /// them; the next write (an append, or [`Journal::rewrite`]) writes them
    /// together with it in one atomic rewrite, and
    /// [`Journal::discard_staged`] undoes them. A failed or cancelled
    /// operation thus leaves the file as it was.
    pub fn stage_replacements(
        &mut self,
        changes: Vec<(usize, Entry, String)>,
    ) -> Result<(), SessionError> {
        self.check_writable()?;
        for (i, entry, text) in changes {
            let (old_entry, old_source) = self.session.replace_entry(i, entry, text);
            if !self.staged.iter().any(|(j, _, _)| *j == i) {
                self.staged.push((i, old_entry, old_source));
            }
        }
        Ok(())
    }

    /// The entry at `index` as it was before a staged replacement, if one
    /// is staged there.
    pub fn staged_original(&self, index: usize) -> Option<&Entry> {
        self.staged
            .iter()
            .find(|(i, _, _)| *i == index)
            .map(|(_, entry, _)| entry)
    }

    /// Whether replacements are staged and not yet written.
    pub fn has_staged(&self) -> bool {
        !self.staged.is_empty()
    }

    /// Undoes every staged replacement.
    pub fn discard_staged(&mut self) {
        for (i, entry, source) in self.staged.drain(..).rev() {
            self.session.entries[i] = entry;
            self.session.sources[i] = source;
        }
    }

    /// Replaces entries in place (pruning) and rewrites the file atomically.
    /// Each replacement is the new typed entry and its new line text.
    pub fn replace_entries(
        &mut self,
        changes: Vec<(usize, Entry, String)>,
    ) -> Result<(), SessionError> {
        self.check_writable()?;
        let saved: Vec<(usize, Entry, LineSource)> = changes
            .iter()
            .map(|(i, _, _)| {
                (
                    *i,
                    self.session.entries[*i].clone(),
                    self.session.sources[*i].clone(),
                )
            })
            .collect();
        for (i, entry, text) in changes {
            self.session.entries[i] = entry;
            self.session.sources[i] = LineSource::Text(text.into_boxed_str());
        }
        if let Err(e) = self.rewrite() {
            for (i, entry, source) in saved {
                self.session.entries[i] = entry;
                self.session.sources[i] = source;
            }
            return Err(e);
        }
        Ok(())
    }

    /// Writes the migrated session over the old v1/v2 file (atomically).
    pub fn persist_migration(&mut self) -> Result<bool, SessionError> {
        if !self.migration_pending {
            return Ok(false);
        }
        self.check_writable()?;
        self.rewrite()?;
        Ok(true)
    }

    /// Rewrites the whole file atomically from the session: unchanged lines
    /// byte for byte, changed lines from their new text, unreadable lines
    /// kept in place, blank lines dropped.
    pub fn rewrite(&mut self) -> Result<(), SessionError> {
        self.check_writable()?;
        if self.seen.is_none() {
            return self.flush_all();
        }
        let lock = lock_file(&self.path)?;
        self.check_unchanged(&lock)?;
        let offsets = write_atomically(&self.path, &self.session)?;
        self.after_full_write(&offsets)?;
        drop(lock);
        Ok(())
    }

    /// Writes the session to another file atomically (`-o OUT`); the
    /// journal stays bound to its own file.
    pub fn write_copy(&self, out: &Path) -> Result<(), SessionError> {
        write_atomically(out, &self.session).map(|_| ())
    }

    fn check_writable(&self) -> Result<(), SessionError> {
        match self.torn_line {
            Some(line) => Err(SessionError::TornTail {
                path: self.path.clone(),
                line,
            }),
            None => Ok(()),
        }
    }

    fn check_unchanged(&self, lock: &File) -> Result<(), SessionError> {
        let io = |source| SessionError::Io {
            path: self.path.clone(),
            source,
        };
        let now = Seen::of(&lock.metadata().map_err(io)?);
        match &self.seen {
            Some(seen) if *seen == now => Ok(()),
            _ => Err(SessionError::ChangedOnDisk {
                path: self.path.clone(),
            }),
        }
    }

    /// Writes what the last in-memory change added.
    fn persist_new(&mut self) -> Result<(), SessionError> {
        if self.seen.is_none() {
            if self.session.has_assistant_message() {
                self.flush_all()?;
            }
            return Ok(());
        }
        if self.migration_pending || !self.staged.is_empty() {
            return self.rewrite();
        }
        let lock = lock_file(&self.path)?;
        self.check_unchanged(&lock)?;
        let io = |source| SessionError::Io {
            path: self.path.clone(),
            source,
        };
        let mut out = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(io)?;
        let mut bytes = Vec::new();
        if !self.ends_with_newline {
            bytes.push(b'\n');
        }
        let mut offset = self.seen.as_ref().map_or(0, |s| s.len) + bytes.len() as u64;
        let mut spans = Vec::new();
        let mut origin = OriginReader::new(self.session.origin());
        let mut scratch = Vec::new();
        for i in self.written..self.session.len() {
            let line = origin.bytes(&self.session.sources[i], &mut scratch)?;
            spans.push((i, offset, line.len() as u64));
            offset += line.len() as u64 + 1;
            bytes.extend_from_slice(line);
            bytes.push(b'\n');
        }
        out.write_all(&bytes).map_err(io)?;
        out.sync_data().map_err(io)?;
        for (i, offset, len) in spans {
            self.session.sources[i] = LineSource::File { offset, len };
        }
        self.written = self.session.len();
        self.ends_with_newline = true;
        self.seen = Some(Seen::of(&out.metadata().map_err(io)?));
        drop(lock);
        Ok(())
    }

    /// The deferred first flush: header and every entry, in one new file.
    fn flush_all(&mut self) -> Result<(), SessionError> {
        let offsets = write_atomically(&self.path, &self.session)?;
        self.after_full_write(&offsets)
    }

    fn after_full_write(&mut self, offsets: &Written) -> Result<(), SessionError> {
        let io = |source| SessionError::Io {
            path: self.path.clone(),
            source,
        };
        self.session.header_source = offsets.header.clone();
        for (i, source) in offsets.entries.iter().enumerate() {
            self.session.sources[i] = source.clone();
        }
        for (kept, source) in self.session.kept_lines.iter_mut().zip(&offsets.kept) {
            kept.source = source.clone();
        }
        self.session.origin = Some(self.path.clone());
        self.written = self.session.len();
        self.ends_with_newline = true;
        self.migration_pending = false;
        self.staged.clear();
        self.seen = Some(Seen::of(&fs::metadata(&self.path).map_err(io)?));
        Ok(())
    }
}

/// Where each line went in a file just written.
struct Written {
    header: LineSource,
    entries: Vec<LineSource>,
    kept: Vec<LineSource>,
}

/// Writes `session` to `path` through a temporary file in the same folder:
/// write, `fsync`, rename, `fsync` the folder. Lines still on disk are read
/// from the session's origin file.
fn write_atomically(path: &Path, session: &Session) -> Result<Written, SessionError> {
    let io = |source| SessionError::Io {
        path: path.to_owned(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(
            ".{}.",
            path.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("session")
        ))
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(io)?;
    if let Ok(meta) = fs::metadata(path) {
        tmp.as_file()
            .set_permissions(meta.permissions())
            .map_err(io)?;
    }
    let mut offset = 0u64;
    let mut origin = OriginReader::new(session.origin());
    let mut scratch = Vec::new();
    let mut out = io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
    let mut put = |out: &mut io::BufWriter<&mut File>,
                   source: &LineSource|
     -> Result<LineSource, SessionError> {
        let bytes = origin.bytes(source, &mut scratch)?;
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
    drop(out);
    tmp.as_file().sync_all().map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    File::open(&dir).and_then(|d| d.sync_all()).map_err(io)?;
    Ok(Written {
        header,
        entries,
        kept,
    })
}

/// Reads stored lines from the session's origin file through one handle.
struct OriginReader<'a> {
    path: Option<&'a Path>,
    file: Option<File>,
}

impl<'a> OriginReader<'a> {
    fn new(path: Option<&'a Path>) -> Self {
        Self { path, file: None }
    }

    fn bytes<'s>(
        &mut self,
        source: &'s LineSource,
        scratch: &'s mut Vec<u8>,
    ) -> Result<&'s [u8], SessionError> {
        match source {
            LineSource::Text(t) => Ok(t.as_bytes()),
            LineSource::File { offset, len } => {
                let path = self.path.ok_or(SessionError::NoOrigin)?;
                let io = |source| SessionError::Io {
                    path: path.to_owned(),
                    source,
                };
                if self.file.is_none() {
                    self.file = Some(File::open(path).map_err(io)?);
                }
                let file = self.file.as_ref().ok_or(SessionError::NoOrigin)?;
                scratch.clear();
                scratch.resize(usize::try_from(*len).unwrap_or(usize::MAX), 0);
                file.read_exact_at(scratch, *offset).map_err(io)?;
                Ok(scratch)
            }
        }
    }
}

/// Locks `path` exclusively, making sure the lock is on the file that is at
/// `path` now (a rewrite may have renamed a new file over it meanwhile).
fn lock_file(path: &Path) -> Result<File, SessionError> {
    let io = |source| SessionError::Io {
        path: path.to_owned(),
        source,
    };
    loop {
        let file = File::open(path).map_err(io)?;
        file.lock().map_err(io)?;
        let locked = file.metadata().map_err(io)?;
        let current = fs::metadata(path).map_err(io)?;
        if locked.dev() == current.dev() && locked.ino() == current.ino() {
            return Ok(file);
        }
    }
}

/// Reads `len` bytes at `offset` of `path` as text.
pub(crate) fn read_span(path: &Path, offset: u64, len: u64) -> io::Result<String> {
    let file = File::open(path)?;
    let mut buf = vec![
        0u8;
        usize::try_from(len)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?
    ];
    file.read_exact_at(&mut buf, offset)?;
    String::from_utf8(buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Writes `session` to a new file at `path`, refusing to overwrite one.
pub fn write_new(path: &Path, session: &Session) -> Result<(), SessionError> {
    if path.exists() {
        return Err(SessionError::AlreadyExists {
            path: path.to_owned(),
        });
    }
    write_atomically(path, session).map(|_| ())
}

/// Writes `session` to `path` atomically, replacing what is there.
pub fn write_session(path: &Path, session: &Session) -> Result<(), SessionError> {
    write_atomically(path, session).map(|_| ())
}
