//! `musepi serve` as a process: the JSON-lines protocol end to end, with a
//! summarizer on a loopback server (docs/protocol.md).

#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use musepi_test_support::http::{Reply, Server};
use serde_json::{Value, json};
use support::{error_message, json_lines};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Every step fails the test instead of hanging it.
const PATIENCE: Duration = Duration::from_mins(1);

// ------------------------------------------------------------ the summarizer

/// A chat-completions summarizer on 127.0.0.1 and its base URL; with
/// `hang` it never answers (until the client gives up and closes the
/// connection).
async fn model(hang: bool) -> (String, Server) {
    let answer = Reply::json(
        200,
        &json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": "## Goal\nKeep the parser tidy."},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132}
        }),
    );
    let answer = if hang {
        answer.delayed(Duration::from_hours(24))
    } else {
        answer
    };
    let server = Server::answering(move |_| answer.clone()).await;
    (format!("{}/v1", server.url), server)
}

// ------------------------------------------------------------ the client

struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Client {
    fn start(dir: &Path, base_url: &str) -> Self {
        Self::with(
            dir,
            &[
                "--provider",
                "openai-compatible",
                "--model",
                "summarizer",
                "--base-url",
                base_url,
            ],
            r#"{"compaction": {"strategy": "context-full", "keepRecentTokens": 50}}"#,
        )
    }

    /// A server summarizing with a new [`model`] (that never answers
    /// with `hang`), and that model.
    async fn with_model(dir: &Path, hang: bool) -> (Self, Server) {
        let (url, model) = model(hang).await;
        (Self::start(dir, &url), model)
    }

    /// A server with the settings `settings` and no provider flags.
    fn without_provider(dir: &Path, settings: &str) -> Self {
        Self::with(dir, &[], settings)
    }

    fn with(dir: &Path, flags: &[&str], settings: &str) -> Self {
        Self::spawn(dir, flags, settings, None)
    }

    /// A server that may write files of at most `max_file_bytes` (a
    /// multiple of 512), a write past it failing with `EFBIG`; its stderr
    /// is piped, for [`Client::finish_with_stderr`].
    fn with_file_limit(dir: &Path, settings: &str, max_file_bytes: u64) -> Self {
        Self::spawn(dir, &[], settings, Some(max_file_bytes))
    }

    fn spawn(dir: &Path, flags: &[&str], settings: &str, max_file_bytes: Option<u64>) -> Self {
        let settings_file = dir.join("settings.json");
        std::fs::write(&settings_file, settings).unwrap();
        let musepi = env!("CARGO_BIN_EXE_musepi");
        let mut command = match max_file_bytes {
            None => Command::new(musepi),
            Some(bytes) => {
                // POSIX sh counts `ulimit -f` in 512-byte blocks (dash does, and
                // bash does when run as sh).
                assert_eq!(bytes % 512, 0, "sh counts the limit in 512-byte blocks");
                // SIGXFSZ ignored, so a write past the limit fails instead
                // of killing the server.
                let mut sh = Command::new("sh");
                sh.args([
                    "-c",
                    r#"trap '' XFSZ; ulimit -f "$1"; shift; exec "$@""#,
                    "sh",
                ])
                .arg((bytes / 512).to_string())
                .arg(musepi);
                sh
            }
        };
        let mut child = command
            .args([
                "serve",
                "--deterministic-ids",
                "--now",
                "2025-05-01T10:00:00.000Z",
            ])
            .args(flags)
            .arg("--settings")
            .arg(&settings_file)
            .current_dir(dir)
            .env("HOME", dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if max_file_bytes.is_some() {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            stdin,
            stdout,
            next_id: 0,
        }
    }

    async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    }

    async fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .unwrap()
            .unwrap()
            .expect("the server closed stdout");
        serde_json::from_str(&line).unwrap()
    }

    async fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        let line = json!({"id": id, "method": method, "params": params}).to_string();
        self.send_line(&line).await;
        id
    }

    /// Reads until the response to `id`; returns the events before it and the response.
    async fn response(&mut self, id: u64) -> (Vec<Value>, Value) {
        let mut events = Vec::new();
        loop {
            let v = self.read().await;
            if let Some(e) = v.get("event") {
                events.push(e.clone());
            } else if v["id"] == json!(id) {
                return (events, v);
            } else {
                panic!("unexpected line {v}");
            }
        }
    }

    async fn call(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        let id = self.send(method, params).await;
        self.response(id).await
    }

    /// The `result` of a successful call, with its events.
    async fn ok(&mut self, method: &str, params: Value) -> (Vec<Value>, Value) {
        let (events, r) = self.call(method, params).await;
        assert_eq!(r["ok"], json!(true), "{method}: {r}");
        (events, r["result"].clone())
    }

    /// Appends the user message `text`: the `result` of the call, with its events.
    async fn say(&mut self, text: &str) -> (Vec<Value>, Value) {
        self.ok("append", json!({"entry": text_message("user", text)}))
            .await
    }

    async fn finish(mut self) -> i32 {
        drop(self.stdin.take());
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .unwrap()
            .unwrap();
        status.code().unwrap_or(-1)
    }

    /// The exit code and what the server printed on stderr, for a server
    /// started with its stderr piped.
    async fn finish_with_stderr(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let out = tokio::time::timeout(PATIENCE, self.child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8(out.stderr).unwrap(),
        )
    }
}

fn text_message(role: &str, text: &str) -> Value {
    json!({"type": "message", "message": {"role": role, "content": text}})
}

/// The agent model's answer `text`, after `input` tokens in and `output` out.
fn answer(text: &str, input: u64, output: u64) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}],
        "provider": "agent", "model": "m1", "stopReason": "stop",
        "usage": {"input": input, "output": output, "cacheRead": 0, "cacheWrite": 0,
            "totalTokens": input + output}})
}

/// Three turns of a session worth compacting.
async fn history(c: &mut Client) -> Vec<String> {
    let mut entries = Vec::new();
    for turn in 0..3 {
        entries.push(text_message(
            "user",
            &format!("step {turn}: {}", "explain the parser ".repeat(40)),
        ));
        let text = "the parser reads tokens ".repeat(60);
        entries.push(json!({"type": "message", "message": answer(&text, 1000, 100)}));
    }
    let (_, r) = c.ok("append", json!({"entries": entries})).await;
    r["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

// ------------------------------------------------------------ tests

#[tokio::test]
async fn the_protocol_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, model) = Client::with_model(dir.path(), false).await;

    // A malformed line gets an error response with a code, and the server goes on.
    c.send_line("this is not json").await;
    let r = c.read().await;
    assert_eq!(r["ok"], json!(false));
    assert_eq!(r["id"], Value::Null);
    assert_eq!(r["error"]["code"], json!("parse_error"));
    c.send_line(r#"{"id": "x", "params": {}}"#).await;
    assert_eq!(c.read().await["error"]["code"], json!("invalid_request"));
    let (_, r) = c.call("frobnicate", json!({})).await;
    assert_eq!(r["error"]["code"], json!("unknown_method"));
    let (_, r) = c.call("context", json!({})).await;
    assert_eq!(r["error"]["code"], json!("no_session"));

    let (_, opened) = c
        .ok(
            "open",
            json!({"path": "s.jsonl", "create": true, "sessionId": "sess-1", "cwd": "/repo", "contextWindow": 100_000}),
        )
        .await;
    assert_eq!(
        opened["strategy"],
        json!("llm"),
        "context-full is read as llm"
    );
    assert_eq!(opened["thresholdTokens"], json!(83616));
    let (_, r) = c.call("idle", json!({})).await;
    assert_eq!(r["error"]["code"], json!("invalid_params"));

    let ids = history(&mut c).await;
    assert_eq!(ids.len(), 6);

    // A normal turn below the threshold: nothing to do.
    c.say("and the lexer?").await;
    let low = answer("the lexer is fine", 2000, 50);
    let (events, d) = c.ok("afterAssistant", json!({"message": low})).await;
    assert!(events.is_empty());
    assert_eq!(d["action"], json!("none"));

    // Above the threshold: threshold maintenance, with its events, and the
    // agent is told to continue with the developer prompt.
    c.say("now the emitter").await;
    let high = answer("the emitter is done", 90000, 50);
    let (events, d) = c.ok("afterAssistant", json!({"message": high})).await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(
        events[0],
        json!({"type": "compaction_start", "reason": "threshold"})
    );
    assert_eq!(events[1]["type"], json!("compaction_end"));
    assert_eq!(events[1]["aborted"], json!(false));
    assert_eq!(events[1]["willRetry"], json!(false));
    assert_eq!(d["action"], json!("compacted"));
    assert_eq!(d["reason"], json!("threshold"));
    assert_eq!(d["continue"], json!(true));
    assert!(d["continuePrompt"].as_str().unwrap().contains("compacted"));
    let entry_id = d["compaction"]["entryId"].as_str().unwrap().to_owned();
    let high_id = d["entryId"].clone();
    assert_eq!(events[1]["result"]["entryId"], json!(entry_id));
    assert!(model.count() >= 1);
    let file = json_lines(&dir.path().join("s.jsonl"));
    let compaction = file
        .iter()
        .find(|l| l["type"] == json!("compaction"))
        .expect("a compaction entry in the file");
    assert_eq!(compaction["id"], json!(entry_id));
    assert!(
        compaction["summary"]
            .as_str()
            .unwrap()
            .contains("Keep the parser tidy")
    );
    let context = d["context"].as_array().unwrap();
    assert_eq!(context[0]["role"], json!("user"));

    // The same message again: never twice for the same usage.
    let (events, d) = c.ok("afterAssistant", json!({"entryId": high_id})).await;
    assert!(events.is_empty());
    assert_eq!(d["action"], json!("none"));

    // context and plan, as `musepi context --json` and `musepi plan --json`.
    let (_, ctx) = c.ok("context", json!({})).await;
    assert_eq!(ctx["messages"][0]["role"], json!("compactionSummary"));
    assert_eq!(ctx["messages"][0]["entryId"], json!(entry_id));
    let (_, llm) = c.ok("context", json!({"llm": true, "full": true})).await;
    assert_eq!(llm["messages"][0]["message"]["role"], json!("user"));
    // The very document `musepi context --json` prints for the file.
    for (params, flags) in [
        (json!({"full": true}), &["--full"][..]),
        (json!({"llm": true, "full": true}), &["--llm", "--full"][..]),
    ] {
        let (_, served) = c.ok("context", params).await;
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_musepi"))
            .args(["context", "s.jsonl", "--json"])
            .args(flags)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(served, printed, "{flags:?}");
    }
    let (_, plan) = c.ok("plan", json!({})).await;
    assert_eq!(plan["nothingToCompact"], json!(true));
    assert_eq!(plan["reason"], json!("Already compacted"));
    assert_eq!(plan["threshold"]["contextWindow"], json!(100_000));

    // navigate back to the first answer; without a summary a marker keeps the leaf.
    let (events, nav) = c
        .ok("navigate", json!({"targetId": ids[1], "summarize": false}))
        .await;
    assert_eq!(events[0]["type"], json!("tree_start"));
    assert_eq!(events[1]["type"], json!("tree_end"));
    assert_eq!(nav["cancelled"], json!(false));
    let marker = nav["markerEntryId"].as_str().unwrap();
    assert_eq!(nav["newLeafId"], json!(marker));
    let (_, status) = c.ok("status", json!({})).await;
    assert_eq!(status["leafId"], json!(marker));
    // The sizes the runtime keeps as the session grows are the ones
    // `context` computes from the whole context at the new leaf.
    let (_, ctx) = c.ok("context", json!({})).await;
    assert_eq!(status["contextTokens"], ctx["tokens"]);
    assert_eq!(status["measuredTokens"], ctx["contextEstimate"]["tokens"]);
    let (_, r) = c.call("navigate", json!({"targetId": "nope"})).await;
    assert_eq!(r["error"]["code"], json!("not_found"));

    // A manual compaction with instructions, while idle: no turn starts.
    c.say(&"one more long question ".repeat(30)).await;
    let (events, d) = c
        .ok("compact", json!({"instructions": "keep the lexer"}))
        .await;
    assert_eq!(
        events[0],
        json!({"type": "compaction_start", "reason": "manual"})
    );
    assert_eq!(d["action"], json!("compacted"), "{d}");
    assert_eq!(d["continue"], json!(false));

    let (_, closed) = c.ok("close", json!({})).await;
    assert_eq!(closed["closed"], json!(true));
    // End of input ends the server cleanly.
    assert_eq!(c.finish().await, 0);
}

#[tokio::test]
async fn abort_stops_a_running_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, model) = Client::with_model(dir.path(), true).await;
    c.ok(
        "open",
        json!({"path": "s.jsonl", "create": true, "sessionId": "sess-2"}),
    )
    .await;
    history(&mut c).await;
    let before = std::fs::read(dir.path().join("s.jsonl")).unwrap();

    let compact = c.send("compact", json!({})).await;
    // The summarizer has the request: the compaction is running.
    tokio::time::timeout(PATIENCE, model.wait_for_requests(1))
        .await
        .unwrap();
    let abort = c.send("abort", json!({})).await;
    let (events, r) = c.response(abort).await;
    assert_eq!(r["result"], json!({"aborted": true}));
    assert_eq!(
        events,
        vec![json!({"type": "compaction_start", "reason": "manual"})]
    );
    let (events, r) = c.response(compact).await;
    assert_eq!(
        events,
        vec![
            json!({"type": "compaction_end", "reason": "manual", "aborted": true, "willRetry": false})
        ]
    );
    assert_eq!(r["ok"], json!(true));
    assert_eq!(r["result"]["action"], json!("aborted"));
    assert_eq!(r["result"]["error"], json!("Compaction cancelled"));
    assert_eq!(std::fs::read(dir.path().join("s.jsonl")).unwrap(), before);

    // Nothing runs now: abort says so.
    let (_, r) = c.ok("abort", json!({})).await;
    assert_eq!(r, json!({"aborted": false}));
    assert_eq!(c.finish().await, 0);
}

#[tokio::test]
async fn bad_appends_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, _model) = Client::with_model(dir.path(), false).await;
    c.ok("open", json!({"path": "s.jsonl", "create": true}))
        .await;
    for (params, needle) in [
        (
            json!({"entries": [{"type": "compaction", "summary": "x"}]}),
            "cannot append",
        ),
        (
            json!({"entries": [{"type": "message"}]}),
            "invalid `message` entry",
        ),
        (json!({"entries": "nope"}), "entries"),
        (
            json!({"entries": [text_message("user", "fine"), 7]}),
            "entries[1]",
        ),
        // The first entry is fine, the second names no entry: neither is
        // appended.
        (
            json!({"entries": [
                text_message("user", "fine"),
                {"type": "label", "targetId": "nowhere", "label": "x"},
            ]}),
            "label",
        ),
    ] {
        let (_, r) = c.call("append", params).await;
        assert_eq!(r["error"]["code"], json!("invalid_params"), "{r}");
        assert!(error_message(&r).contains(needle), "{r}");
    }
    let (_, status) = c.ok("status", json!({})).await;
    assert_eq!(status["entryCount"], json!(0));
    let (_, r) = c.call("afterAssistant", json!({})).await;
    assert_eq!(r["error"]["code"], json!("not_assistant"));
    let (_, r) = c.call("open", json!({"path": "missing.jsonl"})).await;
    assert_eq!(r["error"]["code"], json!("bad_session"));
    // An empty path names no file: refused at `open`, not at the first
    // write; the session open before stays open.
    for create in [false, true] {
        let (_, r) = c.call("open", json!({"path": "", "create": create})).await;
        assert_eq!(r["error"]["code"], json!("invalid_params"), "{r}");
        assert_eq!(
            error_message(&r),
            "`path` is empty: give the session file's path"
        );
    }
    let (_, status) = c.ok("status", json!({})).await;
    assert_eq!(status["path"], json!("s.jsonl"));
    assert_eq!(c.finish().await, 0);
}

/// Two servers on one session file, as two agents writing it: each one's
/// append reads what the other appended and goes on after it, under its
/// own last entry (it answered `busy` to every append once the other had
/// written, until it was opened again), and the file stays one valid tree.
#[tokio::test]
async fn two_servers_on_one_file_each_go_on_after_the_others_appends() {
    let dir = tempfile::tempdir().unwrap();
    let file = musepi_test_support::example_as_v2(dir.path(), "s.jsonl");
    let (mut a, mut b) = (
        Client::without_provider(dir.path(), "{}"),
        Client::without_provider(dir.path(), "{}"),
    );
    a.ok("open", json!({"path": "s.jsonl"})).await;
    b.ok("open", json!({"path": "s.jsonl"})).await;
    let start = json_lines(&file).last().unwrap()["id"].clone();
    // The first write migrates the v2 file: a rewrite the other server
    // reads back too.
    let (_, a1) = a.say("a: one").await;
    let (_, b1) = b.say("b: one").await;
    let (_, a2) = a.say("a: two").await;
    let (_, b2) = b.say("b: two").await;
    let (_, status) = b.ok("status", json!({})).await;
    assert_eq!(
        status["leafId"], b2["leafId"],
        "each server keeps its own leaf"
    );
    assert_eq!(a.finish().await, 0);
    assert_eq!(b.finish().await, 0);

    let lines = json_lines(&file);
    assert_eq!(lines[0]["version"], json!(3));
    let entry = |answer: &Value| {
        let id = answer["ids"][0].clone();
        lines.iter().find(|l| l["id"] == id).unwrap().clone()
    };
    assert_eq!(entry(&a1)["parentId"], start);
    assert_eq!(entry(&b1)["parentId"], start);
    assert_eq!(entry(&a2)["parentId"], a1["ids"][0]);
    assert_eq!(entry(&b2)["parentId"], b1["ids"][0]);
    let ids: Vec<&Value> = [&a1, &b1, &a2, &b2].iter().map(|r| &r["ids"][0]).collect();
    for (i, id) in ids.iter().enumerate() {
        assert!(!ids[..i].contains(id), "{id} is given twice");
    }
    assert_eq!(lines.last().unwrap()["id"], b2["ids"][0]);
    let check = support::musepi_in(
        dir.path(),
        dir.path(),
        &["session", "check", "s.jsonl"],
        None,
    );
    assert_eq!(support::code(&check), 0, "{}", support::stdout(&check));
}

#[tokio::test]
async fn the_default_strategy_compacts_without_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::without_provider(dir.path(), r#"{"compaction": {"keepRecentTokens": 50}}"#);
    let (_, opened) = c
        .ok(
            "open",
            json!({"path": "s.jsonl", "create": true, "contextWindow": 100_000,
                "model": {"provider": "agent", "modelId": "m1"}}),
        )
        .await;
    assert_eq!(opened["strategy"], json!("snapcompact"));
    assert_eq!(opened["summarizer"], Value::Null);
    history(&mut c).await;
    let high = answer("done", 90000, 50);
    let (events, d) = c.ok("afterAssistant", json!({"message": high})).await;
    assert_eq!(d["action"], json!("compacted"), "{d}");
    assert_eq!(d["compaction"]["strategy"], json!("snapcompact"));
    assert_eq!(events[1]["result"]["strategy"], json!("snapcompact"));
    let file = json_lines(&dir.path().join("s.jsonl"));
    assert!(file.iter().any(|l| l["type"] == json!("compaction")));
    // A session created without a `sessionId` gets a UUIDv7, as pi's.
    let id = file[0]["id"].as_str().unwrap();
    assert_eq!((id.len(), &id[14..15]), (36, "7"), "{id}");
    assert!("89ab".contains(&id[19..20]), "{id}");
    assert_eq!(c.finish().await, 0);
}

#[tokio::test]
async fn context_promotion_switches_models_instead_of_compacting() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::without_provider(
        dir.path(),
        r#"{"compaction": {"keepRecentTokens": 50}, "contextPromotion": {"enabled": true}}"#,
    );
    // A bad target list is refused before anything opens.
    let (_, r) = c
        .call(
            "open",
            json!({"path": "s.jsonl", "create": true,
                "promotionTargets": [{"provider": "agent", "modelId": "m2"}]}),
        )
        .await;
    assert_eq!(r["error"]["code"], json!("invalid_params"));
    assert!(error_message(&r).contains("promotionTargets[0]"));
    assert!(!dir.path().join("s.jsonl").exists());

    let (_, opened) = c
        .ok(
            "open",
            json!({"path": "s.jsonl", "create": true, "contextWindow": 100_000,
                "model": {"provider": "agent", "modelId": "m1"},
                "promotionTargets": [{"provider": "agent", "modelId": "m2", "contextWindow": 400_000}]}),
        )
        .await;
    assert_eq!(opened["contextPromotion"], json!(true));
    assert_eq!(opened["promotionTargets"][0]["modelId"], json!("m2"));
    history(&mut c).await;
    let high = answer("done", 90000, 50);
    let (events, d) = c.ok("afterAssistant", json!({"message": high})).await;
    assert_eq!(d["action"], json!("promoted"), "{d}");
    assert_eq!(d["reason"], json!("threshold"));
    assert_eq!(d["continue"], json!(false));
    assert_eq!(
        d["promotion"],
        json!({"provider": "agent", "modelId": "m2", "contextWindow": 400_000})
    );
    assert_eq!(
        events,
        vec![
            json!({"type": "context_promotion", "reason": "threshold", "fromModel": "agent/m1",
            "provider": "agent", "modelId": "m2", "contextWindow": 400_000})
        ]
    );
    let file = json_lines(&dir.path().join("s.jsonl"));
    let last = file.last().unwrap();
    assert_eq!(last["type"], json!("model_change"));
    assert_eq!(last["modelId"], json!("m2"));
    assert!(!file.iter().any(|l| l["type"] == json!("compaction")));
    let (_, status) = c.ok("status", json!({})).await;
    assert_eq!(status["contextWindow"], json!(400_000));
    assert_eq!(c.finish().await, 0);
}

#[tokio::test]
async fn branch_summary_enabled_makes_navigation_summarize_by_default() {
    let dir = tempfile::tempdir().unwrap();
    // The default strategy archives the branch without a model.
    let mut c = Client::without_provider(dir.path(), "{}");
    let (_, opened) = c
        .ok(
            "open",
            json!({"path": "s.jsonl", "create": true,
                "settings": {"branchSummary": {"enabled": true}}}),
        )
        .await;
    assert_eq!(opened["branchSummary"], json!(true));
    let ids = history(&mut c).await;
    let (events, moved) = c.ok("navigate", json!({"targetId": ids[1]})).await;
    assert_eq!(events[0]["summarize"], json!(true));
    let summary_id = moved["summaryEntryId"].as_str().unwrap().to_owned();
    let file = json_lines(&dir.path().join("s.jsonl"));
    assert_eq!(file.last().unwrap()["type"], json!("branch_summary"));
    assert_eq!(file.last().unwrap()["id"], json!(summary_id));
    // Saying so explicitly still wins.
    let (events, moved) = c
        .ok("navigate", json!({"targetId": ids[3], "summarize": false}))
        .await;
    assert_eq!(events[0]["summarize"], json!(false));
    assert_eq!(moved["summaryEntryId"], Value::Null);
    assert_eq!(c.finish().await, 0);
}

#[tokio::test]
async fn a_line_of_invalid_utf8_gets_a_parse_error_and_the_server_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::start(dir.path(), "http://127.0.0.1:9/v1");
    c.send_bytes(b"{\"id\": 1, \"method\": \"status\xff\"}\n")
        .await;
    let r = c.read().await;
    assert_eq!(r["ok"], json!(false));
    assert_eq!(r["id"], Value::Null);
    assert_eq!(r["error"]["code"], json!("parse_error"));
    assert_eq!(
        r["error"]["message"],
        json!("line 1 is not valid UTF-8 (at byte 28); a request is one JSON document in UTF-8")
    );
    // Lines after it are read and answered.
    c.send_bytes(b"\xc3\n").await;
    let r = c.read().await;
    assert!(error_message(&r).starts_with("line 2 is not valid UTF-8"));
    let (_, r) = c.call("frobnicate", json!({})).await;
    assert_eq!(r["error"]["code"], json!("unknown_method"));
    assert_eq!(c.finish().await, 0);
}

/// `musepi` run in `dir` with `args`, its JSON output.
fn printed(dir: &Path, args: &[&str]) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_musepi"))
        .args(args)
        .args([
            "--settings",
            "settings.json",
            "--now",
            "2025-05-01T10:00:00.000Z",
        ])
        .current_dir(dir)
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A server with a small kept window over `dir/s.jsonl`, created and
/// given [`superseded_reads`], so that pruning changes the plan.
async fn with_superseded_reads(dir: &Path) -> Client {
    let mut c = Client::without_provider(dir, r#"{"compaction": {"keepRecentTokens": 50}}"#);
    c.ok(
        "open",
        json!({"path": "s.jsonl", "create": true, "contextWindow": 100_000}),
    )
    .await;
    superseded_reads(&mut c).await;
    c
}

/// The history, then four reads of the same file (the three older ones
/// superseded, enough for pruning to change the plan) and a user message.
async fn superseded_reads(c: &mut Client) {
    history(c).await;
    for n in 0..4 {
        let call = format!("read-{n}");
        let read = json!({"role": "assistant", "content": [
            {"type": "text", "text": "reading it again"},
            {"type": "toolCall", "id": call, "name": "read", "arguments": {"path": "src/parser.rs"}}],
            "provider": "agent", "model": "m1", "stopReason": "toolUse"});
        let result = json!({"role": "toolResult", "toolCallId": call, "toolName": "read",
            "content": [{"type": "text", "text": format!("{n} {}", "fn parse() {} ".repeat(2_500))}],
            "isError": false});
        c.ok(
            "append",
            json!({"entries": [{"type": "message", "message": read}, {"type": "message", "message": result}]}),
        )
        .await;
    }
    c.say("and now the lexer").await;
}

/// `musepi plan --json --show-prompts` of `s.jsonl` in `dir`, in a window
/// of 100,000 tokens.
fn printed_plan(dir: &Path) -> Value {
    printed(
        dir,
        &[
            "plan",
            "s.jsonl",
            "--json",
            "--show-prompts",
            "--context-window",
            "100000",
        ],
    )
}

#[tokio::test]
async fn plan_and_context_at_the_leaf_answer_what_the_commands_print_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = with_superseded_reads(dir.path()).await;
    let file = dir.path().join("s.jsonl");
    let before = std::fs::read(&file).unwrap();

    let (_, plan) = c.ok("plan", json!({"showPrompts": true})).await;
    assert_eq!(plan["nothingToCompact"], json!(false), "{plan}");
    assert_eq!(plan["prune"]["results"].as_array().unwrap().len(), 3);
    let cli = printed_plan(dir.path());
    assert_eq!(plan, cli);
    // The pruned results were staged for the plan only.
    assert_eq!(std::fs::read(&file).unwrap(), before);
    for _ in 0..2 {
        let (_, ctx) = c.ok("context", json!({"full": true})).await;
        assert_eq!(
            ctx,
            printed(dir.path(), &["context", "s.jsonl", "--json", "--full"])
        );
        let (_, again) = c.ok("plan", json!({"showPrompts": true})).await;
        assert_eq!(again, cli);
    }
    assert_eq!(c.finish().await, 0);
}

/// A file whose journal cannot stage the pruned results (it ends with a
/// line an agent has not finished writing): the plan applies the pruning
/// it decided to a copy, answers what `musepi plan` prints of the complete
/// lines, and writes nothing.
#[tokio::test]
async fn plan_over_a_torn_last_line_prunes_a_copy_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = with_superseded_reads(dir.path()).await;
    c.ok("close", json!({})).await;
    let cli = printed_plan(dir.path());
    let file = dir.path().join("s.jsonl");
    let mut torn = std::fs::read(&file).unwrap();
    torn.extend_from_slice(br#"{"type":"message","id":"half-writ"#);
    std::fs::write(&file, &torn).unwrap();

    c.ok("open", json!({"path": "s.jsonl", "contextWindow": 100_000}))
        .await;
    for _ in 0..2 {
        let (_, plan) = c.ok("plan", json!({"showPrompts": true})).await;
        assert_eq!(plan["prune"]["results"].as_array().unwrap().len(), 3);
        assert_eq!(plan, cli);
    }
    assert_eq!(std::fs::read(&file).unwrap(), torn);
    assert_eq!(c.finish().await, 0);
}

/// The warning of a rewrite of `name` that another process outlasted.
fn still_open(name: &str) -> Value {
    json!(format!(
        "{name}: another process still had the replaced file open for writing 2 s after the rewrite; \
         a line it writes to that file now is lost (see docs/reliability.md)"
    ))
}

/// No note of the answer is a write warning.
fn no_write_warning(answer: &Value) {
    let notes = answer["notes"].as_array().unwrap();
    assert!(
        !notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("another process")),
        "{answer}"
    );
}

#[tokio::test]
async fn the_call_whose_rewrite_another_process_outlasted_reports_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::without_provider(dir.path(), r#"{"compaction": {"keepRecentTokens": 50}}"#);
    let window = json!(1_000_000);

    // An append that writes the pending migration: the warning is in its
    // answer, and the compaction after it does not repeat it.
    let a = musepi_test_support::example_as_v2(dir.path(), "a.jsonl");
    c.ok("open", json!({"path": "a.jsonl", "contextWindow": window}))
        .await;
    let mut held = musepi_test_support::hold_open(&a, musepi_test_support::Hold::Appending);
    let (_, appended) = c.say("go on").await;
    held.kill().unwrap();
    held.wait().unwrap();
    assert_eq!(
        appended["notes"],
        json!([still_open("a.jsonl")]),
        "{appended}"
    );
    let (_, compacted) = c.ok("compact", json!({})).await;
    assert_eq!(compacted["action"], json!("compacted"), "{compacted}");
    no_write_warning(&compacted);
    assert_eq!(json_lines(&a)[0]["version"], json!(3));

    // `afterAssistant` appending its message: the warning is in the
    // decision, though nothing was compacted.
    let b = musepi_test_support::example_as_v2(dir.path(), "b.jsonl");
    c.ok("open", json!({"path": "b.jsonl", "contextWindow": window}))
        .await;
    let mut held = musepi_test_support::hold_open(&b, musepi_test_support::Hold::Appending);
    let (_, decided) = c
        .ok(
            "afterAssistant",
            json!({"message": answer("done", 1000, 10)}),
        )
        .await;
    held.kill().unwrap();
    held.wait().unwrap();
    assert_eq!(decided["action"], json!("none"), "{decided}");
    assert_eq!(
        decided["notes"],
        json!([still_open("b.jsonl")]),
        "{decided}"
    );
    let (_, next) = c.ok("beforeRequest", json!({})).await;
    no_write_warning(&next);
    let (_, again) = c.say("thanks").await;
    assert_eq!(again["notes"], json!([]), "{again}");
    assert_eq!(c.finish().await, 0);
}

/// The size of `a.jsonl` (the example session, as a v2 file) once a
/// navigation to its second entry left the summary a hook supplied, with
/// `label` on it when there is one; and the server's answer and stderr.
async fn navigate_with_summary(
    dir: &Path,
    label: Option<&str>,
    max_file_bytes: Option<u64>,
) -> (u64, Value, String) {
    let hook = support::script(
        dir,
        "summary.sh",
        r#"cat > /dev/null
echo '{"summary": {"summary": "The branch tried a second parser."}}'"#,
    );
    let settings = json!({"hooks": {"session_before_tree": [
        {"command": [hook.to_str().unwrap()], "timeoutMs": support::HOOK_IN_TIME_MS}
    ]}})
    .to_string();
    let a = musepi_test_support::example_as_v2(dir, "a.jsonl");
    let target = json_lines(&a)[1]["id"].clone();
    let mut c = match max_file_bytes {
        Some(bytes) => Client::with_file_limit(dir, &settings, bytes),
        None => Client::without_provider(dir, &settings),
    };
    c.ok("open", json!({"path": "a.jsonl"})).await;
    let mut held = musepi_test_support::hold_open(&a, musepi_test_support::Hold::Appending);
    let (_, answer) = c
        .call(
            "navigate",
            json!({"targetId": target, "summarize": true, "label": label}),
        )
        .await;
    held.kill().unwrap();
    held.wait().unwrap();
    let stderr = if max_file_bytes.is_some() {
        c.finish_with_stderr().await.1
    } else {
        assert_eq!(c.finish().await, 0);
        String::new()
    };
    (std::fs::metadata(&a).unwrap().len(), answer, stderr)
}

/// A call that fails after a write another process outlasted has no
/// `notes` to carry the warning, so the server says it on stderr: the
/// branch summary is written (the rewrite that writes the v2 file's
/// migration, whose old file a process still holds), then the label on
/// it cannot be appended (the file may not grow past its size by a whole
/// label line), and the error answer is followed by the warning.
#[tokio::test]
async fn a_failed_call_says_on_stderr_what_its_write_before_the_failure_had_to_tell() {
    let dry = tempfile::tempdir().unwrap();
    let (summarized, answer, _) = navigate_with_summary(dry.path(), None, None).await;
    assert_eq!(
        answer["result"]["notes"],
        json!([still_open("a.jsonl")]),
        "{answer}"
    );

    let dir = tempfile::tempdir().unwrap();
    let label = "x".repeat(600);
    let limit = summarized.div_ceil(512) * 512;
    let (size, answer, stderr) = navigate_with_summary(dir.path(), Some(&label), Some(limit)).await;
    assert_eq!(answer["ok"], json!(false), "{answer}");
    assert_eq!(size, summarized, "the summary stays, the label is cut back");
    let warning = format!(
        "musepi: warning: {}\n",
        still_open("a.jsonl").as_str().unwrap()
    );
    assert!(stderr.contains(&warning), "{stderr}");
}

/// A hook that answers `session_before_tree` with an empty summary: the
/// answer says `"summary": ""` with no summary entry, none is written, and
/// the leaf moves to the target, kept the file's last line by the marker
/// (docs/protocol.md, `navigate`).
#[tokio::test]
async fn an_empty_summary_from_a_hook_is_answered_and_written_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let hook = support::script(
        dir.path(),
        "empty.sh",
        r#"cat > /dev/null
echo '{"summary": {"summary": ""}}'"#,
    );
    let settings = json!({"hooks": {"session_before_tree": [
        {"command": [hook.to_str().unwrap()], "timeoutMs": support::HOOK_IN_TIME_MS}
    ]}});
    let mut c = Client::without_provider(dir.path(), &settings.to_string());
    c.ok("open", json!({"path": "s.jsonl", "create": true}))
        .await;
    let ids = history(&mut c).await;
    let (_, nav) = c
        .ok("navigate", json!({"targetId": ids[1], "summarize": true}))
        .await;
    assert_eq!(nav["summary"], json!(""), "{nav}");
    assert_eq!(nav["summaryEntryId"], Value::Null, "{nav}");
    let marker = nav["markerEntryId"].as_str().unwrap();
    assert_eq!(nav["newLeafId"], json!(marker), "{nav}");
    let file = json_lines(&dir.path().join("s.jsonl"));
    assert!(!file.iter().any(|l| l["type"] == json!("branch_summary")));
    let last = file.last().unwrap();
    assert_eq!(last["id"], json!(marker));
    assert_eq!(last["parentId"], json!(ids[1]));
    assert_eq!(c.finish().await, 0);
}

/// `recall` answers what `musepi recall --json` prints: after a compaction
/// that pruned the superseded reads and summarized the history, an entry's
/// original comes back from the prune store and a search finds what the
/// context lost; each condition has its error code.
#[tokio::test]
async fn recall_answers_what_the_command_prints_from_the_session_and_its_prune_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = with_superseded_reads(dir.path()).await;
    let (_, done) = c.ok("compact", json!({})).await;
    assert_eq!(done["action"], json!("compacted"), "{done}");
    // The reads the compaction pruned: their originals are in the store.
    let text = std::fs::read_to_string(dir.path().join("s.jsonl")).unwrap();
    let pruned: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["message"]["prunedAt"].is_number())
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(pruned.len(), 3, "{text}");
    for id in &pruned {
        let (_, page) = c.ok("recall", json!({"entry": id})).await;
        assert_eq!(page["pruned"], json!(true));
        assert_eq!(page["original"], json!(true));
        assert!(
            page["text"].as_str().unwrap().contains("fn parse() {}"),
            "{page}"
        );
        assert_eq!(
            page,
            printed(dir.path(), &["recall", "s.jsonl", "--entry", id, "--json"])
        );
    }
    let (_, found) = c
        .ok("recall", json!({"grep": "explain the PARSER", "limit": 2}))
        .await;
    assert_eq!(found["matches"].as_array().unwrap().len(), 2, "{found}");
    assert!(found["total"].as_u64().unwrap() >= 3, "{found}");
    assert_eq!(found["next"], json!(2));
    assert_eq!(
        found,
        printed(
            dir.path(),
            &[
                "recall",
                "s.jsonl",
                "--grep",
                "explain the PARSER",
                "--limit",
                "2",
                "--json"
            ]
        )
    );
    let (_, r) = c.call("recall", json!({})).await;
    assert_eq!(r["error"]["code"], json!("invalid_params"), "{r}");
    let (_, r) = c.call("recall", json!({"grep": ""})).await;
    assert_eq!(r["error"]["code"], json!("invalid_params"), "{r}");
    let (_, r) = c.call("recall", json!({"entry": "nope"})).await;
    assert_eq!(r["error"]["code"], json!("not_found"), "{r}");
    // Without the store, the pruned result's original is gone: said, not guessed.
    std::fs::remove_dir_all(dir.path().join(".s.jsonl.musepi-store")).unwrap();
    let (_, r) = c.call("recall", json!({"entry": pruned[0]})).await;
    assert_eq!(r["error"]["code"], json!("no_original"), "{r}");
    assert_eq!(c.finish().await, 0);
}
