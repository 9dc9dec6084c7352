//! The chart in the terminal: one column per stretch of the path, bars of
//! eighth blocks, the compactions marked under the axis and listed with
//! what they removed. Every line fits the width; the same series and width
//! always give the same text.

use std::fmt::Write as _;

use super::{Drop, Series};
use crate::output::{Color, Style, display_width, escape_controls, pad_end, pad_start};
use crate::view::text::{thousands, truncate};

/// Rows of bars.
pub const HEIGHT: usize = 10;

/// The partial blocks, one to seven eighths.
const EIGHTHS: [char; 8] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇'];

/// A round number at or above `n`: 1, 2, 2.5 or 5 times a power of ten.
pub fn nice_top(n: u64) -> u64 {
    let mut power = 1u64;
    while power.saturating_mul(10) <= n {
        power = power.saturating_mul(10);
    }
    let quarter = (power >= 10).then(|| power / 10 * 25);
    [Some(power), Some(power * 2), quarter, Some(power * 5)]
        .into_iter()
        .flatten()
        .find(|&top| top >= n.max(1))
        .unwrap_or_else(|| power.saturating_mul(10))
}

/// The value of each of `columns` columns: the highest point in its
/// stretch of the path (the one before it when it has none).
fn column_values(series: &Series, columns: usize) -> Vec<u64> {
    let n = series.path_len.max(1);
    let mut values = vec![None; columns];
    for p in &series.points {
        let c = (p.position * columns / n).min(columns - 1);
        values[c] = Some(values[c].map_or(p.tokens, |v: u64| v.max(p.tokens)));
    }
    let mut last = 0;
    values
        .into_iter()
        .map(|v| {
            last = v.unwrap_or(last);
            last
        })
        .collect()
}

/// The column of path position `p`.
fn column_of(p: usize, columns: usize, n: usize) -> usize {
    (p * columns / n.max(1)).min(columns.saturating_sub(1))
}

/// The chart of `series` in `width` columns with `height` rows of bars.
pub fn render(series: &Series, width: usize, height: usize, style: Style) -> String {
    let width = width.max(24);
    let height = height.max(2);
    let mut out = String::new();
    // Ids come from the session: escaped, as every id a command prints.
    let leaf = escape_controls(series.leaf_id.as_deref().unwrap_or("null"));
    let title = format!(
        "context tokens along the path to {leaf} ({})",
        crate::output::counted(series.path_len, "entry", "entries")
    );
    let figures = format!(
        "{} at the leaf · peak {} · window {} · {}",
        thousands(series.at_leaf()),
        thousands(series.peak()),
        thousands(series.window),
        crate::output::counted(series.compactions.len(), "compaction", "compactions")
    );
    let _ = writeln!(
        out,
        "{}",
        style.paint(Color::Bold, &truncate(&title, width))
    );
    let _ = writeln!(out, "{}", truncate(&figures, width));
    if series.path_len == 0 {
        out.push_str("(the path is empty: nothing to draw)\n");
        return out;
    }
    let top = nice_top(series.peak());
    let label_w = display_width(&thousands(top));
    let columns = width
        .saturating_sub(label_w + 2)
        .min(series.path_len)
        .max(1);
    let values = column_values(series, columns);
    let total = (height * 8) as u64;
    let eighths: Vec<u64> = values
        .iter()
        .map(|&v| (v * total + top / 2) / top)
        .collect();
    for row in 0..height {
        let level = (height - 1 - row) as u64;
        let label = if row == 0 {
            thousands(top)
        } else if row == height / 2 {
            thousands(top * (height - row) as u64 / height as u64)
        } else {
            String::new()
        };
        let tick = if label.is_empty() { '│' } else { '┤' };
        let bars: String = eighths
            .iter()
            .map(|&e| {
                if e >= (level + 1) * 8 {
                    '█'
                } else if e > level * 8 {
                    EIGHTHS[(e - level * 8) as usize]
                } else {
                    ' '
                }
            })
            .collect();
        let _ = writeln!(
            out,
            "{label:>label_w$} {tick}{}",
            style.paint(Color::Cyan, bars.trim_end())
        );
    }
    let _ = writeln!(out, "{:>label_w$} └{}", "0", "─".repeat(columns));
    let marks = marks(&series.compactions, columns, series.path_len);
    if !marks.trim().is_empty() {
        let _ = writeln!(
            out,
            "{:label_w$}  {}",
            "",
            style.paint(Color::Yellow, marks.trim_end())
        );
    }
    let end = series.path_len.to_string();
    let gap = columns.saturating_sub(1 + end.len()).max(1);
    let _ = writeln!(out, "{:label_w$}  1{}{end}", "", " ".repeat(gap));
    out.push_str(&table(series, width));
    out
}

/// `▲1` under the column of each compaction: the number after the mark
/// when it fits before the next mark, else before the mark (`2▲`) at the
/// right edge when the cells there are free, else no number.
fn marks(drops: &[Drop], columns: usize, n: usize) -> String {
    let mut cells = vec![' '; columns];
    let at: Vec<usize> = drops
        .iter()
        .map(|d| column_of(d.position, columns, n))
        .collect();
    // The first cell not yet written.
    let mut free = 0;
    for (i, d) in drops.iter().enumerate() {
        cells[at[i]] = '▲';
        let digits: Vec<char> = d.number.to_string().chars().collect();
        let start = at[i] + 1;
        let next = at.get(i + 1).copied().unwrap_or(columns);
        if start + digits.len() <= next.min(columns) {
            cells[start..start + digits.len()].copy_from_slice(&digits);
            free = start + digits.len();
        } else if next >= columns && at[i] > free + digits.len() {
            cells[at[i] - digits.len()..at[i]].copy_from_slice(&digits);
            free = at[i] + 1;
        } else {
            free = at[i] + 1;
        }
    }
    cells.into_iter().collect()
}

/// One aligned line per compaction: where, before → after, what it removed.
fn table(series: &Series, width: usize) -> String {
    if series.compactions.is_empty() {
        return "no compaction on this path\n".to_owned();
    }
    let head = [
        "#",
        "entry",
        "at",
        "before → after",
        "removed",
        "summarized",
        "by",
    ];
    let rows: Vec<[String; 7]> = series
        .compactions
        .iter()
        .map(|d| {
            [
                d.number.to_string(),
                escape_controls(&d.entry_id).into_owned(),
                (d.position + 1).to_string(),
                format!("{} → {}", thousands(d.before), thousands(d.after)),
                format!("{} ({}%)", thousands(d.removed()), d.removed_percent()),
                format!("{} messages", d.summarized),
                d.made_by.to_owned(),
            ]
        })
        .collect();
    // Numbers to the right, words to the left.
    let right = [true, false, true, true, true, true, false];
    // On a narrow terminal, "by", then "summarized", then "at" give way.
    let mut shown: Vec<usize> = (0..head.len()).collect();
    loop {
        let lines = aligned_lines(&head, &rows, &shown, right);
        let fits = lines.iter().all(|l| display_width(l) <= width);
        if fits || shown.len() <= 4 {
            let mut out = String::new();
            for l in lines {
                let _ = writeln!(out, "{}", truncate(&l, width));
            }
            return out;
        }
        let drop = [6, 5, 2].into_iter().find(|c| shown.contains(c));
        shown.retain(|&c| Some(c) != drop);
    }
}

/// The header and rows in the `shown` columns, each padded to its widest cell.
fn aligned_lines(
    head: &[&str; 7],
    rows: &[[String; 7]],
    shown: &[usize],
    right: [bool; 7],
) -> Vec<String> {
    let mut widths = head.map(display_width);
    for r in rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(display_width(cell));
        }
    }
    let line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (n, (&i, cell)) in shown.iter().zip(&cells).enumerate() {
            if n > 0 {
                l.push_str("  ");
            }
            l.push_str(&if right[i] {
                pad_start(cell, widths[i])
            } else {
                pad_end(cell, widths[i])
            });
        }
        l.trim_end().to_owned()
    };
    let mut out = vec![line(shown.iter().map(|&i| head[i]).collect())];
    for r in rows {
        out.push(line(shown.iter().map(|&i| r[i].as_str()).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tops_are_round() {
        let cases = [
            (0, 1),
            (1, 1),
            (7, 10),
            (12, 20),
            (21, 25),
            (26, 50),
            (177_657, 200_000),
            (200_001, 250_000),
            (999, 1000),
        ];
        for (n, top) in cases {
            assert_eq!(nice_top(n), top, "{n}");
        }
    }

    #[test]
    fn marks_keep_their_numbers_apart() {
        let drop = |number, position| Drop {
            number,
            position,
            entry_id: String::new(),
            before: 0,
            after: 0,
            summarized: 0,
            made_by: "llm",
        };
        assert_eq!(marks(&[drop(1, 2), drop(2, 8)], 10, 10), "  ▲1    ▲2");
        // Too close for the first number.
        assert_eq!(marks(&[drop(1, 2), drop(2, 3)], 10, 10), "  ▲▲2     ");
        // At the right edge the number goes before the mark.
        assert_eq!(marks(&[drop(1, 2), drop(12, 9)], 10, 10), "  ▲1   12▲");
        // Unless that would touch the number before.
        assert_eq!(marks(&[drop(1, 2), drop(12, 5)], 6, 6), "  ▲1 ▲");
    }
}
