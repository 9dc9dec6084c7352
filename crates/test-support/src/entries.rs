//! Sessions built in memory from typed entries, for tests that prepare a
//! compaction and then keep appending to the same session.
//!
//! Ids come from [`SequentialIds`]; each entry is one second after the
//! previous one, starting at 2025-01-01T00:00:00Z; messages carry the time
//! of the entry before them.

use musepi_session_model::{
    AgentMessage, AssistantMessage, Compaction, Content, ContentBlock, EntryBody, EntryId, Header,
    JsonValue, MadeBy, SequentialIds, Session, Stamp, StopReason, Text, ToolCall,
    ToolResultMessage, Usage, UserMessage,
};
use serde_json::Value;

const START_MS: i64 = 1_735_689_600_000;

/// A session in memory, appended to entry by entry.
#[derive(Debug)]
pub struct EntryBuilder {
    /// The session so far.
    pub session: Session,
    ids: SequentialIds,
    now: i64,
}

impl Default for EntryBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl EntryBuilder {
    /// An empty session `test` in `/repo`.
    pub fn new() -> Self {
        Self {
            session: Session::new(Header::new("test", "2025-01-01T00:00:00.000Z", "/repo")),
            ids: SequentialIds::new(),
            now: START_MS,
        }
    }

    /// Appends `body` under the leaf, a second after the last entry.
    pub fn push(&mut self, body: EntryBody) -> EntryId {
        self.now += 1000;
        let mut stamp = Stamp {
            ids: &mut self.ids,
            now: self.now,
        };
        self.session.append(body, &mut stamp)
    }

    /// A user message.
    pub fn user(&mut self, text: &str) -> EntryId {
        let now = self.now as f64;
        self.push(EntryBody::Message(AgentMessage::User(UserMessage {
            content: Content::Text(Text::new(text)),
            timestamp: Some(now),
            attribution: None,
        })))
    }

    /// An assistant message: `text`, then a call per `(id, tool, arguments)`
    /// (`toolUse` when there are any, `stop` otherwise), with
    /// `(input, output)` usage if given.
    pub fn assistant(
        &mut self,
        text: &str,
        calls: &[(&str, &str, Value)],
        usage: Option<(f64, f64)>,
    ) -> EntryId {
        let mut blocks = vec![ContentBlock::text(text)];
        for (id, name, args) in calls {
            blocks.push(ContentBlock::ToolCall(ToolCall {
                id: (*id).to_owned(),
                name: Text::new(*name),
                arguments: JsonValue::new(args.clone()),
                intent: None,
            }));
        }
        let now = self.now as f64;
        self.push(EntryBody::Message(AgentMessage::Assistant(
            AssistantMessage {
                content: Content::Blocks(blocks),
                provider: Some("anthropic".into()),
                model: Some("claude-sonnet-4-5".into()),
                api: Some("anthropic-messages".into()),
                usage: usage.map(|(input, output)| Usage {
                    input,
                    output,
                    total_tokens: input + output,
                    ..Default::default()
                }),
                stop_reason: Some(if calls.is_empty() {
                    StopReason::Stop
                } else {
                    StopReason::ToolUse
                }),
                error_message: None,
                timestamp: Some(now),
            },
        )))
    }

    /// An assistant message: `text`, then the one call `id` of `tool` with
    /// `arguments`, without usage.
    pub fn call(&mut self, text: &str, id: &str, tool: &str, arguments: Value) -> EntryId {
        self.assistant(text, &[(id, tool, arguments)], None)
    }

    /// A successful tool result.
    pub fn result(&mut self, call_id: &str, tool: &str, text: &str) -> EntryId {
        self.result_with(call_id, tool, text, false, None)
    }

    /// A tool result, failed or not, marked useless or not.
    pub fn result_with(
        &mut self,
        call_id: &str,
        tool: &str,
        text: &str,
        is_error: bool,
        useless: Option<bool>,
    ) -> EntryId {
        let now = self.now as f64;
        self.push(EntryBody::Message(AgentMessage::ToolResult(
            ToolResultMessage {
                tool_call_id: call_id.into(),
                tool_name: tool.into(),
                content: Content::text(text),
                is_error,
                timestamp: Some(now),
                useless,
                ..Default::default()
            },
        )))
    }

    /// A compaction entry keeping from `first_kept`, with empty file lists.
    pub fn compaction(
        &mut self,
        summary: &str,
        first_kept: &EntryId,
        tokens_before: u64,
    ) -> EntryId {
        self.push(EntryBody::Compaction(Compaction {
            summary: Text::new(summary),
            first_kept_entry_id: Some(first_kept.clone()),
            tokens_before,
            details: Some(serde_json::json!({"readFiles": [], "modifiedFiles": []})),
            made_by: MadeBy::extension(false),
            ..Default::default()
        }))
    }

    /// A turn of filler: a user message of `words` words (`{tag}0 {tag}1 …`)
    /// and an answer.
    pub fn filler(&mut self, tag: &str, words: usize) {
        let text: Vec<String> = (0..words).map(|i| format!("{tag}{i}")).collect();
        self.user(&text.join(" "));
        self.assistant(&format!("done with {tag}"), &[], None);
    }

    /// The leaf's index.
    pub fn leaf(&self) -> Option<usize> {
        self.session.leaf_index()
    }
}
