//! Reading a session from `FILE` or standard input, and writing files
//! atomically.

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use musepi_session_model::{FileTail, IdSource, Session, SessionError, load_bytes, load_file};

use crate::ctx::{Ctx, Failure};
use crate::output::{counted, note};

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

    /// The input as a command to paste names it: `-` for standard input,
    /// a path quoted for the shell when it holds anything but letters,
    /// digits and `_-./,:@%+=` (a space, a non-ASCII letter, a quote).
    pub fn shell_arg(&self) -> String {
        let path = match self {
            Self::File(p) => p.display().to_string(),
            Self::Stdin => return "-".to_owned(),
        };
        let plain = |c: char| c.is_ascii_alphanumeric() || "_-./,:@%+=".contains(c);
        if !path.is_empty() && path.chars().all(plain) {
            path
        } else {
            format!("'{}'", path.replace('\'', "'\\''"))
        }
    }

    /// Where a pasted command reads the same session: a file as it is,
    /// standard input only when it is given the same input again.
    fn again(&self) -> &'static str {
        match self {
            Self::File(_) => "",
            Self::Stdin => " on the same input",
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

/// Reads the session for a command that only reads it: nothing is
/// written, whatever the file holds. An unmigrated v1 file's entries are
/// numbered `00000001`, `00000002`, … in file order, so an id one command
/// prints is known to the next.
pub fn load(input: &Input, ctx: &Ctx) -> Result<Loaded, SessionError> {
    let _ = ctx;
    load_with(input, &mut crate::ids::for_v1())
}

/// Reads the session with `ids` for the entries of a v1 file.
pub fn load_with(input: &Input, ids: &mut dyn IdSource) -> Result<Loaded, SessionError> {
    match input {
        Input::File(path) => {
            let (session, tail) = load_file(path, ids)?;
            Ok(Loaded {
                input: input.clone(),
                session,
                tail: Some(tail),
                bytes: None,
            })
        }
        Input::Stdin => {
            let bytes = read_stdin().map_err(|source| {
                let path = PathBuf::from("<stdin>");
                // `musepi … - < folder`: refused as a folder named on the line is.
                if source.kind() == io::ErrorKind::IsADirectory {
                    SessionError::NotRegular {
                        path,
                        kind: "folder",
                    }
                } else {
                    SessionError::Io { path, source }
                }
            })?;
            let session = load_bytes(Path::new("<stdin>"), &bytes, ids)?;
            Ok(Loaded {
                input: input.clone(),
                session,
                tail: None,
                bytes: Some(bytes),
            })
        }
    }
}

/// Keeps `value` until the process exits, which gives all its memory back
/// at once: dropping a large session frees it entry by entry, which costs
/// about a twentieth of reading it. For what a command read and uses until
/// it ends.
pub fn keep_until_exit<T>(value: T) {
    std::mem::forget(value);
}

/// Reads the session, failing with the exit code of the condition, and
/// says on stderr when the file has problems or is an unmigrated v1 file.
pub fn load_or_fail(input: &Input, ctx: &Ctx) -> Result<Loaded, Failure> {
    let loaded = load(input, ctx)?;
    note_problems(input, &loaded.session, ctx);
    if loaded.session.original_version() < 2 {
        note(
            ctx.quiet(),
            &format!(
                "musepi: {name} is a v1 session, whose entries have no ids: musepi numbers them 00000001, 00000002, … in file order, the ids `musepi session migrate {arg}`{again} writes into it",
                name = input.name(),
                arg = input.shell_arg(),
                again = input.again(),
            ),
        );
    }
    Ok(loaded)
}

/// One line on stderr when the session has problems: how many, and the
/// command that lists them.
pub fn note_problems(input: &Input, session: &Session, ctx: &Ctx) {
    let n = session.problems().len();
    if n > 0 {
        note(
            ctx.quiet(),
            &format!(
                "musepi: {name} has {problems}; `musepi session check {arg}`{again} lists them",
                name = input.name(),
                problems = counted(n, "problem", "problems"),
                arg = input.shell_arg(),
                again = input.again(),
            ),
        );
    }
}

fn read_stdin() -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    io::stdin().lock().read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The permission bits of `path`, when it can be read.
pub fn mode_of(path: &Path) -> Option<u32> {
    fs::metadata(path).ok().map(|m| m.mode())
}
