//! [`ProviderConfig`]: everything a provider needs, built from a kind and a
//! URL with `with_` methods and read back through its accessors, so that a
//! setting added or stored differently breaks no caller.

use serde_json::{Map, Value};

use super::http::{Http, display_url};
use super::{ApiKey, DeveloperRole, ProviderKind, Timing};

/// Everything a provider needs, resolved from flags, settings and environment.
///
/// ```
/// use musepi_providers::{ProviderConfig, ProviderKind};
///
/// let config = ProviderConfig::new(ProviderKind::Anthropic, "https://api.anthropic.com")
///     .with_model("claude-sonnet-4-5")
///     .with_max_tokens(8192);
/// assert_eq!(config.model(), Some("claude-sonnet-4-5"));
/// assert_eq!(config.max_tokens_for(Some(20_000)), Some(8192));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    /// The name used in messages: the settings entry's name, or the kind.
    pub(crate) name: String,
    /// The protocol.
    pub(crate) kind: ProviderKind,
    /// The base URL (for `remote-endpoint`, the endpoint itself).
    pub(crate) base_url: String,
    /// The model id sent on the wire.
    pub(crate) model: Option<String>,
    /// The key, when one was found.
    pub(crate) api_key: Option<ApiKey>,
    /// The model's output limit: requests ask for at most this many tokens,
    /// and a request without a limit asks for this.
    pub(crate) max_tokens: Option<u32>,
    /// Reasoning effort that replaces the request's; `off` or `none` never sends any.
    pub(crate) reasoning: Option<String>,
    /// The attempt timeout, the deadline, the connect timeout and the retries.
    pub(crate) timing: Timing,
    /// The role of developer messages (chat completions only).
    pub(crate) developer_role: DeveloperRole,
    /// The model's context window, when known (trims native compaction input).
    pub(crate) context_window: Option<u32>,
    /// Whether the model reads images.
    pub(crate) vision: bool,
}

impl ProviderConfig {
    /// A configuration with defaults: named after its kind, no model, no key,
    /// a 120 s deadline per request and the default retry policy.
    pub fn new(kind: ProviderKind, base_url: impl Into<String>) -> Self {
        Self {
            name: kind.as_str().to_owned(),
            kind,
            base_url: base_url.into(),
            model: None,
            api_key: None,
            max_tokens: None,
            reasoning: None,
            timing: Timing::default(),
            developer_role: DeveloperRole::default(),
            context_window: None,
            vision: false,
        }
    }

    /// Named `name` in messages (the default is the kind).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sends `model` as the model id.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Authenticates with `key`.
    #[must_use]
    pub fn with_api_key(mut self, key: ApiKey) -> Self {
        self.api_key = Some(key);
        self
    }

    /// The model's output limit: requests ask for at most `max_tokens`.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sends reasoning effort `effort` instead of the request's (`off` or
    /// `none` for none).
    #[must_use]
    pub fn with_reasoning(mut self, effort: impl Into<String>) -> Self {
        self.reasoning = Some(effort.into());
        self
    }

    /// Times and retries requests by `timing`.
    #[must_use]
    pub fn with_timing(mut self, timing: Timing) -> Self {
        self.timing = timing;
        self
    }

    /// Sends developer messages with `role` (chat completions only).
    #[must_use]
    pub fn with_developer_role(mut self, role: DeveloperRole) -> Self {
        self.developer_role = role;
        self
    }

    /// The model's context window is `tokens`.
    #[must_use]
    pub fn with_context_window(mut self, tokens: u32) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// Whether the model reads images.
    #[must_use]
    pub fn with_vision(mut self, vision: bool) -> Self {
        self.vision = vision;
        self
    }

    /// The name used in messages: the settings entry's name, or the kind.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The protocol.
    pub fn kind(&self) -> ProviderKind {
        self.kind
    }

    /// The base URL (for `remote-endpoint`, the endpoint itself).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The model id sent on the wire, if any.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// The key, when one was found.
    pub fn api_key(&self) -> Option<&ApiKey> {
        self.api_key.as_ref()
    }

    /// The model's output limit, if known.
    pub fn max_tokens(&self) -> Option<u32> {
        self.max_tokens
    }

    /// The reasoning effort that replaces the request's, if any.
    pub fn reasoning(&self) -> Option<&str> {
        self.reasoning.as_deref()
    }

    /// The attempt timeout, the deadline, the connect timeout and the retries.
    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    /// The role of developer messages (chat completions only).
    pub fn developer_role(&self) -> DeveloperRole {
        self.developer_role
    }

    /// The model's context window, when known.
    pub fn context_window(&self) -> Option<u32> {
        self.context_window
    }

    /// Whether the model reads images.
    pub fn vision(&self) -> bool {
        self.vision
    }

    /// The output limit to send: the request's, clamped to the model's.
    pub fn max_tokens_for(&self, requested: Option<u32>) -> Option<u32> {
        match (requested, self.max_tokens) {
            (Some(r), Some(cap)) => Some(r.min(cap)),
            (r, cap) => r.or(cap),
        }
    }

    /// The reasoning effort to send, if any.
    pub fn reasoning_for(&self, requested: Option<&str>) -> Option<String> {
        let effort = self.reasoning.as_deref().or(requested)?;
        (!matches!(effort, "" | "off" | "none")).then(|| effort.to_owned())
    }

    /// `kind model at url`, without secrets.
    pub fn describe(&self) -> String {
        let model = self.model.as_deref().unwrap_or("(no model)");
        let url = display_url(&self.base_url);
        if self.name == self.kind.as_str() {
            format!("{} {model} at {url}", self.kind)
        } else {
            format!("{} ({} {model} at {url})", self.name, self.kind)
        }
    }

    /// Puts the configured model, when there is one, in `body` as `model`.
    pub(crate) fn insert_model(&self, body: &mut Map<String, Value>) {
        if let Some(model) = &self.model {
            body.insert("model".into(), model.as_str().into());
        }
    }

    /// `{base}{path}` without a doubled slash.
    pub(crate) fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.base_url.trim_end_matches('/'))
    }

    pub(crate) fn http(&self, client: reqwest::Client) -> Http {
        Http {
            client,
            provider: self.name.clone(),
            timing: self.timing.clone(),
            secret: self.api_key.clone(),
            observer: None,
        }
    }
}
