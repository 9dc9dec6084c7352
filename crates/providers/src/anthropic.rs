//! The `anthropic` provider: `POST {base}/v1/messages`.

use musepi_context_builder::{LlmMessage, SummaryRequest, SummaryResponse, resolve_replays};
use musepi_hooks::{SummarizeError, SummarizeFuture, Summarizer};
use musepi_session_model::{ContentBlock, Usage};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::http::{Http, Reply};
use super::wire::{Answered, ChatWire, Fallbacks, chat_provider, summarize};
use super::{ProviderConfig, is_blank, sent_limit, summary_response};

/// The `anthropic-version` header sent.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The output limit asked for when neither the request nor the settings give one
/// (the API requires one).
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 8192;

/// The smallest thinking budget the API accepts.
const MIN_BUDGET: u32 = 1024;

/// Anthropic's messages API.
pub struct Anthropic {
    config: ProviderConfig,
    pub(super) http: Http,
}

chat_provider!(
    Anthropic,
    ///
    /// With reasoning, thinking is enabled with a budget for the effort
    /// (`minimal` 1024, `low` 2048, `medium` 8192, `high` 16384; `xhigh`
    /// gets the `high` budget, as pi clamps it) and `max_tokens` grows by
    /// the budget, within the model's limit, so the summary keeps its own
    /// allowance.
);

impl ChatWire for Anthropic {
    const PATH: &'static str = "/v1/messages";

    fn headers(&self, _: &Http) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            "anthropic-version",
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        if let Some(key) = &self.config.api_key
            && let Ok(mut value) = HeaderValue::from_str(key.expose())
        {
            value.set_sensitive(true);
            headers.insert("x-api-key", value);
        }
        headers
    }

    fn body(&self, request: &SummaryRequest, fallbacks: Fallbacks) -> Value {
        let output = self
            .config
            .max_tokens_for(request.max_tokens)
            .unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS);
        let budget = self
            .config
            .reasoning_for(request.reasoning.as_deref())
            .filter(|_| !fallbacks.no_reasoning)
            .map(|effort| budget_for(&effort));
        let (max_tokens, budget) = plan_tokens(output, budget, self.config.max_tokens);
        let mut body = Map::new();
        self.config.insert_model(&mut body);
        body.insert("max_tokens".into(), max_tokens.into());
        if !request.system_prompt.is_empty() {
            body.insert("system".into(), request.system_prompt.as_str().into());
        }
        body.insert("messages".into(), messages(&request.messages).into());
        if let Some(budget) = budget {
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
        Value::Object(body)
    }

    fn fall_back(&self, fallbacks: &mut Fallbacks, body: &Value, reply: &Reply) -> bool {
        fallbacks.drop_reasoning(&self.http, reply, body, "thinking", "thinking")
    }

    fn read(&self, answered: Answered) -> Result<SummaryResponse, SummarizeError> {
        let Answered { reply, body, value } = answered;
        let Some(blocks) = value.get("content").and_then(Value::as_array) else {
            return Err(self.http.malformed(&reply, "no content array"));
        };
        let text = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        let stop_reason = value.get("stop_reason").and_then(Value::as_str);
        if stop_reason == Some("refusal") {
            return Err(SummarizeError::Refusal {
                provider: self.config.name.clone(),
                reason: "refusal".to_owned(),
                message: (!is_blank(&text)).then_some(text),
            });
        }
        summary_response(
            &self.config.name,
            text,
            sent_limit(&body, &["max_tokens"]),
            stop_reason == Some("max_tokens"),
            value.get("usage").map(usage),
        )
    }
}

/// The thinking budget for a reasoning effort.
fn budget_for(effort: &str) -> u32 {
    match effort {
        "minimal" => 1024,
        "low" => 2048,
        "high" | "xhigh" | "max" => 16384,
        _ => 8192,
    }
}

/// `max_tokens` and the thinking budget: the budget is added to the output
/// allowance, clamped to `cap`, and kept below `max_tokens`; thinking is
/// dropped when less than the API's minimum budget would be left.
fn plan_tokens(output: u32, budget: Option<u32>, cap: Option<u32>) -> (u32, Option<u32>) {
    let Some(mut budget) = budget else {
        return (output, None);
    };
    let mut max_tokens = output.saturating_add(budget);
    if let Some(cap) = cap {
        max_tokens = max_tokens.min(cap);
    }
    if budget >= max_tokens {
        budget = max_tokens / 2;
    }
    if budget < MIN_BUDGET {
        return (output, None);
    }
    (max_tokens, Some(budget))
}

/// Provider messages as alternating user and assistant turns: developer
/// messages and tool results fold into user turns, and neighbouring turns
/// of one role merge. A provider history is sent as its summary followed
/// by its kept messages (docs/design.md, "What the model sees").
fn messages(messages: &[LlmMessage]) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in resolve_replays(messages, None) {
        let (role, blocks) = match message {
            // No provider history is left after resolving; one would read
            // as its summary.
            LlmMessage::User { .. }
            | LlmMessage::Developer { .. }
            | LlmMessage::ProviderHistory(_) => ("user", blocks(message.content())),
            LlmMessage::Assistant { content, .. } => ("assistant", blocks(content)),
            LlmMessage::ToolResult {
                tool_call_id,
                content,
                is_error,
                ..
            } => {
                let mut result = Map::new();
                result.insert("type".into(), "tool_result".into());
                result.insert("tool_use_id".into(), tool_call_id.as_str().into());
                let inner = blocks(content);
                if !inner.is_empty() {
                    result.insert("content".into(), inner.into());
                }
                if *is_error {
                    result.insert("is_error".into(), true.into());
                }
                ("user", vec![Value::Object(result)])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// Text, image and tool-use blocks; thinking and empty text are not sent.
fn blocks(content: &[ContentBlock]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } if !text.is_empty() => {
                Some(json!({"type": "text", "text": text.as_str()}))
            }
            ContentBlock::Image {
                data, mime_type, ..
            } => Some(json!({
                "type": "image",
                "source": {"type": "base64", "media_type": mime_type, "data": data},
            })),
            ContentBlock::ToolCall(call) => Some(json!({
                "type": "tool_use",
                "id": call.id,
                "name": call.name.as_str(),
                "input": if call.arguments.is_null() { json!({}) } else { call.arguments.value().clone() },
            })),
            _ => None,
        })
        .collect()
}

/// Anthropic usage as session usage.
fn usage(usage: &Value) -> Usage {
    let num = |key: &str| usage.get(key).and_then(Value::as_f64).unwrap_or(0.0);
    let input = num("input_tokens");
    let output = num("output_tokens");
    let cache_read = num("cache_read_input_tokens");
    let cache_write = num("cache_creation_input_tokens");
    Usage {
        input,
        output,
        cache_read,
        cache_write,
        total_tokens: input + output + cache_read + cache_write,
        ..Usage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::{budget_for, plan_tokens};

    #[test]
    fn each_thinking_level_has_pi_s_budget() {
        let budgets: Vec<u32> = ["minimal", "low", "medium", "high", "xhigh"]
            .into_iter()
            .map(budget_for)
            .collect();
        assert_eq!(budgets, [1024, 2048, 8192, 16384, 16384]);
    }

    #[test]
    fn the_thinking_budget_stays_below_max_tokens() {
        assert_eq!(plan_tokens(13107, None, None), (13107, None));
        assert_eq!(plan_tokens(13107, Some(16384), None), (29491, Some(16384)));
        assert_eq!(
            plan_tokens(13107, Some(16384), Some(20000)),
            (20000, Some(16384))
        );
        assert_eq!(
            plan_tokens(4000, Some(16384), Some(8000)),
            (8000, Some(4000))
        );
        assert_eq!(plan_tokens(1500, Some(2048), Some(1500)), (1500, None));
    }
}
