//! The `openai-compatible` provider: `POST {base}/chat/completions`.

use musepi_context_builder::{LlmMessage, SummaryRequest, SummaryResponse, resolve_replays};
use musepi_hooks::{SummarizeError, SummarizeFuture, Summarizer};
use musepi_session_model::{ContentBlock, Usage};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::http::{Http, Reply};
use super::wire::{Answered, ChatWire, Fallbacks, chat_provider, summarize};
use super::{DeveloperRole, ProviderConfig, data_url, joined_text, sent_limit, summary_response};

/// A chat-completions server: `OpenAI`, `OpenRouter`, `vLLM`, the llama.cpp server, `Ollama`.
pub struct OpenAiCompatible {
    config: ProviderConfig,
    pub(super) http: Http,
}

chat_provider!(OpenAiCompatible,);

impl ChatWire for OpenAiCompatible {
    const PATH: &'static str = "/chat/completions";

    fn body(&self, request: &SummaryRequest, fallbacks: Fallbacks) -> Value {
        let mut body = Map::new();
        self.config.insert_model(&mut body);
        body.insert(
            "messages".into(),
            chat_messages(
                &request.system_prompt,
                &request.messages,
                self.config.developer_role,
            )
            .into(),
        );
        if let Some(max) = self.config.max_tokens_for(request.max_tokens) {
            let key = if fallbacks.max_completion_tokens {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body.insert(key.into(), max.into());
        }
        if let Some(effort) = self.config.reasoning_for(request.reasoning.as_deref())
            && !fallbacks.no_reasoning
        {
            body.insert("reasoning_effort".into(), effort.into());
        }
        body.insert("stream".into(), false.into());
        Value::Object(body)
    }

    fn fall_back(&self, fallbacks: &mut Fallbacks, body: &Value, reply: &Reply) -> bool {
        if fallbacks.drop_reasoning(&self.http, reply, body, "reasoning_effort", "reasoning") {
            return true;
        }
        let rename =
            !fallbacks.max_completion_tokens && self.http.rejects(reply, "max_completion_tokens");
        fallbacks.max_completion_tokens |= rename;
        rename
    }

    fn read(&self, answered: Answered) -> Result<SummaryResponse, SummarizeError> {
        let Answered { reply, body, value } = answered;
        let answer = ChatAnswer::read(&value)
            .ok_or_else(|| self.http.malformed(&reply, "no choices[0].message"))?;
        if let Some(e) = answer.failure(&self.config.name, &reply, &self.http) {
            return Err(e);
        }
        let truncated = answer.is_truncated();
        summary_response(
            &self.config.name,
            answer.text,
            sent_limit(&body, &["max_tokens", "max_completion_tokens"]),
            truncated,
            answer.usage,
        )
    }
}

/// What a chat-completions answer says.
pub(super) struct ChatAnswer {
    /// `choices[0].message.content` as text (parts concatenated).
    pub(super) text: String,
    pub(super) finish_reason: Option<String>,
    /// `choices[0].message.refusal`.
    pub(super) refusal: Option<String>,
    /// An `error.message` inside a 200 (as `OpenRouter` sends).
    pub(super) error: Option<String>,
    pub(super) usage: Option<Usage>,
}

impl ChatAnswer {
    /// Reads an answer; `None` when it has neither choices nor an error.
    pub(super) fn read(value: &Value) -> Option<Self> {
        let error = value
            .pointer("/error/message")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let choice = value.pointer("/choices/0");
        if choice.is_none() && error.is_none() {
            return None;
        }
        let message = choice.and_then(|c| c.get("message"));
        Some(Self {
            text: message
                .and_then(|m| m.get("content"))
                .map(content_text)
                .unwrap_or_default(),
            finish_reason: choice
                .and_then(|c| c.get("finish_reason"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            refusal: message
                .and_then(|m| m.get("refusal"))
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty())
                .map(str::to_owned),
            error,
            usage: value.get("usage").map(chat_usage),
        })
    }

    /// The refusal, or the error inside a successful reply, as the error
    /// `provider` reports; `None` for a usable answer.
    pub(super) fn failure(
        &self,
        provider: &str,
        reply: &Reply,
        http: &Http,
    ) -> Option<SummarizeError> {
        if let Some(reason) = self.refusal_reason() {
            return Some(SummarizeError::Refusal {
                provider: provider.to_owned(),
                reason,
                message: self.refusal.clone(),
            });
        }
        self.error.as_ref().map(|error| SummarizeError::Provider {
            provider: provider.to_owned(),
            status: Some(reply.status),
            message: http.redact(error),
        })
    }

    /// Whether the model stopped at the output limit.
    pub(super) fn is_truncated(&self) -> bool {
        self.finish_reason.as_deref() == Some("length")
    }

    /// The refusal reason, when the model declined.
    fn refusal_reason(&self) -> Option<String> {
        match self.finish_reason.as_deref() {
            Some(reason @ ("refusal" | "content_filter")) => Some(reason.to_owned()),
            _ => self.refusal.as_ref().map(|_| "refusal".to_owned()),
        }
    }
}

/// A content value as text: a string, or the `text` of each part concatenated.
pub(super) fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Chat-completions usage as session usage.
pub(super) fn chat_usage(usage: &Value) -> Usage {
    openai_usage(usage, "prompt_tokens", "completion_tokens")
}

/// An `OpenAI` usage object as session usage: its input and output counts
/// are named `input` and `output`, each with `{name}_details` (cached input
/// tokens, reasoning output tokens), beside `total_tokens`.
pub(super) fn openai_usage(usage: &Value, input: &str, output: &str) -> Usage {
    let num = |path: &str| usage.pointer(path).and_then(Value::as_f64);
    let sent = num(&format!("/{input}")).unwrap_or(0.0);
    let cached = num(&format!("/{input}_details/cached_tokens")).unwrap_or(0.0);
    let answered = num(&format!("/{output}")).unwrap_or(0.0);
    Usage {
        input: (sent - cached).max(0.0),
        output: answered,
        cache_read: cached,
        cache_write: 0.0,
        total_tokens: num("/total_tokens").unwrap_or(sent + answered),
        reasoning: num(&format!("/{output}_details/reasoning_tokens")),
        ..Usage::default()
    }
}

/// The chat messages for a system prompt and provider messages. Chat
/// completions replay no native history: a provider history is sent as its
/// summary followed by its kept messages (docs/design.md, "What the model sees").
pub(super) fn chat_messages(
    system_prompt: &str,
    messages: &[LlmMessage],
    developer: DeveloperRole,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !system_prompt.is_empty() {
        out.push(json!({"role": "system", "content": system_prompt}));
    }
    for message in resolve_replays(messages, None) {
        match message {
            // None is left after resolving; one would read as its summary.
            LlmMessage::User { .. } | LlmMessage::ProviderHistory(_) => {
                out.push(json!({"role": "user", "content": user_content(message.content())}));
            }
            LlmMessage::Developer { content } => {
                out.push(json!({"role": developer.as_str(), "content": user_content(content)}));
            }
            LlmMessage::Assistant { content, .. } => {
                if let Some(m) = assistant_message(content) {
                    out.push(m);
                }
            }
            LlmMessage::ToolResult {
                tool_call_id,
                content,
                ..
            } => {
                out.push(json!({"role": "tool", "tool_call_id": tool_call_id, "content": joined_text(content)}));
                let images = image_parts(content);
                if !images.is_empty() {
                    let mut parts =
                        vec![json!({"type": "text", "text": "Images returned by the tool:"})];
                    parts.extend(images);
                    out.push(json!({"role": "user", "content": parts}));
                }
            }
        }
    }
    out
}

/// One text block as a string; anything else as parts.
fn user_content(content: &[ContentBlock]) -> Value {
    if let [ContentBlock::Text { text, .. }] = content {
        return text.as_str().into();
    }
    let parts: Vec<Value> = content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } => Some(json!({"type": "text", "text": text.as_str()})),
            ContentBlock::Image {
                data, mime_type, ..
            } => Some(image_part(mime_type, data)),
            _ => None,
        })
        .collect();
    parts.into()
}

fn image_part(mime_type: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": data_url(mime_type, data)}})
}

fn image_parts(content: &[ContentBlock]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Image {
                data, mime_type, ..
            } => Some(image_part(mime_type, data)),
            _ => None,
        })
        .collect()
}

/// An assistant turn: its text and tool calls (thinking is not sent);
/// `None` when there is neither.
fn assistant_message(content: &[ContentBlock]) -> Option<Value> {
    let text = joined_text(content);
    let calls: Vec<Value> = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolCall(call) => Some(json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.name.as_str(), "arguments": arguments_json(call.arguments.value())},
            })),
            _ => None,
        })
        .collect();
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    message.insert(
        "content".into(),
        if text.is_empty() {
            Value::Null
        } else {
            text.into()
        },
    );
    if !calls.is_empty() {
        message.insert("tool_calls".into(), calls.into());
    }
    Some(Value::Object(message))
}

/// Tool-call arguments as the JSON string the API expects (`{}` when absent).
pub(super) fn arguments_json(arguments: &Value) -> String {
    if arguments.is_null() {
        "{}".to_owned()
    } else {
        arguments.to_string()
    }
}
