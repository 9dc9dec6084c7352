//! Helpers shared by the session-model integration tests.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

use musepi_session_model::{
    Entry, EntryBody, EntryId, Header, Journal, SequentialIds, Session, SessionError, Stamp,
    load_bytes,
};
use serde_json::{Value, json};

/// A v3 header.
pub fn header() -> Header {
    Header::new("test-session", "2025-01-01T00:00:00.000Z", "/work")
}

/// The header line of a v3 file with session id `id`.
pub fn header_line(id: &str) -> String {
    format!(
        r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/work"}}"#
    )
}

/// The session of `text`, loaded from memory.
pub fn load_text(text: &str) -> Session {
    load_bytes(
        Path::new("s.jsonl"),
        text.as_bytes(),
        &mut SequentialIds::new(),
    )
    .expect("the text loads")
}

/// An entry body read from its JSON fields (`type` included), exactly as a
/// file would give it.
pub fn body(fields: Value) -> EntryBody {
    let mut line = fields;
    line["id"] = "x".into();
    line["parentId"] = Value::Null;
    line["timestamp"] = "2025-01-01T00:00:00.000Z".into();
    let s = load_text(&format!("{}\n{}\n", header_line("b"), line));
    let own: Vec<_> = s
        .problems()
        .iter()
        .filter(|p| !p.kind.is_about_links())
        .collect();
    assert!(own.is_empty(), "{own:?}");
    s.entries()[0].body.clone()
}

/// `user(t)`.
pub fn user(text: &str) -> EntryBody {
    body(json!({"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}))
}

/// `asst(t)`: one text block, provider anthropic, model claude-test.
pub fn asst(text: &str) -> EntryBody {
    body(json!({"type": "message", "message": {
        "role": "assistant", "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-test",
        "usage": usage_json(1, 1, 0, 0), "stopReason": "stop", "timestamp": 2}}))
}

/// A usage object with `totalTokens = i + o + cr + cw`.
pub fn usage_json(i: u64, o: u64, cr: u64, cw: u64) -> Value {
    json!({"input": i, "output": o, "cacheRead": cr, "cacheWrite": cw,
           "totalTokens": i + o + cr + cw,
           "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003}})
}

/// Deterministic ids and a clock that advances one second per entry.
pub struct Clock {
    pub ids: SequentialIds,
    pub now: i64,
}

impl Default for Clock {
    fn default() -> Self {
        Self {
            ids: SequentialIds::new(),
            now: 1_735_689_600_000,
        }
    }
}

impl Clock {
    /// The stamp for the next entry.
    pub fn stamp(&mut self) -> Stamp<'_> {
        self.now += 1000;
        Stamp {
            ids: &mut self.ids,
            now: self.now,
        }
    }
}

/// A new session of `N` messages, user and assistant in turn (the user's
/// first), with its clock and the messages' ids.
pub fn conversation<const N: usize>(texts: [&str; N]) -> (Session, Clock, [EntryId; N]) {
    let (mut s, mut c) = (Session::new(header()), Clock::default());
    let ids = std::array::from_fn(|i| {
        let message = if i % 2 == 0 {
            user(texts[i])
        } else {
            asst(texts[i])
        };
        s.append(message, &mut c.stamp())
    });
    (s, c, ids)
}

/// The text of a message entry (string content or joined text blocks).
pub fn text_of(e: &Entry) -> String {
    e.message()
        .map(|m| match m {
            musepi_session_model::AgentMessage::User(u) => u.content.joined_text(),
            musepi_session_model::AgentMessage::Assistant(a) => a.content.joined_text(),
            other => other.role().to_owned(),
        })
        .unwrap_or_default()
}

/// Ids of `entries`.
pub fn ids(entries: &[&Entry]) -> Vec<String> {
    entries.iter().map(|e| e.id.as_str().to_owned()).collect()
}

/// Writes `text` to `dir/name`.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write fixture");
    p
}

/// `text` in a file `name` of a temporary folder of its own; the folder and
/// the file go when the returned guard is dropped.
pub fn temp_file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write(dir.path(), name, text);
    (dir, path)
}

/// The journal of the session file at `path`, with sequential ids.
pub fn open(path: &Path) -> Journal {
    Journal::open(path, &mut SequentialIds::new()).expect("the session opens")
}

/// Why the session file at `path` does not open; a panic that names what
/// was read when it does open.
pub fn open_err(path: &Path) -> SessionError {
    match Journal::open(path, &mut SequentialIds::new()) {
        Ok(j) => panic!(
            "{} opened (v{}, {} entries)",
            path.display(),
            j.session().original_version(),
            j.session().len()
        ),
        Err(e) => e,
    }
}

/// A new session file `name` (the [`header`] only) in a temporary folder of
/// its own, with its path, a [`Clock`] and its journal.
pub fn created(name: &str) -> (tempfile::TempDir, PathBuf, Clock, Journal) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    let journal = Journal::create(&path, header()).expect("the session is created");
    (dir, path, Clock::default(), journal)
}

/// Each problem of `s` as its line and its kind's name, in file order.
pub fn problems(s: &Session) -> Vec<(u64, &'static str)> {
    s.problems()
        .iter()
        .map(|p| (p.line, p.kind.name()))
        .collect()
}
