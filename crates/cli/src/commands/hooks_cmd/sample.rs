//! Sample payloads of the five events, typed so they have exactly the shape
//! the pipelines send (docs/hooks.md shows them).

use musepi_runtime::context::FileLists;
use musepi_runtime::hooks::events::{
    BeforeCompactEvent, BeforeTreeEvent, CompactEvent, CompactingEvent, MessageView,
    PreparationView, SummarizedMessages, TreeEvent, TreePreparation, TreeRequest, names,
};
use musepi_session_model::{
    AgentMessage, AssistantMessage, Content, ContentBlock, JsonValue, StopReason, Text, ToolCall,
    ToolResultMessage, UserMessage,
};
use serde_json::{Value, json};

/// The session file the samples name (it does not exist).
pub const SAMPLE_SESSION_FILE: &str = "/home/user/project/.pi/sessions/2025-05-01-sample.jsonl";
const SESSION_ID: &str = "0f3c2a9e-5b7d-4e1a-9c8f-2d6b1a7e4c30";
const T0: f64 = 1_746_093_600_000.0;

fn tool_call(id: &str, name: &str, arguments: Value) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.to_owned(),
        name: Text::new(name),
        arguments: JsonValue::new(arguments),
        intent: None,
    })
}

fn assistant(blocks: Vec<ContentBlock>, stop: StopReason, at: f64) -> AgentMessage {
    AgentMessage::Assistant(AssistantMessage {
        content: Content::Blocks(blocks),
        provider: Some("anthropic".to_owned()),
        model: Some("claude-sonnet-4-5".to_owned()),
        stop_reason: Some(stop),
        timestamp: Some(at),
        ..AssistantMessage::default()
    })
}

fn result(id: &str, name: &str, text: &str, at: f64) -> AgentMessage {
    AgentMessage::ToolResult(ToolResultMessage {
        tool_call_id: id.to_owned(),
        tool_name: name.to_owned(),
        content: Content::text(text),
        timestamp: Some(at),
        ..ToolResultMessage::default()
    })
}

/// The conversation the samples summarize.
fn messages() -> Vec<MessageView> {
    vec![
        MessageView::new(
            "a1b2c3d4",
            AgentMessage::User(UserMessage {
                content: Content::Text(Text::new(
                    "The parser drops the last line of a file without a trailing newline. Fix it.",
                )),
                timestamp: Some(T0),
                attribution: None,
            }),
        ),
        MessageView::new(
            "b2c3d4e5",
            assistant(
                vec![
                    ContentBlock::text("Reading the parser first."),
                    // A literal: a tool's arguments are whatever JSON the tool takes.
                    tool_call("call_1", "read", json!({"path": "src/parse.rs"})),
                ],
                StopReason::ToolUse,
                T0 + 4_000.0,
            ),
        ),
        MessageView::new(
            "c3d4e5f6",
            result(
                "call_1",
                "read",
                "pub fn lines(text: &str) -> Vec<&str> {\n    text.split_terminator('\\n').collect()\n}",
                T0 + 4_100.0,
            ),
        ),
    ]
}

/// The sample payload of `event` (one of [`names::ALL`]); `null` for an unknown name.
pub fn sample(event: &str) -> Value {
    let value = match event {
        names::BEFORE_COMPACT => serde_json::to_value(BeforeCompactEvent {
            kind: names::BEFORE_COMPACT,
            session_file: Some(SAMPLE_SESSION_FILE.to_owned()),
            session_id: SESSION_ID.to_owned(),
            reason: "manual".to_owned(),
            will_retry: false,
            custom_instructions: Some("Keep the failing test's name.".to_owned()),
            preparation: PreparationView {
                first_kept_entry_id: "d4e5f6a7".to_owned(),
                tokens_before: 48_213,
                is_split_turn: false,
                summarized: SummarizedMessages {
                    messages_to_summarize: messages(),
                    turn_prefix_messages: Vec::new(),
                },
                kept_message_count: 2,
                previous_summary: None,
                files: FileLists {
                    read_files: vec!["src/parse.rs".to_owned()],
                    modified_files: Vec::new(),
                },
            },
            branch_entry_ids: ["a1b2c3d4", "b2c3d4e5", "c3d4e5f6", "d4e5f6a7", "e5f6a7b8"]
                .map(str::to_owned)
                .to_vec(),
        }),
        names::COMPACTING => serde_json::to_value(CompactingEvent {
            kind: names::COMPACTING,
            session_id: SESSION_ID.to_owned(),
            messages: messages(),
        }),
        names::COMPACT => serde_json::to_value(CompactEvent {
            kind: names::COMPACT,
            session_file: Some(SAMPLE_SESSION_FILE.to_owned()),
            // A literal: the event carries the entry's line as the file
            // holds it, which is any JSON object pi wrote.
            compaction_entry: json!({
                "type": "compaction",
                "id": "d0e1f2a3",
                "parentId": "e5f6a7b8",
                "timestamp": "2025-05-01T10:05:00.000Z",
                "summary": "## Goal\nFix the parser dropping the last line of a file without a trailing newline.\n\n## Progress\n### Done\n- [x] Read src/parse.rs: `lines` itself is correct\n\n<files>\n# src/\nparse.rs\n</files>",
                "firstKeptEntryId": "d4e5f6a7",
                "tokensBefore": 48_213,
                "details": {"readFiles": ["src/parse.rs"], "modifiedFiles": []},
                "fromExtension": false,
            }),
            from_extension: false,
            reason: "manual".to_owned(),
            will_retry: false,
        }),
        names::BEFORE_TREE => serde_json::to_value(BeforeTreeEvent {
            kind: names::BEFORE_TREE,
            session_file: Some(SAMPLE_SESSION_FILE.to_owned()),
            preparation: TreePreparation {
                request: TreeRequest::to(Some("b2c3d4e5".to_owned()))
                    .with_summary(true)
                    .with_label(Some("before-the-edit".to_owned())),
                old_leaf_id: Some("e5f6a7b8".to_owned()),
                common_ancestor_id: Some("b2c3d4e5".to_owned()),
                entries_to_summarize: ["c3d4e5f6", "d4e5f6a7", "e5f6a7b8"]
                    .map(str::to_owned)
                    .to_vec(),
            },
        }),
        names::TREE => serde_json::to_value(TreeEvent {
            kind: names::TREE,
            session_file: Some(SAMPLE_SESSION_FILE.to_owned()),
            new_leaf_id: Some("f1a2b3c4".to_owned()),
            old_leaf_id: Some("e5f6a7b8".to_owned()),
            // A literal, as `compaction_entry` above.
            summary_entry: Some(json!({
                "type": "branch_summary",
                "id": "f1a2b3c4",
                "parentId": "b2c3d4e5",
                "timestamp": "2025-05-01T10:06:00.000Z",
                "fromId": "b2c3d4e5",
                "summary": "The user explored a branch and then navigated away.\n\n## Goal\nFix the parser.\n\n## Progress\n- Edited src/lib.rs (abandoned)",
                "details": {"readFiles": ["src/parse.rs"], "modifiedFiles": ["src/lib.rs"]},
                "fromExtension": false,
            })),
            from_extension: Some(false),
        }),
        _ => return Value::Null,
    };
    value.unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_has_a_sample_of_its_type() {
        for event in names::ALL {
            let s = sample(event);
            assert_eq!(s["type"], event, "{event}");
        }
        assert_eq!(sample("nope"), Value::Null);
    }

    #[test]
    fn messages_carry_their_role_and_entry() {
        let s = sample(names::COMPACTING);
        assert_eq!(s["messages"][1]["role"], "assistant");
        assert_eq!(
            s["messages"][1]["message"]["content"][1]["type"],
            "toolCall"
        );
        assert_eq!(s["messages"][2]["entryId"], "c3d4e5f6");
    }
}
