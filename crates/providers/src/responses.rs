//! The `openai-responses` provider: `POST {base}/responses`, and the
//! provider-native compaction (docs/design.md, "Remote summaries") at `{base}/responses/compact`.

use musepi_context_builder::{LlmMessage, SummaryRequest, SummaryResponse, resolve_replays};
use musepi_hooks::{
    RemoteCompactInput, RemoteCompactor, RemoteFailure, RemoteFuture, SummarizeError,
    SummarizeFuture, Summarizer,
};
use musepi_session_model::{ContentBlock, Usage};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::http::{Http, Reply};
use super::openai::{arguments_json, openai_usage};
use super::wire::{Answered, ChatWire, Fallbacks, chat_provider, summarize};
use super::{ProviderConfig, data_url, joined_text, sent_limit, summary_response};

/// User messages starting with one of these are context the harness
/// injected, not the user's words; native compaction drops them.
const HARNESS_PREFIXES: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
];

/// The `OpenAI` responses API.
pub struct OpenAiResponses {
    config: ProviderConfig,
    pub(super) http: Http,
}

/// What native compaction is asked to compact.
#[derive(Debug, Clone, Copy)]
pub struct NativeCompactionRequest<'a> {
    /// The summarization system prompt, sent as `instructions`.
    pub instructions: &'a str,
    /// The previous native compaction; its replacement history is sent first
    /// when it was stored by a provider of the same name.
    pub previous: Option<&'a OpenAiRemoteCompaction>,
    /// The messages to summarize, the turn prefix and the recent messages, in order.
    pub messages: &'a [LlmMessage],
}

/// What a compaction entry stores under `preserveData.openaiRemoteCompaction`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenAiRemoteCompaction {
    /// The provider that produced it.
    pub provider: String,
    /// The items to send instead of the compacted history.
    pub replacement_history: Vec<Value>,
    /// The last compaction item of the answer.
    pub compaction_item: CompactionItem,
}

/// A `compaction` or `compaction_summary` output item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionItem {
    /// `compaction` or `compaction_summary`.
    #[serde(rename = "type")]
    pub item_type: String,
    /// The opaque compacted history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// A readable summary, when the item has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Value>,
}

/// The result of native compaction.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeCompaction {
    /// What to store in the compaction entry.
    pub remote: OpenAiRemoteCompaction,
    /// Usage, when reported.
    pub usage: Option<Usage>,
}

chat_provider!(OpenAiResponses,);

impl OpenAiResponses {
    /// Whether it sends the native history a compaction stored for
    /// `provider` (docs/design.md, "What the model sees"): the stored name is the
    /// configured name, which [`compact`](Self::compact) and
    /// [`RemoteCompactor::provider`] store, so a history made under another
    /// settings entry is never sent here.
    pub fn replays(&self, provider: &str) -> bool {
        provider == self.config.name
    }

    /// The JSON body sent to `/responses/compact`: the previous replacement
    /// history (same provider only) and the messages, with trailing tool
    /// outputs and developer messages dropped while the input is larger
    /// than the context window (chars/4 of its JSON).
    pub fn compaction_body(&self, request: &NativeCompactionRequest<'_>) -> Value {
        let previous = request
            .previous
            .filter(|p| self.replays(&p.provider))
            .map(|p| p.replacement_history.as_slice())
            .unwrap_or_default();
        self.native_body(request.instructions, previous, request.messages)
    }

    fn native_body(
        &self,
        instructions: &str,
        previous: &[Value],
        messages: &[LlmMessage],
    ) -> Value {
        let mut input = previous.to_vec();
        input.extend(input_items(messages, &self.config.name));
        if let Some(window) = self.config.context_window {
            while estimate(&input) > u64::from(window) && input.last().is_some_and(is_trimmable) {
                input.pop();
            }
        }
        let mut body = Map::new();
        self.config.insert_model(&mut body);
        body.insert("input".into(), input.into());
        body.insert("instructions".into(), instructions.into());
        Value::Object(body)
    }

    /// Provider-native compaction (docs/design.md, "Remote summaries"). On any error the caller
    /// falls back to a local summary (docs/design.md, "Remote summaries").
    pub async fn compact(
        &self,
        request: &NativeCompactionRequest<'_>,
        cancel: CancellationToken,
    ) -> Result<NativeCompaction, SummarizeError> {
        self.send_compaction(&self.compaction_body(request), &cancel)
            .await
    }

    async fn send_compaction(
        &self,
        body: &Value,
        cancel: &CancellationToken,
    ) -> Result<NativeCompaction, SummarizeError> {
        let url = self.config.endpoint("/responses/compact");
        let reply = self
            .http
            .post(&url, self.http.bearer_headers(), body, cancel)
            .await?;
        if !reply.is_success() {
            return Err(self.http.remote_status_error(&reply));
        }
        let value = self.http.json(&reply)?;
        let output = value
            .get("output")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let replacement_history: Vec<Value> = output
            .iter()
            .filter(|item| is_kept(item))
            .cloned()
            .collect();
        let compaction_item = replacement_history
            .iter()
            .rev()
            .find(|item| is_compaction_item(item))
            .and_then(|item| serde_json::from_value::<CompactionItem>(item.clone()).ok())
            .ok_or(SummarizeError::Remote {
                failure: RemoteFailure::MissingCompactionItem,
                message: None,
            })?;
        Ok(NativeCompaction {
            remote: OpenAiRemoteCompaction {
                provider: self.config.name.clone(),
                replacement_history,
                compaction_item,
            },
            usage: value.get("usage").map(responses_usage),
        })
    }
}

impl ChatWire for OpenAiResponses {
    const PATH: &'static str = "/responses";

    fn body(&self, request: &SummaryRequest, fallbacks: Fallbacks) -> Value {
        let mut body = Map::new();
        self.config.insert_model(&mut body);
        if !request.system_prompt.is_empty() {
            body.insert("instructions".into(), request.system_prompt.as_str().into());
        }
        body.insert(
            "input".into(),
            input_items(&request.messages, &self.config.name).into(),
        );
        if let Some(max) = self.config.max_tokens_for(request.max_tokens) {
            body.insert("max_output_tokens".into(), max.into());
        }
        if let Some(effort) = self.config.reasoning_for(request.reasoning.as_deref())
            && !fallbacks.no_reasoning
        {
            body.insert("reasoning".into(), json!({"effort": effort}));
        }
        body.insert("store".into(), false.into());
        Value::Object(body)
    }

    fn fall_back(&self, fallbacks: &mut Fallbacks, body: &Value, reply: &Reply) -> bool {
        fallbacks.drop_reasoning(&self.http, reply, body, "reasoning", "reasoning")
    }

    fn read(&self, answered: Answered) -> Result<SummaryResponse, SummarizeError> {
        let Answered { reply, body, value } = answered;
        let provider = || self.config.name.clone();
        if let Some(message) = value.pointer("/error/message").and_then(Value::as_str) {
            return Err(SummarizeError::Provider {
                provider: provider(),
                status: Some(reply.status),
                message: self.http.redact(message),
            });
        }
        let Some(output) = value.get("output").and_then(Value::as_array) else {
            return Err(self.http.malformed(&reply, "no output array"));
        };
        let mut texts = Vec::new();
        let mut refusal = None;
        let parts = output
            .iter()
            .filter(|item| item.get("type").and_then(Value::as_str) == Some("message"))
            .filter_map(|item| item.get("content").and_then(Value::as_array))
            .flatten();
        for part in parts {
            match part.get("type").and_then(Value::as_str) {
                Some("output_text") => texts.extend(part.get("text").and_then(Value::as_str)),
                Some("refusal") => {
                    refusal = Some(
                        part.get("refusal")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    );
                }
                _ => {}
            }
        }
        let incomplete = value
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str);
        let filtered = incomplete == Some("content_filter");
        if refusal.is_some() || filtered {
            return Err(SummarizeError::Refusal {
                provider: provider(),
                reason: if filtered {
                    "content_filter"
                } else {
                    "refusal"
                }
                .to_owned(),
                message: refusal.filter(|r| !r.is_empty()),
            });
        }
        summary_response(
            &self.config.name,
            texts.join("\n"),
            sent_limit(&body, &["max_output_tokens"]),
            incomplete == Some("max_output_tokens"),
            value.get("usage").map(responses_usage),
        )
    }
}

/// Native compaction for the compaction pipeline, which has already picked
/// the previous replacement history of this provider.
impl RemoteCompactor for OpenAiResponses {
    fn provider(&self) -> String {
        self.config.name.clone()
    }

    fn compact<'a>(
        &'a self,
        input: &'a RemoteCompactInput,
        cancel: CancellationToken,
    ) -> RemoteFuture<'a> {
        Box::pin(self.compact_input(input, cancel))
    }
}

impl OpenAiResponses {
    /// A native compaction of `input`, after its previous replacement
    /// history: the object stored under `preserveData.openaiRemoteCompaction`.
    async fn compact_input(
        &self,
        input: &RemoteCompactInput,
        cancel: CancellationToken,
    ) -> Result<Value, SummarizeError> {
        let previous = input.previous_history.as_deref().unwrap_or_default();
        let body = self.native_body(&input.instructions, previous, &input.messages);
        let native = self.send_compaction(&body, &cancel).await?;
        serde_json::to_value(&native.remote).map_err(|e| SummarizeError::Provider {
            provider: self.config.name.clone(),
            status: None,
            message: e.to_string(),
        })
    }
}

/// Provider messages as responses input items.
///
/// A provider history stored by `provider` (this provider's configured
/// name, the one its native compaction stores, see
/// [`OpenAiResponses::replays`]) is sent as its items, in place of the
/// summary and the kept messages (docs/design.md, "What the model sees"); the history of
/// any other provider is sent as its summary followed by its kept messages.
fn input_items(messages: &[LlmMessage], provider: &str) -> Vec<Value> {
    let mut items = Vec::with_capacity(messages.len());
    for message in resolve_replays(messages, Some(provider)) {
        match message {
            LlmMessage::ProviderHistory(h) if h.provider == provider => {
                items.extend(h.items.iter().cloned());
            }
            // Another provider's history was resolved above; one left in
            // place reads as its summary.
            LlmMessage::User { .. } | LlmMessage::ProviderHistory(_) => {
                items.push(input_message("user", message.content()));
            }
            LlmMessage::Developer { content } => items.push(input_message("developer", content)),
            LlmMessage::Assistant { content, .. } => {
                let text = joined_text(content);
                if !text.is_empty() {
                    items.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }));
                }
                for block in content {
                    if let ContentBlock::ToolCall(call) = block {
                        items.push(json!({
                            "type": "function_call",
                            "call_id": call.id,
                            "name": call.name.as_str(),
                            "arguments": arguments_json(call.arguments.value()),
                        }));
                    }
                }
            }
            LlmMessage::ToolResult {
                tool_call_id,
                content,
                ..
            } => {
                items.push(json!({"type": "function_call_output", "call_id": tool_call_id, "output": joined_text(content)}));
                if content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Image { .. }))
                {
                    let images: Vec<ContentBlock> = content
                        .iter()
                        .filter(|b| matches!(b, ContentBlock::Image { .. }))
                        .cloned()
                        .collect();
                    items.push(input_message("user", &images));
                }
            }
        }
    }
    items
}

fn input_message(role: &str, content: &[ContentBlock]) -> Value {
    let parts: Vec<Value> = content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } => {
                Some(json!({"type": "input_text", "text": text.as_str()}))
            }
            ContentBlock::Image {
                data,
                mime_type,
                detail,
                ..
            } => {
                let mut part =
                    json!({"type": "input_image", "image_url": data_url(mime_type, data)});
                if let (Some(detail), Value::Object(map)) = (detail, &mut part) {
                    map.insert("detail".into(), detail.as_str().into());
                }
                Some(part)
            }
            _ => None,
        })
        .collect();
    json!({"type": "message", "role": role, "content": parts})
}

/// chars/4 of the input's JSON.
fn estimate(input: &[Value]) -> u64 {
    let chars: usize = input
        .iter()
        .map(|item| item.to_string().encode_utf16().count())
        .sum();
    (chars as u64).div_ceil(4)
}

fn is_trimmable(item: &Value) -> bool {
    item.get("type").and_then(Value::as_str) == Some("function_call_output")
        || item.get("role").and_then(Value::as_str) == Some("developer")
}

fn is_compaction_item(item: &Value) -> bool {
    match item.get("type").and_then(Value::as_str) {
        Some("compaction") => item.get("encrypted_content").is_some_and(Value::is_string),
        Some("compaction_summary") => true,
        _ => false,
    }
}

/// Whether an output item belongs in the replacement history.
fn is_kept(item: &Value) -> bool {
    let kind = item.get("type").and_then(Value::as_str);
    if matches!(kind, Some("compaction" | "compaction_summary")) {
        return true;
    }
    if !matches!(kind, None | Some("message")) {
        return false;
    }
    match item.get("role").and_then(Value::as_str) {
        Some("assistant") => true,
        Some("user") => !is_harness_injected(item),
        _ => false,
    }
}

fn is_harness_injected(message: &Value) -> bool {
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    };
    let text = text.trim_start();
    HARNESS_PREFIXES.iter().any(|p| text.starts_with(p))
}

/// Responses usage as session usage.
fn responses_usage(usage: &Value) -> Usage {
    openai_usage(usage, "input_tokens", "output_tokens")
}
