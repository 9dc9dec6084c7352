//! The adapter: what it takes from a preparation (the files, the cut, the
//! context's tokens), what it refuses, and what an LLM summary after its
//! archive reads. The archive's own behaviour is tested at home, in
//! musepi-snapcompact's tests.

use musepi_compaction::CompactionResult;
use musepi_session_model::EntryId;
use serde_json::{Value, json};

use super::testkit::{BuilderExt as _, snapcompact_in};
use super::*;
use musepi_snapcompact::text::SnapArchiveState;
use musepi_test_support::EntryBuilder as Builder;

fn text_target() -> SnapTarget {
    SnapTarget::default()
}

/// The text compaction of `prep` with the default settings.
fn text_compaction(prep: &Preparation<'_>) -> CompactionResult {
    compact_preparation(prep, &text_target(), &SnapSettings::default())
        .unwrap_or_else(|e| panic!("{e}"))
}

fn compact(b: &Builder, keep: u64) -> CompactionResult {
    text_compaction(&b.prepare(keep))
}

/// `details.snapcompact` as stored.
fn archive_of(result: &CompactionResult) -> SnapArchiveState {
    snapcompact_in(result.details.as_ref(), SnapArchiveState::from_value)
}

/// A compaction of `b` prepared to keep almost nothing, its context
/// measured at `tokens_before`.
fn measured(b: &Builder, tokens_before: u64) -> Preparation<'_> {
    let mut prep = b.prepare(1);
    prep.tokens_before = tokens_before;
    prep
}

/// Asserts that `text` contains each of `parts`.
fn assert_contains(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} in {text}");
    }
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A short ending turn that the cut keeps.
fn ending(b: &mut Builder) {
    b.user("Carry on.");
    b.assistant("Carrying on.", &[], None);
}

/// A migration left unfinished.
fn migration_session() -> Builder {
    let mut b = Builder::new();
    b.read_and_edit(
        "Please migrate src/app/main.ts to the new router.",
        "Looking at it, then editing.",
        ("src/app/main.ts", "import { router } from './router';"),
        "src/app/main.ts",
    );
    b.user("The migration task is still unfinished.");
    b.assistant("Continuing with the routes.", &[], None);
    ending(&mut b);
    b
}

/// A question about deploying.
fn deploy_session() -> Builder {
    let mut b = Builder::new();
    b.one_call(
        "how do we deploy?",
        "with terraform apply",
        ("r1", "read", json!({"path": "infra/main.tf"})),
        "resource aws_s3_bucket {}",
    );
    ending(&mut b);
    b
}

#[test]
fn file_markers_and_lists_come_from_the_preparation() {
    let mut b = Builder::new();
    b.user("Tidy up the sources.");
    b.assistant(
        "Reading and editing.",
        &[
            ("r1", "read", json!({"path": "src/a.ts"})),
            ("r2", "read", json!({"path": "src/b.ts"})),
            ("r3", "read", json!({"path": "https://example.com/doc"})),
            ("w1", "write", json!({"path": "src/b.ts", "content": "b"})),
            (
                "e1",
                "edit",
                json!({"path": "src/c.ts", "oldText": "x", "newText": "y"}),
            ),
        ],
        None,
    );
    for id in ["r1", "r2", "r3", "w1", "e1"] {
        b.result(id, "tool", "ok");
    }
    ending(&mut b);
    let out = compact(&b, 1);
    assert!(
        out.summary
            .contains("<files>\nsrc/a.ts (Read)\nsrc/b.ts (RW)\nsrc/c.ts (Write)\n</files>")
    );
    assert!(!out.summary.contains("example.com/doc ("));
    let details = out.details.clone().unwrap_or_default();
    assert_eq!(strings(details.get("readFiles")), ["src/a.ts"]);
    assert_eq!(
        strings(details.get("modifiedFiles")),
        ["src/b.ts", "src/c.ts"]
    );
    assert!(!out.from_extension);
    assert_eq!(out.usage, None);
}

#[test]
fn a_text_compaction_carries_the_preparation_and_the_archive() {
    let b = migration_session();
    let mut prep = measured(&b, 123_456);
    prep.first_kept_entry_id = EntryId::from("entry-keep-1");
    let out = text_compaction(&prep);
    assert_eq!(out.first_kept_entry_id.as_str(), "entry-keep-1");
    assert_eq!(out.tokens_before, 123_456);
    assert_eq!(out.usage, None);
    assert!(out.summary.starts_with("Resume the prior conversation"));
    assert_contains(
        &out.summary,
        &[
            "Reading guide",
            "src/app/main.ts",
            "The migration task is still unfinished.",
            "<files>\nsrc/app/main.ts (RW)\n</files>",
        ],
    );
    let details = out.details.clone().unwrap_or_default();
    assert_eq!(strings(details.get("modifiedFiles")), ["src/app/main.ts"]);
    assert_eq!(strings(details.get("readFiles")), Vec::<String>::new());
    let archive = archive_of(&out);
    assert_eq!(archive.version, 2);
    assert!(
        archive
            .text
            .starts_with("=== LEDGER ===\n#1 ¶user:Please migrate src/app/main.ts")
    );
    assert_eq!(
        out.short_summary
            .as_deref()
            .map(|s| s.starts_with("archived ")),
        Some(true)
    );
    assert_eq!(out.preserve_data, None);
}

#[test]
fn a_first_kept_entry_without_an_id_is_refused() {
    let b = deploy_session();
    let mut prep = b.prepare(1);
    prep.first_kept_entry_id = EntryId::from("");
    let err = compact_preparation(&prep, &text_target(), &SnapSettings::default());
    assert!(matches!(err, Err(SnapError::NoFirstKeptId)));
}

/// An LLM summary that follows an archive folds the archive's text into
/// its update prompt with nothing added: the entry's summary already holds
/// the ledger and the conversation kept by salience, for a text reader and
/// for a reader of frames alike (no archive is unpacked into the prompt).
#[test]
fn an_llm_summary_after_an_archive_finds_the_archive_text_in_the_previous_summary() {
    for target in [text_target(), super::testkit::gemini()] {
        let mut b = Builder::new();
        for i in 0..120 {
            b.filler(&format!("a{i}w"), 200);
        }
        b.one_call(
            "Where does the deploy key live?",
            "Looking.",
            ("k1", "bash", json!({"command": "grep -r deploy_key ."})),
            "infra/vault.tf: deploy_key = vault/prod/deploy",
        );
        ending(&mut b);
        let archived = compact_preparation(&b.prepare(1), &target, &SnapSettings::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let frames = archived
            .preserve_data
            .as_ref()
            .and_then(|p| p.get("snapcompact"))
            .and_then(|a| a.get("frames"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        assert_eq!(frames > 0, target.wants_frames(), "{frames} frames");
        b.commit(archived);
        for i in 0..10 {
            b.filler(&format!("b{i}w"), 120);
        }
        ending(&mut b);
        // The frames carried the history, so the summarizer reads their
        // transcript after the PNG archive's summary.
        let prep = with_frames_history(b.prepare(1));
        let plan = musepi_compaction::SummaryPlan::new(
            &prep,
            &musepi_compaction::CompactionSettings::default(),
            &musepi_compaction::RequestOptions::default(),
        );
        let prompt = plan
            .history
            .as_ref()
            .map(musepi_context_builder::SummaryRequest::prompt_text)
            .unwrap_or_default();
        let previous = prompt
            .split_once("<previous-summary>\n")
            .and_then(|(_, rest)| rest.split_once("\n</previous-summary>"))
            .map_or_else(|| panic!("no previous summary in {prompt}"), |(p, _)| p);
        assert_eq!(Some(previous), prep.previous_summary.as_deref());
        assert_contains(
            previous,
            &["¶user:Where does the deploy key live?", "vault/prod/deploy"],
        );
        assert_eq!(previous.contains("=== LEDGER ==="), !target.wants_frames());
    }
}
