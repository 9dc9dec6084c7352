//! What the three chat providers share: their common methods, and sending
//! a body again without the parameters a server rejected.

use musepi_context_builder::{SummaryRequest, SummaryResponse};
use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use musepi_hooks::SummarizeError;

use super::ProviderConfig;
use super::http::{Http, Reply};

/// Parameters left out or renamed after a server rejected them with a 400,
/// so one request shape works across models that differ in what they accept.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Fallbacks {
    /// Send no reasoning or thinking parameter.
    pub(super) no_reasoning: bool,
    /// Send `max_completion_tokens` instead of `max_tokens` (newer `OpenAI` models).
    pub(super) max_completion_tokens: bool,
}

impl Fallbacks {
    /// Sends no reasoning from now on when `body` sent it under `key` and
    /// `reply` rejected `parameter`; whether it did.
    pub(super) fn drop_reasoning(
        &mut self,
        http: &Http,
        reply: &Reply,
        body: &Value,
        key: &str,
        parameter: &str,
    ) -> bool {
        let rejected = body.get(key).is_some() && http.rejects(reply, parameter);
        self.no_reasoning |= rejected;
        rejected
    }
}

/// A successful answer and the body that got it.
pub(super) struct Answered {
    pub(super) reply: Reply,
    /// The body sent.
    pub(super) body: Value,
    /// The answer, parsed.
    pub(super) value: Value,
}

/// What a chat provider adds to the exchange [`summarize`] runs:
/// where the request goes, its headers and body, which rejected
/// parameters it can do without, and how it reads a successful answer.
pub(super) trait ChatWire {
    /// The path below the base URL the request is posted to.
    const PATH: &'static str;

    /// The headers of each attempt (by default a bearer key, when there is one).
    fn headers(&self, http: &Http) -> HeaderMap {
        http.bearer_headers()
    }

    /// The body for `request` without the parameters of `fallbacks`.
    fn body(&self, request: &SummaryRequest, fallbacks: Fallbacks) -> Value;

    /// Whether `reply` rejected a parameter of `body` it can do without:
    /// then it sets that fallback and answers `true`.
    fn fall_back(&self, fallbacks: &mut Fallbacks, body: &Value, reply: &Reply) -> bool;

    /// The summary a successful answer gives, or why it gives none.
    fn read(&self, answered: Answered) -> Result<SummaryResponse, SummarizeError>;
}

/// Posts `wire`'s body for `request` to its path below the base URL,
/// starting with no fallbacks and sending again while the wire finds a
/// rejected parameter it can do without; then the wire's reading of a
/// successful answer, or the error of the last reply.
pub(super) async fn summarize<W: ChatWire + Sync>(
    wire: &W,
    config: &ProviderConfig,
    http: &Http,
    request: &SummaryRequest,
    cancel: CancellationToken,
) -> Result<SummaryResponse, SummarizeError> {
    let url = config.endpoint(W::PATH);
    let mut fallbacks = Fallbacks::default();
    loop {
        let sent = wire.body(request, fallbacks);
        let reply = http.post(&url, wire.headers(http), &sent, &cancel).await?;
        if wire.fall_back(&mut fallbacks, &sent, &reply) {
            continue;
        }
        if !reply.is_success() {
            return Err(http.status_error(&reply));
        }
        let value = http.json(&reply)?;
        return wire.read(Answered {
            reply,
            body: sent,
            value,
        });
    }
}

/// `new`, `config` and `request_body` of a provider struct holding
/// `config: ProviderConfig` and `http: Http` that implements [`ChatWire`],
/// and its [`Summarizer`] impl: [`summarize`] through the wire
/// (`describe`: the configuration's description).
///
/// [`Summarizer`]: musepi_hooks::Summarizer
macro_rules! chat_provider {
    ($ty:ident, $(#[$body_doc:meta])*) => {
        impl $ty {
            /// A provider sending through `client`.
            pub fn new(config: ProviderConfig, client: reqwest::Client) -> Self {
                let http = config.http(client);
                Self { config, http }
            }

            /// Its configuration.
            pub fn config(&self) -> &ProviderConfig {
                &self.config
            }

            /// The JSON body sent for `request`.
            $(#[$body_doc])*
            pub fn request_body(&self, request: &SummaryRequest) -> Value {
                self.body(request, Fallbacks::default())
            }
        }

        impl Summarizer for $ty {
            fn summarize<'a>(
                &'a self,
                request: &'a SummaryRequest,
                cancel: CancellationToken,
            ) -> SummarizeFuture<'a> {
                Box::pin(summarize(self, &self.config, &self.http, request, cancel))
            }

            fn describe(&self) -> String {
                self.config.describe()
            }
        }
    };
}

pub(super) use chat_provider;
