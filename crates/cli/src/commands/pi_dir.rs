//! pi's session folder: where `musepi ls` looks and which file `--latest`
//! names.
//!
//! pi keeps the sessions of a working directory in
//! `~/.pi/agent/sessions/--<encoded cwd>--/`, one `<timestamp>_<id>.jsonl`
//! per session, and resumes the one modified last. The folder is found the
//! way pi finds it, with musepi's own overrides first (docs/cli.md):
//! `--session-dir DIR`, then `MUSEPI_SESSION_DIR`, then pi's
//! `PI_CODING_AGENT_SESSION_DIR`, then `sessionDir` of pi's settings
//! (`.pi/settings.json` of the working directory over
//! `<agent dir>/settings.json`), then the per-directory folder under pi's
//! agent directory (`PI_CODING_AGENT_DIR`, else `~/.pi/agent`).

use std::ffi::OsString;
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::ctx::{Exit, Failure};

/// musepi's override of the folder, after `--session-dir`.
pub const ENV_SESSION_DIR: &str = "MUSEPI_SESSION_DIR";
/// pi's own override of the folder.
pub const PI_ENV_SESSION_DIR: &str = "PI_CODING_AGENT_SESSION_DIR";
/// pi's agent directory (default `~/.pi/agent`).
pub const PI_ENV_AGENT_DIR: &str = "PI_CODING_AGENT_DIR";

/// Where the folder came from, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `--session-dir`.
    Flag,
    /// An environment variable.
    Env(&'static str),
    /// `sessionDir` of a pi settings file.
    PiSettings(PathBuf),
    /// pi's per-directory default.
    Default,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Flag => f.write_str("--session-dir"),
            Self::Env(name) => write!(f, "${name}"),
            Self::PiSettings(file) => write!(f, "sessionDir in {}", file.display()),
            Self::Default => f.write_str("pi's folder for the working directory"),
        }
    }
}

/// pi's session folder for one working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folder {
    /// The folder.
    pub dir: PathBuf,
    /// Why this one.
    pub source: Source,
}

/// What the folder resolution reads from the process: the environment and
/// the home folder. A parameter, so tests need not change the process's.
pub struct Env<'a> {
    /// One variable, `None` when unset or empty.
    pub var: &'a dyn Fn(&str) -> Option<OsString>,
    /// The home folder.
    pub home: Option<PathBuf>,
}

impl Env<'_> {
    /// The process's environment and `HOME`.
    pub fn process() -> Env<'static> {
        fn var(name: &str) -> Option<OsString> {
            std::env::var_os(name).filter(|v| !v.is_empty())
        }
        Env {
            var: &var,
            home: var("HOME").map(PathBuf::from),
        }
    }

    fn path(&self, name: &str) -> Result<Option<PathBuf>, Failure> {
        match (self.var)(name) {
            Some(v) => Ok(Some(self.expand(Path::new(&v))?)),
            None => Ok(None),
        }
    }

    /// `~` and `~/…` as pi expands them.
    fn expand(&self, path: &Path) -> Result<PathBuf, Failure> {
        let Ok(rest) = path.strip_prefix("~") else {
            return Ok(path.to_owned());
        };
        Ok(self.home()?.join(rest))
    }

    fn home(&self) -> Result<&Path, Failure> {
        self.home.as_deref().ok_or_else(|| {
            Failure::new(
                Exit::BadInput,
                "no-home",
                anyhow::anyhow!(
                    "there is no home folder (HOME is unset) to find pi's sessions in; name the folder with --session-dir DIR or ${ENV_SESSION_DIR}"
                ),
            )
        })
    }
}

/// `cwd` as pi names its folder: the leading `/` (or `\`) dropped, every
/// other `/`, `\` and `:` turned into `-`, between `--` and `--`.
pub fn encode_cwd(cwd: &Path) -> String {
    let text = cwd.to_string_lossy();
    let text = text
        .strip_prefix('/')
        .or_else(|| text.strip_prefix('\\'))
        .unwrap_or(&text);
    let body: String = text
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{body}--")
}

/// The folder pi keeps the sessions of `cwd` in (module docs).
pub fn resolve(flag: Option<&Path>, cwd: &Path, env: &Env<'_>) -> Result<Folder, Failure> {
    if let Some(dir) = flag {
        return Ok(Folder {
            dir: env.expand(dir)?,
            source: Source::Flag,
        });
    }
    for name in [ENV_SESSION_DIR, PI_ENV_SESSION_DIR] {
        if let Some(dir) = env.path(name)? {
            return Ok(Folder {
                dir,
                source: Source::Env(name),
            });
        }
    }
    let agent_dir = match env.path(PI_ENV_AGENT_DIR)? {
        Some(dir) => dir,
        None => env.home()?.join(".pi").join("agent"),
    };
    // The project's settings win over the global ones, as in pi.
    for file in [
        cwd.join(".pi").join("settings.json"),
        agent_dir.join("settings.json"),
    ] {
        if let Some(dir) = settings_session_dir(&file) {
            return Ok(Folder {
                dir: env.expand(&dir)?,
                source: Source::PiSettings(file),
            });
        }
    }
    Ok(Folder {
        dir: agent_dir.join("sessions").join(encode_cwd(cwd)),
        source: Source::Default,
    })
}

/// `sessionDir` of a pi settings file; nothing when the file is missing,
/// unreadable or not JSON (pi then ignores it too).
fn settings_session_dir(file: &Path) -> Option<PathBuf> {
    let text = fs::read_to_string(file).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value
        .get("sessionDir")?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
}

/// A session file of the folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The file.
    pub path: PathBuf,
    /// When it was last written.
    pub modified: SystemTime,
    /// Its size in bytes.
    pub size: u64,
}

/// The session files of `dir`, the newest first (by modification time, as
/// pi picks the session to resume; the name decides a tie). A file is one
/// when its name ends in `.jsonl` and its first line is a session header
/// with an id, as pi checks. A missing folder has none.
pub fn sessions(dir: &Path) -> Result<Vec<Listed>, Failure> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(Failure::new(
                Exit::BadInput,
                "unreadable-file",
                anyhow::Error::new(e).context(format!("cannot read {}", dir.display())),
            ));
        }
    };
    let mut found: Vec<Listed> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter_map(|path| {
            let meta = fs::metadata(&path).ok().filter(fs::Metadata::is_file)?;
            is_session(&path).then(|| Listed {
                modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                size: meta.len(),
                path,
            })
        })
        .collect();
    found.sort_by(|a, b| b.modified.cmp(&a.modified).then(b.path.cmp(&a.path)));
    Ok(found)
}

/// Whether the first line (within its first 512 bytes, as pi reads it) is a
/// session header with a string id.
fn is_session(path: &Path) -> bool {
    let mut head = Vec::with_capacity(512);
    let Ok(file) = fs::File::open(path) else {
        return false;
    };
    if file.take(512).read_to_end(&mut head).is_err() {
        return false;
    }
    let first = head.split(|b| *b == b'\n').next().unwrap_or_default();
    serde_json::from_slice::<serde_json::Value>(first).is_ok_and(|v| {
        v.get("type").and_then(serde_json::Value::as_str) == Some("session")
            && v.get("id").is_some_and(serde_json::Value::is_string)
    })
}

/// The newest session of the folder, for `--latest`.
pub fn latest(folder: &Folder) -> Result<PathBuf, Failure> {
    sessions(&folder.dir)?
        .into_iter()
        .next()
        .map(|s| s.path)
        .ok_or_else(|| {
            Failure::new(
                Exit::BadInput,
                "no-session",
                anyhow::anyhow!(
                    "--latest: no pi session in {} ({}); `musepi ls` lists the sessions musepi finds",
                    folder.dir.display(),
                    folder.source
                ),
            )
        })
}

/// The working directory, as pi records it.
pub fn cwd() -> Result<PathBuf, Failure> {
    std::env::current_dir().map_err(|e| {
        Failure::new(
            Exit::BadInput,
            "bad-input",
            anyhow::Error::new(e).context("cannot read the working directory"),
        )
    })
}

/// Why `prune`, `compact` and `branch` need FILE to be a path
/// ([`SessionArg::file_path`](crate::cli::SessionArg::file_path)).
pub const CHANGES_THE_FILE: &str =
    "changes the session file in place, or writes a copy of it with -o OUT";

impl crate::cli::SessionArg {
    /// FILE, or with `--latest` the newest session of pi's folder for the
    /// working directory.
    pub fn path(&self) -> Result<PathBuf, Failure> {
        if let Some(file) = &self.file {
            return Ok(file.clone());
        }
        let folder = resolve(self.session_dir.as_deref(), &cwd()?, &Env::process())?;
        latest(&folder)
    }

    /// FILE (or `--latest`) for a command that works on the session's file
    /// itself, which standard input is not: `-` is bad usage, the message
    /// saying that `musepi {command}` needs a path because it `{why}`.
    pub fn file_path(&self, command: &str, why: &str) -> Result<PathBuf, Failure> {
        if self.file.as_deref().is_some_and(|f| f.as_os_str() == "-") {
            return Err(Failure::usage(anyhow::anyhow!(
                "musepi {command} needs a session file path, not `-` (standard input): it {why} (a file named - is ./-)"
            )));
        }
        self.path()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::*;

    fn env(
        vars: &[(&str, &str)],
        home: Option<&str>,
    ) -> (BTreeMap<String, OsString>, Option<PathBuf>) {
        (
            vars.iter()
                .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
                .collect(),
            home.map(PathBuf::from),
        )
    }

    fn resolve_with(
        flag: Option<&str>,
        cwd: &str,
        vars: &[(&str, &str)],
        home: Option<&str>,
    ) -> Result<Folder, Failure> {
        let (vars, home) = env(vars, home);
        let var = move |name: &str| vars.get(name).cloned();
        let env = Env { var: &var, home };
        resolve(flag.map(Path::new), Path::new(cwd), &env)
    }

    #[test]
    fn the_cwd_is_encoded_as_pi_names_its_folder() {
        assert_eq!(
            encode_cwd(Path::new("/home/u/my proj")),
            "--home-u-my proj--"
        );
        assert_eq!(encode_cwd(Path::new("/")), "----");
        assert_eq!(encode_cwd(Path::new("C:\\work\\x")), "--C--work-x--");
        assert_eq!(encode_cwd(Path::new("/a:b/c")), "--a-b-c--");
    }

    #[test]
    fn the_default_folder_is_under_pi_s_agent_directory() {
        let f = resolve_with(None, "/nowhere/p", &[], Some("/h")).unwrap();
        assert_eq!(f.dir, PathBuf::from("/h/.pi/agent/sessions/--nowhere-p--"));
        assert_eq!(f.source, Source::Default);
        let f = resolve_with(
            None,
            "/nowhere/p",
            &[(PI_ENV_AGENT_DIR, "~/agent")],
            Some("/h"),
        )
        .unwrap();
        assert_eq!(f.dir, PathBuf::from("/h/agent/sessions/--nowhere-p--"));
    }

    #[test]
    fn the_flag_wins_then_musepi_s_variable_then_pi_s() {
        let vars = [(ENV_SESSION_DIR, "/m"), (PI_ENV_SESSION_DIR, "/p")];
        let f = resolve_with(Some("~/f"), "/c", &vars, Some("/h")).unwrap();
        assert_eq!((f.dir, f.source), (PathBuf::from("/h/f"), Source::Flag));
        let f = resolve_with(None, "/c", &vars, Some("/h")).unwrap();
        assert_eq!(f.dir, PathBuf::from("/m"));
        assert_eq!(f.source, Source::Env(ENV_SESSION_DIR));
        let f = resolve_with(None, "/c", &vars[1..], Some("/h")).unwrap();
        assert_eq!(f.dir, PathBuf::from("/p"));
    }

    #[test]
    fn no_home_is_an_error_only_when_the_home_is_needed() {
        let e = resolve_with(None, "/c", &[], None).unwrap_err();
        assert_eq!((e.exit, e.code), (Exit::BadInput, "no-home"));
        assert!(resolve_with(None, "/c", &[(ENV_SESSION_DIR, "/m")], None).is_ok());
    }

    #[test]
    fn pi_s_settings_name_the_folder_the_project_s_first() {
        let tmp = std::env::temp_dir().join(format!("musepi-pidir-{}", std::process::id()));
        let home = tmp.join("home");
        let cwd = tmp.join("proj");
        fs::create_dir_all(home.join(".pi/agent")).unwrap();
        fs::create_dir_all(cwd.join(".pi")).unwrap();
        fs::write(
            home.join(".pi/agent/settings.json"),
            r#"{"sessionDir": "~/global"}"#,
        )
        .unwrap();
        let h = home.to_str().unwrap();
        let c = cwd.to_str().unwrap();
        let f = resolve_with(None, c, &[], Some(h)).unwrap();
        assert_eq!(f.dir, home.join("global"));
        fs::write(
            cwd.join(".pi/settings.json"),
            r#"{"sessionDir": "/project"}"#,
        )
        .unwrap();
        let f = resolve_with(None, c, &[], Some(h)).unwrap();
        assert_eq!(f.dir, PathBuf::from("/project"));
        assert_eq!(f.source, Source::PiSettings(cwd.join(".pi/settings.json")));
        fs::write(cwd.join(".pi/settings.json"), "not json").unwrap();
        assert_eq!(
            resolve_with(None, c, &[], Some(h)).unwrap().dir,
            home.join("global")
        );
        fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn sessions_are_the_valid_files_newest_first() {
        let dir = std::env::temp_dir().join(format!("musepi-pidir-ls-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let header = r#"{"type":"session","version":3,"id":"x","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#;
        let write = |name: &str, text: &str, age: u64| {
            let p = dir.join(name);
            fs::write(&p, text).unwrap();
            musepi_test_support::written_ago(&p, Duration::from_secs(age));
        };
        write("old.jsonl", &format!("{header}\n"), 100);
        write("new.jsonl", &format!("{header}\n"), 10);
        write("broken.jsonl", "{\"type\":\"message\"}\n", 1);
        write("notes.txt", &format!("{header}\n"), 1);
        let names: Vec<String> = sessions(&dir)
            .unwrap()
            .iter()
            .map(|s| s.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["new.jsonl", "old.jsonl"]);
        let folder = Folder {
            dir: dir.clone(),
            source: Source::Flag,
        };
        assert_eq!(latest(&folder).unwrap(), dir.join("new.jsonl"));
        fs::remove_dir_all(&dir).unwrap();
        assert!(sessions(&dir).unwrap().is_empty());
        let e = latest(&folder).unwrap_err();
        assert_eq!((e.exit, e.code), (Exit::BadInput, "no-session"));
    }
}
