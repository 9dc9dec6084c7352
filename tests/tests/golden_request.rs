//! Golden snapshots of the summary requests a compaction sends
//! (`request__*`: purpose, limits, system prompt, user prompt) and of the
//! entry the answers turn into (`finish__*`), over our fixtures.
//!
//! The summarizer answers are fixed texts; nothing here calls a model.

#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;

use musepi_compaction::{
    CompactionSettings, Preparation, RequestOptions, finish, history_request, history_without_call,
    merge_summaries, prepare, short_summary_request, turn_prefix_request,
};
use musepi_session_model::Session;
use musepi_tests::fixtures::{index, load_fixture};
use musepi_tests::render_request::{render_requests, render_result};
use musepi_tests::scenarios;

/// Compares `text` with `tests/snapshots/<name>.snap`.
fn check(name: &str, text: &str) {
    musepi_test_support::golden!(name, text);
}

/// What a summarizer might answer, fixed so the snapshots are stable.
const HISTORY_ANSWER: &str = "## Goal\nCount lines per file in wc-rs.\n\n## Progress\n### Done\n- [x] Listed src/\n\n<read-files>\nstale.txt\n</read-files>";
const PREFIX_ANSWER: &str =
    "## Original Request\nCount the lines of each file.\n\n## Early Progress\n- Read src/lib.rs";
const SHORT_ANSWER: &str = "I listed the sources and started counting lines per file.";

fn keep(k: u64) -> CompactionSettings {
    let mut settings = CompactionSettings::default();
    settings.keep_recent_tokens = k;
    settings.adapt_keep_recent = false;
    settings
}

fn focus() -> RequestOptions {
    let mut options = RequestOptions::default();
    options.custom_instructions = Some("Keep the exact wc-rs flag names.".into());
    options.additional_context = vec![
        "Hook note: the user reviews every diff before committing.".into(),
        "Memory: tests live in tests/ and run with cargo test.".into(),
    ];
    options
}

fn prepared<'a>(
    session: &'a Session,
    leaf: &str,
    settings: &CompactionSettings,
) -> Preparation<'a> {
    prepare(session, Some(index(session, leaf)), settings).unwrap()
}

fn header(fixture: &str, prep: &Preparation<'_>) -> String {
    format!(
        "fixture: {fixture}\nfirst kept: {}, split turn: {}, previous summary: {}\n\n",
        prep.first_kept_entry_id,
        prep.is_split_turn(),
        prep.previous_summary.is_some()
    )
}

#[test]
fn first_summary() {
    let session = load_fixture("worked_a.jsonl");
    let s = keep(60);
    let prep = prepared(&session, "00000009", &s);
    let plain = history_request(&prep, &s, &RequestOptions::default());
    check(
        "request__first_summary",
        &(header("worked_a.jsonl", &prep) + &render_requests(&[("history", plain)])),
    );
    let focused = history_request(&prep, &s, &focus());
    check(
        "request__first_summary_with_focus",
        &(header("worked_a.jsonl", &prep) + &render_requests(&[("history", focused)])),
    );
}

#[test]
fn update_summary() {
    let session = load_fixture("previous_compaction.jsonl");
    let s = keep(50);
    let prep = prepared(&session, "00000011", &s);
    let request = history_request(&prep, &s, &focus());
    check(
        "request__update_summary",
        &(header("previous_compaction.jsonl", &prep) + &render_requests(&[("history", request)])),
    );
}

#[test]
fn split_turn_with_history() {
    let session = load_fixture("worked_a.jsonl");
    let s = keep(50);
    let prep = prepared(&session, "00000009", &s);
    let requests = [
        (
            "history",
            history_request(&prep, &s, &RequestOptions::default()),
        ),
        ("turn prefix", turn_prefix_request(&prep, &s)),
    ];
    check(
        "request__split_turn_with_history",
        &(header("worked_a.jsonl", &prep) + &render_requests(&requests)),
    );
}

#[test]
fn split_turn_without_history() {
    let session = load_fixture("worked_b.jsonl");
    let s = keep(12);
    let prep = prepared(&session, "00000008", &s);
    let requests = [
        (
            "history",
            history_request(&prep, &s, &RequestOptions::default()),
        ),
        ("turn prefix", turn_prefix_request(&prep, &s)),
    ];
    check(
        "request__split_turn_without_history",
        &(header("worked_b.jsonl", &prep) + &render_requests(&requests)),
    );
}

#[test]
fn split_turn_capped_by_the_model() {
    // From pi's summary-reasoning tests: a huge reserve is capped by the
    // model's output limit, and every request asks for the session's
    // thinking level, here set to `medium` at the root of the path.
    let text =
        std::fs::read_to_string(musepi_tests::fixtures::fixture_path("worked_a.jsonl")).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let thinking = r#"{"type":"thinking_level_change","id":"0000000t","parentId":null,"timestamp":"2025-03-05T18:40:01.000Z","thinkingLevel":"medium"}"#;
    let rest = rest.replacen(
        r#""id":"00000001","parentId":null"#,
        r#""id":"00000001","parentId":"0000000t""#,
        1,
    );
    let session = musepi_session_model::load_bytes(
        "worked_a.jsonl".as_ref(),
        format!("{header}\n{thinking}\n{rest}").as_bytes(),
        &mut musepi_session_model::SequentialIds::new(),
    )
    .unwrap();
    let mut s = keep(50);
    s.reserve_tokens = 500_000;
    s.model_max_tokens = Some(128_000);
    let prep = prepared(&session, "00000009", &s);
    let requests = [
        (
            "history",
            history_request(&prep, &s, &RequestOptions::default()),
        ),
        ("turn prefix", turn_prefix_request(&prep, &s)),
        (
            "short summary",
            Some(short_summary_request(
                &prep,
                "MERGED",
                &s,
                &RequestOptions::default(),
            )),
        ),
    ];
    let mut limits = String::new();
    for (name, r) in &requests {
        let r = r.as_ref().unwrap();
        let _ = writeln!(
            limits,
            "{name}: max tokens {}, reasoning {}",
            r.max_tokens.unwrap_or_default(),
            r.reasoning.as_deref().unwrap_or("(none)")
        );
    }
    check(
        "request__capped_by_model",
        &format!("reserveTokens 500000, model maxTokens 128000, thinking level medium\n\n{limits}"),
    );
}

#[test]
fn short_summary() {
    let session = load_fixture("worked_a.jsonl");
    let s = keep(50);
    let prep = prepared(&session, "00000009", &s);
    let merged = merge_summaries(HISTORY_ANSWER, Some(PREFIX_ANSWER));
    let request = short_summary_request(&prep, &merged, &s, &focus());
    check(
        "request__short_summary",
        &(header("worked_a.jsonl", &prep) + &render_requests(&[("short summary", Some(request))])),
    );
}

#[test]
fn useless_and_pruned_results() {
    let session = load_fixture("useless_and_pruned.jsonl");
    let s = keep(20);
    let prep = prepared(&session, "0000000c", &s);
    let request = history_request(&prep, &s, &RequestOptions::default());
    check(
        "request__useless_and_pruned",
        &(header("useless_and_pruned.jsonl", &prep) + &render_requests(&[("history", request)])),
    );
}

#[test]
fn images() {
    let session = load_fixture("images.jsonl");
    let s = keep(20);
    let prep = prepared(&session, "00000008", &s);
    let request = history_request(&prep, &s, &RequestOptions::default());
    check(
        "request__images",
        &(header("images.jsonl", &prep) + &render_requests(&[("history", request)])),
    );
}

#[test]
fn tree_file_leaf() {
    // History made only of the previous compaction's kept entries: an
    // extension-made branch summary and a custom message among them.
    let session = load_fixture("tree.jsonl");
    let s = keep(10);
    let prep = prepared(&session, "a0000027", &s);
    let requests = [
        (
            "history",
            history_request(&prep, &s, &RequestOptions::default()),
        ),
        ("turn prefix", turn_prefix_request(&prep, &s)),
    ];
    check(
        "request__tree_file_leaf",
        &(header("tree.jsonl", &prep) + &render_requests(&requests)),
    );
}

#[test]
fn finish_split_turn_with_history() {
    let session = load_fixture("worked_a.jsonl");
    let s = keep(50);
    let prep = prepared(&session, "00000009", &s);
    let merged = merge_summaries(HISTORY_ANSWER, Some(PREFIX_ANSWER));
    let result = finish(&prep, &s, &merged, Some(SHORT_ANSWER.into()), None, None);
    check("finish__split_turn_with_history", &render_result(&result));
}

#[test]
fn finish_split_turn_without_history() {
    let session = load_fixture("worked_b.jsonl");
    let s = keep(12);
    let prep = prepared(&session, "00000008", &s);
    let merged = merge_summaries(&history_without_call(&prep), Some(PREFIX_ANSWER));
    let result = finish(&prep, &s, &merged, None, None, None);
    check(
        "finish__split_turn_without_history",
        &render_result(&result),
    );
}

#[test]
fn finish_update_keeps_previous_file_lists() {
    let session = load_fixture("previous_compaction.jsonl");
    let s = keep(50);
    let prep = prepared(&session, "00000011", &s);
    let result = finish(&prep, &s, HISTORY_ANSWER, None, None, None);
    check(
        "finish__update_keeps_previous_file_lists",
        &render_result(&result),
    );
}

#[test]
fn finish_appendix_c() {
    let session = scenarios::appendix_c().build();
    // With the adaptation, knowing a 2,000-token system prompt (as the
    // appendix C cut).
    let mut adapted = CompactionSettings::default();
    adapted.overhead_tokens = Some(2_000);
    let prep = prepare(&session, session.leaf_index(), &adapted).unwrap();
    let merged = merge_summaries("{history summary}", Some("{turn prefix summary}"));
    let result = finish(
        &prep,
        &adapted,
        &merged,
        Some("{short summary}".into()),
        None,
        None,
    );
    check("finish__appendix_c", &render_result(&result));
}
