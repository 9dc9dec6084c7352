//! The remote replay (docs/design.md, "What the model sees"): a compaction whose entry stored a
//! provider's native history (`preserveData.openaiRemoteCompaction`, written
//! by the provider-native compaction (docs/design.md, "Remote summaries") reaches the model as a
//! [`LlmMessage::ProviderHistory`] that holds the messages of the kept
//! entries, instead of a summary followed by those messages.

use std::collections::{HashMap, HashSet};

use musepi_session_model::{EntryBody, Session};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::llm::{Converted, LlmMessage, ProviderHistory};

/// The `preserveData` key of a provider-native compaction.
pub const REMOTE_COMPACTION_KEY: &str = "openaiRemoteCompaction";

/// The replay stored on the compaction entry at `entry_index`: its
/// provider and its replacement history. `None` unless the entry is a
/// compaction whose `preserveData.openaiRemoteCompaction` has a non-empty
/// string `provider` and an array `replacementHistory`.
pub fn remote_replay(session: &Session, entry_index: usize) -> Option<(String, Vec<Value>)> {
    let entry = session.entries().get(entry_index)?;
    let EntryBody::Compaction(compaction) = &entry.body else {
        return None;
    };
    let raw = compaction.preserve_data.as_ref()?;
    // Only the one key is parsed: the same object may hold a large archive.
    let keys: HashMap<String, &RawValue> = serde_json::from_str(raw.get()).ok()?;
    let remote: Value = serde_json::from_str(keys.get(REMOTE_COMPACTION_KEY)?.get()).ok()?;
    let provider = remote
        .get("provider")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())?;
    let items = remote.get("replacementHistory").and_then(Value::as_array)?;
    Some((provider.to_owned(), items.clone()))
}

/// Turns every compaction summary in `out` whose entry carries a valid
/// replay into a [`LlmMessage::ProviderHistory`], moving the messages that
/// follow it from entries before the compaction on its path (the kept
/// entries, docs/design.md, "What the model sees") inside it.
pub(crate) fn attach_replays(out: &mut Vec<Converted>, session: &Session) {
    let mut i = 0;
    while i < out.len() {
        let index = out[i].entry_index;
        let replay = remote_replay(session, index);
        if let (Some((provider, items)), LlmMessage::User { .. }) = (replay, &out[i].message) {
            let ancestors: HashSet<usize> = session
                .path_indices(index)
                .into_iter()
                .filter(|&a| a != index)
                .collect();
            let kept_end = i
                + 1
                + out[i + 1..]
                    .iter()
                    .take_while(|c| ancestors.contains(&c.entry_index))
                    .count();
            let kept = out.drain(i + 1..kept_end).map(|c| c.message).collect();
            let summary = std::mem::replace(
                &mut out[i].message,
                LlmMessage::User {
                    content: Vec::new(),
                },
            );
            out[i].message = LlmMessage::ProviderHistory(ProviderHistory {
                provider,
                items,
                summary: Box::new(summary),
                kept,
            });
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use musepi_session_model::ContentBlock;
    use serde_json::json;

    use super::*;
    use musepi_test_support::session_of as session;

    use crate::convert::{ConvertOptions, convert_to_llm};
    use crate::llm::resolve_replays;
    use crate::{build_context, serialize_conversation, serialize_for_summary};

    fn user(t: &str) -> Value {
        json!({"type": "message", "message": {"role": "user", "content": t, "timestamp": 1}})
    }

    fn asst(blocks: &Value) -> Value {
        json!({"type": "message", "message": {"role": "assistant", "content": blocks, "provider": "openai", "model": "m", "stopReason": "stop", "timestamp": 2}})
    }

    /// An assistant message that says `text`.
    fn said(text: &str) -> Value {
        asst(&json!([{"type": "text", "text": text}]))
    }

    fn call(id: &str) -> Value {
        asst(&json!([{"type": "toolCall", "id": id, "name": "read", "arguments": {}}]))
    }

    fn result(id: &str) -> Value {
        json!({"type": "message", "message": {"role": "toolResult", "toolCallId": id, "toolName": "read", "content": [{"type": "text", "text": "ok"}], "isError": false, "timestamp": 3}})
    }

    fn compaction(keep: &str, preserve: &Value) -> Value {
        json!({"type": "compaction", "summary": "S", "firstKeptEntryId": keep, "tokensBefore": 100, "preserveData": preserve})
    }

    fn remote(provider: &Value, history: &Value) -> Value {
        json!({"openaiRemoteCompaction": {"provider": provider, "replacementHistory": history, "compactionItem": {"type": "compaction", "encrypted_content": "x"}}})
    }

    /// The replay openai stored with an empty replacement history.
    fn empty_openai_replay() -> Value {
        remote(&json!("openai"), &json!([]))
    }

    /// u1 a1 [u2 a2 kept] C u3 a3.
    fn compacted(preserve: &Value) -> Session {
        session(&[
            ("u1", None, user("one")),
            ("a1", Some("u1"), said("A1")),
            ("u2", Some("a1"), user("two")),
            ("a2", Some("u2"), said("A2")),
            ("c", Some("a2"), compaction("u2", preserve)),
            ("u3", Some("c"), user("three")),
            ("a3", Some("u3"), said("A3")),
        ])
    }

    fn replaying(s: &Session) -> Vec<LlmMessage> {
        let ctx = build_context(s);
        let options = ConvertOptions {
            session: Some(s),
            ..ConvertOptions::default()
        };
        convert_to_llm(&ctx.messages, &options)
    }

    fn texts<'a>(messages: impl IntoIterator<Item = &'a LlmMessage>) -> Vec<String> {
        messages
            .into_iter()
            .map(|m| {
                let text: String = m
                    .content()
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text, .. } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                format!("{}:{}", m.role(), text.lines().last().unwrap_or_default())
            })
            .collect()
    }

    #[test]
    fn a_valid_replay_carries_the_payload_and_holds_the_kept_messages() {
        let items = json!([{"type": "compaction", "encrypted_content": "x"}, {"type": "message", "role": "user", "content": "two"}]);
        let s = compacted(&remote(&json!("openai"), &items));
        let out = replaying(&s);
        assert_eq!(
            texts(&out),
            ["user:</summary>", "user:three", "assistant:A3"]
        );
        let h = out[0]
            .provider_history()
            .unwrap_or_else(|| panic!("no payload"));
        assert_eq!(h.provider, "openai");
        assert_eq!(Value::Array(h.items.clone()), items);
        assert_eq!(texts(&h.kept), ["user:two", "assistant:A2"]);
        assert!(matches!(h.summary.as_ref(), LlmMessage::User { .. }));
        // Another provider sends the summary and the kept messages: exactly
        // the conversion without the session.
        let ctx = build_context(&s);
        let plain = convert_to_llm(&ctx.messages, &ConvertOptions::default());
        let resolved: Vec<LlmMessage> = resolve_replays(&out, None).into_iter().cloned().collect();
        assert_eq!(resolved, plain);
        let fallback = texts(resolve_replays(&out, None));
        assert_eq!(
            fallback,
            [
                "user:</summary>",
                "user:two",
                "assistant:A2",
                "user:three",
                "assistant:A3"
            ]
        );
        assert_eq!(
            texts(resolve_replays(&out, Some("azure"))),
            fallback.as_slice()
        );
        // The provider that stored it keeps the history in place.
        let own = resolve_replays(&out, Some("openai"));
        assert_eq!(own.len(), 3);
        assert!(own[0].provider_history().is_some());
    }

    #[test]
    fn without_the_session_or_refinements_nothing_changes() {
        let s = compacted(&empty_openai_replay());
        let ctx = build_context(&s);
        let plain = convert_to_llm(&ctx.messages, &ConvertOptions::default());
        assert_eq!(
            texts(&plain),
            [
                "user:</summary>",
                "user:two",
                "assistant:A2",
                "user:three",
                "assistant:A3"
            ]
        );
        let summary = ConvertOptions {
            session: Some(&s),
            ..ConvertOptions::for_summary()
        };
        assert_eq!(convert_to_llm(&ctx.messages, &summary), plain);
        // The context itself and the summarizer input are the reference's.
        assert_eq!(ctx.messages.len(), 5);
        assert_eq!(
            serialize_for_summary(&ctx.messages),
            serialize_conversation(&plain)
        );
        // An empty history is still a valid replay; a summarizer reads it
        // as the summary and the kept messages.
        let out = replaying(&s);
        assert_eq!(out.len(), 3);
        assert_eq!(serialize_conversation(&out), serialize_conversation(&plain));
        assert!(
            out[0]
                .provider_history()
                .is_some_and(|h| h.items.is_empty())
        );
    }

    #[test]
    fn invalid_payloads_are_ignored() {
        for preserve in [
            remote(&json!(""), &json!([])),
            remote(&json!(7), &json!([])),
            remote(&json!("openai"), &json!({"items": []})),
            remote(&json!("openai"), &Value::Null),
            json!({"openaiRemoteCompaction": "openai"}),
            json!({"snapcompact": {}}),
            json!([{"openaiRemoteCompaction": {"provider": "openai", "replacementHistory": []}}]),
            Value::Null,
        ] {
            let s = compacted(&preserve);
            let out = replaying(&s);
            assert_eq!(out.len(), 5, "{preserve}");
            assert!(
                out.iter().all(|m| m.provider_history().is_none()),
                "{preserve}"
            );
        }
    }

    #[test]
    fn only_entries_before_the_compaction_are_held() {
        // The kept entry was not found: nothing before the compaction is
        // emitted, and nothing after it is held.
        let s = session(&[
            ("u1", None, user("one")),
            ("c", Some("u1"), compaction("gone", &empty_openai_replay())),
            ("u3", Some("c"), user("three")),
        ]);
        let out = replaying(&s);
        assert_eq!(texts(&out), ["user:</summary>", "user:three"]);
        let h = out[0]
            .provider_history()
            .unwrap_or_else(|| panic!("no payload"));
        assert!(h.kept.is_empty());
        // An older compaction's replay is gone with its summary.
        let s = session(&[
            ("u1", None, user("one")),
            ("c1", Some("u1"), compaction("u1", &empty_openai_replay())),
            ("u2", Some("c1"), user("two")),
            ("c2", Some("u2"), compaction("u2", &json!({}))),
            ("u3", Some("c2"), user("three")),
        ]);
        let out = replaying(&s);
        assert_eq!(texts(&out), ["user:</summary>", "user:two", "user:three"]);
        assert!(out.iter().all(|m| m.provider_history().is_none()));
    }

    #[test]
    fn results_of_held_calls_leave_with_them_when_the_history_is_sent() {
        // A call kept before the compaction, answered after it.
        let s = session(&[
            ("u1", None, user("one")),
            ("a1", Some("u1"), call("t1")),
            ("c", Some("a1"), compaction("u1", &empty_openai_replay())),
            ("r1", Some("c"), result("t1")),
            ("a2", Some("r1"), said("A2")),
        ]);
        let out = replaying(&s);
        assert_eq!(out.len(), 3);
        let h = out[0]
            .provider_history()
            .unwrap_or_else(|| panic!("no payload"));
        assert_eq!(h.kept.len(), 2);
        let own = resolve_replays(&out, Some("openai"));
        assert_eq!(texts(own), ["user:</summary>", "assistant:A2"]);
        let other = resolve_replays(&out, None);
        assert_eq!(other.len(), 5);
        assert!(matches!(other[3], LlmMessage::ToolResult { .. }));
    }
}
