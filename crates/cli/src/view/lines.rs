//! Laying the transcript out in rows of a given width: titles, wrapped
//! text, folded lines and compaction dividers, each row remembering the
//! block and part it shows.

use std::collections::BTreeSet;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::model::{Block, BlockKind, Divider, Part, Tone, Transcript};
use super::text::{thousands, truncate, wrap};
use crate::output::display_width;

/// The slim divider a compaction shows in the transcript when its entry
/// does not say how it was made (docs/design.md, "What the model sees").
pub const DIVIDER: &str = "── 📷 compacted · ctrl+o ──";

/// The slim divider of `d`: how it was made and the context before and
/// after it, when its entry records them (`── 📷 snapcompact · 31k → 24k ·
/// ctrl+o ──`), else [`DIVIDER`] (or what of it the entry records).
pub fn divider_head(d: &Divider) -> String {
    let (Some(method), after) = (d.method.as_deref(), d.tokens_after) else {
        return match d.tokens_after {
            Some(after) => format!(
                "── 📷 compacted · {} → {} · ctrl+o ──",
                short_tokens(d.tokens_before),
                short_tokens(after)
            ),
            None => DIVIDER.to_owned(),
        };
    };
    let method = crate::output::escape_controls(method);
    match after {
        Some(after) => format!(
            "── 📷 {method} · {} → {} · ctrl+o ──",
            short_tokens(d.tokens_before),
            short_tokens(after)
        ),
        None => format!("── 📷 {method} · ctrl+o ──"),
    }
}

/// `31k` for 31,315 tokens, `960` below a thousand.
fn short_tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else {
        format!("{}k", n.saturating_add(500) / 1000)
    }
}
/// The line closing an expanded divider.
pub const DIVIDER_END: &str = "── end of compaction ──";
/// Rows of an expanded fold's body before the rest is counted, not shown.
pub const MAX_BODY_ROWS: usize = 500;

/// A foldable part: the entry of its block and its position in the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FoldKey {
    /// [`Block::entry_index`].
    pub entry: usize,
    /// Position in [`Block::parts`].
    pub part: usize,
}

/// One laid-out row.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// What is drawn.
    pub line: Line<'static>,
    /// The same text, unstyled, for search.
    pub text: String,
    /// Position of its block in [`Transcript::blocks`].
    pub block: usize,
    /// The part it belongs to (none: a title or a separator).
    pub part: Option<usize>,
}

impl Row {
    fn new(spans: Vec<Span<'static>>, block: usize, part: Option<usize>) -> Self {
        let text = spans.iter().map(|s| s.content.as_ref()).collect();
        Self {
            line: Line::from(spans),
            text,
            block,
            part,
        }
    }
}

fn tone_style(tone: Tone) -> Style {
    match tone {
        Tone::Plain => Style::default(),
        Tone::Dim => Style::default().fg(Color::DarkGray),
        Tone::Error => Style::default().fg(Color::Red),
    }
}

fn title_style(kind: BlockKind) -> Style {
    let color = match kind {
        BlockKind::User => Color::Cyan,
        BlockKind::Assistant => Color::Green,
        BlockKind::Bash => Color::Magenta,
        BlockKind::Custom => Color::Blue,
        BlockKind::BranchSummary | BlockKind::Compaction => Color::Yellow,
        BlockKind::ToolResult | BlockKind::Other => Color::Gray,
    };
    Style::default().fg(color).add_modifier(Modifier::BOLD)
}

/// Lays `transcript` out at `width` columns with the folds in `expanded` open.
pub fn layout(transcript: &Transcript, expanded: &BTreeSet<FoldKey>, width: usize) -> Vec<Row> {
    let width = width.max(1);
    let mut rows = Vec::new();
    for (b, block) in transcript.blocks.iter().enumerate() {
        block_rows(block, b, expanded, width, &mut rows);
    }
    rows
}

fn block_rows(
    block: &Block,
    b: usize,
    expanded: &BTreeSet<FoldKey>,
    width: usize,
    rows: &mut Vec<Row>,
) {
    let away = block.compacted_away;
    let dim = |style: Style| {
        if away {
            style.fg(Color::DarkGray)
        } else {
            style
        }
    };
    if let Some(title) = &block.title {
        if b > 0 {
            rows.push(Row::new(Vec::new(), b, None));
        }
        let text = truncate(title, width);
        let id_room = width.saturating_sub(display_width(&text) + 2);
        let mut spans = vec![Span::styled(text, dim(title_style(block.kind)))];
        if id_room > 0 {
            spans.push(Span::styled(
                format!("  {}", truncate(&block.entry_id, id_room)),
                Style::default().fg(Color::DarkGray),
            ));
        }
        rows.push(Row::new(spans, b, None));
    }
    for (p, part) in block.parts.iter().enumerate() {
        let open = expanded.contains(&FoldKey {
            entry: block.entry_index,
            part: p,
        });
        match part {
            Part::Text { text, tone } => {
                for l in wrap(text, width.saturating_sub(2)) {
                    rows.push(Row::new(
                        vec![Span::styled(format!("  {l}"), dim(tone_style(*tone)))],
                        b,
                        Some(p),
                    ));
                }
            }
            Part::Fold {
                summary,
                body,
                tone,
            } => {
                let mark = if open { "▾" } else { "▸" };
                let head = truncate(&format!("  {mark} {summary}"), width);
                rows.push(Row::new(
                    vec![Span::styled(head, dim(tone_style(*tone)))],
                    b,
                    Some(p),
                ));
                if open {
                    body_rows(
                        body,
                        (width, 4),
                        MAX_BODY_ROWS,
                        dim(tone_style(*tone)),
                        (b, p),
                        rows,
                    );
                }
            }
            Part::Divider(d) => {
                if b > 0 && p == 0 && block.title.is_none() {
                    rows.push(Row::new(Vec::new(), b, None));
                }
                divider_rows(d, open, width, b, p, rows);
            }
        }
    }
}

fn body_rows(
    body: &str,
    (width, indent): (usize, usize),
    cap: usize,
    style: Style,
    (b, p): (usize, usize),
    rows: &mut Vec<Row>,
) {
    let pad = " ".repeat(indent.min(width.saturating_sub(1)));
    let lines = wrap(body, width.saturating_sub(pad.len()));
    let shown = lines.len().min(cap);
    for l in &lines[..shown] {
        rows.push(Row::new(
            vec![Span::styled(format!("{pad}{l}"), style)],
            b,
            Some(p),
        ));
    }
    if lines.len() > shown {
        rows.push(Row::new(
            vec![Span::styled(
                format!("{pad}… {} more lines", lines.len() - shown),
                Style::default().fg(Color::DarkGray),
            )],
            b,
            Some(p),
        ));
    }
}

fn divider_rows(d: &Divider, open: bool, width: usize, b: usize, p: usize, rows: &mut Vec<Row>) {
    let style = Style::default().fg(Color::Yellow);
    let dim = Style::default().fg(Color::DarkGray);
    let mut facts = Vec::new();
    if d.tokens_after.is_none() {
        facts.push(format!("{} tokens before", thousands(d.tokens_before)));
    }
    if d.superseded {
        facts.push("superseded".to_owned());
    }
    if let Some(a) = &d.archive {
        facts.push(a.brief());
    }
    let head = truncate(&divider_head(d), width);
    let room = width.saturating_sub(display_width(&head) + 1);
    let mut spans = vec![Span::styled(head, style.add_modifier(Modifier::BOLD))];
    if room > 1 {
        spans.push(Span::styled(
            format!(" {}", truncate(&facts.join(" · "), room)),
            dim,
        ));
    }
    rows.push(Row::new(spans, b, Some(p)));
    if !open {
        return;
    }
    let mut about = Vec::new();
    if let Some(k) = &d.first_kept {
        about.push(format!("keeps from {k}"));
    }
    if d.from_extension {
        about.push("written by an extension".to_owned());
    }
    if let Some(short) = &d.short_summary {
        about.push(short.clone());
    }
    if !about.is_empty() {
        body_rows(
            &about.join(" · "),
            (width, 2),
            usize::MAX,
            dim,
            (b, p),
            rows,
        );
    }
    body_rows(
        &d.summary,
        (width, 2),
        usize::MAX,
        Style::default(),
        (b, p),
        rows,
    );
    if let Some(a) = &d.archive {
        for l in a.describe() {
            body_rows(&l, (width, 2), usize::MAX, style, (b, p), rows);
        }
    }
    rows.push(Row::new(
        vec![Span::styled(truncate(DIVIDER_END, width), style)],
        b,
        Some(p),
    ));
}
