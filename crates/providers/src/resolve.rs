//! Turning `--provider`, `--base-url`, `--model`, the settings and the
//! environment into a ready provider.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::client::{build_client, shared_client};
use super::{ApiKey, DeveloperRole, Provider, ProviderConfig, ProviderKind, RetryPolicy, Timing};

/// A named provider entry, as the `providers` map of a settings file
/// holds it (camelCase keys; every key optional).
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

/// What the settings say about providers: the named entries, and the
/// custom remote endpoint a `remote-endpoint` without a URL uses.
#[derive(Debug, Clone, Copy)]
pub struct ProviderSettings<'a> {
    /// Named entries, selected with `--provider NAME`.
    pub entries: &'a BTreeMap<String, ProviderEntry>,
    /// `compaction.remoteEndpoint`.
    pub remote_endpoint: Option<&'a str>,
}

/// The provider flags of a command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderFlags {
    /// `--provider KIND|NAME`.
    pub provider: Option<String>,
    /// `--base-url URL`.
    pub base_url: Option<String>,
    /// `--model ID`.
    pub model: Option<String>,
    /// `--deadline SECONDS`: the total time of one request.
    pub deadline: Option<Duration>,
}

/// Why no provider could be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// `--provider` names neither a kind nor a settings entry.
    #[error(
        "unknown provider `{name}`: use a kind (openai-compatible, openai-responses, anthropic, remote-endpoint) or a name from the settings' providers map{}",
        known_names(known)
    )]
    UnknownProvider {
        /// What was asked for.
        name: String,
        /// The names in the settings.
        known: Vec<String>,
    },
    /// Nothing selects a provider.
    #[error(
        "no provider selected: pass --provider KIND|NAME (or --base-url for an openai-compatible server){}",
        known_names(known)
    )]
    NoProviderSelected {
        /// The names in the settings.
        known: Vec<String>,
    },
    /// A settings entry without `kind`.
    #[error("provider `{name}` has no kind: set providers.{name}.kind")]
    MissingKind {
        /// The entry.
        name: String,
    },
    /// No base URL for a kind without a default one.
    #[error(
        "no URL for provider `{name}`: pass --base-url, set providers.{name}.baseUrl or compaction.remoteEndpoint"
    )]
    MissingBaseUrl {
        /// The provider.
        name: String,
    },
    /// The base URL is not an http(s) URL.
    #[error("invalid URL `{url}` for provider `{name}`: {reason}")]
    InvalidUrl {
        /// The provider.
        name: String,
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// No model id.
    #[error("no model for provider `{name}`: pass --model ID or set providers.{name}.model")]
    MissingModel {
        /// The provider.
        name: String,
    },
    /// The official endpoint without a key.
    #[error("no API key for {name}: set {}", variables.join(" or "))]
    MissingApiKey {
        /// The provider.
        name: String,
        /// The variables that were read.
        variables: Vec<String>,
    },
    /// The key holds a character an HTTP header cannot carry.
    #[error(
        "the API key in {variable} holds {what} at character {position}, which an HTTP header cannot carry; nothing was sent (check the variable for a stray line break)"
    )]
    InvalidKey {
        /// The variable it came from.
        variable: String,
        /// What the character is, e.g. `a line break`.
        what: &'static str,
        /// Its position, from 1.
        position: usize,
    },
    /// The variable named by `apiKeyEnv` is unset.
    #[error("environment variable {variable} named by providers.{name}.apiKeyEnv is not set")]
    MissingKeyVariable {
        /// The provider.
        name: String,
        /// The variable.
        variable: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client")]
    Client(#[source] reqwest::Error),
}

impl ProviderError {
    /// The stable kebab-case code of the condition: `no-model` when nothing
    /// selects a provider, `bad-provider` when the selection cannot be
    /// built (an unknown name, no kind, no URL, an invalid URL, no model),
    /// `missing-api-key`, `invalid-api-key`, and `failed` for an HTTP
    /// client that cannot be built.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoProviderSelected { .. } => "no-model",
            Self::UnknownProvider { .. }
            | Self::MissingKind { .. }
            | Self::MissingBaseUrl { .. }
            | Self::InvalidUrl { .. }
            | Self::MissingModel { .. } => "bad-provider",
            Self::MissingApiKey { .. } | Self::MissingKeyVariable { .. } => "missing-api-key",
            Self::InvalidKey { .. } => "invalid-api-key",
            Self::Client(_) => "failed",
        }
    }

    /// Whether the condition is bad input: flags, settings or a key that
    /// cannot work as they are. Otherwise the operation itself failed.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, Self::Client(_))
    }
}

fn known_names(known: &[String]) -> String {
    if known.is_empty() {
        String::new()
    } else {
        format!(" (settings providers: {})", known.join(", "))
    }
}

/// Reads a variable from the process environment; empty counts as unset.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Resolves the provider configuration.
///
/// Selection: `--provider NAME` of a settings entry, else `--provider KIND`;
/// without `--provider`, the only settings entry if there is exactly one,
/// else `openai-compatible` when `--base-url` is given. `--base-url` and
/// `--model` then override the entry. A `remote-endpoint` without a URL
/// uses `compaction.remoteEndpoint`. The key comes from the entry's
/// `apiKeyEnv` (which must be set), else the kind's variable
/// (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`), else `MUSEPI_API_KEY`; it is
/// required only for a kind's official endpoint.
pub fn resolve_config(
    flags: &ProviderFlags,
    settings: &ProviderSettings<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ProviderConfig, ProviderError> {
    let known: Vec<String> = settings.entries.keys().cloned().collect();
    let (name, entry) = select(flags, settings, &known)?;
    let kind = entry
        .kind
        .ok_or_else(|| ProviderError::MissingKind { name: name.clone() })?;
    let base_url = flags
        .base_url
        .clone()
        .or(entry.base_url.clone())
        .or_else(|| {
            (kind == ProviderKind::RemoteEndpoint)
                .then(|| settings.remote_endpoint.map(str::to_owned))
                .flatten()
        })
        .or_else(|| kind.default_base_url().map(str::to_owned))
        .ok_or_else(|| ProviderError::MissingBaseUrl { name: name.clone() })?;
    check_url(&name, &base_url)?;
    let model = flags.model.clone().or(entry.model.clone());
    if model.is_none() && kind != ProviderKind::RemoteEndpoint {
        return Err(ProviderError::MissingModel { name });
    }
    let api_key = api_key(&name, kind, &entry, &base_url, env)?;
    let mut config = ProviderConfig::new(kind, base_url);
    config.name = name;
    config.model = model;
    config.api_key = api_key;
    config.max_tokens = entry.max_tokens.filter(|&n| n > 0);
    config.reasoning.clone_from(&entry.reasoning);
    config.timing = timing(&entry, flags.deadline);
    config.developer_role = entry.developer_role.unwrap_or_default();
    config.context_window = entry.context_window;
    config.vision = entry.vision;
    Ok(config)
}

/// The timing of `entry`: `deadline` (the `--deadline` flag), else the
/// entry's `deadlineMs`, bounds each request and by default each attempt;
/// `timeoutMs` bounds each attempt; `maxRetries` retries follow the first
/// attempt. Zero durations count as unset.
fn timing(entry: &ProviderEntry, deadline: Option<Duration>) -> Timing {
    let millis = |ms: Option<u64>| ms.filter(|&ms| ms > 0).map(Duration::from_millis);
    let mut timing = Timing::default();
    if let Some(deadline) = deadline.or(millis(entry.deadline_ms)) {
        timing.deadline = deadline;
        timing.timeout = deadline;
    }
    if let Some(timeout) = millis(entry.timeout_ms) {
        timing.timeout = timeout;
    }
    timing.connect_timeout = millis(entry.connect_timeout_ms);
    timing.retry = RetryPolicy {
        max_attempts: entry
            .max_retries
            .map_or(timing.retry.max_attempts, |r| r.saturating_add(1)),
        ..timing.retry
    };
    timing
}

/// Resolves the provider and builds it on the shared client (or on its own
/// client when the entry sets `connectTimeoutMs`).
pub fn resolve_provider(
    flags: &ProviderFlags,
    settings: &ProviderSettings<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Provider, ProviderError> {
    let config = resolve_config(flags, settings, env)?;
    let client = match config.timing.connect_timeout {
        Some(timeout) => build_client(timeout),
        None => shared_client(),
    }
    .map_err(ProviderError::Client)?;
    Ok(Provider::new(config, client))
}

fn select(
    flags: &ProviderFlags,
    settings: &ProviderSettings<'_>,
    known: &[String],
) -> Result<(String, ProviderEntry), ProviderError> {
    let kind_entry = |kind: ProviderKind| ProviderEntry {
        kind: Some(kind),
        ..ProviderEntry::default()
    };
    match &flags.provider {
        Some(name) => {
            if let Some(entry) = settings.entries.get(name) {
                Ok((name.clone(), entry.clone()))
            } else if let Some(kind) = ProviderKind::parse(name) {
                Ok((name.clone(), kind_entry(kind)))
            } else {
                Err(ProviderError::UnknownProvider {
                    name: name.clone(),
                    known: known.to_vec(),
                })
            }
        }
        None => match settings.entries.iter().next() {
            Some((name, entry)) if settings.entries.len() == 1 => Ok((name.clone(), entry.clone())),
            _ if flags.base_url.is_some() => {
                let kind = ProviderKind::OpenaiCompatible;
                Ok((kind.as_str().to_owned(), kind_entry(kind)))
            }
            _ => Err(ProviderError::NoProviderSelected {
                known: known.to_vec(),
            }),
        },
    }
}

fn check_url(name: &str, url: &str) -> Result<(), ProviderError> {
    let invalid = |reason: String| ProviderError::InvalidUrl {
        name: name.to_owned(),
        url: url.to_owned(),
        reason,
    };
    let parsed = reqwest::Url::parse(url).map_err(|e| invalid(e.to_string()))?;
    if matches!(parsed.scheme(), "http" | "https") {
        Ok(())
    } else {
        Err(invalid(format!(
            "scheme `{}` is not http or https",
            parsed.scheme()
        )))
    }
}

fn api_key(
    name: &str,
    kind: ProviderKind,
    entry: &ProviderEntry,
    base_url: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ApiKey>, ProviderError> {
    if let Some(variable) = &entry.api_key_env {
        let key = env(variable).ok_or_else(|| ProviderError::MissingKeyVariable {
            name: name.to_owned(),
            variable: variable.clone(),
        })?;
        return checked_key(variable, key).map(Some);
    }
    // A vendor's key (OPENAI_API_KEY, ANTHROPIC_API_KEY) goes only to that
    // vendor's own endpoint, so pointing --base-url at another server never
    // hands it the key; musepi's own MUSEPI_API_KEY goes wherever it is asked.
    let official = kind
        .default_base_url()
        .is_some_and(|default| default.trim_end_matches('/') == base_url.trim_end_matches('/'));
    let vendor = kind.default_key_variable();
    let mut variables = Vec::new();
    if official && vendor != "MUSEPI_API_KEY" {
        variables.push(vendor.to_owned());
    }
    variables.push("MUSEPI_API_KEY".to_owned());
    if let Some((variable, key)) = variables.iter().find_map(|v| env(v).map(|k| (v, k))) {
        return checked_key(variable, key).map(Some);
    }
    if official {
        Err(ProviderError::MissingApiKey {
            name: name.to_owned(),
            variables,
        })
    } else {
        Ok(None)
    }
}

/// The key, when every character can go in an HTTP header as is: visible
/// ASCII, no spaces, tabs, line breaks or other control characters.
fn checked_key(variable: &str, key: String) -> Result<ApiKey, ProviderError> {
    match key.chars().position(|c| !c.is_ascii_graphic()) {
        None => Ok(ApiKey::new(key)),
        Some(index) => {
            let c = key.chars().nth(index).unwrap_or_default();
            let what = match c {
                '\r' | '\n' => "a line break",
                '\t' => "a tab",
                ' ' => "a space",
                c if c.is_control() => "a control character",
                _ => "a character that is not ASCII",
            };
            Err(ProviderError::InvalidKey {
                variable: variable.to_owned(),
                what,
                position: index + 1,
            })
        }
    }
}
