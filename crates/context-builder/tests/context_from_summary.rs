//! The context at a leaf is built from the path's record (the latest
//! compaction, thinking level and model known at every entry, kept as
//! entries are added, replaced or undone); it must always equal the context
//! built by walking the whole path, after every operation of random
//! sequences over random trees.

#![allow(clippy::unwrap_used)]

use musepi_context_builder::{build_context_at, build_context_over_path, context_thinking_level};
use musepi_session_model::{
    AgentMessage, AssistantMessage, Compaction, Content, Entry, EntryBody, EntryId, ModelChange,
    Replacement, SequentialIds, Session, Stamp, Text, UserMessage, load_bytes,
};
use proptest::prelude::*;
use serde_json::json;

/// One generated entry: its kind and which earlier entry is its parent
/// (taken modulo the entries so far; `None`: the previous entry).
#[derive(Debug, Clone)]
enum Kind {
    User,
    Assistant(u8),
    Compaction(Option<u8>),
    Thinking(Option<u8>),
    Model(Option<u8>, u8),
    Custom,
    BranchSummary,
    Other,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        4 => Just(Kind::User),
        4 => (0u8..3).prop_map(Kind::Assistant),
        2 => proptest::option::of(any::<u8>()).prop_map(Kind::Compaction),
        1 => proptest::option::of(0u8..3).prop_map(Kind::Thinking),
        1 => (proptest::option::of(0u8..3), 0u8..3).prop_map(|(r, m)| Kind::Model(r, m)),
        1 => Just(Kind::Custom),
        1 => Just(Kind::BranchSummary),
        1 => Just(Kind::Other),
    ]
}

const MODELS: [&str; 3] = ["m-a", "m-b", "m-c"];
const ROLES: [&str; 3] = ["default", "smol", "slow"];
const LEVELS: [&str; 3] = ["low", "medium", "high"];

/// The entry's fields; `ids` are the entries before it (a compaction keeps
/// from one of them, or names one that does not exist).
fn fields(kind: &Kind, ids: &[String]) -> serde_json::Value {
    match kind {
        Kind::User => {
            json!({"type": "message", "message": {"role": "user", "content": "u", "timestamp": 1}})
        }
        Kind::Assistant(m) => {
            json!({"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": "a"}], "provider": "p", "model": MODELS[*m as usize], "stopReason": "stop", "timestamp": 2}})
        }
        Kind::Compaction(keep) => {
            let keep = keep.map_or_else(
                || "nowhere".to_owned(),
                |k| {
                    ids.get(k as usize % ids.len().max(1))
                        .cloned()
                        .unwrap_or_default()
                },
            );
            json!({"type": "compaction", "summary": "s", "firstKeptEntryId": keep, "tokensBefore": 10})
        }
        Kind::Thinking(level) => {
            json!({"type": "thinking_level_change", "thinkingLevel": level.map(|l| LEVELS[l as usize])})
        }
        Kind::Model(role, m) => {
            let mut v =
                json!({"type": "model_change", "provider": "q", "modelId": MODELS[*m as usize]});
            if let Some(r) = role {
                v["role"] = json!(ROLES[*r as usize]);
            }
            v
        }
        Kind::Custom => {
            json!({"type": "custom_message", "customType": "note", "content": "c", "display": true})
        }
        Kind::BranchSummary => json!({"type": "branch_summary", "fromId": "x", "summary": "b"}),
        Kind::Other => {
            json!({"type": "label", "targetId": ids.first().cloned().unwrap_or_default(), "label": "l"})
        }
    }
}

fn load(steps: &[(Kind, Option<u16>)], duplicate: bool) -> Session {
    let mut text = json!({"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}).to_string();
    let mut ids: Vec<String> = Vec::new();
    for (i, (kind, parent)) in steps.iter().enumerate() {
        let parent = match parent {
            _ if i == 0 => None,
            None => Some(ids[i - 1].clone()),
            Some(p) => Some(ids[*p as usize % i].clone()),
        };
        // With `duplicate`, every fifth entry reuses an earlier id.
        let id = if duplicate && i % 5 == 4 {
            ids[i / 2].clone()
        } else {
            format!("e{i:04}")
        };
        let mut e = fields(kind, &ids);
        e["id"] = json!(id);
        e["parentId"] = json!(parent);
        e["timestamp"] = json!(format!("2025-01-01T00:{:02}:{:02}.000Z", i / 60, i % 60));
        text.push('\n');
        text.push_str(&e.to_string());
        ids.push(id);
    }
    text.push('\n');
    load_bytes(
        "t.jsonl".as_ref(),
        text.as_bytes(),
        &mut SequentialIds::new(),
    )
    .unwrap()
}

fn assert_every_leaf(s: &Session) -> Result<(), TestCaseError> {
    prop_assert_eq!(build_context_at(s, None), build_context_over_path(s, &[]));
    prop_assert_eq!(context_thinking_level(s, None), "off");
    for leaf in 0..s.len() {
        let path = s.path_indices(leaf);
        prop_assert_eq!(
            context_thinking_level(s, Some(leaf)),
            build_context_over_path(s, &path).thinking_level,
            "thinking level at leaf {}",
            leaf
        );
        prop_assert_eq!(
            build_context_at(s, Some(leaf)),
            build_context_over_path(s, &path),
            "leaf {}",
            leaf
        );
        for i in 0..s.len() {
            prop_assert_eq!(s.is_on_path(i, leaf), path.contains(&i));
        }
    }
    Ok(())
}

/// A body to append or to put in place of an entry.
fn body(kind: &Kind) -> EntryBody {
    match kind {
        Kind::Assistant(m) => EntryBody::Message(AgentMessage::Assistant(AssistantMessage {
            content: Content::text("a"),
            provider: Some("p".into()),
            model: Some(MODELS[*m as usize].into()),
            ..AssistantMessage::default()
        })),
        Kind::Compaction(_) => EntryBody::Compaction(Compaction {
            summary: Text::new("s"),
            first_kept_entry_id: Some(EntryId::new("e0001")),
            ..Compaction::default()
        }),
        Kind::Thinking(level) => EntryBody::ThinkingLevelChange {
            thinking_level: level.map(|l| LEVELS[l as usize].to_owned()),
        },
        Kind::Model(role, m) => EntryBody::ModelChange(ModelChange {
            provider: Some("q".into()),
            model_id: Some(MODELS[*m as usize].into()),
            role: role.map(|r| ROLES[r as usize].to_owned()),
            ..ModelChange::default()
        }),
        _ => EntryBody::Message(AgentMessage::User(UserMessage {
            content: Content::text("u"),
            ..UserMessage::default()
        })),
    }
}

/// An operation on a loaded session.
#[derive(Debug, Clone)]
enum Op {
    /// Move the leaf to an entry, then append.
    Append(u16, Kind),
    /// Put a new body in place of an entry (as pruning does).
    Replace(u16, Kind),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (any::<u16>(), kind()).prop_map(|(at, k)| Op::Append(at, k)),
        1 => (any::<u16>(), kind()).prop_map(|(at, k)| Op::Replace(at, k)),
    ]
}

fn steps() -> impl Strategy<Value = Vec<(Kind, Option<u16>)>> {
    prop::collection::vec(
        (kind(), proptest::option::weighted(0.3, any::<u16>())),
        1..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn the_context_from_the_path_record_is_the_context_of_the_whole_path(
        steps in steps(),
        ops in prop::collection::vec(op(), 0..12),
        duplicate in proptest::bool::weighted(0.2),
    ) {
        let mut s = load(&steps, duplicate);
        assert_every_leaf(&s)?;
        let mut ids = SequentialIds::new();
        for (n, op) in ops.iter().enumerate() {
            match op {
                Op::Append(at, kind) => {
                    let id = s.entries()[*at as usize % s.len()].id.to_string();
                    s.set_leaf(&id).unwrap();
                    let mut stamp = Stamp { ids: &mut ids, now: 1_800_000_000_000 + n as i64 };
                    s.append(body(kind), &mut stamp);
                }
                Op::Replace(at, kind) => {
                    let i = *at as usize % s.len();
                    let old = &s.entries()[i];
                    let entry = Entry { id: old.id.clone(), parent_id: old.parent_id.clone(), timestamp: old.timestamp.clone(), body: body(kind) };
                    s.replace(Replacement::new(i, entry, "{}".to_owned()));
                }
            }
            assert_every_leaf(&s)?;
        }
    }
}
