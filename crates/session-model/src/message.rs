//! Messages (`AgentMessage`, docs/design.md, "The session file and its tree") and their content blocks.

use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::text::{JsonValue, RawJson, Text};

/// Message content: a plain string, or a list of blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A plain string.
    Text(Text),
    /// A list of blocks.
    Blocks(Vec<ContentBlock>),
}

impl Default for Content {
    fn default() -> Self {
        Self::Blocks(Vec::new())
    }
}

impl Content {
    /// One text block.
    pub fn text(s: impl Into<String>) -> Self {
        Self::Blocks(vec![ContentBlock::text(s)])
    }

    /// The blocks; a plain string reads as no blocks (use [`Content::as_text`]).
    pub fn blocks(&self) -> &[ContentBlock] {
        match self {
            Self::Text(_) => &[],
            Self::Blocks(b) => b,
        }
    }

    /// The plain string, when the content is one.
    pub fn as_text(&self) -> Option<&Text> {
        match self {
            Self::Text(t) => Some(t),
            Self::Blocks(_) => None,
        }
    }

    /// The string content, or the text blocks concatenated with no separator.
    pub fn joined_text(&self) -> String {
        match self {
            Self::Text(t) => t.as_str().to_owned(),
            Self::Blocks(blocks) => ContentBlock::joined_text(blocks),
        }
    }

    /// Whether there is no block and no text at all.
    pub fn is_empty(&self) -> bool {
        match self {
            Self::Text(t) => t.is_empty(),
            Self::Blocks(b) => b.is_empty(),
        }
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(t) => t.serialize(serializer),
            Self::Blocks(blocks) => {
                let mut seq = serializer.serialize_seq(Some(blocks.len()))?;
                for b in blocks {
                    seq.serialize_element(b)?;
                }
                seq.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content::Text(Text::new(v)))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content::Text(Text::new(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::Blocks(Vec::new()))
            }
            fn visit_none<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::Blocks(Vec::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(wire) = seq.next_element::<WireBlock>()? {
                    blocks.push(wire.into_block());
                }
                Ok(Content::Blocks(blocks))
            }
        }
        deserializer.deserialize_any(ContentVisitor)
    }
}

/// One content block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    /// Text.
    #[serde(rename = "text")]
    Text {
        /// The text.
        text: Text,
        /// Provider signature, when the provider gave one.
        #[serde(rename = "textSignature", skip_serializing_if = "Option::is_none")]
        text_signature: Option<String>,
    },
    /// Reasoning.
    #[serde(rename = "thinking")]
    Thinking {
        /// The reasoning text.
        thinking: Text,
        /// Provider signature, when the provider gave one.
        #[serde(rename = "thinkingSignature", skip_serializing_if = "Option::is_none")]
        thinking_signature: Option<String>,
        /// Whether the provider redacted it.
        #[serde(skip_serializing_if = "Option::is_none")]
        redacted: Option<bool>,
    },
    /// Redacted reasoning carried as opaque data.
    #[serde(rename = "redactedThinking")]
    RedactedThinking {
        /// Opaque provider data.
        data: String,
    },
    /// An image.
    #[serde(rename = "image")]
    Image {
        /// Base64 payload.
        data: String,
        /// MIME type, e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Provider detail hint (`original` for snapcompact frames).
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// A tool call.
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
    /// A block type this crate does not know; only its type is kept here
    /// (the journal keeps the whole line).
    #[serde(skip)]
    Other {
        /// The block's `type`.
        type_name: String,
    },
}

impl ContentBlock {
    /// The text blocks of `blocks`, concatenated with no separator.
    pub fn joined_text(blocks: &[Self]) -> String {
        let mut out = String::new();
        for b in blocks {
            if let Self::Text { text, .. } = b {
                out.push_str(text);
            }
        }
        out
    }

    /// A text block.
    pub fn text(s: impl Into<String>) -> Self {
        Self::Text {
            text: Text::new(s),
            text_signature: None,
        }
    }
}

/// A tool call inside an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// Call id, matched by the tool result's `toolCallId`.
    pub id: String,
    /// Tool name.
    pub name: Text,
    /// Arguments object, in the key order it was written.
    pub arguments: JsonValue,
    /// One-line intent (oh-my-pi).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
}

/// Why an assistant message ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// `stop`.
    Stop,
    /// `length`: the output limit was hit.
    Length,
    /// `toolUse`.
    ToolUse,
    /// `error`.
    Error,
    /// `aborted`.
    Aborted,
    /// Anything else, kept as written.
    Other(String),
}

impl StopReason {
    /// Parses the wire name.
    pub fn parse(s: &str) -> Self {
        match s {
            "stop" => Self::Stop,
            "length" => Self::Length,
            "toolUse" => Self::ToolUse,
            "error" => Self::Error,
            "aborted" => Self::Aborted,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolUse => "toolUse",
            Self::Error => "error",
            Self::Aborted => "aborted",
            Self::Other(s) => s,
        }
    }
}

impl Serialize for StopReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Provider usage of one LLM call.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Tokens read from the prompt cache.
    pub cache_read: f64,
    /// Tokens written to the prompt cache.
    pub cache_write: f64,
    /// Total as the provider reported it (0 when absent).
    pub total_tokens: f64,
    /// Cost breakdown, kept as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<RawJson>,
    /// One-hour cache writes (newer pi).
    #[serde(rename = "cacheWrite1h", skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<f64>,
    /// Reasoning tokens (newer pi).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<f64>,
    /// Context tokens (oh-my-pi, newer than its design).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<f64>,
}

/// A message (`AgentMessage`), by role.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role")]
pub enum AgentMessage {
    /// `user`.
    #[serde(rename = "user")]
    User(UserMessage),
    /// `assistant`.
    #[serde(rename = "assistant")]
    Assistant(AssistantMessage),
    /// `toolResult`.
    #[serde(rename = "toolResult")]
    ToolResult(ToolResultMessage),
    /// `bashExecution`: a shell command the user ran.
    #[serde(rename = "bashExecution")]
    BashExecution(BashExecutionMessage),
    /// `custom` (and the legacy `hookMessage`).
    #[serde(rename = "custom")]
    Custom(CustomMessage),
    /// `branchSummary` (runtime form of a `branch_summary` entry).
    #[serde(rename = "branchSummary")]
    BranchSummary(BranchSummaryMessage),
    /// `compactionSummary` (runtime form of a `compaction` entry).
    #[serde(rename = "compactionSummary")]
    CompactionSummary(CompactionSummaryMessage),
    /// A role this crate does not know; ignored by estimators.
    #[serde(skip)]
    Other {
        /// The role as written.
        role: String,
        /// Epoch milliseconds, when present.
        timestamp: Option<f64>,
    },
}

impl AgentMessage {
    /// The role name as it appears on the wire (`hookMessage` reads as `custom`).
    pub fn role(&self) -> &str {
        match self {
            Self::User(_) => "user",
            Self::Assistant(_) => "assistant",
            Self::ToolResult(_) => "toolResult",
            Self::BashExecution(_) => "bashExecution",
            Self::Custom(_) => "custom",
            Self::BranchSummary(_) => "branchSummary",
            Self::CompactionSummary(_) => "compactionSummary",
            Self::Other { role, .. } => role,
        }
    }

    /// Epoch milliseconds, when present.
    pub fn timestamp(&self) -> Option<f64> {
        match self {
            Self::User(m) => m.timestamp,
            Self::Assistant(m) => m.timestamp,
            Self::ToolResult(m) => m.timestamp,
            Self::BashExecution(m) => m.timestamp,
            Self::Custom(m) => m.timestamp,
            Self::BranchSummary(m) => m.timestamp,
            Self::CompactionSummary(m) => m.timestamp,
            Self::Other { timestamp, .. } => *timestamp,
        }
    }

    /// The assistant message, if this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            Self::Assistant(a) => Some(a),
            _ => None,
        }
    }

    /// The tool result, if this is one.
    pub fn as_tool_result(&self) -> Option<&ToolResultMessage> {
        match self {
            Self::ToolResult(t) => Some(t),
            _ => None,
        }
    }
}

/// `user`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UserMessage {
    /// Text or text and image blocks.
    pub content: Content,
    /// Epoch milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
    /// `user` or `agent` (oh-my-pi).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribution: Option<String>,
}

/// `assistant`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// Text, thinking and tool-call blocks.
    pub content: Content,
    /// Wire API (e.g. `anthropic-messages`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// Provider name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Model id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Why it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// Provider error text, for `error` stops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Epoch milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
}

impl AssistantMessage {
    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.blocks().iter().filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(c),
            _ => None,
        })
    }
}

/// `toolResult`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// Text and image blocks.
    pub content: Content,
    /// Tool-specific details, never sent to the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<RawJson>,
    /// Whether the tool failed.
    pub is_error: bool,
    /// Epoch milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
    /// The tool flagged the result as contextually useless (docs/design.md, "Pruning").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub useless: Option<bool>,
    /// When pruning blanked the content (epoch ms, docs/design.md, "Pruning").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pruned_at: Option<f64>,
    /// Usage of nested LLM work done by the tool (newer pi).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl ToolResultMessage {
    /// Useless and not an error (errors always win, docs/design.md, "Pruning").
    pub fn is_useless(&self) -> bool {
        self.useless == Some(true) && !self.is_error
    }
}

/// `bashExecution`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BashExecutionMessage {
    /// The command line.
    pub command: Text,
    /// Its output.
    pub output: Text,
    /// Exit code, when it exited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<f64>,
    /// The user cancelled it.
    pub cancelled: bool,
    /// The output was truncated.
    pub truncated: bool,
    /// Where the full output was saved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    /// `!!` commands are kept out of the model's context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclude_from_context: Option<bool>,
    /// Epoch milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
}

/// `custom`: an extension-injected message.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessage {
    /// Extension-defined kind.
    pub custom_type: String,
    /// What the model sees.
    pub content: Content,
    /// Whether the UI shows it.
    pub display: bool,
    /// Extension data, never sent to the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<RawJson>,
    /// Epoch milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
}

/// `branchSummary`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryMessage {
    /// The summary text.
    pub summary: Text,
    /// The entry the branch was taken from, or `root`.
    pub from_id: String,
    /// Epoch milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
}

/// `compactionSummary`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummaryMessage {
    /// The summary text.
    pub summary: Text,
    /// Context size before the compaction.
    pub tokens_before: f64,
    /// Epoch milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
    /// One-line summary for UIs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_summary: Option<String>,
}

/// A content block as written: every field of every block type, optional.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireBlock {
    #[serde(rename = "type")]
    ty: Option<String>,
    text: Option<Text>,
    thinking: Option<Text>,
    text_signature: Option<String>,
    thinking_signature: Option<String>,
    redacted: Option<bool>,
    data: Option<String>,
    mime_type: Option<String>,
    detail: Option<String>,
    id: Option<String>,
    name: Option<Text>,
    arguments: Option<JsonValue>,
    intent: Option<serde_json::Value>,
}

impl WireBlock {
    fn into_block(self) -> ContentBlock {
        match self.ty.as_deref() {
            Some("text") => ContentBlock::Text {
                text: self.text.unwrap_or_default(),
                text_signature: self.text_signature,
            },
            Some("thinking") => ContentBlock::Thinking {
                thinking: self.thinking.unwrap_or_default(),
                thinking_signature: self.thinking_signature,
                redacted: self.redacted,
            },
            Some("redactedThinking") => ContentBlock::RedactedThinking {
                data: self.data.unwrap_or_default(),
            },
            Some("image") => ContentBlock::Image {
                data: self.data.unwrap_or_default(),
                mime_type: self.mime_type.unwrap_or_default(),
                detail: self.detail,
            },
            Some("toolCall") => ContentBlock::ToolCall(ToolCall {
                id: self.id.unwrap_or_default(),
                name: self.name.unwrap_or_default(),
                arguments: self.arguments.unwrap_or_default(),
                intent: match self.intent {
                    Some(serde_json::Value::String(s)) => Some(s),
                    _ => None,
                },
            }),
            other => ContentBlock::Other {
                type_name: other.unwrap_or_default().to_owned(),
            },
        }
    }
}
