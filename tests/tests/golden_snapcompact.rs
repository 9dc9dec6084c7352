//! Golden snapshots of the snapcompact compaction pass: the text-frame
//! archive of one of our fixture sessions (`snapcompact__*`), which a
//! reader of images gets too (the history is too short for frames), and
//! the frames of a generated session long enough to image, each shown by
//! its geometry and the SHA-256 of its PNG.

#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;

use musepi_compaction::{CompactionResult, CompactionSettings, Preparation, prepare};
use musepi_hooks::snapcompact::{SnapSettings, SnapTarget, compact_preparation};
use musepi_session_model::Session;
use musepi_snapcompact::base64_decode;
use musepi_snapcompact::png::PngArchive;
use musepi_test_support::{SessionBuilder, text_block, tool_call};
use musepi_tests::fixtures::load_fixture;
use musepi_tests::table::Table;
use musepi_tests::{claude_reader, gemini_reader, sha256_hex};
use serde_json::{Value, json};

/// Compares `text` with `tests/snapshots/<name>.snap`.
fn check(name: &str, text: &str) {
    musepi_test_support::golden!(name, text);
}

/// A compaction at the leaf that keeps only the last turn.
fn prep(session: &Session) -> Preparation<'_> {
    let mut settings = CompactionSettings::default();
    settings.keep_recent_tokens = 1;
    settings.adapt_keep_recent = false;
    prepare(session, session.leaf_index(), &settings).unwrap()
}

fn png_of(result: &CompactionResult) -> PngArchive {
    PngArchive::from_value(&result.preserve_data.as_ref().unwrap()["snapcompact"]).unwrap()
}

/// The fields of a result as `key: value` lines, then the summary.
fn render(result: &CompactionResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "firstKeptEntryId: {}", result.first_kept_entry_id);
    let _ = writeln!(out, "tokensBefore: {}", result.tokens_before);
    let _ = writeln!(out, "fromExtension: {}", result.from_extension);
    let _ = writeln!(
        out,
        "shortSummary: {}",
        result.short_summary.as_deref().unwrap_or("-")
    );
    let details = result.details.clone().unwrap_or(Value::Null);
    for key in ["readFiles", "modifiedFiles"] {
        let _ = writeln!(out, "details.{key}: {}", details[key]);
    }
    if let Some(archive) = details.get("snapcompact") {
        let text = archive["text"].as_str().unwrap_or_default();
        let _ = writeln!(
            out,
            "details.snapcompact: version {}, {} chars kept, {} dropped",
            archive["version"],
            text.encode_utf16().count(),
            archive["truncatedChars"]
        );
    }
    match &result.preserve_data {
        Some(preserve) => {
            let keys: Vec<&String> = preserve.as_object().unwrap().keys().collect();
            let _ = writeln!(out, "preserveData keys: {keys:?}");
        }
        None => out.push_str("preserveData: none\n"),
    }
    let _ = write!(out, "--- summary ---\n{}\n--- end ---\n", result.summary);
    out
}

/// Each frame: shape, geometry, characters and the SHA-256 of its PNG.
fn frames_table(archive: &PngArchive) -> String {
    let mut table = Table::new(&[
        "#>",
        "shape",
        "cols>",
        "rows>",
        "chars>",
        "png bytes>",
        "sha256",
    ]);
    for (i, f) in archive.frames.iter().enumerate() {
        let png = base64_decode(&f.data).unwrap();
        table.row([
            (i + 1).to_string(),
            f.shape.clone().unwrap_or_default(),
            f.cols.to_string(),
            f.rows.to_string(),
            f.chars.to_string(),
            png.len().to_string(),
            sha256_hex(&png),
        ]);
    }
    let edge = |t: &Option<String>| t.as_deref().map_or(0, |t| t.encode_utf16().count());
    format!(
        "{}text head: {} chars, text tail: {} chars, total: {} chars, dropped: {} chars\n",
        table.render(),
        edge(&archive.text_head),
        edge(&archive.text_tail),
        archive.total_chars,
        archive.truncated_chars
    )
}

#[test]
fn text_archive_of_a_fixture() {
    let session = load_fixture("previous_compaction.jsonl");
    let result = compact_preparation(
        &prep(&session),
        &SnapTarget::default(),
        &SnapSettings::default(),
    )
    .unwrap();
    check(
        "snapcompact__text_previous_compaction",
        &format!(
            "fixture: previous_compaction.jsonl (keepRecentTokens 1, any model)\n{}",
            render(&result)
        ),
    );
}

/// A history this short fits the PNG archive's two verbatim edges: frames
/// would add nothing, so a reader of images gets the text archive too.
#[test]
fn a_vision_reader_of_a_short_fixture_gets_the_text_archive() {
    let session = load_fixture("previous_compaction.jsonl");
    let text = compact_preparation(
        &prep(&session),
        &SnapTarget::default(),
        &SnapSettings::default(),
    )
    .unwrap();
    let vision =
        compact_preparation(&prep(&session), &claude_reader(), &SnapSettings::default()).unwrap();
    assert!(vision.preserve_data.is_none(), "{:?}", vision.preserve_data);
    assert_eq!(render(&vision), render(&text));
}

/// A port of a frame planner over 48 turns: requests, reasoning, tool
/// calls with results, and answers, varied by turn.
fn long_session() -> Session {
    const FILES: [&str; 4] = [
        "src/planner.rs",
        "src/render.rs",
        "src/layout.rs",
        "tests/planner.rs",
    ];
    let mut b = SessionBuilder::new();
    for turn in 0..48usize {
        let file = FILES[turn % FILES.len()];
        b.user(&format!(
            "Step {turn}: port the next part of {file}. Keep the public API as it is, \
             add a test for every branch, and tell me what you changed and why."
        ));
        let call = format!("c{turn}");
        b.assistant(
            &[
                json!({"type": "thinking", "thinking": format!("Step {turn} touches {file}; read it first, then edit.")}),
                text_block(&format!("Reading {file} before step {turn}.")),
                tool_call(&call, "read", &json!({"path": file})),
            ],
            None,
        );
        let mut body = String::new();
        for line in 0..30 {
            let _ = writeln!(
                body,
                "{line:>4}  fn step_{turn}_{line}(frames: &mut Vec<Frame>) -> usize {{ frames.len() + {line} }}"
            );
        }
        b.tool_result(&call, "read", &body);
        b.assistant(
            &[text_block(&format!(
                "Step {turn} is done: {file} now plans {} frames per page and the new test covers the \
                 empty, short and overflowing cases.",
                turn % 7 + 1
            ))],
            None,
        );
    }
    b.user("Carry on with the next step.");
    b.assistant(&[text_block("Carrying on.")], None);
    b.build()
}

#[test]
fn png_frames_of_a_long_session() {
    let session = long_session();
    let result =
        compact_preparation(&prep(&session), &gemini_reader(), &SnapSettings::default()).unwrap();
    let archive = png_of(&result);
    assert!(archive.frames.len() >= 2);
    check(
        "snapcompact__png_frames_long_session",
        &format!(
            "generated: 48 turns (keepRecentTokens 1, gemini-2.5-pro)\nshortSummary: {}\n{}",
            result.short_summary.as_deref().unwrap_or("-"),
            frames_table(&archive)
        ),
    );
}
