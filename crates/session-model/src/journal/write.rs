//! The journal's writes: appends, rewrites in place, the first flush, and
//! copies to another file or stream.

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::carry::{Appends, rewrite_in_place};
use super::disk::{Replace, write_file_with};
use super::lines::{OriginReader, Written, write_lines};
use super::lock::lock_file;
use super::{Journal, Seen, WriteWarning};
use crate::error::SessionError;
use crate::id::SequentialIds;
use crate::load::{FileTail, load_file};
use crate::session::{LineSource, Session};

impl Journal {
    /// Rewrites the whole file atomically from the session: unchanged lines
    /// byte for byte, changed lines from their new text, unreadable lines
    /// kept in place, blank lines dropped. Lines another process appended
    /// since the file was read are carried over when the rewrite adds no
    /// entries of its own (docs/reliability.md); otherwise such an append
    /// stops the rewrite with [`SessionError::ChangedOnDisk`], and so does a
    /// writer that keeps appending (more than 64 MiB, or lines in each of 8
    /// rounds of copying them). Lines that reach the replaced file after the
    /// rename are put in their place; after entries the rewrite added, they
    /// leave those entries the leaf, with a [`WriteWarning::ArrivedAfter`].
    pub fn rewrite(&mut self) -> Result<(), SessionError> {
        self.check_writable()?;
        if self.detached {
            // The staged changes stay: the copy written later
            // ([`Journal::write_copy`]) keeps their originals beside it.
            return Ok(());
        }
        let Some(seen) = self.seen.clone() else {
            return self.flush_all();
        };
        let appends = if self.written < self.session.len() {
            Appends::Refuse("the new entries would hang under an older leaf than the file's")
        } else if self.migration_pending && self.session.original_version() < 2 {
            Appends::Refuse(
                "a v1 file is renumbered by its migration, so appended lines would not fit it",
            )
        } else {
            Appends::Carry
        };
        let adds = self.written < self.session.len();
        let lock = lock_file(&self.target)?;
        self.check_same_file(&lock, &seen, true)?;
        // What the rewrite blanks is kept first, durably, read through the
        // locked file: a crash from here on leaves the file as it was, or
        // rewritten with every original in the store.
        let mode = lock.metadata().ok().map(|m| m.mode());
        self.keep_originals(&self.target, Some(&lock), mode)?;
        let done = rewrite_in_place(&self.target, &self.session, &lock, seen.len, appends)?;
        self.after_full_write(&done.written, done.written.len)?;
        drop(lock);
        if done.still_open {
            self.warnings.push(WriteWarning::StillOpenElsewhere {
                path: self.path.clone(),
                waited: super::holders::CLOSE_WAIT,
            });
        }
        if done.carried > 0 {
            // A rewrite that adds entries carries nothing appended before
            // them; what it carried arrived after them, from an appender
            // that had the replaced file open. The entries stay the leaf.
            let leaf = adds.then(|| self.session.leaf_id().cloned()).flatten();
            self.reload(done.written.len + done.carried)?;
            if let Some(leaf) = leaf {
                self.session.set_leaf(leaf.as_str())?;
                self.warnings.push(WriteWarning::ArrivedAfter {
                    path: self.path.clone(),
                    bytes: done.carried,
                });
            }
        }
        Ok(())
    }

    /// Writes the session to another file atomically (`-o OUT`), with the
    /// permission bits of the file it was read from; the journal stays
    /// bound to its own file. With [`Replace::Never`] an existing file is
    /// refused.
    pub fn write_copy(&self, out: &Path, replace: Replace) -> Result<(), SessionError> {
        self.check_writable()?;
        let origin = self.origin_checked()?;
        let mode = origin
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .map(|m| m.mode());
        // A copy that would be refused keeps nothing.
        crate::fsutil::refuse_special_file(out)?;
        if replace == Replace::Never && (out.exists() || out.is_symlink()) {
            return Err(SessionError::AlreadyExists {
                path: out.to_owned(),
            });
        }
        self.keep_originals(out, origin.as_ref(), mode)?;
        write_file_with(out, mode, replace, |w| {
            write_lines(w, &self.session, origin.as_ref(), out).map(|_| ())
        })
    }

    /// Writes the session's lines to `out` (`-o -`).
    pub fn write_to(&self, out: &mut dyn Write) -> Result<(), SessionError> {
        self.check_writable()?;
        let origin = self.origin_checked()?;
        write_lines(out, &self.session, origin.as_ref(), Path::new("<stdout>")).map(|_| ())
    }

    /// The file the session's stored lines are read from, checked to be the
    /// one that was read (not replaced since).
    fn origin_checked(&self) -> Result<Option<File>, SessionError> {
        let (Some(seen), Some(origin)) = (&self.seen, self.session.origin()) else {
            return Ok(None);
        };
        let file = crate::fsutil::open_regular(origin)?;
        let meta = file
            .metadata()
            .map_err(SessionError::write_failed(&self.path))?;
        if meta.dev() != seen.dev || meta.ino() != seen.ino || meta.len() < seen.len {
            return Err(SessionError::ChangedOnDisk {
                path: self.path.clone(),
                what: "it was replaced or shortened".into(),
            });
        }
        Ok(Some(file))
    }

    /// Checks that the locked file is the one that was read: same file, not
    /// shorter, and (unless `growth` is allowed) not longer or modified.
    fn check_same_file(&self, lock: &File, seen: &Seen, growth: bool) -> Result<(), SessionError> {
        let now = Seen::of(
            &lock
                .metadata()
                .map_err(SessionError::write_failed(&self.path))?,
        );
        let what = if now.dev != seen.dev || now.ino != seen.ino {
            "it was replaced by another file".to_owned()
        } else if now.len < seen.len {
            "it was shortened".to_owned()
        } else if now.len > seen.len && !growth {
            format!("another process appended {} bytes", now.len - seen.len)
        } else if now.len == seen.len && now.mtime != seen.mtime {
            "it was modified in place".to_owned()
        } else {
            return Ok(());
        };
        Err(SessionError::ChangedOnDisk {
            path: self.path.clone(),
            what,
        })
    }

    /// Writes what the last in-memory change added.
    pub(super) fn persist_new(&mut self) -> Result<(), SessionError> {
        if self.detached {
            return Ok(());
        }
        let Some(seen) = self.seen.clone() else {
            if self.session.has_assistant_message() {
                self.flush_all()?;
            }
            return Ok(());
        };
        if self.migration_pending || !self.staged.is_empty() {
            return self.rewrite();
        }
        let lock = lock_file(&self.target)?;
        self.check_same_file(&lock, &seen, false)?;
        let mut bytes = Vec::new();
        if !self.ends_with_newline {
            bytes.push(b'\n');
        }
        let mut offset = seen.len + bytes.len() as u64;
        let mut spans = Vec::new();
        let mut origin = OriginReader::new(self.session.origin(), Some(&lock));
        let mut scratch = Vec::new();
        for i in self.written..self.session.len() {
            let line = origin.bytes(&self.session.sources[i], &mut scratch)?;
            spans.push((i, offset, line.len() as u64));
            offset += line.len() as u64 + 1;
            bytes.extend_from_slice(line);
            bytes.push(b'\n');
        }
        let locked = lock
            .metadata()
            .map_err(SessionError::write_failed(&self.path))?;
        let (after, start) = super::append::append_durably(&self.target, &locked, &bytes)?;
        let end = start + bytes.len() as u64;
        if start > seen.len {
            // Another process (it takes no lock) appended between the check
            // and the write: its lines sit before ours. Read the file again
            // up to our last line, so the session holds its lines too and
            // the leaf stays the entry just written.
            drop(lock);
            self.reload(end)?;
            if after.len() > end {
                self.warnings.push(WriteWarning::ArrivedAfter {
                    path: self.path.clone(),
                    bytes: after.len() - end,
                });
            }
            return Ok(());
        }
        let shift = start.saturating_sub(seen.len);
        for (i, offset, len) in spans {
            self.session.sources[i] = LineSource::File {
                offset: offset + shift,
                len,
            };
        }
        self.written = self.session.len();
        self.ends_with_newline = true;
        // What another process appended right after (it takes no lock) is
        // not read: the next write finds it past what was seen.
        let mut seen = Seen::of(&after);
        seen.len = end;
        self.seen = Some(seen);
        drop(lock);
        if after.len() > end {
            self.warnings.push(WriteWarning::ArrivedAfter {
                path: self.path.clone(),
                bytes: after.len() - end,
            });
        }
        Ok(())
    }

    /// The deferred first flush: header and every entry, in one new file.
    pub(super) fn flush_all(&mut self) -> Result<(), SessionError> {
        self.keep_originals(&self.target, None, None)?;
        let session = &self.session;
        let target = self.target.clone();
        let written = write_file_with(&target, None, Replace::Never, |out| {
            write_lines(out, session, None, &target)
        })?;
        self.after_full_write(&written, written.len)
    }

    fn after_full_write(&mut self, offsets: &Written, len: u64) -> Result<(), SessionError> {
        self.session.header_source = offsets.header.clone();
        for (i, source) in offsets.entries.iter().enumerate() {
            self.session.sources[i] = source.clone();
        }
        for (kept, source) in self.session.kept_lines.iter_mut().zip(&offsets.kept) {
            kept.source = source.clone();
        }
        self.session.origin = Some(super::lines::file_origin(&self.target));
        self.written = self.session.len();
        self.ends_with_newline = true;
        self.migration_pending = false;
        self.staged.clear();
        let meta = fs::metadata(&self.target).map_err(SessionError::write_failed(&self.path))?;
        let mut seen = Seen::of(&meta);
        seen.len = len;
        self.seen = Some(seen);
        Ok(())
    }

    /// Reads the file again after a rewrite carried lines another process
    /// appended, so the session holds them too (the last line it carried is
    /// the leaf, as on any read): its first `len` bytes, what the rewrite
    /// wrote and carried. What arrives meanwhile is past what this journal
    /// has seen, as after an append, and is read by the next write.
    fn reload(&mut self, len: u64) -> Result<(), SessionError> {
        let (session, tail) =
            crate::load::load_file_prefix(&self.target, len, &mut SequentialIds::new())?;
        let meta = fs::metadata(&self.target).map_err(SessionError::write_failed(&self.path))?;
        self.take_loaded(session, &tail, &meta);
        Ok(())
    }

    /// Becomes the journal of `session`, just read from the file, keeping
    /// what is the caller's: detached or not, the warnings not yet taken,
    /// and a count of edits that only grows (what follows the session, the
    /// runtime's token account, starts over).
    fn take_loaded(&mut self, mut session: Session, tail: &FileTail, meta: &fs::Metadata) {
        session.edits += self.session.edits + 1;
        let (detached, warnings) = (self.detached, std::mem::take(&mut self.warnings));
        *self = Self::from_loaded(self.path.clone(), session, tail, meta);
        self.detached = detached;
        self.warnings = warnings;
    }

    /// Reads the file again when another process wrote it since this
    /// journal last read or wrote it: lines appended by another writer (an
    /// agent, a second `musepi serve`), or the file replaced by a rewrite of
    /// the same session (another musepi pruned or compacted it). The next
    /// append then goes on after those lines instead of refusing as busy.
    /// The leaf stays where it was: what this journal's caller appends next
    /// hangs under its own last entry, as two agents writing one file each
    /// continue their own branch. Returns how many entries were read.
    ///
    /// Refuses ([`SessionError::ChangedOnDisk`], busy) a file that was
    /// shortened, holds another session, no longer has the leaf, or ends
    /// with a line still being written; nothing changes then. Staged
    /// replacements and a detached journal are left alone (`Ok(0)`).
    pub fn catch_up(&mut self) -> Result<usize, SessionError> {
        let Some(seen) = self.seen.clone() else {
            return Ok(0);
        };
        if self.detached || self.has_staged() {
            return Ok(0);
        }
        let changed = |what: String| SessionError::ChangedOnDisk {
            path: self.path.clone(),
            what,
        };
        let meta = fs::metadata(&self.target).map_err(SessionError::write_failed(&self.path))?;
        let now = Seen::of(&meta);
        if now == seen {
            return Ok(0);
        }
        if now.dev == seen.dev && now.ino == seen.ino && now.len < seen.len {
            return Err(changed("it was shortened".into()));
        }
        let (session, tail) = load_file(&self.target, &mut SequentialIds::new())?;
        if session.header().id != self.session.header().id {
            return Err(changed(format!(
                "it now holds another session, {}",
                session.header().id
            )));
        }
        if let Some((line, _)) = tail.torn {
            return Err(changed(format!(
                "line {line}, which another process is appending, is incomplete"
            )));
        }
        let leaf = self.session.leaf_id().cloned();
        if let Some(id) = &leaf
            && session.index_of(id.as_str()).is_none()
        {
            return Err(changed(format!("the entry {id} it was at is gone")));
        }
        let before = self.session.len();
        let meta = fs::metadata(&self.target).map_err(SessionError::write_failed(&self.path))?;
        self.take_loaded(session, &tail, &meta);
        match leaf {
            Some(id) => self.session.set_leaf(id.as_str())?,
            None => self.session.reset_leaf(),
        }
        Ok(self.session.len().saturating_sub(before))
    }
}
