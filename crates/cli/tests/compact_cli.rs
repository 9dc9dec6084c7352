//! `musepi compact` end to end against a real HTTP server on 127.0.0.1: the
//! requests each provider receives, and that after every answer the file is
//! either correctly compacted or byte for byte what it was.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use musepi_session_model::json::thousands;
use serde_json::{Value, json};
use support::{MUSEPI, Reply, Server, assert_escaped, assert_has, assert_stderr_has, last_line};

fn chat(text: &str) -> Reply {
    support::chat(text, "stop")
}

/// The example session, copied to `dir`.
fn session(dir: &Path) -> std::path::PathBuf {
    support::example_session(dir, "s.jsonl")
}

/// A settings file with one provider entry.
fn settings(dir: &Path, entry: &Value) -> PathBuf {
    let path = dir.join("settings.json");
    std::fs::write(&path, json!({"providers": {"test": entry}}).to_string()).unwrap();
    path
}

/// `compact FILE --strategy llm --provider test --settings SETTINGS`.
fn llm_compact<'a>(file: &'a Path, settings: &'a Path) -> [&'a str; 8] {
    [
        "compact",
        file.to_str().unwrap(),
        "--strategy",
        "llm",
        "--provider",
        "test",
        "--settings",
        settings.to_str().unwrap(),
    ]
}

async fn musepi(args: &[&str]) -> std::process::Output {
    support::musepi_async(args).await
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

async fn compact_with(
    entry: Value,
    replies: Vec<Reply>,
) -> (Output, PathBuf, Vec<u8>, Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let before = std::fs::read(&file).unwrap();
    let server = Server::start(replies).await;
    let mut entry = entry;
    let base = entry["baseUrl"]
        .as_str()
        .unwrap_or_default()
        .replace("{url}", &server.url);
    entry["baseUrl"] = Value::String(base);
    let settings = settings(dir.path(), &entry);
    let args = llm_compact(&file, &settings);
    let out = musepi(&[&args[..], &["--now", "2026-02-01T00:00:00.000Z", "--json"]].concat()).await;
    (out, file, before, server, dir)
}

/// An attempt's `timeoutMs` when the answer must come (10 minutes): far
/// longer than a loopback answer takes on the busiest machine, since those
/// tests are about the answer, not its speed.
const IN_TIME_MS: u64 = 600_000;

fn openai(timeout_ms: u64) -> Value {
    json!({"kind": "openai-compatible", "baseUrl": "{url}/v1", "model": "summarizer-1", "timeoutMs": timeout_ms, "maxRetries": 2})
}

#[tokio::test]
async fn an_openai_compatible_summary_is_written_and_the_requests_are_exact() {
    let (out, file, _, script, _dir) = compact_with(
        openai(IN_TIME_MS),
        vec![
            chat("## Goal\n- history"),
            chat("## Original Request\n- prefix"),
            chat("I moved the store to a log."),
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = script.seen();
    assert_eq!(seen.len(), 3);
    for request in &seen {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.body["model"], "summarizer-1");
        assert_eq!(request.body["stream"], false);
        assert_eq!(request.body["messages"][0]["role"], "system");
        assert!(
            !request.headers.contains_key("authorization"),
            "no key was configured"
        );
        // The example session's thinking level.
        assert_eq!(request.body["reasoning_effort"], "medium");
    }
    let prompts: Vec<&str> = seen
        .iter()
        .map(|r| r.body["messages"][1]["content"].as_str().unwrap())
        .collect();
    let maxes: Vec<&Value> = seen.iter().map(|r| &r.body["max_tokens"]).collect();
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
    let entry = last_line(&file);
    assert_eq!(entry["type"], "compaction");
    let summary = entry["summary"].as_str().unwrap();
    assert_has(summary, "**Turn Context (split turn):**");
    assert_has(summary, "<files>\n# src/");
    assert_eq!(entry["shortSummary"], "I moved the store to a log.");
    assert_eq!(entry["fromExtension"], false);
    assert_eq!(entry["usage"]["totalTokens"], 360);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["compacted"], true);
    assert_eq!(doc["entryId"], entry["id"]);
}

/// A session whose thinking level is `off` asks for no reasoning: no
/// request carries a reasoning parameter.
#[tokio::test]
async fn a_session_thinking_off_asks_for_no_reasoning() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let leaf = last_line(&file)["id"].as_str().unwrap().to_owned();
    let off = json!({"type": "thinking_level_change", "id": "0ff0ff00", "parentId": leaf, "timestamp": "2026-01-31T00:00:00.000Z", "thinkingLevel": "off"});
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&off.to_string());
    text.push('\n');
    std::fs::write(&file, text).unwrap();
    support::settle(&file);
    let server = Server::start(vec![
        chat("## Goal\n- history"),
        chat("## Original Request\n- prefix"),
        chat("short"),
    ])
    .await;
    let mut entry = openai(IN_TIME_MS);
    entry["baseUrl"] = Value::String(format!("{}/v1", server.url));
    let settings = settings(dir.path(), &entry);
    let out = musepi(&llm_compact(&file, &settings)).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    for request in &seen {
        assert_eq!(
            request.body.get("reasoning_effort"),
            None,
            "{}",
            request.body
        );
    }
}

/// The human report escapes the model's summary (its line breaks kept) and
/// its short summary; a dry run escapes the prompts and the first kept id.
#[tokio::test]
async fn the_report_escapes_the_summary_and_the_dry_run_its_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let server = Server::answering(|_| chat("## Goal\r\n- a \u{1b}[2J b\n- c\u{7}")).await;
    let mut entry = openai(IN_TIME_MS);
    entry["baseUrl"] = json!(format!("{}/v1", server.url));
    let settings = settings(dir.path(), &entry);
    let out = musepi(&llm_compact(&file, &settings)).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_escaped(
        &text,
        &["summary:\n  ## Goal\n  - a \\u001b[2J b\n  - c\\u0007\n"],
    );
    assert_has(
        &text,
        "short summary  ## Goal - a \\u001b[2J b - c\\u0007\n",
    );

    // A session that quotes controls, and whose ids carry them.
    let mut lines = vec![
        json!({"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}),
    ];
    for i in 1..=12 {
        let parent = (i > 1).then(|| format!("{:07x}\u{1b}", i - 1));
        lines.push(json!({"type":"message","id":format!("{i:07x}\u{1b}"),"parentId":parent,"timestamp":"2025-01-01T00:00:01.000Z",
            "message":{"role":"user","content":format!("step {i} \u{1b}[31mred {}", "x".repeat(400)),"timestamp":i}}));
    }
    let quoting = dir.path().join("q.jsonl");
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(&quoting, text).unwrap();
    let dry = [
        "compact",
        quoting.to_str().unwrap(),
        "--strategy",
        "llm",
        "--keep-recent",
        "200",
        "--dry-run",
        // The prompts are printed only when asked for.
        "--show-prompts",
    ];
    let out = musepi(&dry).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_escaped(
        &text,
        &[
            "would keep from 000000b\\u001b (",
            "[User]: step 1 \\u001b[31mred x",
        ],
    );
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
    let (out, file, _, script, _dir) = compact_with(openai(IN_TIME_MS), replies).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(script.seen().len(), 5);
    assert_eq!(last_line(&file)["type"], "compaction");
}

async fn leaves_the_file_unchanged(entry: Value, replies: Vec<Reply>, message: &str) {
    let (out, file, before, _, _dir) = compact_with(entry, replies).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_stderr_has(&out, message);
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[tokio::test]
async fn failures_leave_the_file_byte_for_byte() {
    let ok = || chat("## x");
    leaves_the_file_unchanged(
        openai(IN_TIME_MS),
        vec![Reply::raw(200, "{not json"), ok(), ok()],
        "unreadable response",
    )
    .await;
    leaves_the_file_unchanged(
        openai(IN_TIME_MS),
        vec![chat(""), ok(), ok()],
        "empty summary",
    )
    .await;
    let refusal = Reply::json(
        200,
        &json!({"choices": [{"message": {"role": "assistant", "content": "I can't"}, "finish_reason": "content_filter"}]}),
    );
    leaves_the_file_unchanged(openai(IN_TIME_MS), vec![refusal, ok(), ok()], "refused").await;
    let slow = || Reply::json(200, &json!({})).delayed(Duration::from_hours(1));
    let mut fast_fail = openai(300);
    fast_fail["maxRetries"] = json!(0);
    leaves_the_file_unchanged(fast_fail, vec![slow(), slow()], "could not be reached").await;
    let e401 = Reply::json(401, &json!({"error": {"message": "bad key"}}));
    leaves_the_file_unchanged(openai(IN_TIME_MS), vec![e401.clone(), e401], "bad key").await;
}

#[tokio::test]
async fn an_abort_mid_request_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let before = std::fs::read(&file).unwrap();
    // The answers would come long after the test is over: only the
    // interrupt can end the compaction.
    let script = Server::start(vec![
        chat("x").delayed(Duration::from_hours(24)),
        chat("x").delayed(Duration::from_hours(24)),
    ])
    .await;
    let mut entry = openai(IN_TIME_MS);
    entry["baseUrl"] = json!(format!("{}/v1", script.url));
    let settings = settings(dir.path(), &entry);
    let child = tokio::process::Command::new(MUSEPI)
        .args(llm_compact(&file, &settings))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A musepi that exits before its first request must fail the test, not hang it.
    if tokio::time::timeout(Duration::from_mins(1), script.wait_for_requests(1))
        .await
        .is_err()
    {
        let mut child = child;
        let _ = child.start_kill();
        let out = child.wait_with_output().await.unwrap();
        panic!(
            "musepi sent no request within 60 s (exit {:?}): {}",
            out.status.code(),
            stderr(&out)
        );
    }
    let pid = i32::try_from(child.id().unwrap()).unwrap();
    // SAFETY-free: kill(2) through the libc crate is a plain syscall wrapper.
    assert_eq!(unsafe_free_sigint(pid), 0);
    let out = tokio::time::timeout(Duration::from_mins(5), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_stderr_has(&out, "compaction cancelled");
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

/// The answers to a split turn's three requests: the history summary
/// (`- a`), the turn prefix's (`- b`) and the short summary (`short a`).
fn history_prefix_short(reply: impl Fn(&str) -> Reply, a: &str, b: &str) -> Vec<Reply> {
    vec![
        reply(&format!("## Goal\n- {a}")),
        reply(&format!("## Original Request\n- {b}")),
        reply(&format!("short {a}")),
    ]
}

#[tokio::test]
async fn anthropic_responses_and_the_remote_endpoint_write_summaries_too() {
    let anthropic_reply = |t: &str| {
        Reply::json(
            200,
            &json!({"content": [{"type": "text", "text": t}], "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}),
        )
    };
    let responses_reply = |t: &str| {
        Reply::json(
            200,
            &json!({"output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t}]}], "status": "completed"}),
        )
    };
    // Each API carries the system prompt in its own field.
    for (entry, reply, path, system) in [
        (
            json!({"kind": "anthropic", "baseUrl": "{url}", "model": "claude-test"}),
            &anthropic_reply as &dyn Fn(&str) -> Reply,
            "/v1/messages",
            "system",
        ),
        (
            json!({"kind": "openai-responses", "baseUrl": "{url}/v1", "model": "gpt-test"}),
            &responses_reply,
            "/v1/responses",
            "instructions",
        ),
    ] {
        let model = entry["model"].clone();
        let (out, file, _, script, _d) =
            compact_with(entry, history_prefix_short(reply, "a", "b")).await;
        assert!(out.status.success(), "{path}: {}", stderr(&out));
        // The example session's thinking level, `medium`, as each API asks for it.
        for r in script.seen() {
            let asked = if path == "/v1/messages" {
                &r.body["thinking"]
            } else {
                &r.body["reasoning"]
            };
            let expected = if path == "/v1/messages" {
                json!({"type": "enabled", "budget_tokens": 8192})
            } else {
                json!({"effort": "medium"})
            };
            assert_eq!(*asked, expected, "{path}");
        }
        assert!(
            script
                .seen()
                .iter()
                .all(|r| r.path == path && r.body["model"] == model && r.body[system].is_string()),
            "{path}"
        );
        assert_eq!(last_line(&file)["shortSummary"], "short a", "{path}");
    }

    let remote = |t: &str| Reply::json(200, &json!({"summary": t}));
    let (out, file, _, script, _d) = compact_with(
        json!({"kind": "remote-endpoint", "baseUrl": "{url}/summarize", "model": "any"}),
        history_prefix_short(remote, "e", "f"),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(script.seen().iter().all(|r| r.path == "/summarize"
        && r.body["systemPrompt"].is_string()
        && r.body["prompt"].is_string()
        && r.body["maxTokens"].is_number()));
    // History and prefix run concurrently, so either may get either answer;
    // the merged summary holds both.
    let summary = last_line(&file)["summary"].as_str().unwrap().to_owned();
    assert!(
        summary.contains("- e")
            && summary.contains("- f")
            && summary.contains("**Turn Context (split turn):**"),
        "{summary}"
    );
}

/// `musepi compact FILE -o OUT --deterministic-ids` with `extra` (the
/// default strategy, snapcompact), which must succeed.
async fn compact_copy(file: &Path, out: &Path, extra: &[&str]) {
    let mut args = vec![
        "compact",
        file.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--deterministic-ids",
    ];
    args.extend(extra);
    let o = musepi(&args).await;
    assert!(o.status.success(), "{}", stderr(&o));
}

#[tokio::test]
async fn snapcompact_needs_no_server_and_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    for out in [&a, &b] {
        compact_copy(&file, out, &["--now", "2026-02-01T00:00:00.000Z"]).await;
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let entry = last_line(&a);
    assert_eq!(entry["type"], "compaction");
    assert!(entry["details"]["snapcompact"]["text"].is_string());
    // How it was made and the context after it, as oh-my-pi records them,
    // and the transcript's divider shows them.
    assert_eq!(entry["method"], "snapcompact");
    let after = entry["tokensAfter"].as_u64().unwrap();
    let o = musepi(&["context", a.to_str().unwrap(), "--json"]).await;
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["tokens"].as_u64(), Some(after));
    let o = musepi(&["context", a.to_str().unwrap(), "--transcript"]).await;
    let divider = format!(
        "── 📷 snapcompact · {} → {} ──",
        thousands(entry["tokensBefore"].as_u64().unwrap()),
        thousands(after)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&divider),
        "{divider}"
    );
    // The input file is untouched by -o.
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions/todo-refactor.jsonl");
    assert_eq!(std::fs::read(&file).unwrap(), std::fs::read(src).unwrap());
}

#[tokio::test]
async fn a_summary_cut_at_the_output_limit_is_stored_with_a_warning() {
    let cut = || support::chat("## Goal\n- the history, cut mid", "length");
    let (out, file, before, _, _dir) =
        compact_with(openai(IN_TIME_MS), vec![cut(), cut(), chat("short")]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let warning = "stopped at its output limit, so it may end mid-sentence; it is used as written";
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings: Vec<&str> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings.iter().all(|w| w.contains(warning)), "{warnings:?}");
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("the history answer of test"))
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("the turnPrefix answer of test"))
    );
    assert_eq!(stderr(&out).matches(warning).count(), 2, "{}", stderr(&out));
    assert_ne!(std::fs::read(&file).unwrap(), before);
    assert_eq!(last_line(&file)["type"], "compaction");
}

#[tokio::test]
async fn a_stalled_provider_ends_by_the_deadline_of_the_flag_or_the_settings() {
    let stalled = || chat("x").delayed(Duration::from_mins(1));
    let mut entry = openai(60_000);
    entry["deadlineMs"] = json!(300);
    let (out, file, before, _, _dir) = compact_with(entry, vec![stalled(), stalled()]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_stderr_has(
        &out,
        "test gave no answer within the 300 ms deadline (1 attempt)",
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["error"]["code"], "deadline-exceeded");
    assert_eq!(std::fs::read(&file).unwrap(), before);

    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let server = Server::start(vec![stalled(), stalled()]).await;
    let base = format!("{}/v1", server.url);
    let args = [
        "compact",
        file.to_str().unwrap(),
        "--strategy",
        "llm",
        "--base-url",
        &base,
    ];
    let out = musepi(&[&args[..], &["--model", "m", "--deadline", "0.4", "--json"]].concat()).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_stderr_has(&out, "within the 400 ms deadline");
    let out = musepi(&[&args[..], &["--model", "m", "--deadline", "soon"]].concat()).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("`soon` is not a positive number of seconds"));
}

#[tokio::test]
async fn an_endless_answer_or_a_redirect_elsewhere_writes_nothing() {
    let (out, file, before, _, _dir) =
        compact_with(openai(IN_TIME_MS), vec![Reply::endless(), Reply::endless()]).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["error"]["code"], "response-too-large");
    assert_eq!(std::fs::read(&file).unwrap(), before);

    let elsewhere = Server::start(vec![chat("## stolen"); 3]).await;
    let to = format!("{}/v1/chat/completions", elsewhere.url);
    let (out, file, before, _, _dir) = compact_with(
        openai(IN_TIME_MS),
        vec![Reply::redirect(307, &to), Reply::redirect(307, &to)],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["error"]["code"], "redirect-refused");
    assert!(elsewhere.seen().is_empty());
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[tokio::test]
async fn the_reserve_flag_sizes_the_snapcompact_archive() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let mut sizes = Vec::new();
    for reserve in ["4096", "65536"] {
        let out = dir.path().join(format!("r{reserve}.jsonl"));
        compact_copy(
            &file,
            &out,
            &["--reserve", reserve, "--keep-recent", "2000"],
        )
        .await;
        let text = last_line(&out)["details"]["snapcompact"]["text"]
            .as_str()
            .unwrap()
            .encode_utf16()
            .count();
        sizes.push(text);
    }
    // A reserve of 4,096 tokens gives the smallest archive, 12,000 characters.
    assert!(sizes[0] <= 12_000, "{sizes:?}");
    assert!(sizes[1] > sizes[0], "{sizes:?}");
}

/// `compact` as an agent with a model of its own calls it (the pi
/// extension): its provider on the command line, its default strategy, no
/// short summary. On the example session the cut splits a turn, so pi
/// sends two requests: the history and the turn prefix; so does musepi.
#[tokio::test]
async fn an_agents_compaction_sends_no_more_requests_than_pi_and_keeps_to_the_users_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::answering(|_| chat("## Goal\n- summarized")).await;
    let base = format!("{}/v1", server.url);
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let run = async |file: &Path, extra: &[&str]| {
        let mut args = vec![
            "compact".to_owned(),
            file.to_str().unwrap().to_owned(),
            "--json".to_owned(),
            "--no-prune".to_owned(),
            "--default-strategy".to_owned(),
            "llm".to_owned(),
            "--no-short-summary".to_owned(),
            "--provider".to_owned(),
            "openai-compatible".to_owned(),
            "--base-url".to_owned(),
            base.clone(),
            "--model".to_owned(),
            "agent-model".to_owned(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        tokio::process::Command::new(MUSEPI)
            .args(&args)
            .current_dir(dir.path())
            .env("HOME", &home)
            .env_remove("MUSEPI_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .output()
            .await
            .unwrap()
    };
    let file = support::example_session(dir.path(), "a.jsonl");
    let out = run(&file, &[]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["strategy"], "llm", "the agent's default");
    assert_eq!(doc["requests"], json!(["history", "turnPrefix"]));
    assert_eq!(server.seen().len(), 2);
    assert!(
        server
            .seen()
            .iter()
            .all(|r| r.body["model"] == "agent-model")
    );
    assert_eq!(last_line(&file)["shortSummary"], Value::Null);

    // A user who chose the archive in their settings gets the archive.
    std::fs::create_dir_all(home.join(".musepi")).unwrap();
    std::fs::write(
        home.join(".musepi/settings.json"),
        r#"{"compaction": {"strategy": "snapcompact"}}"#,
    )
    .unwrap();
    let file = support::example_session(dir.path(), "b.jsonl");
    let out = run(&file, &[]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["strategy"], "snapcompact");
    assert_eq!(server.seen().len(), 2, "no request for the archive");

    // A settings file with a problem: the JSON document says it, so an
    // agent that shows only the document shows it.
    std::fs::write(
        home.join(".musepi/settings.json"),
        r#"{"compaction": {"strategy": "summarize", "keepRecentTokens": "many"}}"#,
    )
    .unwrap();
    let file = support::example_session(dir.path(), "c.jsonl");
    let out = run(&file, &[]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = doc["warnings"].to_string();
    assert!(
        warnings.contains("compaction.strategy")
            && warnings.contains("compaction.keepRecentTokens"),
        "{warnings}"
    );
    assert_eq!(doc["strategy"], "llm", "an invalid strategy names none");
}

/// With `--archive-on-failure`, a model that fails leaves the archive in
/// place of a summary, with a warning, not a failure.
#[tokio::test]
async fn a_failed_summary_falls_back_to_the_archive_when_asked() {
    let e400 = || {
        Reply::json(
            400,
            &json!({"error": {"message": "the model is overloaded"}}),
        )
    };
    let mut entry = openai(IN_TIME_MS);
    entry["maxRetries"] = json!(0);
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let server = Server::start(vec![e400(), e400(), e400(), e400()]).await;
    entry["baseUrl"] = Value::String(format!("{}/v1", server.url));
    let settings = settings(dir.path(), &entry);
    let args = llm_compact(&file, &settings);
    let out = musepi(&[&args[..], &["--json", "--archive-on-failure"]].concat()).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["strategy"], "snapcompact");
    assert!(
        doc["warnings"][0]
            .as_str()
            .unwrap()
            .contains("the snapcompact archive was written instead"),
        "{}",
        doc["warnings"]
    );
    assert_eq!(last_line(&file)["type"], "compaction");
    // Without the flag the same failure writes nothing.
    let file = support::example_session(dir.path(), "again.jsonl");
    let before = std::fs::read(&file).unwrap();
    let server = Server::start(vec![e400(), e400(), e400(), e400()]).await;
    entry["baseUrl"] = Value::String(format!("{}/v1", server.url));
    let settings = self::settings(dir.path(), &entry);
    let args = llm_compact(&file, &settings);
    let out = musepi(&[&args[..], &["--json"]].concat()).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(std::fs::read(&file).unwrap(), before);
}
