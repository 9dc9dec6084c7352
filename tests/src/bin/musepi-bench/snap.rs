//! The snapcompact cases: rendering throughput and the compaction pass over
//! the synthetic session (how much an archive keeps is measured by
//! `musepi-bench retention`).

use std::path::Path;
use std::time::Instant;

use musepi_compaction::{CompactionResult, CompactionSettings, prepare};
use musepi_context_builder::{
    ContextMessage, ConvertOptions, build_context_at, convert_to_llm, estimate_chars,
};
use musepi_hooks::snapcompact::{SnapSettings, SnapTarget, compact_preparation};
use musepi_session_model::json::utf16_ceil_byte_from_end;
use musepi_session_model::{EntryBody, Journal, SequentialIds, Session};
use musepi_snapcompact::SerializeOptions;
use musepi_snapcompact::png::{Flavor, serialize, useless_call_ids};
use musepi_snapcompact::png::{PngArchive, plan_archive, render_frames, render_frames_on};
use musepi_snapcompact::{Shape, normalize};
use serde_json::{Value, json};

use crate::BoxError;

/// Characters of the newest history the render case prints.
const RENDER_CHARS: usize = 4_000_000;

/// Rendering throughput: the newest 4,000,000 characters of the path's
/// archive text (serialized and normalized) printed on `8on22-bw` frames
/// at 1568 px, once on one core and once on every core (the frames must be
/// the same); the detail reports characters per second of the paging and
/// printing alone, both ways. The case's time also holds opening the file
/// and serializing.
pub(crate) fn render(path: &Path) -> Result<Value, BoxError> {
    let journal = Journal::open(path, &mut SequentialIds::new())?;
    let session = journal.session();
    let context = build_context_at(session, working_leaf(session));
    // The newest messages, about RENDER_CHARS characters of them.
    let mut from = context.messages.len();
    let mut chars = 0u64;
    while from > 0 && chars < 2 * RENDER_CHARS as u64 {
        from -= 1;
        chars += 4 * context.messages[from].tokens();
    }
    let newest: &[ContextMessage<'_>] = &context.messages[from..];
    let messages = convert_to_llm(newest, &ConvertOptions::for_summary());
    let useless = useless_call_ids(newest.iter().map(|m| m.message.as_ref()));
    let text = normalize(&serialize(
        Flavor::Archive,
        &messages,
        &useless,
        &SerializeOptions::default(),
    ));
    let text = &text[utf16_ceil_byte_from_end(&text, RENDER_CHARS)..];
    let shape = Shape::by_name("8on22-bw").ok_or("no 8on22-bw shape")?;
    let start = Instant::now();
    let layout = plan_archive(text, &shape, None, usize::MAX)?;
    let planned = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let one_core = render_frames_on(&layout, None, 1)?;
    let one_core_seconds = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let frames = render_frames(&layout, None)?;
    let all_cores_seconds = start.elapsed().as_secs_f64();
    if frames != one_core {
        return Err("frames printed on every core differ from one core's".into());
    }
    let printed: u64 = frames.iter().map(|f| f.chars).sum();
    let base64: usize = frames.iter().map(|f| f.data.len()).sum();
    let per_second = |seconds: f64| (printed as f64 / seconds).round();
    Ok(json!({
        "shape": shape.name,
        "frames": frames.len(),
        "printedChars": printed,
        "base64Bytes": base64,
        "planSeconds": planned,
        "oneCoreSeconds": one_core_seconds,
        "allCoresSeconds": all_cores_seconds,
        "threads": std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        "charsPerSecondOneCore": per_second(planned + one_core_seconds),
        "charsPerSecond": per_second(planned + all_cores_seconds),
    }))
}

/// The leaf, or its parent when the leaf is a compaction (the 200 MB
/// synthetic session ends with one): the last point with history to
/// compact.
pub(crate) fn working_leaf(session: &Session) -> Option<usize> {
    let leaf = session.leaf_index()?;
    match session.entries()[leaf].body {
        EntryBody::Compaction(_) => session.parent_index(leaf),
        _ => Some(leaf),
    }
}

fn compact_at_leaf(path: &Path, target: &SnapTarget) -> Result<Value, BoxError> {
    let journal = Journal::open(path, &mut SequentialIds::new())?;
    let session = journal.session();
    let prep = prepare(
        session,
        working_leaf(session),
        &CompactionSettings::default(),
    )?;
    let summarized = prep.messages_to_summarize.len() + prep.turn_prefix_messages.len();
    // The characters of the history the pass reads, as token estimates count them.
    let chars: usize = prep
        .messages_to_summarize
        .iter()
        .chain(&prep.turn_prefix_messages)
        .map(|m| estimate_chars(m.message.as_ref()))
        .sum();
    let start = Instant::now();
    let result = compact_preparation(&prep, target, &SnapSettings::default())?;
    let seconds = start.elapsed().as_secs_f64();
    let png = png_of(&result);
    Ok(json!({
        "summarizedMessages": summarized,
        "summarizedChars": chars,
        "passSeconds": seconds,
        "charsPerSecond": (chars as f64 / seconds).round(),
        "summaryChars": result.summary.len(),
        "shortSummary": result.short_summary,
        "frames": png.as_ref().map_or(0, |p| p.frames.len()),
        "frameBase64Bytes": png.as_ref().map_or(0, |p| p.frames.iter().map(|f| f.data.len()).sum::<usize>()),
    }))
}

/// The text-frame compaction at the (working) leaf: open, prepare, compact.
pub(crate) fn compact_text(path: &Path) -> Result<Value, BoxError> {
    compact_at_leaf(path, &SnapTarget::default())
}

/// The compaction at the (working) leaf for a reader of images (Gemini):
/// open, prepare, the text archive and the PNG archive's plan priced
/// against it (serialize, plan, and print every frame when the frames cost
/// less).
pub(crate) fn compact_png(path: &Path) -> Result<Value, BoxError> {
    compact_at_leaf(path, &musepi_tests::gemini_reader())
}

fn png_of(result: &CompactionResult) -> Option<PngArchive> {
    result
        .preserve_data
        .as_ref()
        .and_then(|p| p.get("snapcompact"))
        .and_then(PngArchive::from_value)
}
