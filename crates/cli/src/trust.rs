//! Which project settings files the user trusts, pinned to their content.
//!
//! A repository's `.musepi/settings.json` can name hook programs (which
//! run, and receive the environment variables they list), providers (which
//! receive the conversation and a key) and a remote summary endpoint. Those
//! keys take effect only once the user has approved that file's exact
//! bytes with `musepi trust`, as `direnv allow` does: the store records the
//! file's absolute path and the SHA-256 of its content, and any change to
//! the file needs approval again. Until then the other keys, numbers and
//! strategy choices of `compaction`, `branchSummary`, `snapcompact` and
//! `contextPromotion`, still apply.
//!
//! The store is `~/.musepi/trusted.json`, in the user's own settings
//! folder, written atomically under a lock.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// The top-level keys a project file applies without trust.
pub const HARMLESS_KEYS: [&str; 4] = [
    "compaction",
    "branchSummary",
    "snapcompact",
    "contextPromotion",
];

/// Keys inside the harmless sections that still need trust: they send the
/// conversation somewhere.
const RESTRICTED_INSIDE: [(&str, &str); 1] = [("compaction", "remoteEndpoint")];

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// There is no home folder to keep the store in.
    #[error("no home folder (HOME is not set), so there is nowhere to record trust")]
    NoHome,
    /// The store exists but cannot be read or parsed.
    #[error("cannot read the trust store {}: {reason}", path.display())]
    Read {
        /// The store.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The store could not be written; it is unchanged.
    #[error("cannot write the trust store {}", path.display())]
    Write {
        /// The store.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// One approved file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trusted {
    /// The SHA-256 of the approved content, in hex.
    pub sha256: String,
    /// When it was approved (ISO-8601).
    pub trusted_at: String,
}

/// The store's file format.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Stored {
    version: u32,
    trusted: BTreeMap<PathBuf, Trusted>,
}

/// What the store says about one file's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// This exact content was approved.
    Trusted,
    /// The file was approved with other content.
    Changed,
    /// The file was never approved.
    Unknown,
}

impl Verdict {
    /// `trusted`, `changed` or `untrusted`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Trusted => "trusted",
            Self::Changed => "changed",
            Self::Unknown => "untrusted",
        }
    }
}

/// The approved files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustStore {
    path: PathBuf,
    entries: BTreeMap<PathBuf, Trusted>,
}

/// The store in `home`: `~/.musepi/trusted.json`.
pub fn store_path(home: Option<&Path>) -> Option<PathBuf> {
    home.map(|h| h.join(".musepi").join("trusted.json"))
}

/// The home folder: `$HOME` (or `%USERPROFILE%`), when set.
pub fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The SHA-256 of `bytes`, in lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .fold(String::with_capacity(64), |mut s, b| {
            use std::fmt::Write as _;
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// The name a file is recorded under: the path where musepi found it,
/// made absolute. Links above the file's folder (the project folder and
/// the folders holding it) are resolved, so `..` and another name for the
/// same folder approve the same file; the folder and the file themselves
/// are not: a `.musepi` folder or a `settings.json` that is a symbolic
/// link to an approved file elsewhere is another file to trust, since its
/// hooks would run in another repository.
pub fn key_for(file: &Path) -> io::Result<PathBuf> {
    let abs = std::path::absolute(file)?;
    let (Some(name), Some(folder)) = (abs.file_name(), abs.parent()) else {
        return fs::canonicalize(file);
    };
    let (Some(folder_name), Some(above)) = (folder.file_name(), folder.parent()) else {
        return Ok(fs::canonicalize(folder)?.join(name));
    };
    Ok(fs::canonicalize(above)?.join(folder_name).join(name))
}

/// The first symbolic link on the way to `key` (see [`key_for`]): the
/// settings file's folder or the file itself, with where it leads (every
/// link resolved), when either is one.
pub fn link_of(key: &Path) -> Option<(PathBuf, PathBuf)> {
    let folder = key.parent()?;
    [folder, key]
        .into_iter()
        .find(|p| fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()))
        .map(|link| {
            let target =
                fs::canonicalize(link).unwrap_or_else(|_| fs::read_link(link).unwrap_or_default());
            (link.to_owned(), target)
        })
}

impl TrustStore {
    /// Reads the store; a missing store approves nothing.
    pub fn load(path: &Path) -> Result<Self, TrustError> {
        let entries = match fs::read(path) {
            Ok(bytes) => {
                serde_json::from_slice::<Stored>(&bytes)
                    .map_err(|e| TrustError::Read {
                        path: path.to_owned(),
                        reason: e.to_string(),
                    })?
                    .trusted
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => {
                return Err(TrustError::Read {
                    path: path.to_owned(),
                    reason: e.to_string(),
                });
            }
        };
        Ok(Self {
            path: path.to_owned(),
            entries,
        })
    }

    /// Where the store lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every approved file, by path.
    pub fn entries(&self) -> &BTreeMap<PathBuf, Trusted> {
        &self.entries
    }

    /// What the store says about `key` (see [`key_for`]) holding `sha256`.
    pub fn verdict(&self, key: &Path, sha256: &str) -> Verdict {
        match self.entries.get(key) {
            Some(t) if t.sha256 == sha256 => Verdict::Trusted,
            Some(_) => Verdict::Changed,
            None => Verdict::Unknown,
        }
    }

    /// Approves `key` with `sha256` (or, with `None`, withdraws its
    /// approval) and writes the store; returns whether anything changed.
    ///
    /// The store is read again under an exclusive lock, so two runs at
    /// once both keep their change.
    pub fn update(
        path: &Path,
        key: &Path,
        approval: Option<Trusted>,
    ) -> Result<(Self, bool), TrustError> {
        let write_error = |source: io::Error| TrustError::Write {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(write_error)?;
        }
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path.with_extension("json.lock"))
            .map_err(write_error)?;
        lock.lock().map_err(write_error)?;
        let mut store = Self::load(path)?;
        let changed = match approval {
            Some(t) => store.entries.insert(key.to_owned(), t.clone()).as_ref() != Some(&t),
            None => store.entries.remove(key).is_some(),
        };
        if changed {
            let stored = Stored {
                version: 1,
                trusted: store.entries.clone(),
            };
            let mut text = serde_json::to_string_pretty(&stored)
                .map_err(|e| write_error(io::Error::other(e)))?;
            text.push('\n');
            crate::output::write_atomically(path, |w| w.write_all(text.as_bytes()))
                .map_err(write_error)?;
        }
        drop(lock);
        Ok((store, changed))
    }
}

/// Removes from a project file's settings every key that needs trust;
/// returns their dotted names, in file order.
pub fn strip_restricted(map: &mut Map<String, Value>) -> Vec<String> {
    let mut removed = Vec::new();
    map.retain(|key, value| {
        if HARMLESS_KEYS.contains(&key.as_str()) {
            if let Value::Object(inner) = value {
                for (section, name) in RESTRICTED_INSIDE {
                    if section == key && inner.remove(name).is_some() {
                        removed.push(format!("{section}.{name}"));
                    }
                }
            }
            true
        } else {
            removed.push(key.clone());
            false
        }
    });
    removed
}

/// A project settings file whose hooks, providers or remote endpoint were
/// ignored because the user has not trusted its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrusted {
    /// The file.
    pub file: PathBuf,
    /// Whether it was trusted with other content.
    pub changed: bool,
    /// The ignored keys, e.g. `hooks`, `compaction.remoteEndpoint`.
    pub ignored: Vec<String>,
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys = match self.ignored.as_slice() {
            [] => String::new(),
            [one] => one.clone(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        };
        if self.changed {
            write!(
                f,
                "{} changed since you trusted it, so its {keys} are ignored (its other settings apply); review it and trust it again with `musepi trust`",
                self.file.display()
            )
        } else {
            write!(
                f,
                "{} is not trusted, so its {keys} are ignored (its other settings apply); review it and trust it with `musepi trust`",
                self.file.display()
            )
        }
    }
}

/// Drops the keys of a project file's settings that need trust, unless
/// `store` approves `bytes` for `path`; says which were dropped, and why
/// the store could not be read, if it could not.
pub fn restrict(
    path: &Path,
    bytes: &[u8],
    map: &mut Map<String, Value>,
    store: Option<&Path>,
) -> (Option<Untrusted>, Option<TrustError>) {
    let mut store_error = None;
    let verdict = match (store, key_for(path)) {
        (Some(store), Ok(key)) => match TrustStore::load(store) {
            Ok(s) => s.verdict(&key, &sha256_hex(bytes)),
            Err(e) => {
                store_error = Some(e);
                Verdict::Unknown
            }
        },
        _ => Verdict::Unknown,
    };
    if verdict == Verdict::Trusted {
        return (None, store_error);
    }
    // Unknown keys are ignored anyway; only these would have done something.
    let matters = |k: &String| matches!(k.as_str(), "hooks" | "providers") || k.contains('.');
    let ignored: Vec<String> = strip_restricted(map).into_iter().filter(matters).collect();
    let untrusted = (!ignored.is_empty()).then(|| Untrusted {
        file: path.to_owned(),
        changed: verdict == Verdict::Changed,
        ignored,
    });
    (untrusted, store_error)
}

/// Opens `file` for reading only if it is a regular file (not a FIFO or a
/// device that would never end).
pub fn read_regular(file: &Path) -> io::Result<Vec<u8>> {
    let handle = File::open(file)?;
    if !handle.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut &handle, &mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_harmless_sections_survive_without_trust() {
        let mut map = serde_json::json!({
            "compaction": {"reserveTokens": 1000, "remoteEndpoint": "https://x.example/s", "strategy": "context-full"},
            "hooks": {"session_tree": [{"command": ["./x"]}]},
            "providers": {"p": {"kind": "anthropic", "apiKeyEnv": "ANTHROPIC_API_KEY"}},
            "snapcompact": {"shape": "8on22-bw"},
            "somethingNew": 1,
        });
        let Value::Object(map) = &mut map else {
            panic!("an object")
        };
        let removed = strip_restricted(map);
        assert_eq!(
            removed,
            [
                "compaction.remoteEndpoint",
                "hooks",
                "providers",
                "somethingNew"
            ]
        );
        assert_eq!(
            Value::Object(map.clone()),
            serde_json::json!({
                "compaction": {"reserveTokens": 1000, "strategy": "context-full"},
                "snapcompact": {"shape": "8on22-bw"},
            })
        );
    }

    #[test]
    fn hashes_are_sha256_in_hex() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_changed_file_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = dir.path().join("home/.musepi/trusted.json");
        let key = dir.path().join("repo/.musepi/settings.json");
        let approval = Trusted {
            sha256: sha256_hex(b"{}"),
            trusted_at: "2026-01-01T00:00:00.000Z".into(),
        };
        let (s, changed) = TrustStore::update(&store, &key, Some(approval.clone()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(changed);
        assert_eq!(s.verdict(&key, &sha256_hex(b"{}")), Verdict::Trusted);
        assert_eq!(s.verdict(&key, &sha256_hex(b"{ }")), Verdict::Changed);
        assert_eq!(s.verdict(&store, &sha256_hex(b"{}")), Verdict::Unknown);
        let (_, again) =
            TrustStore::update(&store, &key, Some(approval)).unwrap_or_else(|e| panic!("{e}"));
        assert!(!again, "approving the same content twice changes nothing");
        let loaded = TrustStore::load(&store).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded.entries().len(), 1);
        let (s, revoked) = TrustStore::update(&store, &key, None).unwrap_or_else(|e| panic!("{e}"));
        assert!(revoked);
        assert_eq!(s.verdict(&key, &sha256_hex(b"{}")), Verdict::Unknown);
    }
}
