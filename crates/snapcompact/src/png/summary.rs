//! The summary text of a PNG-frame compaction: the short lead-in with the
//! legend and reading rules, the file tree, and under the HISTORY heading
//! the salience history for readers of text; the transcript itself
//! follows as text edges and images when the context is rebuilt.

use std::fmt::Write as _;

use musepi_context_builder::NO_PRIOR_HISTORY;

use crate::files::MarkedFiles;
use crate::png::png_archive::{PngArchive, PngLayout};
use crate::prompts::{
    FRAMES_FILES, FRAMES_NOTE_DIGEST, FRAMES_NOTE_TRUNCATED, FRAMES_RULES_DOC, FRAMES_RULES_GRID,
    FRAMES_RULES_IMAGES, FRAMES_RULES_REPEAT, FRAMES_RULES_TEXT, FRAMES_SUMMARY, render,
};
use crate::util::{len16, thousands};

/// What opens the history text in a PNG-frame summary: the HISTORY
/// heading and a blank line.
pub(crate) const HISTORY_MARK: &str = "HISTORY\n===================\n\n";

/// The entry `summary` of a PNG-frame archive: `No prior history.` when
/// there are no frames, no text and no files; otherwise the rendered
/// template, then under HISTORY the reading guide and the salience
/// history, so a reader of text alone finds the history too. `digest`
/// says a previous LLM summary was folded in at the head of the frames.
pub(crate) fn frames_summary(
    layout: &PngLayout,
    archive: &PngArchive,
    files: &MarkedFiles,
    digest: bool,
) -> String {
    let has_text = archive.text.is_some() || archive.text_head.is_some();
    if archive.frames.is_empty() && !has_text && files.is_empty() {
        return NO_PRIOR_HISTORY.to_owned();
    }
    let mut notes = String::new();
    if digest {
        notes.push('\n');
        notes.push_str(&render(&FRAMES_NOTE_DIGEST, &[]));
    }
    if archive.truncated_chars > 0 {
        notes.push('\n');
        notes.push_str(&render(
            &FRAMES_NOTE_TRUNCATED,
            &[("chars", &thousands(archive.truncated_chars))],
        ));
    }
    let tree = files.tree();
    let files = if tree.is_empty() {
        String::new()
    } else {
        format!("{}\n\n", render(&FRAMES_FILES, &[("tree", &tree)]))
    };
    render(
        &FRAMES_SUMMARY,
        &[
            ("reading_rules", &reading_rules(layout)),
            ("notes", &notes),
            ("files", &files),
        ],
    )
}

/// The reading rules: plain text only, or the image rules with the frame
/// geometry of every tier (`{cols}` and `{rows}` list the distinct values,
/// joined by ` or `).
fn reading_rules(layout: &PngLayout) -> String {
    if layout.pages.is_empty() {
        return render(&FRAMES_RULES_TEXT, &[]);
    }
    let mut cols: Vec<u32> = Vec::new();
    let mut rows: Vec<u32> = Vec::new();
    for page in &layout.pages {
        let g = page.shape.geometry();
        if !cols.contains(&g.cols) {
            cols.push(g.cols);
        }
        if !rows.contains(&g.rows) {
            rows.push(g.rows);
        }
    }
    let join = |v: &[u32]| {
        v.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" or ")
    };
    let (cols, rows) = (join(&cols), join(&rows));
    let geometry = if layout.pages.iter().any(|p| p.shape.is_doc()) {
        &FRAMES_RULES_DOC
    } else {
        &FRAMES_RULES_GRID
    };
    let mut out = render(&FRAMES_RULES_IMAGES, &[]);
    out.push('\n');
    out.push_str(&render(geometry, &[("cols", &cols), ("rows", &rows)]));
    if layout.pages.iter().any(|p| p.shape.line_repeat > 1) {
        out.push('\n');
        out.push_str(&render(&FRAMES_RULES_REPEAT, &[]));
    }
    out
}

/// `Archived {totalChars} chars of history onto {n} snapcompact frame{s}`,
/// plus ` (+{textChars} chars as text)` when a text edge is kept; numbers with thousands separators.
pub(crate) fn frames_short_summary(layout: &PngLayout, archive: &PngArchive) -> String {
    let n = archive.frames.len();
    let mut out = format!(
        "Archived {} chars of history onto {} snapcompact frame{}",
        thousands(archive.total_chars),
        thousands(n as u64),
        if n == 1 { "" } else { "s" }
    );
    let text_chars = len16(&layout.text_head) + len16(&layout.text_tail);
    if text_chars > 0 {
        let _ = write!(out, " (+{} chars as text)", thousands(text_chars as u64));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::png::png_archive::{PlannedPage, archive_record};
    use crate::png::shape::Shape;

    fn layout(pages: &[&str], text: &str) -> PngLayout {
        PngLayout {
            text_head: text.to_owned(),
            text_tail: String::new(),
            pages: pages
                .iter()
                .map(|name| PlannedPage {
                    text: "page".into(),
                    shape: Shape::by_name(name).unwrap_or_else(|| panic!("{name}")),
                })
                .collect(),
            truncated_chars: 0,
            kept_text: text.to_owned(),
        }
    }

    /// The summary of frames of `shapes` with nothing dropped, no files and
    /// no text history.
    fn plain_summary(shapes: &[&str]) -> String {
        let l = layout(shapes, "x");
        let a = archive_record(&l, Vec::new(), 0);
        frames_summary(&l, &a, &MarkedFiles::default(), false)
    }

    #[test]
    fn nothing_at_all_is_no_prior_history() {
        let l = layout(&[], "");
        let a = archive_record(&l, Vec::new(), 0);
        assert_eq!(
            frames_summary(&l, &a, &MarkedFiles::default(), false),
            "No prior history."
        );
        assert_eq!(
            frames_short_summary(&l, &a),
            "Archived 0 chars of history onto 0 snapcompact frames"
        );
    }

    #[test]
    fn a_text_only_archive_gets_the_plain_text_rules_and_files() {
        let l = layout(&[], "¶user:hi");
        let a = archive_record(&l, Vec::new(), 12_345);
        let files = MarkedFiles::from_ops(["src/a.rs"], [], ["src/b.rs"]);
        let s = frames_summary(&l, &a, &files, true);
        assert!(s.starts_with("Resume the prior conversation."), "{s}");
        assert!(s.contains("Reading rules:\n- The archive is plain text, verbatim and exact.\n- The history opens with a condensed digest"));
        assert!(s.contains("- About 12,345 characters of older middle history were dropped"));
        assert!(s.ends_with(
            "FILES\n===================\n\n# src/\na.rs (Read)\nb.rs (Write)\n\nHISTORY\n==================="
        ));
        assert!(!s.contains("{{") && !s.contains("image"), "{s}");
        assert_eq!(
            frames_short_summary(&l, &a),
            "Archived 8 chars of history onto 0 snapcompact frames (+8 chars as text)"
        );
    }

    #[test]
    fn the_rules_name_every_tier_of_a_foveated_archive() {
        let s = plain_summary(&["11on16-bw", "8on16-bw", "11on16-bw"]);
        assert!(
            s.contains("- Each image is a grid 142 or 196 characters wide and up to 98 rows tall"),
            "{s}"
        );
        assert!(!s.contains("FILES") && !s.contains("printed twice"));
        assert!(s.ends_with("instead of guessing.\n\nHISTORY\n==================="));
    }

    #[test]
    fn doc_and_repeated_shapes_explain_themselves() {
        let doc = plain_summary(&["doc-8on16-bw"]);
        assert!(doc.contains("two columns, each 96 characters wide and up to 98 rows tall"));
        let repeated = plain_summary(&["8x8r-bw"]);
        assert!(repeated.contains("printed twice"));
    }
}
