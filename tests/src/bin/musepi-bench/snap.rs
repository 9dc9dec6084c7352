//! The snapcompact cases: rendering throughput, the compaction pass over
//! the synthetic session, and how many planted facts an archive keeps.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use musepi_compaction::{CompactionResult, CompactionSettings, Preparation, prepare};
use musepi_context_builder::{ContextMessage, ConvertOptions, build_context_at, convert_to_llm};
use musepi_session_model::json::utf16_ceil_byte_from_end;
use musepi_session_model::{EntryBody, Journal, SequentialIds, Session, load_bytes};
use musepi_snapcompact::png_archive::{PngArchive, plan_archive, render_frames};
use musepi_snapcompact::serialize::{SerializeOptions, serialize_archive, useless_call_ids};
use musepi_snapcompact::{Shape, SnapSettings, SnapTarget, compact_preparation, normalize};
use serde_json::{Map, Value, json};

use crate::BoxError;

/// Characters of the newest history the render case prints.
const RENDER_CHARS: usize = 4_000_000;

/// Rendering throughput: the newest 4,000,000 characters of the path's
/// archive text (serialized and normalized) printed on `8on22-bw` frames
/// at 1568 px; the detail reports characters per second of the printing
/// alone. The case's time also holds opening the file and serializing.
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
    let text = normalize(&serialize_archive(
        &messages,
        &useless,
        &SerializeOptions::default(),
    ));
    let text = &text[utf16_ceil_byte_from_end(&text, RENDER_CHARS)..];
    let shape = Shape::by_name("8on22-bw").ok_or("no 8on22-bw shape")?;
    let start = Instant::now();
    let layout = plan_archive(text, &shape, None, usize::MAX)?;
    let frames = render_frames(&layout, None)?;
    let seconds = start.elapsed().as_secs_f64();
    let printed: u64 = frames.iter().map(|f| f.chars).sum();
    let base64: usize = frames.iter().map(|f| f.data.len()).sum();
    Ok(json!({
        "shape": shape.name,
        "frames": frames.len(),
        "printedChars": printed,
        "base64Bytes": base64,
        "renderSeconds": seconds,
        "charsPerSecond": (printed as f64 / seconds).round(),
        "framesPerSecond": (frames.len() as f64 / seconds * 10.0).round() / 10.0,
    }))
}

/// The leaf, or its parent when the leaf is a compaction (the 200 MB
/// synthetic session ends with one): the last point with history to
/// compact.
fn working_leaf(session: &Session) -> Option<usize> {
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
    let result = compact_preparation(&prep, target, &SnapSettings::default())?;
    let png = png_of(&result);
    Ok(json!({
        "summarizedMessages": summarized,
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

/// The PNG-frame compaction at the (working) leaf for a Claude reader: open,
/// prepare, compact (serialize, plan, print every frame).
pub(crate) fn compact_png(path: &Path) -> Result<Value, BoxError> {
    compact_at_leaf(path, &claude(None))
}

fn claude(max_frames: Option<usize>) -> SnapTarget {
    SnapTarget {
        api: Some("anthropic-messages".into()),
        model_id: Some("claude-sonnet-4-5".into()),
        provider: Some("anthropic".into()),
        vision: true,
        max_frames,
        ..SnapTarget::default()
    }
}

fn png_of(result: &CompactionResult) -> Option<PngArchive> {
    result
        .preserve_data
        .as_ref()
        .and_then(|p| p.get("snapcompact"))
        .and_then(PngArchive::from_value)
}

/// Where facts are planted, oldest first, as a share of the history.
const SPOTS: [(&str, f64); 5] = [
    ("oldest", 0.0),
    ("early", 0.25),
    ("middle", 0.5),
    ("late", 0.9),
    ("newest", 1.0),
];
/// Turns of the retention session.
const RETENTION_TURNS: usize = 400;

/// The four facts planted at a spot: a file path, an error string, a
/// number and a user constraint.
fn facts(spot: &str, n: usize) -> [String; 4] {
    [
        format!("crates/{spot}/src/module_{n}.rs"),
        format!("error[E0{n:03}]: {spot} borrow of `frames` conflicts"),
        format!("{spot} budget is {} tokens", 7919 * (n + 3)),
        format!("never edit the {spot}_vendored/ folder"),
    ]
}

/// A long synthetic session with facts planted at [`SPOTS`]: each turn a
/// request, a bash call with a long result and an answer; the planted
/// turns say their facts in the request and the answer. The last turn is
/// kept.
fn retention_session() -> Result<Session, BoxError> {
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": "retention", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/repo"}),
    ];
    let mut parent = Value::Null;
    let mut push = |lines: &mut Vec<Value>, message: Value| {
        let id = format!("{:08x}", lines.len());
        lines.push(json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z", "message": message}));
        parent = Value::String(id);
    };
    let planted = |turn: usize| {
        SPOTS
            .iter()
            .enumerate()
            .find(|(_, (_, at))| ((RETENTION_TURNS - 1) as f64 * at).round() as usize == turn)
    };
    for turn in 0..RETENTION_TURNS {
        let (request, answer) = match planted(turn) {
            Some((n, (spot, _))) => {
                let [path, error, number, constraint] = facts(spot, n);
                (
                    format!("Constraint: {constraint}. Look at {path}; the {number}."),
                    format!("The build of {path} fails with {error}; keeping the {number}."),
                )
            }
            None => (
                format!("Step {turn}: refactor the planner module and run the tests again."),
                format!("Step {turn} is done; the planner tests pass."),
            ),
        };
        push(
            &mut lines,
            json!({"role": "user", "content": request, "timestamp": 1}),
        );
        let call = format!("c{turn}");
        push(
            &mut lines,
            json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Running the tests for step {turn}.")},
            {"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": "cargo test -p planner"}}
        ], "stopReason": "toolUse", "timestamp": 1}),
        );
        let mut output = String::new();
        for i in 0..60 {
            let _ = writeln!(output, "test planner::case_{turn}_{i} ... ok");
        }
        push(
            &mut lines,
            json!({"role": "toolResult", "toolCallId": call, "toolName": "bash",
            "content": [{"type": "text", "text": output}], "isError": false, "timestamp": 1}),
        );
        push(
            &mut lines,
            json!({"role": "assistant", "content": [{"type": "text", "text": answer}], "stopReason": "stop", "timestamp": 1}),
        );
    }
    push(
        &mut lines,
        json!({"role": "user", "content": "Carry on.", "timestamp": 1}),
    );
    push(
        &mut lines,
        json!({"role": "assistant", "content": [{"type": "text", "text": "Carrying on."}], "stopReason": "stop", "timestamp": 1}),
    );
    let mut text = String::new();
    for line in &lines {
        let _ = writeln!(text, "{line}");
    }
    Ok(load_bytes(
        Path::new("retention.jsonl"),
        text.as_bytes(),
        &mut SequentialIds::new(),
    )?)
}

fn retention_prep(session: &Session) -> Result<Preparation<'_>, BoxError> {
    let settings = CompactionSettings {
        keep_recent_tokens: 1,
        adapt_keep_recent: false,
        ..CompactionSettings::default()
    };
    Ok(prepare(session, session.leaf_index(), &settings)?)
}

/// Which planted facts an archive text keeps verbatim, by spot.
fn survival(text: &str) -> Map<String, Value> {
    SPOTS
        .iter()
        .enumerate()
        .map(|(n, (spot, _))| {
            let kept = facts(spot, n)
                .iter()
                .filter(|f| text.contains(f.as_str()))
                .count();
            ((*spot).to_owned(), json!(format!("{kept}/4")))
        })
        .collect()
}

/// Retention: the synthetic session compacted as text at several reserves
/// and as PNG frames at several frame caps; for each, how many of the four
/// facts planted at each spot survive verbatim in the archive text (for
/// PNG, the text the frames and edges print). The session file is not
/// read: the case builds its own session.
pub(crate) fn retention(_path: &Path) -> Result<Value, BoxError> {
    let session = retention_session()?;
    let prep = retention_prep(&session)?;
    let mut configs = Map::new();
    let mut newest_kept = true;
    for reserve in [4096u64, 16_384, 65_536] {
        let settings = SnapSettings {
            reserve_tokens: reserve,
            ..SnapSettings::default()
        };
        let result = compact_preparation(&prep, &SnapTarget::default(), &settings)?;
        let details = result.details.unwrap_or_default();
        let text = details["snapcompact"]["text"].as_str().unwrap_or_default();
        let kept = survival(text);
        newest_kept &= kept["newest"] == "4/4";
        let mut row = kept;
        row.insert("archiveChars".into(), json!(text.encode_utf16().count()));
        configs.insert(format!("text reserve={reserve}"), Value::Object(row));
    }
    for frames in [1usize, 4, 16, 80] {
        let result = compact_preparation(&prep, &claude(Some(frames)), &SnapSettings::default())?;
        let png = png_of(&result).ok_or("no PNG archive")?;
        let text = png.text.clone().unwrap_or_default();
        let kept = survival(&text);
        newest_kept &= kept["newest"] == "4/4";
        let mut row = kept;
        row.insert("frames".into(), json!(png.frames.len()));
        row.insert("archiveChars".into(), json!(png.total_chars));
        configs.insert(format!("png maxFrames={frames}"), Value::Object(row));
    }
    Ok(json!({
        "turns": RETENTION_TURNS,
        "sourceChars": source_chars(&prep),
        "newestEdgeAllSurvive": newest_kept,
        "survival": configs,
    }))
}

/// UTF-16 length of the normalized archive serialization of `prep`.
fn source_chars(prep: &Preparation<'_>) -> usize {
    let all: Vec<ContextMessage<'_>> = prep
        .messages_to_summarize
        .iter()
        .chain(&prep.turn_prefix_messages)
        .cloned()
        .collect();
    let messages = convert_to_llm(&all, &ConvertOptions::for_summary());
    let useless = useless_call_ids(all.iter().map(|m| m.message.as_ref()));
    normalize(&serialize_archive(
        &messages,
        &useless,
        &SerializeOptions::default(),
    ))
    .encode_utf16()
    .count()
}
