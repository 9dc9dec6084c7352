//! A [`Summarizer`] or a [`RemoteCompactor`] made from an async closure.
//!
//! An agent that calls its own model does not need a type and a trait impl
//! for it: [`FromFn::summarizer`] takes a description, the state the calls
//! share (an HTTP client, a counter, `()` for none) and an async closure
//! `async |state, request, cancel| { … }`; [`FromFn::remote_compactor`]
//! does the same for a provider-native compaction.
//!
//! The closure borrows the state and the request for as long as its future
//! runs, so it captures nothing itself: whatever it needs beside the
//! request goes in the state, which [`FromFn::state`] gives back.
//! Its future must be `Send`, as every [`SummarizeFuture`] is.

use std::fmt;
use std::future::Future;

use musepi_context_builder::{SummaryRequest, SummaryResponse};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::compact::{RemoteCompactInput, RemoteCompactor, RemoteFuture};
use crate::summarizer::{SummarizeError, SummarizeFuture, Summarizer};

/// An async closure `async |state: &S, input: &In, cancel| -> Out` that
/// captures nothing and whose future is `Send`: what [`FromFn::summarizer`]
/// and [`FromFn::remote_compactor`] take.
///
/// Every such closure implements it; it is not meant to be implemented by hand.
pub trait AnswerFn<S, In: ?Sized, Out>:
    AsyncFn(&S, &In, CancellationToken) -> Out + for<'a> StateFn<'a, S, In, Out>
{
}

impl<S, In: ?Sized, Out, F> AnswerFn<S, In, Out> for F where
    F: AsyncFn(&S, &In, CancellationToken) -> Out + for<'a> StateFn<'a, S, In, Out>
{
}

/// One call of an [`AnswerFn`], with the lifetime its future borrows
/// `state` and `input` for.
pub trait StateFn<'a, S: 'a, In: 'a + ?Sized, Out>: Send + Sync {
    /// The future one call returns.
    type Future: Future<Output = Out> + Send + 'a;

    /// Starts one call.
    fn call(&'a self, state: &'a S, input: &'a In, cancel: CancellationToken) -> Self::Future;
}

impl<'a, S: 'a, In: 'a + ?Sized, Out, F, Fut> StateFn<'a, S, In, Out> for F
where
    F: Fn(&'a S, &'a In, CancellationToken) -> Fut + Send + Sync,
    Fut: Future<Output = Out> + Send + 'a,
{
    type Future = Fut;

    fn call(&'a self, state: &'a S, input: &'a In, cancel: CancellationToken) -> Fut {
        self(state, input, cancel)
    }
}

/// What a summarizer's closure answers.
type Summary = Result<SummaryResponse, SummarizeError>;

/// What a remote compactor's closure answers.
type Native = Result<Value, SummarizeError>;

/// A [`Summarizer`] or a [`RemoteCompactor`] made from an async closure:
/// a name, the state the calls share, and the closure that answers them.
pub struct FromFn<S, F> {
    name: String,
    state: S,
    call: F,
}

impl<S: Send + Sync, F> FromFn<S, F> {
    /// A summarizer that answers each request with `summarize(&state, request, cancel)`.
    ///
    /// `describe` is what [`Summarizer::describe`] says (never a secret).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    ///
    /// use musepi_context_builder::{RequestPurpose, SummaryRequest, SummaryResponse};
    /// use musepi_hooks::{FromFn, SummarizeError, Summarizer};
    /// use tokio_util::sync::CancellationToken;
    ///
    /// let model = FromFn::summarizer(
    ///     "my-model",
    ///     AtomicUsize::new(0),
    ///     async |sent, request, cancel| {
    ///         if cancel.is_cancelled() {
    ///             return Err(SummarizeError::Cancelled);
    ///         }
    ///         sent.fetch_add(1, Ordering::Relaxed);
    ///         // An agent would send `request` to its model here.
    ///         Ok(SummaryResponse {
    ///             text: format!("{} characters summarized", request.prompt_text().len()),
    ///             usage: None,
    ///             truncated: false,
    ///         })
    ///     },
    /// );
    ///
    /// let request = SummaryRequest::single(RequestPurpose::History, "sys", "hello", None, None);
    /// let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let answer = runtime
    ///     .block_on(model.summarize(&request, CancellationToken::new()))
    ///     .unwrap();
    /// assert!(answer.text.ends_with("characters summarized"));
    /// assert_eq!(model.state().load(Ordering::Relaxed), 1);
    /// assert_eq!(model.describe(), "my-model");
    /// ```
    pub fn summarizer(describe: impl Into<String>, state: S, summarize: F) -> Self
    where
        F: AnswerFn<S, SummaryRequest, Summary>,
    {
        Self::new(describe.into(), state, summarize)
    }

    /// A remote compactor for `provider` that answers each input with
    /// `compact(&state, input, cancel)`: the object stored under
    /// `preserveData.openaiRemoteCompaction`.
    ///
    /// ```
    /// use musepi_hooks::{FromFn, RemoteCompactInput, RemoteCompactor};
    /// use tokio_util::sync::CancellationToken;
    ///
    /// let native = FromFn::remote_compactor("openai", (), async |(), input, _cancel| {
    ///     Ok(serde_json::json!({"provider": "openai", "sent": input.messages.len()}))
    /// });
    /// let input = RemoteCompactInput {
    ///     instructions: "Summarize.".to_owned(),
    ///     previous_history: None,
    ///     messages: Vec::new(),
    /// };
    /// let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let answer = runtime
    ///     .block_on(native.compact(&input, CancellationToken::new()))
    ///     .unwrap();
    /// assert_eq!(answer["sent"], 0);
    /// assert_eq!(native.provider(), "openai");
    /// ```
    pub fn remote_compactor(provider: impl Into<String>, state: S, compact: F) -> Self
    where
        F: AnswerFn<S, RemoteCompactInput, Native>,
    {
        Self::new(provider.into(), state, compact)
    }

    fn new(name: String, state: S, call: F) -> Self {
        Self { name, state, call }
    }

    /// The state the calls share.
    pub fn state(&self) -> &S {
        &self.state
    }
}

impl<S, F> Summarizer for FromFn<S, F>
where
    S: Send + Sync,
    F: AnswerFn<S, SummaryRequest, Summary>,
{
    fn summarize<'a>(
        &'a self,
        request: &'a SummaryRequest,
        cancel: CancellationToken,
    ) -> SummarizeFuture<'a> {
        Box::pin(self.call.call(&self.state, request, cancel))
    }

    fn describe(&self) -> String {
        self.name.clone()
    }
}

impl<S, F> RemoteCompactor for FromFn<S, F>
where
    S: Send + Sync,
    F: AnswerFn<S, RemoteCompactInput, Native>,
{
    fn provider(&self) -> String {
        self.name.clone()
    }

    fn compact<'a>(
        &'a self,
        input: &'a RemoteCompactInput,
        cancel: CancellationToken,
    ) -> RemoteFuture<'a> {
        Box::pin(self.call.call(&self.state, input, cancel))
    }
}

impl<S, F> fmt::Debug for FromFn<S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FromFn").field(&self.name).finish()
    }
}
