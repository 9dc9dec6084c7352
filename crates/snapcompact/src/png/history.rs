//! Rebuilding the context from a PNG archive: the text edges
//! as plain text around the frames, newest frames first within the byte
//! budget, with delimiter lines saying what is where.

use musepi_session_model::ContentBlock;

use crate::png::data_url::{DataUrlMode, elide_data_urls};
use crate::png::normalize::NEWLINE_GLYPH;
use crate::png::png_archive::{ArchiveFrame, PngArchive};
use crate::png::serialize::strip_ink_toggles;

/// Archived text as plain text: ink toggles removed, the newline glyph
/// back to a line break, data URLs elided.
pub fn plain_text(archived: &str) -> String {
    let stripped = strip_ink_toggles(archived);
    let lines = stripped.replace(NEWLINE_GLYPH, "\n");
    elide_data_urls(&lines, DataUrlMode::Archived).into_owned()
}

/// The archive's whole source as plain text, for a later LLM summary that
/// takes over from it: `text`, or head and tail
/// joined by a line break.
pub fn archive_plain_source(archive: &PngArchive) -> String {
    plain_text(&archive.source_text())
}

/// Appends `l` to `text` on a line of its own.
fn line(text: &mut String, l: &str) {
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(l);
}

/// A delimiter line: `-------------- <words> --------------`.
fn delimiter(words: &str) -> String {
    format!("-------------- {words} --------------")
}

fn pages(n: usize) -> String {
    if n == 1 {
        "1 archived page image".to_owned()
    } else {
        format!("{n} archived page images")
    }
}

/// `1.4 MB`, `420 KB`.
fn size(bytes: usize) -> String {
    const MB: usize = 1024 * 1024;
    if bytes >= MB {
        format!("{:.1} MB", bytes as f64 / MB as f64)
    } else {
        format!("{} KB", bytes.div_ceil(1024))
    }
}

fn omitted_notice(count: usize, budget_bytes: usize) -> String {
    let why = if budget_bytes > 0 {
        format!(
            " ({} over the image budget of this request)",
            size(budget_bytes)
        )
    } else {
        String::new()
    };
    delimiter(&format!(
        "{} of the middle omitted here{why}; the summary and the text before and after remain",
        pages(count)
    ))
}

/// The blocks that follow the summary text in the rebuilt context
/// (`historyBlocks`): the head as text, the frames that fit
/// `max_frame_data_bytes` of base64 (newest kept first; the oldest go), and
/// the tail as text, with delimiter lines between.
pub fn history_blocks(archive: &PngArchive, max_frame_data_bytes: usize) -> Vec<ContentBlock> {
    let frames = &archive.frames;
    // Frames up to and including `cutoff` are omitted for the byte budget.
    let mut left = max_frame_data_bytes;
    let mut cutoff: Option<usize> = None;
    for (i, frame) in frames.iter().enumerate().rev() {
        if !frame.is_available() {
            continue;
        }
        if frame.data.len() > left {
            cutoff = Some(i);
            break;
        }
        left -= frame.data.len();
    }
    let first_shown = cutoff.map_or(0, |c| c + 1);
    let omitted = &frames[..first_shown];
    let shown = &frames[first_shown..];
    let omitted_bytes: usize = omitted
        .iter()
        .filter(|f| f.is_available())
        .map(|f| f.data.len())
        .sum();
    let images = shown.iter().filter(|f| f.is_available()).count();

    let head = archive
        .text_head
        .as_deref()
        .or(if frames.is_empty() && archive.text_tail.is_none() {
            archive.text.as_deref()
        } else {
            None
        })
        .map(plain_text)
        .unwrap_or_default();
    let mut blocks: Vec<ContentBlock> = Vec::new();
    let mut text = head;
    if images > 0 {
        if !omitted.is_empty() {
            line(&mut text, &omitted_notice(omitted.len(), omitted_bytes));
        }
        line(
            &mut text,
            &delimiter(&format!(
                "the middle of the history follows as {}, oldest first",
                pages(images)
            )),
        );
        blocks.push(ContentBlock::text(text));
        push_frames(&mut blocks, shown);
    } else {
        if !frames.is_empty() {
            line(&mut text, &omitted_notice(frames.len(), omitted_bytes));
        }
        if !text.is_empty() {
            blocks.push(ContentBlock::text(text));
        }
    }

    let tail = archive
        .text_tail
        .as_deref()
        .map(plain_text)
        .unwrap_or_default();
    let tail_delimiter = if images > 0 {
        Some(delimiter(
            "the imaged middle is above; the newest history follows as text",
        ))
    } else if archive.truncated_chars > 0 || !frames.is_empty() {
        Some(delimiter(
            "older middle history was omitted above; the newest history follows as text",
        ))
    } else {
        None
    };
    let piece: Vec<String> = tail_delimiter
        .into_iter()
        .chain((!tail.is_empty()).then_some(tail))
        .collect();
    if !piece.is_empty() {
        let piece = piece.join("\n");
        match blocks.last_mut() {
            Some(ContentBlock::Text { text, .. }) => {
                let mut merged = text.as_str().to_owned();
                merged.push('\n');
                merged.push_str(&piece);
                *text = merged.into();
            }
            _ => blocks.push(ContentBlock::text(piece)),
        }
    }
    blocks
}

/// Image blocks for available frames; each run of unavailable frames
/// becomes one delimiter line.
fn push_frames(blocks: &mut Vec<ContentBlock>, frames: &[ArchiveFrame]) {
    let mut gap = 0usize;
    let flush_gap = |blocks: &mut Vec<ContentBlock>, gap: &mut usize| {
        if *gap > 0 {
            blocks.push(ContentBlock::text(delimiter(&format!(
                "{} unavailable here",
                pages(*gap)
            ))));
            *gap = 0;
        }
    };
    for frame in frames {
        if frame.is_available() {
            flush_gap(blocks, &mut gap);
            blocks.push(ContentBlock::Image {
                data: frame.data.clone(),
                mime_type: frame.mime_type.clone(),
                detail: frame.detail.clone(),
            });
        } else {
            gap += 1;
        }
    }
    flush_gap(blocks, &mut gap);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn frame(data: &str) -> ArchiveFrame {
        ArchiveFrame::from_value(&json!({"data": data, "mimeType": "image/png", "cols": 1, "rows": 1, "chars": 1, "detail": "original"})).unwrap()
    }

    fn archive(frames: Vec<ArchiveFrame>, truncated: u64) -> PngArchive {
        PngArchive {
            frames,
            total_chars: 0,
            truncated_chars: truncated,
            text: Some("HEAD█one\u{E}dim\u{F}TAIL".into()),
            text_head: Some("HEAD█one".into()),
            text_tail: Some("\u{E}dim\u{F}TAIL".into()),
        }
    }

    /// Text blocks as their text, images as `<img:data>`.
    fn show(blocks: &[ContentBlock]) -> Vec<String> {
        blocks
            .iter()
            .map(|b| match b {
                ContentBlock::Text { text, .. } => text.to_string(),
                ContentBlock::Image { data, detail, .. } => {
                    format!("<img:{data}:{}>", detail.as_deref().unwrap_or("-"))
                }
                _ => "?".into(),
            })
            .collect()
    }

    #[test]
    fn frames_that_fit_sit_between_the_text_edges() {
        let a = archive(vec![frame("AAAA"), frame("BBBB")], 0);
        assert_eq!(
            show(&history_blocks(&a, 3_000_000)),
            [
                "HEAD\none\n-------------- the middle of the history follows as 2 archived page images, oldest first --------------",
                "<img:AAAA:original>",
                "<img:BBBB:original>",
                "-------------- the imaged middle is above; the newest history follows as text --------------\ndimTAIL",
            ]
        );
    }

    #[test]
    fn the_oldest_frames_go_first_when_over_the_byte_budget() {
        let a = archive(
            vec![frame(&"A".repeat(2000)), frame("BBBB"), frame("CCCC")],
            0,
        );
        let blocks = show(&history_blocks(&a, 10));
        assert_eq!(blocks.len(), 4);
        assert_eq!(
            blocks[0],
            "HEAD\none\n-------------- 1 archived page image of the middle omitted here (2 KB over the image budget of this request); \
             the summary and the text before and after remain --------------\n\
             -------------- the middle of the history follows as 2 archived page images, oldest first --------------"
        );
        assert_eq!(blocks[1..3], ["<img:BBBB:original>", "<img:CCCC:original>"]);
    }

    #[test]
    fn when_no_frame_fits_the_notice_and_tail_share_one_text_block() {
        let a = archive(vec![frame("AAAA"), frame("BBBB")], 0);
        assert_eq!(
            show(&history_blocks(&a, 3)),
            [
                "HEAD\none\n-------------- 2 archived page images of the middle omitted here (1 KB over the image budget of this request); \
              the summary and the text before and after remain --------------\n\
              -------------- older middle history was omitted above; the newest history follows as text --------------\ndimTAIL"
            ]
        );
    }

    #[test]
    fn unavailable_frames_collapse_into_one_gap_line() {
        let a = archive(
            vec![
                frame("AAAA"),
                frame("blob:sha256:1"),
                frame("blob:sha256:2"),
                frame("DDDD"),
            ],
            0,
        );
        let blocks = show(&history_blocks(&a, 3_000_000));
        assert_eq!(
            blocks[1..4],
            [
                "<img:AAAA:original>",
                "-------------- 2 archived page images unavailable here --------------",
                "<img:DDDD:original>"
            ]
        );
    }

    #[test]
    fn a_text_only_archive_is_one_plain_block() {
        let text_only = PngArchive {
            text: Some("only█text".into()),
            ..PngArchive::default()
        };
        assert_eq!(show(&history_blocks(&text_only, 100)), ["only\ntext"]);
        let truncated = PngArchive {
            truncated_chars: 5,
            ..archive(Vec::new(), 5)
        };
        assert_eq!(
            show(&history_blocks(&truncated, 100)),
            [
                "HEAD\none\n-------------- older middle history was omitted above; the newest history follows as text --------------\ndimTAIL"
            ]
        );
    }

    #[test]
    fn plain_text_undoes_the_printing_conventions() {
        assert_eq!(
            plain_text("a█b\u{E}c\u{F} data:image/png;base64,AAAA"),
            "a\nbc [data URL omitted: image/png, 4 base64 chars]"
        );
        let a = archive(Vec::new(), 0);
        assert_eq!(archive_plain_source(&a), "HEAD\nonedimTAIL");
        let edges = PngArchive {
            text: None,
            ..archive(Vec::new(), 0)
        };
        assert_eq!(archive_plain_source(&edges), "HEAD\none\ndimTAIL");
    }

    #[test]
    fn a_conversation_goes_through_the_whole_png_pipeline() {
        use std::collections::BTreeSet;

        use musepi_context_builder::LlmMessage;

        use crate::SerializeOptions;
        use crate::png::png_archive::{
            archive_record, compose_archive_source, plan_archive, render_frames,
        };
        use crate::png::serialize::{Flavor, serialize};
        use crate::png::shape::{low_companion, resolve_shape};

        let messages: Vec<LlmMessage> = (0..60)
            .map(|i| {
                LlmMessage::user_text(format!(
                    "step {i}: {}",
                    "refactor the frame planner; ".repeat(8)
                ))
            })
            .collect();
        let serialized = serialize(
            Flavor::Archive,
            &messages,
            &BTreeSet::new(),
            &SerializeOptions::default(),
        );
        let source = compose_archive_source(&crate::png::normalize(&serialized), None, None, true);
        let resolved = resolve_shape("anthropic-messages", "claude-sonnet-4-5", None).unwrap();
        let high = resolved.shape.with_frame_size(300);
        let low = low_companion(&high);
        let run = || {
            let layout = plan_archive(&source.text, &high, low.as_ref(), 4).unwrap();
            let frames = render_frames(&layout, resolved.detail).unwrap();
            archive_record(&layout, frames, 0)
        };
        let archive = run();
        assert_eq!(archive, run(), "the pipeline is deterministic");
        assert_eq!(archive.frames.len(), 4);
        assert!(archive.truncated_chars > 0);
        assert!(
            archive
                .text_head
                .as_deref()
                .is_some_and(|h| h.starts_with("¶user:step 0:"))
        );
        assert!(archive.text_tail.as_deref().is_some_and(|t| t.ends_with("step 59: refactor the frame planner; refactor the frame planner; \
            refactor the frame planner; refactor the frame planner; refactor the frame planner; refactor the frame planner; \
            refactor the frame planner; refactor the frame planner;")));
        let stored = serde_json::to_value(&archive).unwrap();
        let read = PngArchive::from_value(&stored).unwrap();
        let blocks = history_blocks(&read, 3_000_000);
        let images = blocks
            .iter()
            .filter(|b| matches!(b, ContentBlock::Image { .. }))
            .count();
        assert_eq!((blocks.len(), images), (6, 4));
        assert!(
            matches!(&blocks[0], ContentBlock::Text { text, .. } if text.starts_with("¶user:step 0:"))
        );
        assert!(matches!(&blocks[5], ContentBlock::Text { text, .. } if text.contains("step 59")));
    }
}
