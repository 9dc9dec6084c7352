//! The chart as an SVG file: the context's tokens as a filled line along
//! the path, a dashed line and a label at every compaction with what it
//! removed, the axes with round figures. Plain SVG 1.1 that any browser or
//! image viewer shows; the same series always gives the same bytes.

use std::fmt::Write as _;

use super::Series;
use super::text::nice_top;
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

/// `&`, `<`, `>` and `"` as XML entities.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
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
        r#"<text x="{left}" y="24" font-size="15" font-weight="bold">context tokens along the path to {} ({} entries)</text>"#,
        escape(leaf),
        series.path_len
    );
    let _ = writeln!(
        s,
        r##"<text x="{left}" y="44" fill="#555555">{}: {} at the leaf, peak {}, window {}, {} compaction(s)</text>"##,
        escape(file),
        thousands(series.at_leaf()),
        thousands(series.peak()),
        thousands(series.window),
        series.compactions.len()
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
    for d in &series.compactions {
        let cx = plot.x(d.position);
        let _ = writeln!(
            s,
            r##"<line x1="{cx:.1}" y1="{}" x2="{cx:.1}" y2="{bottom:.1}" stroke="#d08c00" stroke-dasharray="4 3"/>"##,
            plot.top
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" fill="#8a5d00">{} −{} ({}%)</text>"##,
            cx + 4.0,
            plot.top + 12.0 + 14.0 * ((d.number - 1) % 3) as f64,
            d.number,
            thousands(d.removed()),
            d.removed_percent()
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

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape(r#"a&b<c>"d"#), "a&amp;b&lt;c&gt;&quot;d");
        assert_eq!(escape("x\ny"), "x y");
    }
}
