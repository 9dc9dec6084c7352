//! Compaction preparation against the reference answers: the cut, the
//! regions, `tokensBefore`, the previous summary, file operations and the
//! serialized summarizer input, at `keepRecentTokens` 2000, 8000 and 20000.
//!
//! The reference is pi 0.73.1 (decision 25): a repeated compaction's range
//! starts at the previous compaction's first kept entry, so every message
//! since it lands in exactly one region (decision 5 is the reference's own
//! rule, and no answer needs an adjustment for it); the cut may fall inside
//! what the previous compaction kept; compaction entries are in no region;
//! `tokensBefore` is the estimate of the whole context at the leaf.
//!
//! Adjustments for our deliberate differences (see the conformance README):
//! decision 6 (the split-turn flag), decision 21 (user images count), and
//! tool results cut before a surrogate pair instead of inside it
//! (decision 2).

#![allow(clippy::unwrap_used)]

use musepi_compaction::{CompactionSettings, NothingToCompact, Preparation, prepare};
use musepi_context_builder::{
    BRANCH_WRAPPER, COMPACTION_WRAPPER, ContextMessage, FileOps, format_legacy,
    serialize_for_summary,
};
use musepi_session_model::{AgentMessage, Journal, SequentialIds, Session};
use musepi_tests::{answer_index, sha256_hex, user_images};
use serde_json::{Value, json};

/// Our serialized text with our wrapper sentences replaced by the answers' markers.
fn masked(text: &str) -> String {
    let sentence = |t: &str| t.lines().next().unwrap().to_owned();
    text.replace(
        &format!(
            "[User]: {}\n\n<summary>",
            sentence(COMPACTION_WRAPPER.text())
        ),
        "[User]: {{COMPACTION_SUMMARY_WRAPPER}}\n\n<summary>",
    )
    .replace(
        &format!("[User]: {}\n\n<summary>", sentence(BRANCH_WRAPPER.text())),
        "[User]: {{BRANCH_SUMMARY_WRAPPER}}\n\n<summary>",
    )
}

/// The reference text with a lone surrogate before a truncation marker removed.
fn without_lone_surrogate(text: &str) -> String {
    text.replace("\u{fffd}\n\n[... ", "\n\n[... ")
}

fn join(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn items(session: &Session, msgs: &[ContextMessage<'_>]) -> Vec<Value> {
    msgs.iter()
        .map(|m| json!({"entryId": session.entries()[m.entry_index].id.as_str(), "role": m.message.role(), "tokens": m.tokens()}))
        .collect()
}

/// Reference items raised by 1,200 tokens per user image.
fn adjusted_items(session: &Session, expected: &Value) -> Vec<Value> {
    expected["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|it| {
            let mut it = it.clone();
            let id = it["entryId"].as_str().unwrap().to_owned();
            let extra = session
                .get(&id)
                .and_then(|e| e.message())
                .map_or(0, user_images)
                * 1200;
            it["tokens"] = json!(it["tokens"].as_u64().unwrap() + extra);
            it
        })
        .collect()
}

fn file_ops_json(ops: &FileOps) -> Value {
    json!({"read": ops.read.sorted(), "edited": ops.edited.sorted(), "written": ops.written.sorted()})
}

fn find_adjust<'v>(record: &'v Value, decision: &str, k: u64) -> Option<&'v Value> {
    record["adjust"][decision]
        .as_array()?
        .iter()
        .find(|a| a["keepRecentTokens"].as_u64() == Some(k))
}

#[test]
fn preparation_matches_the_reference_at_every_keep_recent_budget() {
    let mut checked = 0;
    for record in answer_index() {
        let answer = record.read_answer();
        let mut journal = Journal::open(record.session_path(), &mut SequentialIds::new()).unwrap();
        if let Some(leaf) = &record.leaf {
            journal.set_leaf(leaf).unwrap();
        }
        let session = journal.session();
        for expected in answer["compaction"].as_array().unwrap() {
            let k = expected["keepRecentTokens"].as_u64().unwrap();
            let name = format!("{} K={k}", record.answer);
            let mut settings = CompactionSettings::default();
            settings.keep_recent_tokens = k;
            settings.adapt_keep_recent = false;
            let result = prepare(session, session.leaf_index(), &settings);
            check_one(
                session,
                &record.record,
                &answer["context"]["estimateContextTokens"]["tokens"],
                expected,
                k,
                &name,
                result,
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 108);
}

fn check_one(
    session: &Session,
    record: &Value,
    answer_context_tokens: &Value,
    expected: &Value,
    k: u64,
    name: &str,
    result: Result<Preparation<'_>, NothingToCompact>,
) {
    let surrogates: Vec<String> = record["adjust"]["surrogateTruncation"]
        .as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    let exp_prep = &expected["preparation"];
    if exp_prep.is_null() {
        let reason = match result {
            Err(NothingToCompact::AlreadyCompacted) => "leaf-is-compaction",
            Err(
                NothingToCompact::NoFirstKeptId
                | NothingToCompact::TooSmall
                | NothingToCompact::ToolResultsFillWindow { .. },
            ) => "first-kept-entry-has-no-id",
            Ok(_) => "prepared",
        };
        assert_eq!(expected["preparationNullReason"], json!(reason), "{name}");
        return;
    }
    let cut_moved = record["adjust"]["decision21"]["cutMoves"]
        .as_array()
        .and_then(|a| a.iter().find(|m| m["keepRecentTokens"].as_u64() == Some(k)));
    let reference_empty = exp_prep["messagesToSummarize"]["count"] == json!(0)
        && exp_prep["turnPrefixMessages"]["count"] == json!(0);
    let p = match result {
        Ok(p) => p,
        // The reference prepares an empty compaction; we report there is
        // nothing to compact (docs/design.md, "Cut points and regions").
        Err(NothingToCompact::TooSmall | NothingToCompact::ToolResultsFillWindow { .. })
            if reference_empty =>
        {
            return;
        }
        Err(e) => panic!("{name}: the reference prepares, we say {e}"),
    };
    let path = p.branch();
    let entry_id = |pos: usize| session.entries()[path[pos]].id.as_str().to_owned();
    if let Some(moved) = cut_moved {
        assert_eq!(
            moved["firstKeptEntryId"],
            json!(p.first_kept_entry_id.as_str()),
            "{name}"
        );
        assert_eq!(moved["isSplitTurn"], json!(p.cut.is_split_turn), "{name}");
        return;
    }
    let d6 = find_adjust(record, "decision6", k).map(|a| a["case"].as_str().unwrap().to_owned());
    let cut = &expected["cutPoint"];
    assert_eq!(
        expected["prevCompactionIndex"],
        json!(p.previous_compaction.map_or(-1, |x| x as i64)),
        "{name}"
    );
    assert_eq!(expected["boundaryStart"], json!(p.boundary_start), "{name}");
    assert_eq!(expected["boundaryEnd"], json!(p.boundary_end), "{name}");
    assert_eq!(
        cut["firstKeptEntryIndex"],
        json!(p.cut.first_kept_index),
        "{name}"
    );
    assert_eq!(
        cut["firstKeptEntryId"],
        json!(p.first_kept_entry_id.as_str()),
        "{name}"
    );
    assert_eq!(
        cut["firstKeptEntryType"],
        json!(session.entries()[path[p.cut.first_kept_index]].kind_label()),
        "{name}"
    );
    if d6.as_deref().is_some() {
        assert!(!p.cut.is_split_turn, "{name}: decision 6");
    } else {
        assert_eq!(cut["isSplitTurn"], json!(p.cut.is_split_turn), "{name}");
        assert_eq!(
            cut["turnStartIndex"],
            json!(p.cut.turn_start_index.map_or(-1, |x| x as i64)),
            "{name}"
        );
        assert_eq!(
            cut["turnStartEntryId"],
            json!(p.cut.turn_start_index.map(entry_id)),
            "{name}"
        );
    }

    // tokensBefore: the estimate of the whole context at the leaf, raised
    // for user images after the anchoring usage (decision 21).
    let context = musepi_context_builder::build_context_at(session, Some(p.leaf));
    let messages: Vec<&AgentMessage> = context.agent_messages().collect();
    let anchor =
        musepi_context_builder::estimate_context_tokens(messages.iter().copied()).last_usage_index;
    let image_extra: u64 = messages[anchor.map_or(0, |a| a + 1)..]
        .iter()
        .map(|m| user_images(m))
        .sum::<u64>()
        * 1200;
    assert_eq!(
        &exp_prep["tokensBefore"], answer_context_tokens,
        "{name}: tokensBefore is the context's estimate"
    );
    assert_eq!(
        exp_prep["tokensBefore"].as_u64().unwrap() + image_extra,
        p.tokens_before,
        "{name}"
    );
    let prev = exp_prep["previousSummary"].clone();
    match &p.previous_summary {
        Some(s) => assert_eq!(prev["sha256"], json!(sha256_hex(s.as_bytes())), "{name}"),
        None => assert!(prev.is_null(), "{name}"),
    }

    // Regions: the reference's, from its boundary on (decision 25), with the
    // prefix of a cut on metadata summarized as history (decision 6) and user
    // images counted (decision 21).
    let metadata_case = d6.as_deref() == Some("metadataBeforeTurnStart");
    let mut expected_summarize = adjusted_items(session, &exp_prep["messagesToSummarize"]);
    let mut expected_prefix = adjusted_items(session, &exp_prep["turnPrefixMessages"]);
    if metadata_case {
        expected_summarize.append(&mut expected_prefix);
    }
    assert_eq!(
        Value::Array(expected_summarize),
        Value::Array(items(session, &p.messages_to_summarize)),
        "{name}"
    );
    assert_eq!(
        Value::Array(expected_prefix),
        Value::Array(items(session, &p.turn_prefix_messages)),
        "{name}"
    );
    assert!(
        p.messages_to_summarize
            .iter()
            .chain(&p.turn_prefix_messages)
            .all(|m| !matches!(m.message.as_ref(), AgentMessage::CompactionSummary(_))),
        "{name}: a compaction entry is in no region"
    );

    // Serialized summarizer input, with a tool result cut before a surrogate
    // pair rather than inside it (decision 2).
    let key = |part: &str| format!("compaction[K={k}].serialized.{part}");
    let reference_text = |part: &str| {
        let t = exp_prep["serialized"][part]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        if surrogates.contains(&key(part)) {
            without_lone_surrogate(&t)
        } else {
            t
        }
    };
    let ref_summarize = reference_text("messagesToSummarize");
    let ref_prefix = reference_text("turnPrefixMessages");
    let (want_summarize, want_prefix) = if metadata_case {
        (join(&[&ref_summarize, &ref_prefix]), String::new())
    } else {
        (ref_summarize, ref_prefix)
    };
    assert_eq!(
        want_summarize,
        masked(&serialize_for_summary(&p.messages_to_summarize)),
        "{name}: summarize text"
    );
    assert_eq!(
        want_prefix,
        masked(&serialize_for_summary(&p.turn_prefix_messages)),
        "{name}: prefix text"
    );

    // File operations and lists.
    assert_eq!(
        exp_prep["fileOps"],
        file_ops_json(&p.file_ops),
        "{name}: fileOps"
    );
    let lists = p.file_ops.lists();
    assert_eq!(
        exp_prep["fileLists"],
        json!({"readFiles": lists.read_files, "modifiedFiles": lists.modified_files}),
        "{name}"
    );
    assert_eq!(
        exp_prep["formattedFileOperations"],
        json!(format_legacy(&lists)),
        "{name}"
    );
}
