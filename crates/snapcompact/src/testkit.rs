//! Provider messages for unit tests.

use musepi_context_builder::LlmMessage;
use musepi_session_model::{ContentBlock, JsonValue, Text, ToolCall};
use serde_json::Value;

/// An assistant message with these blocks (no provider, model or stop reason).
pub(crate) fn assistant(content: Vec<ContentBlock>) -> LlmMessage {
    LlmMessage::Assistant {
        content,
        provider: None,
        model: None,
        stop_reason: None,
    }
}

/// A tool call of `name`.
pub(crate) fn call(id: &str, name: &str, args: Value) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: Text::new(name),
        arguments: JsonValue::new(args),
        intent: None,
    })
}

/// A `bash` result of call `id` with one text block.
pub(crate) fn result(id: &str, text: &str, is_error: bool) -> LlmMessage {
    LlmMessage::ToolResult {
        tool_call_id: id.into(),
        tool_name: "bash".into(),
        content: vec![ContentBlock::text(text)],
        is_error,
    }
}
