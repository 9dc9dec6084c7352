//! The JSON shapes of `musepi serve`: decisions, navigations, contexts and
//! plans out; appended entries in.

use std::path::Path;

use musepi_runtime::{Decision, TreeOutcome};
use musepi_session_model::{EntryBody, EntryId, SequentialIds, load_bytes};
use serde_json::{Map, Value, json};

use crate::commands::context::llm_json;

fn ids(list: &[EntryId]) -> Vec<&str> {
    list.iter().map(EntryId::as_str).collect()
}

/// A decision of the maintenance runtime.
pub(super) fn decision_json(d: &Decision) -> Value {
    json!({
        "action": d.outcome.name(),
        "reason": d.reason.map(musepi_compaction::Reason::name),
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
pub(super) fn tree_json(t: &TreeOutcome) -> Value {
    json!({
        "cancelled": t.cancelled,
        "noOp": t.no_op,
        "oldLeafId": t.old_leaf_id.as_ref().map(EntryId::as_str),
        "newLeafId": t.new_leaf_id.as_ref().map(EntryId::as_str),
        "summaryEntryId": t.summary_entry_id.as_ref().map(EntryId::as_str),
        "summary": t.summary,
        "editorText": t.editor_text,
        "abandoned": ids(&t.abandoned),
        "markerEntryId": t.marker_entry_id.as_ref().map(EntryId::as_str),
        "context": t.context.iter().map(llm_json).collect::<Vec<_>>(),
        "notes": t.notes,
    })
}

/// Entry types a client may append; compactions and branch summaries are
/// written by `compact` and `navigate`.
const APPENDABLE: [&str; 7] = [
    "message",
    "model_change",
    "thinking_level_change",
    "custom_message",
    "custom",
    "label",
    "session_info",
];

/// Reads one entry to append (`{"type": …, …fields}`) with the session
/// format's own reader; `id`, `parentId` and `timestamp` are assigned on append.
pub(super) fn entry_body(entry: &Value) -> Result<EntryBody, String> {
    let Value::Object(fields) = entry else {
        return Err("an entry is a JSON object with a `type`".to_owned());
    };
    let kind = fields
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !APPENDABLE.contains(&kind) {
        return Err(format!(
            "cannot append an entry of type `{kind}`; expected one of {}",
            APPENDABLE.join(", ")
        ));
    }
    let mut line = Map::new();
    line.insert("id".into(), "00000000".into());
    line.insert("parentId".into(), Value::Null);
    line.insert("timestamp".into(), "1970-01-01T00:00:00.000Z".into());
    for (k, v) in fields {
        if !matches!(k.as_str(), "id" | "parentId" | "timestamp") {
            line.insert(k.clone(), v.clone());
        }
    }
    let text = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"append\",\"timestamp\":\"1970-01-01T00:00:00.000Z\",\"cwd\":\"/\"}}\n{}\n",
        Value::Object(line)
    );
    let session = load_bytes(
        Path::new("<append>"),
        text.as_bytes(),
        &mut SequentialIds::new(),
    )
    .map_err(|e| e.to_string())?;
    // What the entry names is checked against the open session when it is
    // appended; here only the entry itself.
    if let Some(p) = session.problems().iter().find(|p| !p.kind.is_about_links()) {
        return Err(format!("invalid `{kind}` entry: {}", p.kind));
    }
    match session.entries().first() {
        Some(e) => Ok(e.body.clone()),
        None => Err(format!("invalid `{kind}` entry")),
    }
}
