//! What a snapcompact compaction archived, for its expanded divider: the
//! PNG frames of `preserveData.snapcompact` (docs/snapcompact.md) or the text pages
//! of `details.snapcompact` (docs/snapcompact.md).

use musepi_runtime::archive::PRESERVE_KEY;
use musepi_runtime::archive::{ArchiveFrame, PngArchive};
use musepi_runtime::archive::{SnapArchiveState, TextPages};
use musepi_session_model::{Compaction, RawJson};

use super::text::thousands;
use crate::output::counted;

/// A stored archive, reduced to what the view lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchiveInfo {
    /// PNG frames for a vision model.
    Frames {
        /// Every stored frame, oldest first.
        frames: Vec<FrameInfo>,
        /// Characters on frames plus the text edges.
        total_chars: u64,
        /// Characters dropped over every compaction.
        truncated_chars: u64,
        /// Characters of the verbatim head and tail edges.
        edges: (u64, u64),
    },
    /// Text pages for any model.
    Pages {
        /// Characters of each page, oldest first.
        pages: Vec<u64>,
        /// Characters kept in all.
        total_chars: u64,
        /// Characters not shown, over every compaction.
        truncated_chars: u64,
    },
}

/// One PNG frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameInfo {
    /// The shape it was printed with (`8x13-bw`, …).
    pub shape: String,
    /// Characters per row.
    pub cols: u32,
    /// Rows printed.
    pub rows: u32,
    /// Characters printed.
    pub chars: u64,
    /// The payload is an unresolved reference, not image data.
    pub unavailable: bool,
}

fn units(s: &str) -> u64 {
    s.encode_utf16().count() as u64
}

/// The archive of a compaction entry: its PNG archive, else its text archive.
pub fn stored_archive(c: &Compaction) -> Option<ArchiveInfo> {
    let png = c
        .preserve_data
        .as_ref()
        .map(RawJson::to_value)
        .and_then(|p| p.get(PRESERVE_KEY).and_then(PngArchive::from_value));
    if let Some(png) = png {
        return Some(ArchiveInfo::Frames {
            frames: png.frames.iter().map(frame_info).collect(),
            total_chars: png.total_chars,
            truncated_chars: png.truncated_chars,
            edges: (
                png.text_head.as_deref().map_or(0, units),
                png.text_tail.as_deref().map_or(0, units),
            ),
        });
    }
    let text = c
        .details
        .as_ref()
        .and_then(|d| d.get(PRESERVE_KEY))
        .and_then(SnapArchiveState::from_value)?;
    let pages = TextPages::new(&text.text);
    Some(ArchiveInfo::Pages {
        pages: pages.frames.iter().map(|f| f.chars as u64).collect(),
        total_chars: units(&text.text),
        truncated_chars: text.truncated_chars,
    })
}

fn frame_info(f: &ArchiveFrame) -> FrameInfo {
    let shape = match (&f.shape, &f.font, &f.variant) {
        (Some(s), _, _) => s.clone(),
        (None, Some(font), Some(variant)) => format!("{font}-{variant}"),
        (None, Some(font), None) => font.clone(),
        (None, None, _) => "5x8-sent (legacy)".to_owned(),
    };
    FrameInfo {
        shape,
        cols: f.cols,
        rows: f.rows,
        chars: f.chars,
        unavailable: !f.is_available(),
    }
}

impl ArchiveInfo {
    /// The lines listing the archive, for an expanded divider.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        match self {
            Self::Frames {
                frames,
                total_chars,
                truncated_chars,
                edges,
            } => {
                let n = frames.len();
                out.push(format!(
                    "archive: {} ({}) · {} chars · {} dropped",
                    counted(n, "PNG frame", "PNG frames"),
                    shape_counts(frames),
                    thousands(*total_chars),
                    thousands(*truncated_chars)
                ));
                for (i, f) in frames.iter().enumerate() {
                    out.push(format!(
                        "  frame {}/{n} · {} · {}×{} · {} chars{}",
                        i + 1,
                        f.shape,
                        f.cols,
                        f.rows,
                        thousands(f.chars),
                        if f.unavailable { " · unavailable" } else { "" }
                    ));
                }
                out.push(edges_line(*edges));
            }
            Self::Pages {
                pages,
                total_chars,
                truncated_chars,
            } => {
                let n = pages.len();
                if n == 0 {
                    out.push(format!(
                        "archive: {} chars of text · {} not shown",
                        thousands(*total_chars),
                        thousands(*truncated_chars)
                    ));
                    return out;
                }
                out.push(format!(
                    "archive: {} · {} chars · {} not shown",
                    counted(n, "text page", "text pages"),
                    thousands(*total_chars),
                    thousands(*truncated_chars)
                ));
                for (i, chars) in pages.iter().enumerate() {
                    out.push(format!(
                        "  page {}/{n} · {} chars",
                        i + 1,
                        thousands(*chars)
                    ));
                }
            }
        }
        out
    }

    /// A few words for a collapsed divider: `3 text pages`, `4 PNG frames`.
    pub fn brief(&self) -> String {
        match self {
            Self::Frames { frames, .. } => counted(frames.len(), "PNG frame", "PNG frames"),
            Self::Pages { pages, .. } if pages.is_empty() => "empty text archive".to_owned(),
            Self::Pages { pages, .. } => counted(pages.len(), "text page", "text pages"),
        }
    }
}

fn edges_line((head, tail): (u64, u64)) -> String {
    format!(
        "  verbatim edges: head {} chars · tail {} chars",
        thousands(head),
        thousands(tail)
    )
}

/// `8x13-bw ×3, 6x13-sent ×1`, in order of first use.
fn shape_counts(frames: &[FrameInfo]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for f in frames {
        match counts.iter_mut().find(|(s, _)| *s == f.shape) {
            Some((_, n)) => *n += 1,
            None => counts.push((&f.shape, 1)),
        }
    }
    if counts.is_empty() {
        return "no frames".to_owned();
    }
    counts
        .iter()
        .map(|(s, n)| format!("{s} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}
