//! HTTP providers that write summaries: usable by any program that runs
//! the musepi pipelines or its own agent loop.
//!
//! This crate owns the wire protocols and nothing else. Four kinds, each a
//! [`Summarizer`]: [`OpenAiCompatible`] (chat completions), [`Anthropic`]
//! (messages), [`OpenAiResponses`] (responses, plus the native
//! `/responses/compact`, a [`RemoteCompactor`]) and
//! [`RemoteEndpoint`] (a custom summarizer URL). They share one
//! `reqwest::Client` over rustls and ring ([`install_crypto_provider`],
//! [`shared_client`]) that follows redirects only within the origin, retry
//! 429, 5xx, dropped connections and timeouts with backoff
//! ([`RetryPolicy`]) until the request's deadline ([`DEFAULT_DEADLINE`]),
//! (a provider's attempt timeout, deadline, connect timeout and retries
//! are one [`Timing`]),
//! read answers up to [`MAX_RESPONSE_BYTES`], and stop promptly when the
//! cancellation token fires. A summary that stopped at the output limit is
//! marked `truncated`; one far longer than the limit allows is an error.
//! An [`ApiKey`] is never printed.
//!
//! It must not know settings files, terminals or commands: a caller
//! either builds a [`ProviderConfig`] itself and calls [`Provider::new`],
//! or hands [`resolve_provider`] the `--provider`, `--base-url`, `--model`
//! and `--deadline` choices ([`ProviderFlags`]), the named entries of its
//! settings ([`ProviderSettings`], [`ProviderEntry`]) and a way to read the
//! environment.
//!
//! ```no_run
//! use musepi_context_builder::{LlmMessage, RequestPurpose, SummaryRequest};
//! use musepi_hooks::Summarizer;
//! use musepi_providers::{Provider, ProviderConfig, ProviderKind, shared_client};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = ProviderConfig::new(ProviderKind::OpenaiCompatible, "http://127.0.0.1:8080/v1")
//!     .with_model("smollm2");
//! let provider = Provider::new(config, shared_client()?);
//! let request = SummaryRequest {
//!     purpose: RequestPurpose::History,
//!     system_prompt: "You summarize.".to_owned(),
//!     messages: vec![LlmMessage::user_text("Summarize: …")],
//!     max_tokens: Some(1024),
//!     reasoning: None,
//! };
//! let answer = provider.summarize(&request, Default::default()).await?;
//! println!("{}", answer.text);
//! # Ok(()) }
//! ```

mod anthropic;
mod client;
mod config;
mod http;
mod openai;
mod remote;
mod resolve;
mod responses;
mod retry;
mod wire;

use std::fmt;
use std::time::Duration;

use musepi_context_builder::{SummaryRequest, SummaryResponse};
use musepi_hooks::{
    MAX_BYTES_PER_TOKEN, RemoteCompactor, SummarizeError, SummarizeFuture, Summarizer,
};
use musepi_session_model::{ContentBlock, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use anthropic::{ANTHROPIC_DEFAULT_MAX_TOKENS, ANTHROPIC_VERSION, Anthropic};
pub use client::{DEFAULT_CONNECT_TIMEOUT, build_client, install_crypto_provider, shared_client};
pub use config::ProviderConfig;
pub use http::MAX_RESPONSE_BYTES;
pub use openai::OpenAiCompatible;
pub use remote::{RemoteEndpoint, RemoteSummary};
pub use resolve::{
    ProviderEntry, ProviderError, ProviderFlags, ProviderSettings, process_env, resolve_config,
    resolve_provider,
};
pub use responses::{
    CompactionItem, NativeCompaction, NativeCompactionRequest, OpenAiRemoteCompaction,
    OpenAiResponses,
};
pub use retry::{RetryNotice, RetryObserver, RetryPolicy, Timing};

/// The default deadline of one request: every attempt and every wait
/// between attempts end by then.
pub const DEFAULT_DEADLINE: Duration = Duration::from_mins(2);

/// The default timeout of one attempt: the whole deadline.
pub const DEFAULT_TIMEOUT: Duration = DEFAULT_DEADLINE;

/// The wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    /// `POST {base}/chat/completions` (`OpenAI`, `OpenRouter`, `vLLM`, llama.cpp, `Ollama`).
    OpenaiCompatible,
    /// `POST {base}/v1/messages`.
    Anthropic,
    /// `POST {base}/responses`, and `{base}/responses/compact`.
    OpenaiResponses,
    /// `POST` to the configured URL itself (docs/design.md, "Remote summaries").
    RemoteEndpoint,
}

impl ProviderKind {
    /// Every kind, in the order the docs list them.
    pub const ALL: [Self; 4] = [
        Self::OpenaiCompatible,
        Self::OpenaiResponses,
        Self::Anthropic,
        Self::RemoteEndpoint,
    ];

    /// Parses a kind name such as `openai-compatible`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The kind's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenaiCompatible => "openai-compatible",
            Self::Anthropic => "anthropic",
            Self::OpenaiResponses => "openai-responses",
            Self::RemoteEndpoint => "remote-endpoint",
        }
    }

    /// The official base URL, when the kind has one.
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Self::OpenaiCompatible | Self::OpenaiResponses => Some("https://api.openai.com/v1"),
            Self::Anthropic => Some("https://api.anthropic.com"),
            Self::RemoteEndpoint => None,
        }
    }

    /// The environment variable read for the key when the settings name none.
    pub fn default_key_variable(self) -> &'static str {
        match self {
            Self::OpenaiCompatible | Self::OpenaiResponses => "OPENAI_API_KEY",
            Self::Anthropic => "ANTHROPIC_API_KEY",
            Self::RemoteEndpoint => "MUSEPI_API_KEY",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An API key. It is never printed: `Debug` shows `ApiKey(<redacted>)`
/// and it has no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key read from the environment.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key, for a request header.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// The role `developer` messages are sent as by chat-completions servers
/// (docs/design.md, "What the model sees": a server without a developer role gets them as user messages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeveloperRole {
    /// `developer`, as `OpenAI` names it.
    #[default]
    Developer,
    /// `system`.
    System,
    /// `user`.
    User,
}

impl DeveloperRole {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Developer => "developer",
            Self::System => "system",
            Self::User => "user",
        }
    }
}

/// A ready provider of any kind.
pub enum Provider {
    /// Chat completions.
    OpenAiCompatible(OpenAiCompatible),
    /// Anthropic messages.
    Anthropic(Anthropic),
    /// `OpenAI` responses.
    OpenAiResponses(OpenAiResponses),
    /// The custom remote endpoint.
    RemoteEndpoint(RemoteEndpoint),
}

impl Provider {
    /// Builds the provider `config.kind` names, sending through `client`.
    pub fn new(config: ProviderConfig, client: reqwest::Client) -> Self {
        match config.kind {
            ProviderKind::OpenaiCompatible => {
                Self::OpenAiCompatible(OpenAiCompatible::new(config, client))
            }
            ProviderKind::Anthropic => Self::Anthropic(Anthropic::new(config, client)),
            ProviderKind::OpenaiResponses => {
                Self::OpenAiResponses(OpenAiResponses::new(config, client))
            }
            ProviderKind::RemoteEndpoint => {
                Self::RemoteEndpoint(RemoteEndpoint::new(config, client))
            }
        }
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &ProviderConfig {
        match self {
            Self::OpenAiCompatible(p) => p.config(),
            Self::Anthropic(p) => p.config(),
            Self::OpenAiResponses(p) => p.config(),
            Self::RemoteEndpoint(p) => p.config(),
        }
    }

    /// Calls `observer` before every retry (for progress output).
    #[must_use]
    pub fn with_retry_observer(mut self, observer: RetryObserver) -> Self {
        let http = match &mut self {
            Self::OpenAiCompatible(p) => &mut p.http,
            Self::Anthropic(p) => &mut p.http,
            Self::OpenAiResponses(p) => &mut p.http,
            Self::RemoteEndpoint(p) => &mut p.http,
        };
        http.observer = Some(observer);
        self
    }

    /// The responses provider, for native compaction.
    pub fn as_responses(&self) -> Option<&OpenAiResponses> {
        match self {
            Self::OpenAiResponses(p) => Some(p),
            _ => None,
        }
    }

    /// The native compactor of a responses provider (`--strategy remote`).
    pub fn remote_compactor(&self) -> Option<&dyn RemoteCompactor> {
        self.as_responses().map(|r| r as &dyn RemoteCompactor)
    }

    /// The remote endpoint, for summaries with a short summary.
    pub fn as_remote(&self) -> Option<&RemoteEndpoint> {
        match self {
            Self::RemoteEndpoint(p) => Some(p),
            _ => None,
        }
    }

    fn summarizer(&self) -> &dyn Summarizer {
        match self {
            Self::OpenAiCompatible(p) => p,
            Self::Anthropic(p) => p,
            Self::OpenAiResponses(p) => p,
            Self::RemoteEndpoint(p) => p,
        }
    }
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Provider").field(self.config()).finish()
    }
}

impl Summarizer for Provider {
    fn summarize<'a>(
        &'a self,
        request: &'a SummaryRequest,
        cancel: CancellationToken,
    ) -> SummarizeFuture<'a> {
        self.summarizer().summarize(request, cancel)
    }

    fn describe(&self) -> String {
        self.config().describe()
    }

    fn context_window(&self) -> Option<u64> {
        self.config().context_window.map(u64::from)
    }
}

/// The text blocks of `blocks`, joined with `"\n"`.
fn joined_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A `data:` URL for an image block.
fn data_url(mime_type: &str, data: &str) -> String {
    format!("data:{mime_type};base64,{data}")
}

/// Whether a summary text is empty.
fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// The output limit a request body asked for, under any of `keys`.
fn sent_limit(body: &Value, keys: &[&str]) -> Option<u32> {
    keys.iter()
        .find_map(|k| body.get(*k).and_then(Value::as_u64))
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// A provider's summary: an error when it is blank, or far longer than the
/// output limit that was sent allows ([`MAX_BYTES_PER_TOKEN`] bytes a
/// token), which only a runaway answer is.
fn summary_response(
    provider: &str,
    text: String,
    limit: Option<u32>,
    truncated: bool,
    usage: Option<Usage>,
) -> Result<SummaryResponse, SummarizeError> {
    if is_blank(&text) {
        return Err(SummarizeError::EmptyResponse {
            provider: provider.to_owned(),
        });
    }
    if let Some(max_tokens) = limit
        && text.len() as u64 > u64::from(max_tokens).saturating_mul(MAX_BYTES_PER_TOKEN)
    {
        return Err(SummarizeError::SummaryTooLong {
            provider: provider.to_owned(),
            bytes: text.len() as u64,
            max_tokens,
        });
    }
    Ok(SummaryResponse {
        text,
        usage,
        truncated,
    })
}
