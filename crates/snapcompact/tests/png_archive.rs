//! The PNG-frame archive over real preparations, the archive blocks of a
//! session, newest-edge retention and the frame and byte budgets.

mod common;

use musepi_context_builder::{
    ArchiveBlocks, ConvertOptions, LlmMessage, build_context, convert_to_llm,
};
use musepi_session_model::{Compaction, ContentBlock, EntryBody, RawJson, Text};
use std::fmt::Write as _;

use proptest::prelude::*;
use serde_json::{Value, json};

use common::{
    BuilderExt as _, CompactionResult, Preparation, SnapSettings, SnapTarget, claude,
    compact_preparation, gemini, pass_input, snapcompact_in, vision,
};
use musepi_session_model::json::{
    thousands, utf16_ceil_byte_from_end, utf16_floor_byte, utf16_len as len16,
};
use musepi_snapcompact::SerializeOptions;
use musepi_snapcompact::SessionArchives;
use musepi_snapcompact::archive_tokens;
use musepi_snapcompact::png::NEWLINE_GLYPH;
use musepi_snapcompact::png::history_blocks;
use musepi_snapcompact::png::{EDGE_CHARS, PngArchive};
use musepi_snapcompact::png::{FRAME_DATA_BYTES_BUDGET, FRAME_DATA_BYTES_ESTIMATE};
use musepi_snapcompact::png::{Flavor, serialize};
use musepi_snapcompact::{normalize, resolve_shape};
use musepi_test_support::EntryBuilder as Builder;

fn head_units(s: &str, units: usize) -> &str {
    &s[..utf16_floor_byte(s, units)]
}

fn tail_units(s: &str, units: usize) -> &str {
    &s[utf16_ceil_byte_from_end(s, units)..]
}

/// The compaction of `prep` for `target` with the default settings.
fn compaction(prep: &Preparation<'_>, target: &SnapTarget) -> CompactionResult {
    compact_preparation(prep, target, &SnapSettings::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn run(b: &Builder, target: &SnapTarget) -> CompactionResult {
    compaction(&b.prepare(1), target)
}

fn png_of(result: &CompactionResult) -> PngArchive {
    snapcompact_in(result.preserve_data.as_ref(), PngArchive::from_value)
}

/// A session long enough for frames: a request with files, then `turns`
/// turns of `words` words each, then a short kept ending.
fn long_session(turns: usize, words: usize) -> Builder {
    let mut b = Builder::new();
    b.read_and_edit(
        "Port the frame planner to Rust.",
        "Reading the planner.",
        ("src/planner.ts", "export function plan() {}"),
        "src/planner.rs",
    );
    for i in 0..turns {
        b.filler(&format!("t{i}w"), words);
    }
    b.user("Carry on.");
    b.assistant("Carrying on.", &[], None);
    b
}

/// The turns of 200 words whose history a Gemini reader gets on frames:
/// about 8 frames, which cost it fewer tokens than the text archive.
const FRAMED_TURNS: usize = 120;

#[test]
fn png_frames_carry_their_shape_and_the_preserve_data_holds_the_archive() {
    let b = long_session(FRAMED_TURNS, 200);
    let out = run(&b, &gemini());
    let png = png_of(&out);
    assert!(png.frames.len() >= 2, "{}", png.frames.len());
    for frame in &png.frames {
        assert_eq!(frame.shape.as_deref(), Some("8on22-bw"));
        assert_eq!(
            (frame.font.as_deref(), frame.variant.as_deref()),
            (Some("8x13"), Some("bw"))
        );
        assert_eq!((frame.cols, frame.detail.as_deref()), (256, None));
        assert!(frame.data.starts_with("iVBORw0KGgo"));
    }
    // Every page is shown: the frames keep all of the history.
    assert_eq!(png.truncated_chars, 0);
    assert_eq!(
        out.details,
        Some(json!({"readFiles": ["src/planner.ts"], "modifiedFiles": ["src/planner.rs"]}))
    );
    let s = &out.summary;
    assert!(s.starts_with("Resume the prior conversation."), "{s}");
    for part in [
        "a grid 256 characters wide and up to 93 rows tall",
        "FILES\n===================\n\n# src/\nplanner.rs (Write)\nplanner.ts (Read)\n\nHISTORY\n",
    ] {
        assert!(s.contains(part), "{part:?} in {s}");
    }
    // The frames carry the history instead of the text.
    assert!(s.ends_with("HISTORY\n==================="), "{s}");
    assert!(
        !s.contains("=== LEDGER ===") && !s.contains("¶user:t89w0"),
        "{s}"
    );
    assert!(
        !s.contains("{{") && !s.contains("}}") && !s.contains("dropped"),
        "{s}"
    );
    let text_chars = len16(png.text_head.as_deref().unwrap_or_default())
        + len16(png.text_tail.as_deref().unwrap_or_default());
    assert_eq!(
        out.short_summary.as_deref(),
        Some(
            format!(
                "Archived {} chars of history onto {} snapcompact frames (+{} chars as text)",
                thousands(png.total_chars),
                png.frames.len(),
                thousands(text_chars as u64)
            )
            .as_str()
        )
    );
    assert_eq!((out.usage, out.from_extension), (None, false));
}

#[test]
fn a_second_png_compaction_rerenders_from_the_archive_text() {
    let target = gemini();
    let mut b = long_session(100, 200);
    let first = run(&b, &target);
    let png1 = png_of(&first);
    b.commit(first);
    for i in 0..20 {
        b.filler(&format!("second{i}w"), 200);
    }
    b.user("Carry on again.");
    b.assistant("Carrying on again.", &[], None);
    let second = run(&b, &target);
    let png2 = png_of(&second);
    assert!(png2.frames.len() > png1.frames.len());
    // Every frame was printed from the kept text: frames and edges add up to it.
    let text = png2.text.clone().unwrap_or_default();
    let printed: u64 = png2.frames.iter().map(|f| f.chars).sum();
    assert_eq!(png2.total_chars, len16(&text) as u64);
    let edges = len16(png2.text_head.as_deref().unwrap_or_default())
        + len16(png2.text_tail.as_deref().unwrap_or_default());
    assert_eq!(printed + edges as u64, png2.total_chars);
    // The oldest text is the first archive's, the newest the second pass's.
    let head = png2.text_head.clone().unwrap_or_default();
    assert!(png1.text.unwrap_or_default().starts_with(&head));
    assert!(
        text.ends_with("¶user:Carry on again."),
        "{}",
        tail_units(&text, 80)
    );
    assert_eq!((png1.truncated_chars, png2.truncated_chars), (0, 0));
    let preserve = second.preserve_data.clone().unwrap_or_default();
    assert_eq!(preserve.as_object().map(serde_json::Map::len), Some(1));
}

/// The frames print a transcript that cuts long tool output to its head
/// and tail; when the text archive shows a fact from the middle of one,
/// the frames would keep less, and the reader gets the text archive.
#[test]
fn frames_that_would_lose_a_fact_the_text_archive_shows_are_not_written() {
    // Replies of words that say nothing specific: the text archive has
    // room for every fact, and the frames carry it all at less cost.
    let session = |importer: bool| {
        let mut b = long_session(0, 0);
        if importer {
            let mut output = String::new();
            for i in 0..300 {
                let _ = writeln!(output, "    let x{i} = reader.get({i})?;");
            }
            output.push_str("note: the importer must batch 250 rows per insert\n");
            for i in 0..300 {
                let _ = writeln!(output, "    let y{i} = writer.put({i})?;");
            }
            b.one_call(
                "Run the importer.",
                "Running it.",
                ("k1", "bash", json!({"command": "cargo run --bin importer"})),
                &output,
            );
        }
        for i in 0..120 {
            b.user(&format!("Go on with part {i}."));
            b.assistant(
                &"the reply goes on and on about nothing much ".repeat(30),
                &[],
                None,
            );
        }
        b.user("Carry on.");
        b.assistant("Carrying on.", &[], None);
        b
    };
    assert!(run(&session(false), &gemini()).preserve_data.is_some());
    // The transcript on the frames cuts the long output to its head and
    // tail, where the text archive keeps the fact from its middle.
    let out = run(&session(true), &gemini());
    assert!(out.preserve_data.is_none(), "frames were written");
    assert!(
        out.summary
            .contains("note: the importer must batch 250 rows per insert")
    );
    let details = out.details.clone().unwrap_or_default();
    assert_eq!(
        details["snapcompact"]["framesConsidered"]["keepsAll"], false,
        "{details}"
    );
}

/// A frame costs a Claude or an `OpenAI` reader about as many tokens as the
/// text it prints, four times what the text archive spends on it: they get
/// the text archive, which says what the frames would have cost.
#[test]
fn a_reader_whose_frames_cost_more_than_the_text_archive_gets_the_text_archive() {
    let b = long_session(FRAMED_TURNS, 200);
    for target in [claude(), vision("gpt-4o", "openai-responses", "openai")] {
        let out = run(&b, &target);
        assert!(out.preserve_data.is_none(), "{:?}", out.preserve_data);
        let details = out.details.clone().unwrap_or_default();
        let archive = &details["snapcompact"];
        assert!(archive["text"].is_string(), "{details}");
        let considered = archive["framesConsidered"]["tokens"].as_u64().unwrap_or(0);
        let text_tokens = len16(&out.summary).div_ceil(4) as u64;
        assert!(considered >= text_tokens, "{considered} < {text_tokens}");
    }
    // A provider that caps frames below the pages the history needs: the
    // frames would drop the oldest pages and keep less than the text.
    let out = run(
        &b,
        &vision("gemini-2.5-pro", "google-generative-ai", "mystery-cloud"),
    );
    assert!(out.preserve_data.is_none());
}

#[test]
fn a_png_compaction_continues_a_text_archive_or_folds_in_a_summary() {
    let b = long_session(FRAMED_TURNS, 200);
    let mut prep = b.prepare(1);
    prep.previous_details = Some(
        json!({"readFiles": [], "snapcompact": {"text": "¶user:EARLIER\n\nTEXT ARCHIVE", "truncatedChars": 5, "version": 1}}),
    );
    let out = compaction(&prep, &gemini());
    let png = png_of(&out);
    let text = png.text_head.unwrap_or_default();
    assert!(
        text.starts_with("¶user:EARLIER█TEXT ARCHIVE█¶user:Port the frame planner"),
        "{text}"
    );
    assert_eq!(png.truncated_chars, 5);
    assert!(!out.summary.contains("digest"));

    prep.previous_details = None;
    prep.previous_summary = Some("## Goal\nPort the planner.".into());
    let out = compaction(&prep, &gemini());
    let text = png_of(&out).text_head.unwrap_or_default();
    assert!(
        text.starts_with(
            "[Summary of earlier history] ## Goal█Port the planner. [Recent conversation] ¶user:"
        ),
        "{text}"
    );
    assert!(out.summary.contains("condensed digest"));
}

/// A compaction for a reader of images shrinks the context, short history
/// or long, on frames or as text.
#[test]
fn a_png_compaction_leaves_a_smaller_context_than_it_found() {
    for (turns, words) in [(40, 200), (60, 200), (150, 250), (400, 250)] {
        let mut b = long_session(turns, words);
        let tokens = |b: &Builder| {
            musepi_snapcompact::context_tokens(
                &b.session,
                b.session.leaf_index(),
                musepi_context_builder::Tokenizer::Heuristic,
            )
        };
        let before = tokens(&b);
        let out = run(&b, &gemini());
        let imaged = out
            .preserve_data
            .as_ref()
            .and_then(|p| p.get("snapcompact"))
            .is_some();
        b.commit(out);
        let after = tokens(&b);
        assert!(
            after < before,
            "{turns} turns of {words} words (imaged: {imaged}): {before} -> {after} tokens"
        );
    }
}

#[test]
fn session_archives_rebuild_the_frames_after_the_summary() {
    let mut b = long_session(FRAMED_TURNS, 200);
    let out = run(&b, &gemini());
    let frames = png_of(&out).frames.len();
    let summary = out.summary.clone();
    let at = b.commit(out);
    b.user("What next?");
    let session = &b.session;
    let archives = SessionArchives::new(session);
    let options = ConvertOptions {
        archive: Some(&archives),
        ..ConvertOptions::default()
    };
    let messages = convert_to_llm(&build_context(session).messages, &options);
    let Some(LlmMessage::User { content }) = messages.first() else {
        panic!("{messages:?}");
    };
    assert!(matches!(&content[0], ContentBlock::Text { text, .. } if text.as_str() == summary));
    let images = content
        .iter()
        .filter(|c| matches!(c, ContentBlock::Image { .. }))
        .count();
    assert_eq!(images, frames);
    assert!(
        matches!(&content[1], ContentBlock::Text { text, .. } if text.starts_with("¶user:Port the frame planner"))
    );
    let index = session.index_of(at.as_str()).unwrap_or_default();
    assert_eq!(
        archives.with_budget(0).blocks(index).map(|b| b
            .iter()
            .filter(|c| matches!(c, ContentBlock::Image { .. }))
            .count()),
        Some(0)
    );
    assert_eq!(archives.blocks(index + 1), None);
}

#[test]
fn a_legacy_crash_risk_archive_in_a_session_sends_no_image() {
    let mut b = long_session(0, 0);
    let first = b.session.entries()[0].id.clone();
    let frames: Vec<Value> = (0..16)
        .map(|_| json!({"data": "AAAA", "mimeType": "image/png", "cols": 515, "rows": 322, "chars": 165_830}))
        .collect();
    let at = b.push(EntryBody::Compaction(Compaction {
        summary: Text::new("legacy"),
        first_kept_entry_id: Some(first),
        preserve_data: Some(RawJson::from_value(
            &json!({"snapcompact": {"frames": frames, "textHead": "old head"}}),
        )),
        ..Compaction::default()
    }));
    let index = b.session.index_of(at.as_str()).unwrap_or_default();
    let blocks = SessionArchives::new(&b.session)
        .blocks(index)
        .unwrap_or_default();
    assert!(!blocks.is_empty());
    assert!(
        blocks
            .iter()
            .all(|c| !matches!(c, ContentBlock::Image { .. }))
    );
    assert!(matches!(&blocks[0], ContentBlock::Text { text, .. } if text.starts_with("old head")));
}

/// Facts planted early and at the newest edge of the archived history.
const OLD_FACTS: [&str; 2] = ["crates/legacy/old_path.rs", "error: OLD_FAILURE_31337"];
const NEW_FACTS: [&str; 4] = [
    "crates/engine/src/planner.rs",
    "error[E0502]: cannot borrow `frames` as mutable",
    "exactly 4096 frames",
    "never touch the vendored/ directory",
];

#[test]
fn the_newest_edge_keeps_every_planted_fact_verbatim() {
    let mut b = Builder::new();
    b.user(&format!(
        "Start with {} which fails with {}.",
        OLD_FACTS[0], OLD_FACTS[1]
    ));
    for i in 0..160 {
        b.filler(&format!("r{i}w"), 150);
    }
    b.user(&format!(
        "Constraint: {}. The bug is in {}.",
        NEW_FACTS[3], NEW_FACTS[0]
    ));
    b.assistant(
        &format!(
            "The compiler says {} and the test wants {}.",
            NEW_FACTS[1], NEW_FACTS[2]
        ),
        &[],
        None,
    );
    b.user("Carry on.");
    b.assistant("Carrying on.", &[], None);
    let mut tight_text = SnapSettings::default();
    tight_text.reserve_tokens = 100;
    let text = compact_preparation(&b.prepare(1), &SnapTarget::default(), &tight_text)
        .unwrap_or_else(|e| panic!("{e}"));
    let details = text.details.clone().unwrap_or_default();
    let kept = details["snapcompact"]["text"].as_str().unwrap_or_default();
    let png = png_of(&run(&b, &gemini()));
    let tail = png.text_tail.unwrap_or_default();
    for fact in NEW_FACTS {
        assert!(kept.contains(fact), "text archive lost {fact} in {kept}");
        assert!(tail.contains(fact), "PNG tail lost {fact}");
    }
    // The text budget was tight enough to drop the middle; the frames
    // show every page.
    assert!(details["snapcompact"]["truncatedChars"].as_u64() > Some(0));
    assert_eq!(png.truncated_chars, 0);
    assert!(!png.frames.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn png_archives_cost_less_than_the_text_archive_show_every_page_and_keep_both_edges(
        turns in 5usize..180,
        words in 50usize..250,
        max_frames in 1usize..18,
        model in prop::sample::select(vec![
            ("claude-sonnet-4-5", "anthropic-messages"),
            ("gpt-4o", "openai-responses"),
            ("gemini-2.5-pro", "google-generative-ai"),
            ("glm-4.6", ""),
        ]),
    ) {
        let (model, api) = model;
        let b = long_session(turns, words);
        let prep = b.prepare(1);
        let mut target = vision(model, api, "google");
        target.max_frames = Some(max_frames);
        let source = {
            let input = pass_input(&prep);
            normalize(&serialize(Flavor::Archive, &input.messages, &input.useless, &SerializeOptions::default()))
        };
        let out = compact_preparation(&prep, &target, &SnapSettings::default()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let imaged = out.preserve_data.as_ref().and_then(|p| p.get("snapcompact")).is_some();
        if !imaged {
            let details = out.details.clone().unwrap_or_default();
            prop_assert!(details["snapcompact"]["text"].is_string(), "{details}");
            return Ok(());
        }
        let png = png_of(&out);
        // Every page shown, for fewer tokens than the text archive.
        prop_assert_eq!(png.truncated_chars, 0);
        let text = compact_preparation(&prep, &SnapTarget::default(), &SnapSettings::default()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let png_tokens = (len16(&out.summary) as u64).div_ceil(4) + archive_tokens(&png, Some(api));
        prop_assert!(png_tokens < (len16(&text.summary) as u64).div_ceil(4), "{png_tokens}");
        prop_assert!(png.frames.len() <= max_frames);
        prop_assert!(png.frames.iter().all(|f| f.data.len() <= FRAME_DATA_BYTES_ESTIMATE));
        let sent: usize = history_blocks(&png, FRAME_DATA_BYTES_BUDGET)
            .iter()
            .map(|c| match c { ContentBlock::Image { data, .. } => data.len(), _ => 0 })
            .sum();
        prop_assert!(sent <= FRAME_DATA_BYTES_BUDGET);
        let edge = (resolve_shape(api, model, None).map_err(|e| TestCaseError::fail(e.to_string()))?.shape.geometry().capacity as usize).min(EDGE_CHARS);
        let head = png.text_head.clone().unwrap_or_default();
        let tail = png.text_tail.clone().unwrap_or_default();
        {
            // An edge ends at a line end or a space when one is near the cut.
            let full_head = head_units(&source, edge);
            let full_tail = tail_units(&source, edge);
            prop_assert!(source.starts_with(head.as_str()) && full_head.starts_with(head.as_str()));
            prop_assert!(source.ends_with(tail.as_str()) && full_tail.ends_with(tail.as_str()));
            let word_end = |s: &str| s.ends_with(' ') || s.ends_with(NEWLINE_GLYPH);
            prop_assert!(head == full_head || word_end(&head));
            prop_assert!(tail == full_tail || word_end(&source[..source.len() - tail.len()]));
            prop_assert!(3 * len16(&head) >= edge && 3 * len16(&tail) >= edge);
        }
    }
}
