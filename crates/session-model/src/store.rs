//! The prune store: the originals of the tool results pruning blanked,
//! kept beside the session file so that nothing the agent produced is
//! lost (docs/design.md, "The prune store").
//!
//! Layout, beside `DIR/NAME.jsonl`:
//!
//! ```text
//! DIR/.NAME.jsonl.musepi-store/
//!   index            one JSON line per original kept:
//!                    {"session":ID,"entry":ID,"sha256":HEX,"bytes":N}
//!   objects/HH/REST  an original line, exactly as it stood in the session
//!                    file (no newline), named by its SHA-256 (HH the first
//!                    two hex digits, REST the other 62)
//! ```
//!
//! Invariants:
//! - the originals are written and made durable (each object through a
//!   temporary file, `fsync`, rename, `fsync` of its folder, a batch of
//!   objects synced at once on several threads; the index appended whole
//!   lines, `fsync`) before the rewrite that blanks them
//!   starts, so a crash at any point leaves the session unpruned, or
//!   pruned with every original in the store ([`crate::Journal::rewrite`]);
//! - the store is only ever added to: an object is content-addressed and
//!   never changes, an index line is never rewritten;
//! - reading never trusts it: an object is checked against its hash and
//!   against the entry it is the original of, a record of another session
//!   is ignored, and what does not match is a [`StoreWarning`], never an
//!   error. Deleting the store loses the recovery only.
//!
//! pi reads the session folder's `*.jsonl` files only; the store is a
//! hidden folder, which it never sees.

use std::collections::HashMap;
use std::fmt;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::entry::{Entry, EntryBody};
use crate::error::SessionError;
use crate::id::EntryId;
use crate::journal::disk::{Temp, folder_of, remove_stale_in, resolve};
use crate::message::AgentMessage;
use crate::wire::{LineRead, read_entry};

/// The suffix of the store's folder name: `.NAME.jsonl` + this.
const SUFFIX: &str = ".musepi-store";
/// The index file in the store's folder.
const INDEX: &str = "index";
/// The objects' folder in the store's folder.
const OBJECTS: &str = "objects";
/// The longest index musepi reads (an index line is about 150 bytes).
const MAX_INDEX_BYTES: u64 = 256 << 20;

/// The store's folder for the session file at `session_path` (symbolic
/// links resolved: the store sits beside the file that is written).
pub fn store_dir(session_path: &Path) -> PathBuf {
    let target = resolve(session_path);
    let name = target
        .file_name()
        .map_or_else(|| "session".into(), |n| n.to_string_lossy().into_owned());
    folder_of(&target).join(format!(".{name}{SUFFIX}"))
}

/// One line of the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    session: String,
    entry: EntryId,
    sha256: String,
    bytes: u64,
}

/// The SHA-256 of `bytes` in lowercase hex.
fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for b in digest {
        use std::fmt::Write as _;
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

fn object_path(root: &Path, sha: &str) -> PathBuf {
    root.join(OBJECTS).join(&sha[..2]).join(&sha[2..])
}

/// Creates `dir` (mode 0700) when it is missing, and makes its entry in
/// its parent durable.
fn ensure_dir(dir: &Path, for_path: &Path) -> Result<(), SessionError> {
    if create_dir(dir, for_path)? {
        sync_dir(&folder_of(dir), for_path)?;
    }
    Ok(())
}

fn sync_dir(dir: &Path, for_path: &Path) -> Result<(), SessionError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(SessionError::write_failed(for_path))
}

/// Whether the object at `path` holds exactly `bytes`.
fn object_holds(path: &Path, bytes: &[u8]) -> bool {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return false;
    };
    meta.is_file() && meta.len() == bytes.len() as u64 && fs::read(path).is_ok_and(|b| b == bytes)
}

/// Keeps `originals` (an entry's id and its original line) in the store
/// beside the session file `target`, durably, before that file is
/// rewritten without them. Objects get the permission bits `mode` (the
/// session file's). An original already kept is not written again.
pub(crate) fn keep(
    target: &Path,
    session_id: &str,
    originals: &[(EntryId, Vec<u8>)],
    mode: Option<u32>,
) -> Result<(), SessionError> {
    if originals.is_empty() {
        return Ok(());
    }
    let root = store_dir(target);
    let index_path = root.join(INDEX);
    ensure_dir(&root, &root)?;
    ensure_dir(&root.join(OBJECTS), &root)?;
    let known = read_records(&index_path).unwrap_or_default();
    let mut lines = Vec::new();
    let mut missing: Vec<(PathBuf, &[u8])> = Vec::new();
    let mut planned = std::collections::HashSet::new();
    for (entry, line) in originals {
        let sha = sha256_hex(line);
        let path = object_path(&root, &sha);
        if !planned.contains(&sha) && !object_holds(&path, line) {
            planned.insert(sha.clone());
            if fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
                return Err(SessionError::NotRegular {
                    path,
                    kind: "special file",
                });
            }
            missing.push((path, line));
        }
        let record = Record {
            session: session_id.to_owned(),
            entry: entry.clone(),
            sha256: sha,
            bytes: line.len() as u64,
        };
        if !known.contains(&record) {
            let mut text = serde_json::to_vec(&record).map_err(|e| SessionError::WriteFailed {
                path: index_path.clone(),
                source: io::Error::other(e),
            })?;
            text.push(b'\n');
            lines.extend_from_slice(&text);
        }
    }
    write_objects(&root, &missing, mode.unwrap_or(0o600))?;
    if lines.is_empty() {
        return Ok(());
    }
    append_index(&index_path, &lines, mode)
}

/// Creates `dir` (mode 0700) when it is missing, without making its entry
/// durable: whether it created it, for the caller to sync its parent once.
fn create_dir(dir: &Path, for_path: &Path) -> Result<bool, SessionError> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(false),
        Err(source) => Err(SessionError::WriteFailed {
            path: for_path.to_owned(),
            source,
        }),
    }
}

/// Temporary files open at once while objects are written.
const BATCH: usize = 256;
/// Threads that sync a batch: the file system commits syncs that wait
/// together at once, so a batch costs a few commits, not one per object.
const SYNC_THREADS: usize = 8;

/// Writes each object of the store at `root` as
/// [`crate::journal::disk::write_file_with`] writes one file (a temporary
/// file in its folder, `fsync`, rename over the path, `fsync` of the
/// folder), batch by batch: a batch's files are
/// written, then synced on several threads at once, then renamed; each
/// object folder is made (and swept of what a killed run left) when the
/// first object goes into it, and synced once at the end, with the
/// objects' folder when it gained one. Every object is durable when this
/// returns; on error the temporary files not yet renamed are removed.
fn write_objects(root: &Path, objects: &[(PathBuf, &[u8])], mode: u32) -> Result<(), SessionError> {
    let mut folders = std::collections::BTreeSet::new();
    let mut made = false;
    for batch in objects.chunks(BATCH) {
        let mut temps = Vec::with_capacity(batch.len());
        for (path, bytes) in batch {
            let folder = folder_of(path);
            if !folders.contains(&folder) {
                made |= create_dir(&folder, root)?;
                remove_stale_in(&folder);
                folders.insert(folder);
            }
            let tmp = Temp::create_only(path, Some(mode))?;
            (&tmp.file)
                .write_all(bytes)
                .map_err(SessionError::write_failed(path))?;
            tmp.set_mode(mode, path)?;
            temps.push(tmp);
        }
        let pairs: Vec<(&Temp, &Path)> = temps
            .iter()
            .zip(batch)
            .map(|(tmp, (path, _))| (tmp, path.as_path()))
            .collect();
        on_threads(&pairs, |(tmp, path)| tmp.sync(path))?;
        for (tmp, (path, _)) in temps.iter_mut().zip(batch) {
            tmp.rename_over(path)?;
        }
    }
    let folders: Vec<PathBuf> = folders.into_iter().collect();
    on_threads(&folders, |dir| sync_dir(dir, dir))?;
    if made {
        sync_dir(&root.join(OBJECTS), root)?;
    }
    Ok(())
}

/// Runs `f` on every item, spread over [`SYNC_THREADS`] threads; the first
/// error wins.
fn on_threads<T: Sync>(
    items: &[T],
    f: impl Fn(&T) -> Result<(), SessionError> + Sync,
) -> Result<(), SessionError> {
    if items.len() <= 1 {
        return items.iter().try_for_each(&f);
    }
    let per = items.len().div_ceil(SYNC_THREADS);
    std::thread::scope(|scope| {
        let f = &f;
        let handles: Vec<_> = items
            .chunks(per)
            .map(|chunk| scope.spawn(move || chunk.iter().try_for_each(f)))
            .collect();
        let mut result = Ok(());
        for handle in handles {
            match handle.join() {
                Ok(r) => {
                    if result.is_ok() {
                        result = r;
                    }
                }
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        result
    })
}

/// Appends whole lines to the index and makes them durable; a torn last
/// line (a run killed mid-write) is ended first, so the new lines stand on
/// their own.
fn append_index(path: &Path, lines: &[u8], mode: Option<u32>) -> Result<(), SessionError> {
    let io = SessionError::write_failed(path);
    let existed = path.exists();
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(mode.unwrap_or(0o600) & 0o7777)
        .open(path)
        .map_err(SessionError::write_failed(path))?;
    let len = file
        .metadata()
        .map_err(SessionError::write_failed(path))?
        .len();
    let mut bytes = Vec::with_capacity(lines.len() + 1);
    if len > 0 {
        let mut last = [0u8];
        file.read_exact_at(&mut last, len - 1)
            .map_err(SessionError::write_failed(path))?;
        if last[0] != b'\n' {
            bytes.push(b'\n');
        }
    }
    bytes.extend_from_slice(lines);
    file.write_all(&bytes)
        .and_then(|()| file.sync_data())
        .map_err(io)?;
    if !existed {
        sync_dir(&folder_of(path), path)?;
    }
    Ok(())
}

/// The index's records, in file order, and the numbers (from 1) of the
/// complete lines that are not records; a last line without its newline
/// (torn by a killed run) is skipped without a word. `None` when there is
/// no index.
fn read_index(path: &Path) -> Option<(Vec<Record>, Vec<usize>)> {
    let file = File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_INDEX_BYTES).read_to_end(&mut bytes).ok()?;
    let complete = bytes.ends_with(b"\n");
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let last = lines.len() - 1;
    let (mut records, mut bad) = (Vec::new(), Vec::new());
    for (n, line) in lines.into_iter().enumerate() {
        if line.is_empty() || (n == last && !complete) {
            continue;
        }
        match serde_json::from_slice::<Record>(line) {
            Ok(r) if r.sha256.len() == 64 && r.sha256.bytes().all(|b| b.is_ascii_hexdigit()) => {
                records.push(r);
            }
            _ => bad.push(n + 1),
        }
    }
    Some((records, bad))
}

/// The index's records (see [`read_index`]).
fn read_records(path: &Path) -> Option<Vec<Record>> {
    read_index(path).map(|(records, _)| records)
}

/// What reading the store found that the reader should be told.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreWarning {
    /// The store holds originals, none of them of this session (the file
    /// was replaced by another session): it is ignored.
    OtherSession {
        /// The store's folder.
        store: PathBuf,
        /// The session the file holds.
        session: String,
    },
    /// An original's object is missing, or does not hold what its hash
    /// says.
    Damaged {
        /// The store's folder.
        store: PathBuf,
        /// The entry it is the original of.
        entry: EntryId,
    },
    /// A line of the index is not a record of an original: it is skipped.
    BadIndexLine {
        /// The index file.
        index: PathBuf,
        /// The line's number, from 1.
        line: usize,
    },
    /// An original is not the entry the session has under its id (another
    /// tool call, not a tool result, not an entry).
    Mismatch {
        /// The store's folder.
        store: PathBuf,
        /// The entry's id.
        entry: EntryId,
    },
}

impl fmt::Display for StoreWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OtherSession { store, session } => write!(
                f,
                "{}: the prune store holds originals of another session, not of {session}; it is ignored",
                store.display()
            ),
            Self::Damaged { store, entry } => write!(
                f,
                "{}: the original of entry {entry} is missing or damaged (its content does not match its hash); it is ignored",
                store.display()
            ),
            Self::BadIndexLine { index, line } => write!(
                f,
                "{}:{line}: the line is not a record of the prune store (a JSON object with session, entry, sha256 and bytes); it is skipped",
                index.display()
            ),
            Self::Mismatch { store, entry } => write!(
                f,
                "{}: the original kept for entry {entry} is not that entry of the session; it is ignored",
                store.display()
            ),
        }
    }
}

/// An original read back from the store.
#[derive(Debug, Clone, PartialEq)]
pub struct Original {
    /// The line as it stood in the session file.
    pub line: Vec<u8>,
    /// That line read as an entry.
    pub entry: Entry,
}

/// The prune store of one session, opened for reading.
#[derive(Debug, Clone, Default)]
pub struct PruneStore {
    root: PathBuf,
    /// The last record of each entry of this session.
    records: HashMap<EntryId, Record>,
}

impl PruneStore {
    /// Opens the store beside the session file `session_path` for the
    /// session `session_id`. A missing store is an empty one; a store whose
    /// records are all of other sessions is ignored with a warning.
    pub fn open(session_path: &Path, session_id: &str) -> (Self, Vec<StoreWarning>) {
        Self::open_dir(&store_dir(session_path), session_id)
    }

    /// [`PruneStore::open`] of the store folder `root` itself.
    pub fn open_dir(root: &Path, session_id: &str) -> (Self, Vec<StoreWarning>) {
        let mut store = Self {
            root: root.to_owned(),
            records: HashMap::new(),
        };
        let index = root.join(INDEX);
        let Some((records, bad)) = read_index(&index) else {
            return (store, Vec::new());
        };
        let any = !records.is_empty();
        for r in records {
            if r.session == session_id {
                store.records.insert(r.entry.clone(), r);
            }
        }
        let mut warnings: Vec<StoreWarning> = bad
            .into_iter()
            .map(|line| StoreWarning::BadIndexLine {
                index: index.clone(),
                line,
            })
            .collect();
        if any && store.records.is_empty() {
            warnings.push(StoreWarning::OtherSession {
                store: root.to_owned(),
                session: session_id.to_owned(),
            });
        }
        (store, warnings)
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.root
    }

    /// How many entries have an original here.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no entry has an original here.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Whether the store has a record for `id` (not yet checked).
    pub fn has(&self, id: &EntryId) -> bool {
        self.records.contains_key(id)
    }

    /// The original of the session's `entry`, checked: its object holds
    /// what its hash says, and it is the same entry (same id, a tool result
    /// of the same call as the session's). `Ok(None)` when the store has
    /// none.
    pub fn original(&self, entry: &Entry) -> Result<Option<Original>, StoreWarning> {
        let Some(record) = self.records.get(&entry.id) else {
            return Ok(None);
        };
        let damaged = || StoreWarning::Damaged {
            store: self.root.clone(),
            entry: entry.id.clone(),
        };
        let path = object_path(&self.root, &record.sha256);
        let meta = fs::symlink_metadata(&path).map_err(|_| damaged())?;
        if !meta.is_file() || meta.len() != record.bytes || meta.size() > crate::MAX_LINE_BYTES {
            return Err(damaged());
        }
        let line = fs::read(&path).map_err(|_| damaged())?;
        if sha256_hex(&line) != record.sha256 {
            return Err(damaged());
        }
        let mismatch = || StoreWarning::Mismatch {
            store: self.root.clone(),
            entry: entry.id.clone(),
        };
        let LineRead::Entry(parsed) = read_entry(&line) else {
            return Err(mismatch());
        };
        let original = parsed.entry;
        let same_call = match (&original.body, &entry.body) {
            (
                EntryBody::Message(AgentMessage::ToolResult(a)),
                EntryBody::Message(AgentMessage::ToolResult(b)),
            ) => a.tool_call_id == b.tool_call_id,
            _ => false,
        };
        if original.id != entry.id || !same_call {
            return Err(mismatch());
        }
        Ok(Some(Original {
            line,
            entry: original,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file under `dir`, recursively.
    fn files(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(files(&path));
            } else {
                out.push(path);
            }
        }
        out
    }

    #[test]
    fn originals_beyond_one_batch_are_all_kept_once_with_no_temporary_file_left() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s.jsonl");
        fs::write(&session, b"{}\n").unwrap();
        // More originals than a batch holds, two of them the same line.
        let mut originals: Vec<(EntryId, Vec<u8>)> = (0..BATCH + 44)
            .map(|i| {
                let line = format!("{{\"id\":\"e{i}\",\"output\":\"{}\"}}", "x".repeat(i % 7));
                (EntryId::from(format!("e{i}").as_str()), line.into_bytes())
            })
            .collect();
        let twin = originals[3].1.clone();
        originals.push((EntryId::from("twin"), twin));
        keep(&session, "sess", &originals, None).unwrap();

        let root = store_dir(&session);
        for (_, line) in &originals {
            let path = object_path(&root, &sha256_hex(line));
            assert_eq!(fs::read(&path).unwrap(), *line, "{}", path.display());
        }
        let all = files(&root);
        assert!(
            all.iter().all(|p| p.extension().is_none_or(|e| e != "tmp")),
            "temporary files left: {all:?}"
        );
        let objects = all
            .iter()
            .filter(|p| p.starts_with(root.join(OBJECTS)))
            .count();
        assert_eq!(objects, originals.len() - 1, "the twin line is one object");
        let records = read_records(&root.join(INDEX)).unwrap();
        assert_eq!(records.len(), originals.len(), "one record per entry");

        // Keeping them again writes nothing new.
        let index = fs::read(root.join(INDEX)).unwrap();
        keep(&session, "sess", &originals, None).unwrap();
        assert_eq!(fs::read(root.join(INDEX)).unwrap(), index);
        assert_eq!(files(&root).len(), all.len());
    }

    #[test]
    fn a_damaged_object_is_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s.jsonl");
        fs::write(&session, b"{}\n").unwrap();
        let originals = vec![(EntryId::from("e1"), b"{\"id\":\"e1\"}".to_vec())];
        keep(&session, "sess", &originals, None).unwrap();
        let path = object_path(&store_dir(&session), &sha256_hex(&originals[0].1));
        fs::write(&path, b"damaged").unwrap();
        keep(&session, "sess", &originals, None).unwrap();
        assert_eq!(fs::read(&path).unwrap(), originals[0].1);
    }

    #[test]
    fn a_temporary_file_a_killed_run_left_among_the_objects_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s.jsonl");
        fs::write(&session, b"{}\n").unwrap();
        let originals = vec![(EntryId::from("e1"), b"{\"id\":\"e1\"}".to_vec())];
        let object = object_path(&store_dir(&session), &sha256_hex(&originals[0].1));
        let folder = folder_of(&object);
        fs::create_dir_all(&folder).unwrap();
        // A process id no process has (above the kernel's limit).
        let stale = folder.join(".0123abcd.musepi.2147483000.0.tmp");
        let theirs = folder.join("notes.tmp");
        fs::write(&stale, b"half").unwrap();
        fs::write(&theirs, b"not ours").unwrap();
        keep(&session, "sess", &originals, None).unwrap();
        assert!(!stale.exists(), "the killed run's temporary file is gone");
        assert!(theirs.exists(), "a file not named as ours stays");
        assert_eq!(fs::read(&object).unwrap(), originals[0].1);
    }
}
