//! Sessions the view tests write themselves (our own content): a session
//! with an LLM compaction and a side branch, one whose latest compaction
//! holds a snapcompact text archive, and one with PNG frames.

#![allow(dead_code, clippy::unwrap_used, clippy::needless_pass_by_value)]

use std::fmt::Write as _;
use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use musepi_cli::view::keys::update;
use musepi_cli::view::{App, Effect, Input, Strategies, snapshot};
use musepi_session_model::{SequentialIds, Session, load_bytes};
use serde_json::{Value, json};

/// One JSONL line per value.
fn jsonl(lines: &[Value]) -> String {
    let mut out = String::new();
    for l in lines {
        out.push_str(&l.to_string());
        out.push('\n');
    }
    out
}

fn header(id: &str) -> Value {
    json!({"type": "session", "version": 3, "id": id, "timestamp": "2025-04-01T10:00:00.000Z", "cwd": "/home/dev/tokenizer"})
}

fn time(n: u32) -> String {
    format!("2025-04-01T10:{:02}:{:02}.000Z", n / 60, n % 60)
}

fn ms(n: u32) -> u64 {
    1_743_501_600_000 + u64::from(n) * 1000
}

/// A user message entry.
pub(crate) fn user(id: &str, parent: Option<&str>, n: u32, text: &str) -> Value {
    json!({"type": "message", "id": id, "parentId": parent, "timestamp": time(n),
        "message": {"role": "user", "content": text, "timestamp": ms(n)}})
}

/// An assistant message entry with these content blocks.
pub(crate) fn assistant(id: &str, parent: Option<&str>, n: u32, content: Value) -> Value {
    json!({"type": "message", "id": id, "parentId": parent, "timestamp": time(n),
        "message": {"role": "assistant", "content": content, "api": "anthropic-messages",
            "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop", "timestamp": ms(n)}})
}

/// A tool result entry.
pub(crate) fn tool_result(
    id: &str,
    parent: &str,
    n: u32,
    call: &str,
    tool: &str,
    text: &str,
) -> Value {
    json!({"type": "message", "id": id, "parentId": parent, "timestamp": time(n),
        "message": {"role": "toolResult", "toolCallId": call, "toolName": tool,
            "content": [{"type": "text", "text": text}], "isError": false, "timestamp": ms(n)}})
}

/// A compaction entry.
pub(crate) fn compaction(id: &str, parent: &str, n: u32, fields: Value) -> Value {
    let mut v = json!({"type": "compaction", "id": id, "parentId": parent, "timestamp": time(n)});
    if let (Some(o), Value::Object(extra)) = (v.as_object_mut(), fields) {
        o.extend(extra);
    }
    v
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// The opening of every fixture: a request, a read, an answer, then a side
/// branch from the answer that the main line leaves behind.
fn opening() -> Vec<Value> {
    vec![
        user(
            "e1",
            None,
            1,
            "Port the tokenizer from Python to Rust; keep the public API.",
        ),
        assistant(
            "e2",
            Some("e1"),
            2,
            json!([
                {"type": "thinking", "thinking": "The Python module is tokenize.py.\nRead it before writing any Rust."},
                text("Reading the Python module first."),
                {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "py/tokenize.py"}}
            ]),
        ),
        tool_result(
            "e3",
            "e2",
            3,
            "call_1",
            "read",
            "def tokenize(text):\n    return text.split()\n",
        ),
        assistant(
            "e4",
            Some("e3"),
            4,
            json!([text(
                "The Python tokenizer splits on whitespace. Writing src/lib.rs next."
            )]),
        ),
        user(
            "b1",
            Some("e4"),
            5,
            "What about a regex-based tokenizer instead?",
        ),
        assistant(
            "b2",
            Some("b1"),
            6,
            json!([text(
                "A regex version is three times slower; the hand-written one stays."
            )]),
        ),
        user(
            "e5",
            Some("e4"),
            7,
            "Also split punctuation into its own tokens.",
        ),
        assistant(
            "e6",
            Some("e5"),
            8,
            json!([text(
                "Punctuation now becomes separate tokens; 12 tests pass."
            )]),
        ),
        json!({"type": "label", "id": "l1", "parentId": "e6", "timestamp": time(9), "targetId": "e4", "label": "python-read"}),
    ]
}

/// The main line after a compaction `c`: a benchmark request, a bash call
/// and its result, an answer (the leaf, `e10`).
fn after(c: &str) -> Vec<Value> {
    vec![
        user("e7", Some(c), 21, "Add a benchmark for a 1 MB input."),
        assistant(
            "e8",
            Some("e7"),
            22,
            json!([
                {"type": "toolCall", "id": "call_2", "name": "bash", "arguments": {"command": "cargo bench tokenize_1mb"}}
            ]),
        ),
        tool_result(
            "e9",
            "e8",
            23,
            "call_2",
            "bash",
            "tokenize_1mb  time: [2.1 ms 2.2 ms 2.3 ms]\nfound 3 outliers",
        ),
        assistant(
            "e10",
            Some("e9"),
            24,
            json!([text("The 1 MB benchmark runs in 2.2 ms.")]),
        ),
    ]
}

/// A session `id`: the opening, the `compactions` (the last one `c1`),
/// then the main line after `c1`.
fn with_compactions(id: &str, compactions: impl IntoIterator<Item = Value>) -> String {
    let mut lines = vec![header(id)];
    lines.extend(opening());
    lines.extend(compactions);
    lines.extend(after("c1"));
    jsonl(&lines)
}

/// An LLM compaction `c1` after `e6`, keeping from `e5`.
pub(crate) fn compacted() -> String {
    with_compactions(
        "view-llm",
        [compaction(
            "c1",
            "l1",
            20,
            json!({
                "summary": "## Goal\nPort the tokenizer to Rust with the same public API.\n\n## Progress\n- [x] whitespace splitting\n- [x] punctuation tokens\n\n## Next Steps\n1. Benchmarks",
                "firstKeptEntryId": "e5",
                "tokensBefore": 18432
            }),
        )],
    )
}

/// [`compacted`], its entry recording how it was made and the context
/// after it, as oh-my-pi's and musepi's entries do.
pub(crate) fn compacted_with_method() -> String {
    with_compactions(
        "view-method",
        [compaction(
            "c1",
            "l1",
            20,
            json!({
                "summary": "## Goal\nPort the tokenizer to Rust.",
                "firstKeptEntryId": "e5",
                "tokensBefore": 31315,
                "method": "snapcompact",
                "tokensAfter": 24005
            }),
        )],
    )
}

/// A text archive of `chars` ASCII characters: lines of history.
fn archive_text(chars: usize) -> String {
    let mut s = String::new();
    let mut n = 0;
    while s.len() < chars {
        n += 1;
        let _ = writeln!(s, "user: step {n}: split the input and count the tokens");
    }
    s.truncate(chars);
    s
}

/// An LLM compaction `c0` (superseded), then a snapcompact compaction
/// `c1` holding a 20,000-character text archive (two pages).
pub(crate) fn snapcompact_pages() -> String {
    with_compactions(
        "view-pages",
        [
            compaction(
                "c0",
                "l1",
                10,
                json!({
                    "summary": "## Goal\nPort the tokenizer.", "firstKeptEntryId": "e5", "tokensBefore": 9000
                }),
            ),
            compaction(
                "c1",
                "c0",
                20,
                json!({
                    "summary": "Resume the prior conversation: it is archived below as text pages, oldest first.\n\nReading guide: ¶user: marks the user.",
                    "shortSummary": "archived history into 2 text frames",
                    "firstKeptEntryId": "e5",
                    "tokensBefore": 24576,
                    "details": {"readFiles": ["py/tokenize.py"], "modifiedFiles": [],
                        "snapcompact": {"text": archive_text(20_000), "truncatedChars": 1500, "version": 1}}
                }),
            ),
        ],
    )
}

fn frame(cols: u32, rows: u32, chars: u64, font: &str, variant: &str) -> Value {
    json!({"data": "iVBORw0KGgoAAAANSUhEUg==", "mimeType": "image/png", "cols": cols, "rows": rows,
        "chars": chars, "font": font, "variant": variant, "lineRepeat": 1, "detail": "original",
        "shape": format!("{font}-{variant}")})
}

/// A snapcompact compaction `c1` holding three PNG frames of two shapes.
pub(crate) fn snapcompact_frames() -> String {
    with_compactions(
        "view-frames",
        [compaction(
            "c1",
            "l1",
            20,
            json!({
                "summary": "Resume the prior conversation: earlier turns are archived below under HISTORY as images.",
                "shortSummary": "Archived 31,234 chars of history onto 3 snapcompact frames",
                "firstKeptEntryId": "e5",
                "tokensBefore": 40960,
                "details": {"readFiles": [], "modifiedFiles": ["src/lib.rs"]},
                "preserveData": {"snapcompact": {
                    "frames": [frame(142, 98, 13_916, "8x13", "bw"), frame(142, 98, 13_802, "8x13", "bw"), frame(96, 40, 1_516, "6x13", "sent")],
                    "totalChars": 31_234, "truncatedChars": 0,
                    "textHead": "¶user:Port the tokenizer", "textTail": "¶ai:Punctuation now becomes separate tokens."
                }}
            }),
        )],
    )
}

/// Reads a fixture.
pub(crate) fn session(text: &str) -> Session {
    let session = load_bytes(
        Path::new("fixture.jsonl"),
        text.as_bytes(),
        &mut SequentialIds::new(),
    )
    .unwrap();
    assert!(session.problems().is_empty(), "{:?}", session.problems());
    session
}

/// The view of the fixture `jsonl` as `session.jsonl` in a terminal of
/// `width`×`height`, with the strategies of settings that name no provider.
pub(crate) fn app(jsonl: &str, width: u16, height: u16) -> App {
    let strategies = Strategies {
        compact: "snapcompact".to_owned(),
        compact_with_instructions: "llm (no provider configured)".to_owned(),
        branch: "the snapcompact digest (no model)".to_owned(),
    };
    App::new(
        "session.jsonl".to_owned(),
        snapshot(&session(jsonl)),
        strategies,
        (width, height),
    )
}

/// Presses `code`.
pub(crate) fn press(app: &mut App, code: KeyCode) -> Option<Effect> {
    update(app, Input::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

/// Presses ctrl+`c`.
pub(crate) fn ctrl(app: &mut App, c: char) -> Option<Effect> {
    update(
        app,
        Input::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)),
    )
}

/// Types `text`, one key a character; the effect of the last key.
pub(crate) fn typed(app: &mut App, text: &str) -> Option<Effect> {
    let mut last = None;
    for c in text.chars() {
        last = press(app, KeyCode::Char(c));
    }
    last
}

/// Opens the prompt of `key` (`/` or `:`), types `text` and presses Enter;
/// the effect of Enter.
pub(crate) fn enter_line(app: &mut App, key: char, text: &str) -> Option<Effect> {
    press(app, KeyCode::Char(key));
    typed(app, text);
    press(app, KeyCode::Enter)
}
