//! Settings files (CLI.md, docs/design.md, "Settings").
//!
//! `~/.musepi/settings.json`, then `.musepi/settings.json` in the working
//! directory, then an explicit `--settings FILE` are deep-merged, later files
//! winning key by key (arrays are replaced, not concatenated); the caller
//! applies flags last. An unknown key is reported with a
//! [`SettingsWarning`] (naming the nearest known key) and ignored. A value
//! of the wrong type is dropped with a warning naming its file and key
//! path, so the key falls back to an earlier file's value or to the
//! default; `null` unsets a key.
//!
//! As uv does it: the types here are the files' shape, every key of
//! `compaction`, `branchSummary` and `contextPromotion` optional, and
//! [`Settings::maintenance`] is the one mapping to what the runtime reads,
//! where what no file set takes the runtime's default
//! ([`musepi_runtime::MaintenanceSettings::default`], the one place those defaults are
//! written).
//!
//! The working directory's file comes with the repository, so its hooks,
//! providers and remote endpoint apply only when the user trusts its exact
//! content ([`crate::trust`]); until then they are dropped and
//! [`LoadedSettings::untrusted`] says so. The user's own file and an
//! explicit `--settings FILE` are the user's choice and always apply.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize};

pub use crate::trust::Untrusted;
pub use load::{LoadedSettings, SettingsSources, load_settings, merge_layers};
pub use musepi_providers::ProviderEntry;
use musepi_providers::ProviderSettings;
use musepi_runtime::MaintenanceStrategy;

mod load;
mod runtime;

/// Every setting, with the defaults (docs/design.md, "Settings").
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

impl Settings {
    /// What the provider resolution reads: the named entries and
    /// `compaction.remoteEndpoint`.
    pub fn provider_settings(&self) -> ProviderSettings<'_> {
        ProviderSettings {
            entries: &self.providers,
            remote_endpoint: self.compaction.remote_endpoint.as_deref(),
        }
    }
}

/// `compaction.*`, as the files hold it: every key optional. What no file
/// sets is the runtime's default, applied in the one mapping to the
/// runtime's settings ([`Settings::maintenance`]); the defaults are written
/// once, in [`musepi_runtime::MaintenanceSettings::default`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CompactionSettings {
    /// Automatic maintenance on or off (manual compaction is always allowed).
    pub enabled: Option<bool>,
    /// The strategy.
    pub strategy: Option<MaintenanceStrategy>,
    /// The floor of the reserve; also drives summarizer output limits.
    pub reserve_tokens: Option<u64>,
    /// The recent window kept verbatim.
    pub keep_recent_tokens: Option<u64>,
    /// Whether threshold maintenance schedules the auto-continue prompt.
    pub auto_continue: Option<bool>,
    /// Mid-turn threshold checks.
    pub mid_turn_enabled: Option<bool>,
    /// Allows provider-native compaction and the custom remote endpoint.
    pub remote_enabled: Option<bool>,
    /// The custom summarizer URL (docs/design.md, "Remote summaries").
    pub remote_endpoint: Option<String>,
    /// A percent threshold when > 0.
    pub threshold_percent: Option<f64>,
    /// A fixed token threshold when > 0 (wins over the percent), as the
    /// runtime reads it.
    pub threshold_tokens: Option<f64>,
    /// Idle maintenance.
    pub idle_enabled: Option<bool>,
    /// Idle trigger level.
    pub idle_threshold_tokens: Option<u64>,
    /// Idle delay.
    pub idle_timeout_seconds: Option<u64>,
    /// Useless-result elision (docs/design.md, "Pruning").
    pub drop_useless: Option<bool>,
    /// Superseded-read pruning (docs/design.md, "Pruning").
    pub supersede_reads: Option<bool>,
}

/// `branchSummary.*`, as the files hold it (defaults: the runtime's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct BranchSummarySettings {
    /// Offer summaries when navigating the tree.
    pub enabled: Option<bool>,
    /// Branch budget = context window − this.
    pub reserve_tokens: Option<u64>,
    /// Summarize without asking.
    pub skip_prompt: Option<bool>,
}

/// `contextPromotion.*`, as the files hold it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ContextPromotionSettings {
    /// Promote to a larger model instead of compacting (default: no).
    pub enabled: Option<bool>,
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

/// `snapcompact.*`, with the serialization budgets (docs/snapcompact.md):
/// the file's shape, every key optional. An unset key takes the
/// archive's own default ([`SerializeOptions::default`]), in the one
/// mapping [`SnapcompactSettings::serialize_options`]; a cap set to `null`
/// (or `"Infinity"`) is set, to no cap, which is why a cap present in
/// the file is read as set even when it is `null`.
///
/// [`SerializeOptions::default`]: musepi_runtime::archive::SerializeOptions::default
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SnapcompactSettings {
    /// `auto` (the default) or a shape name from docs/snapcompact.md.
    pub shape: Option<String>,
    /// Inline imaging of the system prompt.
    pub system_prompt: Option<SystemPromptImaging>,
    /// Inline imaging of large tool results.
    pub tool_results: Option<bool>,
    /// Tool result cap in characters; `null` or `"Infinity"` for none.
    #[serde(deserialize_with = "set_cap", skip_serializing_if = "Option::is_none")]
    pub tool_result_max_chars: Option<Cap>,
    /// Tool argument cap; `null` or `"Infinity"` for none.
    #[serde(deserialize_with = "set_cap", skip_serializing_if = "Option::is_none")]
    pub tool_arg_max_chars: Option<Cap>,
    /// Tool call cap; `null` or `"Infinity"` for none.
    #[serde(deserialize_with = "set_cap", skip_serializing_if = "Option::is_none")]
    pub tool_call_max_chars: Option<Cap>,
    /// The share of a truncated text kept from its head.
    pub truncate_head_ratio: Option<f64>,
    /// Print tool output dimmed.
    pub dim_tool_results: Option<bool>,
}

/// Reads a cap that is present in the file: `null` there means no cap,
/// not an unset key (an absent key stays `None` through `default`).
fn set_cap<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Cap>, D::Error> {
    Cap::deserialize(deserializer).map(Some)
}

/// A budget in characters: a count, or none (`null` or `"Infinity"` in a
/// settings file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Cap(pub Option<u32>);

impl Cap {
    /// The budget as the archive takes it.
    pub fn chars(self) -> Option<usize> {
        self.0.map(|v| v as usize)
    }
}

impl<'de> Deserialize<'de> for Cap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Count(u32),
            Word(String),
        }
        match Option::<Raw>::deserialize(deserializer)? {
            None => Ok(Self(None)),
            Some(Raw::Count(n)) => Ok(Self(Some(n))),
            Some(Raw::Word(w)) if w == "Infinity" => Ok(Self(None)),
            Some(Raw::Word(w)) => Err(serde::de::Error::custom(format!(
                "expected a non-negative count, null or \"Infinity\", found {w:?}"
            ))),
        }
    }
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
