//! Writes the PNG frames that compacting a session at its leaf would give,
//! without touching the session:
//!
//! ```text
//! cargo run -p musepi-hooks --example frames -- SESSION MODEL OUT_DIR [KEEP_RECENT_TOKENS]
//! ```
//!
//! `MODEL` picks the measured shape (`claude-sonnet-4-5`, `gpt-5`,
//! `gemini-2.5-pro`, …). The frames land in `OUT_DIR/frame-001.png` …, the
//! text edges in `text-head.txt` and `text-tail.txt`, the summary in
//! `summary.md`. With `text` as `MODEL` it writes the text archive's
//! summary alone, as a reader without images would get it.

use std::error::Error;
use std::path::PathBuf;

use musepi_compaction::{CompactionSettings, prepare};
use musepi_hooks::snapcompact::{SnapSettings, SnapTarget, compact_preparation};
use musepi_session_model::{SequentialIds, load_file};
use musepi_snapcompact::base64_decode;
use musepi_snapcompact::png::PngArchive;
use musepi_snapcompact::png::plain_text;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [session, model, out, rest @ ..] = args.as_slice() else {
        return Err("usage: frames SESSION MODEL OUT_DIR [KEEP_RECENT_TOKENS]".into());
    };
    let keep: u64 = rest.first().map_or(Ok(20_000), |k| k.parse())?;
    let (session, _) = load_file(std::path::Path::new(session), &mut SequentialIds::new())?;
    let mut settings = CompactionSettings::default();
    settings.keep_recent_tokens = keep;
    settings.adapt_keep_recent = false;
    let prep = prepare(&session, session.leaf_index(), &settings)?;
    let mut target = SnapTarget::model(model.clone());
    target.vision = model != "text";
    let result = compact_preparation(&prep, &target, &SnapSettings::default())?;
    let out = PathBuf::from(out);
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("summary.md"), &result.summary)?;
    if !target.vision {
        println!(
            "{}: {}",
            out.display(),
            result.short_summary.unwrap_or_default()
        );
        return Ok(());
    }
    let archive = result
        .preserve_data
        .as_ref()
        .and_then(|p| p.get("snapcompact"))
        .and_then(PngArchive::from_value)
        .ok_or("the compaction holds no PNG archive")?;
    for (i, frame) in archive.frames.iter().enumerate() {
        let png = base64_decode(&frame.data).ok_or("a frame is not base64")?;
        std::fs::write(out.join(format!("frame-{:03}.png", i + 1)), png)?;
    }
    for (name, text) in [
        ("text-head.txt", &archive.text_head),
        ("text-tail.txt", &archive.text_tail),
    ] {
        if let Some(text) = text {
            std::fs::write(out.join(name), plain_text(text))?;
        }
    }
    println!(
        "{}: {}",
        out.display(),
        result.short_summary.unwrap_or_default()
    );
    Ok(())
}
