//! From pi's context-building tests: `buildSessionContext` over hand-built entry lists, and
//! properties of the context over generated trees.

#![allow(clippy::unwrap_used)]

use musepi_context_builder::{build_context, build_context_at};
use musepi_session_model::Session;
use musepi_test_support::session_of as session;
use proptest::prelude::*;
use serde_json::{Value, json};

fn user(t: &str) -> Value {
    json!({"type": "message", "message": {"role": "user", "content": t, "timestamp": 1}})
}

fn asst(t: &str) -> Value {
    json!({"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": t}], "provider": "anthropic", "model": "claude-test", "usage": {"input": 1, "output": 1}, "stopReason": "stop", "timestamp": 2}})
}

fn compaction(summary: &str, keep: &str) -> Value {
    json!({"type": "compaction", "summary": summary, "firstKeptEntryId": keep, "tokensBefore": 100})
}

fn branch_summary(summary: &str, from: &str) -> Value {
    json!({"type": "branch_summary", "fromId": from, "summary": summary})
}

/// `entries` in one line: ids `1`, `2`, … each under the one before.
fn chain(entries: Vec<Value>) -> Session {
    let ids: Vec<String> = (1..=entries.len()).map(|i| i.to_string()).collect();
    let rows: Vec<(&str, Option<&str>, Value)> = entries
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            (
                ids[i].as_str(),
                i.checked_sub(1).map(|p| ids[p].as_str()),
                e,
            )
        })
        .collect();
    session(&rows)
}

fn texts(s: &Session, leaf: Option<&str>) -> Vec<String> {
    let ctx = build_context_at(s, leaf.map_or(s.leaf_index(), |l| s.index_of(l)));
    ctx.messages
        .iter()
        .map(|m| match m.message.as_ref() {
            musepi_session_model::AgentMessage::CompactionSummary(c) => {
                format!("summary:{}", c.summary.as_str())
            }
            musepi_session_model::AgentMessage::BranchSummary(b) => {
                format!("branch:{}", b.summary.as_str())
            }
            other => format!(
                "{}:{}",
                other.role(),
                match other {
                    musepi_session_model::AgentMessage::User(u) => u.content.joined_text(),
                    musepi_session_model::AgentMessage::Assistant(a) => a.content.joined_text(),
                    _ => String::new(),
                }
            ),
        })
        .collect()
}

#[test]
fn cases_1_to_6_messages_thinking_and_model() {
    let empty = session(&[]);
    let c = build_context(&empty);
    assert!(c.messages.is_empty());
    assert_eq!(c.thinking_level, "off");
    assert_eq!(c.model, None);
    assert_eq!(texts(&chain(vec![user("hi")]), None), ["user:hi"]);
    let s = chain(vec![user("hello"), asst("hi there"), user("q"), asst("a")]);
    assert_eq!(
        texts(&s, None),
        ["user:hello", "assistant:hi there", "user:q", "assistant:a"]
    );
    let s = chain(vec![
        user("u"),
        json!({"type": "thinking_level_change", "thinkingLevel": "high"}),
        asst("a"),
    ]);
    let c = build_context(&s);
    assert_eq!((c.thinking_level.as_str(), c.messages.len()), ("high", 2));
    let s = chain(vec![
        user("u"),
        json!({"type": "model_change", "provider": "openai", "modelId": "gpt-4"}),
        asst("a"),
    ]);
    let m = build_context(&s).model.unwrap();
    assert_eq!(
        (m.provider.as_str(), m.model_id.as_str()),
        ("anthropic", "claude-test")
    );
}

#[test]
fn cases_7_to_9_only_the_latest_compaction_counts() {
    let s = chain(vec![
        user("first"),
        asst("response1"),
        user("second"),
        asst("response2"),
        compaction("Summary of first two turns", "3"),
        user("third"),
        asst("response3"),
    ]);
    assert_eq!(
        texts(&s, None),
        [
            "summary:Summary of first two turns",
            "user:second",
            "assistant:response2",
            "user:third",
            "assistant:response3"
        ]
    );
    let s = chain(vec![
        user("u"),
        asst("a"),
        compaction("Empty summary", "1"),
        user("v"),
    ]);
    assert_eq!(
        texts(&s, None),
        ["summary:Empty summary", "user:u", "assistant:a", "user:v"]
    );
    let s = chain(vec![
        user("u1"),
        asst("a1"),
        compaction("First summary", "1"),
        user("u2"),
        asst("a2"),
        compaction("Second summary", "4"),
        user("u3"),
    ]);
    assert_eq!(
        texts(&s, None),
        [
            "summary:Second summary",
            "user:u2",
            "assistant:a2",
            "user:u3"
        ]
    );
}

#[test]
fn cases_10_to_14_branches_summaries_unknown_leaves_and_orphans() {
    let s = session(&[
        ("1", None, user("start")),
        ("2", Some("1"), asst("r")),
        ("3", Some("2"), user("branch A")),
        ("4", Some("2"), user("branch B")),
    ]);
    assert_eq!(texts(&s, Some("3")).last().unwrap(), "user:branch A");
    assert_eq!(texts(&s, Some("4")).last().unwrap(), "user:branch B");
    let s = session(&[
        ("1", None, user("u")),
        ("2", Some("1"), asst("a")),
        ("3", Some("2"), user("abandoned path")),
        (
            "4",
            Some("2"),
            branch_summary("Summary of abandoned work", "3"),
        ),
        ("5", Some("4"), user("new direction")),
    ]);
    assert_eq!(
        texts(&s, Some("5")),
        [
            "user:u",
            "assistant:a",
            "branch:Summary of abandoned work",
            "user:new direction"
        ]
    );
    let s = session(&[
        ("1", None, user("start")),
        ("2", Some("1"), asst("r1")),
        ("3", Some("2"), user("q2")),
        ("4", Some("3"), asst("r2")),
        ("5", Some("4"), compaction("Compacted history", "3")),
        ("6", Some("5"), user("q3")),
        ("7", Some("6"), asst("r3")),
        ("8", Some("3"), user("wrong path")),
        ("9", Some("8"), asst("wrong response")),
        ("10", Some("3"), branch_summary("Tried wrong approach", "3")),
        ("11", Some("10"), user("better approach")),
    ]);
    // The compacted path and the path that took the branch summary.
    for (leaf, expected) in [
        (
            "7",
            [
                "summary:Compacted history",
                "user:q2",
                "assistant:r2",
                "user:q3",
                "assistant:r3",
            ],
        ),
        (
            "11",
            [
                "user:start",
                "assistant:r1",
                "user:q2",
                "branch:Tried wrong approach",
                "user:better approach",
            ],
        ),
    ] {
        assert_eq!(texts(&s, Some(leaf)), expected, "leaf {leaf}");
    }
    // An unknown leaf id falls back to the last entry (the file's leaf).
    let s = chain(vec![user("u"), asst("a")]);
    assert!(s.index_of("nonexistent").is_none());
    assert_eq!(build_context(&s).messages.len(), 2);
    // An orphan chain yields only its reachable part.
    let s = session(&[("1", None, user("u")), ("2", Some("missing"), asst("a"))]);
    assert_eq!(texts(&s, Some("2")), ["assistant:a"]);
}

#[test]
fn cases_15_16_custom_entries_produce_no_messages_and_settings_survive_compaction() {
    let s = chain(vec![
        user("u"),
        json!({"type": "custom", "customType": "c"}),
        asst("a"),
        json!({"type": "custom", "customType": "kept-card"}),
        user("v"),
        compaction("S", "4"),
        json!({"type": "custom", "customType": "after-card"}),
        asst("b"),
    ]);
    let roles: Vec<String> = build_context(&s)
        .messages
        .iter()
        .map(|m| m.message.role().to_owned())
        .collect();
    assert_eq!(roles, ["compactionSummary", "user", "assistant"]);
    let s = chain(vec![
        user("u"),
        json!({"type": "thinking_level_change", "thinkingLevel": "high"}),
        asst("a"),
        user("v"),
        compaction("S", "4"),
    ]);
    let c = build_context(&s);
    assert_eq!(c.thinking_level, "high");
    assert_eq!(
        c.messages
            .iter()
            .map(|m| m.message.role())
            .collect::<Vec<_>>(),
        ["compactionSummary", "user"]
    );
}

/// A generated tree: each step appends under a random earlier entry, and
/// tool results always follow the assistant that called them.
fn tree() -> impl Strategy<Value = Vec<(usize, u8)>> {
    prop::collection::vec((any::<usize>(), 0u8..6), 1..60)
}

fn build_tree(steps: &[(usize, u8)]) -> Session {
    let mut entries: Vec<(String, Option<String>, Value)> = Vec::new();
    let mut call = 0;
    for (i, (parent, kind)) in steps.iter().enumerate() {
        let id = format!("e{i}");
        let parent = if entries.is_empty() {
            None
        } else {
            Some(entries[parent % entries.len()].0.clone())
        };
        match kind {
            2 => entries.push((id, parent, asst("a"))),
            3 => {
                call += 1;
                let cid = format!("c{call}");
                let a = json!({"type": "message", "message": {"role": "assistant", "content": [{"type": "toolCall", "id": cid, "name": "read", "arguments": {"path": "x"}}], "stopReason": "toolUse", "timestamp": 1}});
                entries.push((id.clone(), parent, a));
                let r = json!({"type": "message", "message": {"role": "toolResult", "toolCallId": cid, "toolName": "read", "content": [{"type": "text", "text": "ok"}], "isError": false, "timestamp": 2}});
                entries.push((format!("{id}r"), Some(id), r));
            }
            // A compaction keeps from a user message, as real cuts do (never
            // from a tool result, which must stay with its call).
            4 if entries.iter().any(|e| e.2["message"]["role"] == "user") => {
                let users: Vec<&String> = entries
                    .iter()
                    .filter(|e| e.2["message"]["role"] == "user")
                    .map(|e| &e.0)
                    .collect();
                let keep = users[i % users.len()].clone();
                entries.push((id, parent, compaction("S", &keep)));
            }
            0 | 1 | 4 => entries.push((id, parent, user("u"))),
            _ => entries.push((id, parent, branch_summary("B", "x"))),
        }
    }
    let refs: Vec<(&str, Option<&str>, Value)> = entries
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_deref(), c.clone()))
        .collect();
    session(&refs)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_tool_result_follows_its_call_and_nothing_comes_from_off_the_path(steps in tree(), leaf in any::<usize>()) {
        let s = build_tree(&steps);
        let leaf = leaf % s.len();
        let path: std::collections::HashSet<usize> = s.path_indices(leaf).into_iter().collect();
        let ctx = build_context_at(&s, Some(leaf));
        let mut calls = std::collections::HashSet::new();
        for m in &ctx.messages {
            prop_assert!(path.contains(&m.entry_index), "entry {} is not on the leaf's path", m.entry_index);
            if let Some(a) = m.message.as_assistant() {
                for c in a.tool_calls() {
                    calls.insert(c.id.clone());
                }
            }
            if let Some(t) = m.message.as_tool_result() {
                prop_assert!(calls.contains(&t.tool_call_id), "result {} before its call", t.tool_call_id);
            }
        }
    }
}
