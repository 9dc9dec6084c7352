//! `musepi serve`'s lines: the request and response envelopes, every
//! method's parameters, and the answers that are the server's own (the
//! runtime's are in [`super::runtime`]; `context`, `plan` and `recall`
//! answer with the documents of the commands of the same names).

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::runtime::PromotionDoc;

/// A request line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequestLine {
    /// Any JSON value; the response carries it back.
    #[serde(default)]
    pub id: Value,
    /// The method.
    pub method: String,
    /// The method's parameters (an object; null or absent is `{}`).
    pub params: Option<serde_json::Map<String, Value>>,
}

/// A response line: `result` when `ok`, `error` otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ResponseLine {
    /// The request's `id` (null when the line could not be read).
    pub id: Value,
    /// Whether the method succeeded.
    pub ok: bool,
    /// The method's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDoc>,
}

/// A failed request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ErrorDoc {
    /// A stable code (docs/protocol.md lists them).
    pub code: &'static str,
    /// What went wrong, for people.
    pub message: String,
}

/// Reads a parameter that may be null but must be given (a field read
/// through a function is required even when its type is an `Option`).
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

/// `open`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenParams {
    /// The session file.
    pub path: String,
    /// Create a new session there (it must not exist).
    pub create: Option<bool>,
    /// The new session's id (with `create`); a fresh one otherwise.
    pub session_id: Option<String>,
    /// The new session's working directory (with `create`); the server's
    /// otherwise.
    pub cwd: Option<String>,
    /// Settings over the files' for this session, in the settings files'
    /// shape.
    pub settings: Option<Value>,
    /// The model's context window in tokens.
    pub context_window: Option<u64>,
    /// What every request carries besides its messages (the system prompt,
    /// the tool definitions), in tokens.
    pub overhead_tokens: Option<u64>,
    /// Larger-context models the runtime may switch to instead of
    /// compacting.
    pub promotion_targets: Option<Vec<PromotionDoc>>,
    /// The model the agent talks to.
    pub model: Option<ModelParam>,
    /// The agent's system prompt, which a handoff passes on.
    pub system_prompt: Option<String>,
}

/// `open`'s `model`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelParam {
    /// The provider name.
    pub provider: String,
    /// The model id.
    pub model_id: String,
    /// The model reads images: a snapcompact archive may be sent as PNG
    /// frames.
    pub vision: Option<bool>,
    /// The provider's API (`anthropic-messages`, `openai-responses`, …).
    pub api: Option<String>,
}

/// `append`: `entries` or `entry`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
pub struct AppendParams {
    /// Entries in pi's shape, without `id`, `parentId` and `timestamp`.
    pub entries: Option<Vec<serde_json::Map<String, Value>>>,
    /// One entry.
    pub entry: Option<serde_json::Map<String, Value>>,
}

/// `afterAssistant`: `entryId` or `message`, or neither for the last
/// assistant message on the path.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AfterAssistantParams {
    /// An assistant entry already in the session.
    pub entry_id: Option<String>,
    /// An assistant message to append first, in pi's shape.
    pub message: Option<serde_json::Map<String, Value>>,
}

/// `beforeRequest`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BeforeRequestParams {
    /// Whether every tool call of the last assistant has its result; the
    /// server works it out when absent.
    pub safe_boundary: Option<bool>,
}

/// `idle`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdleParams {
    /// How long the agent has waited for the user, in seconds.
    pub idle_seconds: u64,
}

/// `compact`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
pub struct CompactParams {
    /// What the summary should focus on.
    pub instructions: Option<String>,
}

/// `navigate`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NavigateParams {
    /// The entry to go to, or null for before the first entry.
    #[serde(deserialize_with = "nullable")]
    #[schemars(required)]
    pub target_id: Option<String>,
    /// Summarize the branch left (default: the settings' `branchSummary`).
    pub summarize: Option<bool>,
    /// What the branch summary should focus on.
    pub instructions: Option<String>,
    /// `instructions` replace the default prompt (default true).
    pub replace_instructions: Option<bool>,
    /// A label for the entry navigated to.
    pub label: Option<String>,
}

/// `context`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
pub struct ContextParams {
    /// The leaf (default: the session's; `"null"` for before the first
    /// entry).
    pub leaf: Option<String>,
    /// The provider messages, as `musepi context --llm` shows them.
    pub llm: Option<bool>,
    /// Whole messages instead of previews.
    pub full: Option<bool>,
}

/// `plan`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanParams {
    /// The leaf (default: the session's; `"null"` for before the first
    /// entry).
    pub leaf: Option<String>,
    /// Include the summary requests' prompts.
    pub show_prompts: Option<bool>,
    /// The kept window in tokens, over the settings'.
    pub keep_recent: Option<u64>,
    /// The reserve in tokens, over the settings'.
    pub reserve: Option<u64>,
    /// The context window in tokens, over the session's.
    pub context_window: Option<u64>,
}

/// `recall`: `entry` or `grep`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
pub struct RecallParams {
    /// Page an entry's original content.
    pub entry: Option<String>,
    /// Search what compactions and pruning took out of the context.
    pub grep: Option<String>,
    /// Where the page starts (bytes of an entry, matches of a search).
    pub offset: Option<u64>,
    /// How much one page holds.
    pub limit: Option<u64>,
    /// The leaf (default: the session's).
    pub leaf: Option<String>,
}

/// The answer of `status`, and of `open` with `created` and `warnings`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusDoc {
    /// A session is open.
    pub open: bool,
    /// The rest, when a session is open.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub session: Option<OpenSession>,
}

/// What `status` says of the open session.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenSession {
    /// The session file.
    pub path: String,
    /// The header's id.
    pub session_id: String,
    /// The leaf.
    pub leaf_id: Option<String>,
    /// Entries in the file.
    pub entry_count: usize,
    /// The maintenance strategy.
    pub strategy: &'static str,
    /// The context window.
    pub context_window: u64,
    /// Where automatic compaction starts.
    pub threshold_tokens: i64,
    /// The context's tokens at the leaf.
    pub context_tokens: u64,
    /// What the trigger compares: the last usage plus what followed it.
    pub measured_tokens: u64,
    /// Context promotion is on.
    pub context_promotion: bool,
    /// Branch summaries are on.
    pub branch_summary: bool,
    /// The models promotion may switch to.
    pub promotion_targets: Vec<PromotionDoc>,
    /// The summarizer, when a provider is configured.
    pub summarizer: Option<String>,
    /// The runtime's recovery state.
    pub state: StateDoc,
    /// `open` only: the session was created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<bool>,
    /// `open` only: problems with `settings`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

/// The runtime's recovery state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateDoc {
    /// An overflow was already recovered from once since the last success.
    pub overflow_recovery_attempted: bool,
    /// Empty incomplete answers recovered from in a row.
    pub empty_incomplete_recoveries: u32,
    /// The assistant whose usage was already acted on.
    pub acted_usage_entry_id: Option<String>,
}

/// The answer of `close`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CloseDoc {
    /// A session was open.
    pub closed: bool,
    /// Its file.
    pub path: Option<String>,
}

/// The answer of `append`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppendDoc {
    /// The new entries' ids, in order.
    pub ids: Vec<String>,
    /// The leaf now.
    pub leaf_id: Option<String>,
    /// Warnings about the session file this call caused.
    pub notes: Vec<String>,
}

/// The answer of `abort`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct AbortDoc {
    /// A running compaction or navigation was told to stop.
    pub aborted: bool,
}
