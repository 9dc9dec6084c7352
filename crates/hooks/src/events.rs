//! The five extension events (docs/design.md, "Hooks") and what handlers may answer.
//!
//! Every event serializes to the JSON a hook process reads on stdin, and
//! every result deserializes from the JSON it prints (docs/hooks.md).

use musepi_context_builder::{ContextMessage, FileLists};
use musepi_session_model::{AgentMessage, Session};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

/// Reads a token count an extension wrote as any JSON number (a script
/// may compute a fraction) as the count musepi uses, rounded; `null` is
/// none.
fn whole_tokens<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.map(musepi_session_model::json::whole_tokens))
}

/// Names of the events, as hook settings and payloads spell them.
pub mod names {
    /// Before a compaction: cancel it, or supply the whole compaction.
    pub const BEFORE_COMPACT: &str = "session_before_compact";
    /// Before the default summarizer runs: change its prompt and context.
    pub const COMPACTING: &str = "session.compacting";
    /// After a compaction was saved.
    pub const COMPACT: &str = "session_compact";
    /// Before tree navigation: cancel it, or supply the branch summary.
    pub const BEFORE_TREE: &str = "session_before_tree";
    /// After tree navigation.
    pub const TREE: &str = "session_tree";
    /// Every event, in pipeline order.
    pub const ALL: [&str; 5] = [BEFORE_COMPACT, COMPACTING, COMPACT, BEFORE_TREE, TREE];
}

/// The `sessionFile` of a payload: the file `session` was read from, if any.
pub(crate) fn session_file(session: &Session) -> Option<String> {
    session.origin().map(|p| p.display().to_string())
}

/// The entry `index` of `session` as its line in the file reads, for the
/// payloads of the after-events; `None` when the line cannot be read back.
pub(crate) fn entry_json(session: &Session, index: usize) -> Option<Value> {
    let line = session.raw_line(index).ok()?;
    musepi_session_model::json::parse_js(line.as_bytes()).ok()
}

/// One message shown to a hook: the entry it came from and the message.
/// Its JSON also names the message's role (`entryId`, `role`, `message`),
/// read from the message itself.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageView {
    /// The entry the message came from.
    pub entry_id: String,
    /// The message as stored.
    pub message: AgentMessage,
}

impl MessageView {
    /// The view of `message`, from the entry `entry_id`.
    pub fn new(entry_id: impl Into<String>, message: AgentMessage) -> Self {
        Self {
            entry_id: entry_id.into(),
            message,
        }
    }

    /// The views of context messages of `session`, in their order.
    pub fn all(session: &Session, messages: &[ContextMessage<'_>]) -> Vec<Self> {
        messages
            .iter()
            .map(|m| {
                Self::new(
                    session.entries()[m.entry_index].id.to_string(),
                    m.message.as_ref().clone(),
                )
            })
            .collect()
    }
}

// The shape `MessageView` serializes to, for its schema.
/// One message shown to a hook: the entry it came from, its role, and the
/// message as stored.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // only its schema is used
struct MessageViewShape {
    /// The entry the message came from.
    entry_id: String,
    /// The message's role (`user`, `assistant`, `toolResult`, …).
    role: String,
    /// The message as pi stores it.
    message: serde_json::Map<String, Value>,
}

impl JsonSchema for MessageView {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MessageView".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        MessageViewShape::json_schema(generator)
    }
}

impl Serialize for MessageView {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("MessageView", 3)?;
        out.serialize_field("entryId", &self.entry_id)?;
        out.serialize_field("role", self.message.role())?;
        out.serialize_field("message", &self.message)?;
        out.end()
    }
}

/// The messages a compaction summarizes, as hooks see them: the history
/// before the cut and the prefix of a split turn.
///
/// A pipeline makes the views once: `session_before_compact` shows them in
/// its preparation, and `session.compacting` then receives the same views
/// in one list ([`SummarizedMessages::into_messages`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SummarizedMessages {
    /// Messages to be summarized and dropped.
    pub messages_to_summarize: Vec<MessageView>,
    /// The prefix of a split turn.
    pub turn_prefix_messages: Vec<MessageView>,
}

impl SummarizedMessages {
    /// The views of the messages `summarize` and the split turn's
    /// `prefix`, context messages of `session`.
    pub fn of(
        session: &Session,
        summarize: &[ContextMessage<'_>],
        prefix: &[ContextMessage<'_>],
    ) -> Self {
        Self {
            messages_to_summarize: MessageView::all(session, summarize),
            turn_prefix_messages: MessageView::all(session, prefix),
        }
    }

    /// The messages to summarize, then the turn prefix: the `messages` of
    /// `session.compacting`.
    pub fn into_messages(self) -> Vec<MessageView> {
        let mut messages = self.messages_to_summarize;
        messages.extend(self.turn_prefix_messages);
        messages
    }
}

/// The compaction a pipeline is about to make (`CompactionPreparation`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreparationView {
    /// The first entry that will be kept.
    pub first_kept_entry_id: String,
    /// Context size before compaction.
    pub tokens_before: u64,
    /// Whether the cut splits a turn.
    pub is_split_turn: bool,
    /// What is summarized: `messagesToSummarize` and `turnPrefixMessages`.
    #[serde(flatten)]
    pub summarized: SummarizedMessages,
    /// How many messages are kept verbatim.
    pub kept_message_count: usize,
    /// The previous compaction's summary.
    pub previous_summary: Option<String>,
    /// The files read (and not modified) and the files modified in what
    /// is summarized: `readFiles` and `modifiedFiles`.
    #[serde(flatten)]
    pub files: FileLists,
}

/// `session_before_compact`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BeforeCompactEvent {
    /// Always `session_before_compact`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The session file, when there is one.
    pub session_file: Option<String>,
    /// The session id.
    pub session_id: String,
    /// Why: `manual`, `threshold`, `overflow`, `incomplete` or `idle`.
    pub reason: String,
    /// Whether the failed request is retried afterwards.
    pub will_retry: bool,
    /// The user's focus, when given.
    pub custom_instructions: Option<String>,
    /// The planned compaction.
    pub preparation: PreparationView,
    /// Ids of every entry on the current branch, root first.
    pub branch_entry_ids: Vec<String>,
}

/// A compaction supplied by a hook (used verbatim, stored with `fromExtension: true`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuppliedCompaction {
    /// The summary text.
    pub summary: String,
    /// The first kept entry (default: the prepared one).
    pub first_kept_entry_id: Option<String>,
    /// Context size before (default: the prepared one); any JSON number,
    /// rounded to a whole count.
    #[serde(default, deserialize_with = "whole_tokens")]
    pub tokens_before: Option<u64>,
    /// Anything the extension wants stored.
    pub details: Option<Value>,
    /// One-line summary.
    pub short_summary: Option<String>,
    /// Data carried to later compactions.
    pub preserve_data: Option<Value>,
}

/// What a `session_before_compact` handler may answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct BeforeCompactResult {
    /// Stop the compaction.
    pub cancel: bool,
    /// Use this compaction instead of summarizing.
    pub compaction: Option<SuppliedCompaction>,
    /// Why it cancels, in the hook's words (a musepi addition: an answer
    /// may carry it, and a hook that exits 2 gets the last lines it wrote
    /// on stderr); a command's error names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl BeforeCompactResult {
    /// Whether the answer says anything.
    pub fn is_empty(&self) -> bool {
        !self.cancel && self.compaction.is_none()
    }
}

/// `session.compacting`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactingEvent {
    /// Always `session.compacting`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The session id.
    pub session_id: String,
    /// Messages to summarize, then the turn prefix.
    pub messages: Vec<MessageView>,
}

/// What a `session.compacting` handler may answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactingResult {
    /// Replaces the base summary instruction (custom instructions still follow).
    pub prompt: Option<String>,
    /// Lines added to `<additional-context>`.
    pub context: Vec<String>,
    /// Data stored in the entry's `preserveData`.
    pub preserve_data: Option<Value>,
}

impl CompactingResult {
    /// Whether the answer says anything.
    pub fn is_empty(&self) -> bool {
        self.prompt.is_none() && self.context.is_empty() && self.preserve_data.is_none()
    }
}

/// `session_compact`: after the entry was saved.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactEvent {
    /// Always `session_compact`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The session file, when there is one.
    pub session_file: Option<String>,
    /// The saved entry, as written.
    pub compaction_entry: Value,
    /// Whether an extension supplied it.
    pub from_extension: bool,
    /// Why it ran.
    pub reason: String,
    /// Whether the failed request is retried.
    pub will_retry: bool,
}

/// A tree navigation as the user asked for it: where to go, whether to
/// summarize the branch being left, and how.
///
/// Start from [`TreeRequest::to`] and set what differs (the `with_`
/// methods, or the fields): fields are added as navigation grows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TreeRequest {
    /// The entry to go to; `None` goes before the first entry (root).
    pub target_id: Option<String>,
    /// Whether the user wants the abandoned branch summarized.
    pub summarize: bool,
    /// The user's instructions for the summary.
    pub custom_instructions: Option<String>,
    /// Whether they replace the default prompt (otherwise they add a focus).
    pub replace_instructions: bool,
    /// A label for the new position.
    pub label: Option<String>,
}

impl TreeRequest {
    /// A navigation to `target_id` (`None`: the root), without a summary,
    /// instructions or label.
    #[must_use]
    pub fn to(target_id: Option<String>) -> Self {
        Self {
            target_id,
            ..Self::default()
        }
    }

    /// The same navigation, summarizing the abandoned branch or not.
    #[must_use]
    pub fn with_summary(mut self, summarize: bool) -> Self {
        self.summarize = summarize;
        self
    }

    /// The same navigation with these instructions for the summary, which
    /// `replace` the default prompt or add a focus to it.
    #[must_use]
    pub fn with_instructions(mut self, instructions: Option<String>, replace: bool) -> Self {
        self.custom_instructions = instructions;
        self.replace_instructions = replace;
        self
    }

    /// The same navigation, labelling the new position.
    #[must_use]
    pub fn with_label(mut self, label: Option<String>) -> Self {
        self.label = label;
        self
    }
}

/// The navigation a pipeline is about to make: the request and what it
/// leaves behind.
///
/// Its JSON is flat, in the order hooks have always read it: `targetId`,
/// `oldLeafId`, `commonAncestorId`, `entriesToSummarize`,
/// `userWantsSummary`, `customInstructions`, `replaceInstructions`, `label`.
#[derive(Debug, Clone, PartialEq)]
pub struct TreePreparation {
    /// What the user asked for (before any hook changed it).
    pub request: TreeRequest,
    /// Where the user was.
    pub old_leaf_id: Option<String>,
    /// The deepest entry both paths share.
    pub common_ancestor_id: Option<String>,
    /// The abandoned entries, oldest first.
    pub entries_to_summarize: Vec<String>,
}

// The shape `TreePreparation` serializes to, for its schema.
/// The navigation about to be made: the request and what it leaves behind.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // only its schema is used
struct TreePreparationShape {
    /// The entry navigated to; null for before the first entry.
    target_id: Option<String>,
    /// Where the user was.
    old_leaf_id: Option<String>,
    /// The deepest entry both paths share.
    common_ancestor_id: Option<String>,
    /// The abandoned entries, oldest first.
    entries_to_summarize: Vec<String>,
    /// The user asked for a summary of the branch left.
    user_wants_summary: bool,
    /// The user's instructions for it.
    custom_instructions: Option<String>,
    /// They replace the default prompt.
    replace_instructions: bool,
    /// The label for the new position.
    label: Option<String>,
}

impl JsonSchema for TreePreparation {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TreePreparation".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        TreePreparationShape::json_schema(generator)
    }
}

impl Serialize for TreePreparation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = &self.request;
        let mut out = serializer.serialize_struct("TreePreparation", 8)?;
        out.serialize_field("targetId", &request.target_id)?;
        out.serialize_field("oldLeafId", &self.old_leaf_id)?;
        out.serialize_field("commonAncestorId", &self.common_ancestor_id)?;
        out.serialize_field("entriesToSummarize", &self.entries_to_summarize)?;
        out.serialize_field("userWantsSummary", &request.summarize)?;
        out.serialize_field("customInstructions", &request.custom_instructions)?;
        out.serialize_field("replaceInstructions", &request.replace_instructions)?;
        out.serialize_field("label", &request.label)?;
        out.end()
    }
}

/// `session_before_tree`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BeforeTreeEvent {
    /// Always `session_before_tree`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The session file, when there is one.
    pub session_file: Option<String>,
    /// The planned navigation.
    pub preparation: TreePreparation,
}

/// A branch summary supplied by a hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuppliedSummary {
    /// The summary text.
    pub summary: String,
    /// Anything the extension wants stored.
    pub details: Option<Value>,
}

/// What a `session_before_tree` handler may answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct BeforeTreeResult {
    /// Stop the navigation (the leaf does not move).
    pub cancel: bool,
    /// Use this summary (only when the user asked for one).
    pub summary: Option<SuppliedSummary>,
    /// Replaces the user's custom instructions.
    pub custom_instructions: Option<String>,
    /// Replaces the replace-instructions flag.
    pub replace_instructions: Option<bool>,
    /// Replaces the label.
    pub label: Option<String>,
    /// Why it cancels, as for [`BeforeCompactResult::reason`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl BeforeTreeResult {
    /// Whether the answer says anything.
    pub fn is_empty(&self) -> bool {
        !self.cancel
            && self.summary.is_none()
            && self.custom_instructions.is_none()
            && self.replace_instructions.is_none()
            && self.label.is_none()
    }
}

/// `session_tree`: after navigation.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeEvent {
    /// Always `session_tree`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The session file, when there is one.
    pub session_file: Option<String>,
    /// The new leaf.
    pub new_leaf_id: Option<String>,
    /// The old leaf.
    pub old_leaf_id: Option<String>,
    /// The branch summary written, if any.
    pub summary_entry: Option<Value>,
    /// Whether an extension supplied it (only when a summary was written).
    pub from_extension: Option<bool>,
}

#[cfg(test)]
mod tests {
    use musepi_session_model::{Content, ToolResultMessage};

    use super::*;

    #[test]
    fn a_supplied_token_count_may_be_any_json_number_and_is_read_as_a_whole_count() {
        let read = |json: &str| -> Option<u64> {
            let answer: BeforeCompactResult = serde_json::from_str(json).unwrap();
            answer.compaction.unwrap().tokens_before
        };
        assert_eq!(
            read(r#"{"compaction":{"summary":"s","tokensBefore":1234.6}}"#),
            Some(1235)
        );
        assert_eq!(
            read(r#"{"compaction":{"summary":"s","tokensBefore":1234}}"#),
            Some(1234)
        );
        assert_eq!(
            read(r#"{"compaction":{"summary":"s","tokensBefore":-5}}"#),
            Some(0)
        );
        assert_eq!(
            read(r#"{"compaction":{"summary":"s","tokensBefore":null}}"#),
            None
        );
        assert_eq!(read(r#"{"compaction":{"summary":"s"}}"#), None);
    }

    #[test]
    fn a_message_view_names_its_entry_and_the_role_its_message_has() {
        let message = AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: "call-1".to_owned(),
            tool_name: "read".to_owned(),
            content: Content::text("fn main() {}"),
            ..ToolResultMessage::default()
        });
        let view = MessageView::new("e1", message.clone());
        let json = serde_json::to_string(&view).unwrap_or_else(|e| panic!("{e}"));
        let message_json = serde_json::to_string(&message).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            json,
            format!(r#"{{"entryId":"e1","role":"toolResult","message":{message_json}}}"#)
        );
    }
}
