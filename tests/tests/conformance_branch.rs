//! Branch summaries against the reference answers: the collected entries
//! and the common ancestor for three targets per answer, and for token
//! budgets 0, 2000 and 111616 the messages that fit, their tokens, the file
//! operations and the serialized summarizer input.
//!
//! The reference leaves tool results out of a branch summary, so these run
//! with [`ToolResults::Skip`]. Adjustments for our deliberate differences
//! (see the conformance README): our wrapper sentences are masked as the
//! answers mask the reference's, user images count 1,200 tokens each
//! (decision 21; where a larger estimate changes the selection, only the
//! message count is compared).

#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use musepi_branch_summary::{
    BranchPreparation, PrepareOptions, ToolResults, collect_entries, prepare_branch,
};
use musepi_context_builder::{BRANCH_WRAPPER, COMPACTION_WRAPPER};
use musepi_session_model::{EntryId, Journal, SequentialIds, Session};
use musepi_tests::{answer_index, sha256_hex, user_images};
use serde_json::{Value, json};

/// Our serialized text with our wrapper sentences replaced by the answers'
/// markers, and the number of replacements.
fn masked(text: &str) -> (String, usize) {
    let sentence = |t: &str| t.lines().next().unwrap().to_owned();
    let mut count = 0;
    let mut out = text.to_owned();
    for (wrapper, marker) in [
        (&COMPACTION_WRAPPER, "{{COMPACTION_SUMMARY_WRAPPER}}"),
        (&BRANCH_WRAPPER, "{{BRANCH_SUMMARY_WRAPPER}}"),
    ] {
        let ours = format!("[User]: {}\n\n<summary>", sentence(wrapper.text()));
        count += out.matches(&ours).count();
        out = out.replace(&ours, &format!("[User]: {marker}\n\n<summary>"));
    }
    (out, count)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

/// What decision 21 changes in one answer.
struct Images<'v> {
    entries: HashSet<String>,
    selection_changes: Vec<&'v Value>,
}

impl<'v> Images<'v> {
    fn of(record: &'v Value) -> Self {
        let d21 = &record["adjust"]["decision21"];
        Self {
            entries: strings(&d21["userImageEntries"]).into_iter().collect(),
            selection_changes: d21["budgetSelectionChanges"]
                .as_array()
                .map(|a| a.iter().collect())
                .unwrap_or_default(),
        }
    }

    /// The extra tokens our estimate gives the entry.
    fn extra(&self, session: &Session, id: &str) -> u64 {
        if !self.entries.contains(id) {
            return 0;
        }
        session
            .get(id)
            .and_then(|e| e.message())
            .map_or(0, user_images)
            * 1200
    }

    fn selection_change(&self, target: &str, budget: u64) -> Option<&'v Value> {
        self.selection_changes
            .iter()
            .copied()
            .find(|c| c["targetId"] == json!(target) && c["tokenBudget"] == json!(budget))
    }
}

#[test]
fn branch_summaries_match_the_reference_for_every_target_and_budget() {
    let mut checked = 0;
    for record in answer_index() {
        let answer = record.read_answer();
        let mut journal = Journal::open(record.session_path(), &mut SequentialIds::new()).unwrap();
        if let Some(leaf) = &record.leaf {
            journal.set_leaf(leaf).unwrap();
        }
        let session = journal.session();
        let images = Images::of(&record.record);
        // Tool results are the only text the serializer cuts, and the
        // reference leaves them out of branch summaries: no branch text can
        // hold a lone surrogate from a cut.
        let surrogates = strings(&record.record["adjust"]["surrogateTruncation"]);
        assert!(
            surrogates.iter().all(|k| !k.starts_with("branchSummary")),
            "{}: {surrogates:?}",
            record.answer
        );
        for expected in answer["branchSummary"].as_array().unwrap() {
            let target_id = expected["targetId"].as_str().unwrap();
            let name = format!("{} target {target_id}", record.answer);
            assert_eq!(
                expected["oldLeafId"],
                json!(session.leaf_id().map(EntryId::as_str)),
                "{name}"
            );
            let target = session.index_of(target_id);
            assert_eq!(expected["targetExists"], json!(target.is_some()), "{name}");
            // A missing target has no path, as the reference's empty
            // `getBranch` gives; navigation itself refuses it earlier.
            let collected = collect_entries(session, session.leaf_index(), target).unwrap();
            let id = |i: usize| session.entries()[i].id.as_str().to_owned();
            assert_eq!(
                expected["commonAncestorId"],
                json!(collected.common_ancestor.map(id)),
                "{name}"
            );
            let ids: Vec<String> = collected.entries.iter().map(|&i| id(i)).collect();
            let types: Vec<String> = collected
                .entries
                .iter()
                .map(|&i| session.entries()[i].kind_label())
                .collect();
            assert_eq!(expected["entryIds"], json!(ids), "{name}");
            assert_eq!(expected["entryTypes"], json!(types), "{name}");

            for budget in expected["budgets"].as_array().unwrap() {
                let b = budget["tokenBudget"].as_u64().unwrap();
                let name = format!("{name} budget {b}");
                let prep = prepare_branch(
                    session,
                    &collected.entries,
                    b,
                    &PrepareOptions {
                        tool_results: ToolResults::Skip,
                    },
                )
                .unwrap();
                check_budget(session, &images, target_id, budget, &prep, &name);
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 36 * 3 * 3);
}

fn check_budget(
    session: &Session,
    images: &Images<'_>,
    target: &str,
    expected: &Value,
    prep: &BranchPreparation<'_>,
    name: &str,
) {
    let b = expected["tokenBudget"].as_u64().unwrap();
    if let Some(change) = images.selection_change(target, b) {
        assert_eq!(change["messageCount"], json!(prep.items.len()), "{name}");
        return;
    }
    assert_eq!(expected["messageCount"], json!(prep.items.len()), "{name}");

    // Items and total, raised by 1,200 tokens per user image.
    let mut want_total = expected["totalTokens"].as_u64().unwrap();
    let want_items: Vec<Value> = expected["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|it| {
            let mut it = it.clone();
            let extra = images.extra(session, it["entryId"].as_str().unwrap());
            want_total += extra;
            it["tokens"] = json!(it["tokens"].as_u64().unwrap() + extra);
            it
        })
        .collect();
    let items: Vec<Value> = prep
        .items
        .iter()
        .map(|i| {
            json!({
                "entryId": session.entries()[i.message.entry_index].id.as_str(),
                "role": i.message.message.role(),
                "tokens": i.tokens,
            })
        })
        .collect();
    assert_eq!(Value::Array(want_items), Value::Array(items), "{name}");
    assert_eq!(want_total, prep.total_tokens, "{name}");

    // File operations and the persisted lists.
    let ops = &prep.file_ops;
    assert_eq!(
        expected["fileOps"],
        json!({"read": ops.read.sorted(), "edited": ops.edited.sorted(), "written": ops.written.sorted()}),
        "{name}: fileOps"
    );
    let lists = prep.file_lists();
    assert_eq!(
        expected["fileLists"],
        json!({"readFiles": lists.read_files, "modifiedFiles": lists.modified_files}),
        "{name}: fileLists"
    );

    // The serialized summarizer input, wrappers masked.
    let blob = &expected["serialized"];
    let want = blob["text"].as_str().unwrap();
    let (ours, wrappers) = masked(&prep.serialized());
    assert_eq!(want, ours, "{name}: serialized text");
    assert_eq!(
        blob["wrappersRedacted"].as_u64().unwrap_or(0),
        wrappers as u64,
        "{name}: wrappers"
    );
    assert_eq!(
        blob["length"],
        json!(ours.encode_utf16().count()),
        "{name}: length"
    );
    assert_eq!(blob["utf8Bytes"], json!(ours.len()), "{name}: bytes");
    assert_eq!(
        blob["sha256"],
        json!(sha256_hex(ours.as_bytes())),
        "{name}: sha256"
    );
}
