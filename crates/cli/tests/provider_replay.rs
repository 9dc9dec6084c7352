//! The remote replay (docs/design.md, "What the model sees") on the wire, against a real HTTP server
//! on 127.0.0.1: a compaction that stored a provider-native history is sent
//! as that history by the `openai-responses` provider that stored it, and as
//! the summary followed by the kept messages by every other provider; and
//! `musepi compact --strategy remote` stores what `musepi context --llm`
//! then shows.

#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use musepi_context_builder::{LlmMessage, RequestPurpose, SummaryRequest, wrap_compaction};
use musepi_hooks::Summarizer;
use musepi_providers::{
    ApiKey, Provider, ProviderConfig, ProviderKind, RetryPolicy, Timing, build_client,
};
use musepi_session_model::{SequentialIds, Session, load_bytes};
use musepi_test_support::{session_of, text_block, tool_call};
use serde_json::{Value, json};
use support::{Reply, Server, code, stderr};
use tokio_util::sync::CancellationToken;

const SYSTEM: &str = "You write handoffs.";
const ASK: &str = "Write the handoff.";

// ---------------------------------------------------------------- server

/// A server answering by path: native compaction, responses, chat
/// completions and messages each get a fixed successful answer.
async fn server() -> Server {
    Server::answering(|seen| {
        let path = &seen.path;
        let reply = if path.ends_with("/responses/compact") {
            json!({"output": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "kept by the server"}]},
                {"type": "compaction", "encrypted_content": "ENC"},
            ]})
        } else if path.ends_with("/responses") {
            json!({"output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "## Goal\n- done"}]}], "status": "completed"})
        } else if path.ends_with("/chat/completions") {
            json!({"choices": [{"message": {"role": "assistant", "content": "## Goal\n- done"}, "finish_reason": "stop"}]})
        } else {
            json!({"content": [{"type": "text", "text": "## Goal\n- done"}], "stop_reason": "end_turn"})
        };
        Reply::json(200, &reply)
    })
    .await
}

fn provider(kind: ProviderKind, name: &str, url: &str) -> Provider {
    let base = match kind {
        ProviderKind::Anthropic => url.to_owned(),
        _ => format!("{url}/v1"),
    };
    // Time enough for a loopback answer on the busiest machine.
    let mut timing = Timing::default();
    timing.timeout = Duration::from_mins(1);
    timing.retry = RetryPolicy {
        max_attempts: 1,
        ..RetryPolicy::default()
    };
    let config = ProviderConfig::new(kind, base)
        .with_name(name)
        .with_model("test-model")
        .with_api_key(ApiKey::new("sk-test"))
        .with_timing(timing);
    Provider::new(config, build_client(Duration::from_mins(1)).unwrap())
}

// ---------------------------------------------------------------- session

const ITEMS: &str = r#"[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "one"}]}, {"type": "compaction", "encrypted_content": "ENC"}]"#;

/// A user message entry, sent at `timestamp`.
fn user(text: &str, timestamp: u64) -> Value {
    json!({"type": "message", "message": {"role": "user", "content": text, "timestamp": timestamp}})
}

/// An assistant message entry of the `openai` model `m`.
fn assistant(content: &[Value], stop_reason: &str, timestamp: u64) -> Value {
    json!({"type": "message", "message": {
        "role": "assistant", "content": content, "provider": "openai", "model": "m",
        "stopReason": stop_reason, "timestamp": timestamp,
    }})
}

/// `u1 a1 [u2 a2(call t1)] C r1(t1) a3 u4`: the kept assistant's call is
/// answered after the compaction, whose replay was stored by `stored_by`.
fn session(stored_by: &str) -> Session {
    let items: Value = serde_json::from_str(ITEMS).unwrap();
    session_of(&[
        ("u1", None, user("one", 1)),
        ("a1", Some("u1"), assistant(&[text_block("A1")], "stop", 2)),
        ("u2", Some("a1"), user("two", 3)),
        (
            "a2",
            Some("u2"),
            assistant(
                &[
                    text_block("A2"),
                    tool_call("t1", "read", &json!({"path": "a.rs"})),
                ],
                "toolUse",
                4,
            ),
        ),
        (
            "c",
            Some("a2"),
            json!({"type": "compaction", "summary": "S", "firstKeptEntryId": "u2", "tokensBefore": 100,
               "preserveData": {"openaiRemoteCompaction": {"provider": stored_by, "replacementHistory": items, "compactionItem": {"type": "compaction", "encrypted_content": "ENC"}}}}),
        ),
        (
            "r1",
            Some("c"),
            json!({"type": "message", "message": {"role": "toolResult", "toolCallId": "t1", "toolName": "read", "content": [{"type": "text", "text": "fn main"}], "isError": false, "timestamp": 5}}),
        ),
        ("a3", Some("r1"), assistant(&[text_block("A3")], "stop", 6)),
        ("u4", Some("a3"), user("four", 7)),
    ])
}

/// A handoff request over the live messages, as the runtime builds one.
fn handoff(session: &Session) -> SummaryRequest {
    let mut messages = musepi_runtime::model_messages(session);
    messages.push(LlmMessage::user_text(ASK));
    SummaryRequest {
        purpose: RequestPurpose::Handoff,
        system_prompt: SYSTEM.to_owned(),
        messages,
        max_tokens: None,
        reasoning: None,
    }
}

/// Sends the handoff of `session` through `provider` and returns the body.
async fn sent(provider: &Provider, session: &Session, seen: &Server) -> Value {
    provider
        .summarize(&handoff(session), CancellationToken::new())
        .await
        .unwrap();
    seen.bodies().last().unwrap().clone()
}

/// What a provider of `kind` named `name` sends for the handoff of a
/// session whose last compaction kept the `openai-responses` history.
async fn handoff_body(kind: ProviderKind, name: &str) -> Value {
    let seen = server().await;
    let url = seen.url.clone();
    sent(
        &provider(kind, name, &url),
        &session("openai-responses"),
        &seen,
    )
    .await
}

fn input_text(role: &str, text: &str) -> Value {
    json!({"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]})
}

fn output_text(text: &str) -> Value {
    json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
}

/// The summary as it is sent: musepi's wrapper, naming the entries before
/// the one the compaction kept first and the recall tool.
fn summary() -> String {
    wrap_compaction("S", Some("u2"))
}

// ---------------------------------------------------------------- tests

#[tokio::test]
async fn responses_sends_its_own_stored_history_in_place_of_the_summary_and_kept_messages() {
    let body = handoff_body(ProviderKind::OpenaiResponses, "openai-responses").await;
    let mut input: Vec<Value> = serde_json::from_str(ITEMS).unwrap();
    // The kept call went with the history, so its result goes too.
    input.extend([
        output_text("A3"),
        input_text("user", "four"),
        input_text("user", ASK),
    ]);
    assert_eq!(body["input"], Value::Array(input));
    assert_eq!(body["instructions"], SYSTEM);
}

#[tokio::test]
async fn responses_sends_another_providers_history_as_the_summary_and_kept_messages() {
    let body = handoff_body(ProviderKind::OpenaiResponses, "azure").await;
    let input = json!([
        input_text("user", &summary()),
        input_text("user", "two"),
        output_text("A2"),
        {"type": "function_call", "call_id": "t1", "name": "read", "arguments": "{\"path\":\"a.rs\"}"},
        {"type": "function_call_output", "call_id": "t1", "output": "fn main"},
        output_text("A3"),
        input_text("user", "four"),
        input_text("user", ASK),
    ]);
    assert_eq!(body["input"], input);
}

#[tokio::test]
async fn chat_completions_and_anthropic_send_the_summary_and_kept_messages() {
    let body = handoff_body(ProviderKind::OpenaiCompatible, "openai-responses").await;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": summary()},
            {"role": "user", "content": "two"},
            {"role": "assistant", "content": "A2", "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "t1", "content": "fn main"},
            {"role": "assistant", "content": "A3"},
            {"role": "user", "content": "four"},
            {"role": "user", "content": ASK},
        ])
    );
    let body = handoff_body(ProviderKind::Anthropic, "openai-responses").await;
    let text = |t: &str| json!({"type": "text", "text": t});
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [text(&summary()), text("two")]},
            {"role": "assistant", "content": [text("A2"), {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.rs"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [text("fn main")]}]},
            {"role": "assistant", "content": [text("A3")]},
            {"role": "user", "content": [text("four"), text(ASK)]},
        ])
    );
}

// ---------------------------------------------------------------- end to end

async fn musepi(args: &[&str]) -> std::process::Output {
    support::musepi_async(args).await
}

fn context(out: &std::process::Output) -> Vec<Value> {
    assert_eq!(code(out), 0, "{}", stderr(out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["messages"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_remote_compaction_is_stored_under_the_provider_name_and_replayed_by_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = support::example_session(dir.path(), "s.jsonl");
    let seen = server().await;
    let url = seen.url.clone();
    let settings = dir.path().join("settings.json");
    let entry =
        json!({"kind": "openai-responses", "baseUrl": format!("{url}/v1"), "model": "gpt-test"});
    std::fs::write(&settings, json!({"providers": {"work": entry}}).to_string()).unwrap();
    let file_arg = file.to_str().unwrap();
    let out = musepi(&[
        "compact",
        file_arg,
        "--strategy",
        "remote",
        "--provider",
        "work",
        "--settings",
        settings.to_str().unwrap(),
        "--now",
        "2026-02-01T00:00:00.000Z",
    ])
    .await;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        seen.seen()
            .iter()
            .any(|s| s.path == "/v1/responses/compact")
    );
    let written: Value = serde_json::from_str(
        std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(written["method"], "remote");

    // The context list is the reference's; the provider messages carry the
    // payload in place of the kept messages.
    let plain = context(&musepi(&["context", file_arg, "--json"]).await);
    let llm = context(&musepi(&["context", file_arg, "--llm", "--json"]).await);
    let payload = &llm[0]["providerPayload"];
    let kept = payload["keptMessages"].as_u64().unwrap();
    assert_eq!(
        *payload,
        json!({"type": "openaiResponsesHistory", "provider": "work", "items": 2, "keptMessages": kept})
    );
    assert!(kept > 0);
    assert!(plain.iter().all(|m| m.get("providerPayload").is_none()));
    assert_eq!(
        llm[1..].len() + usize::try_from(kept).unwrap(),
        plain.len() - 1
    );
    let full = context(&musepi(&["context", file_arg, "--llm", "--json", "--full"]).await);
    assert_eq!(
        full[0]["message"]["providerPayload"]["items"][1],
        json!({"type": "compaction", "encrypted_content": "ENC"})
    );

    // The provider under that name sends the stored history first.
    let text = std::fs::read(&file).unwrap();
    let session = load_bytes(&file, &text, &mut SequentialIds::new()).unwrap();
    let work = provider(ProviderKind::OpenaiResponses, "work", &url);
    let body = sent(&work, &session, &seen).await;
    assert_eq!(
        body["input"].as_array().unwrap()[..2],
        [
            input_text("user", "kept by the server"),
            json!({"type": "compaction", "encrypted_content": "ENC"})
        ]
    );
    let other = provider(ProviderKind::OpenaiResponses, "openai", &url);
    let body = sent(&other, &session, &seen).await;
    assert_eq!(
        body["input"][0]["content"][0]["text"]
            .as_str()
            .map(|t| t.contains("<summary>")),
        Some(true)
    );
}
