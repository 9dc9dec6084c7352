//! What the maintenance runtime says, as documents: a decision, a
//! finished compaction, a context promotion, a navigation, the events, and
//! the provider messages of the context they carry.

use musepi_runtime::context::{LlmMessage, ProviderHistory};
use musepi_runtime::{CompactionReport, Decision, MaintenanceEvent, PromotionTarget, TreeOutcome};
use musepi_session_model::EntryId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

fn id(e: Option<&EntryId>) -> Option<String> {
    e.map(ToString::to_string)
}

/// A finished compaction: the `compaction` of a decision and the `result`
/// of `compaction_end`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionDoc {
    /// How it was made: `snapcompact`, `llm` or `handoff`.
    pub strategy: &'static str,
    /// The compaction entry; null for a handoff, which writes none.
    pub entry_id: Option<String>,
    /// The summary (or the handoff document).
    pub summary: String,
    /// The one-line summary for a user interface.
    pub short_summary: Option<String>,
    /// The first entry kept verbatim; null for a handoff.
    pub first_kept_entry_id: Option<String>,
    /// pi's estimate of the context before it.
    pub tokens_before: u64,
    /// The context's tokens right after it.
    pub tokens_after: u64,
    /// A hook supplied it.
    pub from_extension: bool,
    /// The new session a handoff wrote; null otherwise.
    pub session_file: Option<String>,
}

impl From<&CompactionReport> for CompactionDoc {
    fn from(r: &CompactionReport) -> Self {
        Self {
            strategy: r.strategy.name(),
            entry_id: id(r.entry_id.as_ref()),
            summary: r.summary.clone(),
            short_summary: r.short_summary.clone(),
            first_kept_entry_id: id(r.first_kept_entry_id.as_ref()),
            tokens_before: r.tokens_before,
            tokens_after: r.tokens_after,
            from_extension: r.from_extension,
            session_file: r.session_file.as_ref().map(|p| p.display().to_string()),
        }
    }
}

/// A larger-context model: one of the `promotionTargets` an agent offers
/// (`open`), and the model a promotion switched to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromotionDoc {
    /// The provider name, as in a `model_change` entry.
    pub provider: String,
    /// The model id, as in a `model_change` entry.
    pub model_id: String,
    /// Its context window in tokens (above 0).
    pub context_window: u64,
}

impl From<&PromotionTarget> for PromotionDoc {
    fn from(t: &PromotionTarget) -> Self {
        Self {
            provider: t.provider.clone(),
            model_id: t.model_id.clone(),
            context_window: t.context_window,
        }
    }
}

/// What the agent loop does next, the answer of `afterAssistant`,
/// `beforeRequest`, `idle` and `compact`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionDoc {
    /// `none`, `compacted`, `retry`, `warn`, `skipped`, `promoted`,
    /// `failed` or `aborted`.
    pub action: &'static str,
    /// Why maintenance ran: `overflow`, `incomplete`, `threshold`,
    /// `manual`, `idle` or `mid_turn`; null when nothing was due.
    pub reason: Option<&'static str>,
    /// Send the failed request again (after dropping the failing assistant
    /// from the live messages when `removeLastAssistant`).
    pub retry: bool,
    /// Drop the last assistant message from the live messages.
    pub remove_last_assistant: bool,
    /// Go on with another request without waiting for the user.
    #[serde(rename = "continue")]
    pub continue_turn: bool,
    /// The developer prompt to send with that request, if any.
    pub continue_prompt: Option<String>,
    /// What to tell the user.
    pub warning: Option<String>,
    /// Why it failed, for the user.
    pub error: Option<String>,
    /// The compaction it made.
    pub compaction: Option<CompactionDoc>,
    /// The model it switched to instead of compacting.
    pub promotion: Option<PromotionDoc>,
    /// The context to send from now on, when it changed.
    pub context: Option<Vec<LlmMessageDoc>>,
    /// Warnings about the session file this call caused (a rewrite that
    /// outlasted another process's open file).
    pub notes: Vec<String>,
}

impl From<&Decision> for DecisionDoc {
    fn from(d: &Decision) -> Self {
        Self {
            action: d.outcome.name(),
            reason: d.reason.map(musepi_runtime::compaction::Reason::name),
            retry: d.retry,
            remove_last_assistant: d.remove_last_assistant,
            continue_turn: d.continue_turn,
            continue_prompt: d.continue_prompt.clone(),
            warning: d.warning.clone(),
            error: d.error.clone(),
            compaction: d.compaction.as_ref().map(CompactionDoc::from),
            promotion: d.promotion.as_ref().map(PromotionDoc::from),
            context: d
                .context
                .as_ref()
                .map(|c| c.iter().map(LlmMessageDoc::from).collect()),
            notes: d.notes.clone(),
        }
    }
}

/// The answer of `afterAssistant`: the decision, and the assistant entry
/// it was about.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AfterAssistantDoc {
    /// The decision, its fields at the top level.
    #[serde(flatten)]
    pub decision: DecisionDoc,
    /// The entry given, or the one `message` was appended as; null for the
    /// last assistant message on the path.
    pub entry_id: Option<String>,
}

/// What a navigation did, the answer of `navigate`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeDoc {
    /// A hook cancelled it or the abort signal fired.
    pub cancelled: bool,
    /// The target was already the leaf: nothing changed.
    pub no_op: bool,
    /// The leaf before.
    pub old_leaf_id: Option<String>,
    /// The leaf after.
    pub new_leaf_id: Option<String>,
    /// The branch summary entry written.
    pub summary_entry_id: Option<String>,
    /// The branch summary's text.
    pub summary: Option<String>,
    /// The text of a user message navigated to, for the editor.
    pub editor_text: Option<String>,
    /// The entries of the branch left, oldest first.
    pub abandoned: Vec<String>,
    /// The label entry written for the navigation, if any.
    pub marker_entry_id: Option<String>,
    /// The context at the new leaf.
    pub context: Vec<LlmMessageDoc>,
    /// Warnings (a branch summary that could not be written, a hook's).
    pub notes: Vec<String>,
}

impl From<&TreeOutcome> for TreeDoc {
    fn from(t: &TreeOutcome) -> Self {
        let n = &t.navigation;
        Self {
            cancelled: t.cancelled,
            no_op: n.no_op,
            old_leaf_id: id(n.old_leaf.as_ref()),
            new_leaf_id: id(n.new_leaf.as_ref()),
            summary_entry_id: id(n.summary_entry.as_ref()),
            summary: n.summary.as_ref().map(|s| s.summary.as_str().to_owned()),
            editor_text: n.editor_text().map(str::to_owned),
            abandoned: n.abandoned.iter().map(ToString::to_string).collect(),
            marker_entry_id: id(t.marker_entry_id.as_ref()),
            context: t.context.iter().map(LlmMessageDoc::from).collect(),
            notes: n.warnings.clone(),
        }
    }
}

/// Something the runtime reports while it works, written as
/// `{"event": {...}}` before the answer of the request that caused it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum EventDoc {
    /// Before any work of a compaction.
    CompactionStart {
        /// Why it runs.
        reason: &'static str,
    },
    /// After a compaction, or its failure.
    CompactionEnd {
        /// Why it ran.
        reason: &'static str,
        /// A hook cancelled it or the abort signal fired.
        aborted: bool,
        /// The failed request will be retried.
        will_retry: bool,
        /// What it made, when it succeeded.
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<CompactionDoc>,
        /// What went wrong.
        #[serde(skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
    },
    /// The runtime switched to a larger-context model instead of
    /// compacting (a `model_change` entry records it).
    ContextPromotion {
        /// The provider now.
        provider: String,
        /// The model now.
        model_id: String,
        /// Its context window.
        context_window: u64,
        /// Why a compaction was due.
        reason: &'static str,
        /// The model before, `provider/modelId`, when known.
        from_model: Option<String>,
    },
    /// Before a navigation.
    TreeStart {
        /// The target; null for before the first entry.
        target_id: Option<String>,
        /// Whether the branch left is summarized.
        summarize: bool,
    },
    /// After a navigation, or its failure.
    TreeEnd {
        /// The leaf before.
        old_leaf_id: Option<String>,
        /// The leaf after.
        new_leaf_id: Option<String>,
        /// A hook cancelled it or the abort signal fired.
        aborted: bool,
        /// The branch summary written.
        #[serde(skip_serializing_if = "Option::is_none")]
        summary_entry_id: Option<String>,
        /// What went wrong.
        #[serde(skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
    },
}

impl EventDoc {
    /// The document of `event`; `None` for an event this version of the
    /// protocol does not name (the runtime may add kinds).
    pub fn of(event: &MaintenanceEvent) -> Option<Self> {
        Some(match event {
            MaintenanceEvent::CompactionStart { reason } => Self::CompactionStart {
                reason: reason.name(),
            },
            MaintenanceEvent::CompactionEnd {
                reason,
                result,
                aborted,
                will_retry,
                error_message,
            } => Self::CompactionEnd {
                reason: reason.name(),
                aborted: *aborted,
                will_retry: *will_retry,
                result: result.as_ref().map(CompactionDoc::from),
                error_message: error_message.clone(),
            },
            MaintenanceEvent::ContextPromotion {
                reason,
                from_model,
                target,
            } => Self::ContextPromotion {
                provider: target.provider.clone(),
                model_id: target.model_id.clone(),
                context_window: target.context_window,
                reason: reason.name(),
                from_model: from_model.clone(),
            },
            MaintenanceEvent::TreeStart {
                target_id,
                summarize,
            } => Self::TreeStart {
                target_id: target_id.clone(),
                summarize: *summarize,
            },
            MaintenanceEvent::TreeEnd {
                old_leaf_id,
                new_leaf_id,
                summary_entry_id,
                aborted,
                error_message,
            } => Self::TreeEnd {
                old_leaf_id: old_leaf_id.clone(),
                new_leaf_id: new_leaf_id.clone(),
                aborted: *aborted,
                summary_entry_id: summary_entry_id.clone(),
                error_message: error_message.clone(),
            },
            _ => return None,
        })
    }
}

/// An event line: `{"event": {"type", ...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct EventLine {
    /// The event.
    pub event: EventDoc,
}

/// A provider message of the context, as `musepi context --llm --json`
/// lists them and the runtime's answers carry them.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LlmMessageDoc {
    /// `user`, `assistant`, `toolResult` or `developer`.
    pub role: &'static str,
    /// The content blocks as pi stores them (`text`, `thinking`, `image`,
    /// `toolCall`).
    #[schemars(with = "Vec<serde_json::Map<String, Value>>")]
    pub content: Value,
    /// A provider's native compaction history, for that provider only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_payload: Option<ProviderPayloadDoc>,
    /// With `providerPayload`: the messages of the entries kept after
    /// that history, which the items already contain and every other
    /// provider is sent after the summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_messages: Option<Vec<LlmMessageDoc>>,
    /// What only some roles carry.
    #[serde(flatten)]
    pub role_fields: RoleFields,
}

/// A provider's native compaction history carried by a message.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ProviderPayloadDoc {
    /// `openaiResponsesHistory`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The provider that stored it, the only one that is sent the items.
    pub provider: String,
    /// The provider's native input items.
    pub items: Vec<Value>,
}

/// The fields of a tool result or an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub enum RoleFields {
    /// A tool result.
    ToolResult {
        /// The call it answers.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The tool failed.
        is_error: bool,
    },
    /// An assistant message.
    Assistant {
        /// Its provider, when recorded.
        provider: Option<String>,
        /// Its model, when recorded.
        model: Option<String>,
        /// Why it stopped, when recorded.
        stop_reason: Option<String>,
    },
    /// Any other role.
    None {},
}

impl From<&LlmMessage> for LlmMessageDoc {
    fn from(m: &LlmMessage) -> Self {
        let history = m.provider_history();
        let provider_payload = history.map(|h| ProviderPayloadDoc {
            kind: ProviderHistory::TYPE,
            provider: h.provider.clone(),
            items: h.items.clone(),
        });
        let kept_messages = history.map(|h| h.kept.iter().map(Self::from).collect());
        let role_fields = match m {
            LlmMessage::ToolResult {
                tool_call_id,
                tool_name,
                is_error,
                ..
            } => RoleFields::ToolResult {
                tool_call_id: tool_call_id.as_str().to_owned(),
                tool_name: tool_name.as_str().to_owned(),
                is_error: *is_error,
            },
            LlmMessage::Assistant {
                provider,
                model,
                stop_reason,
                ..
            } => RoleFields::Assistant {
                provider: provider.clone(),
                model: model.clone(),
                stop_reason: stop_reason.as_ref().map(|r| r.as_str().to_owned()),
            },
            _ => RoleFields::None {},
        };
        Self {
            role: m.role(),
            content: serde_json::to_value(m.content()).unwrap_or(Value::Null),
            provider_payload,
            kept_messages,
            role_fields,
        }
    }
}
