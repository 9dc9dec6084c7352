//! The tree pane: every entry of the session in tree order, indented at
//! branch points, with labels, the leaf's path and the leaf marked
//! (SPEC §13.1 navigation starts here).

use musepi_session_model::Session;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::text::{sanitize, truncate};
use crate::commands::session::{kind_of, preview_of};

/// One row of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeRow {
    /// The entry to navigate to; `None` is the root (before the first entry).
    pub target: Option<String>,
    /// Branch lines before the marker (`├─ `, `│  `, …).
    pub prefix: String,
    /// On the path from the root to the leaf.
    pub on_path: bool,
    /// The leaf itself.
    pub is_leaf: bool,
    /// The leaf or one of its descendants: going there abandons nothing.
    pub below_leaf: bool,
    /// Role or entry type.
    pub kind: String,
    /// A short preview of the entry.
    pub preview: String,
    /// The entry's label.
    pub label: Option<String>,
}

/// The rows of a session's tree, with the leaf's row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeModel {
    /// A root row first, then every entry in pre-order.
    pub rows: Vec<TreeRow>,
    /// The leaf's row (the root row when there is no leaf).
    pub leaf_row: usize,
}

impl TreeModel {
    /// The tree of `session`.
    pub fn from_session(session: &Session) -> Self {
        let tree = session.tree();
        let leaf = session.leaf_index();
        let path: std::collections::BTreeSet<usize> = leaf
            .map(|l| session.path_indices(l).into_iter().collect())
            .unwrap_or_default();
        let mut rows = vec![TreeRow {
            target: None,
            prefix: String::new(),
            on_path: true,
            is_leaf: leaf.is_none(),
            below_leaf: leaf.is_none(),
            kind: String::new(),
            preview: "before the first entry".to_owned(),
            label: None,
        }];
        let mut leaf_row = 0;
        // (entry, prefix of its row, prefix of the rows under it, below the leaf)
        let mut stack: Vec<(usize, String, String, bool)> = tree
            .roots()
            .iter()
            .rev()
            .map(|&r| (r, String::new(), String::new(), false))
            .collect();
        while let Some((i, first, rest, above_below)) = stack.pop() {
            let entry = &session.entries()[i];
            let below = above_below || leaf == Some(i);
            if leaf == Some(i) {
                leaf_row = rows.len();
            }
            rows.push(TreeRow {
                target: Some(entry.id.to_string()),
                prefix: first,
                on_path: path.contains(&i),
                is_leaf: leaf == Some(i),
                below_leaf: below,
                kind: kind_of(entry).to_owned(),
                preview: sanitize(&preview_of(entry)),
                label: session.label(entry.id.as_str()).map(sanitize),
            });
            let children = tree.children(i);
            if let [only] = children {
                // A linear run stays at the same indentation.
                stack.push((*only, rest.clone(), rest, below));
                continue;
            }
            for (n, &c) in children.iter().enumerate().rev() {
                let last = n + 1 == children.len();
                stack.push((
                    c,
                    format!("{rest}{}", if last { "└─ " } else { "├─ " }),
                    format!("{rest}{}", if last { "   " } else { "│  " }),
                    below,
                ));
            }
        }
        Self { rows, leaf_row }
    }
}

/// The pane's state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreePane {
    /// Whether it is shown (and has the keys).
    pub open: bool,
    /// The selected row.
    pub cursor: usize,
    /// The first row shown.
    pub top: usize,
}

impl TreePane {
    /// Moves the cursor by `delta` rows within `len` rows, keeping it in
    /// a view of `height` rows.
    pub fn move_by(&mut self, delta: isize, len: usize, height: usize) {
        let last = len.saturating_sub(1);
        self.cursor = self.cursor.saturating_add_signed(delta).min(last);
        self.follow(height);
    }

    /// Scrolls so that the cursor is visible in `height` rows.
    pub fn follow(&mut self, height: usize) {
        let height = height.max(1);
        if self.cursor < self.top {
            self.top = self.cursor;
        } else if self.cursor >= self.top + height {
            self.top = self.cursor + 1 - height;
        }
    }
}

/// Rows of the pane's inside for an outer height (the border takes two).
pub fn inner_height(outer: u16) -> usize {
    usize::from(outer.saturating_sub(2))
}

/// Draws the pane into `area`.
pub fn draw(model: &TreeModel, pane: &TreePane, area: Rect, buf: &mut Buffer) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::Blue))
        .title(" tree · Enter: go there · t: close ");
    let inner = block.inner(area);
    block.render(area, buf);
    let width = usize::from(inner.width);
    let lines: Vec<Line<'static>> = model
        .rows
        .iter()
        .enumerate()
        .skip(pane.top)
        .take(usize::from(inner.height))
        .map(|(i, row)| row_line(row, i == pane.cursor, width))
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

fn row_line(row: &TreeRow, selected: bool, width: usize) -> Line<'static> {
    let marker = if row.on_path { "●" } else { "○" };
    let cursor = if selected { "›" } else { " " };
    let id = row.target.clone().unwrap_or_else(|| "(root)".to_owned());
    let mut spans = vec![
        Span::styled(
            cursor.to_owned(),
            Style::default()
                .fg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
        ),
        Span::styled(String::new(), Style::default().fg(Color::DarkGray)),
        Span::styled(
            format!("{marker} "),
            Style::default().fg(if row.on_path {
                Color::Green
            } else {
                Color::DarkGray
            }),
        ),
        Span::styled(id, Style::default().fg(Color::Cyan)),
        Span::raw(if row.kind.is_empty() {
            " ".to_owned()
        } else {
            format!(" {} ", row.kind)
        }),
    ];
    let mut tail = Vec::new();
    if let Some(label) = &row.label {
        tail.push(Span::styled(
            format!(" [{label}]"),
            Style::default().fg(Color::Yellow),
        ));
    }
    if row.is_leaf {
        tail.push(Span::styled(
            " ◀ leaf",
            Style::default()
                .fg(Color::Green)
                .add_modifier(Modifier::BOLD),
        ));
    }
    // Deep branches: the prefix gives up its left end before the marks do.
    let fixed: usize = spans.iter().chain(&tail).map(Span::width).sum();
    spans[1].content = left_cut(&row.prefix, width.saturating_sub(fixed)).into();
    // The preview gets what is left after the marks, which always show.
    let used: usize = spans.iter().chain(&tail).map(Span::width).sum();
    let room = width.saturating_sub(used);
    if room > 1 {
        spans.push(Span::styled(
            truncate(&row.preview, room),
            Style::default().fg(Color::Gray),
        ));
    }
    spans.extend(tail);
    let mut line = Line::from(spans);
    if selected {
        line = line.style(Style::default().add_modifier(Modifier::REVERSED));
    }
    if line.width() > width {
        // Too narrow for everything: plain text cut to the width.
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        return Line::from(truncate(&text, width)).style(line.style);
    }
    line
}

/// The last `width` columns of a branch prefix, `…` first when cut.
fn left_cut(prefix: &str, width: usize) -> String {
    let chars: Vec<char> = prefix.chars().collect();
    if chars.len() <= width {
        return prefix.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::from("…");
    out.extend(&chars[chars.len() - (width - 1)..]);
    out
}
