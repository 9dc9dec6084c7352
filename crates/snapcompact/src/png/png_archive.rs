//! The PNG-frame archive: both chronological edges stay
//! verbatim text, the middle is printed on frames, and when frames run out
//! the middle of the middle is printed denser and its oldest part dropped.

use std::ops::Range;

use serde::Serialize;
use serde_json::Value;

use crate::error::SnapError;
use crate::parallel::{map_in_order, threads_for};
use crate::png::data_url::{DataUrlMode, elide_data_urls};
use crate::png::layout::{break_back, break_forward, paginate};
use crate::png::normalize::{NEWLINE_GLYPH, normalize};
use crate::png::pricing::HQ_EDGE_FRAMES;
use crate::png::render::render;
use crate::png::shape::{LEGACY_SHAPE, Shape};
use crate::util::{head_units, len16, tail_units};

/// The MIME type of every frame.
pub(crate) const FRAME_MIME_TYPE: &str = "image/png";

/// One page of the imaged middle, with the shape that prints it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedPage {
    /// The page's text (normalized source).
    pub text: String,
    /// The high shape, or the dense companion in a foveated middle.
    pub shape: Shape,
}

/// Where the normalized archive text goes.
#[derive(Debug, Clone, PartialEq)]
pub struct PngLayout {
    /// The oldest edge, kept as text.
    pub text_head: String,
    /// The newest edge, kept as text.
    pub text_tail: String,
    /// The imaged middle, oldest first.
    pub pages: Vec<PlannedPage>,
    /// UTF-16 units dropped from the middle.
    pub truncated_chars: usize,
    /// Head, imaged pages and tail: the next archive's source.
    pub kept_text: String,
}

/// The most each verbatim edge of a PNG archive holds as text: the start
/// of the history and its newest part, beside the frames that carry the
/// rest (a frame's worth when a frame holds less).
pub const EDGE_CHARS: usize = 2_000;

/// Plans the archive of `text` (normalized, oldest first) with frames of
/// the `high` shape, a dense `low` companion for foveation, and at most
/// `max_frames` frames (`planArchive`).
pub fn plan_archive(
    text: &str,
    high: &Shape,
    low: Option<&Shape>,
    max_frames: usize,
) -> Result<PngLayout, SnapError> {
    let high_geometry = high.checked_geometry()?;
    let edge = (high_geometry.capacity as usize).min(EDGE_CHARS);
    let whole = || PngLayout {
        text_head: text.to_owned(),
        text_tail: String::new(),
        pages: Vec::new(),
        truncated_chars: 0,
        kept_text: text.to_owned(),
    };
    if len16(text) <= 2 * edge {
        return Ok(whole());
    }
    // Both edges end at a line end or a space, so no word is split between
    // an edge and a frame.
    let head = &text[..break_back(text, head_units(text, edge).len())];
    let tail = &text[break_forward(text, text.len() - tail_units(text, edge).len())..];
    let middle = &text[head.len()..text.len() - tail.len()];
    if middle.is_empty() {
        return Ok(whole());
    }
    if max_frames < 1 {
        return Ok(PngLayout {
            text_head: head.to_owned(),
            text_tail: tail.to_owned(),
            pages: Vec::new(),
            truncated_chars: len16(middle),
            kept_text: format!("{head}{tail}"),
        });
    }
    let pages = paginate(middle, high, high_geometry);
    let planned = |ranges: &[Range<usize>], src: &str, shape: &Shape| -> Vec<PlannedPage> {
        ranges
            .iter()
            .map(|r| PlannedPage {
                text: src[r.clone()].to_owned(),
                shape: *shape,
            })
            .collect()
    };
    let n = pages.len();
    let (frames, dropped) = if n <= max_frames {
        (planned(&pages, middle, high), 0..0)
    } else if high.is_doc() {
        // The first page and the newest `max_frames - 1`.
        let kept_from = n - (max_frames - 1);
        let mut frames = planned(&pages[..1], middle, high);
        frames.extend(planned(&pages[kept_from..], middle, high));
        let dropped = pages[1].start..pages.get(kept_from).map_or(middle.len(), |p| p.start);
        (frames, dropped)
    } else {
        let k = HQ_EDGE_FRAMES.min((max_frames - 1) / 2);
        let low = low.unwrap_or(high);
        let mid_start = pages[k].start;
        let mid_end = if k == 0 {
            middle.len()
        } else {
            pages[n - k].start
        };
        let mid = &middle[mid_start..mid_end];
        let low_pages = paginate(mid, low, low.checked_geometry()?);
        let allowed = max_frames - 2 * k;
        let drop = low_pages.len().saturating_sub(allowed);
        let drop_end = low_pages.get(drop).map_or(mid.len(), |p| p.start);
        let mut frames = planned(&pages[..k], middle, high);
        frames.extend(planned(&low_pages[drop..], mid, low));
        frames.extend(planned(&pages[n - k..], middle, high));
        (frames, mid_start..mid_start + drop_end)
    };
    let kept_middle = format!("{}{}", &middle[..dropped.start], &middle[dropped.end..]);
    Ok(PngLayout {
        text_head: head.to_owned(),
        text_tail: tail.to_owned(),
        truncated_chars: len16(&middle[dropped]),
        kept_text: format!("{head}{kept_middle}{tail}"),
        pages: frames,
    })
}

/// One stored frame (`preserveData.snapcompact.frames[i]`), written as it
/// serializes and read back by [`ArchiveFrame::from_value`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveFrame {
    /// Base64 PNG, or an externalized `blob:sha256:…` reference.
    pub data: String,
    /// `image/png`.
    pub mime_type: String,
    /// Characters per row.
    pub cols: u32,
    /// Rows printed.
    pub rows: u32,
    /// UTF-16 units printed.
    pub chars: u64,
    /// The font printed (`8x13`, …); absent on legacy frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub font: Option<String>,
    /// The ink (`bw`, `sent`); absent on legacy frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// Copies of each row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_repeat: Option<u32>,
    /// 2 for doc shapes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub columns: Option<u32>,
    /// Function words printed dim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopword_dim: Option<bool>,
    /// Provider image detail (`original` for `OpenAI`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The shape variant name (this crate's addition: with it any reader can
    /// re-price or re-render the frame).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
}

impl ArchiveFrame {
    /// Reads a stored frame, or none when it lacks a non-empty string
    /// `data`, a string `mimeType` or numeric `cols`, `rows` and `chars`.
    pub fn from_value(value: &Value) -> Option<Self> {
        let data = value.get("data")?.as_str().filter(|d| !d.is_empty())?;
        let string = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let number = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_f64)
                .filter(|n| n.is_finite())
                .map(|n| n.max(0.0))
        };
        Some(Self {
            data: data.to_owned(),
            mime_type: string("mimeType")?,
            cols: number("cols")? as u32,
            rows: number("rows")? as u32,
            chars: number("chars")? as u64,
            font: string("font"),
            variant: string("variant"),
            line_repeat: number("lineRepeat").map(|n| n as u32),
            columns: number("columns").map(|n| n as u32),
            stopword_dim: value.get("stopwordDim").and_then(Value::as_bool),
            detail: string("detail"),
            shape: string("shape"),
        })
    }

    /// Whether the payload is image data rather than an unresolved
    /// `blob:` reference (which must never be sent as an image).
    pub fn is_available(&self) -> bool {
        !self.data.starts_with("blob:")
    }

    /// The shape the frame was printed with: its recorded `shape`, or
    /// `5x8-sent` for a legacy frame without `font` and `variant`.
    pub fn printed_shape(&self) -> Option<Shape> {
        match (&self.shape, &self.font, &self.variant) {
            (Some(name), _, _) => Shape::by_name(name),
            (None, None, None) => Shape::by_name(LEGACY_SHAPE),
            _ => None,
        }
    }
}

/// The persisted PNG archive (`preserveData.snapcompact`), written as it
/// serializes and read back by [`PngArchive::from_value`], as leniently as pi
/// reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PngArchive {
    /// The frames, oldest first.
    pub frames: Vec<ArchiveFrame>,
    /// Characters on frames plus the text edges.
    pub total_chars: u64,
    /// Characters dropped over every compaction.
    pub truncated_chars: u64,
    /// The full kept normalized source, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The oldest verbatim region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_head: Option<String>,
    /// The newest verbatim region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_tail: Option<String>,
}

impl PngArchive {
    /// Reads a stored archive (`getPreservedArchive`): invalid frames are
    /// left out, empty texts are absent, missing counts are 0, and an
    /// archive with neither frames nor text is none.
    pub fn from_value(value: &Value) -> Option<Self> {
        let frames: Vec<ArchiveFrame> = value
            .get("frames")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(ArchiveFrame::from_value).collect())
            .unwrap_or_default();
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let count = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_f64)
                .filter(|n| n.is_finite())
                .map_or(0, |n| n.max(0.0) as u64)
        };
        let archive = Self {
            frames,
            total_chars: count("totalChars"),
            truncated_chars: count("truncatedChars"),
            text: text("text"),
            text_head: text("textHead"),
            text_tail: text("textTail"),
        };
        let has_text =
            archive.text.is_some() || archive.text_head.is_some() || archive.text_tail.is_some();
        (has_text || !archive.frames.is_empty()).then_some(archive)
    }

    /// The source the next compaction re-renders from:
    /// `text`, else `textHead + U+2588 + textTail`.
    pub fn source_text(&self) -> String {
        if let Some(text) = &self.text {
            return text.clone();
        }
        match (&self.text_head, &self.text_tail) {
            (Some(h), Some(t)) => format!("{h}{NEWLINE_GLYPH}{t}"),
            (Some(h), None) => h.clone(),
            (None, Some(t)) => t.clone(),
            (None, None) => String::new(),
        }
    }
}

/// Prints the planned pages (`render` per page, at each shape's frame
/// size) into frame records carrying their shape and `detail`, on every
/// core: the frames are byte for byte those of one page after another.
pub fn render_frames(
    layout: &PngLayout,
    detail: Option<&str>,
) -> Result<Vec<ArchiveFrame>, SnapError> {
    render_frames_on(layout, detail, threads_for(layout.pages.len()))
}

/// [`render_frames`] on `threads` threads (1: one page after another).
pub fn render_frames_on(
    layout: &PngLayout,
    detail: Option<&str>,
    threads: usize,
) -> Result<Vec<ArchiveFrame>, SnapError> {
    map_in_order(&layout.pages, threads, |page| {
        let frame = render(&page.text, &page.shape, page.shape.frame_size)?;
        Ok(ArchiveFrame {
            data: frame.base64(),
            mime_type: FRAME_MIME_TYPE.to_owned(),
            cols: frame.cols,
            rows: frame.rows,
            chars: frame.chars as u64,
            font: Some(page.shape.face.name().to_owned()),
            variant: Some(page.shape.ink.name().to_owned()),
            line_repeat: Some(page.shape.line_repeat),
            columns: page.shape.is_doc().then_some(page.shape.columns),
            // Frames are 1-bit: function words are not printed dim.
            stopword_dim: None,
            detail: detail.map(str::to_owned),
            shape: Some(page.shape.name.to_owned()),
        })
    })
}

/// The archive record of a layout and its rendered frames;
/// `previous_truncated` carries the count of earlier compactions.
pub(crate) fn archive_record(
    layout: &PngLayout,
    frames: Vec<ArchiveFrame>,
    previous_truncated: u64,
) -> PngArchive {
    let total_chars = frames.iter().map(|f| f.chars).sum::<u64>()
        + len16(&layout.text_head) as u64
        + len16(&layout.text_tail) as u64;
    let text = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    PngArchive {
        frames,
        total_chars,
        truncated_chars: previous_truncated.saturating_add(layout.truncated_chars as u64),
        text: text(&layout.kept_text),
        text_head: text(&layout.text_head),
        text_tail: text(&layout.text_tail),
    }
}

/// The normalized source of a new archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArchiveSource {
    /// Oldest first: the previous archive's source (or a folded LLM
    /// summary), then the newly archived text.
    pub text: String,
    /// Whether a previous LLM summary was folded in at the head.
    pub included_previous_summary: bool,
}

/// Composes the text a compaction archives: the previous archive's source
/// (data URLs healed, reasoning dropped when `include_thinking` is false),
/// then a newline glyph and `new_text` (the normalized serialization); or,
/// with no previous archive, a previous LLM summary folded in as
/// `[Summary of earlier history] … [Recent conversation] …`.
/// Earlier compactions are re-rendered from this bounded source; old
/// frames are never carried forward.
pub(crate) fn compose_archive_source(
    new_text: &str,
    previous: Option<&PngArchive>,
    previous_summary: Option<&str>,
    include_thinking: bool,
) -> ArchiveSource {
    let previous_text = previous
        .map(|archive| {
            let healed =
                elide_data_urls(&archive.source_text(), DataUrlMode::Archived).into_owned();
            if include_thinking {
                healed
            } else {
                drop_think_sections(&healed)
            }
        })
        .unwrap_or_default();
    let mut included_previous_summary = false;
    let text = if !previous_text.is_empty() {
        if new_text.is_empty() {
            previous_text
        } else {
            format!("{previous_text}{NEWLINE_GLYPH}{new_text}")
        }
    } else if let Some(summary) = previous_summary.map(normalize).filter(|s| !s.is_empty()) {
        included_previous_summary = true;
        if new_text.is_empty() {
            format!("[Summary of earlier history] {summary}")
        } else {
            format!("[Summary of earlier history] {summary} [Recent conversation] {new_text}")
        }
    } else {
        new_text.to_owned()
    };
    ArchiveSource {
        text: elide_data_urls(&text, DataUrlMode::Fresh).into_owned(),
        included_previous_summary,
    }
}

/// Removes the `¶think:` parts from normalized archive text: a part starts
/// at the text's start or after a newline glyph and runs to the next glyph
/// that opens another scope.
pub(crate) fn drop_think_sections(text: &str) -> String {
    const THINK: &str = "¶think:";
    const SCOPES: [&str; 4] = ["¶user:", "¶ai:", "¶call:", THINK];
    let glyph = NEWLINE_GLYPH.len_utf8();
    let opens_scope = |at: usize| {
        text[at..].starts_with(NEWLINE_GLYPH)
            && SCOPES.iter().any(|s| text[at + glyph..].starts_with(s))
    };
    let mut out = String::with_capacity(text.len());
    let mut copied = 0usize;
    let mut search = 0usize;
    while let Some(found) = text[search..].find(THINK).map(|i| search + i) {
        let at_start = found == 0;
        if !at_start && !text[..found].ends_with(NEWLINE_GLYPH) {
            search = found + THINK.len();
            continue;
        }
        let start = if at_start { 0 } else { found - glyph };
        let mut end = text.len();
        for (i, _) in text[found + THINK.len()..].match_indices(NEWLINE_GLYPH) {
            let at = found + THINK.len() + i;
            if opens_scope(at) {
                // With nothing before it, the section takes the following glyph along.
                end = if at_start { at + glyph } else { at };
                break;
            }
        }
        out.push_str(&text[copied..start]);
        copied = end;
        search = end;
    }
    out.push_str(&text[copied..]);
    out
}

/// Estimated input tokens of the whole archive as the context carries it:
/// the text edges at chars/4 plus each frame priced for the family of the
/// wire API that will carry it. A frame whose shape is
/// unknown is priced at the conservative 5,024 tokens.
pub fn archive_tokens(archive: &PngArchive, api: Option<&str>) -> u64 {
    let family = crate::png::pricing::billing_family(api.unwrap_or_default());
    let text_units = archive.text_head.as_deref().map_or(0, len16)
        + archive.text_tail.as_deref().map_or(0, len16);
    let frames: u64 = archive
        .frames
        .iter()
        .filter(|f| f.is_available())
        .map(|f| {
            f.printed_shape()
                .map_or(u64::from(crate::png::pricing::FRAME_TOKEN_ESTIMATE), |s| {
                    u64::from(family.frame_tokens(s.frame_size))
                })
        })
        .sum();
    (text_units as u64).div_ceil(4) + frames
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::png::shape::low_companion;

    /// 11on16 at 200 px: 18 × 12 = 216 cells; its dense companion holds 25 × 12 = 300.
    fn small_high() -> Shape {
        Shape::by_name("11on16-bw").unwrap().with_frame_size(200)
    }

    /// `n` distinct 6-character words: `w0000 w0001 …`.
    fn words(n: usize) -> String {
        use std::fmt::Write as _;
        (0..n).fold(String::new(), |mut out, i| {
            let _ = write!(out, "w{i:04} ");
            out
        })
    }

    #[test]
    fn short_text_stays_text() {
        let high = small_high();
        let layout =
            plan_archive("short history", &high, low_companion(&high).as_ref(), 80).unwrap();
        assert_eq!(layout.text_head, "short history");
        assert_eq!(
            (
                layout.text_tail.as_str(),
                layout.pages.len(),
                layout.truncated_chars
            ),
            ("", 0, 0)
        );
        assert_eq!(layout.kept_text, "short history");
    }

    #[test]
    fn the_middle_is_imaged_between_verbatim_edges() {
        let high = small_high();
        let text = words(200); // 1,200 chars: 216 + 768 + 216
        let layout = plan_archive(&text, &high, low_companion(&high).as_ref(), 80).unwrap();
        assert_eq!(layout.text_head, text[..216]);
        assert_eq!(layout.text_tail, text[text.len() - 216..]);
        assert_eq!(layout.pages.len(), 4);
        assert!(layout.pages.iter().all(|p| p.shape == high));
        let imaged: String = layout.pages.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(imaged, text[216..text.len() - 216]);
        assert_eq!(
            (layout.truncated_chars, layout.kept_text.as_str()),
            (0, text.as_str())
        );
    }

    #[test]
    fn too_many_pages_foveate_and_drop_the_oldest_dense_pages() {
        let high = small_high();
        let low = low_companion(&high).unwrap();
        let text = words(36 * 24); // 216 × 24: head, 22 pages, tail
        let layout = plan_archive(&text, &high, Some(&low), 9).unwrap();
        let shapes: Vec<&str> = layout.pages.iter().map(|p| p.shape.name).collect();
        assert_eq!(
            shapes,
            [
                "11on16-bw",
                "11on16-bw",
                "11on16-bw",
                "8on16-bw",
                "8on16-bw",
                "8on16-bw",
                "11on16-bw",
                "11on16-bw",
                "11on16-bw"
            ]
        );
        // The dense middle (16 pages of 216 = 3,456 chars) makes 12 dense pages; 9 are dropped.
        let dropped_from = 216 + 3 * 216;
        assert_eq!(layout.truncated_chars, 9 * 300);
        assert_eq!(
            layout.kept_text,
            format!("{}{}", &text[..dropped_from], &text[dropped_from + 2700..])
        );
        assert!(
            layout.kept_text.starts_with(&layout.text_head)
                && layout.kept_text.ends_with(&layout.text_tail)
        );
    }

    #[test]
    fn no_frames_allowed_keeps_only_the_edges() {
        let high = small_high();
        let text = words(200);
        let layout = plan_archive(&text, &high, None, 0).unwrap();
        assert!(layout.pages.is_empty());
        assert_eq!(layout.truncated_chars, 1200 - 432);
        assert_eq!(
            layout.kept_text,
            format!("{}{}", &text[..216], &text[1200 - 216..])
        );
    }

    #[test]
    fn doc_shapes_keep_the_first_page_and_the_newest() {
        let doc = Shape::by_name("doc-8on16-bw").unwrap().with_frame_size(200);
        let text = words(1000);
        let all = plan_archive(&text, &doc, None, 80).unwrap();
        assert!(all.pages.len() > 4);
        let cut = plan_archive(&text, &doc, None, 3).unwrap();
        assert_eq!(cut.pages.len(), 3);
        assert_eq!(cut.pages[0], all.pages[0]);
        assert_eq!(cut.pages[1..], all.pages[all.pages.len() - 2..]);
        let dropped: usize = all.pages[1..all.pages.len() - 2]
            .iter()
            .map(|p| p.text.len())
            .sum();
        assert_eq!(cut.truncated_chars, dropped);
        assert_eq!(len16(&cut.kept_text) + cut.truncated_chars, text.len());
    }

    #[test]
    fn frames_on_every_core_are_the_frames_of_one_page_after_another() {
        let high = Shape::by_name("8on22-bw").unwrap().with_frame_size(300);
        let text = words(3000);
        let layout = plan_archive(&text, &high, None, 80).unwrap();
        assert!(layout.pages.len() > 8, "{} pages", layout.pages.len());
        let sequential = render_frames_on(&layout, Some("original"), 1).unwrap();
        for threads in [2, 3, 4, layout.pages.len(), 64] {
            let parallel = render_frames_on(&layout, Some("original"), threads).unwrap();
            assert_eq!(parallel, sequential, "{threads} threads");
        }
        assert_eq!(
            render_frames(&layout, Some("original")).unwrap(),
            sequential
        );
    }

    #[test]
    fn rendered_frames_record_their_shape_and_add_up() {
        let high = Shape::by_name("8on22-bw").unwrap().with_frame_size(300);
        let text = words(400);
        let layout = plan_archive(&text, &high, None, 80).unwrap();
        let frames = render_frames(&layout, Some("original")).unwrap();
        assert_eq!(frames.len(), layout.pages.len());
        for (frame, page) in frames.iter().zip(&layout.pages) {
            assert_eq!(frame.chars, page.text.len() as u64);
            assert_eq!(frame.shape.as_deref(), Some("8on22-bw"));
            assert_eq!(
                (
                    frame.font.as_deref(),
                    frame.variant.as_deref(),
                    frame.line_repeat
                ),
                (Some("8x13"), Some("bw"), Some(1))
            );
            assert!(frame.data.starts_with("iVBORw0KGgo"));
        }
        let record = archive_record(&layout, frames, 7);
        assert_eq!(record.total_chars, text.len() as u64);
        assert_eq!(record.truncated_chars, 7);
        let stored = serde_json::to_value(&record).unwrap();
        assert_eq!(stored["frames"][0]["mimeType"], "image/png");
        assert_eq!(stored["frames"][0]["detail"], "original");
        assert!(stored["frames"][0].get("columns").is_none());
        assert_eq!(PngArchive::from_value(&stored), Some(record));
    }

    #[test]
    fn reading_a_stored_archive_validates_it() {
        let stored = json!({
            "frames": [
                {"data": "AAAA", "mimeType": "image/png", "cols": 142, "rows": 98, "chars": 13916},
                {"data": "", "mimeType": "image/png", "cols": 1, "rows": 1, "chars": 1},
                {"data": "BBBB", "cols": 1, "rows": 1, "chars": 1},
                {"data": "CCCC", "mimeType": "image/png", "cols": "1", "rows": 1, "chars": 1}
            ],
            "text": "",
            "textHead": "head"
        });
        let archive = PngArchive::from_value(&stored).unwrap();
        assert_eq!(archive.frames.len(), 1);
        assert_eq!((archive.total_chars, archive.truncated_chars), (0, 0));
        assert_eq!(
            (archive.text, archive.text_head.as_deref()),
            (None, Some("head"))
        );
        assert_eq!(
            archive.frames[0].printed_shape().map(|s| s.name),
            Some("5x8-sent")
        );
        assert_eq!(
            PngArchive::from_value(&json!({"frames": [], "text": ""})),
            None
        );
        assert_eq!(PngArchive::from_value(&json!("nope")), None);
    }

    #[test]
    fn reasoning_parts_can_be_dropped_from_archived_text() {
        assert_eq!(
            drop_think_sections("¶user:a█¶think:x█y█¶ai:b"),
            "¶user:a█¶ai:b"
        );
        assert_eq!(drop_think_sections("¶think:x█¶ai:b█¶think:z"), "¶ai:b");
        assert_eq!(
            drop_think_sections("¶user:say ¶think: inline█¶ai:ok"),
            "¶user:say ¶think: inline█¶ai:ok"
        );
        assert_eq!(drop_think_sections("¶think:only"), "");
    }

    #[test]
    fn the_next_source_continues_the_previous_archive() {
        let previous = PngArchive {
            text_head: Some("¶user:old█¶think:hmm".into()),
            text_tail: Some("¶ai:done data:image/png;base64,AA".into()),
            ..PngArchive::default()
        };
        let with = compose_archive_source("¶user:new", Some(&previous), Some("ignored"), true);
        assert_eq!(
            with.text,
            "¶user:old█¶think:hmm█¶ai:done [data URL omitted: image/png, 2 base64 chars]█¶user:new"
        );
        assert!(!with.included_previous_summary);
        let without = compose_archive_source("¶user:new", Some(&previous), None, false);
        assert!(without.text.starts_with("¶user:old█¶ai:done"));
    }

    #[test]
    fn a_previous_llm_summary_is_folded_in_when_there_is_no_archive() {
        let folded = compose_archive_source("¶user:new", None, Some("We built\nthe LSP."), true);
        assert_eq!(
            folded.text,
            "[Summary of earlier history] We built█the LSP. [Recent conversation] ¶user:new"
        );
        assert!(folded.included_previous_summary);
        let only = compose_archive_source("", None, Some("Earlier."), true);
        assert_eq!(only.text, "[Summary of earlier history] Earlier.");
        assert_eq!(
            compose_archive_source("¶user:x", None, None, true).text,
            "¶user:x"
        );
    }

    proptest! {
        #[test]
        fn png_layouts_stay_within_frames_and_lose_only_what_they_count(n in 0usize..900, max_frames in 0usize..12, doc in any::<bool>()) {
            let high = if doc { Shape::by_name("doc-8on16-bw").unwrap().with_frame_size(200) } else { small_high() };
            let low = low_companion(&high);
            let text = words(n);
            let layout = plan_archive(&text, &high, low.as_ref(), max_frames).unwrap();
            prop_assert!(layout.pages.len() <= max_frames);
            prop_assert!(text.starts_with(&layout.text_head));
            prop_assert!(text.ends_with(&layout.text_tail));
            prop_assert_eq!(len16(&layout.kept_text) + layout.truncated_chars, len16(&text));
            let imaged: String = layout.pages.iter().map(|p| p.text.as_str()).collect();
            prop_assert_eq!(format!("{}{imaged}{}", layout.text_head, layout.text_tail), layout.kept_text.clone());
        }
    }
}
