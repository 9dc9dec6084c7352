//! What the maintenance runtime answers, as `musepi serve` writes it:
//! decisions and navigations.

use musepi_runtime::{Decision, TreeOutcome};
use musepi_session_model::EntryId;
use serde_json::{Value, json};

use crate::report::context::llm_json;

fn ids(list: &[EntryId]) -> Vec<&str> {
    list.iter().map(EntryId::as_str).collect()
}

/// A decision of the maintenance runtime.
pub(crate) fn decision_json(d: &Decision) -> Value {
    json!({
        "action": d.outcome.name(),
        "reason": d.reason.map(musepi_runtime::compaction::Reason::name),
        "retry": d.retry,
        "removeLastAssistant": d.remove_last_assistant,
        "continue": d.continue_turn,
        "continuePrompt": d.continue_prompt,
        "warning": d.warning,
        "error": d.error,
        "compaction": d.compaction.as_ref().map(musepi_runtime::CompactionReport::to_json),
        "promotion": d.promotion.as_ref().map(musepi_runtime::PromotionTarget::to_json),
        "context": d.context.as_ref().map(|c| c.iter().map(llm_json).collect::<Vec<_>>()),
        "notes": d.notes,
    })
}

/// What a navigation did.
pub(crate) fn tree_json(t: &TreeOutcome) -> Value {
    let n = &t.navigation;
    json!({
        "cancelled": t.cancelled,
        "noOp": n.no_op,
        "oldLeafId": n.old_leaf.as_ref().map(EntryId::as_str),
        "newLeafId": n.new_leaf.as_ref().map(EntryId::as_str),
        "summaryEntryId": n.summary_entry.as_ref().map(EntryId::as_str),
        "summary": n.summary.as_ref().map(|s| s.summary.as_str()),
        "editorText": n.editor_text(),
        "abandoned": ids(&n.abandoned),
        "markerEntryId": t.marker_entry_id.as_ref().map(EntryId::as_str),
        "context": t.context.iter().map(llm_json).collect::<Vec<_>>(),
        "notes": n.warnings,
    })
}
