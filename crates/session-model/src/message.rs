//! Messages (`AgentMessage`, docs/design.md, "The session file and its tree") by role, with
//! their stop reasons and usage; their content is in [`crate::content`].

use serde::{Serialize, Serializer};

use crate::content::{Content, ContentBlock, ToolCall};
use crate::id::EntryId;
use crate::text::{RawJson, Text};

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
    pub tokens_before: u64,
    /// Epoch milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
    /// One-line summary for UIs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_summary: Option<String>,
    /// The compaction's first kept entry, when the message opens a context
    /// (the entries before it are what the summary replaced, and what
    /// recall reads back); not part of the message pi stores.
    #[serde(skip)]
    pub first_kept_entry_id: Option<EntryId>,
}
