//! What the three chat providers share: their common methods, and sending
//! a body again without the parameters a server rejected.

use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use musepi_hooks::SummarizeError;

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

/// A successful answer and the body that got it.
pub(super) struct Answered {
    pub(super) reply: Reply,
    /// The body sent.
    pub(super) body: Value,
    /// The answer, parsed.
    pub(super) value: Value,
}

/// Posts `body(fallbacks)` to `url`, starting with no fallbacks and sending
/// again while `fall_back` finds a rejected parameter it can do without
/// (it sets the fallback and answers `true`); then the answer of a
/// successful status, or the error of the last reply.
pub(super) async fn post_falling_back(
    http: &Http,
    url: &str,
    headers: impl Fn() -> HeaderMap,
    cancel: &CancellationToken,
    body: impl Fn(Fallbacks) -> Value,
    fall_back: impl Fn(&mut Fallbacks, &Value, &Reply) -> bool,
) -> Result<Answered, SummarizeError> {
    let mut fallbacks = Fallbacks::default();
    loop {
        let sent = body(fallbacks);
        let reply = http.post(url, headers(), &sent, cancel).await?;
        if fall_back(&mut fallbacks, &sent, &reply) {
            continue;
        }
        if !reply.is_success() {
            return Err(http.status_error(&reply));
        }
        let value = http.json(&reply)?;
        return Ok(Answered {
            reply,
            body: sent,
            value,
        });
    }
}

/// `new`, `config` and `request_body` of a provider struct holding
/// `config: ProviderConfig` and `http: Http` with `body(request,
/// fallbacks)` and `complete(request, cancel)`, and its [`Summarizer`]
/// impl (`describe`: the configuration's description).
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
                Box::pin(async move { self.complete(request, &cancel).await })
            }

            fn describe(&self) -> String {
                self.config.describe()
            }
        }
    };
}

pub(super) use chat_provider;
