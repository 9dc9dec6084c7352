//! Compaction preparation against the reference answers: the cut, the
//! regions, `tokensBefore`, the previous summary, file operations and the
//! serialized summarizer input, at `keepRecentTokens` 2000, 8000 and 20000.
//!
//! Adjustments for our deliberate differences (see the conformance README):
//! decision 5 (previously kept messages are summarized again), decision 6
//! (the split-turn flag), decision 21 (user images count), and tool results
//! cut before a surrogate pair instead of inside it.

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
            let surrogates: Vec<String> = record.record["adjust"]["surrogateTruncation"]
                .as_array()
                .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
                .unwrap_or_default();
            check_one(
                session,
                &record.record,
                expected,
                k,
                &name,
                result,
                &surrogates,
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 108);
}

fn check_one(
    session: &Session,
    record: &Value,
    expected: &Value,
    k: u64,
    name: &str,
    result: Result<Preparation<'_>, NothingToCompact>,
    surrogates: &[String],
) {
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
        && exp_prep["turnPrefixMessages"]["count"] == json!(0)
        && find_adjust(record, "decision5", k).is_none();
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

    // tokensBefore, raised for user images after the anchoring usage.
    let from = p.previous_compaction.unwrap_or(0);
    let range: Vec<AgentMessage> = path[from..]
        .iter()
        .filter_map(|&i| {
            musepi_compaction::summary_message(session, i).map(std::borrow::Cow::into_owned)
        })
        .collect();
    let anchor = musepi_context_builder::estimate_context_tokens(range.iter()).last_usage_index;
    let image_extra: u64 = range[anchor.map_or(0, |a| a + 1)..]
        .iter()
        .map(user_images)
        .sum::<u64>()
        * 1200;
    assert_eq!(
        exp_prep["tokensBefore"].as_f64().unwrap() + image_extra as f64,
        p.tokens_before,
        "{name}"
    );
    let prev = exp_prep["previousSummary"].clone();
    match &p.previous_summary {
        Some(s) => assert_eq!(prev["sha256"], json!(sha256_hex(s.as_bytes())), "{name}"),
        None => assert!(prev.is_null(), "{name}"),
    }

    // Regions.
    let previously_kept: Vec<String> = find_adjust(record, "decision5", k)
        .map(|a| {
            a["previouslyKept"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    let n_prev = previously_kept.len();
    let ours_prev: Vec<String> = p.messages_to_summarize
        [..n_prev.min(p.messages_to_summarize.len())]
        .iter()
        .map(|m| session.entries()[m.entry_index].id.to_string())
        .collect();
    assert_eq!(ours_prev, previously_kept, "{name}: previously kept");
    let mut expected_summarize = items(session, &p.messages_to_summarize[..n_prev]);
    expected_summarize.extend(adjusted_items(session, &exp_prep["messagesToSummarize"]));
    let metadata_case = d6.as_deref() == Some("metadataBeforeTurnStart");
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

    // Serialized summarizer input.
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
    let prev_text = masked(&serialize_for_summary(&p.messages_to_summarize[..n_prev]));
    let ref_summarize = reference_text("messagesToSummarize");
    let ref_prefix = reference_text("turnPrefixMessages");
    let (want_summarize, want_prefix) = if metadata_case {
        (
            join(&[&prev_text, &ref_summarize, &ref_prefix]),
            String::new(),
        )
    } else {
        (join(&[&prev_text, &ref_summarize]), ref_prefix)
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

    // File operations: the reference's plus those of the previously kept messages.
    let mut want_ops = FileOps::default();
    for (field, set) in [
        ("read", &mut want_ops.read),
        ("edited", &mut want_ops.edited),
        ("written", &mut want_ops.written),
    ] {
        for v in exp_prep["fileOps"][field].as_array().unwrap() {
            set.insert(v.as_str().unwrap());
        }
    }
    for m in &p.messages_to_summarize[..n_prev] {
        want_ops.add_message(&m.message);
    }
    assert_eq!(
        file_ops_json(&want_ops),
        file_ops_json(&p.file_ops),
        "{name}: fileOps"
    );
    if n_prev == 0 {
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
}
