//! The entries `musepi serve` takes in: what a client may append, read
//! with the session format's own reader.

use std::path::Path;

use musepi_session_model::{EntryBody, load_bytes};
use serde_json::{Map, Value};

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
        &mut crate::ids::for_v1(),
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
