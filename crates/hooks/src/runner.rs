//! Registered hook handlers and how their answers combine (docs/design.md, "Hooks").
//!
//! Handlers run in registration order. For the `session_before_*` events a
//! non-empty answer replaces the one before it (the last wins) and
//! `cancel: true` stops the run at once. `session.compacting` answers
//! combine: the last prompt wins, context lines add up in order, preserved
//! data merges key by key. The after-events are notifications.
//!
//! A handler that fails is reported (a [`HookWarning`]) and its answer is
//! ignored, unless it is marked fail-closed: then its failure cancels the
//! operation. Either way nothing is written that the failure could corrupt.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::events::{
    BeforeCompactEvent, BeforeCompactResult, BeforeTreeEvent, BeforeTreeResult, CompactEvent,
    CompactingEvent, CompactingResult, TreeEvent, names,
};

/// The future a hook handler returns.
pub type HookFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, HookError>> + Send + 'a>>;

/// Why a handler failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// It did not answer in time (its process was killed).
    #[error("timed out after {ms} ms")]
    Timeout {
        /// The limit.
        ms: u64,
    },
    /// Its process exited with a failure status.
    #[error("exited with status {status}{}", if stderr.is_empty() { String::new() } else { format!(": {stderr}") })]
    Exit {
        /// The exit status (or the signal, negated).
        status: i32,
        /// The end of what it wrote on stderr.
        stderr: String,
    },
    /// It answered something that is not a valid result.
    #[error("invalid answer: {0}")]
    InvalidAnswer(String),
    /// It could not be started.
    #[error("could not start: {0}")]
    Spawn(String),
    /// A Rust handler failed.
    #[error("{0}")]
    Failed(String),
}

/// One extension: any subset of the five events.
///
/// Every method has a default that does nothing, so a handler implements
/// only the events it cares about.
pub trait Hook: Send + Sync {
    /// A name for messages.
    fn name(&self) -> String;

    /// Whether a failure of this handler cancels the operation (instead of being ignored).
    fn fail_closed(&self) -> bool {
        false
    }

    /// Whether it handles `event` (one of [`names::ALL`]); others are never called.
    fn handles(&self, event: &str) -> bool {
        let _ = event;
        true
    }

    /// `session_before_compact`.
    fn before_compact<'a>(
        &'a self,
        event: &'a BeforeCompactEvent,
        cancel: CancellationToken,
    ) -> HookFuture<'a, Option<BeforeCompactResult>> {
        let _ = (event, cancel);
        Box::pin(async { Ok(None) })
    }

    /// `session.compacting`.
    fn compacting<'a>(
        &'a self,
        event: &'a CompactingEvent,
        cancel: CancellationToken,
    ) -> HookFuture<'a, Option<CompactingResult>> {
        let _ = (event, cancel);
        Box::pin(async { Ok(None) })
    }

    /// `session_compact`.
    fn compacted<'a>(
        &'a self,
        event: &'a CompactEvent,
        cancel: CancellationToken,
    ) -> HookFuture<'a, ()> {
        let _ = (event, cancel);
        Box::pin(async { Ok(()) })
    }

    /// `session_before_tree`.
    fn before_tree<'a>(
        &'a self,
        event: &'a BeforeTreeEvent,
        cancel: CancellationToken,
    ) -> HookFuture<'a, Option<BeforeTreeResult>> {
        let _ = (event, cancel);
        Box::pin(async { Ok(None) })
    }

    /// `session_tree`.
    fn tree<'a>(&'a self, event: &'a TreeEvent, cancel: CancellationToken) -> HookFuture<'a, ()> {
        let _ = (event, cancel);
        Box::pin(async { Ok(()) })
    }
}

/// A failed handler, reported to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookWarning {
    /// The handler.
    pub hook: String,
    /// The event.
    pub event: &'static str,
    /// What went wrong.
    pub error: HookError,
    /// Whether the failure cancelled the operation.
    pub cancelled: bool,
}

impl std::fmt::Display for HookWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "hook {} ({}) {}", self.hook, self.event, self.error)?;
        if self.cancelled {
            f.write_str("; the operation was cancelled (the hook is fail-closed)")?;
        }
        Ok(())
    }
}

/// The failures as the lines an operation's outcome lists among its warnings.
pub(crate) fn warning_lines(warnings: &[HookWarning]) -> impl Iterator<Item = String> + '_ {
    warnings.iter().map(ToString::to_string)
}

/// The combined answer of every handler, with the failures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dispatch<T> {
    /// The combined answer (`None` when nobody answered).
    pub result: Option<T>,
    /// Handlers that failed.
    pub warnings: Vec<HookWarning>,
    /// A fail-closed handler failed: treat as cancelled.
    pub failed_closed: bool,
    /// Which hook cancelled, and why (a cancelling answer, or a
    /// fail-closed hook's failure).
    pub cancelled_by: Option<HookCancel>,
}

/// Told of each failure that cancels an operation, as it happens.
pub type CancelReport = Arc<dyn Fn(&HookWarning) + Send + Sync>;

/// The registered handlers.
#[derive(Clone, Default)]
pub struct Hooks {
    handlers: Vec<Arc<dyn Hook>>,
    on_cancel: Option<CancelReport>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.handlers.iter().map(|h| h.name()))
            .finish()
    }
}

/// The answer to a before-event: it may say nothing, and it may cancel.
pub(crate) trait BeforeAnswer {
    /// The answer that cancels for `reason` (empty: none given) and says
    /// nothing else.
    fn cancelled(reason: String) -> Self;
    fn is_empty(&self) -> bool;
    fn cancels(&self) -> bool;
    /// Why it cancels, when the hook said.
    fn reason(&self) -> Option<&str>;
}

impl BeforeAnswer for BeforeCompactResult {
    fn cancelled(reason: String) -> Self {
        Self {
            cancel: true,
            compaction: None,
            reason: Some(reason).filter(|r| !r.trim().is_empty()),
        }
    }
    fn is_empty(&self) -> bool {
        Self::is_empty(self)
    }
    fn cancels(&self) -> bool {
        self.cancel
    }
    fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }
}

impl BeforeAnswer for BeforeTreeResult {
    fn cancelled(reason: String) -> Self {
        Self {
            cancel: true,
            reason: Some(reason).filter(|r| !r.trim().is_empty()),
            ..Self::default()
        }
    }
    fn is_empty(&self) -> bool {
        Self::is_empty(self)
    }
    fn cancels(&self) -> bool {
        self.cancel
    }
    fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }
}

/// Which hook cancelled an operation, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCancel {
    /// The hook's name (its command line).
    pub hook: String,
    /// Its reason: what it answered, the last lines it wrote on stderr, or
    /// its failure when it is fail-closed; `None` when it gave none.
    pub reason: Option<String>,
}

impl std::fmt::Display for HookCancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cancelled by hook {}", self.hook)?;
        match &self.reason {
            Some(r) => write!(f, ": {}", r.trim()),
            None => Ok(()),
        }
    }
}

impl Hooks {
    /// No handlers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a handler after the others.
    pub fn register(&mut self, hook: Arc<dyn Hook>) {
        self.handlers.push(hook);
    }

    /// Tells `report` of every failure of a fail-closed handler that cancels
    /// the operation, when it happens: the operation's own error (e.g.
    /// "compaction cancelled") does not say which handler failed or how.
    pub fn report_cancels(&mut self, report: CancelReport) {
        self.on_cancel = Some(report);
    }

    /// Whether any handler handles `event`.
    pub fn has(&self, event: &str) -> bool {
        self.handlers.iter().any(|h| h.handles(event))
    }

    fn for_event(&self, event: &'static str) -> impl Iterator<Item = &Arc<dyn Hook>> {
        self.handlers.iter().filter(move |h| h.handles(event))
    }

    fn fail(
        &self,
        d: &mut Dispatch<impl Sized>,
        hook: &dyn Hook,
        event: &'static str,
        error: HookError,
    ) -> bool {
        // After-events are notifications: nothing is left to cancel.
        let cancelled = hook.fail_closed() && !matches!(event, names::COMPACT | names::TREE);
        let warning = HookWarning {
            hook: hook.name(),
            event,
            error,
            cancelled,
        };
        if cancelled {
            if let Some(report) = &self.on_cancel {
                report(&warning);
            }
            d.cancelled_by = Some(HookCancel {
                hook: warning.hook.clone(),
                reason: Some(warning.error.to_string()),
            });
        }
        d.warnings.push(warning);
        d.failed_closed |= cancelled;
        cancelled
    }

    /// Runs a before-event: the last answer that says something wins, and
    /// a cancel (or a failing fail-closed hook) ends the chain.
    async fn before_event<'a, R: BeforeAnswer>(
        &'a self,
        event: &'static str,
        call: impl Fn(&'a dyn Hook) -> HookFuture<'a, Option<R>>,
    ) -> Dispatch<R> {
        let mut d = Dispatch {
            result: None,
            warnings: Vec::new(),
            failed_closed: false,
            cancelled_by: None,
        };
        for h in self.for_event(event) {
            match call(h.as_ref()).await {
                Ok(Some(r)) if !r.is_empty() => {
                    let stop = r.cancels();
                    if stop {
                        d.cancelled_by = Some(HookCancel {
                            hook: h.name(),
                            reason: r.reason().map(str::to_owned),
                        });
                    }
                    d.result = Some(r);
                    if stop {
                        break;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    if self.fail(&mut d, h.as_ref(), event, e) {
                        break;
                    }
                }
            }
        }
        d
    }

    /// Runs `session_before_compact`.
    pub async fn before_compact(
        &self,
        event: &BeforeCompactEvent,
        cancel: &CancellationToken,
    ) -> Dispatch<BeforeCompactResult> {
        self.before_event(names::BEFORE_COMPACT, |h| {
            h.before_compact(event, cancel.clone())
        })
        .await
    }

    /// Runs `session.compacting`, combining the answers.
    pub async fn compacting(
        &self,
        event: &CompactingEvent,
        cancel: &CancellationToken,
    ) -> Dispatch<CompactingResult> {
        let mut d: Dispatch<CompactingResult> = Dispatch {
            result: None,
            warnings: Vec::new(),
            failed_closed: false,
            cancelled_by: None,
        };
        for h in self.for_event(names::COMPACTING) {
            match h.compacting(event, cancel.clone()).await {
                Ok(Some(r)) if !r.is_empty() => {
                    let acc = d.result.get_or_insert_with(CompactingResult::default);
                    if r.prompt.is_some() {
                        acc.prompt = r.prompt;
                    }
                    acc.context.extend(r.context);
                    acc.preserve_data = match (acc.preserve_data.take(), r.preserve_data) {
                        (
                            Some(serde_json::Value::Object(mut a)),
                            Some(serde_json::Value::Object(b)),
                        ) => {
                            a.extend(b);
                            Some(serde_json::Value::Object(a))
                        }
                        (a, b) => b.or(a),
                    };
                }
                Ok(_) => {}
                Err(e) => {
                    if self.fail(&mut d, h.as_ref(), names::COMPACTING, e) {
                        break;
                    }
                }
            }
        }
        d
    }

    /// Runs `session_compact` (answers ignored).
    pub async fn compacted(
        &self,
        event: &CompactEvent,
        cancel: &CancellationToken,
    ) -> Vec<HookWarning> {
        let mut d: Dispatch<()> = Dispatch::default();
        for h in self.for_event(names::COMPACT) {
            if let Err(e) = h.compacted(event, cancel.clone()).await {
                let _ = self.fail(&mut d, h.as_ref(), names::COMPACT, e);
            }
        }
        d.warnings
    }

    /// Runs `session_before_tree`.
    pub async fn before_tree(
        &self,
        event: &BeforeTreeEvent,
        cancel: &CancellationToken,
    ) -> Dispatch<BeforeTreeResult> {
        self.before_event(names::BEFORE_TREE, |h| h.before_tree(event, cancel.clone()))
            .await
    }

    /// Runs `session_tree` (answers ignored).
    pub async fn tree(&self, event: &TreeEvent, cancel: &CancellationToken) -> Vec<HookWarning> {
        let mut d: Dispatch<()> = Dispatch::default();
        for h in self.for_event(names::TREE) {
            if let Err(e) = h.tree(event, cancel.clone()).await {
                let _ = self.fail(&mut d, h.as_ref(), names::TREE, e);
            }
        }
        d.warnings
    }
}
