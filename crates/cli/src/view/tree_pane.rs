//! The tree pane: every entry of the session in tree order, indented at
//! branch points, with labels, the leaf's path and the leaf marked
//! (docs/design.md, "Branch summaries" navigation starts here).

use musepi_session_model::Session;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::text::{sanitize, truncate};
use crate::output::{display_width, pad_end};
use crate::report::entries::{kind_of, preview_of};

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

/// Which entries the tree pane lists (`f` cycles through them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TreeFilter {
    /// Every entry.
    #[default]
    All,
    /// User messages only.
    User,
    /// Labelled entries only.
    Labelled,
}

impl TreeFilter {
    /// The next filter in the cycle all → user → labelled → all.
    #[must_use]
    pub fn next(self) -> Self {
        match self {
            Self::All => Self::User,
            Self::User => Self::Labelled,
            Self::Labelled => Self::All,
        }
    }

    /// How the pane's title names it.
    pub fn name(self) -> &'static str {
        match self {
            Self::All => "all entries",
            Self::User => "user messages",
            Self::Labelled => "labelled",
        }
    }

    fn keeps(self, row: &TreeRow) -> bool {
        match self {
            Self::All => true,
            Self::User => row.kind == "user",
            Self::Labelled => row.label.is_some(),
        }
    }
}

/// One entry of the tree, before filtering.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    /// Its row, without the branch lines.
    row: TreeRow,
    /// The parent's node.
    parent: Option<usize>,
}

/// The rows of a session's tree under a filter, with the leaf's row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeModel {
    /// A root row first, then the entries the filter keeps in pre-order
    /// (the leaf always), each under its nearest kept ancestor.
    pub rows: Vec<TreeRow>,
    /// The leaf's row (the root row when there is no leaf).
    pub leaf_row: usize,
    /// The filter the rows are for.
    pub filter: TreeFilter,
    /// The widest branch lines and id of a row together, in columns: the
    /// kinds start after it, in one column, as in `musepi session tree`.
    pub id_width: usize,
    /// The widest kind: the previews start after it, in one column.
    pub kind_width: usize,
    /// Every entry in pre-order.
    nodes: Vec<Node>,
}

impl TreeModel {
    /// The tree of `session`, every entry shown.
    pub fn from_session(session: &Session) -> Self {
        let tree = session.tree();
        let leaf = session.leaf_index();
        let path: std::collections::BTreeSet<usize> = leaf
            .map(|l| session.path_indices(l).into_iter().collect())
            .unwrap_or_default();
        let mut nodes = Vec::with_capacity(session.entries().len());
        // (entry, parent node, below the leaf)
        let mut stack: Vec<(usize, Option<usize>, bool)> = tree
            .roots()
            .iter()
            .rev()
            .map(|&r| (r, None, false))
            .collect();
        while let Some((i, parent, above_below)) = stack.pop() {
            let entry = &session.entries()[i];
            let below = above_below || leaf == Some(i);
            let node = nodes.len();
            nodes.push(Node {
                row: TreeRow {
                    target: Some(entry.id.to_string()),
                    prefix: String::new(),
                    on_path: path.contains(&i),
                    is_leaf: leaf == Some(i),
                    below_leaf: below,
                    kind: kind_of(entry).to_owned(),
                    preview: sanitize(&preview_of(entry)),
                    label: session.label(entry.id.as_str()).map(sanitize),
                },
                parent,
            });
            for &c in tree.children(i).iter().rev() {
                stack.push((c, Some(node), below));
            }
        }
        let mut model = Self {
            rows: Vec::new(),
            leaf_row: 0,
            filter: TreeFilter::All,
            id_width: 0,
            kind_width: 0,
            nodes,
        };
        model.set_filter(TreeFilter::All);
        model
    }

    /// Shows the entries `filter` keeps, each under its nearest kept
    /// ancestor, with the branch lines drawn anew.
    pub fn set_filter(&mut self, filter: TreeFilter) {
        self.filter = filter;
        let kept: Vec<bool> = self
            .nodes
            .iter()
            .map(|n| n.row.is_leaf || filter.keeps(&n.row))
            .collect();
        // Children by nearest kept ancestor, in pre-order.
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        let mut roots = Vec::new();
        for (i, node) in self.nodes.iter().enumerate() {
            if !kept[i] {
                continue;
            }
            let mut up = node.parent;
            while let Some(p) = up.filter(|&p| !kept[p]) {
                up = self.nodes[p].parent;
            }
            match up {
                Some(p) => children[p].push(i),
                None => roots.push(i),
            }
        }
        let leaf_anywhere = self.nodes.iter().any(|n| n.row.is_leaf);
        let mut rows = vec![TreeRow {
            target: None,
            prefix: String::new(),
            on_path: true,
            is_leaf: !leaf_anywhere,
            below_leaf: !leaf_anywhere,
            kind: String::new(),
            preview: "before the first entry".to_owned(),
            label: None,
        }];
        let mut leaf_row = 0;
        // (node, prefix of its row, prefix of the rows under it)
        let mut stack: Vec<(usize, String, String)> = roots
            .iter()
            .rev()
            .map(|&r| (r, String::new(), String::new()))
            .collect();
        while let Some((i, first, rest)) = stack.pop() {
            if self.nodes[i].row.is_leaf {
                leaf_row = rows.len();
            }
            rows.push(TreeRow {
                prefix: first,
                ..self.nodes[i].row.clone()
            });
            if let [only] = children[i].as_slice() {
                // A linear run stays at the same indentation.
                stack.push((*only, rest.clone(), rest));
                continue;
            }
            for (n, &c) in children[i].iter().enumerate().rev() {
                let last = n + 1 == children[i].len();
                stack.push((
                    c,
                    format!("{rest}{}", if last { "└─ " } else { "├─ " }),
                    format!("{rest}{}", if last { "   " } else { "│  " }),
                ));
            }
        }
        self.id_width = rows
            .iter()
            .map(|r| display_width(&r.prefix) + display_width(&row_id(r)))
            .max()
            .unwrap_or(0);
        self.kind_width = rows
            .iter()
            .map(|r| display_width(&r.kind))
            .max()
            .unwrap_or(0);
        self.rows = rows;
        self.leaf_row = leaf_row;
    }

    /// The row of `target`, if the filter shows it.
    pub fn row_of(&self, target: Option<&str>) -> Option<usize> {
        self.rows.iter().position(|r| r.target.as_deref() == target)
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
        self.top = follow(self.cursor, self.top, height);
    }
}

/// The first row to show, scrolled from `top` as little as it takes, for
/// the row `cursor` to be visible in `height` rows.
pub fn follow(cursor: usize, top: usize, height: usize) -> usize {
    let height = height.max(1);
    if cursor < top {
        cursor
    } else if cursor >= top + height {
        cursor + 1 - height
    } else {
        top
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
        .title(format!(" tree · {} · f: filter ", model.filter.name()));
    let inner = block.inner(area);
    block.render(area, buf);
    let width = usize::from(inner.width);
    let lines: Vec<Line<'static>> = model
        .rows
        .iter()
        .enumerate()
        .skip(pane.top)
        .take(usize::from(inner.height))
        .map(|(i, row)| row_line(row, i == pane.cursor, width, model))
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

/// The id a row shows.
fn row_id(row: &TreeRow) -> String {
    row.target.clone().unwrap_or_else(|| "(root)".to_owned())
}

/// One row: the cursor, the branch lines, the mark and the id, then the
/// kind and the preview each in its column (`model`'s widths), then the
/// label and the leaf's mark.
fn row_line(row: &TreeRow, selected: bool, width: usize, model: &TreeModel) -> Line<'static> {
    let marker = if row.on_path { "●" } else { "○" };
    let cursor = if selected { "›" } else { " " };
    let id = row_id(row);
    let id_width = display_width(&id);
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
        // Filled below: the room up to the kinds' column.
        Span::raw(String::new()),
        Span::raw(format!(
            " {}  ",
            pad_end(&row.kind, model.kind_width.max(display_width(&row.kind)))
        )),
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
    let prefix = left_cut(&row.prefix, width.saturating_sub(fixed));
    let pad = model
        .id_width
        .saturating_sub(display_width(&prefix) + id_width);
    spans[1].content = prefix.into();
    // The kinds line up, as far as the width allows.
    let used: usize = spans.iter().chain(&tail).map(Span::width).sum();
    spans[4].content = " ".repeat(pad.min(width.saturating_sub(used))).into();
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

#[cfg(test)]
mod tests {
    use super::follow;

    #[test]
    fn follow_scrolls_as_little_as_it_takes_to_show_the_cursor() {
        // (cursor, top, height, the new top)
        let cases = [
            ("in view", 5, 3, 4, 3),
            ("above the view", 1, 3, 4, 1),
            ("below the view", 9, 3, 4, 6),
            ("on the last row shown", 6, 3, 4, 3),
            ("just past it", 7, 3, 4, 4),
            ("no height counts as one row", 7, 3, 0, 7),
        ];
        for (name, cursor, top, height, expected) in cases {
            assert_eq!(follow(cursor, top, height), expected, "{name}");
        }
    }
}
