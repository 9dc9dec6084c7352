//! Building sessions in tests.

use musepi_session_model::{
    AgentMessage, AssistantMessage, Compaction, Content, ContentBlock, EntryBody, EntryId, Header,
    JsonValue, SequentialIds, Session, Stamp, StopReason, Text, ToolCall, ToolResultMessage, Usage,
    UserMessage,
};
use serde_json::Value;

pub(crate) struct Builder {
    pub(crate) session: Session,
    ids: SequentialIds,
    now: i64,
}

impl Builder {
    pub(crate) fn new() -> Self {
        Self {
            session: Session::new(Header::new("test", "2025-01-01T00:00:00.000Z", "/repo")),
            ids: SequentialIds::new(),
            now: 1_735_689_600_000,
        }
    }

    pub(crate) fn push(&mut self, body: EntryBody) -> EntryId {
        self.now += 1000;
        let mut stamp = Stamp {
            ids: &mut self.ids,
            now: self.now,
        };
        self.session.append(body, &mut stamp)
    }

    pub(crate) fn user(&mut self, text: &str) -> EntryId {
        let now = self.now as f64;
        self.push(EntryBody::Message(AgentMessage::User(UserMessage {
            content: Content::Text(Text::new(text)),
            timestamp: Some(now),
            attribution: None,
        })))
    }

    pub(crate) fn assistant(
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

    pub(crate) fn result(&mut self, call_id: &str, tool: &str, text: &str) -> EntryId {
        self.result_with(call_id, tool, text, false, None)
    }

    pub(crate) fn result_with(
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

    pub(crate) fn compaction(
        &mut self,
        summary: &str,
        first_kept: &EntryId,
        tokens_before: f64,
    ) -> EntryId {
        self.push(EntryBody::Compaction(Compaction {
            summary: Text::new(summary),
            first_kept_entry_id: Some(first_kept.clone()),
            tokens_before,
            details: Some(serde_json::json!({"readFiles": [], "modifiedFiles": []})),
            from_extension: Some(false),
            ..Default::default()
        }))
    }

    pub(crate) fn leaf(&self) -> Option<usize> {
        self.session.leaf_index()
    }
}
