//! "request k of N" on the progress line while summary requests run: a
//! [`Summarizer`] that passes every request on and counts it, with the
//! tokens sent and received, for the spinner of `compact` (and of any
//! command that sends several requests).

use std::sync::{Arc, Mutex, PoisonError};

use musepi_runtime::context::{RequestPurpose, SummaryRequest, chars_to_tokens};
use musepi_runtime::hooks::{SummarizeFuture, Summarizer};
use musepi_session_model::ContentBlock;
use musepi_session_model::json::utf16_len;
use tokio_util::sync::CancellationToken;

use crate::commands::runtime::Progress;
use crate::view::text::thousands;

/// What has been sent so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Requests the pipeline announced.
    pub expected: usize,
    /// Requests started.
    pub started: usize,
    /// What the requests in flight are for, oldest first, with their number.
    pub in_flight: Vec<(usize, RequestPurpose)>,
    /// Estimated tokens of every request started.
    pub sent_tokens: u64,
    /// Tokens of every answer received (the provider's count, else an
    /// estimate of its text).
    pub received_tokens: u64,
}

impl Tally {
    /// The progress line after `label`: `compacting · request 3 of 3 ·
    /// 4,312 tokens sent, 512 received · shortSummary`, or `requests 1, 2
    /// of 3 · … · history, turnPrefix` while two run at once; what the
    /// requests are for comes last, as the first thing a narrow terminal
    /// cuts. Only the label before the first request; never `k of N` with
    /// k above N.
    pub fn message(&self, label: &str) -> String {
        let of = self.expected.max(self.started);
        if self.in_flight.is_empty() {
            if self.started == 0 {
                return label.to_owned();
            }
            return format!(
                "{label} · {} of {of} requests done · {}",
                self.started,
                self.tokens()
            );
        }
        let numbers: Vec<String> = self.in_flight.iter().map(|(k, _)| k.to_string()).collect();
        let purposes: Vec<&str> = self.in_flight.iter().map(|(_, p)| p.name()).collect();
        let noun = if numbers.len() == 1 {
            "request"
        } else {
            "requests"
        };
        format!(
            "{label} · {noun} {} of {of} · {} · {}",
            numbers.join(", "),
            self.tokens(),
            purposes.join(", ")
        )
    }

    fn tokens(&self) -> String {
        format!(
            "{} tokens sent, {} received",
            thousands(self.sent_tokens),
            thousands(self.received_tokens)
        )
    }
}

/// Estimated tokens of a request: its system prompt and the text, thinking
/// and tool calls of its messages, at four characters a token.
pub fn request_tokens(request: &SummaryRequest) -> u64 {
    let mut chars = utf16_len(&request.system_prompt);
    for m in &request.messages {
        for block in m.content() {
            chars += match block {
                ContentBlock::Text { text, .. } => text.utf16_len(),
                ContentBlock::Thinking { thinking, .. } => thinking.utf16_len(),
                ContentBlock::ToolCall(c) => c.name.utf16_len() + c.arguments.js_len(),
                _ => 0,
            };
        }
    }
    chars_to_tokens(chars)
}

/// A summarizer that counts what it passes on and shows it on `progress`.
pub struct Counted<'a> {
    inner: &'a dyn Summarizer,
    progress: &'a Progress,
    label: String,
    tally: Arc<Mutex<Tally>>,
}

impl<'a> Counted<'a> {
    /// Counts the requests sent through `inner`, shown after `label`.
    pub fn new(inner: &'a dyn Summarizer, progress: &'a Progress, label: &str) -> Self {
        Self {
            inner,
            progress,
            label: label.to_owned(),
            tally: Arc::default(),
        }
    }

    /// What has been sent so far.
    pub fn tally(&self) -> Tally {
        self.tally
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn update(&self, change: impl FnOnce(&mut Tally)) {
        let message = {
            let mut tally = self.tally.lock().unwrap_or_else(PoisonError::into_inner);
            change(&mut tally);
            tally.message(&self.label)
        };
        self.progress.set_message(&message);
    }
}

impl Summarizer for Counted<'_> {
    fn summarize<'a>(
        &'a self,
        request: &'a SummaryRequest,
        cancel: CancellationToken,
    ) -> SummarizeFuture<'a> {
        let mut number = 0;
        self.update(|t| {
            t.started += 1;
            number = t.started;
            t.in_flight.push((number, request.purpose));
            t.sent_tokens += request_tokens(request);
        });
        Box::pin(async move {
            let answer = self.inner.summarize(request, cancel).await;
            self.update(|t| {
                t.in_flight.retain(|&(k, _)| k != number);
                if let Ok(a) = &answer {
                    t.received_tokens += a
                        .usage
                        .as_ref()
                        .map(|u| u.output.max(0.0) as u64)
                        .filter(|&n| n > 0)
                        .unwrap_or_else(|| chars_to_tokens(utf16_len(&a.text)));
                }
            });
            answer
        })
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn context_window(&self) -> Option<u64> {
        self.inner.context_window()
    }

    fn expect_requests(&self, more: usize) {
        self.update(|t| t.expected += more);
        self.inner.expect_requests(more);
    }
}

#[cfg(test)]
mod tests {
    use musepi_runtime::context::SummaryResponse;
    use musepi_runtime::hooks::SummarizeError;

    use super::*;

    fn tally(expected: usize, started: usize, in_flight: &[(usize, RequestPurpose)]) -> Tally {
        Tally {
            expected,
            started,
            in_flight: in_flight.to_vec(),
            sent_tokens: 12_345,
            received_tokens: 678,
        }
    }

    #[test]
    fn the_message_says_which_request_of_how_many_and_the_tokens() {
        assert_eq!(Tally::default().message("compacting"), "compacting");
        assert_eq!(
            tally(
                3,
                2,
                &[
                    (1, RequestPurpose::History),
                    (2, RequestPurpose::TurnPrefix)
                ]
            )
            .message("compacting"),
            "compacting · requests 1, 2 of 3 · 12,345 tokens sent, 678 received · history, turnPrefix"
        );
        assert_eq!(
            tally(3, 3, &[(3, RequestPurpose::ShortSummary)]).message("compacting"),
            "compacting · request 3 of 3 · 12,345 tokens sent, 678 received · shortSummary"
        );
        assert_eq!(
            tally(3, 2, &[]).message("compacting"),
            "compacting · 2 of 3 requests done · 12,345 tokens sent, 678 received"
        );
        // A request nobody announced never shows as 4 of 3.
        assert_eq!(
            tally(3, 4, &[(4, RequestPurpose::History)]).message("c"),
            "c · request 4 of 4 · 12,345 tokens sent, 678 received · history"
        );
    }

    /// Answers `"summary"` with 7 output tokens, or fails for `shortSummary`.
    fn fixed() -> impl Summarizer {
        musepi_runtime::hooks::FromFn::summarizer("fixed", (), async |(), request, _| {
            if request.purpose == RequestPurpose::ShortSummary {
                return Err(SummarizeError::Cancelled);
            }
            Ok(SummaryResponse {
                text: "summary".into(),
                usage: Some(musepi_session_model::Usage {
                    output: 7.0,
                    ..Default::default()
                }),
                truncated: false,
            })
        })
    }

    #[tokio::test]
    async fn requests_are_counted_with_their_tokens() {
        let progress = Progress::hidden();
        let fixed = fixed();
        let counted = Counted::new(&fixed, &progress, "compacting");
        counted.expect_requests(2);
        let history = SummaryRequest::single(
            RequestPurpose::History,
            "system",
            "x".repeat(34),
            None,
            None,
        );
        let short = SummaryRequest::single(RequestPurpose::ShortSummary, "", "y", None, None);
        assert!(
            counted
                .summarize(&history, CancellationToken::new())
                .await
                .is_ok()
        );
        assert!(
            counted
                .summarize(&short, CancellationToken::new())
                .await
                .is_err()
        );
        assert_eq!(
            counted.tally(),
            Tally {
                expected: 2,
                started: 2,
                in_flight: Vec::new(),
                // (6 + 34) / 4 and 1 / 4 rounded up.
                sent_tokens: 11,
                // The failed answer adds nothing.
                received_tokens: 7,
            }
        );
        assert_eq!(counted.describe(), "fixed");
    }
}
