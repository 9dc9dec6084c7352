//! The context's token account, kept as entries are appended, must give
//! exactly what the full computation gives at the leaf (the context's
//! tokens, the measured tokens and their anchor, whether the last
//! assistant's calls are answered) after every operation of random
//! sequences: appends of every kind of message (tool calls with and without
//! results, aborted and failed turns, `interrupted-thinking`, usages,
//! pruned results, bash executions, compactions with archives and remote
//! histories, branch summaries), leaf moves, branch summaries, in-place
//! replacements, undone replacements and refused appends. Appends under the
//! leaf and moves back along the path after its latest compaction must not
//! start the account over.

#![allow(clippy::unwrap_used)]

use musepi_context_builder::{
    ArchiveBlocks, ContextAccount, Tokenizer, build_context_at, calls_answered, context_tokens,
    measured_tokens,
};
use musepi_session_model::{
    ContentBlock, Entry, EntryBody, Header, Journal, Replacement, SequentialIds, Stamp, TreeEdit,
    load_bytes,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A compaction whose summary is this carries an archive.
const ARCHIVED: &str = "archived";

/// Archive blocks for the compactions summarized [`ARCHIVED`].
struct Archives<'s>(&'s musepi_session_model::Session);

impl ArchiveBlocks for Archives<'_> {
    fn blocks(&self, entry_index: usize) -> Option<Vec<ContentBlock>> {
        match &self.0.entries().get(entry_index)?.body {
            EntryBody::Compaction(c) if c.summary.as_str() == ARCHIVED => Some(vec![
                ContentBlock::text("the archive's edge"),
                ContentBlock::Image {
                    data: "AAAA".into(),
                    mime_type: "image/png".into(),
                    detail: None,
                },
            ]),
            _ => None,
        }
    }
}

/// One generated entry.
#[derive(Debug, Clone)]
enum Kind {
    User(bool),
    /// Calls (ids from a small pool), stop reason, usage, thinking.
    Assistant(Vec<u8>, u8, u8, bool),
    /// Call id, pruned, error.
    Result(u8, bool, bool),
    /// `interrupted-thinking` or another custom message.
    Custom(bool),
    /// Excluded from the context.
    Bash(bool),
    /// A compaction keeping from an earlier entry (or none), with an
    /// archive, with a remote history.
    Compaction(Option<u16>, bool, bool),
    /// A model change (no message).
    Model,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => any::<bool>().prop_map(Kind::User),
        5 => (prop::collection::vec(0u8..4, 0..3), 0u8..5, 0u8..3, any::<bool>())
            .prop_map(|(c, s, u, t)| Kind::Assistant(c, s, u, t)),
        5 => (0u8..4, proptest::bool::weighted(0.2), proptest::bool::weighted(0.2))
            .prop_map(|(c, p, e)| Kind::Result(c, p, e)),
        2 => proptest::bool::weighted(0.6).prop_map(Kind::Custom),
        1 => any::<bool>().prop_map(Kind::Bash),
        1 => (proptest::option::weighted(0.8, any::<u16>()), any::<bool>(), proptest::bool::weighted(0.3))
            .prop_map(|(k, a, r)| Kind::Compaction(k, a, r)),
        1 => Just(Kind::Model),
    ]
}

const STOPS: [&str; 5] = ["stop", "toolUse", "aborted", "error", "length"];

fn message(message: &Value) -> Value {
    json!({"type": "message", "message": message})
}

/// The entry's fields; `ids` are the entries so far (a compaction keeps
/// from one of them).
fn fields(kind: &Kind, ids: &[String]) -> Value {
    match kind {
        Kind::User(image) => {
            let mut content = vec![json!({"type": "text", "text": "please look"})];
            if *image {
                content.push(json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}));
            }
            message(&json!({"role": "user", "content": content, "timestamp": 1}))
        }
        Kind::Assistant(calls, stop, usage, thinking) => {
            let mut content = Vec::new();
            if *thinking {
                content.push(json!({"type": "thinking", "thinking": "hmm, let me see", "thinkingSignature": "sig"}));
                content.push(json!({"type": "redactedThinking", "data": "opaque"}));
            }
            content.push(json!({"type": "text", "text": "working on it"}));
            for c in calls {
                content.push(json!({"type": "toolCall", "id": format!("c{c}"), "name": "read", "arguments": {"path": format!("src/{c}.rs")}}));
            }
            let mut m = json!({"role": "assistant", "content": content, "provider": "p", "model": "m", "stopReason": STOPS[*stop as usize], "timestamp": 2});
            match usage {
                1 => {
                    m["usage"] = json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0});
                }
                2 => {
                    m["usage"] = json!({"input": 900, "output": 100, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1000});
                }
                _ => {}
            }
            message(&m)
        }
        Kind::Result(c, pruned, error) => {
            let mut m = json!({"role": "toolResult", "toolCallId": format!("c{c}"), "toolName": "read", "content": [{"type": "text", "text": "fn main() { println!(\"hi\"); }"}], "isError": error, "timestamp": 3});
            if *pruned {
                m["prunedAt"] = json!(4);
            }
            message(&m)
        }
        Kind::Custom(interrupt) => {
            let ty = if *interrupt {
                "interrupted-thinking"
            } else {
                "note"
            };
            json!({"type": "custom_message", "customType": ty, "content": "an extension speaks", "display": true})
        }
        Kind::Bash(excluded) => message(&json!({
            "role": "bashExecution", "command": "cargo test", "output": "ok", "exitCode": 1,
            "cancelled": false, "truncated": false, "excludeFromContext": excluded, "timestamp": 5
        })),
        Kind::Compaction(keep, archive, remote) => {
            let keep = keep.map_or_else(String::new, |k| {
                ids.get(k as usize % ids.len().max(1))
                    .cloned()
                    .unwrap_or_default()
            });
            let summary = if *archive {
                ARCHIVED
            } else {
                "what happened so far"
            };
            let mut c = json!({"type": "compaction", "summary": summary, "tokensBefore": 10});
            if !keep.is_empty() {
                c["firstKeptEntryId"] = json!(keep);
            }
            if *remote {
                c["preserveData"] = json!({"openaiRemoteCompaction": {"provider": "openai", "replacementHistory": [{"type": "message"}]}});
            }
            c
        }
        Kind::Model => json!({"type": "model_change", "provider": "q", "modelId": "m2"}),
    }
}

/// The body `fields` describe, read as the file format reads it.
fn body(fields: &Value) -> EntryBody {
    let mut line = fields.clone();
    line["id"] = json!("x0000000");
    line["parentId"] = Value::Null;
    line["timestamp"] = json!("2025-01-01T00:00:00.000Z");
    let text = format!(
        "{}\n{line}\n",
        json!({"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"})
    );
    let s = load_bytes(
        "b.jsonl".as_ref(),
        text.as_bytes(),
        &mut SequentialIds::new(),
    )
    .unwrap();
    s.entries()[0].body.clone()
}

/// An operation on the journal.
#[derive(Debug, Clone)]
enum Op {
    /// Append under the leaf.
    Append(Kind),
    /// Move the leaf to an entry.
    Move(u16),
    /// Clear the leaf.
    Reset,
    /// Leave a branch summary under an entry (navigation).
    Branch(u16),
    /// Stage a new body in place of an entry (as pruning does).
    Replace(u16, Kind),
    /// Undo the staged replacements.
    Discard,
    /// An append the journal refuses (undone).
    Refused,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        24 => kind().prop_map(Op::Append),
        2 => any::<u16>().prop_map(Op::Move),
        1 => Just(Op::Reset),
        1 => any::<u16>().prop_map(Op::Branch),
        2 => (any::<u16>(), kind()).prop_map(|(at, k)| Op::Replace(at, k)),
        1 => Just(Op::Discard),
        1 => Just(Op::Refused),
    ]
}

fn check(journal: &Journal, account: &mut ContextAccount) -> Result<(), TestCaseError> {
    let s = journal.session();
    let archives = Archives(s);
    account.sync(s, Some(&archives));
    let leaf = s.leaf_index();
    prop_assert_eq!(account.leaf(), leaf);
    prop_assert_eq!(
        account.context_tokens(),
        context_tokens(s, leaf, Some(&archives), Tokenizer::Heuristic)
    );
    let full = measured_tokens(s, leaf, Some(&archives));
    prop_assert_eq!(account.measured(), full);
    let context = build_context_at(s, leaf);
    prop_assert_eq!(
        account.anchor_entry(),
        full.last_usage_index
            .map(|i| context.messages[i].entry_index)
    );
    prop_assert_eq!(account.calls_answered(), calls_answered(&context));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_account_gives_what_the_full_computation_gives_after_every_operation(
        ops in prop::collection::vec(op(), 1..60),
    ) {
        let dir = std::env::temp_dir().join(format!("musepi-account-{}", std::process::id()));
        let header = Header::new("s", "2025-01-01T00:00:00.000Z", "/");
        // Detached: appends stay in memory, nothing is written.
        let mut journal = Journal::create(dir.join("never-written.jsonl"), header).unwrap();
        journal.detach();
        let mut ids = SequentialIds::new();
        let mut account = ContextAccount::default();
        check(&journal, &mut account)?;
        for (n, op) in ops.iter().enumerate() {
            let now = 1_800_000_000_000 + n as i64 * 1000;
            let mut stamp = Stamp { ids: &mut ids, now };
            let len = journal.session().len();
            let pick = |at: u16| journal.session().entries()[at as usize % len].id.to_string();
            let starts = account.starts();
            // A move back to an entry of the path at or after its latest
            // compaction takes records back instead of counting anew.
            let back_on_path = |at: u16| {
                let s = journal.session();
                let target = at as usize % len;
                s.leaf_index().is_some_and(|leaf| {
                    let floor = s.path_summary(leaf).compaction.map_or(0, |c| s.path_summary(c as usize).depth);
                    s.is_on_path(target, leaf) && s.path_summary(target).depth >= floor
                })
            };
            let follows = match op {
                Op::Move(at) | Op::Branch(at) if len > 0 => back_on_path(*at),
                _ => false,
            };
            let under_leaf = match op {
                Op::Append(kind) => {
                    let known: Vec<String> =
                        journal.session().entries().iter().map(|e| e.id.to_string()).collect();
                    let ok = journal.append(body(&fields(kind, &known)), &mut stamp).is_ok();
                    ok && !matches!(kind, Kind::Compaction(..))
                }
                Op::Move(at) if len > 0 => {
                    journal.set_leaf(&pick(*at)).unwrap();
                    false
                }
                Op::Reset => {
                    journal.reset_leaf();
                    false
                }
                Op::Branch(at) if len > 0 => {
                    let from = pick(*at);
                    journal
                        .branch_with_summary(Some(&from), "the branch left", None, false, None, &mut stamp)
                        .unwrap();
                    false
                }
                Op::Replace(at, kind) if len > 0 => {
                    let i = *at as usize % len;
                    let old = &journal.session().entries()[i];
                    let mut entry = Entry {
                        id: old.id.clone(),
                        parent_id: old.parent_id.clone(),
                        timestamp: old.timestamp.clone(),
                        body: body(&fields(kind, &[])),
                    };
                    if matches!(entry.body, EntryBody::Compaction(_)) {
                        entry.body = body(&fields(&Kind::Result(0, true, false), &[]));
                    }
                    let line = entry.to_json().to_string();
                    let _ = journal.stage_replacements(vec![Replacement::new(i, entry, line)]);
                    false
                }
                Op::Discard => {
                    journal.discard_staged();
                    false
                }
                Op::Refused => {
                    let bad = EntryBody::Message(musepi_session_model::AgentMessage::Other {
                        role: "nobody-knows".into(),
                        timestamp: None,
                    });
                    prop_assert!(journal.append(bad, &mut stamp).is_err());
                    false
                }
                _ => false,
            };
            // An append under the leaf is counted on its own, never from
            // the start; so is a move back along the path.
            let s = journal.session();
            let followed = account.leaf() == s.leaf_index().and_then(|l| s.parent_index(l));
            check(&journal, &mut account)?;
            if ((under_leaf && followed) || follows) && starts > 0 {
                prop_assert_eq!(account.starts(), starts, "op {} ({:?}) started over", n, op);
            }
        }
    }
}
