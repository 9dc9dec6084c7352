//! The HTTP layer every provider shares: the TLS set-up, the one
//! `reqwest::Client`, POSTs with retries, backoff, a deadline and
//! cancellation, bodies read up to a limit, and the reading of error bodies.
//!
//! What a request may do is bounded: it ends by its deadline, which covers
//! every attempt and the waits between them; an answer is read up to
//! [`MAX_RESPONSE_BYTES`]; a redirect is followed only within the same
//! origin (scheme, host and port), so the conversation and the key never
//! reach a host they were not configured for.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use musepi_hooks::{RemoteFailure, SummarizeError};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::ApiKey;
use crate::retry::{RetryNotice, RetryObserver, Timing, is_retryable_status, retry_after};

/// The most bytes of one answer that are read; a larger answer is an error.
pub const MAX_RESPONSE_BYTES: u64 = 16 * 1024 * 1024;

/// A final HTTP answer (2xx, or an error status that is not retried any more).
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) status_text: String,
    pub(crate) body: String,
    retry_after: Option<Duration>,
}

impl Reply {
    pub(crate) fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A failed attempt that produced no HTTP answer.
struct Failure {
    retryable: bool,
    timed_out: bool,
    message: String,
}

/// Why an attempt gave no usable answer.
enum AttemptError {
    /// The transport failed; it may be worth another attempt.
    Transport(Failure),
    /// The answer must not be used and is not retried (a redirect to
    /// another origin, a body over the limit).
    Fatal(SummarizeError),
}

/// What one provider needs to send requests.
#[derive(Clone)]
pub(crate) struct Http {
    pub(crate) client: reqwest::Client,
    pub(crate) provider: String,
    pub(crate) timing: Timing,
    pub(crate) secret: Option<ApiKey>,
    pub(crate) observer: Option<RetryObserver>,
}

impl Http {
    /// POSTs `body` as JSON with retries; resolves with the last HTTP answer,
    /// or with a cancelled, transport or deadline error.
    ///
    /// The deadline covers every attempt and the waits between them: each
    /// attempt may take at most the attempt timeout and what is left of the
    /// deadline, and a retry that would start after the deadline is not made
    /// (the last answer or error is returned instead).
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &Value,
        cancel: &CancellationToken,
    ) -> Result<Reply, SummarizeError> {
        let payload = body.to_string().into_bytes();
        let deadline = tokio::time::Instant::now() + self.timing.deadline;
        let attempts = AtomicU32::new(0);
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(SummarizeError::Cancelled),
            result = self.with_retries(url, &headers, &payload, deadline, &attempts) => result,
            () = tokio::time::sleep_until(deadline) => {
                Err(self.deadline_error(attempts.load(Ordering::Relaxed)))
            }
        }
    }

    fn deadline_error(&self, attempts: u32) -> SummarizeError {
        SummarizeError::Deadline {
            provider: self.provider.clone(),
            deadline_ms: u64::try_from(self.timing.deadline.as_millis()).unwrap_or(u64::MAX),
            attempts,
        }
    }

    async fn with_retries(
        &self,
        url: &str,
        headers: &HeaderMap,
        payload: &[u8],
        deadline: tokio::time::Instant,
        attempts: &AtomicU32,
    ) -> Result<Reply, SummarizeError> {
        let max_attempts = self.timing.retry.max_attempts.max(1);
        let mut attempt = 1;
        loop {
            let last = attempt >= max_attempts;
            attempts.store(attempt, Ordering::Relaxed);
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let timeout = self.timing.timeout.min(left);
            let outcome = match self.once(url, headers, payload, timeout).await {
                Err(AttemptError::Fatal(e)) => return Err(e),
                Err(AttemptError::Transport(f)) => Err(f),
                Ok(reply) => Ok(reply),
            };
            // No attempt starts after the deadline.
            let out_of_time = |delay: Duration| tokio::time::Instant::now() + delay >= deadline;
            let (delay, from_retry_after, reason) = match outcome {
                Ok(reply) => {
                    if last || !is_retryable_status(reply.status) {
                        return Ok(reply);
                    }
                    let reason = format!("HTTP {}", reply.status);
                    let (delay, from_retry_after) = match reply.retry_after {
                        Some(wait) if wait > self.timing.retry.max_retry_after => return Ok(reply),
                        Some(wait) => (wait, true),
                        None => (self.timing.retry.backoff(attempt), false),
                    };
                    if out_of_time(delay) {
                        return Ok(reply);
                    }
                    (delay, from_retry_after, reason)
                }
                Err(failure) => {
                    let delay = self.timing.retry.backoff(attempt);
                    if failure.timed_out && out_of_time(delay) {
                        return Err(self.deadline_error(attempt));
                    }
                    if last || !failure.retryable || out_of_time(delay) {
                        return Err(SummarizeError::Transport {
                            provider: self.provider.clone(),
                            attempts: attempt,
                            timed_out: failure.timed_out,
                            message: failure.message,
                        });
                    }
                    let reason = if failure.timed_out {
                        "timeout"
                    } else {
                        "connection error"
                    };
                    (delay, false, reason.to_owned())
                }
            };
            let notice = RetryNotice {
                provider: self.provider.clone(),
                attempt,
                max_attempts,
                delay,
                from_retry_after,
                reason,
            };
            tracing::warn!(
                provider = %notice.provider,
                attempt,
                delay_ms = delay.as_millis() as u64,
                reason = %notice.reason,
                "retrying provider request"
            );
            if let Some(observer) = &self.observer {
                observer(&notice);
            }
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    async fn once(
        &self,
        url: &str,
        headers: &HeaderMap,
        payload: &[u8],
        timeout: Duration,
    ) -> Result<Reply, AttemptError> {
        let response = self
            .client
            .post(url)
            .timeout(timeout)
            .headers(headers.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(payload.to_vec())
            .send()
            .await
            .map_err(|e| AttemptError::Transport(self.failure(&e)))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|l| response.url().join(l).ok())
                .map_or_else(|| "(no location)".to_owned(), |u| display_url(u.as_str()));
            return Err(AttemptError::Fatal(SummarizeError::Redirected {
                provider: self.provider.clone(),
                location,
            }));
        }
        let retry_after = retry_after(response.headers(), SystemTime::now());
        let body = self.read_body(response).await?;
        Ok(Reply {
            status: status.as_u16(),
            status_text: status.canonical_reason().unwrap_or_default().to_owned(),
            body,
            retry_after,
        })
    }

    /// The body as text, read up to [`MAX_RESPONSE_BYTES`].
    async fn read_body(&self, mut response: reqwest::Response) -> Result<String, AttemptError> {
        let too_large = || {
            AttemptError::Fatal(SummarizeError::TooLarge {
                provider: self.provider.clone(),
                limit: MAX_RESPONSE_BYTES,
            })
        };
        if response
            .content_length()
            .is_some_and(|n| n > MAX_RESPONSE_BYTES)
        {
            return Err(too_large());
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| AttemptError::Transport(self.failure(&e)))?
        {
            if (bytes.len() + chunk.len()) as u64 > MAX_RESPONSE_BYTES {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        Ok(self.redact(&text))
    }

    fn failure(&self, error: &reqwest::Error) -> Failure {
        let mut message = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        Failure {
            retryable: !error.is_builder(),
            timed_out: error.is_timeout(),
            message: self.redact(&message),
        }
    }

    /// Removes the API key from text that may be shown or stored: the key
    /// as it is, and as a JSON string writes it.
    pub(crate) fn redact(&self, text: &str) -> String {
        match &self.secret {
            Some(key) if key.expose().len() >= 4 => {
                let mut out = text.replace(key.expose(), "[redacted]");
                let quoted = serde_json::to_string(key.expose()).unwrap_or_default();
                let escaped = quoted.trim_matches('"');
                if escaped != key.expose() {
                    out = out.replace(escaped, "[redacted]");
                }
                out
            }
            _ => text.to_owned(),
        }
    }

    /// Parses a 2xx body as JSON, with the API key removed from every
    /// string in it (however the answer escaped it): a provider that echoes
    /// the key never gets it into a summary, a session or the terminal.
    pub(crate) fn json(&self, reply: &Reply) -> Result<Value, SummarizeError> {
        let mut value: Value =
            serde_json::from_str(&reply.body).map_err(|e| self.malformed(reply, &e.to_string()))?;
        if self.secret.is_some() {
            self.redact_value(&mut value);
        }
        Ok(value)
    }

    fn redact_value(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                let redacted = self.redact(s);
                if redacted != *s {
                    *s = redacted;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.redact_value(v)),
            _ => {}
        }
    }

    /// A malformed-response error quoting the start of the body.
    pub(crate) fn malformed(&self, reply: &Reply, detail: &str) -> SummarizeError {
        SummarizeError::MalformedResponse {
            provider: self.provider.clone(),
            status: reply.status,
            detail: detail.to_owned(),
            body_prefix: self.redact(prefix(&reply.body, 120)),
        }
    }

    /// The provider's own message from an error body, or a note that there was none.
    pub(crate) fn error_message(&self, reply: &Reply) -> String {
        let message = provider_message(&reply.body);
        if message.is_empty() {
            "(no body)".to_owned()
        } else {
            self.redact(&message)
        }
    }

    /// Maps a non-2xx answer to an overflow error (400/413 matching the
    /// patterns (docs/design.md, "When to compact"), or `None`.
    pub(crate) fn overflow(&self, reply: &Reply) -> Option<SummarizeError> {
        if !matches!(reply.status, 400 | 413) {
            return None;
        }
        let message = provider_message(&reply.body);
        // An empty 400/413 is Cerebras's way of saying the input is too long.
        let overflow = message.is_empty() || musepi_compaction::is_overflow_error(&message);
        overflow.then(|| SummarizeError::ContextOverflow {
            provider: self.provider.clone(),
            status: Some(reply.status),
            message: self.error_message(reply),
        })
    }

    /// Maps a non-2xx answer to the overflow or provider error.
    pub(crate) fn status_error(&self, reply: &Reply) -> SummarizeError {
        self.overflow(reply)
            .unwrap_or_else(|| SummarizeError::Provider {
                provider: self.provider.clone(),
                status: Some(reply.status),
                message: self.error_message(reply),
            })
    }

    /// Maps a non-2xx answer of a remote compaction call (docs/design.md, "Remote summaries") to the
    /// overflow error or `Remote compaction failed (<status> <statusText>)`.
    pub(crate) fn remote_status_error(&self, reply: &Reply) -> SummarizeError {
        self.overflow(reply).unwrap_or_else(|| {
            let message = provider_message(&reply.body);
            SummarizeError::Remote {
                failure: RemoteFailure::Status {
                    status: reply.status,
                    status_text: reply.status_text.clone(),
                },
                message: (!message.is_empty()).then(|| self.redact(&message)),
            }
        })
    }

    /// Whether a 400 answer's message names `parameter`: the server does not
    /// accept it for this model.
    pub(crate) fn rejects(&self, reply: &Reply, parameter: &str) -> bool {
        let rejected = reply.status == 400
            && provider_message(&reply.body)
                .to_lowercase()
                .contains(parameter);
        if rejected {
            tracing::info!(provider = %self.provider, parameter, "server rejected a parameter; resending without it");
        }
        rejected
    }

    /// A bearer authorization header, when there is a key.
    pub(crate) fn bearer_headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.secret
            && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
        {
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        headers
    }
}

/// The message of an error body: `error.message`, a string `error`,
/// `message` or `detail`, else the start of the body.
pub(crate) fn provider_message(body: &str) -> String {
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return String::new();
    }
    if let Ok(value) = serde_json::from_str::<Value>(trimmed) {
        let candidates = [
            value.pointer("/error/message"),
            value.get("error"),
            value.get("message"),
            value.get("detail"),
        ];
        if let Some(text) = candidates.into_iter().flatten().find_map(Value::as_str) {
            return text.to_owned();
        }
    }
    prefix(trimmed, 300).to_owned()
}

/// At most `max` characters of `text`.
pub(crate) fn prefix(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// A URL without user info, query or fragment.
pub(crate) fn display_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => "(invalid URL)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_messages_come_from_the_usual_places() {
        let cases = [
            (
                r#"{"error":{"message":"bad key","type":"auth"}}"#,
                "bad key",
            ),
            (
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                "Overloaded",
            ),
            (r#"{"error":"model not found"}"#, "model not found"),
            (r#"{"detail":"Not Found"}"#, "Not Found"),
            ("upstream connect error", "upstream connect error"),
            ("  ", ""),
        ];
        for (body, expected) in cases {
            assert_eq!(provider_message(body), expected, "{body}");
        }
        assert_eq!(prefix("héllo", 2), "hé");
    }
}
