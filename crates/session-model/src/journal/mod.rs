//! The journal file: durable appends, the deferred first flush and atomic
//! rewrites that lose nothing another process appends (docs/reliability.md).
//!
//! Invariants:
//! - a complete entry line on disk is never lost: appends add whole lines
//!   and `fsync`, and a failed append is cut back to the old length;
//!   rewrites write a temporary file in the same folder (keeping mode, owner
//!   and group), carry over what was appended meanwhile, rename it over the
//!   original and `fsync` the folder;
//! - writers take an exclusive advisory lock on the file and check that it
//!   is still the file they read; if it is not, or it changed in a way the
//!   write cannot build on, they write nothing and report
//!   [`SessionError::ChangedOnDisk`];
//! - every entry written passes the checks that `session check` applies;
//! - a file that ends with a torn line, or has a problem a rewrite would
//!   get wrong, is not written until it is repaired; a file that cannot be
//!   read is never written.

mod append;
mod carry;
pub(crate) mod disk;
mod holders;
mod keep;
mod late;
pub(crate) mod lines;
mod lock;
mod warning;
mod write;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::edit::TreeEdit;
use crate::entry::{Entry, EntryBody, Header};
use crate::error::SessionError;
use crate::id::{EntryId, IdSource};
use crate::load::{FileTail, load_file};
use crate::problem::{Problem, ProblemKind};
use crate::session::{LineSource, Replacement, Session, Stamp};

pub use disk::{Replace, write_file};
pub use lock::LIVE_WINDOW_MS;
pub use warning::WriteWarning;

/// How many times [`Journal::append_all_following`] reads what another
/// process wrote and tries again, when the file keeps changing between the
/// read and the write.
const FOLLOW_ROUNDS: u32 = 4;

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
    /// The path as given (for messages).
    path: PathBuf,
    /// The path with symbolic links resolved: the file that is written.
    target: PathBuf,
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
    /// Writes stay in memory (see [`Journal::detach`]).
    detached: bool,
    /// What writes since the last [`Journal::take_warnings`] have to say.
    warnings: Vec<WriteWarning>,
    /// Writes may drop the v1 indexes that name no earlier entry (see
    /// [`Journal::drop_unresolved_first_kept`]).
    drop_unresolved: bool,
}

impl Journal {
    /// Reads the session at `path`; v1 and v2 files are migrated in memory
    /// only (see [`Journal::persist_migration`]).
    pub fn open(path: impl AsRef<Path>, ids: &mut dyn IdSource) -> Result<Self, SessionError> {
        let path = path.as_ref().to_owned();
        let (session, tail) = load_file(&path, ids)?;
        let meta = fs::metadata(&path).map_err(|source| SessionError::Io {
            path: path.clone(),
            source,
        })?;
        Ok(Self::from_loaded(path, session, &tail, &meta))
    }

    fn from_loaded(path: PathBuf, session: Session, tail: &FileTail, meta: &fs::Metadata) -> Self {
        let mut seen = Seen::of(meta);
        seen.len = tail.len;
        Self {
            migration_pending: session.was_migrated(),
            written: session.len(),
            target: disk::resolve(&path),
            path,
            session,
            seen: Some(seen),
            ends_with_newline: tail.ends_with_newline,
            torn_line: tail.torn.map(|(line, _)| line),
            staged: Vec::new(),
            detached: false,
            warnings: Vec::new(),
            drop_unresolved: false,
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
        if path.exists() || path.is_symlink() {
            return Err(SessionError::AlreadyExists { path });
        }
        let mut journal = Self {
            target: path.clone(),
            path,
            session,
            seen: None,
            ends_with_newline: true,
            torn_line: None,
            written: 0,
            migration_pending: false,
            staged: Vec::new(),
            detached: false,
            warnings: Vec::new(),
            drop_unresolved: false,
        };
        if journal.session.has_assistant_message() {
            journal.flush_all()?;
        }
        Ok(journal)
    }

    /// Keeps every later write in memory: the file is left as it was read,
    /// and [`Journal::write_copy`] or [`Journal::write_to`] writes the
    /// result elsewhere (`-o OUT`).
    pub fn detach(&mut self) {
        self.detached = true;
    }

    /// The file, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// What the writes since the last call have to tell the user, oldest
    /// first (each write that succeeded despite something the user should
    /// know adds one); the list is emptied.
    pub fn take_warnings(&mut self) -> Vec<WriteWarning> {
        std::mem::take(&mut self.warnings)
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

    /// Appends an entry under the leaf and makes it durable. The entry must
    /// pass the checks of `session check` ([`SessionError::InvalidEntry`]).
    ///
    /// On error the session is left as it was.
    pub fn append(
        &mut self,
        body: EntryBody,
        stamp: &mut Stamp<'_>,
    ) -> Result<EntryId, SessionError> {
        let mut ids = self.append_all([body], stamp)?;
        Ok(ids.remove(0))
    }

    /// Appends entries under the leaf, each under the one before, and makes
    /// them durable in one write: all of them, or none. Each entry must pass
    /// the checks of `session check` against the session with the ones
    /// before it ([`SessionError::InvalidEntry`] names the first that does
    /// not).
    ///
    /// On error the session is left as it was and nothing is written.
    pub fn append_all(
        &mut self,
        bodies: impl IntoIterator<Item = EntryBody>,
        stamp: &mut Stamp<'_>,
    ) -> Result<Vec<EntryId>, SessionError> {
        let bodies: Vec<EntryBody> = bodies.into_iter().collect();
        if bodies.is_empty() {
            return Ok(Vec::new());
        }
        self.check_writable()?;
        let before = self.session.clone_state();
        let mut ids = Vec::with_capacity(bodies.len());
        let mut result = Ok(());
        for body in bodies {
            ids.push(self.session.append(body, stamp));
            result = crate::validate::check_new(&self.session, self.session.len() - 1);
            if result.is_err() {
                break;
            }
        }
        match result.and_then(|()| self.persist_new()) {
            Ok(()) => Ok(ids),
            Err(e) => {
                self.session.restore_state(before);
                Err(e)
            }
        }
    }

    /// [`Journal::append_all`] after reading what other processes wrote to
    /// the file since this journal last read or wrote it
    /// ([`Journal::catch_up`]): the entries go on after their lines, under
    /// this journal's leaf. When the file changes again between that read
    /// and the write, it is read again, four times at most, before the
    /// append answers that the file is busy
    /// ([`SessionError::ChangedOnDisk`]); nothing is written then.
    pub fn append_all_following(
        &mut self,
        bodies: Vec<EntryBody>,
        stamp: &mut Stamp<'_>,
    ) -> Result<Vec<EntryId>, SessionError> {
        let mut round = 1;
        loop {
            self.catch_up()?;
            if round == FOLLOW_ROUNDS {
                return self.append_all(bodies, stamp);
            }
            match self.append_all(bodies.clone(), stamp) {
                Err(e) if e.is_busy() => round += 1,
                result => return result,
            }
        }
    }

    /// What `measure` finds in the session with `body` appended under the
    /// leaf (the session and the new entry's index), in memory only:
    /// nothing is written, and the session is left as it was. The entry
    /// has a provisional id, none of the ids the caller hands out is used:
    /// a compaction measures the context after it this way, to record it
    /// in the entry it then appends.
    pub fn with_appended<R>(
        &mut self,
        body: EntryBody,
        now: crate::time::EpochMillis,
        measure: impl FnOnce(&Session, usize) -> R,
    ) -> R {
        struct Provisional(u32);
        impl IdSource for Provisional {
            fn next_candidate(&mut self) -> String {
                self.0 += 1;
                format!("provisional-{}", self.0)
            }
        }
        let before = self.session.clone_state();
        let mut ids = Provisional(0);
        let mut stamp = Stamp { ids: &mut ids, now };
        self.session.append(body, &mut stamp);
        let index = self.session.len() - 1;
        let result = measure(&self.session, index);
        self.session.restore_state(before);
        result
    }

    /// Replaces entries in memory only, so what follows (a compaction) sees
    /// them; the next write (an append, or [`Journal::rewrite`]) writes them
    /// together with it in one atomic rewrite, and
    /// [`Journal::discard_staged`] undoes them. A failed or cancelled
    /// operation thus leaves the file as it was.
    pub fn stage_replacements(
        &mut self,
        changes: impl IntoIterator<Item = Replacement>,
    ) -> Result<(), SessionError> {
        self.check_writable()?;
        for change in changes {
            let i = change.index();
            let (old_entry, old_source) = self.session.replace(change);
            if !self.staged.iter().any(|(j, _, _)| *j == i) {
                self.staged.push((i, old_entry, old_source));
            }
            if let Err(e) = crate::validate::check_new(&self.session, i) {
                self.discard_staged();
                return Err(e);
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
            self.session.put_entry(i, entry, source);
        }
    }

    /// Replaces entries in place (pruning) and rewrites the file atomically.
    /// Each replacement is the new typed entry and its new line ([`Replacement`]).
    pub fn replace_entries(
        &mut self,
        changes: impl IntoIterator<Item = Replacement>,
    ) -> Result<(), SessionError> {
        self.stage_replacements(changes)?;
        if let Err(e) = self.rewrite() {
            self.discard_staged();
            return Err(e);
        }
        Ok(())
    }

    /// Writes the migrated session over the old v1/v2 file (atomically).
    pub fn persist_migration(&mut self) -> Result<bool, SessionError> {
        if !self.migration_pending {
            return Ok(false);
        }
        self.rewrite()?;
        Ok(true)
    }

    /// Whether the file can be written as it is: no torn last line, no
    /// problem a rewrite would get wrong, and (unless detached) the caller
    /// may write it. Writers call it before doing expensive work; every
    /// write checks again.
    pub fn check_can_write(&self) -> Result<(), SessionError> {
        self.check_writable()?;
        if self.detached || self.seen.is_none() {
            return Ok(());
        }
        match fs::OpenOptions::new().append(true).open(&self.target) {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                Err(SessionError::NotWritable {
                    path: self.path.clone(),
                })
            }
            Err(source) => Err(SessionError::WriteFailed {
                path: self.path.clone(),
                source,
            }),
        }
    }

    /// Lets writes rewrite a v1 file whose compactions have a
    /// `firstKeptEntryIndex` that names no earlier entry (the header, an
    /// entry after it, or none), which otherwise blocks every write
    /// ([`SessionError::Blocked`]): the index is dropped, as pi's migration
    /// drops it, and the compaction keeps no entry from before it, as musepi
    /// and pi already read it. What the index named is then no longer in the
    /// file. Returns those compactions' problems, for the caller to say so.
    pub fn drop_unresolved_first_kept(&mut self) -> Vec<Problem> {
        self.drop_unresolved = true;
        self.session
            .problems()
            .iter()
            .filter(|p| matches!(p.kind, ProblemKind::FirstKeptIndex { .. }))
            .cloned()
            .collect()
    }

    /// Refuses a session that another process looks to be using at
    /// `now_ms` (epoch milliseconds): its lock is held, or it was modified
    /// within [`LIVE_WINDOW_MS`].
    pub fn check_not_live(&self, now_ms: i64) -> Result<(), SessionError> {
        refuse_live(&self.target, &self.path, now_ms)
    }

    fn check_writable(&self) -> Result<(), SessionError> {
        if let Some(line) = self.torn_line {
            return Err(SessionError::TornTail {
                path: self.path.clone(),
                line,
            });
        }
        if let Some(p) = self.session.problems().iter().find(|p| {
            p.kind.blocks_rewrite()
                && !(self.drop_unresolved && matches!(p.kind, ProblemKind::FirstKeptIndex { .. }))
        }) {
            return Err(SessionError::Blocked {
                path: self.path.clone(),
                line: p.line,
                problem: p.kind.to_string(),
            });
        }
        Ok(())
    }
}

impl TreeEdit for Journal {
    fn session(&self) -> &Session {
        &self.session
    }

    fn move_leaf(&mut self, to: Option<&str>) -> Result<(), SessionError> {
        self.session.move_leaf(to)
    }

    fn append_entry(
        &mut self,
        body: EntryBody,
        stamp: &mut Stamp<'_>,
    ) -> Result<EntryId, SessionError> {
        self.append(body, stamp)
    }
}

/// Refuses the session file at `path` when another process looks to be
/// using it at `now_ms` (epoch milliseconds), as
/// [`Journal::check_not_live`] does, for a caller that read the file
/// without a journal (a repaired copy is made from it).
pub fn check_not_live(path: &Path, now_ms: i64) -> Result<(), SessionError> {
    refuse_live(path, path, now_ms)
}

/// [`SessionError::Live`], naming `path`, when the file `target` looks live.
fn refuse_live(target: &Path, path: &Path, now_ms: i64) -> Result<(), SessionError> {
    match lock::live_sign(target, now_ms, LIVE_WINDOW_MS)? {
        Some(sign) => Err(SessionError::Live {
            path: path.to_owned(),
            sign,
        }),
        None => Ok(()),
    }
}

/// Writes `session` to a new file at `path`, refusing to overwrite one.
pub fn write_new(path: &Path, session: &Session) -> Result<(), SessionError> {
    write_session_file(path, session, None, Replace::Never)
}

/// Writes `session` to `path` atomically, replacing what is there.
pub fn write_session(path: &Path, session: &Session) -> Result<(), SessionError> {
    write_session_file(path, session, None, Replace::Existing)
}

/// Writes `session` to `path` atomically with permission bits `mode` (an
/// existing file's, or a new file's, when `None`); with [`Replace::Never`]
/// an existing file is refused.
pub fn write_session_file(
    path: &Path,
    session: &Session,
    mode: Option<u32>,
    replace: Replace,
) -> Result<(), SessionError> {
    disk::write_file_with(path, mode, replace, |out| {
        lines::write_lines(out, session, None, path).map(|_| ())
    })
}

/// Writes the lines of `session` to `out`, as a file of it would hold them.
pub fn write_session_to(
    out: &mut dyn std::io::Write,
    session: &Session,
) -> Result<(), SessionError> {
    lines::write_lines(out, session, None, Path::new("<output>")).map(|_| ())
}
