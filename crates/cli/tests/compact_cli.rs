//! `musepi compact` end to end against a real HTTP server on 127.0.0.1: the
//! requests each provider receives, and that after every answer the file is
//! either correctly compacted or byte for byte what it was.

#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use serde_json::{Value, json};

const MUSEPI: &str = env!("CARGO_BIN_EXE_musepi");

#[derive(Clone)]
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
    delay: Duration,
}

impl Reply {
    fn json(status: u16, body: &Value) -> Self {
        Self::raw(status, &body.to_string())
    }
    fn raw(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
            delay: Duration::ZERO,
        }
    }
    fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }
    fn delayed(mut self, d: Duration) -> Self {
        self.delay = d;
        self
    }
}

/// One request: its path, JSON body and headers.
type Seen = (String, Value, Vec<(String, String)>);

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
}

async fn answer(State(script): State<Arc<Script>>, req: Request) -> Response {
    let path = req.uri().path().to_owned();
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                v.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let bytes = axum::body::to_bytes(req.into_body(), usize::MAX)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    script.seen.lock().unwrap().push((path, body, headers));
    let reply = script
        .replies
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| Reply::raw(500, "script exhausted"));
    tokio::time::sleep(reply.delay).await;
    let mut r = Response::builder()
        .status(reply.status)
        .header("content-type", "application/json");
    for (k, v) in &reply.headers {
        r = r.header(*k, v);
    }
    r.body(Body::from(reply.body)).unwrap()
}

async fn server(replies: Vec<Reply>) -> (String, Arc<Script>) {
    let script = Arc::new(Script {
        replies: Mutex::new(replies.into()),
        seen: Mutex::default(),
    });
    let app = axum::Router::new()
        .fallback(answer)
        .with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, script)
}

fn chat(text: &str) -> Reply {
    Reply::json(
        200,
        &json!({
            "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        }),
    )
}

/// The example session, copied to a temp dir.
fn session(dir: &Path) -> PathBuf {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions/todo-refactor.jsonl");
    let dst = dir.join("s.jsonl");
    std::fs::copy(src, &dst).unwrap();
    dst
}

/// A settings file with one provider entry.
fn settings(dir: &Path, entry: &Value) -> PathBuf {
    let path = dir.join("settings.json");
    std::fs::write(&path, json!({"providers": {"test": entry}}).to_string()).unwrap();
    path
}

async fn musepi(args: &[&str]) -> Output {
    tokio::process::Command::new(MUSEPI)
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("MUSEPI_API_KEY")
        .env("HOME", std::env::temp_dir())
        .output()
        .await
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

async fn compact_with(
    entry: Value,
    replies: Vec<Reply>,
) -> (Output, PathBuf, Vec<u8>, Arc<Script>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let before = std::fs::read(&file).unwrap();
    let (url, script) = server(replies).await;
    let mut entry = entry;
    let base = entry["baseUrl"]
        .as_str()
        .unwrap_or_default()
        .replace("{url}", &url);
    entry["baseUrl"] = Value::String(base);
    let settings = settings(dir.path(), &entry);
    let out = musepi(&[
        "compact",
        file.to_str().unwrap(),
        "--strategy",
        "llm",
        "--provider",
        "test",
        "--settings",
        settings.to_str().unwrap(),
        "--now",
        "2026-02-01T00:00:00.000Z",
        "--json",
    ])
    .await;
    (out, file, before, script, dir)
}

fn openai(timeout_ms: u64) -> Value {
    json!({"kind": "openai-compatible", "baseUrl": "{url}/v1", "model": "summarizer-1", "timeoutMs": timeout_ms, "maxRetries": 2})
}

fn last_entry(file: &Path) -> Value {
    let text = std::fs::read_to_string(file).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

#[tokio::test]
async fn an_openai_compatible_summary_is_written_and_the_requests_are_exact() {
    let (out, file, _, script, _dir) = compact_with(
        openai(10_000),
        vec![
            chat("## Goal\n- history"),
            chat("## Original Request\n- prefix"),
            chat("I moved the store to a log."),
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = script.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    for (path, body, headers) in &seen {
        assert_eq!(path, "/v1/chat/completions");
        assert_eq!(body["model"], "summarizer-1");
        assert_eq!(body["stream"], false);
        assert_eq!(body["messages"][0]["role"], "system");
        assert!(
            !headers.iter().any(|(k, _)| k == "authorization"),
            "no key was configured"
        );
    }
    let prompts: Vec<&str> = seen
        .iter()
        .map(|(_, b, _)| b["messages"][1]["content"].as_str().unwrap())
        .collect();
    let maxes: Vec<&Value> = seen.iter().map(|(_, b, _)| &b["max_tokens"]).collect();
    // History and turn prefix run concurrently; the short summary comes last.
    let history = prompts
        .iter()
        .position(|p| p.contains("checkpoint"))
        .unwrap();
    let prefix = prompts
        .iter()
        .position(|p| p.contains("## Original Request"))
        .unwrap();
    assert_eq!(*maxes[history], 13_107);
    assert_eq!(*maxes[prefix], 8_192);
    assert_eq!(*maxes[2], 512);
    assert!(prompts[2].contains("<previous-summary>"));
    let entry = last_entry(&file);
    assert_eq!(entry["type"], "compaction");
    let summary = entry["summary"].as_str().unwrap();
    assert!(
        summary.contains("**Turn Context (split turn):**"),
        "{summary}"
    );
    assert!(summary.contains("<files>\n# src/"), "{summary}");
    assert_eq!(entry["shortSummary"], "I moved the store to a log.");
    assert_eq!(entry["fromExtension"], false);
    assert_eq!(entry["usage"]["totalTokens"], 360);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["compacted"], true);
    assert_eq!(doc["entryId"], entry["id"]);
}

#[tokio::test]
async fn a_429_with_retry_after_and_a_500_are_retried() {
    let replies = vec![
        Reply::json(429, &json!({"error": {"message": "slow down"}})).header("retry-after", "1"),
        Reply::json(500, &json!({"error": {"message": "oops"}})),
        chat("## Goal\n- h"),
        chat("## Original Request\n- p"),
        chat("short"),
    ];
    let (out, file, _, script, _dir) = compact_with(openai(10_000), replies).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(script.seen.lock().unwrap().len(), 5);
    assert_eq!(last_entry(&file)["type"], "compaction");
}

async fn leaves_the_file_unchanged(entry: Value, replies: Vec<Reply>, message: &str) {
    let (out, file, before, _, _dir) = compact_with(entry, replies).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains(message), "{}", stderr(&out));
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[tokio::test]
async fn failures_leave_the_file_byte_for_byte() {
    let ok = || chat("## x");
    leaves_the_file_unchanged(
        openai(10_000),
        vec![Reply::raw(200, "{not json"), ok(), ok()],
        "unreadable response",
    )
    .await;
    leaves_the_file_unchanged(openai(10_000), vec![chat(""), ok(), ok()], "empty summary").await;
    let refusal = Reply::json(
        200,
        &json!({"choices": [{"message": {"role": "assistant", "content": "I can't"}, "finish_reason": "content_filter"}]}),
    );
    leaves_the_file_unchanged(openai(10_000), vec![refusal, ok(), ok()], "refused").await;
    let slow = || Reply::json(200, &json!({})).delayed(Duration::from_secs(5));
    let mut fast_fail = openai(300);
    fast_fail["maxRetries"] = json!(0);
    leaves_the_file_unchanged(fast_fail, vec![slow(), slow()], "could not be reached").await;
    let e401 = Reply::json(401, &json!({"error": {"message": "bad key"}}));
    leaves_the_file_unchanged(openai(10_000), vec![e401.clone(), e401], "bad key").await;
}

#[tokio::test]
async fn an_abort_mid_request_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let before = std::fs::read(&file).unwrap();
    let (url, script) = server(vec![
        chat("x").delayed(Duration::from_secs(30)),
        chat("x").delayed(Duration::from_secs(30)),
    ])
    .await;
    let mut entry = openai(60_000);
    entry["baseUrl"] = json!(format!("{url}/v1"));
    let settings = settings(dir.path(), &entry);
    let child = tokio::process::Command::new(MUSEPI)
        .args([
            "compact",
            file.to_str().unwrap(),
            "--strategy",
            "llm",
            "--provider",
            "test",
            "--settings",
            settings.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while script.seen.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = i32::try_from(child.id().unwrap()).unwrap();
    // SAFETY-free: kill(2) through the libc crate is a plain syscall wrapper.
    assert_eq!(unsafe_free_sigint(pid), 0);
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("Compaction cancelled"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

/// Sends SIGINT with the `kill` command (no unsafe code in this crate).
fn unsafe_free_sigint(pid: i32) -> i32 {
    let status = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    status.code().unwrap_or(-1)
}

#[tokio::test]
async fn anthropic_responses_and_the_remote_endpoint_write_summaries_too() {
    let anthropic_reply = |t: &str| {
        Reply::json(
            200,
            &json!({"content": [{"type": "text", "text": t}], "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}),
        )
    };
    let (out, file, _, script, _d) = compact_with(
        json!({"kind": "anthropic", "baseUrl": "{url}", "model": "claude-test"}),
        vec![
            anthropic_reply("## Goal\n- a"),
            anthropic_reply("## Original Request\n- b"),
            anthropic_reply("short a"),
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        script
            .seen
            .lock()
            .unwrap()
            .iter()
            .all(|(p, b, _)| p == "/v1/messages"
                && b["model"] == "claude-test"
                && b["system"].is_string())
    );
    assert_eq!(last_entry(&file)["shortSummary"], "short a");

    let responses_reply = |t: &str| {
        Reply::json(
            200,
            &json!({"output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t}]}], "status": "completed"}),
        )
    };
    let (out, file, _, script, _d) = compact_with(
        json!({"kind": "openai-responses", "baseUrl": "{url}/v1", "model": "gpt-test"}),
        vec![
            responses_reply("## Goal\n- r"),
            responses_reply("## Original Request\n- s"),
            responses_reply("short r"),
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        script
            .seen
            .lock()
            .unwrap()
            .iter()
            .all(|(p, b, _)| p == "/v1/responses" && b["instructions"].is_string())
    );
    assert_eq!(last_entry(&file)["shortSummary"], "short r");

    let remote = |t: &str| Reply::json(200, &json!({"summary": t}));
    let (out, file, _, script, _d) = compact_with(
        json!({"kind": "remote-endpoint", "baseUrl": "{url}/summarize", "model": "any"}),
        vec![
            remote("## Goal\n- e"),
            remote("## Original Request\n- f"),
            remote("short e"),
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = script.seen.lock().unwrap().clone();
    assert!(seen.iter().all(|(p, b, _)| p == "/summarize"
        && b["systemPrompt"].is_string()
        && b["prompt"].is_string()
        && b["maxTokens"].is_number()));
    // History and prefix run concurrently, so either may get either answer;
    // the merged summary holds both.
    let summary = last_entry(&file)["summary"].as_str().unwrap().to_owned();
    assert!(
        summary.contains("- e")
            && summary.contains("- f")
            && summary.contains("**Turn Context (split turn):**"),
        "{summary}"
    );
}

#[tokio::test]
async fn snapcompact_needs_no_server_and_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    for out in [&a, &b] {
        let o = musepi(&[
            "compact",
            file.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--now",
            "2026-02-01T00:00:00.000Z",
            "--deterministic-ids",
        ])
        .await;
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let entry = last_entry(&a);
    assert_eq!(entry["type"], "compaction");
    assert!(entry["details"]["snapcompact"]["text"].is_string());
    // The input file is untouched by -o.
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions/todo-refactor.jsonl");
    assert_eq!(std::fs::read(&file).unwrap(), std::fs::read(src).unwrap());
}
