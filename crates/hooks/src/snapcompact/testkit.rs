//! Building sessions and preparations in tests.

use musepi_compaction::{CompactionResult, CompactionSettings, Preparation, prepare};
use musepi_session_model::{
    AgentMessage, AssistantMessage, Content, ContentBlock, EntryBody, EntryId, Header, JsonValue,
    SequentialIds, Session, Stamp, StopReason, Text, ToolCall, ToolResultMessage, UserMessage,
};
use serde_json::Value;

pub(super) struct Builder {
    pub(super) session: Session,
    ids: SequentialIds,
    now: i64,
}

impl Builder {
    pub(super) fn new() -> Self {
        Self {
            session: Session::new(Header::new("test", "2025-01-01T00:00:00.000Z", "/repo")),
            ids: SequentialIds::new(),
            now: 1_735_689_600_000,
        }
    }

    pub(super) fn push(&mut self, body: EntryBody) -> EntryId {
        self.now += 1000;
        let mut stamp = Stamp {
            ids: &mut self.ids,
            now: self.now,
        };
        self.session.append(body, &mut stamp)
    }

    pub(super) fn user(&mut self, text: &str) -> EntryId {
        let now = self.now as f64;
        self.push(EntryBody::Message(AgentMessage::User(UserMessage {
            content: Content::Text(Text::new(text)),
            timestamp: Some(now),
            attribution: None,
        })))
    }

    pub(super) fn assistant(&mut self, text: &str, calls: &[(&str, &str, Value)]) -> EntryId {
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
                usage: None,
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

    pub(super) fn result(&mut self, call_id: &str, tool: &str, text: &str) -> EntryId {
        self.result_with(call_id, tool, text, None)
    }

    pub(super) fn result_with(
        &mut self,
        call_id: &str,
        tool: &str,
        text: &str,
        useless: Option<bool>,
    ) -> EntryId {
        let now = self.now as f64;
        self.push(EntryBody::Message(AgentMessage::ToolResult(
            ToolResultMessage {
                tool_call_id: call_id.into(),
                tool_name: tool.into(),
                content: Content::text(text),
                is_error: false,
                timestamp: Some(now),
                useless,
                ..Default::default()
            },
        )))
    }

    /// Appends a compaction result as an entry.
    pub(super) fn commit(&mut self, result: CompactionResult) -> EntryId {
        self.push(result.into_body())
    }

    /// A turn of filler: a user message of `words` words and an answer.
    pub(super) fn filler(&mut self, tag: &str, words: usize) {
        let text: Vec<String> = (0..words).map(|i| format!("{tag}{i}")).collect();
        self.user(&text.join(" "));
        self.assistant(&format!("done with {tag}"), &[]);
    }

    /// Prepares a compaction at the leaf, keeping about `keep` tokens.
    pub(super) fn prepare(&self, keep: u64) -> Preparation<'_> {
        let mut settings = CompactionSettings::default();
        settings.keep_recent_tokens = keep;
        settings.adapt_keep_recent = false;
        prepare(&self.session, self.session.leaf_index(), &settings)
            .unwrap_or_else(|e| panic!("nothing to compact: {e}"))
    }
}
