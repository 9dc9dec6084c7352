//! Writing files atomically: a temporary file with a recognisable name in
//! the target's folder, with the original's mode, owner and group; write,
//! `fsync`, rename, `fsync` of the folder. Temporary files that a killed
//! run left behind are removed by the next write to the same file.

use std::ffi::OsStr;
use std::fs::{self, File, Metadata, OpenOptions, Permissions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use crate::error::SessionError;

/// How old a temporary file must be before it counts as stale even though
/// a process with its pid is running (the pid may have been reused).
const STALE_AGE: Duration = Duration::from_hours(1);

/// The marker in every temporary file name: `.{name}.musepi.{pid}.{n}.tmp`.
const MARKER: &str = ".musepi.";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The folder a file lives in (`.` for a bare name).
pub(crate) fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    }
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| "session".into(), |n| n.to_string_lossy().into_owned())
}

/// A temporary file next to its target; removed on drop unless renamed.
pub(crate) struct Temp {
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    dir: PathBuf,
    renamed: bool,
}

impl Temp {
    /// Creates a temporary file for `target`. With `mode`, it is created
    /// private and given that mode when it is complete; without, it gets
    /// the mode a new file gets (0666 less the umask).
    pub(crate) fn create(target: &Path, mode: Option<u32>) -> Result<Self, SessionError> {
        remove_stale(&folder_of(target), &name_of(target));
        Self::create_only(target, mode)
    }

    /// [`Temp::create`] without looking for what a killed run left, for a
    /// caller that swept the folder once ([`remove_stale_in`]).
    pub(crate) fn create_only(target: &Path, mode: Option<u32>) -> Result<Self, SessionError> {
        let dir = folder_of(target);
        let name = name_of(target);
        let pid = std::process::id();
        let io = |source| SessionError::WriteFailed {
            path: target.to_owned(),
            source,
        };
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!(".{name}{MARKER}{pid}.{n}.tmp"));
            match OpenOptions::new()
                .write(true)
                .read(true)
                .create_new(true)
                .mode(if mode.is_some() { 0o600 } else { 0o666 })
                .open(&path)
            {
                Ok(file) => {
                    return Ok(Self {
                        path,
                        file,
                        dir,
                        renamed: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io(e)),
            }
        }
    }

    /// Gives the file the owner and group of `original` (where the system
    /// permits it; otherwise the rewrite is refused) and its mode.
    pub(crate) fn take_identity(
        &self,
        target: &Path,
        original: &Metadata,
    ) -> Result<(), SessionError> {
        let io = |source| SessionError::WriteFailed {
            path: target.to_owned(),
            source,
        };
        let mine = self.file.metadata().map_err(io)?;
        let differs = mine.uid() != original.uid() || mine.gid() != original.gid();
        if differs
            && let Err(e) =
                std::os::unix::fs::fchown(&self.file, Some(original.uid()), Some(original.gid()))
        {
            if e.kind() != io::ErrorKind::PermissionDenied {
                return Err(io(e));
            }
            let what = if mine.uid() == original.uid() {
                format!(
                    "it belongs to group {}, which is not one of yours",
                    original.gid()
                )
            } else {
                format!("it belongs to user {}", original.uid())
            };
            return Err(SessionError::OwnerChange {
                path: target.to_owned(),
                what,
            });
        }
        self.set_mode(original.mode(), target)
    }

    /// Sets the permission bits.
    pub(crate) fn set_mode(&self, mode: u32, target: &Path) -> Result<(), SessionError> {
        self.file
            .set_permissions(Permissions::from_mode(mode & 0o7777))
            .map_err(SessionError::write_failed(target))
    }

    /// `fsync`.
    pub(crate) fn sync(&self, target: &Path) -> Result<(), SessionError> {
        self.file
            .sync_all()
            .map_err(SessionError::write_failed(target))
    }

    /// Renames the file over `target`.
    pub(crate) fn rename_over(&mut self, target: &Path) -> Result<(), SessionError> {
        fs::rename(&self.path, target).map_err(SessionError::write_failed(target))?;
        self.renamed = true;
        Ok(())
    }

    /// Links the file at `target`, failing when `target` exists.
    pub(crate) fn link_new(&mut self, target: &Path) -> Result<(), SessionError> {
        match fs::hard_link(&self.path, target) {
            Ok(()) => {
                let _ = fs::remove_file(&self.path);
                self.renamed = true;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(SessionError::AlreadyExists {
                    path: target.to_owned(),
                })
            }
            Err(source) => Err(SessionError::WriteFailed {
                path: target.to_owned(),
                source,
            }),
        }
    }

    /// `fsync` of the folder, so the rename itself is durable.
    pub(crate) fn sync_folder(&self, target: &Path) -> Result<(), SessionError> {
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(SessionError::write_failed(target))
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Removes the temporary files for `name` in `dir` that a killed run left:
/// ours by name, owned by this user, regular files, and either the process
/// named in them is gone or they are older than an hour. Anything else is
/// left alone; failures are ignored (this is housekeeping).
pub(crate) fn remove_stale(dir: &Path, name: &str) -> usize {
    let prefix = format!(".{name}{MARKER}");
    remove_stale_where(dir, |file_name| temp_pid(file_name, &prefix))
}

/// [`remove_stale`] for the temporary files of every name in `dir`.
pub(crate) fn remove_stale_in(dir: &Path) -> usize {
    remove_stale_where(dir, |file_name| {
        let text = file_name.to_str()?;
        let at = text.rfind(MARKER)?;
        temp_pid(file_name, &text[..at + MARKER.len()]).filter(|_| text.starts_with('.'))
    })
}

fn remove_stale_where(dir: &Path, pid_of: impl Fn(&OsStr) -> Option<u32>) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let me = rustix::process::geteuid().as_raw();
    let own_pid = std::process::id();
    let mut removed = 0;
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = pid_of(&file_name) else {
            continue;
        };
        let Ok(meta) = fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.file_type().is_file() || meta.uid() != me || pid == own_pid {
            continue;
        }
        let old = meta
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age > STALE_AGE);
        if (old || !process_alive(pid)) && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The pid in a temporary file name of ours with `prefix`.
fn temp_pid(file_name: &OsStr, prefix: &str) -> Option<u32> {
    let rest = file_name
        .to_str()?
        .strip_prefix(prefix)?
        .strip_suffix(".tmp")?;
    let (pid, n) = rest.split_once('.')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

fn process_alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(e) => e != rustix::io::Errno::SRCH,
    }
}

/// How a whole-file write treats an existing file at the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// Refuse ([`SessionError::AlreadyExists`]).
    Never,
    /// Replace it atomically.
    Existing,
}

/// Writes a file atomically through a temporary file in its folder: `fill`
/// writes the bytes, then `fsync`, rename (or link, with
/// [`Replace::Never`]), `fsync` of the folder. With `mode`, the file gets
/// those permission bits; otherwise an existing file's, or those of a new
/// file (0666 less the umask). A symbolic link at `path` stays a link: the
/// file it points to is replaced. On error nothing is left behind and the
/// path is untouched.
pub fn write_file(
    path: &Path,
    mode: Option<u32>,
    replace: Replace,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), SessionError> {
    write_file_with(path, mode, replace, |out| {
        fill(out).map_err(SessionError::write_failed(path))
    })
}

/// [`write_file`] with a `fill` that can fail with any error of this crate
/// and returns a value.
pub(crate) fn write_file_with<T>(
    path: &Path,
    mode: Option<u32>,
    replace: Replace,
    fill: impl FnOnce(&mut dyn Write) -> Result<T, SessionError>,
) -> Result<T, SessionError> {
    let target = resolve(path);
    let existing = fs::metadata(&target).ok();
    // A folder (or a FIFO, a device) is refused first: `--force` could not
    // replace it, so "pass --force" would be the wrong advice.
    if let Some(kind) = existing.as_ref().and_then(crate::fsutil::kind_of) {
        return Err(SessionError::NotRegular {
            path: path.to_owned(),
            kind,
        });
    }
    if (existing.is_some() || target.is_symlink()) && replace == Replace::Never {
        return Err(SessionError::AlreadyExists {
            path: path.to_owned(),
        });
    }
    let mode = mode.or_else(|| existing.as_ref().map(MetadataExt::mode));
    let mut tmp = Temp::create(&target, mode)?;
    let io = |source| SessionError::WriteFailed {
        path: path.to_owned(),
        source,
    };
    let value = {
        let mut out = BufWriter::with_capacity(1 << 20, &tmp.file);
        let value = fill(&mut out)?;
        out.flush().map_err(io)?;
        value
    };
    if let Some(mode) = mode {
        tmp.set_mode(mode, path)?;
    }
    tmp.sync(path)?;
    match replace {
        Replace::Never => tmp.link_new(&target)?,
        Replace::Existing => tmp.rename_over(&target)?,
    }
    tmp.sync_folder(path)?;
    Ok(value)
}

/// `path` with symbolic links resolved when it exists, so a rewrite
/// replaces the file a link points to and the link stays a link.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}
