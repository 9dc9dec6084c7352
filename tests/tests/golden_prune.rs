//! Golden snapshots of tool-output pruning plans (`prune__*`;
//! docs/design.md, "Pruning"): age pruning behind the protected window, the minimum saving,
//! protected and tiny results, useless and superseded results, the
//! compaction boundary, and the per-turn stale-result pass.
//!
//! The sessions are generated: tool results of exact token sizes
//! (`scenarios::read_result`), all with the default configuration.

#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;

use musepi_compaction::{PruneConfig, plan_prune, plan_stale_results};
use musepi_test_support::{SessionBuilder, text_block};
use musepi_tests::render_request::render_prune;
use musepi_tests::scenarios::read_result;
use serde_json::{Value, json};

/// Compares `text` with `tests/snapshots/<name>.snap`.
fn check(name: &str, text: &str) {
    musepi_test_support::golden!(name, text);
}

fn none() -> Value {
    json!({})
}

/// Four recent reads of 10,000 tokens each: the protected window.
fn recent_window(b: &mut SessionBuilder) {
    for i in 0..4 {
        read_result(
            b,
            &format!("new{i}"),
            "read",
            &format!("src/new{i}.rs"),
            10_000,
            &none(),
        );
    }
}

fn plan(b: &SessionBuilder) -> String {
    let session = b.build();
    let config = PruneConfig::default();
    let plan = plan_prune(&session, session.leaf_index(), &config);
    render_prune(&session, &config, &plan)
}

#[test]
fn age_pruning_behind_the_protected_window() {
    // A case musepi adds to pi's tests: 5 × (10,000 − 9) = 49,955 tokens saved.
    let mut b = SessionBuilder::new();
    b.user("Refactor the old modules.");
    for i in 0..5 {
        read_result(
            &mut b,
            &format!("old{i}"),
            "read",
            &format!("src/old{i}.rs"),
            10_000,
            &none(),
        );
    }
    recent_window(&mut b);
    b.assistant(&[text_block("Read everything.")], None);
    check("prune__age_five_old_results", &plan(&b));
}

#[test]
fn small_savings_change_nothing() {
    // Four old results of 1,000 tokens save 3,964 tokens, under 20,000.
    let mut b = SessionBuilder::new();
    b.user("Refactor the old modules.");
    for i in 0..4 {
        read_result(
            &mut b,
            &format!("old{i}"),
            "read",
            &format!("src/old{i}.rs"),
            1_000,
            &none(),
        );
    }
    recent_window(&mut b);
    check("prune__small_savings", &plan(&b));
}

#[test]
fn protected_and_tiny_results_are_never_age_pruned() {
    let mut b = SessionBuilder::new();
    b.user("Deploy, then clean up.");
    read_result(&mut b, "big", "read", "src/big.rs", 30_000, &none());
    read_result(&mut b, "tiny", "read", "src/tiny.rs", 40, &none());
    read_result(&mut b, "skill", "skill", "deploy", 5_000, &none());
    read_result(
        &mut b,
        "skillread",
        "read",
        "skill://deploy/SKILL.md",
        5_000,
        &none(),
    );
    recent_window(&mut b);
    check("prune__protected_and_tiny", &plan(&b));
}

#[test]
fn useless_results_are_elided_inside_the_window() {
    let mut b = SessionBuilder::new();
    b.user("Search for the callers.");
    read_result(&mut b, "old", "read", "src/old.rs", 30_000, &none());
    recent_window(&mut b);
    let useless = json!({"useless": true});
    read_result(&mut b, "grep1", "grep", "src", 300, &useless);
    read_result(&mut b, "grep2", "grep", "tests", 5, &useless);
    read_result(
        &mut b,
        "grep3",
        "grep",
        "/root",
        300,
        &json!({"useless": true, "isError": true}),
    );
    check("prune__useless_inside_window", &plan(&b));
}

#[test]
fn superseded_reads() {
    let mut b = SessionBuilder::new();
    b.user("Read the parser and the lexer.");
    read_result(&mut b, "raw", "read", "src/parser.rs:raw", 1_000, &none());
    read_result(&mut b, "full1", "read", "src/parser.rs", 20_000, &none());
    read_result(
        &mut b,
        "range",
        "read",
        "src/parser.rs:1-50",
        2_000,
        &none(),
    );
    read_result(
        &mut b,
        "lexfail",
        "read",
        "src/lexer.rs",
        60,
        &json!({"isError": true}),
    );
    read_result(
        &mut b,
        "url",
        "read",
        "https://example.com/grammar",
        500,
        &none(),
    );
    read_result(&mut b, "full2", "read", "src/parser.rs", 12_000, &none());
    read_result(&mut b, "lexok", "read", "src/lexer.rs", 500, &none());
    check("prune__superseded_reads", &plan(&b));
}

#[test]
fn results_before_the_compaction_boundary_stay() {
    let mut b = SessionBuilder::new();
    b.user("Port the old modules.");
    for i in 0..3 {
        read_result(
            &mut b,
            &format!("old{i}"),
            "read",
            &format!("src/old{i}.rs"),
            10_000,
            &none(),
        );
    }
    let kept = b.user("Now the middle ones.");
    for i in 0..2 {
        read_result(
            &mut b,
            &format!("mid{i}"),
            "read",
            &format!("src/mid{i}.rs"),
            15_000,
            &none(),
        );
    }
    recent_window(&mut b);
    b.assistant(&[text_block("Ported.")], None);
    b.entry(
        "compaction",
        json!({"summary": "Ported the old modules.", "firstKeptEntryId": kept, "tokensBefore": 95_000}),
    );
    b.user("Continue.");
    check("prune__compaction_boundary", &plan(&b));
}

#[test]
fn stale_results_pass() {
    let mut b = SessionBuilder::new();
    b.user("Fix src/a.rs.");
    read_result(&mut b, "a1", "read", "src/a.rs", 3_000, &none());
    read_result(&mut b, "log", "bash", "build.log", 9_000, &none());
    read_result(&mut b, "g", "grep", "src", 200, &json!({"useless": true}));
    read_result(&mut b, "a2", "read", "src/a.rs", 3_000, &none());
    b.assistant(&[text_block("Fixed.")], None);
    let session = b.build();
    let config = PruneConfig::default();
    let mut out = String::new();
    for idle in [false, true] {
        let plan = plan_stale_results(&session, session.leaf_index(), &config, 8_000, idle);
        let _ = writeln!(
            out,
            "##### suffix limit 8000, idle {idle}\n{}",
            render_prune(&session, &config, &plan)
        );
    }
    check("prune__stale_results_pass", out.trim_end());
}
