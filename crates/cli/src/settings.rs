//! Settings files (CLI.md, SPEC §17).
//!
//! `~/.musepi/settings.json`, then `.musepi/settings.json` in the working
//! directory, then an explicit `--settings FILE` are deep-merged, later files
//! winning key by key (arrays are replaced, not concatenated); the caller
//! applies flags last. Unknown keys are ignored. A value of the wrong type
//! is dropped with a [`SettingsWarning`] naming its file and key path, so
//! the key falls back to an earlier file's value or to the default.
//!
//! The working directory's file comes with the repository, so its hooks,
//! providers and remote endpoint apply only when the user trusts its exact
//! content ([`crate::trust`]); until then they are dropped and
//! [`LoadedSettings::untrusted`] says so. The user's own file and an
//! explicit `--settings FILE` are the user's choice and always apply.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::provider::{DeveloperRole, ProviderKind};

/// Every setting, with the defaults of SPEC §17.1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Settings {
    /// `compaction.*`.
    pub compaction: CompactionSettings,
    /// `branchSummary.*`.
    pub branch_summary: BranchSummarySettings,
    /// `snapcompact.*`.
    pub snapcompact: SnapcompactSettings,
    /// `contextPromotion.*`.
    pub context_promotion: ContextPromotionSettings,
    /// Named provider entries, selected with `--provider NAME`.
    pub providers: BTreeMap<String, ProviderEntry>,
    /// Hook commands by event name.
    pub hooks: BTreeMap<String, Vec<HookCommand>>,
}

/// `compaction.strategy` values (SPEC §4.9).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompactionStrategy {
    /// An LLM summary (SPEC §8).
    ContextFull,
    /// A handoff document and a new session (SPEC §10).
    Handoff,
    /// The local deterministic archive (spec-decisions 19: the default).
    #[default]
    Snapcompact,
    /// Mechanical elision of large tool results.
    Shake,
    /// No automatic compaction.
    Off,
}

/// `compaction.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CompactionSettings {
    /// Automatic maintenance on or off (manual compaction is always allowed).
    pub enabled: bool,
    /// The strategy.
    pub strategy: CompactionStrategy,
    /// The floor of the reserve; also drives summarizer output limits.
    pub reserve_tokens: u32,
    /// The recent window kept verbatim.
    pub keep_recent_tokens: u32,
    /// Whether threshold maintenance schedules the auto-continue prompt.
    pub auto_continue: bool,
    /// Mid-turn threshold checks.
    pub mid_turn_enabled: bool,
    /// Allows provider-native compaction and the custom remote endpoint.
    pub remote_enabled: bool,
    /// The custom summarizer URL (SPEC §9.1).
    pub remote_endpoint: Option<String>,
    /// A percent threshold when > 0.
    pub threshold_percent: f64,
    /// A fixed token threshold when > 0 (wins over the percent).
    pub threshold_tokens: i64,
    /// Idle maintenance.
    pub idle_enabled: bool,
    /// Idle trigger level.
    pub idle_threshold_tokens: u64,
    /// Idle delay.
    pub idle_timeout_seconds: u64,
    /// Useless-result elision (SPEC §6).
    pub drop_useless: bool,
    /// Superseded-read pruning (SPEC §5.4).
    pub supersede_reads: bool,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            strategy: CompactionStrategy::default(),
            reserve_tokens: 16384,
            keep_recent_tokens: 20000,
            auto_continue: true,
            mid_turn_enabled: true,
            remote_enabled: true,
            remote_endpoint: None,
            threshold_percent: -1.0,
            threshold_tokens: -1,
            idle_enabled: false,
            idle_threshold_tokens: 200_000,
            idle_timeout_seconds: 300,
            drop_useless: true,
            supersede_reads: true,
        }
    }
}

/// `branchSummary.*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct BranchSummarySettings {
    /// Offer summaries when navigating the tree.
    pub enabled: bool,
    /// Branch budget = context window − this.
    pub reserve_tokens: u32,
    /// Summarize without asking.
    pub skip_prompt: bool,
}

impl Default for BranchSummarySettings {
    fn default() -> Self {
        Self {
            enabled: false,
            reserve_tokens: 16384,
            skip_prompt: false,
        }
    }
}

/// `contextPromotion.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ContextPromotionSettings {
    /// Promote to a larger model instead of compacting.
    pub enabled: bool,
}

/// `snapcompact.systemPrompt` values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SystemPromptImaging {
    /// Never.
    #[default]
    None,
    /// Only the AGENTS.md part.
    AgentsMd,
    /// The whole system prompt.
    All,
}

/// `snapcompact.*`, with the serialization budgets of SPEC §14.9.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SnapcompactSettings {
    /// `auto` or a shape name from SPEC §14.3.
    pub shape: String,
    /// Inline imaging of the system prompt.
    pub system_prompt: SystemPromptImaging,
    /// Inline imaging of large tool results.
    pub tool_results: bool,
    /// Tool result cap in characters; `null` or `"Infinity"` for none.
    #[serde(deserialize_with = "cap")]
    pub tool_result_max_chars: Option<u32>,
    /// Tool argument cap; `null` or `"Infinity"` for none.
    #[serde(deserialize_with = "cap")]
    pub tool_arg_max_chars: Option<u32>,
    /// Tool call cap; `null` or `"Infinity"` for none.
    #[serde(deserialize_with = "cap")]
    pub tool_call_max_chars: Option<u32>,
    /// The share of a truncated text kept from its head.
    pub truncate_head_ratio: f64,
    /// Print tool output dimmed.
    pub dim_tool_results: bool,
}

impl Default for SnapcompactSettings {
    fn default() -> Self {
        Self {
            shape: "auto".to_owned(),
            system_prompt: SystemPromptImaging::None,
            tool_results: false,
            tool_result_max_chars: Some(2000),
            tool_arg_max_chars: Some(500),
            tool_call_max_chars: Some(2000),
            truncate_head_ratio: 0.6,
            dim_tool_results: true,
        }
    }
}

/// A cap: a count, or `null` / `"Infinity"` for none.
fn cap<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u32>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Count(u32),
        Word(String),
    }
    match Option::<Raw>::deserialize(deserializer)? {
        None => Ok(None),
        Some(Raw::Count(n)) => Ok(Some(n)),
        Some(Raw::Word(w)) if w == "Infinity" => Ok(None),
        Some(Raw::Word(w)) => Err(serde::de::Error::custom(format!(
            "expected a non-negative count, null or \"Infinity\", found {w:?}"
        ))),
    }
}

/// A named provider entry of `providers`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProviderEntry {
    /// The protocol.
    pub kind: Option<ProviderKind>,
    /// The base URL (for `remote-endpoint`, the endpoint).
    pub base_url: Option<String>,
    /// The model id.
    pub model: Option<String>,
    /// The environment variable holding the key.
    pub api_key_env: Option<String>,
    /// The model's output limit.
    pub max_tokens: Option<u32>,
    /// A reasoning effort that replaces the request's (`off` for none).
    pub reasoning: Option<String>,
    /// Total time of one attempt, in milliseconds (default: the deadline).
    pub timeout_ms: Option<u64>,
    /// Total time of one request, every attempt and the waits between them
    /// included, in milliseconds (default 120000).
    pub deadline_ms: Option<u64>,
    /// Connect timeout in milliseconds.
    pub connect_timeout_ms: Option<u64>,
    /// Retries after the first attempt.
    pub max_retries: Option<u32>,
    /// The model's context window.
    pub context_window: Option<u32>,
    /// Whether the model reads images.
    pub vision: bool,
    /// The role of developer messages for chat-completions servers.
    pub developer_role: Option<DeveloperRole>,
}

/// One hook command of `hooks.<event>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HookCommand {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// How long it may run, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// Environment variables passed through to it.
    pub env: Vec<String>,
    /// What its failure does: `continue` (the default: reported, answer
    /// ignored) or `cancel` (the operation is cancelled). Checked when the
    /// hooks are built, so a typo is an error rather than a dropped hook.
    pub on_failure: Option<String>,
}

/// A setting that was not understood and was ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsWarning {
    /// The file it came from.
    pub file: PathBuf,
    /// The dotted key path, e.g. `compaction.reserveTokens`; empty for the whole file.
    pub key: String,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for SettingsWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}; file ignored", self.file.display(), self.message)
        } else {
            write!(
                f,
                "{}: {}: {}; value ignored",
                self.file.display(),
                self.key,
                self.message
            )
        }
    }
}

/// An explicit settings file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// It could not be read.
    #[error("cannot read settings file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// It is not JSON.
    #[error("settings file {} is not valid JSON", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

/// Where settings are read from, in increasing priority.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SettingsSources {
    /// `~/.musepi/settings.json`.
    pub user: Option<PathBuf>,
    /// `.musepi/settings.json` in the working directory.
    pub project: Option<PathBuf>,
    /// `--settings FILE`; it must exist and be valid JSON.
    pub explicit: Option<PathBuf>,
    /// The trust store that says whether `project` is trusted; without
    /// one, nothing is.
    pub trust: Option<PathBuf>,
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
            .any(|other| crate::commands::files::same_file(p, other))
    });
    let candidates = [
        (sources.user.as_ref(), false),
        (project, false),
        (sources.explicit.as_ref(), true),
    ];
    for (path, required) in candidates {
        let Some(path) = path else { continue };
        let bytes = match crate::trust::read_regular(path) {
            Ok(bytes) => bytes,
            Err(e) if !required && e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) if required => {
                return Err(SettingsError::Read {
                    path: path.clone(),
                    source,
                });
            }
            Err(e) => {
                warnings.push(file_warning(path, format!("cannot be read: {e}")));
                continue;
            }
        };
        let mut value = match serde_json::from_slice::<Value>(&bytes) {
            Ok(value) => value,
            Err(source) if required => {
                return Err(SettingsError::Json {
                    path: path.clone(),
                    source,
                });
            }
            Err(e) => {
                warnings.push(file_warning(path, format!("not valid JSON: {e}")));
                continue;
            }
        };
        if Some(path) == project
            && let Value::Object(map) = &mut value
        {
            untrusted =
                restrict_untrusted(path, &bytes, map, sources.trust.as_deref(), &mut warnings);
        }
        layers.push((path.clone(), value));
    }
    let mut loaded = merge_layers(layers);
    warnings.append(&mut loaded.warnings);
    loaded.warnings = warnings;
    loaded.untrusted = untrusted;
    Ok(loaded)
}

/// Drops the keys of a project file that need trust, unless `store`
/// approves `bytes` for it.
fn restrict_untrusted(
    path: &Path,
    bytes: &[u8],
    map: &mut Map<String, Value>,
    store: Option<&Path>,
    warnings: &mut Vec<SettingsWarning>,
) -> Option<Untrusted> {
    use crate::trust::{TrustStore, Verdict, key_for, sha256_hex, strip_restricted};
    let verdict = match (store, key_for(path)) {
        (Some(store), Ok(key)) => match TrustStore::load(store) {
            Ok(s) => s.verdict(&key, &sha256_hex(bytes)),
            Err(e) => {
                warnings.push(file_warning(path, format!("{e}; the file is not trusted")));
                Verdict::Unknown
            }
        },
        _ => Verdict::Unknown,
    };
    if verdict == Verdict::Trusted {
        return None;
    }
    let ignored = strip_restricted(map);
    let matters = |k: &String| matches!(k.as_str(), "hooks" | "providers") || k.contains('.');
    ignored.iter().any(matters).then(|| Untrusted {
        file: path.to_owned(),
        changed: verdict == Verdict::Changed,
        ignored: ignored.into_iter().filter(matters).collect(),
    })
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
        drop_invalid(&mut map, &mut Vec::new(), &file, &mut warnings);
        deep_merge(&mut merged, map);
    }
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
    }
}

fn file_warning(path: &Path, message: String) -> SettingsWarning {
    SettingsWarning {
        file: path.to_path_buf(),
        key: String::new(),
        message,
    }
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
