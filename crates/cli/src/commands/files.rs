//! Reading a session from `FILE` or standard input, and writing files
//! atomically.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use musepi_session_model::{FileTail, Session, SessionError, load_bytes, load_file};

use super::{Ctx, Failure, OrExit};

/// Where a session is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A file.
    File(PathBuf),
    /// Standard input (`-`).
    Stdin,
}

impl Input {
    /// `-` is standard input; anything else a file.
    pub fn from_arg(arg: &Path) -> Self {
        if arg.as_os_str() == "-" {
            Self::Stdin
        } else {
            Self::File(arg.to_owned())
        }
    }

    /// The name used in messages.
    pub fn name(&self) -> String {
        match self {
            Self::File(p) => p.display().to_string(),
            Self::Stdin => "<stdin>".to_owned(),
        }
    }
}

/// A session read for a command.
#[derive(Debug)]
pub struct Loaded {
    /// Where it came from.
    pub input: Input,
    /// The session (v1 and v2 migrated in memory only).
    pub session: Session,
    /// How the file ends (files only).
    pub tail: Option<FileTail>,
    /// The bytes read from standard input (stdin only).
    pub bytes: Option<Vec<u8>>,
}

/// Reads the session. Nothing is written, whatever the file holds.
pub fn load(input: &Input, ctx: &Ctx) -> Result<Loaded, SessionError> {
    let mut ids = crate::ids::for_migration(ctx.deterministic_ids());
    match input {
        Input::File(path) => {
            let (session, tail) = load_file(path, ids.as_mut())?;
            Ok(Loaded {
                input: input.clone(),
                session,
                tail: Some(tail),
                bytes: None,
            })
        }
        Input::Stdin => {
            let bytes = read_stdin().map_err(|source| SessionError::Io {
                path: PathBuf::from("<stdin>"),
                source,
            })?;
            let session = load_bytes(Path::new("<stdin>"), &bytes, ids.as_mut())?;
            Ok(Loaded {
                input: input.clone(),
                session,
                tail: None,
                bytes: Some(bytes),
            })
        }
    }
}

/// Reads the session, failing with exit 2.
pub fn load_or_fail(input: &Input, ctx: &Ctx) -> Result<Loaded, Failure> {
    load(input, ctx).or_bad_input()
}

fn read_stdin() -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    io::stdin().lock().read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Whether `a` and `b` name the same existing file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => a == b,
    }
}

/// Writes a file atomically: a temporary file in the same folder, written
/// by `fill`, flushed to disk, renamed over `path`, then the folder synced.
/// On error the temporary file is removed and `path` is untouched.
pub fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut io::BufWriter<&File>) -> io::Result<()>,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let (tmp_path, file) = create_temp(&dir, &name)?;
    let result = (|| {
        if let Ok(meta) = fs::metadata(path) {
            file.set_permissions(meta.permissions())?;
        }
        let mut out = io::BufWriter::with_capacity(1 << 20, &file);
        fill(&mut out)?;
        out.flush()?;
        drop(out);
        file.sync_all()?;
        fs::rename(&tmp_path, path)?;
        File::open(&dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp_path);
    }
    result
}

fn create_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    let pid = std::process::id();
    let mut last = None;
    for attempt in 0..100u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tmp = dir.join(format!(".{name}.{pid}.{nanos:x}{attempt}.tmp"));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("cannot create a temporary file")))
}
