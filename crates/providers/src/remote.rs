//! The `remote-endpoint` provider: the custom summarizer URL (docs/design.md, "Remote summaries").
//!
//! A URL whose path ends in `/chat/completions` gets an OpenAI-compatible
//! body; any other gets `{systemPrompt, prompt, maxTokens}` and answers
//! `{summary, shortSummary?}`.

use futures_util::TryFutureExt;
use musepi_context_builder::{SummaryRequest, SummaryResponse};
use musepi_hooks::{RemoteFailure, SummarizeError, SummarizeFuture, Summarizer};
use musepi_session_model::Usage;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::http::{Http, Reply};
use super::openai::ChatAnswer;
use super::{ProviderConfig, sent_limit, summary_response};

/// A custom summarizer endpoint.
pub struct RemoteEndpoint {
    config: ProviderConfig,
    pub(super) http: Http,
}

/// What the endpoint answered.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RemoteSummary {
    /// The summary.
    pub text: String,
    /// The one-line summary, when the custom endpoint sent `shortSummary`.
    pub short_summary: Option<String>,
    /// Usage, when an OpenAI-compatible endpoint reported it.
    pub usage: Option<Usage>,
    /// Whether an OpenAI-compatible endpoint stopped at the output limit.
    pub truncated: bool,
}

impl From<RemoteSummary> for SummaryResponse {
    fn from(summary: RemoteSummary) -> Self {
        Self {
            text: summary.text,
            usage: summary.usage,
            truncated: summary.truncated,
        }
    }
}

impl RemoteEndpoint {
    /// A provider posting to `config.base_url`.
    pub fn new(config: ProviderConfig, client: reqwest::Client) -> Self {
        let http = config.http(client);
        Self { config, http }
    }

    /// Its configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// Whether the URL's path ends in `/chat/completions` (optionally with a slash).
    pub fn is_chat_completions(&self) -> bool {
        let path = reqwest::Url::parse(&self.config.base_url)
            .map(|u| u.path().to_owned())
            .unwrap_or_default();
        path.strip_suffix('/')
            .unwrap_or(&path)
            .ends_with("/chat/completions")
    }

    /// The JSON body sent for `request`.
    pub fn request_body(&self, request: &SummaryRequest) -> Value {
        let max_tokens = self.config.max_tokens_for(request.max_tokens);
        let mut body = Map::new();
        if self.is_chat_completions() {
            self.config.insert_model(&mut body);
            body.insert(
                "messages".into(),
                json!([
                    {"role": "system", "content": request.system_prompt},
                    {"role": "user", "content": request.prompt_text()},
                ]),
            );
            body.insert("stream".into(), false.into());
            if let Some(max) = max_tokens {
                body.insert("max_tokens".into(), max.into());
            }
        } else {
            body.insert("systemPrompt".into(), request.system_prompt.as_str().into());
            body.insert("prompt".into(), request.prompt_text().into());
            if let Some(max) = max_tokens {
                body.insert("maxTokens".into(), max.into());
            }
        }
        Value::Object(body)
    }

    /// Sends `request` and returns the summary with the custom endpoint's
    /// `shortSummary`, when it sent one.
    pub async fn summarize_remote(
        &self,
        request: &SummaryRequest,
        cancel: CancellationToken,
    ) -> Result<RemoteSummary, SummarizeError> {
        let body = self.request_body(request);
        let reply = self
            .http
            .post(
                &self.config.base_url,
                self.http.bearer_headers(),
                &body,
                &cancel,
            )
            .await?;
        if !reply.is_success() {
            return Err(self.http.remote_status_error(&reply));
        }
        let value = self.http.json(&reply)?;
        let limit = sent_limit(&body, &["max_tokens", "maxTokens"]);
        if self.is_chat_completions() {
            self.read_chat(&reply, &value, limit)
        } else {
            self.read_custom(&value, limit)
        }
    }

    fn read_chat(
        &self,
        reply: &Reply,
        value: &Value,
        limit: Option<u32>,
    ) -> Result<RemoteSummary, SummarizeError> {
        let missing = SummarizeError::Remote {
            failure: RemoteFailure::MissingContent,
            message: None,
        };
        let Some(answer) = ChatAnswer::read(value) else {
            return Err(missing);
        };
        if let Some(e) = answer.failure(&self.config.name, reply, &self.http) {
            return Err(e);
        }
        if answer.text.trim().is_empty() {
            return Err(missing);
        }
        let truncated = answer.is_truncated();
        let summary = summary_response(
            &self.config.name,
            answer.text,
            limit,
            truncated,
            answer.usage,
        )?;
        Ok(RemoteSummary {
            text: summary.text,
            short_summary: None,
            usage: summary.usage,
            truncated: summary.truncated,
        })
    }

    fn read_custom(
        &self,
        value: &Value,
        limit: Option<u32>,
    ) -> Result<RemoteSummary, SummarizeError> {
        let Some(summary) = value.get("summary").and_then(Value::as_str) else {
            return Err(SummarizeError::Remote {
                failure: RemoteFailure::MissingSummary,
                message: None,
            });
        };
        let summary = summary_response(&self.config.name, summary.to_owned(), limit, false, None)?;
        Ok(RemoteSummary {
            text: summary.text,
            truncated: false,
            short_summary: value
                .get("shortSummary")
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .map(str::to_owned),
            usage: None,
        })
    }
}

impl Summarizer for RemoteEndpoint {
    fn summarize<'a>(
        &'a self,
        request: &'a SummaryRequest,
        cancel: CancellationToken,
    ) -> SummarizeFuture<'a> {
        Box::pin(
            self.summarize_remote(request, cancel)
                .map_ok(SummaryResponse::from),
        )
    }

    fn describe(&self) -> String {
        self.config.describe()
    }
}
