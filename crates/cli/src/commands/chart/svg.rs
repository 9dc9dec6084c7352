//! The chart as an SVG file: the context's tokens as a filled line along
//! the path, a dashed line and a label at every compaction with what it
//! removed, the axes with round figures. Plain SVG 1.1 that any browser or
//! image viewer shows; the same series always gives the same bytes.

use std::fmt::Write as _;

use super::Series;
use super::text::nice_top;
use crate::output::escape_controls;
use crate::view::text::thousands;

/// The canvas.
const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 400.0;

/// The plot's place on the canvas: room for the title above, the token
/// labels on the left and the entry labels below.
struct Margins {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

const MARGINS: Margins = Margins {
    left: 90.0,
    right: 30.0,
    top: 70.0,
    bottom: 50.0,
};

/// The plotting area and the scales that place a point of the series in
/// it: positions along the path left to right, tokens from 0 at the
/// bottom to the chart's top figure.
struct Plot {
    left: f64,
    top: f64,
    width: f64,
    height: f64,
    /// The last position on the path (at least 1).
    last: f64,
    /// The figure at the top of the plot.
    top_tokens: f64,
}

impl Plot {
    fn new(series: &Series, top_tokens: u64) -> Self {
        Self {
            left: MARGINS.left,
            top: MARGINS.top,
            width: WIDTH - MARGINS.left - MARGINS.right,
            height: HEIGHT - MARGINS.top - MARGINS.bottom,
            last: series.path_len.saturating_sub(1).max(1) as f64,
            top_tokens: top_tokens as f64,
        }
    }

    fn x(&self, position: usize) -> f64 {
        self.left + position as f64 / self.last * self.width
    }

    fn y(&self, tokens: u64) -> f64 {
        self.top + self.height - tokens as f64 / self.top_tokens * self.height
    }

    fn right(&self) -> f64 {
        self.left + self.width
    }

    fn bottom(&self) -> f64 {
        self.top + self.height
    }
}

/// Text from a session or the command line (the leaf's id, the file's
/// name) as SVG text: each character
/// [`is_unsafe_char`](crate::output::is_unsafe_char) names is written
/// visibly as [`escape_controls`] writes it (`\n`, `\u0007`, `\u202e`), so
/// the document stays XML 1.0 (which allows no C0 control but tab, line
/// feed and carriage return, not even as a character reference) and a
/// bidirectional control cannot reorder what a viewer shows; U+FFFE and
/// U+FFFF, which XML does not allow either, are written the same way;
/// then `&`, `<`, `>` and `"` become XML entities.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in escape_controls(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\u{fffe}' | '\u{ffff}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// The rows of compaction labels at the top of the plot.
const LABEL_ROWS: usize = 4;
/// The distance between two rows of labels.
const ROW_HEIGHT: f64 = 14.0;
/// The room a character of a label takes at the chart's font size: the
/// widest digits and signs of a sans-serif face at 12 px, so an estimate
/// never falls short of the drawn text.
const CHAR_WIDTH: f64 = 7.0;
/// The least room between two labels on one row.
const LABEL_GAP: f64 = 6.0;

/// A compaction's label, placed.
struct Label {
    text: String,
    /// Where its anchor is.
    x: f64,
    /// Anchored at its end (drawn to the left of its line), else at its start.
    end: bool,
    /// Which row, from the top.
    row: usize,
}

/// Places each compaction's label ("2 −12,345 (61%)") beside its line: to
/// the right, or to the left where the right would leave the canvas, in
/// the first of [`LABEL_ROWS`] rows where it overlaps no label placed
/// before it. A label that fits nowhere is left out (`None`): many
/// compactions close together keep their lines, and the table and the
/// JSON list every one.
fn place_labels(series: &Series, plot: &Plot) -> Vec<Option<Label>> {
    // The right edge of the last label on each row.
    let mut rows = [f64::NEG_INFINITY; LABEL_ROWS];
    series
        .compactions
        .iter()
        .map(|d| {
            let text = format!(
                "{} −{} ({}%)",
                d.number,
                thousands(d.removed()),
                d.removed_percent()
            );
            let width = text.chars().count() as f64 * CHAR_WIDTH;
            let cx = plot.x(d.position);
            let end = cx + 4.0 + width > WIDTH - 4.0;
            let (from, to) = if end {
                (cx - 4.0 - width, cx - 4.0)
            } else {
                (cx + 4.0, cx + 4.0 + width)
            };
            let row = rows.iter().position(|&r| r + LABEL_GAP <= from)?;
            rows[row] = to;
            Some(Label {
                text,
                x: if end { to } else { from },
                end,
                row,
            })
        })
        .collect()
}

/// The SVG document of `series`, titled with `file`.
pub fn render(series: &Series, file: &str) -> String {
    let top = nice_top(series.peak());
    let plot = Plot::new(series, top);
    let (left, right, bottom) = (plot.left, plot.right(), plot.bottom());
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let leaf = series.leaf_id.as_deref().unwrap_or("null");
    let _ = writeln!(
        s,
        r"<title>context tokens along the path to {} of {}</title>",
        escape(leaf),
        escape(file)
    );
    let _ = writeln!(
        s,
        r##"<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="24" font-size="15" font-weight="bold">context tokens along the path to {} ({})</text>"#,
        escape(leaf),
        crate::output::counted(series.path_len, "entry", "entries")
    );
    let _ = writeln!(
        s,
        r##"<text x="{left}" y="44" fill="#555555">{}: {} at the leaf, peak {}, window {}, {}</text>"##,
        escape(file),
        thousands(series.at_leaf()),
        thousands(series.peak()),
        thousands(series.window),
        crate::output::counted(series.compactions.len(), "compaction", "compactions")
    );
    // Grid and y labels: 0, half, top.
    for tokens in [0, top / 2, top] {
        let ty = plot.y(tokens);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{ty:.1}" x2="{right:.1}" y2="{ty:.1}" stroke="#dddddd"/>"##
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#555555">{}</text>"##,
            left - 8.0,
            ty + 4.0,
            thousands(tokens)
        );
    }
    if series.window <= top {
        let wy = plot.y(series.window);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{wy:.1}" x2="{right:.1}" y2="{wy:.1}" stroke="#cc3333" stroke-dasharray="6 4"/>"##
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#cc3333">window {}</text>"##,
            right,
            wy - 4.0,
            thousands(series.window)
        );
    }
    if let (Some(first), Some(end)) = (series.points.first(), series.points.last()) {
        let mut line = String::new();
        for p in &series.points {
            let _ = write!(line, "{:.1},{:.1} ", plot.x(p.position), plot.y(p.tokens));
        }
        let line = line.trim_end();
        let _ = writeln!(
            s,
            r##"<polygon points="{:.1},{bottom:.1} {line} {:.1},{bottom:.1}" fill="#4a90d9" fill-opacity="0.25"/>"##,
            plot.x(first.position),
            plot.x(end.position)
        );
        let _ = writeln!(
            s,
            r##"<polyline points="{line}" fill="none" stroke="#1f5fa8" stroke-width="1.5"/>"##
        );
    }
    let labels = place_labels(series, &plot);
    for (d, label) in series.compactions.iter().zip(&labels) {
        let cx = plot.x(d.position);
        let _ = writeln!(
            s,
            r##"<line x1="{cx:.1}" y1="{}" x2="{cx:.1}" y2="{bottom:.1}" stroke="#d08c00" stroke-dasharray="4 3"/>"##,
            plot.top
        );
        let Some(label) = label else { continue };
        let anchor = if label.end {
            r#" text-anchor="end""#
        } else {
            ""
        };
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}"{anchor} fill="#8a5d00">{}</text>"##,
            label.x,
            plot.top + 12.0 + ROW_HEIGHT * label.row as f64,
            label.text
        );
    }
    let left_out = labels.iter().filter(|l| l.is_none()).count();
    if left_out > 0 {
        let _ = writeln!(
            s,
            r##"<text x="{right:.1}" y="60" text-anchor="end" fill="#8a5d00">{} left out for room; the table and --json list every one</text>"##,
            crate::output::counted(left_out, "label", "labels")
        );
    }
    let _ = writeln!(
        s,
        r##"<line x1="{left}" y1="{bottom:.1}" x2="{right:.1}" y2="{bottom:.1}" stroke="#333333"/>"##
    );
    let _ = writeln!(
        s,
        r##"<text x="{left}" y="{:.1}" fill="#555555">1</text>"##,
        bottom + 18.0
    );
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#555555">{}</text>"##,
        right,
        bottom + 18.0,
        series.path_len
    );
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#555555">entries on the path, oldest first</text>"##,
        left + plot.width / 2.0,
        bottom + 36.0
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::is_unsafe_char;

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape(r#"a&b<c>"d"#), "a&amp;b&lt;c&gt;&quot;d");
        for (text, shown) in [
            ("x\ny\tz", "x\\ny\\tz"),
            (
                "bell\u{7} esc\x1b[2J del\u{7f}",
                "bell\\u0007 esc\\u001b[2J del\\u007f",
            ),
            ("if \u{202e}<b>\u{202c}", "if \\u202e&lt;b&gt;\\u202c"),
            ("not\u{fffe}xml\u{ffff}", "not\\ufffexml\\uffff"),
            (
                "日本語 e\u{301} 👨\u{200d}👩",
                "日本語 e\u{301} 👨\u{200d}👩",
            ),
        ] {
            assert_eq!(escape(text), shown, "{text:?}");
        }
    }

    /// Whether `c` is a character an XML 1.0 document may hold at all.
    fn is_xml_char(c: char) -> bool {
        matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
    }

    #[test]
    fn a_leaf_and_a_file_with_controls_give_valid_xml_shown_as_written() {
        let series = Series {
            leaf_id: Some("leaf\u{202e}\u{7}".to_owned()),
            path_len: 2,
            points: Vec::new(),
            compactions: Vec::new(),
            window: 1000,
        };
        let svg = render(&series, "s\u{202e}\u{7}<1>.jsonl");
        for c in svg.chars() {
            assert!(
                is_xml_char(c) && !is_unsafe_char(c) || c == '\n',
                "{c:?} in {svg}"
            );
        }
        assert!(svg.contains(
            "<title>context tokens along the path to leaf\\u202e\\u0007 of s\\u202e\\u0007&lt;1&gt;.jsonl</title>"
        ), "{svg}");
        assert!(
            svg.contains(r##"fill="#555555">s\u202e\u0007&lt;1&gt;.jsonl: 0 at the leaf"##),
            "{svg}"
        );
    }

    /// A series of `n` entries with a compaction at each of `at`.
    fn with_compactions(n: usize, at: &[usize]) -> Series {
        use super::super::{Drop, Point};
        Series {
            leaf_id: Some("leaf".to_owned()),
            path_len: n,
            points: (0..n)
                .map(|p| Point {
                    position: p,
                    entry_id: format!("{p:08}"),
                    tokens: 50_000 + (p as u64 % 7) * 1_000,
                })
                .collect(),
            compactions: at
                .iter()
                .enumerate()
                .map(|(k, &p)| Drop {
                    number: k + 1,
                    position: p,
                    entry_id: format!("{p:08}"),
                    before: 123_456,
                    after: 23_456,
                    summarized: 40,
                    made_by: "snapcompact",
                })
                .collect(),
            window: 200_000,
        }
    }

    /// The compaction labels of `svg`: the span each takes (as the label
    /// placement estimates it), its row's y and its text.
    fn labels_of(svg: &str) -> Vec<(f64, f64, f64, String)> {
        svg.lines()
            .filter(|l| l.starts_with("<text ") && l.contains(r##"fill="#8a5d00">"##))
            .filter(|l| !l.contains("left out"))
            .map(|l| {
                let attr = |name: &str| -> f64 {
                    let from = l.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
                    l[from..from + l[from..].find('"').unwrap()]
                        .parse()
                        .unwrap()
                };
                let text = &l[l.find('>').unwrap() + 1..l.rfind("</text>").unwrap()];
                let width = text.chars().count() as f64 * CHAR_WIDTH;
                let x = attr("x");
                let (from, to) = if l.contains(r#"text-anchor="end""#) {
                    (x - width, x)
                } else {
                    (x, x + width)
                };
                (from, to, attr("y"), text.to_owned())
            })
            .collect()
    }

    #[test]
    fn the_label_of_a_compaction_at_the_leaf_stays_on_the_canvas() {
        let svg = render(&with_compactions(100, &[40, 99]), "s.jsonl");
        let labels = labels_of(&svg);
        assert_eq!(labels.len(), 2, "{svg}");
        for (from, to, _, text) in &labels {
            assert!(
                *from >= 0.0 && *to <= WIDTH,
                "{text}: {from}..{to} in {svg}"
            );
        }
        let last = &labels[1];
        assert!(last.3.starts_with("2 −100,000 (81%)"), "{}", last.3);
        assert!(
            last.1 <= Plot::new(&with_compactions(100, &[99]), 1).right(),
            "drawn to the left of its line: {last:?}"
        );
    }

    #[test]
    fn many_compactions_keep_their_labels_apart_and_say_how_many_were_left_out() {
        let at: Vec<usize> = (0..180).map(|k| 5 + k * 11).collect();
        let svg = render(&with_compactions(2_000, &at), "s.jsonl");
        let labels = labels_of(&svg);
        assert!(labels.len() >= 20, "{} labels", labels.len());
        for (i, a) in labels.iter().enumerate() {
            assert!(a.0 >= 0.0 && a.1 <= WIDTH, "{a:?}");
            for b in &labels[i + 1..] {
                let apart = a.2 != b.2 || a.1 + LABEL_GAP <= b.0 || b.1 + LABEL_GAP <= a.0;
                assert!(apart, "{a:?} and {b:?} overlap");
            }
        }
        assert!(
            svg.contains(&format!(
                "{} labels left out for room; the table and --json list every one",
                180 - labels.len()
            )),
            "{svg}"
        );
        // Every compaction keeps its line.
        assert_eq!(svg.matches(r##"stroke="#d08c00""##).count(), 180);
        // Few compactions: every label, no note.
        let few = render(&with_compactions(100, &[10, 12, 14]), "s.jsonl");
        assert_eq!(labels_of(&few).len(), 3, "{few}");
        assert!(!few.contains("left out"), "{few}");
    }
}
