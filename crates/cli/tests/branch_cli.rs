//! `musepi branch` end to end: the summary request a loopback provider
//! receives, the `branch_summary` entry under the target, and the context
//! after navigation; plus navigation without a summary and the digest.

#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;
use support::{
    Reply, Server, assert_escaped, assert_has, assert_stderr_has, code, last_line, musepi_async_in,
    openai_compatible, p, stderr, strings,
};

/// A model on 127.0.0.1 answering every request with the same summary.
async fn server() -> Server {
    Server::answering(|_| {
        Reply::json(
            200,
            &json!({"choices": [{"message": {"role": "assistant", "content": "## Goal\n- Try plan B for the parser"}, "finish_reason": "stop"}]}),
        )
    })
    .await
}

/// start (user) → ok (assistant) → plan B (user) → reading (assistant with a read),
/// as `t.jsonl` in a temporary folder that lives as long as the value.
fn tree() -> (tempfile::TempDir, PathBuf) {
    tree_with(|text| text)
}

/// [`tree`], its JSON lines' text changed by `edit` before it is written.
fn tree_with(edit: impl FnOnce(String) -> String) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        json!({"type":"session","version":3,"id":"t1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}),
        json!({"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"Port the parser.","timestamp":1}}),
        json!({"type":"message","id":"b2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Which plan?"}],"provider":"p","model":"m","stopReason":"stop","timestamp":2}}),
        json!({"type":"message","id":"c3","parentId":"b2","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"user","content":"Try plan B: a hand-written lexer.","timestamp":3}}),
        json!({"type":"message","id":"d4","parentId":"c3","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Reading the lexer."},{"type":"toolCall","id":"r1","name":"read","arguments":{"path":"src/lexer.rs"}}],"provider":"p","model":"m","stopReason":"toolUse","timestamp":4}}),
    ];
    let path = dir.path().join("t.jsonl");
    let text = lines.iter().fold(String::new(), |mut acc, l| {
        acc.push_str(&l.to_string());
        acc.push('\n');
        acc
    });
    std::fs::write(&path, edit(text)).unwrap();
    support::settle(&path);
    (dir, path)
}

/// `musepi branch FILE ARGS…`, run in the file's folder.
async fn branch(file: &Path, args: &[&str]) -> Output {
    let mut all = vec!["branch", p(file)];
    all.extend(args);
    musepi_async_in(file.parent().unwrap(), &all).await
}

/// What `musepi context FILE --json` prints, run in the file's folder.
async fn context(file: &Path) -> Value {
    let out = musepi_async_in(file.parent().unwrap(), &["context", p(file), "--json"]).await;
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What `run` answered, asserting that it left `file` byte for byte as it was.
async fn writing_nothing(file: &Path, run: impl Future<Output = Output>) -> Output {
    let before = std::fs::read(file).unwrap();
    let out = run.await;
    assert_eq!(std::fs::read(file).unwrap(), before, "{}", stderr(&out));
    out
}

/// `musepi branch FILE --to b2 --summarize ARGS…`: back to the assistant's
/// question, summarizing plan B on the way.
async fn summarize_to_b2(file: &Path, args: &[&str]) -> Output {
    branch(file, &[&["--to", "b2", "--summarize"], args].concat()).await
}

/// The summary request asks for the session's thinking level where the
/// navigation starts (`reasoning_effort` for an OpenAI-compatible model), as
/// the dry run's request shows; a session without a level asks for none
/// (the test above).
#[tokio::test]
async fn the_summary_request_carries_the_thinking_level() {
    let (_dir, file) = tree_with(|text| {
        let level = json!({"type":"thinking_level_change","id":"t0","parentId":null,"timestamp":"2026-01-01T00:00:00.500Z","thinkingLevel":"low"});
        let text = text.replacen(
            r#""id":"a1","parentId":null"#,
            r#""id":"a1","parentId":"t0""#,
            1,
        );
        let (header, rest) = text.split_once('\n').unwrap();
        format!("{header}\n{level}\n{rest}")
    });
    let server = server().await;
    let base = format!("{}/v1", server.url);
    let provider = openai_compatible(&base);
    let dry = branch(
        &file,
        &[
            &["--to", "b2", "--summarize", "--dry-run", "--json"],
            &provider[..],
        ]
        .concat(),
    )
    .await;
    assert_eq!(code(&dry), 0, "{}", stderr(&dry));
    let doc: Value = serde_json::from_slice(&dry.stdout).unwrap();
    assert_eq!(doc["request"]["reasoning"], "low", "{doc}");
    let out = summarize_to_b2(&file, &[&provider[..], &["--json"]].concat()).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let requests = server.bodies();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["reasoning_effort"], "low");
}

#[tokio::test]
async fn a_summary_is_requested_stored_under_the_target_and_seen_in_the_context() {
    let (_dir, file) = tree();
    let server = server().await;
    let base = format!("{}/v1", server.url);
    let flags = [
        "--now",
        "2026-02-01T00:00:00.000Z",
        "--deterministic-ids",
        "--json",
    ];
    let out = summarize_to_b2(&file, &[&openai_compatible(&base)[..], &flags].concat()).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let requests = server.bodies();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r["max_tokens"], 2048);
    assert!(r.get("reasoning_effort").is_none());
    let prompt = r["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.starts_with("<conversation>\n[User]: Try plan B: a hand-written lexer.\n\n[Assistant]: Reading the lexer.\n\n[Assistant tool calls]: read(path=\"src/lexer.rs\")\n</conversation>\n\n"), "{prompt}");
    let entry = last_line(&file);
    assert_eq!(entry["type"], "branch_summary");
    assert_eq!(entry["parentId"], "b2");
    assert_eq!(entry["fromId"], "b2");
    assert_eq!(entry["fromExtension"], false);
    let summary = entry["summary"].as_str().unwrap();
    assert_has(
        summary,
        "## Goal\n- Try plan B for the parser\n\n<files>\n# src/\nlexer.rs (Read)\n</files>",
    );
    assert_eq!(entry["details"]["readFiles"], json!(["src/lexer.rs"]));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["abandoned"], json!(["c3", "d4"]));
    let ctx = context(&file).await;
    assert_eq!(
        strings(&ctx["messages"], "role"),
        ["user", "assistant", "branchSummary"]
    );
}

/// The human report escapes what it prints from the session and the model:
/// the ids (`from`, `to`), the summary (its line breaks kept), the dry
/// run's request.
#[tokio::test]
async fn the_report_escapes_ids_and_the_summary() {
    // The tree's ids and its user's plan carry escape sequences.
    let (_dir, file) = tree_with(|text| {
        text.replace(r#""b2""#, r#""b\u001b[2J""#)
            .replace(r#""d4""#, r#""d\u001b[3J""#)
            .replace("Try plan B:", r"Try plan B \u001b]0;t\u0007 now:")
    });
    let server = Server::answering(|_| {
        Reply::json(
            200,
            &json!({"choices": [{"message": {"role": "assistant", "content": "## Goal\r\n- plan \u{1b}[2JB\n- next\u{7}"}, "finish_reason": "stop"}]}),
        )
    })
    .await;
    let base = format!("{}/v1", server.url);
    let llm = openai_compatible(&base);
    let dry = branch(
        &file,
        &[
            &[
                "--to",
                "b\u{1b}[2J",
                "--dry-run",
                "--summarize",
                "--show-prompts",
            ],
            &llm[..],
        ]
        .concat(),
    )
    .await;
    let out = branch(
        &file,
        &[&["--to", "b\u{1b}[2J", "--summarize"], &llm[..]].concat(),
    )
    .await;
    for o in [&dry, &out] {
        assert_eq!(code(o), 0, "{}", stderr(o));
        let text = String::from_utf8_lossy(&o.stdout);
        assert_escaped(&text, &[]);
        let row = |key: &str, value: &str| {
            text.lines()
                .any(|l| l.starts_with(key) && l.ends_with(&format!("  {value}")))
        };
        assert!(row("from ", "d\\u001b[3J"), "{text}");
        assert!(row("to ", "b\\u001b[2J"), "{text}");
    }
    let dry = String::from_utf8_lossy(&dry.stdout);
    assert_has(
        &dry,
        "[User]: Try plan B \\u001b]0;t\\u0007 now: a hand-written lexer.",
    );
    let out = String::from_utf8_lossy(&out.stdout);
    assert_has(&out, "\n  ## Goal\n  - plan \\u001b[2JB\n  - next\\u0007\n");
}

/// The report shows the summary's first ten lines and, when it cut, says
/// so with a `…` line, as `compact` does.
#[tokio::test]
async fn a_long_summary_is_cut_with_an_ellipsis() {
    let (_dir, file) = tree();
    let summary: Vec<String> = (1..=12).map(|i| format!("- point {i}")).collect();
    let content = format!("## Goal\n{}", summary.join("\n"));
    let server = Server::answering(move |_| {
        Reply::json(
            200,
            &json!({"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}),
        )
    })
    .await;
    let base = format!("{}/v1", server.url);
    let out = summarize_to_b2(&file, &openai_compatible(&base)).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let shown = text.split_once("summary:\n").unwrap().1;
    // The stored summary starts with pi's four lines of preamble.
    assert_eq!(shown.lines().count(), 11, "{text}");
    assert!(
        shown.ends_with("\n  ## Goal\n  - point 1\n  - point 2\n  - point 3\n  - point 4\n  - point 5\n  - point 6\n  …\n"),
        "ten lines, then the cut:\n{text}"
    );
}

#[tokio::test]
async fn navigation_without_a_summary_records_the_new_leaf() {
    let (_dir, file) = tree();
    let out = branch(&file, &["--to", "b2", "--json"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let entry = last_line(&file);
    assert_eq!(entry["type"], "custom");
    assert_eq!(entry["parentId"], "b2");
    assert_eq!(entry["customType"], "musepi.navigate");
    let ctx = context(&file).await;
    assert_eq!(ctx["messages"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn the_digest_needs_no_model_and_dry_run_writes_nothing() {
    let (_dir, file) = tree();
    let args = ["--to", "root", "--summarize", "--dry-run", "--json"];
    let dry = writing_nothing(&file, branch(&file, &args)).await;
    assert!(dry.status.success());
    let plan: Value = serde_json::from_slice(&dry.stdout).unwrap();
    assert_eq!(plan["entries"], json!(["a1", "b2", "c3", "d4"]));
    assert_eq!(plan["commonAncestorId"], Value::Null);
    assert_eq!(plan["tokenBudget"], 111_616);
    // No provider: the run writes the digest, and the dry run shows it
    // (it sends no request).
    assert_eq!(plan["strategy"], "snapcompact");
    assert_eq!(plan["request"], Value::Null);
    assert!(
        plan["digest"]
            .as_str()
            .unwrap()
            .contains("Port the parser.")
    );
    let out = summarize_to_b2(&file, &["--strategy", "snapcompact"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let entry = last_line(&file);
    assert_eq!(entry["type"], "branch_summary");
    assert!(
        entry["summary"]
            .as_str()
            .unwrap()
            .contains("Try plan B: a hand-written lexer.")
    );
    let bad = branch(&file, &["--to", "nope"]).await;
    assert_eq!(bad.status.code(), Some(2));
}

#[tokio::test]
async fn summarize_without_a_provider_writes_the_digest() {
    let (_dir, file) = tree();
    let out = summarize_to_b2(&file, &["--json"]).await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_stderr_has(&out, "snapcompact digest");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["strategy"], "snapcompact");
    let entry = last_line(&file);
    assert_eq!(entry["type"], "branch_summary");
    assert_eq!(entry["parentId"], "b2");
    assert!(
        entry["summary"]
            .as_str()
            .unwrap()
            .contains("Try plan B: a hand-written lexer."),
        "{entry}"
    );
}

#[tokio::test]
async fn summarize_with_an_unusable_provider_is_an_error_and_writes_nothing() {
    let (_dir, file) = tree();
    // No API key reaches it: the environment's are removed.
    let provider = ["--provider", "openai-responses", "--model", "gpt-4.1-mini"];
    let out = writing_nothing(&file, summarize_to_b2(&file, &provider)).await;
    assert_eq!(out.status.code(), Some(2));
    assert_stderr_has(&out, "no API key");
}
