//! The text archive over real preparations (`musepi-compaction` cuts the
//! session, as the hooks' adapter has it cut), and what both archives
//! share.

mod common;

use musepi_session_model::{Content, CustomMessageEntry, EntryBody, RawJson, Text};
use serde_json::{Value, json};

use common::{
    BuilderExt as _, CompactionResult, Preparation, SnapSettings, SnapTarget, claude,
    compact_preparation, snapcompact_in,
};
use musepi_snapcompact::text::{SNAP_ARCHIVE_VERSION, SnapArchiveState};
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

#[test]
fn a_second_pass_continues_the_first_archive() {
    let mut b = migration_session();
    let first = compact(&b, 1);
    let first_text = archive_of(&first).text;
    b.commit(first);
    b.one_call(
        "Now wire the router into the server.",
        "Wiring it.",
        ("e2", "edit", json!({"path": "src/server.ts"})),
        "Edited src/server.ts",
    );
    ending(&mut b);
    let prep = b.prepare(1);
    assert!(prep.previous_details.is_some());
    let second = text_compaction(&prep);
    let text = archive_of(&second).text;
    let first_60: String = first_text.chars().take(60).collect();
    assert!(text.starts_with(&first_60), "{text}");
    assert_eq!(text.matches("Please migrate src/app/main.ts").count(), 1);
    assert!(text.contains("Now wire the router into the server."));
    // Cumulative file tracking keeps the first pass's files (fromExtension: false).
    let details = second.details.clone().unwrap_or_default();
    assert_eq!(
        strings(details.get("modifiedFiles")),
        ["src/app/main.ts", "src/server.ts"]
    );
}

#[test]
fn a_compaction_without_an_archive_in_between_restarts_from_its_summary() {
    let mut b = migration_session();
    let first = compact(&b, 1);
    let kept = first.first_kept_entry_id.clone();
    b.commit(first);
    b.user("More work.");
    b.assistant("Done.", &[], None);
    b.commit(CompactionResult {
        summary: "An LLM wrote this summary.".into(),
        short_summary: None,
        first_kept_entry_id: kept,
        tokens_before: 10,
        details: Some(json!({"readFiles": [], "modifiedFiles": []})),
        preserve_data: None,
        usage: None,
        from_extension: false,
        method: Some("llm".to_owned()),
        tokens_after: None,
        verified: None,
    });
    b.user("Latest request.");
    b.assistant("Latest answer.", &[], None);
    ending(&mut b);
    let text = archive_of(&compact(&b, 1)).text;
    assert!(
        text.starts_with("=== LEDGER ===\n¶summary:An LLM wrote this summary.\n"),
        "{text}"
    );
    assert!(text.contains("Latest request."), "{text}");
    assert!(!text.contains("Please migrate"), "{text}");
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
fn the_native_preparation_archives_the_answer_and_its_files() {
    let b = deploy_session();
    let prep = measured(&b, 12_345);
    let mut settings = SnapSettings::default();
    settings.reserve_tokens = 16_000;
    let out =
        compact_preparation(&prep, &text_target(), &settings).unwrap_or_else(|e| panic!("{e}"));
    assert_contains(
        &out.summary,
        &[
            "Resume the prior conversation",
            "terraform apply",
            "infra/main.tf (Read)",
        ],
    );
    let details = out.details.clone().unwrap_or_default();
    assert_eq!(strings(details.get("readFiles")), ["infra/main.tf"]);
    let archive = archive_of(&out);
    assert!(archive.text.contains("terraform apply"));
    assert!(archive.version > 0);
    assert_eq!(out.tokens_before, 12_345);

    // Case 7: with only the previous summary to go on, the next pass still
    // carries the answer.
    let mut again = b.prepare(1);
    again.previous_summary = Some(out.summary.clone());
    again.previous_details = None;
    let second =
        compact_preparation(&again, &text_target(), &settings).unwrap_or_else(|e| panic!("{e}"));
    assert!(archive_of(&second).text.contains("terraform apply"));
}

#[test]
fn useless_pairs_are_left_out_and_custom_messages_are_archived() {
    let mut b = Builder::new();
    b.user("check the tree");
    b.call("Checking.", "u1", "bash", json!({"command": "true"}));
    b.result_with("u1", "bash", "nothing", false, Some(true));
    b.push(EntryBody::CustomMessage(CustomMessageEntry {
        custom_type: "note".into(),
        content: Content::Text(Text::new("Reminder from the extension: keep tests green.")),
        display: true,
        details: None,
        attribution: None,
    }));
    ending(&mut b);
    let text = archive_of(&compact(&b, 1)).text;
    assert!(!text.contains("command=\"true\""), "{text}");
    assert!(
        text.contains("Reminder from the extension: keep tests green."),
        "{text}"
    );
}

#[test]
fn the_previous_preserve_data_is_carried_without_the_remote_replay_or_an_archive() {
    let b = deploy_session();
    let mut prep = b.prepare(1);
    let previous = json!({
        "hookData": {"n": 1},
        "openaiRemoteCompaction": {"provider": "openai", "replacementHistory": []},
        "snapcompact": {"text": "¶user:old█¶ai:older answer", "truncatedChars": 3}
    });
    prep.previous_preserve_data = Some(RawJson::from_value(&previous));
    let out = text_compaction(&prep);
    assert_eq!(out.preserve_data, Some(json!({"hookData": {"n": 1}})));
    // The previous PNG archive continues from its transcript, with its
    // dropped count.
    let archive = archive_of(&out);
    assert!(
        archive
            .text
            .starts_with("=== LEDGER ===\n#1 ¶user:old\n#2 ¶user:how do we deploy?"),
        "{}",
        archive.text
    );
    assert!(
        archive.text.contains("#1 ¶ai:older answer"),
        "{}",
        archive.text
    );
    assert_eq!(archive.truncated_chars, 3);

    prep.previous_preserve_data = Some(RawJson::from_value(&json!({"openaiRemoteCompaction": {}})));
    let out = text_compaction(&prep);
    assert_eq!(out.preserve_data, None);
}

#[test]
fn a_vision_reader_without_a_model_gets_text() {
    let mut target = SnapTarget::default();
    target.vision = true;
    assert!(!target.wants_frames());
    let b = deploy_session();
    let out = compact_preparation(&b.prepare(1), &target, &SnapSettings::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(archive_of(&out).version, SNAP_ARCHIVE_VERSION);
}

#[test]
fn the_same_session_compacts_to_the_same_bytes_twice() {
    let mut b = migration_session();
    for i in 0..40 {
        b.filler(&format!("t{i}w"), 200);
    }
    ending(&mut b);
    let targets = [text_target(), claude()];
    for target in targets {
        let bytes = || {
            let out = compact_preparation(&b.prepare(1), &target, &SnapSettings::default())
                .unwrap_or_else(|e| panic!("{e}"));
            serde_json::to_string(&json!({
                "summary": out.summary,
                "short": out.short_summary,
                "details": out.details,
                "preserve": out.preserve_data,
            }))
            .unwrap_or_default()
        };
        let first = bytes();
        assert!(first.len() > 10_000);
        assert_eq!(first, bytes());
    }
}

#[test]
fn the_summary_is_sized_by_the_reserve_the_history_and_the_window() {
    let mut b = Builder::new();
    for i in 0..400 {
        b.user(&format!(
            "Step {i}: the limit of part {i} is {} ms and must not change. {}",
            1000 + i,
            "More words about it. ".repeat(20)
        ));
        b.assistant(
            &format!("Part {i} keeps {} entries because of the load.", 5000 + i),
            &[],
            None,
        );
    }
    ending(&mut b);
    let prep = b.prepare(1);
    let chars = |settings: &SnapSettings| {
        let out =
            compact_preparation(&prep, &text_target(), settings).unwrap_or_else(|e| panic!("{e}"));
        out.summary.encode_utf16().count()
    };
    // A long history: what an LLM summary may take, 0.8 × the reserve.
    let mut settings = SnapSettings::default();
    assert!(chars(&settings) <= 13_107 * 4);
    assert!(chars(&settings) > 12_000 * 4);
    // A 32k window: an eighth of what the reserve leaves of it.
    settings.context_window = Some(32_768);
    assert!(chars(&settings) <= 2_048 * 4);
    // A window that does not bind.
    settings.context_window = Some(200_000);
    assert!(chars(&settings) > 12_000 * 4);
    // A short history: a quarter of it, at least 3,600 tokens.
    let mut short = Builder::new();
    for i in 0..200 {
        short.user(&format!(
            "Part {i} keeps {} entries. {}",
            5000 + i,
            "Words. ".repeat(60)
        ));
        short.assistant("Done.", &[], None);
    }
    ending(&mut short);
    let prep = short.prepare(1);
    let out = compact_preparation(&prep, &text_target(), &SnapSettings::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let history: u64 = prep
        .messages_to_summarize
        .iter()
        .chain(&prep.turn_prefix_messages)
        .map(musepi_context_builder::ContextMessage::tokens)
        .sum();
    let tokens = out.summary.encode_utf16().count().div_ceil(4) as u64;
    assert!(history / 4 > 3_600, "{history}");
    assert!(tokens <= history / 4 + 1, "{tokens} of {history}");
}
