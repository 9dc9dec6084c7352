//! A scripted OpenAI-compatible model on 127.0.0.1.
//!
//! Requests for [`AGENT_MODEL`] get the next scripted [`Reply`]: an answer,
//! a tool call, an answer cut at the output limit, or a context-overflow
//! error. Requests for [`SUMMARIZER_MODEL`] (the compaction summaries) get a
//! fixed summary.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The model id the agent sends.
pub const AGENT_MODEL: &str = "agent-model";
/// The model id the summarizer sends.
pub const SUMMARIZER_MODEL: &str = "summarizer-model";
/// What the summarizer always answers.
pub const SUMMARY: &str =
    "## Goal\nShip the parser rewrite.\n\n## Next Steps\n1. Run the benchmarks.";

/// One scripted answer of the agent model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A text answer that ends normally (`finish_reason: stop`).
    Text {
        /// The answer.
        text: String,
        /// `usage.prompt_tokens`: how full the context was.
        prompt_tokens: u64,
    },
    /// An answer cut at the output limit (`finish_reason: length`).
    Truncated {
        /// What was delivered (may be empty).
        text: String,
        /// `usage.prompt_tokens`.
        prompt_tokens: u64,
    },
    /// A call of the `read` tool (`finish_reason: tool_calls`).
    ToolCall {
        /// The call id.
        id: String,
        /// `usage.prompt_tokens`.
        prompt_tokens: u64,
    },
    /// HTTP 400: the context is longer than the model's window.
    Overflow,
}

impl Reply {
    /// A normal answer.
    pub fn text(text: &str, prompt_tokens: u64) -> Self {
        Self::Text {
            text: text.to_owned(),
            prompt_tokens,
        }
    }

    /// An answer cut at the output limit.
    pub fn truncated(text: &str, prompt_tokens: u64) -> Self {
        Self::Truncated {
            text: text.to_owned(),
            prompt_tokens,
        }
    }

    /// A tool call.
    pub fn tool_call(id: &str, prompt_tokens: u64) -> Self {
        Self::ToolCall {
            id: id.to_owned(),
            prompt_tokens,
        }
    }
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    agent_requests: AtomicUsize,
    summary_requests: AtomicUsize,
    agent_models: Mutex<Vec<String>>,
}

/// The running model server.
pub struct ScriptedModel {
    url: String,
    script: Arc<Script>,
}

impl ScriptedModel {
    /// Starts the server on a free loopback port with `replies` for the agent.
    pub async fn start(replies: Vec<Reply>) -> std::io::Result<Self> {
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into()),
            ..Script::default()
        });
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/v1", listener.local_addr()?);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Self { url, script })
    }

    /// The base URL, as OpenAI-compatible clients take it (`…/v1`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Requests the agent made.
    pub fn agent_requests(&self) -> usize {
        self.script.agent_requests.load(Ordering::SeqCst)
    }

    /// The `model` of each agent request, in order.
    pub fn agent_models(&self) -> Vec<String> {
        self.script
            .agent_models
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Requests the summarizer made.
    pub fn summary_requests(&self) -> usize {
        self.script.summary_requests.load(Ordering::SeqCst)
    }

    /// Scripted replies not used yet.
    pub fn unused_replies(&self) -> usize {
        self.script
            .replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

fn completion(message: &Value, finish: &str, prompt_tokens: u64) -> Response {
    Json(json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 120,
            "total_tokens": prompt_tokens + 120,
        },
    }))
    .into_response()
}

async fn answer(State(script): State<Arc<Script>>, Json(body): Json<Value>) -> Response {
    if body["model"] == json!(SUMMARIZER_MODEL) {
        script.summary_requests.fetch_add(1, Ordering::SeqCst);
        return completion(
            &json!({"role": "assistant", "content": SUMMARY}),
            "stop",
            2_000,
        );
    }
    script.agent_requests.fetch_add(1, Ordering::SeqCst);
    script
        .agent_models
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(body["model"].as_str().unwrap_or_default().to_owned());
    let next = script
        .replies
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .pop_front();
    match next {
        Some(Reply::Text {
            text,
            prompt_tokens,
        }) => completion(
            &json!({"role": "assistant", "content": text}),
            "stop",
            prompt_tokens,
        ),
        Some(Reply::Truncated {
            text,
            prompt_tokens,
        }) => completion(
            &json!({"role": "assistant", "content": text}),
            "length",
            prompt_tokens,
        ),
        Some(Reply::ToolCall { id, prompt_tokens }) => completion(
            &json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": id,
                "type": "function",
                "function": {"name": "read", "arguments": "{\"path\":\"src/parser.rs\"}"},
            }]}),
            "tool_calls",
            prompt_tokens,
        ),
        Some(Reply::Overflow) => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": {
                "message": "This model's maximum context length is 16000 tokens. However, your messages resulted in 17210 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }})),
        )
            .into_response(),
        None => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error": {"message": "no reply scripted"}})),
        )
            .into_response(),
    }
}
