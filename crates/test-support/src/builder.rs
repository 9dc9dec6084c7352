//! Generated sessions for scenarios whose sizes matter more than their
//! words (long tool outputs, thousands of characters of filler): entries
//! are written as JSONL lines, exactly like a file, and loaded with the
//! normal loader.
//!
//! Ids are `00000001`, `00000002`, … in order; each entry is one second
//! after the previous one, starting at 2025-01-01T00:00:00Z.

use std::path::Path;

use musepi_session_model::time::format_iso;
use musepi_session_model::{SequentialIds, Session, load_bytes};
use serde_json::{Map, Value, json};

const START_MS: i64 = 1_735_689_600_000;

/// A session being written line by line.
#[derive(Debug, Clone)]
pub struct SessionBuilder {
    lines: Vec<String>,
    next_id: u32,
    leaf: Option<String>,
    now: i64,
}

impl Default for SessionBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl SessionBuilder {
    /// An empty v3 session.
    pub fn new() -> Self {
        let header = json!({"type": "session", "version": 3, "id": "generated", "timestamp": format_iso(START_MS), "cwd": "/repo"});
        Self {
            lines: vec![header.to_string()],
            next_id: 0,
            leaf: None,
            now: START_MS,
        }
    }

    /// Appends an entry of type `ty` with `fields` under the current leaf
    /// and returns its id.
    pub fn entry(&mut self, ty: &str, fields: Value) -> String {
        self.next_id += 1;
        self.now += 1000;
        let id = format!("{:08x}", self.next_id);
        let mut m = Map::new();
        m.insert("type".into(), ty.into());
        m.insert("id".into(), id.clone().into());
        m.insert(
            "parentId".into(),
            self.leaf.clone().map_or(Value::Null, Value::String),
        );
        m.insert("timestamp".into(), format_iso(self.now).into());
        if let Value::Object(fields) = fields {
            m.extend(fields);
        }
        self.lines.push(Value::Object(m).to_string());
        self.leaf = Some(id.clone());
        id
    }

    /// Appends a `message` entry; the message gets the entry's time.
    pub fn message(&mut self, mut message: Value) -> String {
        message["timestamp"] = json!(self.now + 1000);
        self.entry("message", json!({ "message": message }))
    }

    /// A user message with string content.
    pub fn user(&mut self, text: &str) -> String {
        self.message(json!({"role": "user", "content": text}))
    }

    /// An assistant message with these blocks, `toolUse` when it calls a
    /// tool and `stop` otherwise, with `(input, output)` usage if given.
    pub fn assistant(&mut self, blocks: &[Value], usage: Option<(u64, u64)>) -> String {
        let stop = if blocks.iter().any(|b| b["type"] == "toolCall") {
            "toolUse"
        } else {
            "stop"
        };
        let mut m = json!({"role": "assistant", "content": blocks, "api": "anthropic-messages",
            "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": stop});
        if let Some((input, output)) = usage {
            m["usage"] = json!({"input": input, "output": output, "cacheRead": 0, "cacheWrite": 0,
                "totalTokens": input + output});
        }
        self.message(m)
    }

    /// A successful tool result with one text block.
    pub fn tool_result(&mut self, call_id: &str, tool: &str, text: &str) -> String {
        self.tool_result_with(call_id, tool, text, &json!({}))
    }

    /// A tool result with one text block and extra message fields
    /// (`isError`, `useless`, `prunedAt`).
    pub fn tool_result_with(
        &mut self,
        call_id: &str,
        tool: &str,
        text: &str,
        extra: &Value,
    ) -> String {
        let mut m = json!({"role": "toolResult", "toolCallId": call_id, "toolName": tool,
            "content": [text_block(text)], "isError": false});
        if let (Value::Object(m), Value::Object(extra)) = (&mut m, extra) {
            m.extend(extra.clone());
        }
        self.message(m)
    }

    /// Moves the leaf: the next entry hangs under `id`.
    pub fn set_leaf(&mut self, id: &str) {
        self.leaf = Some(id.to_owned());
    }

    /// The JSONL text written so far.
    pub fn jsonl(&self) -> String {
        let mut out = self.lines.join("\n");
        out.push('\n');
        out
    }

    /// Loads the lines as a session (leaf: the last line).
    pub fn build(&self) -> Session {
        load_bytes(
            Path::new("generated.jsonl"),
            self.jsonl().as_bytes(),
            &mut SequentialIds::new(),
        )
        .unwrap_or_else(|e| panic!("generated session: {e}"))
    }
}

/// A text block.
pub fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// A tool-call block.
pub fn tool_call(id: &str, name: &str, arguments: &Value) -> Value {
    json!({"type": "toolCall", "id": id, "name": name, "arguments": arguments})
}

/// A session from `(id, parent, entry fields)` triples, entry `i` at
/// 00:00:`i + 1` on 2025-01-01, loaded with the normal loader; the leaf is
/// the last entry.
pub fn session_of(entries: &[(&str, Option<&str>, Value)]) -> Session {
    let mut text = json!({"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}).to_string();
    for (i, (id, parent, fields)) in entries.iter().enumerate() {
        let mut e = json!({"id": id, "parentId": parent, "timestamp": format!("2025-01-01T00:00:{:02}.000Z", i + 1)});
        if let (Value::Object(e), Value::Object(f)) = (&mut e, fields) {
            e.extend(f.clone());
        }
        text.push('\n');
        text.push_str(&e.to_string());
    }
    text.push('\n');
    load_bytes(
        Path::new("t.jsonl"),
        text.as_bytes(),
        &mut SequentialIds::new(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// One user message entry as a JSONL line with the `id` and `parent` given,
/// at 00:00:01 on 2025-01-01: for files a builder would not write
/// (dangling parents, duplicate ids, an entry its own parent).
pub fn message_line(id: &str, parent: Option<&str>, text: &str) -> String {
    let (id, parent, text) = (json!(id), json!(parent), json!(text));
    format!(
        r#"{{"type":"message","id":{id},"parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":{text},"timestamp":1}}}}"#
    )
}
