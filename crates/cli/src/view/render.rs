//! Drawing the state: title, transcript with its cursor gutter and search
//! highlights, the tree pane, the status or prompt line and the key help.
//! Every region may be empty; nothing here can panic on a small screen.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::app::{App, GUTTER, Mode, areas};
use super::keys::SPINNER;
use super::lines::Row;
use super::text::{find_all, thousands, truncate};
use super::tree_pane;
use crate::output::{char_width, display_width};

/// The question asked before leaving a branch.
pub const CONFIRM: &str = "summarize the branch you leave? [y/n/Esc]";

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, app: &App) {
    let area = frame.area();
    let a = areas(area.width, area.height, app.pane.open);
    let buf = frame.buffer_mut();
    header(app, a.header, buf);
    if a.tree != Some(a.transcript) {
        transcript(app, a.transcript, buf);
    }
    if let Some(tree) = a.tree {
        Clear.render(tree, buf);
        tree_pane::draw(&app.tree, &app.pane, tree, buf);
    }
    if app.help {
        let main = Rect {
            y: a.transcript.y,
            height: a.transcript.height,
            ..area
        };
        keys_screen(main, buf);
    }
    let cursor = status(app, a.status, buf);
    footer(app, a.footer, buf);
    if let Some(position) = cursor {
        frame.set_cursor_position(position);
    }
}

fn put(line: Line<'_>, area: Rect, buf: &mut Buffer) {
    if area.width > 0 && area.height > 0 {
        Paragraph::new(line).render(area, buf);
    }
}

/// The title: the context's tokens against the window first (what the
/// model reads at the leaf), then the file, the leaf and the path's size;
/// the parts that do not fit are left out from the end.
fn header(app: &App, area: Rect, buf: &mut Buffer) {
    let leaf = app.transcript.leaf_id.as_deref().unwrap_or("none");
    let used = app.transcript.context_tokens;
    let window = app.context_window;
    let percent = (used * 100).checked_div(window).unwrap_or(0);
    let parts = [
        " musepi view".to_owned(),
        format!(
            "context {} / {} tokens ({percent}%)",
            thousands(used),
            thousands(window)
        ),
        app.file.clone(),
        format!("leaf {leaf}"),
        // Every entry of the path shows, not only messages.
        format!("{} entries", app.transcript.blocks.len()),
    ];
    let width = usize::from(area.width);
    let short = format!(" {}/{} tokens", thousands(used), thousands(window));
    let text = (2..=parts.len())
        .rev()
        .map(|n| parts[..n].join(" · "))
        .chain([short])
        .find(|t| display_width(t) <= width)
        .unwrap_or_else(|| truncate(&parts[..2].join(" · "), width));
    let style = Style::default()
        .fg(Color::Black)
        .bg(Color::Cyan)
        .add_modifier(Modifier::BOLD);
    buf.set_style(area, style);
    put(Line::styled(text, style), area, buf);
}

/// Every key, as `?` lists them (docs/cli.md has the same list).
pub const KEYS: [(&str, &str); 12] = [
    ("↑ ↓  j k", "move"),
    (
        "PgUp PgDn Space",
        "page (also ctrl+b ctrl+u, ctrl+f ctrl+d)",
    ),
    ("Home g  End", "the top, the bottom"),
    ("G  l", "the leaf"),
    ("Enter", "open or close the fold under the cursor"),
    ("ctrl+o", "expand the compaction under the cursor, or all"),
    ("/  n  N", "search, the next match, the previous one"),
    (
        "t  Tab",
        "the tree pane: Enter go there (asks whether to summarize),",
    ),
    ("", "f filter, l the leaf's row, Esc/t/Tab close"),
    (
        ":",
        "a command: compact [instructions], find TEXT, tree, leaf, q",
    ),
    ("?", "this list"),
    ("q  Esc  ctrl+c", "quit"),
];

/// The key list over `area`, until the next key.
fn keys_screen(area: Rect, buf: &mut Buffer) {
    Clear.render(area, buf);
    let width = KEYS
        .iter()
        .map(|(k, _)| display_width(k))
        .max()
        .unwrap_or(0);
    let mut lines = vec![
        Line::styled(
            " keys (any key closes this list)",
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Line::raw(""),
    ];
    for (key, what) in KEYS {
        let pad = width.saturating_sub(display_width(key));
        lines.push(Line::from(vec![
            Span::styled(
                format!("  {key}{:pad$}  ", ""),
                Style::default().fg(Color::Cyan),
            ),
            Span::raw(what),
        ]));
    }
    Paragraph::new(lines).render(area, buf);
}

/// Where the screen is in the transcript: `rows 120–143 of 310`.
pub fn position(app: &App) -> String {
    let rows = app.rows().len();
    if rows == 0 {
        return String::new();
    }
    let first = app.top() + 1;
    let last = (app.top() + app.page()).min(rows);
    format!("rows {first}–{last} of {rows}")
}

fn transcript(app: &App, area: Rect, buf: &mut Buffer) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let rows = app.rows();
    if rows.is_empty() {
        put(
            Line::styled(
                "  (no messages on this path)",
                Style::default().fg(Color::DarkGray),
            ),
            area,
            buf,
        );
        return;
    }
    let query = app.query.as_deref().filter(|q| !q.is_empty());
    let lines: Vec<Line<'_>> = rows
        .iter()
        .enumerate()
        .skip(app.top())
        .take(usize::from(area.height))
        .map(|(i, row)| {
            let mark = if i == app.cursor() { "› " } else { "  " };
            let gutter = Span::styled(
                truncate(mark, usize::from(GUTTER)),
                Style::default()
                    .fg(Color::Yellow)
                    .add_modifier(Modifier::BOLD),
            );
            let mut spans = vec![gutter];
            match query {
                Some(q) => spans.extend(highlighted(row, q)),
                None => spans.extend(row.line.spans.iter().cloned()),
            }
            Line::from(spans)
        })
        .collect();
    Paragraph::new(lines).render(area, buf);
}

/// The row's spans with every match of `query` marked.
fn highlighted<'a>(row: &'a Row, query: &str) -> Vec<Span<'a>> {
    let ranges = find_all(&row.text, query);
    if ranges.is_empty() {
        return row.line.spans.clone();
    }
    let mark = Style::default().fg(Color::Black).bg(Color::Yellow);
    let mut out = Vec::new();
    let mut offset = 0;
    for span in &row.line.spans {
        let text = span.content.as_ref();
        let (start, end) = (offset, offset + text.len());
        let mut at = start;
        for &(s, e) in &ranges {
            let (s, e) = (s.max(start), e.min(end));
            if s >= e {
                continue;
            }
            if s > at {
                out.push(Span::styled(
                    text[at - start..s - start].to_owned(),
                    span.style,
                ));
            }
            out.push(Span::styled(
                text[s - start..e - start].to_owned(),
                span.style.patch(mark),
            ));
            at = e;
        }
        if at < end {
            out.push(Span::styled(text[at - start..].to_owned(), span.style));
        }
        offset = end;
    }
    out
}

/// A yes/no question on the status line: bold yellow, cut to `width`.
fn question(text: &str, width: usize) -> Line<'static> {
    Line::styled(
        truncate(text, width),
        Style::default()
            .fg(Color::Yellow)
            .add_modifier(Modifier::BOLD),
    )
}

/// The status or prompt line; returns where the terminal cursor goes.
fn status(app: &App, area: Rect, buf: &mut Buffer) -> Option<Position> {
    let width = usize::from(area.width);
    let (line, cursor) = match &app.mode {
        Mode::Search(text) | Mode::Command(text) => {
            let lead = if matches!(app.mode, Mode::Search(_)) {
                "/"
            } else {
                ":"
            };
            let shown = format!("{lead}{text}");
            // Long input scrolls: its end stays visible.
            let visible = tail(&shown, width.saturating_sub(1));
            let x = display_width(&visible) as u16;
            (Line::raw(visible), Some(Position::new(area.x + x, area.y)))
        }
        Mode::Confirm { target } => {
            let text = format!(
                "{CONFIRM} → {} · y: {}",
                target.as_deref().unwrap_or("root"),
                app.strategies.branch
            );
            (question(&text, width), None)
        }
        Mode::ConfirmCompact { instructions } => {
            let text = format!(
                "compact at the leaf with {}? [y/n]",
                app.compact_strategy(instructions.is_some())
            );
            (question(&text, width), None)
        }
        Mode::Busy {
            label,
            tick,
            cancelling,
        } => {
            let spin = SPINNER[tick % SPINNER.len()];
            let text = if *cancelling {
                format!("{spin} cancelling…")
            } else {
                format!("{spin} {label}… (Esc cancels)")
            };
            (Line::raw(truncate(&text, width)), None)
        }
        Mode::Normal => (normal_status(app, width), None),
    };
    put(line, area, buf);
    cursor.filter(|_| area.height > 0 && area.width > 0)
}

/// `text` in `width` columns. A message too long for the line keeps its
/// last clause, after the last `; ` (what to do: `pass --force`), whole
/// when it takes at most half the line, and cuts what comes before it.
fn fit_keeping_hint(text: &str, width: usize) -> String {
    if display_width(text) <= width {
        return text.to_owned();
    }
    match text.rsplit_once("; ") {
        Some((head, hint)) if display_width(hint) + 4 <= width / 2 + 2 => {
            let room = width - display_width(hint) - 2;
            format!("{}; {hint}", truncate(head, room))
        }
        _ => truncate(text, width),
    }
}

/// The status line in normal mode: the message on the left, where the
/// screen is in the transcript on the right when both fit (the message
/// wins when they do not).
fn normal_status(app: &App, width: usize) -> Line<'static> {
    let (text, style) = match &app.status {
        Some(s) if s.error => (s.text.clone(), Style::default().fg(Color::Red)),
        Some(s) => (s.text.clone(), Style::default().fg(Color::Green)),
        None => (String::new(), Style::default()),
    };
    let transcript_shown = app.areas().tree != Some(app.areas().transcript);
    let position = if transcript_shown {
        position(app)
    } else {
        String::new()
    };
    let needed = display_width(&text) + 2 + display_width(&position);
    if position.is_empty() || needed > width {
        return Line::styled(fit_keeping_hint(&text, width), style);
    }
    Line::from(vec![
        Span::styled(text.clone(), style),
        Span::raw(" ".repeat(width - display_width(&text) - display_width(&position))),
        Span::styled(position, Style::default().fg(Color::DarkGray)),
    ])
}

/// The last `width` columns of `s`.
fn tail(s: &str, width: usize) -> String {
    let mut used = 0;
    let mut start = s.len();
    for (i, c) in s.char_indices().rev() {
        let w = char_width(c);
        if used + w > width {
            break;
        }
        used += w;
        start = i;
    }
    s[start..].to_owned()
}

/// Key help for the mode, longest first: the footer shows the first
/// that fits.
pub fn help(app: &App) -> &'static [&'static str] {
    match &app.mode {
        Mode::Normal if app.pane.open => &[
            "↑↓/jk PgUp/PgDn Home/End move · Enter go there · l leaf · f filter · t/Tab/Esc close · q quit",
            "↑↓ move · Enter go there · l leaf · f filter · t close · q quit",
            "Enter go · f filter · t close · q quit",
            "Enter go · t close · q quit",
        ],
        Mode::Normal => &[
            "↑↓/jk PgUp/PgDn Home/End scroll · / search n/N · G leaf · ctrl+o compaction · Enter fold · t tree · :compact · q quit",
            "↑↓ PgUp/PgDn Home/End · / search n/N · G leaf · ^O expand · ⏎ fold · t tree · :compact · q quit",
            "↑↓ scroll · / search · G leaf · ^O expand · ⏎ fold · t tree · :compact · q quit",
            "^O expand · t tree · / search · q quit",
            "q quit",
        ],
        Mode::Search(_) => &["Enter find · Esc cancel"],
        Mode::Command(_) => &[
            "compact [instructions] · find TEXT · tree · leaf · q · Enter run · Esc cancel",
            "compact [instructions] · Enter run · Esc cancel",
        ],
        Mode::ConfirmCompact { .. } => &[
            "y or Enter compact (a compaction entry is appended) · n or Esc leave the file as it is",
            "y compact · n/Esc cancel",
            "y/n",
        ],
        Mode::Confirm { .. } => &[
            "y summarize and go · n go without a summary · Esc stay here",
            "y/n/Esc",
        ],
        Mode::Busy { .. } => &[
            "Esc or ctrl+c cancels; the file is left as it was",
            "Esc cancels",
        ],
    }
}

fn footer(app: &App, area: Rect, buf: &mut Buffer) {
    let width = usize::from(area.width);
    let variants = help(app);
    let text = variants
        .iter()
        .find(|v| display_width(v) <= width)
        .map_or_else(
            || truncate(variants[variants.len() - 1], width),
            |v| (*v).to_owned(),
        );
    put(
        Line::styled(text, Style::default().fg(Color::DarkGray)),
        area,
        buf,
    );
}
