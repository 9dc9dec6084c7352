//! The `--json` documents of the commands that show what the model sees
//! and read back what it no longer sees (`musepi context`, `musepi
//! recall`), which `musepi serve`'s `context` and `recall` answer with too.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// `musepi context --json` (and `context` of `musepi serve`): what the
/// model sees at a leaf, message by message, and the context's tokens.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextDoc {
    /// The leaf.
    pub leaf_id: Option<String>,
    /// The model the context was last sent to.
    pub model: Option<ModelDoc>,
    /// The thinking level at the leaf (`off` when none was set).
    pub thinking_level: String,
    /// How tokens are counted: `heuristic`, `o200k` or `cl100k`.
    pub tokenizer: &'static str,
    /// The context's tokens.
    pub tokens: u64,
    /// The messages' tokens added up (`--llm`: equal to `tokens`).
    pub message_tokens: u64,
    /// What the compaction trigger compares: the last usage plus what
    /// followed it.
    pub context_estimate: EstimateDoc,
    /// The messages, oldest first.
    pub messages: Vec<ContextRowDoc>,
}

/// A model, by provider and id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelDoc {
    /// The provider.
    pub provider: String,
    /// The model id.
    pub model_id: String,
}

/// The measured tokens and how they were made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EstimateDoc {
    /// `usageTokens + trailingTokens`.
    pub tokens: u64,
    /// The context tokens of the last usage that counts (0 when none).
    pub usage_tokens: u64,
    /// The estimates of the messages after it (of all when none).
    pub trailing_tokens: u64,
    /// That usage's message, by position in `messages`.
    pub last_usage_index: Option<usize>,
}

/// A message of the context.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextRowDoc {
    /// Its entry.
    pub entry_id: String,
    /// Its role.
    pub role: String,
    /// Its tokens.
    pub tokens: u64,
    /// With `--full`: the message (the stored one, unknown fields and all;
    /// with `--llm` the provider message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Value>,
    /// `--transcript`: a newer compaction replaced this one.
    #[serde(skip_serializing_if = "is_false")]
    pub superseded: bool,
    /// `--transcript`: a compaction took it out of the context.
    #[serde(skip_serializing_if = "is_false")]
    pub compacted_away: bool,
    /// `--llm`: a provider's native history the message carries, counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_payload: Option<PayloadCountDoc>,
}

/// A provider's native history, counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PayloadCountDoc {
    /// `openaiResponsesHistory`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The provider that stored it.
    pub provider: String,
    /// Its native items.
    pub items: usize,
    /// The kept messages it stands for.
    pub kept_messages: usize,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes the field by reference
fn is_false(b: &bool) -> bool {
    !b
}

/// One page of an entry's content: `musepi recall FILE --entry ID`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntryPage {
    /// The entry.
    pub entry_id: String,
    /// Its message's role, or the entry's type when it carries no message.
    pub role: String,
    /// The tool of a tool result.
    pub tool_name: Option<String>,
    /// A compaction summarized it: the context at the leaf no longer holds it.
    pub summarized: bool,
    /// Pruning blanked it in the session.
    pub pruned: bool,
    /// The text is what the agent wrote: false for a pruned result whose
    /// original the store does not have (the text is then its placeholder).
    pub original: bool,
    /// The page's text: the bytes `offset` to `offset` + its length of the
    /// entry's whole text.
    pub text: String,
    /// Where the page starts, in bytes of the whole text.
    pub offset: usize,
    /// The whole text's length in bytes.
    pub length: usize,
    /// Where the next page starts (`--offset`), or null on the last.
    pub next: Option<usize>,
    /// What the store had to say (an original that did not match).
    pub warnings: Vec<String>,
}

/// One line a search found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Match {
    /// The entry it is in.
    pub entry_id: String,
    /// Its message's role.
    pub role: String,
    /// The tool of a tool result.
    pub tool_name: Option<String>,
    /// A compaction summarized the entry.
    pub summarized: bool,
    /// Pruning blanked it; the match is in its original.
    pub pruned: bool,
    /// The line's number in the entry's text, from 1.
    pub line: usize,
    /// The line, cut to about 160 characters around the match.
    pub text: String,
}

/// One page of a search: `musepi recall FILE --grep TEXT`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchPage {
    /// What was searched for (literally, in any case).
    pub query: String,
    /// The leaf whose lost history was searched.
    pub leaf_id: Option<String>,
    /// How many entries the search read: those compactions summarized,
    /// and the pruned results whose originals the store has.
    pub searched: usize,
    /// Pruned results of the path whose originals the store does not have
    /// (deleted, or never kept): the search could not read them.
    pub unrecoverable: Vec<String>,
    /// How many lines matched, in all.
    pub total: usize,
    /// The first match on this page, counted from 0.
    pub offset: usize,
    /// The most matches a page lists.
    pub limit: usize,
    /// Where the next page starts (`--offset`), or null on the last.
    pub next: Option<usize>,
    /// This page's matches, oldest entry first.
    pub matches: Vec<Match>,
    /// What the store had to say.
    pub warnings: Vec<String>,
}
