//! When a request is tried again: the retry policy and its backoff, how
//! long a request may take in all, the notice a retry gives, and the wait
//! a server asks for.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};

/// When and how often a request is retried.
///
/// 429, 5xx, dropped connections and timeouts are retried; other statuses
/// and context-overflow rejections are not.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in total, the first included (at least 1).
    pub max_attempts: u32,
    /// The delay before the first retry; it doubles with each further retry.
    pub base_delay: Duration,
    /// The longest backoff delay.
    pub max_delay: Duration,
    /// The longest `Retry-After` honoured; a longer one ends the retries.
    pub max_retry_after: Duration,
    /// Whether backoff delays are randomized (to between half and all of
    /// the computed delay). Off gives the same delays every run.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_mins(1),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// The backoff before attempt `failed + 1`, after `failed` failures.
    pub fn backoff(&self, failed: u32) -> Duration {
        let factor = 2u32.saturating_pow(failed.saturating_sub(1));
        let delay = self.base_delay.saturating_mul(factor).min(self.max_delay);
        if self.jitter {
            let unit = getrandom::u32().map_or(1.0, |r| f64::from(r) / f64::from(u32::MAX));
            delay.mul_f64(0.5 + unit / 2.0)
        } else {
            delay
        }
    }
}

/// How long one request may take and how it retries: what a provider's
/// settings entry and `--deadline` decide, used as a whole by every request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Timing {
    /// Total time of one attempt (it is also bounded by what is left of the deadline).
    pub timeout: Duration,
    /// Total time of one request: every attempt and the waits between them.
    pub deadline: Duration,
    /// Connect timeout; `None` uses the shared client's.
    pub connect_timeout: Option<Duration>,
    /// Retries.
    pub retry: RetryPolicy,
}

/// A [`DEFAULT_DEADLINE`](crate::DEFAULT_DEADLINE) per request, each attempt
/// allowed all of it, the shared client's connect timeout and the default
/// retry policy.
impl Default for Timing {
    fn default() -> Self {
        Self {
            timeout: crate::DEFAULT_TIMEOUT,
            deadline: crate::DEFAULT_DEADLINE,
            connect_timeout: None,
            retry: RetryPolicy::default(),
        }
    }
}

/// A retry about to happen, for progress output.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryNotice {
    /// The provider's name.
    pub provider: String,
    /// The attempt that failed (1 for the first).
    pub attempt: u32,
    /// How many attempts the request may make in all (the deadline may
    /// end it sooner).
    pub max_attempts: u32,
    /// How long we wait before the next attempt.
    pub delay: Duration,
    /// Whether the delay came from a `Retry-After` header.
    pub from_retry_after: bool,
    /// Why, e.g. `HTTP 429` or `timeout`.
    pub reason: String,
}

/// Called before each retry.
pub type RetryObserver = Arc<dyn Fn(&RetryNotice) + Send + Sync>;

/// 429 and 5xx are worth another try.
pub(crate) fn is_retryable_status(status: u16) -> bool {
    status == 429 || (500..600).contains(&status)
}

/// The wait a server asks for: `retry-after-ms` (sent by `OpenAI`), or `Retry-After`
/// as seconds or an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_reads_seconds_dates_and_milliseconds() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers, now), None);
        headers.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(7)));
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:10 GMT"),
        );
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(10)));
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:27:00 GMT"),
        );
        assert_eq!(retry_after(&headers, now), Some(Duration::ZERO));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&headers, now), None);
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers, now), Some(Duration::from_millis(250)));
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_without_jitter() {
        let policy = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            jitter: false,
            ..RetryPolicy::default()
        };
        let delays: Vec<_> = (1..=4).map(|n| policy.backoff(n).as_millis()).collect();
        assert_eq!(delays, [100, 200, 350, 350]);
        let jittered = RetryPolicy {
            jitter: true,
            ..policy
        }
        .backoff(2);
        assert!(jittered >= Duration::from_millis(100) && jittered <= Duration::from_millis(200));
    }
}
