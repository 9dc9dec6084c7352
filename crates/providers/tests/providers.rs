//! Provider tests against a real HTTP server on 127.0.0.1: the requests each
//! provider sends, and what it makes of every kind of answer.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use musepi_context_builder::{LlmMessage, RequestPurpose, SummaryRequest};
use musepi_hooks::{
    RemoteCompactInput, RemoteCompactor, RemoteFailure, SummarizeError, Summarizer,
};
use musepi_providers::{
    ApiKey, DeveloperRole, NativeCompactionRequest, OpenAiRemoteCompaction, Provider,
    ProviderConfig, ProviderKind, RetryNotice, RetryPolicy, Timing, build_client,
};
use musepi_session_model::{ContentBlock, JsonValue, Text, ToolCall, Usage};
use musepi_test_support::http::{Reply, Seen, Server};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const KEY: &str = "sk-test-secret-0123456789";
const SYSTEM: &str = "You are a summarizer.";
const PROMPT: &str = "<conversation>\n[User]: fix the bug\n</conversation>\n\nSummarize.";
const SUMMARY: &str = "## Goal\nFix the bug.";

// ---------------------------------------------------------------- providers

/// The provider flavours under test.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Flavour {
    Chat,
    Anthropic,
    Responses,
    RemoteCustom,
    RemoteChat,
}

const ALL: [Flavour; 5] = [
    Flavour::Chat,
    Flavour::Anthropic,
    Flavour::Responses,
    Flavour::RemoteCustom,
    Flavour::RemoteChat,
];

impl Flavour {
    /// This flavour's provider on `server`, with a key.
    fn config(self, server: &Server) -> ProviderConfig {
        self.keyless_config(server).with_api_key(ApiKey::new(KEY))
    }

    /// This flavour's provider on `server`, without a key.
    fn keyless_config(self, server: &Server) -> ProviderConfig {
        let (kind, base) = match self {
            Self::Chat => (ProviderKind::OpenaiCompatible, format!("{}/v1", server.url)),
            Self::Anthropic => (ProviderKind::Anthropic, server.url.clone()),
            Self::Responses => (ProviderKind::OpenaiResponses, format!("{}/v1/", server.url)),
            Self::RemoteCustom => (
                ProviderKind::RemoteEndpoint,
                format!("{}/summarize", server.url),
            ),
            Self::RemoteChat => (
                ProviderKind::RemoteEndpoint,
                format!("{}/v1/chat/completions", server.url),
            ),
        };
        // Time enough for a loopback answer on the busiest machine; the
        // tests of timeouts and deadlines set their own.
        let mut timing = Timing::default();
        timing.timeout = Duration::from_mins(1);
        timing.retry = RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(40),
            max_retry_after: Duration::from_secs(5),
            jitter: false,
        };
        ProviderConfig::new(kind, base)
            .with_model("test-model")
            .with_timing(timing)
    }

    /// Starts a server answering `replies` and returns the error this
    /// flavour's provider reports, with the server.
    async fn fails(self, replies: Vec<Reply>) -> (SummarizeError, Server) {
        let server = Server::start(replies).await;
        let error = summarize(&self.provider(&server)).await.unwrap_err();
        (error, server)
    }

    fn provider(self, server: &Server) -> Provider {
        Provider::new(self.config(server), client())
    }

    fn path(self) -> &'static str {
        match self {
            Self::Chat | Self::RemoteChat => "/v1/chat/completions",
            Self::Anthropic => "/v1/messages",
            Self::Responses => "/v1/responses",
            Self::RemoteCustom => "/summarize",
        }
    }

    /// A successful answer carrying `text`.
    fn ok(self, text: &str) -> Reply {
        let body = match self {
            Self::Chat | Self::RemoteChat => json!({
                "id": "chatcmpl-1",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
                          "prompt_tokens_details": {"cached_tokens": 20}},
            }),
            Self::Anthropic => {
                let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
                json!({
                    "type": "message",
                    "content": [
                        {"type": "thinking", "thinking": "let me think", "signature": "sig"},
                        {"type": "text", "text": first},
                        {"type": "text", "text": rest},
                    ],
                    "stop_reason": "end_turn",
                    "usage": {"input_tokens": 100, "output_tokens": 30,
                              "cache_read_input_tokens": 20, "cache_creation_input_tokens": 0},
                })
            }
            Self::Responses => json!({
                "object": "response",
                "status": "completed",
                "output": [
                    {"type": "reasoning", "id": "rs_1", "summary": []},
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]},
                ],
                "usage": {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150,
                          "input_tokens_details": {"cached_tokens": 20}},
            }),
            Self::RemoteCustom => json!({"summary": text, "shortSummary": "Fixing the bug"}),
        };
        Reply::json(200, &body)
    }

    /// A refusal, where the protocol has one.
    fn refusal(self) -> Option<Reply> {
        let body = match self {
            Self::Chat | Self::RemoteChat => json!({
                "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "refusal": "I can't help with that."}, "finish_reason": "stop"}],
            }),
            Self::Anthropic => json!({"content": [], "stop_reason": "refusal"}),
            Self::Responses => json!({
                "output": [{"type": "message", "role": "assistant",
                            "content": [{"type": "refusal", "refusal": "I can't help with that."}]}],
            }),
            Self::RemoteCustom => return None,
        };
        Some(Reply::json(200, &body))
    }

    /// The provider's usual error body.
    fn error(self, status: u16, message: &str) -> Reply {
        let body = match self {
            Self::Anthropic => {
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
            }
            _ => json!({"error": {"message": message, "type": "invalid_request_error"}}),
        };
        Reply::json(status, &body)
    }
}

/// A client whose connect timeout no busy machine reaches on loopback.
fn client() -> reqwest::Client {
    build_client(Duration::from_mins(1)).unwrap()
}

fn request() -> SummaryRequest {
    SummaryRequest::single(
        RequestPurpose::History,
        SYSTEM,
        PROMPT,
        Some(13107),
        Some("high".to_owned()),
    )
}

async fn summarize(provider: &Provider) -> Result<String, SummarizeError> {
    provider
        .summarize(&request(), CancellationToken::new())
        .await
        .map(|r| r.text)
}

/// The error of a `flavour` provider, its configuration changed by
/// `configure`, whose server answers each of three requests only after
/// `delay`; and the server, which keeps the requests it read.
async fn stalled_error(
    flavour: Flavour,
    delay: Duration,
    time: impl FnOnce(&mut Timing),
) -> (SummarizeError, Server) {
    let stalled = flavour.ok(SUMMARY).delayed(delay);
    let server = Server::start(vec![stalled.clone(), stalled.clone(), stalled]).await;
    let config = retimed(flavour.config(&server), time);
    let error = summarize(&Provider::new(config, client()))
        .await
        .unwrap_err();
    (error, server)
}

/// `config` with its timing changed by `change`.
fn retimed(config: ProviderConfig, change: impl FnOnce(&mut Timing)) -> ProviderConfig {
    let mut timing = config.timing().clone();
    change(&mut timing);
    config.with_timing(timing)
}

fn header<'a>(seen: &'a Seen, name: &str) -> Option<&'a str> {
    seen.headers.get(name).and_then(|v| v.to_str().ok())
}

// ---------------------------------------------------------------- request bodies and headers

#[tokio::test]
async fn every_provider_sends_the_prompt_limits_and_credentials() {
    for flavour in ALL {
        let server = Server::start(vec![flavour.ok(SUMMARY)]).await;
        summarize(&flavour.provider(&server)).await.unwrap();
        let seen = server.seen();
        assert_eq!(seen.len(), 1, "{flavour:?}");
        let seen = &seen[0];
        assert_eq!(seen.path, flavour.path(), "{flavour:?}");
        assert_eq!(header(seen, "content-type"), Some("application/json"));
        let expected = match flavour {
            Flavour::Chat => json!({
                "model": "test-model",
                "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}],
                "max_tokens": 13107,
                "reasoning_effort": "high",
                "stream": false,
            }),
            Flavour::Anthropic => json!({
                "model": "test-model",
                "max_tokens": 13107 + 16384,
                "system": SYSTEM,
                "messages": [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}],
                "thinking": {"type": "enabled", "budget_tokens": 16384},
            }),
            Flavour::Responses => json!({
                "model": "test-model",
                "instructions": SYSTEM,
                "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": PROMPT}]}],
                "max_output_tokens": 13107,
                "reasoning": {"effort": "high"},
                "store": false,
            }),
            Flavour::RemoteCustom => {
                json!({"systemPrompt": SYSTEM, "prompt": PROMPT, "maxTokens": 13107})
            }
            Flavour::RemoteChat => json!({
                "model": "test-model",
                "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}],
                "stream": false,
                "max_tokens": 13107,
            }),
        };
        assert_eq!(seen.body, expected, "{flavour:?}");
        if flavour == Flavour::Anthropic {
            assert_eq!(header(seen, "x-api-key"), Some(KEY));
            assert_eq!(header(seen, "anthropic-version"), Some("2023-06-01"));
            assert_eq!(header(seen, "authorization"), None);
        } else {
            assert_eq!(
                header(seen, "authorization"),
                Some(format!("Bearer {KEY}").as_str())
            );
        }
    }
}

#[tokio::test]
async fn limits_and_reasoning_follow_the_settings() {
    let server = Server::start(vec![
        Flavour::Chat.ok(SUMMARY),
        Flavour::Anthropic.ok(SUMMARY),
    ])
    .await;
    let chat = Flavour::Chat
        .keyless_config(&server)
        .with_max_tokens(4096)
        .with_reasoning("off");
    let provider = Provider::new(chat, client());
    summarize(&provider).await.unwrap();
    let anthropic = Flavour::Anthropic.config(&server).with_reasoning("off");
    let provider = Provider::new(anthropic, client());
    let no_limit = SummaryRequest::single(RequestPurpose::Handoff, SYSTEM, PROMPT, None, None);
    provider
        .summarize(&no_limit, CancellationToken::new())
        .await
        .unwrap();

    let seen = server.seen();
    assert_eq!(seen[0].body["max_tokens"], 4096);
    assert_eq!(seen[0].body.get("reasoning_effort"), None);
    assert_eq!(header(&seen[0], "authorization"), None);
    assert_eq!(seen[1].body["max_tokens"], 8192);
    assert_eq!(seen[1].body.get("thinking"), None);
}

#[tokio::test]
async fn rejected_parameters_are_dropped_or_renamed_once() {
    let server = Server::start(vec![
        Flavour::Chat.error(400, "Unsupported parameter: 'reasoning_effort' is not supported with this model."),
        Flavour::Chat.error(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        ),
        Flavour::Chat.ok(SUMMARY),
        Flavour::Anthropic.error(400, "thinking: this model does not support extended thinking"),
        Flavour::Anthropic.ok(SUMMARY),
        Flavour::Responses.error(400, "Unsupported parameter: 'reasoning.effort' is not supported with this model."),
        Flavour::Responses.ok(SUMMARY),
        Flavour::Chat.error(400, "Unsupported parameter: 'reasoning_effort'"),
        Flavour::Chat.error(400, "Unsupported parameter: 'reasoning_effort'"),
    ])
    .await;
    for flavour in [Flavour::Chat, Flavour::Anthropic, Flavour::Responses] {
        assert_eq!(
            summarize(&flavour.provider(&server)).await.as_deref(),
            Ok(SUMMARY)
        );
    }
    let seen = server.seen();
    let keys =
        |i: usize| -> Vec<String> { seen[i].body.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(0),
        [
            "model",
            "messages",
            "max_tokens",
            "reasoning_effort",
            "stream"
        ]
    );
    assert_eq!(keys(1), ["model", "messages", "max_tokens", "stream"]);
    assert_eq!(
        keys(2),
        ["model", "messages", "max_completion_tokens", "stream"]
    );
    assert_eq!(seen[2].body["max_completion_tokens"], 13107);
    assert_eq!(seen[3].body["thinking"]["budget_tokens"], 16384);
    assert_eq!(
        (seen[4].body.get("thinking"), &seen[4].body["max_tokens"]),
        (None, &json!(13107))
    );
    assert_eq!(seen[5].body["reasoning"], json!({"effort": "high"}));
    assert_eq!(seen[6].body.get("reasoning"), None);

    // A second rejection of the same parameter is the answer.
    let error = summarize(&Flavour::Chat.provider(&server))
        .await
        .unwrap_err();
    assert_eq!(error.status(), Some(400));
    assert_eq!(server.seen().len(), 9);
}

/// A history with every kind of message and block.
fn rich_request() -> SummaryRequest {
    let image = ContentBlock::Image {
        data: "AAAA".to_owned(),
        mime_type: "image/png".to_owned(),
        detail: None,
    };
    let call = ToolCall {
        id: "call_1".to_owned(),
        name: Text::new("read"),
        arguments: JsonValue::new(json!({"path": "a.rs"})),
        intent: None,
    };
    SummaryRequest {
        purpose: RequestPurpose::Handoff,
        system_prompt: SYSTEM.to_owned(),
        messages: vec![
            LlmMessage::Developer {
                content: vec![ContentBlock::text("DEV")],
            },
            LlmMessage::User {
                content: vec![ContentBlock::text("hi"), image.clone()],
            },
            LlmMessage::Assistant {
                content: vec![
                    ContentBlock::Thinking {
                        thinking: Text::new("hmm"),
                        thinking_signature: None,
                        redacted: None,
                    },
                    ContentBlock::text("ok"),
                    ContentBlock::ToolCall(call),
                ],
                provider: None,
                model: None,
                stop_reason: None,
            },
            LlmMessage::ToolResult {
                tool_call_id: "call_1".to_owned(),
                tool_name: "read".to_owned(),
                content: vec![ContentBlock::text("contents"), image],
                is_error: false,
            },
            LlmMessage::user_text("go on"),
        ],
        max_tokens: None,
        reasoning: None,
    }
}

#[tokio::test]
async fn histories_map_to_each_wire_format() {
    let server = Server::start(vec![
        Flavour::Chat.ok(SUMMARY),
        Flavour::Chat.ok(SUMMARY),
        Flavour::Anthropic.ok(SUMMARY),
        Flavour::Responses.ok(SUMMARY),
    ])
    .await;
    let request = rich_request();
    let image_url =
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}});
    let user_dev = Flavour::Chat
        .config(&server)
        .with_developer_role(DeveloperRole::User);
    for provider in [
        Flavour::Chat.provider(&server),
        Provider::new(user_dev, client()),
        Flavour::Anthropic.provider(&server),
        Flavour::Responses.provider(&server),
    ] {
        provider
            .summarize(&request, CancellationToken::new())
            .await
            .unwrap();
    }
    let seen = server.seen();
    let chat_messages = |developer: &str| {
        json!([
            {"role": "system", "content": SYSTEM},
            {"role": developer, "content": "DEV"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}, image_url]},
            {"role": "assistant", "content": "ok", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "contents"},
            {"role": "user", "content": [{"type": "text", "text": "Images returned by the tool:"}, image_url]},
            {"role": "user", "content": "go on"},
        ])
    };
    assert_eq!(seen[0].body["messages"], chat_messages("developer"));
    assert_eq!(seen[0].body.get("max_tokens"), None);
    assert_eq!(seen[1].body["messages"], chat_messages("user"));

    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}});
    assert_eq!(
        seen[2].body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "DEV"}, {"type": "text", "text": "hi"}, image]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a.rs"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": [{"type": "text", "text": "contents"}, image]},
                {"type": "text", "text": "go on"},
            ]},
        ])
    );
    assert_eq!(seen[2].body["max_tokens"], 8192);

    let input_image = json!({"type": "input_image", "image_url": "data:image/png;base64,AAAA"});
    assert_eq!(
        seen[3].body["input"],
        json!([
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "DEV"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}, input_image]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
            {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a.rs\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "contents"},
            {"type": "message", "role": "user", "content": [input_image]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]},
        ])
    );
}

// ---------------------------------------------------------------- answers

#[tokio::test]
async fn every_provider_returns_the_summary_text_and_usage() {
    for flavour in ALL {
        let server = Server::start(vec![flavour.ok(SUMMARY)]).await;
        let provider = flavour.provider(&server);
        let response = provider
            .summarize(&request(), CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(response.text, SUMMARY, "{flavour:?}");
        // Every protocol reports 100 fresh input tokens, 20 cached, 30 output;
        // the custom endpoint reports none.
        let expected = (flavour != Flavour::RemoteCustom).then(|| Usage {
            input: 100.0,
            output: 30.0,
            cache_read: 20.0,
            total_tokens: 150.0,
            ..Usage::default()
        });
        assert_eq!(response.usage, expected, "{flavour:?}");
    }
}

#[tokio::test]
async fn the_custom_endpoint_also_returns_its_short_summary() {
    let server = Server::start(vec![Flavour::RemoteCustom.ok(SUMMARY)]).await;
    let provider = Flavour::RemoteCustom.provider(&server);
    let remote = provider.as_remote().unwrap();
    let summary = remote
        .summarize_remote(&request(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(summary.text, SUMMARY);
    assert_eq!(summary.short_summary.as_deref(), Some("Fixing the bug"));
    assert!(!remote.is_chat_completions());
    let chat = Flavour::RemoteChat.provider(&server);
    assert!(chat.as_remote().unwrap().is_chat_completions());
}

/// Starts a server answering `replies`, asserts that this flavour's
/// provider gets [`SUMMARY`] in the end, and returns the retry notices it
/// gave on the way, in order, with the number of requests the server saw.
async fn retried(flavour: Flavour, replies: Vec<Reply>) -> (Vec<RetryNotice>, usize) {
    let server = Server::start(replies).await;
    let notices: Arc<Mutex<Vec<RetryNotice>>> = Arc::default();
    let sink = notices.clone();
    let provider =
        flavour
            .provider(&server)
            .with_retry_observer(Arc::new(move |n: &RetryNotice| {
                sink.lock().unwrap().push(n.clone());
            }));
    assert_eq!(
        summarize(&provider).await.as_deref(),
        Ok(SUMMARY),
        "{flavour:?}"
    );
    let notices = notices.lock().unwrap().clone();
    (notices, server.seen().len())
}

#[tokio::test]
async fn a_429_waits_for_retry_after_then_succeeds() {
    for flavour in ALL {
        let replies = vec![
            flavour.error(429, "slow down").header("retry-after", "0"),
            flavour.ok(SUMMARY),
        ];
        let (notices, requests) = retried(flavour, replies).await;
        assert_eq!(requests, 2);
        assert_eq!(notices.len(), 1);
        assert_eq!(notices[0].attempt, 1);
        assert_eq!(notices[0].delay, Duration::ZERO);
        assert!(notices[0].from_retry_after);
        assert_eq!(notices[0].reason, "HTTP 429");
    }
}

#[tokio::test]
async fn a_retry_after_beyond_the_limit_ends_the_retries() {
    let (error, server) = Flavour::Chat
        .fails(vec![
            Flavour::Chat
                .error(429, "quota exhausted")
                .header("retry-after", "3600"),
        ])
        .await;
    assert_eq!(
        error,
        SummarizeError::Provider {
            provider: "openai-compatible".into(),
            status: Some(429),
            message: "quota exhausted".into(),
        }
    );
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn a_500_is_retried_with_backoff() {
    for flavour in ALL {
        let replies = vec![
            flavour.error(500, "boom"),
            flavour.error(503, "busy"),
            flavour.ok(SUMMARY),
        ];
        let (notices, requests) = retried(flavour, replies).await;
        assert_eq!(requests, 3);
        let delays: Vec<Duration> = notices.iter().map(|n| n.delay).collect();
        assert_eq!(
            delays,
            [Duration::from_millis(10), Duration::from_millis(20)]
        );
    }
}

#[tokio::test]
async fn persistent_server_errors_name_provider_status_and_message() {
    let (error, server) = Flavour::Anthropic
        .fails(vec![Flavour::Anthropic.error(529, "Overloaded"); 3])
        .await;
    assert_eq!(
        error.to_string(),
        "anthropic request failed (HTTP 529): Overloaded"
    );
    assert_eq!(server.seen().len(), 3);

    let (error, _) = Flavour::RemoteCustom
        .fails(vec![Reply::raw(503, ""); 3])
        .await;
    assert_eq!(
        error.to_string(),
        "Remote compaction failed (503 Service Unavailable)"
    );
    let (error, server) = Flavour::RemoteChat
        .fails(vec![Reply::raw(404, "no such route")])
        .await;
    assert_eq!(
        error,
        SummarizeError::Remote {
            failure: RemoteFailure::Status {
                status: 404,
                status_text: "Not Found".into()
            },
            message: Some("no such route".into()),
        }
    );
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn the_key_never_appears_in_errors() {
    for flavour in ALL {
        let echo = format!("Incorrect API key provided: {KEY}");
        let server = Server::start(vec![flavour.error(401, &echo)]).await;
        let provider = flavour.provider(&server);
        let error = summarize(&provider).await.unwrap_err();
        let text = error.to_string();
        assert!(!text.contains(KEY), "{flavour:?}: {text}");
        assert!(
            text.contains("401") && text.contains("Incorrect API key provided: [redacted]"),
            "{text}"
        );
        assert!(!format!("{provider:?}").contains(KEY));
        assert!(!provider.describe().contains(KEY));
    }
}

#[tokio::test]
async fn a_summary_that_echoes_the_key_is_kept_without_it() {
    for flavour in ALL {
        let echo = format!("## Goal\nThe key was {KEY}, as sent.");
        let server = Server::start(vec![flavour.ok(&echo)]).await;
        let text = summarize(&flavour.provider(&server)).await.unwrap();
        assert_eq!(
            text, "## Goal\nThe key was [redacted], as sent.",
            "{flavour:?}"
        );
    }
    // However the answer escapes it: the key spelled with JSON escapes.
    let escaped = KEY.chars().fold(String::new(), |mut s, c| {
        use std::fmt::Write as _;
        write!(s, "\\u{:04x}", c as u32).unwrap();
        s
    });
    let answer = json!({"choices": [{"index": 0, "message": {"role": "assistant",
        "content": format!("## Goal\nkey {KEY} here")}, "finish_reason": "stop"}]});
    let body = answer.to_string().replace(KEY, &escaped);
    assert!(!body.contains(KEY));
    let server = Server::start(vec![Reply::raw(200, &body)]).await;
    let text = summarize(&Flavour::Chat.provider(&server)).await.unwrap();
    assert_eq!(text, "## Goal\nkey [redacted] here");
}

#[tokio::test]
async fn a_dropped_connection_is_retried() {
    for flavour in ALL {
        let server = Server::start(vec![flavour.ok(SUMMARY).cut(), flavour.ok(SUMMARY)]).await;
        assert_eq!(
            summarize(&flavour.provider(&server)).await.as_deref(),
            Ok(SUMMARY),
            "{flavour:?}"
        );
        assert_eq!(server.seen().len(), 2);
    }
}

#[tokio::test]
async fn a_timeout_is_retried_then_reported() {
    for flavour in ALL {
        let (error, server) = stalled_error(flavour, Duration::from_hours(1), |timing| {
            timing.timeout = Duration::from_millis(500);
            timing.retry.max_attempts = 2;
        })
        .await;
        match &error {
            SummarizeError::Transport {
                provider,
                attempts,
                timed_out,
                ..
            } => {
                assert_eq!(
                    (provider.as_str(), *attempts, *timed_out),
                    (flavour_name(flavour), 2, true)
                );
            }
            other => panic!("{flavour:?}: {other:?}"),
        }
        assert!(
            error
                .to_string()
                .contains("could not be reached after 2 attempts")
        );
        // Each attempt sent its request before it timed out; the server
        // may read the last one a moment after the client gave up.
        tokio::time::timeout(Duration::from_mins(1), server.wait_for_requests(2))
            .await
            .expect("both attempts reached the server");
        assert_eq!(server.seen().len(), 2);
    }
}

fn flavour_name(flavour: Flavour) -> &'static str {
    match flavour {
        Flavour::Chat => "openai-compatible",
        Flavour::Anthropic => "anthropic",
        Flavour::Responses => "openai-responses",
        Flavour::RemoteCustom | Flavour::RemoteChat => "remote-endpoint",
    }
}

#[tokio::test]
async fn malformed_json_quotes_the_start_of_the_body() {
    for flavour in ALL {
        let (error, server) = flavour
            .fails(vec![Reply::raw(
                200,
                "<html><body>Bad gateway page</body></html>",
            )])
            .await;
        match &error {
            SummarizeError::MalformedResponse {
                provider,
                status,
                body_prefix,
                ..
            } => {
                assert_eq!(provider, flavour_name(flavour));
                assert_eq!(*status, 200);
                assert_eq!(body_prefix, "<html><body>Bad gateway page</body></html>");
            }
            other => panic!("{flavour:?}: {other:?}"),
        }
        assert!(error.to_string().starts_with(&format!(
            "{} sent an unreadable response (HTTP 200)",
            flavour_name(flavour)
        )));
        assert_eq!(server.seen().len(), 1);
    }
}

#[tokio::test]
async fn an_empty_summary_is_an_error() {
    for flavour in ALL {
        let (error, _) = flavour.fails(vec![flavour.ok("  \n")]).await;
        let expected = match flavour {
            Flavour::RemoteChat => SummarizeError::Remote {
                failure: RemoteFailure::MissingContent,
                message: None,
            },
            _ => SummarizeError::EmptyResponse {
                provider: flavour_name(flavour).into(),
            },
        };
        assert_eq!(error, expected, "{flavour:?}");
    }
    let (error, _) = Flavour::RemoteCustom
        .fails(vec![Reply::json(200, &json!({"result": "done"}))])
        .await;
    assert_eq!(
        error.to_string(),
        "Remote compaction response missing summary"
    );
    let (error, _) = Flavour::RemoteChat
        .fails(vec![Reply::json(200, &json!({"choices": []}))])
        .await;
    assert_eq!(
        error.to_string(),
        "Remote compaction response missing choices[0].message.content"
    );
}

#[tokio::test]
async fn a_refusal_is_an_error() {
    for flavour in ALL {
        let Some(reply) = flavour.refusal() else {
            continue;
        };
        let (error, _) = flavour.fails(vec![reply]).await;
        let message = (flavour != Flavour::Anthropic).then(|| "I can't help with that.".to_owned());
        assert_eq!(
            error,
            SummarizeError::Refusal {
                provider: flavour_name(flavour).into(),
                reason: "refusal".into(),
                message,
            },
            "{flavour:?}"
        );
    }
    let filtered =
        json!({"choices": [{"message": {"content": ""}, "finish_reason": "content_filter"}]});
    let (error, _) = Flavour::Chat.fails(vec![Reply::json(200, &filtered)]).await;
    assert_eq!(
        error.to_string(),
        "openai-compatible refused to summarize (reason content_filter)"
    );
}

#[tokio::test]
async fn an_overflow_rejection_is_reported_without_retrying() {
    for flavour in ALL {
        let (error, server) = flavour
            .fails(vec![
                flavour.error(400, "prompt is too long: 210000 tokens > 200000 maximum"),
                flavour.ok(SUMMARY),
            ])
            .await;
        assert!(error.is_context_overflow(), "{flavour:?}: {error:?}");
        assert_eq!(
            error.to_string(),
            format!(
                "{} rejected the summarizer input as too long for the model (HTTP 400): prompt is too long: 210000 tokens > 200000 maximum",
                flavour_name(flavour)
            )
        );
        assert_eq!(server.seen().len(), 1);
    }
    let (error, _) = Flavour::Chat.fails(vec![Reply::raw(413, "")]).await;
    assert_eq!(error.status(), Some(413));
    assert!(error.is_context_overflow());
    let (error, _) = Flavour::Chat
        .fails(vec![Flavour::Chat.error(400, "max_tokens is too large")])
        .await;
    assert!(!error.is_context_overflow());
}

#[tokio::test]
async fn cancellation_stops_a_request_in_flight() {
    for flavour in ALL {
        // The server, the attempt and the deadline all take far longer
        // than the test waits: only the cancellation can end the call.
        let server =
            Server::start(vec![flavour.ok(SUMMARY).delayed(Duration::from_hours(24))]).await;
        let config = retimed(flavour.config(&server), |timing| {
            timing.timeout = Duration::from_hours(1);
            timing.deadline = Duration::from_hours(1);
        });
        let provider = Provider::new(config, client());
        let cancel = CancellationToken::new();
        let request = request();
        let call = provider.summarize(&request, cancel.clone());
        let canceller = async {
            server.wait_for_requests(1).await;
            cancel.cancel();
        };
        let (result, ()) = tokio::time::timeout(Duration::from_mins(10), async {
            tokio::join!(call, canceller)
        })
        .await
        .expect("the call resolves once cancelled, long before the server answers");
        assert_eq!(result, Err(SummarizeError::Cancelled), "{flavour:?}");
    }
}

#[tokio::test]
async fn cancellation_stops_the_backoff_wait() {
    // An hour to wait before the retry, far longer than the test waits.
    let server = Server::start(vec![
        Flavour::Chat
            .error(503, "busy")
            .header("retry-after", "3600"),
    ])
    .await;
    let config = retimed(Flavour::Chat.config(&server), |timing| {
        timing.retry.max_retry_after = Duration::from_hours(2);
        timing.deadline = Duration::from_hours(2);
    });
    let cancel = CancellationToken::new();
    // Cancelled as the wait begins: the observer hears of it first.
    let fire = cancel.clone();
    let provider = Provider::new(config, client())
        .with_retry_observer(Arc::new(move |_: &RetryNotice| fire.cancel()));
    let request = request();
    let result = tokio::time::timeout(
        Duration::from_mins(10),
        provider.summarize(&request, cancel),
    )
    .await
    .expect("the wait is cancelled before the Retry-After elapses");
    assert_eq!(result, Err(SummarizeError::Cancelled));
    assert_eq!(server.seen().len(), 1);
}

// ---------------------------------------------------------------- native compaction

#[tokio::test]
async fn native_compaction_sends_history_and_keeps_the_right_items() {
    let output = json!({
        "output": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]},
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
            {"type": "function_call", "call_id": "c", "name": "read", "arguments": "{}"},
            {"type": "compaction", "encrypted_content": "OLD"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "working"}]},
            {"type": "compaction", "encrypted_content": "NEW"},
        ],
        "usage": {"input_tokens": 500, "output_tokens": 50, "total_tokens": 550},
    });
    let server = Server::start(vec![Reply::json(200, &output)]).await;
    let provider = Flavour::Responses.provider(&server);
    let responses = provider.as_responses().unwrap();
    let previous = OpenAiRemoteCompaction {
        provider: "openai-responses".into(),
        replacement_history: vec![json!({"type": "compaction", "encrypted_content": "PREV"})],
        compaction_item: serde_json::from_value(
            json!({"type": "compaction", "encrypted_content": "PREV"}),
        )
        .unwrap(),
    };
    let messages = [LlmMessage::user_text("fix the bug")];
    let request = NativeCompactionRequest {
        instructions: SYSTEM,
        previous: Some(&previous),
        messages: &messages,
    };
    let result = responses
        .compact(&request, CancellationToken::new())
        .await
        .unwrap();

    let seen = server.seen();
    assert_eq!(seen[0].path, "/v1/responses/compact");
    assert_eq!(
        header(&seen[0], "authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        seen[0].body,
        json!({
            "model": "test-model",
            "input": [
                {"type": "compaction", "encrypted_content": "PREV"},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]},
            ],
            "instructions": SYSTEM,
        })
    );
    let stored = serde_json::to_value(&result.remote).unwrap();
    assert_eq!(
        stored,
        json!({
            "provider": "openai-responses",
            "replacementHistory": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]},
                {"type": "compaction", "encrypted_content": "OLD"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "working"}]},
                {"type": "compaction", "encrypted_content": "NEW"},
            ],
            "compactionItem": {"type": "compaction", "encrypted_content": "NEW"},
        })
    );
    assert_eq!(result.usage.map(|u| u.total_tokens), Some(550.0));
}

#[tokio::test]
async fn the_pipeline_uses_native_compaction_through_its_trait() {
    let answer = json!({"output": [{"type": "compaction_summary", "summary": "short"}]});
    let server = Server::start(vec![Reply::json(200, &answer)]).await;
    let provider = Flavour::Responses.provider(&server);
    let compactor: &dyn RemoteCompactor = provider.as_responses().unwrap();
    assert_eq!(compactor.provider(), "openai-responses");
    let input = RemoteCompactInput {
        instructions: SYSTEM.to_owned(),
        previous_history: Some(vec![
            json!({"type": "compaction", "encrypted_content": "PREV"}),
        ]),
        messages: vec![LlmMessage::user_text("hi")],
    };
    let stored = compactor
        .compact(&input, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        stored,
        json!({
            "provider": "openai-responses",
            "replacementHistory": [{"type": "compaction_summary", "summary": "short"}],
            "compactionItem": {"type": "compaction_summary", "summary": "short"},
        })
    );
    assert_eq!(
        server.seen()[0].body["input"],
        json!([
            {"type": "compaction", "encrypted_content": "PREV"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        ])
    );
}

#[tokio::test]
async fn native_compaction_failures_have_clear_messages() {
    let server = Server::start(vec![
        Reply::json(
            200,
            &json!({"output": [{"type": "message", "role": "assistant", "content": []}]}),
        ),
        Flavour::Responses.error(404, "Unknown endpoint"),
    ])
    .await;
    let provider = Flavour::Responses.provider(&server);
    let responses = provider.as_responses().unwrap();
    let messages = [LlmMessage::user_text("hi")];
    let request = NativeCompactionRequest {
        instructions: SYSTEM,
        previous: None,
        messages: &messages,
    };
    // The server's two answers, in order.
    for expected in [
        "Remote compaction response missing compaction item",
        "Remote compaction failed (404 Not Found): Unknown endpoint",
    ] {
        let error = responses
            .compact(&request, CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(error.to_string(), expected);
    }
}

#[tokio::test]
async fn native_compaction_ignores_another_providers_history_and_trims_to_the_window() {
    let server = Server::start(vec![]).await;
    let config = Flavour::Responses.config(&server).with_context_window(60);
    let provider = Provider::new(config, client());
    let previous = OpenAiRemoteCompaction {
        provider: "someone-else".into(),
        replacement_history: vec![json!({"type": "compaction", "encrypted_content": "X"})],
        compaction_item: serde_json::from_value(json!({"type": "compaction"})).unwrap(),
    };
    let messages = [
        LlmMessage::user_text("fix the bug"),
        LlmMessage::ToolResult {
            tool_call_id: "c".into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text("x".repeat(400))],
            is_error: false,
        },
        LlmMessage::Developer {
            content: vec![ContentBlock::text("y".repeat(400))],
        },
    ];
    let body = provider
        .as_responses()
        .unwrap()
        .compaction_body(&NativeCompactionRequest {
            instructions: SYSTEM,
            previous: Some(&previous),
            messages: &messages,
        });
    assert_eq!(
        body["input"],
        json!([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]}])
    );
}

// ---------------------------------------------------------------- limits

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed() {
    for status in [301, 302, 303, 307, 308] {
        for flavour in ALL {
            let elsewhere = Server::start(vec![flavour.ok(SUMMARY)]).await;
            let target = format!("{}{}", elsewhere.url, flavour.path());
            let (err, server) = flavour.fails(vec![Reply::redirect(status, &target)]).await;
            assert_eq!(
                err,
                SummarizeError::Redirected {
                    provider: flavour_name(flavour).to_owned(),
                    location: target.clone(),
                },
                "{flavour:?} {status}"
            );
            assert!(
                err.to_string()
                    .contains("another origin; it was not followed"),
                "{err}"
            );
            assert_eq!(server.seen().len(), 1, "not retried");
            assert!(elsewhere.seen().is_empty(), "{flavour:?} {status}: re-sent");
        }
    }
}

#[tokio::test]
async fn a_redirect_within_the_origin_is_followed_with_the_same_body() {
    let flavour = Flavour::Chat;
    let server = Server::start(vec![
        Reply::redirect(307, "/moved/chat/completions"),
        flavour.ok(SUMMARY),
    ])
    .await;
    assert_eq!(
        summarize(&flavour.provider(&server)).await,
        Ok(SUMMARY.into())
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].path, "/moved/chat/completions");
    assert_eq!(seen[1].body, seen[0].body);
    assert_eq!(
        header(&seen[1], "authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test]
async fn an_endless_answer_is_read_only_up_to_the_limit() {
    for flavour in ALL {
        let (err, server) = flavour.fails(vec![Reply::endless()]).await;
        assert_eq!(
            err,
            SummarizeError::TooLarge {
                provider: flavour_name(flavour).to_owned(),
                limit: musepi_providers::MAX_RESPONSE_BYTES,
            },
            "{flavour:?}"
        );
        assert_eq!(server.seen().len(), 1, "not retried");
    }
    // A whole body of a declared length over the limit is refused as well.
    let limit = usize::try_from(musepi_providers::MAX_RESPONSE_BYTES).unwrap();
    let server = Server::start(vec![Reply::raw(200, &" ".repeat(limit + 1))]).await;
    let err = summarize(&Flavour::Chat.provider(&server)).await;
    assert!(
        matches!(err, Err(SummarizeError::TooLarge { .. })),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_summary_far_longer_than_its_output_limit_is_refused() {
    // The request asks for at most 100 tokens: 1600 bytes pass, 1601 do not.
    let limited = SummaryRequest::single(RequestPurpose::History, SYSTEM, PROMPT, Some(100), None);
    for flavour in ALL {
        let fits = format!("{}\n{}", "x".repeat(800), "x".repeat(799));
        let runaway = format!("{fits}x");
        let server = Server::start(vec![flavour.ok(&fits), flavour.ok(&runaway)]).await;
        let provider = flavour.provider(&server);
        let ok = provider.summarize(&limited, CancellationToken::new()).await;
        assert_eq!(ok.map(|r| r.text.len()), Ok(1600), "{flavour:?}");
        let err = provider.summarize(&limited, CancellationToken::new()).await;
        assert_eq!(
            err,
            Err(SummarizeError::SummaryTooLong {
                provider: flavour_name(flavour).to_owned(),
                bytes: 1601,
                max_tokens: 100,
            }),
            "{flavour:?}"
        );
    }
}

#[tokio::test]
async fn a_stalled_provider_fails_by_the_deadline() {
    for flavour in ALL {
        let (err, _server) = stalled_error(flavour, Duration::from_mins(1), |timing| {
            timing.deadline = Duration::from_millis(300);
            timing.timeout = Duration::from_secs(30);
        })
        .await;
        assert_eq!(
            err,
            SummarizeError::Deadline {
                provider: flavour_name(flavour).to_owned(),
                deadline_ms: 300,
                attempts: 1,
            },
            "{flavour:?}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "{} gave no answer within the 300 ms deadline (1 attempt)",
                flavour_name(flavour)
            )
        );
    }
}

#[tokio::test]
async fn the_deadline_covers_the_retries_and_their_waits() {
    // Attempts time out after 200 ms and are retried after 10-40 ms, until
    // the 2 s deadline: a few attempts, never the 1,000 the policy allows.
    let stalled = Flavour::Chat.ok(SUMMARY).delayed(Duration::from_hours(1));
    let server = Server::start(vec![stalled; 1000]).await;
    let config = retimed(Flavour::Chat.config(&server), |timing| {
        timing.deadline = Duration::from_secs(2);
        timing.timeout = Duration::from_millis(200);
        timing.retry.max_attempts = 1000;
    });
    let err = summarize(&Provider::new(config, client()))
        .await
        .unwrap_err();
    let SummarizeError::Deadline { attempts, .. } = err else {
        panic!("{err:?}");
    };
    assert!((2..1000).contains(&attempts), "{attempts} attempts");
    // Every attempt reached the server, but the last one, which the
    // deadline may have cut before it sent its request.
    tokio::time::timeout(
        Duration::from_mins(1),
        server.wait_for_requests(attempts as usize - 1),
    )
    .await
    .expect("the attempts reached the server");
    let seen = server.seen().len() as u32;
    assert!(
        seen == attempts || seen == attempts - 1,
        "{seen} of {attempts}"
    );

    // Server errors: the last answer is reported when no time is left for
    // the next attempt: the deadline falls in the second's wait after the
    // first answer, or after the second (sent a second after the first
    // answer, with what is left of the 1.5 s for its own).
    let server = Server::start(vec![Flavour::Chat.error(500, "overloaded"); 1000]).await;
    let config = retimed(Flavour::Chat.config(&server), |timing| {
        timing.deadline = Duration::from_millis(1500);
        timing.retry.max_attempts = 1000;
        timing.retry.base_delay = Duration::from_secs(1);
        timing.retry.max_delay = Duration::from_secs(1);
    });
    let err = summarize(&Provider::new(config, client()))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(500), "{err:?}");
    assert!(server.seen().len() <= 2, "{} requests", server.seen().len());
}

#[tokio::test]
async fn answers_cut_at_the_output_limit_are_marked_truncated() {
    let cut = |flavour: Flavour| -> Reply {
        let body = match flavour {
            Flavour::Chat | Flavour::RemoteChat => json!({
                "choices": [{"message": {"role": "assistant", "content": "## Goal\nFix the"}, "finish_reason": "length"}],
            }),
            Flavour::Anthropic => json!({
                "content": [{"type": "text", "text": "## Goal\nFix the"}],
                "stop_reason": "max_tokens",
            }),
            Flavour::Responses => json!({
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
                "output": [{"type": "message", "role": "assistant",
                            "content": [{"type": "output_text", "text": "## Goal\nFix the"}]}],
            }),
            Flavour::RemoteCustom => json!({"summary": "## Goal\nFix the"}),
        };
        Reply::json(200, &body)
    };
    for flavour in ALL {
        let server = Server::start(vec![cut(flavour), flavour.ok(SUMMARY)]).await;
        let provider = flavour.provider(&server);
        let first = provider
            .summarize(&request(), CancellationToken::new())
            .await;
        let second = provider
            .summarize(&request(), CancellationToken::new())
            .await;
        // The custom endpoint has no way to say so.
        let expected = flavour != Flavour::RemoteCustom;
        assert_eq!(first.map(|r| r.truncated), Ok(expected), "{flavour:?}");
        assert_eq!(second.map(|r| r.truncated), Ok(false), "{flavour:?}");
    }
}
