//! Reading the settings files, keeping the trusted keys, and merging them.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{Settings, SettingsError, SettingsWarning, Untrusted};

/// Where settings are read from, in increasing priority: the user's file,
/// the project's and the one named on the command line, and the trust
/// store that says whether the project's file is trusted.
///
/// [`discover`](Self::discover) gives the standard files;
/// [`default`](Self::default) gives none, to which the `with_` methods add
/// each source (`SettingsSources::default().with_explicit(file)`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettingsSources {
    /// `~/.musepi/settings.json`.
    user: Option<PathBuf>,
    /// `.musepi/settings.json` in the working directory.
    project: Option<PathBuf>,
    /// `--settings FILE`; it must exist and be valid JSON.
    explicit: Option<PathBuf>,
    /// The trust store that says whether `project` is trusted; without
    /// one, nothing is.
    trust: Option<PathBuf>,
}

impl SettingsSources {
    /// The standard files for `cwd` and `$HOME`, plus `explicit`.
    pub fn discover(cwd: &Path, explicit: Option<PathBuf>) -> Self {
        let home = crate::trust::home();
        Self {
            user: home
                .as_ref()
                .map(|h| h.join(".musepi").join("settings.json")),
            project: Some(cwd.join(".musepi").join("settings.json")),
            explicit,
            trust: crate::trust::store_path(home.as_deref()),
        }
    }

    /// The standard files for the working directory and `$HOME`, plus
    /// `explicit`; without a working directory (it was removed) there is
    /// no project file.
    pub fn discover_here(explicit: Option<PathBuf>) -> Self {
        match std::env::current_dir() {
            Ok(cwd) => Self::discover(&cwd, explicit),
            Err(_) => Self {
                project: None,
                ..Self::discover(Path::new("."), explicit)
            },
        }
    }

    /// `path` as the user's file (`~/.musepi/settings.json`): always
    /// trusted, skipped when missing.
    #[must_use]
    pub fn with_user(mut self, path: impl Into<PathBuf>) -> Self {
        self.user = Some(path.into());
        self
    }

    /// `path` as the project's file (`.musepi/settings.json`): skipped when
    /// missing, its keys that need trust applied only when the trust store
    /// approves its content.
    #[must_use]
    pub fn with_project(mut self, path: impl Into<PathBuf>) -> Self {
        self.project = Some(path.into());
        self
    }

    /// `path` as the file named on the command line (`--settings FILE`):
    /// always trusted, and it must exist and be valid JSON.
    #[must_use]
    pub fn with_explicit(mut self, path: impl Into<PathBuf>) -> Self {
        self.explicit = Some(path.into());
        self
    }

    /// `path` as the trust store, which says whether the project's file is
    /// trusted.
    #[must_use]
    pub fn with_trust(mut self, path: impl Into<PathBuf>) -> Self {
        self.trust = Some(path.into());
        self
    }

    /// No trust store: nothing of the project's file that needs trust
    /// applies.
    #[must_use]
    pub fn without_trust(mut self) -> Self {
        self.trust = None;
        self
    }

    /// The user's file, if any.
    pub fn user(&self) -> Option<&Path> {
        self.user.as_deref()
    }

    /// The project's file, if any.
    pub fn project(&self) -> Option<&Path> {
        self.project.as_deref()
    }

    /// The file named on the command line, if any.
    pub fn explicit(&self) -> Option<&Path> {
        self.explicit.as_deref()
    }

    /// The trust store, if any.
    pub fn trust(&self) -> Option<&Path> {
        self.trust.as_deref()
    }
}

/// Merged settings and what was wrong with them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadedSettings {
    /// The merged settings.
    pub settings: Settings,
    /// Values and files that were ignored, in file order.
    pub warnings: Vec<SettingsWarning>,
    /// The files that were read, lowest priority first.
    pub files: Vec<PathBuf>,
    /// The project file's keys that were ignored because it is not trusted.
    pub untrusted: Option<Untrusted>,
    /// Whether a file names `compaction.strategy` (with a value it
    /// accepts): a caller with a default of its own (the pi extension's
    /// LLM summary through pi's model) keeps to what the user chose.
    pub strategy_named: bool,
}

/// Reads and merges the settings files. Missing implicit files are skipped;
/// an unreadable or invalid implicit file is ignored with a warning; an
/// explicit file that cannot be read or parsed is an error. The project
/// file's keys that need trust are dropped unless the trust store approves
/// its content.
pub fn load_settings(sources: &SettingsSources) -> Result<LoadedSettings, SettingsError> {
    let mut layers = Vec::new();
    let mut warnings = Vec::new();
    let mut untrusted = None;
    // The project file may be the user's own (in the home folder) or the
    // explicit one: it is read once, as that.
    let project = sources.project.as_ref().filter(|p| {
        ![&sources.user, &sources.explicit]
            .into_iter()
            .flatten()
            .any(|other| musepi_session_model::same_file(p, other))
    });
    let candidates = [
        (sources.user.as_ref(), false),
        (project, false),
        (sources.explicit.as_ref(), true),
    ];
    for (path, required) in candidates {
        let Some(path) = path else { continue };
        let Some((bytes, mut value)) = read_file(path, required, &mut warnings)? else {
            continue;
        };
        if Some(path) == project
            && let Value::Object(map) = &mut value
        {
            let (restricted, store_error) =
                crate::trust::restrict(path, &bytes, map, sources.trust.as_deref());
            if let Some(e) = store_error {
                warnings.push(file_warning(path, format!("{e}; the file is not trusted")));
            }
            untrusted = restricted;
        }
        layers.push((path.clone(), value));
    }
    let mut loaded = merge_layers(layers);
    warnings.append(&mut loaded.warnings);
    loaded.warnings = warnings;
    loaded.untrusted = untrusted;
    Ok(loaded)
}

/// The bytes of the settings file at `path` and their JSON. A `required`
/// file that cannot be read or parsed is an error; any other is skipped
/// (`None`): silently when it does not exist, else with a warning.
fn read_file(
    path: &Path,
    required: bool,
    warnings: &mut Vec<SettingsWarning>,
) -> Result<Option<(Vec<u8>, Value)>, SettingsError> {
    let read = crate::trust::read_regular(path);
    if let Err(e) = &read
        && !required
        && e.kind() == io::ErrorKind::NotFound
    {
        return Ok(None);
    }
    let parsed = read
        .map_err(|source| SettingsError::Read {
            path: path.to_owned(),
            source,
        })
        // A byte-order mark, as some editors save JSON, is not part of the
        // document (RFC 8259 lets a parser skip it); the bytes, hashed by
        // `musepi trust`, stay as they are.
        .and_then(
            |bytes| match serde_json::from_slice::<Value>(without_bom(&bytes)) {
                Ok(value) => Ok((bytes, value)),
                Err(source) => Err(SettingsError::Json {
                    path: path.to_owned(),
                    source,
                }),
            },
        );
    match parsed {
        Ok(file) => Ok(Some(file)),
        Err(e) if required => Err(e),
        Err(SettingsError::Read { source, .. }) => {
            warnings.push(file_warning(path, format!("cannot be read: {source}")));
            Ok(None)
        }
        Err(SettingsError::Json { source, .. }) => {
            warnings.push(file_warning(path, format!("not valid JSON: {source}")));
            Ok(None)
        }
    }
}

/// `bytes` without a leading UTF-8 byte-order mark.
fn without_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// Merges parsed settings documents, lowest priority first.
pub fn merge_layers(layers: Vec<(PathBuf, Value)>) -> LoadedSettings {
    let mut merged = Map::new();
    let mut warnings = Vec::new();
    let mut files = Vec::new();
    for (file, value) in layers {
        files.push(file.clone());
        let Value::Object(mut map) = value else {
            warnings.push(file_warning(
                &file,
                "the top level is not a JSON object".to_owned(),
            ));
            continue;
        };
        unknown_keys(&map, &known_keys(), "", &file, &mut warnings);
        drop_invalid(&mut map, &mut Vec::new(), &file, &mut warnings);
        deep_merge(&mut merged, map);
    }
    let strategy_named = merged
        .get("compaction")
        .and_then(|c| c.get("strategy"))
        .is_some_and(|s| !s.is_null());
    let settings = serde_json::from_value(Value::Object(merged)).unwrap_or_else(|e| {
        // Every value was checked on its own; a failure here means two
        // valid values conflict, which the typed settings cannot express.
        warnings.push(SettingsWarning {
            file: files.last().cloned().unwrap_or_default(),
            key: String::new(),
            message: format!("settings could not be combined ({e}), using defaults"),
        });
        Settings::default()
    });
    LoadedSettings {
        settings,
        warnings,
        files,
        untrusted: None,
        strategy_named,
    }
}

fn file_warning(path: &Path, message: String) -> SettingsWarning {
    SettingsWarning {
        file: path.to_path_buf(),
        key: String::new(),
        message,
    }
}

/// Every key the settings have, as the defaults hold them: an object per
/// group (`compaction`, `snapcompact`, …) with its keys; `providers` and
/// `hooks` are maps whose keys are the user's own names.
fn known_keys() -> Value {
    // The caps are left out of the JSON while unset (so that an unset cap
    // written back and read again stays unset): set them for their keys.
    let mut every = crate::settings::Settings::default();
    let snap = &mut every.snapcompact;
    for cap in [
        &mut snap.tool_result_max_chars,
        &mut snap.tool_arg_max_chars,
        &mut snap.tool_call_max_chars,
    ] {
        *cap = Some(crate::settings::Cap(None));
    }
    serde_json::to_value(every).unwrap_or_default()
}

/// The maps of the settings: their keys are names the user chose.
const NAMED_MAPS: [&str; 2] = ["providers", "hooks"];

/// Warns of each key of `map` the settings do not have (a misspelled
/// `keepRecentTokns` would otherwise be ignored without a word), naming the
/// nearest known key when one is close; the value is ignored, as serde
/// ignores it. `known` is the same level of [`known_keys`], `prefix` its
/// dotted path.
fn unknown_keys(
    map: &Map<String, Value>,
    known: &Value,
    prefix: &str,
    file: &Path,
    warnings: &mut Vec<SettingsWarning>,
) {
    let Value::Object(known) = known else {
        return;
    };
    for (key, value) in map {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match known.get(key) {
            Some(_) if prefix.is_empty() && NAMED_MAPS.contains(&key.as_str()) => {}
            Some(inner) => {
                if let Value::Object(child) = value {
                    unknown_keys(child, inner, &path, file, warnings);
                }
            }
            None => {
                let hint = nearest(key, known.keys().map(String::as_str))
                    .map(|k| format!(" (did you mean `{k}`?)"))
                    .unwrap_or_default();
                warnings.push(SettingsWarning {
                    file: file.to_path_buf(),
                    key: path,
                    message: format!("unknown key{hint}"),
                });
            }
        }
    }
}

/// The known key closest to `key` by edit distance, ignoring case, when it
/// is close enough to be a slip (at most a third of its letters).
fn nearest<'a>(key: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let key = key.to_lowercase();
    known
        .map(|k| (edit_distance(&key, &k.to_lowercase()), k))
        .filter(|(d, k)| *d <= (k.chars().count() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Removes every value the typed settings reject, with a warning for each.
///
/// Each value is tried alone at its path (all settings have defaults, so a
/// lone value parses exactly when it is acceptable); objects that the path
/// accepts are searched key by key instead.
fn drop_invalid(
    map: &mut Map<String, Value>,
    path: &mut Vec<String>,
    file: &Path,
    warnings: &mut Vec<SettingsWarning>,
) {
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        path.push(key.clone());
        if let Some(value) = map.get_mut(&key) {
            let recurse =
                matches!(value, Value::Object(_)) && probe(path, Value::Object(Map::new())).is_ok();
            if recurse {
                if let Value::Object(child) = value {
                    drop_invalid(child, path, file, warnings);
                }
            } else if let Err(message) = probe(path, value.clone()) {
                warnings.push(SettingsWarning {
                    file: file.to_path_buf(),
                    key: path.join("."),
                    message,
                });
                map.remove(&key);
            }
        }
        path.pop();
    }
}

/// Whether `value` alone at `path` parses as settings.
fn probe(path: &[String], value: Value) -> Result<(), String> {
    let document = path.iter().rev().fold(value, |inner, key| {
        let mut map = Map::new();
        map.insert(key.clone(), inner);
        Value::Object(map)
    });
    serde_json::from_value::<Settings>(document)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Merges `overlay` into `base`: objects key by key, anything else replaced.
fn deep_merge(base: &mut Map<String, Value>, overlay: Map<String, Value>) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(incoming)) => {
                deep_merge(existing, incoming);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}
