//! Golden snapshots of compaction cut points (`cut__*`): the worked
//! examples (docs/design.md, "Cut points and regions"), the cut landing on each kind of turn start and
//! on metadata (docs/design.md, "Where musepi differs from pi"), a previous compaction with kept entries
//! (docs/design.md, "Where musepi differs from pi"), the cases of pi's compaction tests.
//!
//! Unless a scenario says otherwise the `keepRecentTokens` adaptation of
//! The `keepRecentTokens` adaptation is off, so the numbers can be followed by hand.

#![allow(clippy::unwrap_used)]

use musepi_compaction::CompactionSettings;
use musepi_context_builder::{ThresholdSettings, resolve_threshold_tokens, should_compact};
use musepi_session_model::Session;
use musepi_test_support::SessionBuilder;
use musepi_tests::fixtures::{index, load_fixture};
use musepi_tests::render_cut::{Rows, render_cut};
use musepi_tests::scenarios;
use musepi_tests::show::Show;
use musepi_tests::table::Table;

/// Compares `text` with `tests/snapshots/<name>.snap`.
fn check(name: &str, text: &str) {
    musepi_test_support::golden!(name, text);
}

fn keep(k: u64) -> CompactionSettings {
    let mut settings = CompactionSettings::default();
    settings.keep_recent_tokens = k;
    settings.adapt_keep_recent = false;
    settings
}

fn cut(session: &Session, leaf: usize, settings: &CompactionSettings) -> String {
    render_cut(session, leaf, settings, Show::Preview, Rows::All)
}

fn fixture_cut(fixture: &str, leaf: &str, settings: &CompactionSettings) -> String {
    let session = load_fixture(fixture);
    format!(
        "fixture: {fixture}\n{}",
        cut(&session, index(&session, leaf), settings)
    )
}

fn generated_cut(b: &SessionBuilder, settings: &CompactionSettings) -> String {
    let session = b.build();
    let leaf = session.leaf_index().unwrap();
    format!("generated session\n{}", cut(&session, leaf, settings))
}

#[test]
fn worked_example_a() {
    // Walking back, 40 tokens after index 5, 58 after index 4.
    check(
        "cut__worked_example_a",
        &fixture_cut("worked_a.jsonl", "00000009", &keep(50)),
    );
    // 58 after index 4, 69 after index 3 (the user message).
    check(
        "cut__worked_example_a_at_user",
        &fixture_cut("worked_a.jsonl", "00000009", &keep(60)),
    );
}

#[test]
fn worked_example_b() {
    check(
        "cut__worked_example_b",
        &fixture_cut("worked_b.jsonl", "00000008", &keep(12)),
    );
}

#[test]
fn worked_example_c() {
    check(
        "cut__worked_example_c",
        &fixture_cut("worked_c.jsonl", "00000005", &keep(15)),
    );
}

#[test]
fn worked_example_d() {
    check(
        "cut__worked_example_d",
        &fixture_cut("worked_d.jsonl", "00000002", &CompactionSettings::default()),
    );
}

#[test]
fn cut_lands_on_a_bash_execution() {
    check(
        "cut__on_bash_execution",
        &fixture_cut("cut_on_bash.jsonl", "00000007", &keep(20)),
    );
}

#[test]
fn cut_lands_on_a_custom_message() {
    check(
        "cut__on_custom_message",
        &fixture_cut("cut_on_custom_message.jsonl", "00000007", &keep(40)),
    );
}

#[test]
fn cut_lands_on_a_branch_summary() {
    check(
        "cut__on_branch_summary",
        &fixture_cut("cut_on_branch_summary.jsonl", "00000008", &keep(30)),
    );
}

#[test]
fn cut_lands_on_metadata() {
    check(
        "cut__on_metadata",
        &fixture_cut("cut_on_metadata.jsonl", "00000008", &keep(15)),
    );
}

#[test]
fn previous_compaction_with_kept_entries() {
    check(
        "cut__previous_compaction_kept",
        &fixture_cut("previous_compaction.jsonl", "00000011", &keep(50)),
    );
    check(
        "cut__previous_compaction_everything_fits",
        &fixture_cut("previous_compaction.jsonl", "00000011", &keep(20_000)),
    );
}

#[test]
fn tree_fixture() {
    check(
        "cut__tree_file_leaf",
        &fixture_cut("tree.jsonl", "a0000027", &keep(10)),
    );
    check(
        "cut__tree_leaf_is_compaction",
        &fixture_cut("tree.jsonl", "a0000022", &keep(10)),
    );
}

#[test]
fn migrated_files() {
    check(
        "cut__v1_migrated",
        &fixture_cut("v1.jsonl", "0000000a", &keep(5)),
    );
    check(
        "cut__v2_extension_compaction",
        &fixture_cut("v2.jsonl", "0000000b", &keep(12)),
    );
}

#[test]
fn useless_pruned_and_images() {
    check(
        "cut__useless_and_pruned",
        &fixture_cut("useless_and_pruned.jsonl", "0000000c", &keep(20)),
    );
    check(
        "cut__images",
        &fixture_cut("images.jsonl", "00000008", &keep(20)),
    );
}

#[test]
fn reference_pairs_with_cache_reads() {
    // From pi's compaction tests, whose cache reads make the estimate look
    // 50 times too small next to the prompt tokens. With the adaptation on
    // (the default) that is no ratio: the requests differ by a few hundred
    // estimated tokens at most, too little for a line through them, so the
    // window is not shrunk (and everything fits it).
    let b = scenarios::pairs_with_cache_reads();
    let mut adapted = CompactionSettings::default();
    adapted.keep_recent_tokens = 2_500;
    check(
        "cut__reference_pairs_keep_2500",
        &format!(
            "{}\n\n{}",
            generated_cut(&b, &keep(2_500)),
            generated_cut(&b, &adapted)
        ),
    );
}

#[test]
fn reference_small_sessions() {
    check(
        "cut__reference_single_assistant",
        &generated_cut(&scenarios::single_assistant(), &keep(1_000)),
    );
    check(
        "cut__reference_everything_fits",
        &generated_cut(&scenarios::pairs_with_cache_reads(), &keep(50_000)),
    );
}

#[test]
fn reference_split_turn() {
    check(
        "cut__reference_split_turn",
        &generated_cut(&scenarios::long_second_turn(), &keep(3_000)),
    );
}

#[test]
fn reference_custom_message() {
    let b = scenarios::custom_message_between();
    check(
        "cut__reference_custom_message",
        &format!(
            "{}\n\n{}",
            generated_cut(&b, &keep(1)),
            generated_cut(&b, &keep(2))
        ),
    );
}

#[test]
fn reference_previous_compaction() {
    check(
        "cut__reference_previous_compaction_default_keep",
        &generated_cut(
            &scenarios::previous_compaction(1),
            &CompactionSettings::default(),
        ),
    );
    check(
        "cut__reference_previous_compaction_keep_100",
        &generated_cut(&scenarios::previous_compaction(12), &keep(100)),
    );
}

#[test]
fn appendix_c() {
    let b = scenarios::appendix_c();
    // One request measured: the adaptation needs to know what the request
    // carried besides its messages (here a 2,000-token system prompt).
    let mut adapted = CompactionSettings::default();
    adapted.overhead_tokens = Some(2_000);
    check("cut__appendix_c", &generated_cut(&b, &adapted));
    check(
        "cut__appendix_c_without_adaptation",
        &generated_cut(&b, &keep(20_000)),
    );
}

#[test]
fn thresholds() {
    // The threshold examples of pi's design and pi's compaction tests, whose
    // expectations are pi's (`tokens > window − reserve`).
    let s = |reserve: u64, percent: f64, tokens: f64| ThresholdSettings {
        reserve_tokens: reserve,
        threshold_percent: percent,
        threshold_tokens: tokens,
        ..ThresholdSettings::default()
    };
    let disabled = ThresholdSettings {
        enabled: false,
        ..s(10_000, -1.0, -1.0)
    };
    let rows: [(u64, &str, ThresholdSettings, u64); 12] = [
        (200_000, "defaults", s(16_384, -1.0, -1.0), 170_001),
        (128_000, "defaults", s(16_384, -1.0, -1.0), 108_800),
        (100_000, "reserve 10000", s(10_000, -1.0, -1.0), 95_000),
        (100_000, "reserve 10000", s(10_000, -1.0, -1.0), 89_000),
        (100_000, "reserve 10000, disabled", disabled, 95_000),
        (200_000, "percent 80", s(16_384, 80.0, -1.0), 160_001),
        (200_000, "percent 150", s(16_384, 150.0, -1.0), 198_000),
        (
            200_000,
            "tokens 300000",
            s(16_384, -1.0, 300_000.0),
            199_999,
        ),
        (
            200_000,
            "tokens 90000, percent 50",
            s(16_384, 50.0, 90_000.0),
            95_000,
        ),
        (16_000, "defaults", s(16_384, -1.0, -1.0), 0),
        (
            52_000,
            "defaults (Appendix C)",
            s(16_384, -1.0, -1.0),
            45_500,
        ),
        (0, "window 0", s(16_384, -1.0, -1.0), 1),
    ];
    let mut t = Table::new(&["window>", "settings", "threshold>", "tokens>", "compact?"]);
    for (window, name, settings, tokens) in rows {
        t.row([
            window.to_string(),
            name.to_owned(),
            resolve_threshold_tokens(window, &settings).to_string(),
            tokens.to_string(),
            should_compact(tokens, window, &settings).to_string(),
        ]);
    }
    check("threshold__reference_cases", &t.render());
}
