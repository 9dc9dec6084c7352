//! What the maintenance runtime tells the agent loop: decisions, the events
//! (docs/design.md, "When to compact") (and their tree counterparts), and the abort handle.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use musepi_compaction::Reason;
use musepi_context_builder::LlmMessage;
use musepi_session_model::EntryId;

use crate::promote::PromotionTarget;
use tokio_util::sync::CancellationToken;

/// How a compaction was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UsedStrategy {
    /// The model-free archive.
    Snapcompact,
    /// An LLM summary.
    ContextFull,
    /// A handoff document in a new session.
    Handoff,
}

impl UsedStrategy {
    /// `snapcompact`, `llm` or `handoff`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Snapcompact => "snapcompact",
            Self::ContextFull => "llm",
            Self::Handoff => "handoff",
        }
    }
}

/// A finished compaction (the `result` of `compaction_end`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CompactionReport {
    /// How it was made.
    pub strategy: UsedStrategy,
    /// The compaction entry; `None` for a handoff (it writes no compaction).
    pub entry_id: Option<EntryId>,
    /// The summary (or the handoff document).
    pub summary: String,
    /// The short, UI-facing summary.
    pub short_summary: Option<String>,
    /// The first kept entry; `None` for a handoff.
    pub first_kept_entry_id: Option<EntryId>,
    /// Context tokens before.
    pub tokens_before: u64,
    /// Estimated context tokens after.
    pub tokens_after: u64,
    /// A hook supplied the compaction.
    pub from_extension: bool,
    /// The new session file a handoff started.
    pub session_file: Option<PathBuf>,
}

/// Something the runtime reports while it works.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MaintenanceEvent {
    /// `compaction_start { reason }`, before any work.
    CompactionStart {
        /// Why.
        reason: Reason,
    },
    /// `compaction_end { result?, aborted, willRetry, errorMessage? }`.
    CompactionEnd {
        /// Why it ran.
        reason: Reason,
        /// What it made, when it succeeded.
        result: Option<CompactionReport>,
        /// A hook cancelled it or the abort signal fired.
        aborted: bool,
        /// The failed request will be retried.
        will_retry: bool,
        /// What went wrong (docs/design.md, "When to compact").
        error_message: Option<String>,
    },
    /// `context_promotion`: the runtime switched to a larger-context model
    /// instead of compacting (a `model_change` entry records it).
    ContextPromotion {
        /// Why a compaction was due.
        reason: Reason,
        /// The model before, `provider/modelId`, when known.
        from_model: Option<String>,
        /// The model now.
        target: PromotionTarget,
    },
    /// `tree_start`, before a navigation.
    TreeStart {
        /// The target (`None`: before the first entry).
        target_id: Option<String>,
        /// Whether the abandoned branch is summarized.
        summarize: bool,
    },
    /// `tree_end`, after a navigation (or its failure).
    TreeEnd {
        /// The leaf before.
        old_leaf_id: Option<String>,
        /// The leaf after.
        new_leaf_id: Option<String>,
        /// The branch summary written.
        summary_entry_id: Option<String>,
        /// A hook cancelled it or the abort signal fired.
        aborted: bool,
        /// What went wrong.
        error_message: Option<String>,
    },
}

impl MaintenanceEvent {
    /// The event name, as the protocol writes it: `compaction_start`,
    /// `compaction_end`, `context_promotion`, `tree_start` or `tree_end`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::CompactionStart { .. } => "compaction_start",
            Self::CompactionEnd { .. } => "compaction_end",
            Self::ContextPromotion { .. } => "context_promotion",
            Self::TreeStart { .. } => "tree_start",
            Self::TreeEnd { .. } => "tree_end",
        }
    }
}

/// Where events go: called synchronously, in order, before the method that
/// caused them returns.
pub type EventSink = Arc<dyn Fn(MaintenanceEvent) + Send + Sync>;

/// What happened at a natural point.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Nothing to do.
    Nothing,
    /// A compaction was made.
    Compacted,
    /// Retry the turn without compacting (an empty truncated answer).
    Retry,
    /// The turn was kept; show the warning.
    Warned,
    /// A compaction was due but did not happen: no model for the strategy,
    /// or nothing to compact. `compaction_end` carries no message.
    Skipped,
    /// Context promotion: the agent now uses a larger-context model
    /// ([`Decision::promotion`]); nothing was compacted.
    Promoted,
    /// Recovery or compaction failed; show the error.
    Failed,
    /// A hook cancelled it or the abort signal fired.
    Aborted,
}

impl Outcome {
    /// `none`, `compacted`, `retry`, `warn`, `skipped`, `promoted`, `failed`
    /// or `aborted`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Nothing => "none",
            Self::Compacted => "compacted",
            Self::Retry => "retry",
            Self::Warned => "warn",
            Self::Skipped => "skipped",
            Self::Promoted => "promoted",
            Self::Failed => "failed",
            Self::Aborted => "aborted",
        }
    }
}

/// What the agent loop should do after a natural point.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Decision {
    /// What happened.
    pub outcome: Outcome,
    /// Why a compaction ran or was considered.
    pub reason: Option<Reason>,
    /// Re-send the failed request (overflow or incomplete recovery).
    pub retry: bool,
    /// Drop the failing assistant message from the live messages first
    /// (it stays in the journal).
    pub remove_last_assistant: bool,
    /// Start the agent again: a retry, or the auto-continue prompt.
    pub continue_turn: bool,
    /// The developer message to send when continuing after threshold
    /// maintenance (the auto-continue prompt).
    pub continue_prompt: Option<String>,
    /// A notice for the user.
    pub warning: Option<String>,
    /// The failure message (docs/design.md, "When to compact").
    pub error: Option<String>,
    /// The compaction made.
    pub compaction: Option<CompactionReport>,
    /// The model switched to by context promotion: send the next request
    /// (the retry, for overflow and incomplete output) with it.
    pub promotion: Option<PromotionTarget>,
    /// The rebuilt provider messages, when the context changed; replace
    /// the live messages with them.
    pub context: Option<Vec<LlmMessage>>,
    /// Hook failures and other things to tell the user.
    pub notes: Vec<String>,
}

impl Decision {
    /// Nothing to do.
    pub fn nothing() -> Self {
        Self::of(Outcome::Nothing, None)
    }

    pub(crate) fn of(outcome: Outcome, reason: Option<Reason>) -> Self {
        Self {
            outcome,
            reason,
            retry: false,
            remove_last_assistant: false,
            continue_turn: false,
            continue_prompt: None,
            warning: None,
            error: None,
            compaction: None,
            promotion: None,
            context: None,
            notes: Vec::new(),
        }
    }
}

/// Aborts whatever compaction or navigation the runtime is running
/// (`abortCompaction`, docs/design.md, "When to compact"). Cloneable and usable from any task
/// while a runtime method is being awaited.
#[derive(Debug, Clone, Default)]
pub struct AbortHandle {
    inner: Arc<Mutex<Option<CancellationToken>>>,
}

impl AbortHandle {
    /// Fires the running operation's signal; `false` when nothing was running.
    pub fn abort(&self) -> bool {
        let guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        match guard.as_ref() {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Whether a compaction or navigation is running.
    pub fn is_running(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// A fresh signal for a new operation (a new abort controller).
    pub(crate) fn begin(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *self.inner.lock().unwrap_or_else(PoisonError::into_inner) = Some(token.clone());
        token
    }

    /// The operation ended.
    pub(crate) fn end(&self) {
        *self.inner.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_named_as_the_protocol_names_them() {
        let start = MaintenanceEvent::CompactionStart {
            reason: Reason::Overflow,
        };
        let end = MaintenanceEvent::TreeEnd {
            old_leaf_id: None,
            new_leaf_id: None,
            summary_entry_id: None,
            aborted: false,
            error_message: None,
        };
        assert_eq!((start.name(), end.name()), ("compaction_start", "tree_end"));
    }

    #[test]
    fn abort_handle_fires_only_while_running() {
        let h = AbortHandle::default();
        assert!(!h.abort());
        let token = h.begin();
        assert!(h.is_running());
        assert!(h.abort());
        assert!(token.is_cancelled());
        h.end();
        assert!(!h.is_running());
    }
}
