//! Sessions for unit tests, written as JSONL and loaded like a file.

// The helpers take `json!` temporaries by value so call sites read as data.
#![allow(clippy::needless_pass_by_value)]

use musepi_session_model::{SequentialIds, Session, load_bytes};
use serde_json::{Value, json};

/// One entry line: `body` holds `type` and the type's fields.
pub(crate) fn entry(id: &str, parent: Option<&str>, body: Value) -> Value {
    let mut line = json!({"id": id, "parentId": parent});
    if let (Value::Object(line), Value::Object(body)) = (&mut line, body) {
        line.extend(body);
    }
    line
}

/// Loads entry lines (timestamps are added, one second apart).
pub(crate) fn session_from(entries: Vec<Value>) -> Session {
    let mut text = String::from(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#,
    );
    for (i, mut e) in entries.into_iter().enumerate() {
        e["timestamp"] = json!(format!("2025-01-01T00:{:02}:{:02}.000Z", i / 60, i % 60));
        text.push('\n');
        text.push_str(&e.to_string());
    }
    text.push('\n');
    load_bytes(
        "test.jsonl".as_ref(),
        text.as_bytes(),
        &mut SequentialIds::new(),
    )
    .unwrap()
}

/// A tree of user messages whose text is their id.
pub(crate) fn tree(spec: &[(&str, Option<&str>)]) -> Session {
    session_from(spec.iter().map(|(id, p)| entry(id, *p, user(id))).collect())
}

/// A user message.
pub(crate) fn user(text: &str) -> Value {
    json!({"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}})
}

/// An assistant message with these content blocks.
pub(crate) fn assistant(content: Value) -> Value {
    json!({"type": "message", "message": {"role": "assistant", "content": content, "stopReason": "toolUse", "timestamp": 1}})
}

/// A tool-call block.
pub(crate) fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"type": "toolCall", "id": id, "name": name, "arguments": args})
}

/// A tool result with one text block.
pub(crate) fn result(call_id: &str, text: &str, useless: bool, is_error: bool) -> Value {
    json!({"type": "message", "message": {
        "role": "toolResult", "toolCallId": call_id, "toolName": "read",
        "content": [{"type": "text", "text": text}], "isError": is_error,
        "useless": useless, "timestamp": 1
    }})
}

/// A compaction entry.
pub(crate) fn compaction(summary: &str, details: Value) -> Value {
    json!({"type": "compaction", "summary": summary, "firstKeptEntryId": "x", "tokensBefore": 1, "details": details})
}

/// A branch summary entry.
pub(crate) fn branch_summary(summary: &str, details: Value, from_hook: bool) -> Value {
    json!({"type": "branch_summary", "fromId": "root", "summary": summary, "details": details, "fromHook": from_hook})
}

/// A custom message entry.
pub(crate) fn custom_message(text: &str) -> Value {
    json!({"type": "custom_message", "customType": "note", "content": text, "display": true})
}

/// A metadata entry.
pub(crate) fn thinking(level: &str) -> Value {
    json!({"type": "thinking_level_change", "thinkingLevel": level})
}
