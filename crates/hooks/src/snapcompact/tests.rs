//! The adapter: what it takes from a preparation (the files, the cut, the
//! context's tokens), what it refuses, and what an LLM summary after its
//! archive reads. The archive's own behaviour is tested at home, in
//! musepi-snapcompact's tests.

use musepi_compaction::{CompactionSettings, RequestOptions, SummaryPlan, prepare};
use musepi_context_builder::SummaryRequest;
use musepi_session_model::EntryId;
use musepi_test_support::EntryBuilder as Builder;
use serde_json::{Value, json};

use super::*;

/// The compaction of everything but the last turn of `b`.
fn cut(b: &Builder) -> Preparation<'_> {
    let mut settings = CompactionSettings::default();
    settings.keep_recent_tokens = 1;
    settings.adapt_keep_recent = false;
    prepare(&b.session, b.session.leaf_index(), &settings)
        .unwrap_or_else(|e| panic!("nothing to compact: {e}"))
}

/// The adapter's compaction of `prep` for `target`, default settings.
fn adapted(prep: &Preparation<'_>, target: &SnapTarget) -> CompactionResult {
    compact_preparation(prep, target, &SnapSettings::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// The paths of `details[key]`.
fn paths<'v>(details: Option<&'v Value>, key: &str) -> Vec<&'v str> {
    details
        .and_then(|d| d.get(key))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// `b` ends with a short turn the cut keeps.
fn end(mut b: Builder) -> Builder {
    b.user("Carry on.");
    b.assistant("Carrying on.", &[], None);
    b
}

#[test]
fn file_markers_and_lists_come_from_the_preparation() {
    let mut b = Builder::new();
    b.user("Tidy up the sources.");
    let edit = json!({"path": "src/c.ts", "oldText": "x", "newText": "y"});
    b.assistant(
        "Reading and editing.",
        &[
            ("r1", "read", json!({"path": "src/a.ts"})),
            ("r2", "read", json!({"path": "src/b.ts"})),
            ("r3", "read", json!({"path": "https://example.com/doc"})),
            ("w1", "write", json!({"path": "src/b.ts", "content": "b"})),
            ("e1", "edit", edit),
        ],
        None,
    );
    for id in ["r1", "r2", "r3", "w1", "e1"] {
        b.result(id, "tool", "ok");
    }
    let b = end(b);
    let out = adapted(&cut(&b), &SnapTarget::default());
    let files = "<files>\nsrc/a.ts (Read)\nsrc/b.ts (RW)\nsrc/c.ts (Write)\n</files>";
    assert!(out.summary.contains(files), "{}", out.summary);
    assert!(!out.summary.contains("example.com/doc ("));
    assert_eq!(paths(out.details.as_ref(), "readFiles"), ["src/a.ts"]);
    assert_eq!(
        paths(out.details.as_ref(), "modifiedFiles"),
        ["src/b.ts", "src/c.ts"]
    );
    assert!(!out.from_extension);
    assert_eq!(out.usage, None);
}

#[test]
fn the_entry_carries_the_preparations_cut_and_tokens_and_the_archive() {
    let mut b = Builder::new();
    b.user("Please migrate src/app/main.ts to the new router.");
    b.call(
        "Looking at it.",
        "r1",
        "read",
        json!({"path": "src/app/main.ts"}),
    );
    b.result("r1", "read", "import { router } from './router';");
    let b = end(b);
    let mut prep = cut(&b);
    prep.tokens_before = 123_456;
    prep.first_kept_entry_id = EntryId::from("entry-keep-1");
    let out = adapted(&prep, &SnapTarget::default());
    assert_eq!(out.first_kept_entry_id.as_str(), "entry-keep-1");
    assert_eq!(out.tokens_before, 123_456);
    assert_eq!(out.method.as_deref(), Some("snapcompact"));
    assert!(out.summary.starts_with("Resume the prior conversation"));
    let archive = out
        .details
        .as_ref()
        .and_then(|d| d.get("snapcompact"))
        .and_then(musepi_snapcompact::text::SnapArchiveState::from_value)
        .unwrap_or_else(|| panic!("no archive in {:?}", out.details));
    assert!(
        archive
            .text
            .contains("¶user:Please migrate src/app/main.ts")
    );
    assert_eq!(
        paths(out.details.as_ref(), "readFiles"),
        ["src/app/main.ts"]
    );
    assert_eq!(out.preserve_data, None);
}

#[test]
fn a_first_kept_entry_without_an_id_is_refused() {
    let mut b = Builder::new();
    b.user("how do we deploy?");
    b.assistant("with terraform apply", &[], None);
    let b = end(b);
    let mut prep = cut(&b);
    prep.first_kept_entry_id = EntryId::from("");
    let err = compact_preparation(&prep, &SnapTarget::default(), &SnapSettings::default());
    assert!(matches!(err, Err(SnapError::NoFirstKeptId)));
}

/// An LLM summary that follows an archive folds the archive's text into
/// its update prompt with nothing added: the entry's summary already holds
/// the ledger and the conversation kept by salience, for a text reader and
/// for a reader of frames alike (no archive is unpacked into the prompt).
#[test]
fn an_llm_summary_after_an_archive_finds_the_archive_text_in_the_previous_summary() {
    // Gemini: a frame costs it a fifth of the text it prints, so it gets
    // frames.
    let gemini = SnapTarget::images("gemini-2.5-pro", "google-generative-ai", "google");
    for target in [SnapTarget::default(), gemini] {
        let mut b = Builder::new();
        for i in 0..120 {
            b.filler(&format!("a{i}w"), 200);
        }
        b.user("Where does the deploy key live?");
        b.call(
            "Looking.",
            "k1",
            "bash",
            json!({"command": "grep -r deploy_key ."}),
        );
        b.result(
            "k1",
            "bash",
            "infra/vault.tf: deploy_key = vault/prod/deploy",
        );
        let mut b = end(b);
        let archived = adapted(&cut(&b), &target);
        let frames = archived
            .preserve_data
            .as_ref()
            .and_then(|p| p.pointer("/snapcompact/frames"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        assert_eq!(frames > 0, target.wants_frames(), "{frames} frames");
        b.push(archived.into_body());
        for i in 0..10 {
            b.filler(&format!("b{i}w"), 120);
        }
        let b = end(b);
        // The frames carried the history, so the summarizer reads their
        // transcript after the PNG archive's summary.
        let prep = with_frames_history(cut(&b));
        let plan = SummaryPlan::new(
            &prep,
            &CompactionSettings::default(),
            &RequestOptions::default(),
        );
        let prompt = plan
            .history
            .as_ref()
            .map(SummaryRequest::prompt_text)
            .unwrap_or_default();
        let previous = prompt
            .split_once("<previous-summary>\n")
            .and_then(|(_, rest)| rest.split_once("\n</previous-summary>"))
            .map_or_else(|| panic!("no previous summary in {prompt}"), |(p, _)| p);
        assert_eq!(Some(previous), prep.previous_summary.as_deref());
        for part in ["¶user:Where does the deploy key live?", "vault/prod/deploy"] {
            assert!(previous.contains(part), "{part:?} in {previous}");
        }
        assert_eq!(previous.contains("=== LEDGER ==="), !target.wants_frames());
    }
}
