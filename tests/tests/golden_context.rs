//! Golden snapshots of what the model sees, over our own fixture sessions:
//! the session tree (`tree__*`), the context at a leaf (`context__*`),
//! the provider messages after conversion (`convert__*`) and the display
//! transcript (`transcript__*`).

#![allow(clippy::unwrap_used)]

use musepi_tests::fixtures::{index, load_fixture};
use musepi_tests::render_context::{
    render_context, render_convert, render_outline, render_transcript,
};
use musepi_tests::show::Show;

/// Compares `text` with `tests/snapshots/<name>.snap`.
fn check(name: &str, text: &str) {
    musepi_test_support::golden!(name, text);
}

fn context(fixture: &str, leaf: &str) -> String {
    let session = load_fixture(fixture);
    format!(
        "fixture: {fixture}\n{}",
        render_context(&session, index(&session, leaf), Show::Preview)
    )
}

#[test]
fn tree_outlines() {
    for (name, fixture) in [
        ("tree__tree", "tree.jsonl"),
        ("tree__v1_migrated", "v1.jsonl"),
        ("tree__v2_migrated", "v2.jsonl"),
    ] {
        let session = load_fixture(fixture);
        check(
            name,
            &format!("fixture: {fixture}\n{}", render_outline(&session)),
        );
    }
}

#[test]
fn context_tree_file_leaf() {
    check(
        "context__tree_file_leaf",
        &context("tree.jsonl", "a0000027"),
    );
}

#[test]
fn context_tree_leaf_before_compaction() {
    check(
        "context__tree_leaf_before_compaction",
        &context("tree.jsonl", "a0000016"),
    );
}

#[test]
fn context_tree_leaf_abandoned_branch() {
    check(
        "context__tree_leaf_abandoned_branch",
        &context("tree.jsonl", "b0000004"),
    );
}

#[test]
fn context_tree_leaf_mid() {
    check("context__tree_leaf_mid", &context("tree.jsonl", "c0000002"));
}

#[test]
fn context_tree_leaf_side_branch_model() {
    check(
        "context__tree_leaf_side_branch_model",
        &context("tree.jsonl", "d0000002"),
    );
}

#[test]
fn context_tree_leaf_is_compaction() {
    check(
        "context__tree_leaf_is_compaction",
        &context("tree.jsonl", "a0000022"),
    );
}

/// The complete example session of pi's design: the text states both contexts (user, assistant,
/// toolResult, branchSummary at the file leaf; the summary, then "Also
/// update the tests", thinking level high, at the label).
#[test]
fn context_spec_example() {
    check(
        "context__spec_example_file_leaf",
        &context("spec_example.jsonl", "1b2c3d4e"),
    );
    check(
        "context__spec_example_leaf_label",
        &context("spec_example.jsonl", "0a1b2c3d"),
    );
}

#[test]
fn context_roles() {
    check("context__roles", &context("roles.jsonl", "0000001a"));
}

#[test]
fn context_usage_anchors() {
    let text = ["00000004", "00000005", "00000006"]
        .iter()
        .map(|leaf| context("usage.jsonl", leaf))
        .collect::<Vec<_>>()
        .join("\n\n");
    check("context__usage_anchors", &text);
}

#[test]
fn context_v1_migrated() {
    check("context__v1_migrated", &context("v1.jsonl", "0000000a"));
}

#[test]
fn context_v2_migrated() {
    check("context__v2_migrated", &context("v2.jsonl", "0000000b"));
}

#[test]
fn context_images() {
    check("context__images", &context("images.jsonl", "00000008"));
}

#[test]
fn convert_roles() {
    let session = load_fixture("roles.jsonl");
    check(
        "convert__roles",
        &render_convert(&session, index(&session, "0000001a")),
    );
}

#[test]
fn convert_tree_file_leaf() {
    let session = load_fixture("tree.jsonl");
    check(
        "convert__tree_file_leaf",
        &render_convert(&session, index(&session, "a0000027")),
    );
}

#[test]
fn convert_v2_hook_messages() {
    let session = load_fixture("v2.jsonl");
    check(
        "convert__v2_hook_messages",
        &render_convert(&session, index(&session, "0000000b")),
    );
}

#[test]
fn convert_images() {
    let session = load_fixture("images.jsonl");
    check(
        "convert__images",
        &render_convert(&session, index(&session, "00000008")),
    );
}

#[test]
fn transcript_compactions_inline() {
    let session = load_fixture("tree.jsonl");
    check(
        "transcript__compactions_inline",
        &render_transcript(&session, index(&session, "a0000027")),
    );
}

#[test]
fn transcript_v1_migrated() {
    let session = load_fixture("v1.jsonl");
    check(
        "transcript__v1_migrated",
        &render_transcript(&session, index(&session, "0000000a")),
    );
}
