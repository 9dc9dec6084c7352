//! The async seam between the pipelines and whatever model writes summaries.
//!
//! The lower crates produce a plain-data [`SummaryRequest`]; a
//! [`Summarizer`] sends it and returns a [`SummaryResponse`]. The `musepi`
//! binary implements it with its HTTP providers; an agent embedding the
//! pipelines implements it over its own client. The trait is object safe,
//! so pipelines take `&dyn Summarizer`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use musepi_context_builder::{SummaryRequest, SummaryResponse};
use tokio_util::sync::CancellationToken;

/// The future a [`Summarizer`] returns.
pub type SummarizeFuture<'a> =
    Pin<Box<dyn Future<Output = Result<SummaryResponse, SummarizeError>> + Send + 'a>>;

/// Something that turns a summary request into text, usually by calling a model.
///
/// Implementations retry transient failures themselves and resolve promptly
/// with [`SummarizeError::Cancelled`] once `cancel` fires.
pub trait Summarizer: Send + Sync {
    /// Sends `request` and returns the model's answer.
    fn summarize<'a>(
        &'a self,
        request: &'a SummaryRequest,
        cancel: CancellationToken,
    ) -> SummarizeFuture<'a>;

    /// A short description for messages, e.g. `anthropic claude-sonnet-4-5 at https://api.anthropic.com`.
    ///
    /// It never contains a secret.
    fn describe(&self) -> String;

    /// The summarizing model's context window, when known: a history too
    /// large for it is summarized in windows (docs/design.md, "Summaries").
    fn context_window(&self) -> Option<u64> {
        None
    }

    /// A progress hint: the pipeline expects to send `more` requests
    /// besides those it announced before (a compaction announces its
    /// history windows, turn prefix and short summary before the first,
    /// and the windows an overflow rejection adds when it happens). The
    /// default ignores it; a caller that shows "request k of N" counts it.
    fn expect_requests(&self, more: usize) {
        let _ = more;
    }
}

/// A reference or a smart pointer to a summarizer is one too.
macro_rules! forward_summarizer {
    ($($ptr:ty),*) => {$(
        impl<S: Summarizer + ?Sized> Summarizer for $ptr {
            fn summarize<'a>(
                &'a self,
                request: &'a SummaryRequest,
                cancel: CancellationToken,
            ) -> SummarizeFuture<'a> {
                (**self).summarize(request, cancel)
            }

            fn describe(&self) -> String {
                (**self).describe()
            }

            fn context_window(&self) -> Option<u64> {
                (**self).context_window()
            }

            fn expect_requests(&self, more: usize) {
                (**self).expect_requests(more);
            }
        }
    )*};
}

forward_summarizer!(&S, Box<S>, Arc<S>);

/// Why a summary could not be produced.
///
/// `provider` is the name the summarizer goes by (a settings entry name or a
/// provider kind); `message` is the provider's own words, never a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SummarizeError {
    /// The cancellation token fired before the answer arrived.
    #[error("summary request cancelled")]
    Cancelled,

    /// The provider answered with an error.
    #[error("{provider} request failed{}: {message}", StatusSuffix(*status))]
    Provider {
        /// The summarizer's name.
        provider: String,
        /// The HTTP status, when there was one.
        status: Option<u16>,
        /// The provider's message (`error.message` of its body, or a prefix of the body).
        message: String,
    },

    /// The provider rejected the summarizer input as larger than the model's
    /// context; the caller may re-plan with smaller windows (docs/design.md, "Summaries").
    /// Never retried.
    #[error(
        "{provider} rejected the summarizer input as too long for the model{}: {message}",
        StatusSuffix(*status)
    )]
    ContextOverflow {
        /// The summarizer's name.
        provider: String,
        /// The HTTP status, when there was one.
        status: Option<u16>,
        /// The provider's message.
        message: String,
    },

    /// The provider answered successfully but with no text.
    #[error("{provider} returned an empty summary")]
    EmptyResponse {
        /// The summarizer's name.
        provider: String,
    },

    /// The model declined to write the summary.
    #[error("{provider} refused to summarize (reason {reason}){}", MessageSuffix(message.as_deref()))]
    Refusal {
        /// The summarizer's name.
        provider: String,
        /// The stop or finish reason (`refusal`, `content_filter`).
        reason: String,
        /// The refusal text, when the model gave one.
        message: Option<String>,
    },

    /// The answer could not be understood (not JSON, or not the expected shape).
    #[error(
        "{provider} sent an unreadable response (HTTP {status}): {detail}; body starts with {body_prefix:?}"
    )]
    MalformedResponse {
        /// The summarizer's name.
        provider: String,
        /// The HTTP status of the answer.
        status: u16,
        /// What was wrong.
        detail: String,
        /// The first characters of the body.
        body_prefix: String,
    },

    /// The connection failed or timed out, on every attempt.
    #[error("{provider} could not be reached after {attempts} attempt{}: {message}", if *attempts == 1 { "" } else { "s" })]
    Transport {
        /// The summarizer's name.
        provider: String,
        /// How many attempts were made.
        attempts: u32,
        /// Whether the last attempt timed out (as opposed to a refused or dropped connection).
        timed_out: bool,
        /// What the HTTP client reported.
        message: String,
    },

    /// No answer came within the request's deadline, which covers every
    /// attempt and the waits between them.
    #[error("{provider} gave no answer within the {} deadline ({attempts} attempt{})", Millis(*deadline_ms), if *attempts == 1 { "" } else { "s" })]
    Deadline {
        /// The summarizer's name.
        provider: String,
        /// The deadline, in milliseconds.
        deadline_ms: u64,
        /// How many attempts were started.
        attempts: u32,
    },

    /// The answer was larger than a summarizer reads; it was not read to
    /// the end.
    #[error("{provider} sent an answer larger than {limit} bytes; it was not read to the end")]
    TooLarge {
        /// The summarizer's name.
        provider: String,
        /// The most bytes read.
        limit: u64,
    },

    /// The summary is far longer than the output limit it was asked for allows.
    #[error(
        "{provider} sent a {bytes}-byte summary for an output limit of {max_tokens} tokens (at most {} bytes); it was not used",
        u64::from(*max_tokens) * crate::summarizer::MAX_BYTES_PER_TOKEN
    )]
    SummaryTooLong {
        /// The summarizer's name.
        provider: String,
        /// The summary's size in bytes.
        bytes: u64,
        /// The output limit that was sent.
        max_tokens: u32,
    },

    /// The server answered with a redirect to another origin, which is not
    /// followed: the conversation and the key go only to the configured URL.
    #[error(
        "{provider} answered with a redirect to {location}, another origin; it was not followed, so the request went only to the configured URL"
    )]
    Redirected {
        /// The summarizer's name.
        provider: String,
        /// Where the redirect pointed (without user info or query).
        location: String,
    },

    /// A remote compaction call (docs/design.md, "Remote summaries") failed
    /// with one of pi's messages, e.g. `Remote compaction failed (502 Bad Gateway)`.
    #[error("{failure}{}", MessageSuffix(message.as_deref()))]
    Remote {
        /// Which of these failures.
        failure: RemoteFailure,
        /// The endpoint's own message, when it gave one.
        message: Option<String>,
    },
}

impl SummarizeError {
    /// Whether the token fired.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, Self::Cancelled)
    }

    /// Whether the input was too large for the summarizing model (docs/design.md, "Summaries").
    pub fn is_context_overflow(&self) -> bool {
        matches!(self, Self::ContextOverflow { .. })
    }

    /// The HTTP status, when the error came with one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Provider { status, .. } | Self::ContextOverflow { status, .. } => *status,
            Self::MalformedResponse { status, .. }
            | Self::Remote {
                failure: RemoteFailure::Status { status, .. },
                ..
            } => Some(*status),
            _ => None,
        }
    }
}

/// The failures of the remote summary modes, with the messages pi gives them (docs/design.md, "Remote summaries").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteFailure {
    /// A non-2xx answer.
    #[error("Remote compaction failed ({status} {status_text})")]
    Status {
        /// The HTTP status.
        status: u16,
        /// Its reason phrase, e.g. `Bad Gateway`.
        status_text: String,
    },
    /// The custom endpoint's answer has no string `summary` (docs/design.md, "Remote summaries").
    #[error("Remote compaction response missing summary")]
    MissingSummary,
    /// The OpenAI-compatible endpoint's answer has no text (docs/design.md, "Remote summaries").
    #[error("Remote compaction response missing choices[0].message.content")]
    MissingContent,
    /// The native `/responses/compact` answer has no compaction item (docs/design.md, "Remote summaries").
    #[error("Remote compaction response missing compaction item")]
    MissingCompactionItem,
}

/// Renders ` (HTTP 429)` or nothing.
struct StatusSuffix(Option<u16>);

impl fmt::Display for StatusSuffix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(status) => write!(f, " (HTTP {status})"),
            None => Ok(()),
        }
    }
}

/// The warning for an answer that stopped at its output limit: it is used
/// as written, and says so.
pub fn truncation_warning(
    purpose: musepi_context_builder::RequestPurpose,
    summarizer: &dyn Summarizer,
) -> String {
    format!(
        "the {} answer of {} stopped at its output limit, so it may end mid-sentence; it is used as written (a larger output limit gives a complete one)",
        purpose.name(),
        summarizer.describe()
    )
}

/// The most bytes a summary may have per token of its output limit: four
/// times what the densest text takes, so only a runaway answer reaches it.
pub const MAX_BYTES_PER_TOKEN: u64 = 16;

/// Renders a duration in milliseconds as `120 s` or `300 ms`.
struct Millis(u64);

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_multiple_of(1000) {
            write!(f, "{} s", self.0 / 1000)
        } else {
            write!(f, "{} ms", self.0)
        }
    }
}

/// Renders `: message` or nothing.
struct MessageSuffix<'a>(Option<&'a str>);

impl fmt::Display for MessageSuffix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(m) if !m.is_empty() => write!(f, ": {m}"),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use musepi_context_builder::RequestPurpose;

    /// Answers with the prompt, or [`SummarizeError::Cancelled`] once cancelled.
    fn echo() -> impl Summarizer {
        crate::FromFn::summarizer("echo", (), async |(), request, cancel| {
            if cancel.is_cancelled() {
                return Err(SummarizeError::Cancelled);
            }
            Ok(SummaryResponse {
                text: request.prompt_text(),
                usage: None,
                truncated: false,
            })
        })
    }

    #[tokio::test]
    async fn trait_objects_and_wrappers_delegate() {
        let request = SummaryRequest::single(RequestPurpose::History, "sys", "hello", None, None);
        let boxed: Box<dyn Summarizer> = Box::new(echo());
        let shared: Arc<dyn Summarizer> = Arc::new(echo());
        let by_ref: &dyn Summarizer = &boxed;
        let text = by_ref
            .summarize(&request, CancellationToken::new())
            .await
            .map(|r| r.text);
        assert_eq!(text, Ok("hello".to_owned()));
        assert_eq!(shared.describe(), "echo");

        let cancel = CancellationToken::new();
        cancel.cancel();
        assert_eq!(
            shared.summarize(&request, cancel).await,
            Err(SummarizeError::Cancelled)
        );
    }

    #[test]
    fn messages_name_provider_status_and_message() {
        let cases = [
            (SummarizeError::Cancelled, "summary request cancelled"),
            (
                SummarizeError::Provider {
                    provider: "anthropic".into(),
                    status: Some(401),
                    message: "invalid x-api-key".into(),
                },
                "anthropic request failed (HTTP 401): invalid x-api-key",
            ),
            (
                SummarizeError::ContextOverflow {
                    provider: "vllm".into(),
                    status: Some(400),
                    message: "maximum context length is 4096 tokens".into(),
                },
                "vllm rejected the summarizer input as too long for the model (HTTP 400): maximum context length is 4096 tokens",
            ),
            (
                SummarizeError::EmptyResponse {
                    provider: "openai".into(),
                },
                "openai returned an empty summary",
            ),
            (
                SummarizeError::Refusal {
                    provider: "openai".into(),
                    reason: "content_filter".into(),
                    message: None,
                },
                "openai refused to summarize (reason content_filter)",
            ),
            (
                SummarizeError::Transport {
                    provider: "local".into(),
                    attempts: 3,
                    timed_out: true,
                    message: "operation timed out".into(),
                },
                "local could not be reached after 3 attempts: operation timed out",
            ),
            (
                SummarizeError::Remote {
                    failure: RemoteFailure::Status {
                        status: 502,
                        status_text: "Bad Gateway".into(),
                    },
                    message: Some("upstream down".into()),
                },
                "Remote compaction failed (502 Bad Gateway): upstream down",
            ),
            (
                SummarizeError::Remote {
                    failure: RemoteFailure::MissingCompactionItem,
                    message: None,
                },
                "Remote compaction response missing compaction item",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(error.to_string(), expected);
        }
    }
}
