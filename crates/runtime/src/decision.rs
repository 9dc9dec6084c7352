//! What the maintenance runtime tells the agent loop: decisions, the events
//! (docs/design.md, "When to compact") (and their tree counterparts), and the abort handle.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use musepi_compaction::Reason;
use musepi_context_builder::LlmMessage;
use musepi_session_model::EntryId;
use serde_json::{Value, json};

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

impl CompactionReport {
    /// The report as protocol JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "strategy": self.strategy.name(),
            "entryId": self.entry_id.as_ref().map(EntryId::as_str),
            "summary": self.summary,
            "shortSummary": self.short_summary,
            "firstKeptEntryId": self.first_kept_entry_id.as_ref().map(EntryId::as_str),
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
            "fromExtension": self.from_extension,
            "sessionFile": self.session_file.as_ref().map(|p| p.display().to_string()),
        })
    }
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
    /// The event name.
    pub fn name(&self) -> &'static str {
        self.parts().0
    }

    /// The event as protocol JSON: `{"type": name, …fields}`; absent
    /// optional fields are left out.
    pub fn to_json(&self) -> Value {
        let (name, fields) = self.parts();
        let mut out = serde_json::Map::new();
        out.insert("type".into(), name.into());
        if let Value::Object(fields) = fields {
            out.extend(fields);
        }
        Value::Object(out)
    }

    /// The name and the fields of the event, from one table.
    fn parts(&self) -> (&'static str, Value) {
        match self {
            Self::CompactionStart { reason } => {
                ("compaction_start", json!({"reason": reason.name()}))
            }
            Self::CompactionEnd {
                reason,
                result,
                aborted,
                will_retry,
                error_message,
            } => {
                let mut v =
                    json!({"reason": reason.name(), "aborted": aborted, "willRetry": will_retry});
                if let Some(r) = result {
                    v["result"] = r.to_json();
                }
                if let Some(m) = error_message {
                    v["errorMessage"] = m.as_str().into();
                }
                ("compaction_end", v)
            }
            Self::ContextPromotion {
                reason,
                from_model,
                target,
            } => {
                let mut v = target.to_json();
                v["reason"] = reason.name().into();
                v["fromModel"] = json!(from_model);
                ("context_promotion", v)
            }
            Self::TreeStart {
                target_id,
                summarize,
            } => (
                "tree_start",
                json!({"targetId": target_id, "summarize": summarize}),
            ),
            Self::TreeEnd {
                old_leaf_id,
                new_leaf_id,
                summary_entry_id,
                aborted,
                error_message,
            } => {
                let mut v = json!({
                    "oldLeafId": old_leaf_id,
                    "newLeafId": new_leaf_id,
                    "aborted": aborted,
                });
                if let Some(id) = summary_entry_id {
                    v["summaryEntryId"] = id.as_str().into();
                }
                if let Some(m) = error_message {
                    v["errorMessage"] = m.as_str().into();
                }
                ("tree_end", v)
            }
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
    fn events_render_as_protocol_json() {
        let start = MaintenanceEvent::CompactionStart {
            reason: Reason::Overflow,
        };
        assert_eq!(
            start.to_json().to_string(),
            r#"{"type":"compaction_start","reason":"overflow"}"#
        );
        let end = MaintenanceEvent::CompactionEnd {
            reason: Reason::Threshold,
            result: None,
            aborted: false,
            will_retry: false,
            error_message: Some("Auto-compaction failed: boom".into()),
        };
        assert_eq!(
            end.to_json().to_string(),
            r#"{"type":"compaction_end","reason":"threshold","aborted":false,"willRetry":false,"errorMessage":"Auto-compaction failed: boom"}"#
        );
        assert_eq!(
            (start.name(), end.name()),
            ("compaction_start", "compaction_end")
        );
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
