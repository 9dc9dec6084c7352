//! Frame shapes: font, cell, ink and layout of every variant,
//! the geometry they give at a frame size, and the choice of shape for a
//! model.

use crate::error::SnapError;
use crate::png::font::FontFace;
use crate::png::pricing::{BillingFamily, billing_family};

use FontFace::{Misc4x6, Misc5x8, Misc6x12, Misc8x13, Silver};
use Ink::{Bw, Sent};
use Stretch::{Auto, Natural};

/// How glyphs fill their cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stretch {
    /// Glyphs fill the cell (the bundled fonts are drawn at their natural
    /// size, centered, since no resampling is done in 1-bit frames).
    Auto,
    /// Natural glyphs with extra leading or tracking around them.
    Natural,
}

/// The ink a shape prints with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ink {
    /// Black.
    Bw,
    /// Six hues cycling per sentence (printed black in 1-bit frames).
    Sent,
}

impl Ink {
    /// The name frames record as their `variant`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bw => "bw",
            Self::Sent => "sent",
        }
    }
}

/// One shape variant at a frame size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// The variant name (`11on16-bw`, `doc-8on16-sent`, …).
    pub name: &'static str,
    /// The font the design names (`8x8`, `5x8`, `6x12`, `8x13`, `silver`).
    pub design_font: &'static str,
    /// The glyphs actually printed (the unscii 8×8 shapes use X.org 5×8 and
    /// 4×6 glyphs, see `fonts/README.md`).
    pub face: FontFace,
    /// Cell advance in pixels.
    pub cell_width: u32,
    /// Cell pitch in pixels.
    pub cell_height: u32,
    /// How glyphs fill the cell.
    pub stretch: Stretch,
    /// The ink.
    pub ink: Ink,
    /// Function words printed dim (`6x12-dim`, `doc-8on16-sent-dim`).
    pub stopword_dim: bool,
    /// Each text row printed this many times.
    pub line_repeat: u32,
    /// 1 for grid shapes, 2 for the word-wrapped `doc-` shapes.
    pub columns: u32,
    /// Frame edge in pixels.
    pub frame_size: u32,
}

/// The largest frame edge this crate prints, in pixels (no provider takes
/// larger images).
pub(crate) const MAX_FRAME_SIZE: u32 = 8192;

/// Cells between the two columns of a `doc-` shape.
pub(crate) const DOC_GUTTER_CELLS: u32 = 3;

/// Rows, columns and characters of a shape at its frame size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Characters per row (per column for `doc-` shapes).
    pub cols: u32,
    /// Text rows per frame (per column).
    pub rows: u32,
    /// Characters per frame.
    pub capacity: u32,
}

const fn shape(
    name: &'static str,
    design_font: &'static str,
    face: FontFace,
    cell: (u32, u32),
    stretch: Stretch,
    ink: Ink,
) -> Shape {
    Shape {
        name,
        design_font,
        face,
        cell_width: cell.0,
        cell_height: cell.1,
        stretch,
        ink,
        stopword_dim: false,
        line_repeat: 1,
        columns: 1,
        frame_size: 1568,
    }
}

const fn doc(name: &'static str, ink: Ink, stopword_dim: bool) -> Shape {
    let mut s = shape(
        name,
        "8x13",
        FontFace::Misc8x13,
        (8, 16),
        Stretch::Natural,
        ink,
    );
    s.columns = 2;
    s.stopword_dim = stopword_dim;
    s
}

const fn dim(mut s: Shape) -> Shape {
    s.stopword_dim = true;
    s
}

const fn repeated(mut s: Shape) -> Shape {
    s.line_repeat = 2;
    s
}

const fn legacy(mut s: Shape) -> Shape {
    s.frame_size = crate::png::pricing::FRAME_SIZE_LEGACY;
    s
}

/// Every shape variant at its default frame size (`SHAPE_VARIANTS`).
pub const SHAPES: &[Shape] = &[
    repeated(shape("8x8r-bw", "8x8", Misc5x8, (8, 8), Auto, Bw)),
    repeated(shape("8x8r-sent", "8x8", Misc5x8, (8, 8), Auto, Sent)),
    shape("8x8u-bw", "8x8", Misc5x8, (8, 8), Auto, Bw),
    shape("8x8u-sent", "8x8", Misc5x8, (8, 8), Auto, Sent),
    shape("6x6u-bw", "8x8", Misc4x6, (6, 6), Auto, Bw),
    shape("6x6u-sent", "8x8", Misc4x6, (6, 6), Auto, Sent),
    legacy(shape("5x8-bw", "5x8", Misc5x8, (5, 8), Auto, Bw)),
    legacy(shape("5x8-sent", "5x8", Misc5x8, (5, 8), Auto, Sent)),
    dim(shape("6x12-dim", "6x12", Misc6x12, (6, 12), Auto, Bw)),
    shape("8x13-bw", "8x13", Misc8x13, (8, 13), Auto, Bw),
    shape("8on16-bw", "8x13", Misc8x13, (8, 16), Natural, Bw),
    shape("8on22-bw", "8x13", Misc8x13, (8, 22), Natural, Bw),
    shape("11on16-bw", "8x13", Misc8x13, (11, 16), Natural, Bw),
    shape("silver16-bw", "silver", Silver, (16, 16), Auto, Bw),
    doc("doc-8on16-bw", Bw, false),
    doc("doc-8on16-sent", Sent, false),
    doc("doc-8on16-sent-dim", Sent, true),
];

/// Every shape's name, comma-separated, in table order (for messages).
pub(crate) fn shape_names() -> String {
    SHAPES.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
}

/// The error for a shape name the table does not have.
fn unknown_shape(name: &str) -> SnapError {
    SnapError::UnknownShape {
        name: name.to_owned(),
        expected: shape_names(),
    }
}

/// The shape legacy frames (without `font` and `variant`) were printed with.
pub(crate) const LEGACY_SHAPE: &str = "5x8-sent";
/// The shape of a model nobody measured.
pub(crate) const UNMEASURED_SHAPE: &str = "8on22-bw";
/// The geometry of the low-quality ("dense") foveation companion.
pub(crate) const DENSE_SHAPE: &str = "8on16-bw";

impl Shape {
    /// The variant called `name`, at its default frame size.
    pub fn by_name(name: &str) -> Option<Shape> {
        SHAPES.iter().find(|s| s.name == name).copied()
    }

    /// The same shape printed on frames of edge `size`.
    #[must_use]
    pub fn with_frame_size(mut self, size: u32) -> Shape {
        self.frame_size = size;
        self
    }

    /// Whether this is a two-column, word-wrapped `doc-` shape.
    pub fn is_doc(&self) -> bool {
        self.columns == 2
    }

    /// Cells `c` occupies: 0 for the ink toggles, 2 for wide East Asian
    /// characters (1 in Silver), 1 otherwise.
    pub fn cells(&self, c: char) -> u32 {
        if c == crate::png::serialize::DIM_ON || c == crate::png::serialize::DIM_OFF {
            0
        } else if self.face != Silver && is_wide(c) {
            2
        } else {
            1
        }
    }

    /// Columns, rows and capacity at the shape's frame size:
    /// `gridCols = floor(size / cellWidth)`, `rows = floor(size / cellHeight
    /// / lineRepeat)`; doc shapes have `floor((gridCols − 3) / 2)` columns
    /// per side and twice the capacity.
    pub fn geometry(&self) -> Geometry {
        let grid_cols = self.frame_size / self.cell_width.max(1);
        let rows = self.frame_size / (self.cell_height.max(1) * self.line_repeat.max(1));
        if self.is_doc() {
            let cols = grid_cols.saturating_sub(DOC_GUTTER_CELLS) / 2;
            Geometry {
                cols,
                rows,
                capacity: cols.saturating_mul(rows).saturating_mul(2),
            }
        } else {
            Geometry {
                cols: grid_cols,
                rows,
                capacity: grid_cols.saturating_mul(rows),
            }
        }
    }

    /// The geometry, or an error when a frame cannot hold one row of text
    /// or is larger than 8,192 pixels.
    pub fn checked_geometry(&self) -> Result<Geometry, SnapError> {
        let g = self.geometry();
        if g.cols < 2 || g.rows == 0 || self.frame_size > MAX_FRAME_SIZE {
            return Err(SnapError::FrameSize {
                shape: self.name,
                size: self.frame_size,
            });
        }
        Ok(g)
    }
}

/// Wide and fullwidth East Asian code points (and emoji presentation).
pub(crate) fn is_wide(c: char) -> bool {
    matches!(
        c,
        '\u{1100}'..='\u{115F}'
            | '\u{2E80}'..='\u{303E}'
            | '\u{3041}'..='\u{33FF}'
            | '\u{3400}'..='\u{4DBF}'
            | '\u{4E00}'..='\u{9FFF}'
            | '\u{A000}'..='\u{A4CF}'
            | '\u{AC00}'..='\u{D7A3}'
            | '\u{F900}'..='\u{FAFF}'
            | '\u{FE30}'..='\u{FE4F}'
            | '\u{FF00}'..='\u{FF60}'
            | '\u{FFE0}'..='\u{FFE6}'
            | '\u{1F300}'..='\u{1F64F}'
            | '\u{1F900}'..='\u{1F9FF}'
            | '\u{20000}'..='\u{3FFFD}'
    )
}

/// A shape chosen for a request, with its price.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedShape {
    /// The shape, at the chosen frame size.
    pub shape: Shape,
    /// How the request's API bills images.
    pub billing: BillingFamily,
    /// Estimated tokens of one frame.
    pub frame_tokens: u32,
    /// The `detail` frames carry (`original` for `OpenAI`).
    pub detail: Option<&'static str>,
}

/// Chooses the shape for a request (`resolveShape`).
///
/// A forced variant (anything but `auto`) wins; otherwise the model id
/// picks its measured shape, and an unmeasured model gets `8on22-bw` at
/// 1568 px. Billing follows `model_api`, the API carrying the request.
pub fn resolve_shape(
    model_api: &str,
    model_id: &str,
    forced_variant: Option<&str>,
) -> Result<ResolvedShape, SnapError> {
    let shape = match forced_variant {
        Some(name) if name != "auto" => Shape::by_name(name).ok_or_else(|| unknown_shape(name))?,
        _ => {
            let (name, size) = measured_shape(model_id).unwrap_or((UNMEASURED_SHAPE, 1568));
            Shape::by_name(name)
                .ok_or_else(|| unknown_shape(name))?
                .with_frame_size(size)
        }
    };
    Ok(priced(shape, billing_family(model_api)))
}

/// `shape` with the price of one frame for `billing`.
pub(crate) fn priced(shape: Shape, billing: BillingFamily) -> ResolvedShape {
    ResolvedShape {
        shape,
        billing,
        frame_tokens: billing.frame_tokens(shape.frame_size),
        detail: billing.detail(),
    }
}

/// The measured shape and frame size of a model id, if it has one.
fn measured_shape(model_id: &str) -> Option<(&'static str, u32)> {
    let id = model_id.to_ascii_lowercase();
    if id.contains("fable") || id.contains("mythos") || opus_at_least_4_7(&id) {
        return Some(("11on16-bw", 1932));
    }
    if id.contains("claude") {
        return Some(("11on16-bw", 1568));
    }
    if id.contains("gemini") {
        return Some(("8on22-bw", 2048));
    }
    if id.contains("gpt") || id.contains("codex") {
        return Some(("8on22-bw", 1568));
    }
    if id.contains("kimi") {
        return Some(("8on22-bw", 1568));
    }
    if id.contains("glm") {
        return Some(("8on16-bw", 1568));
    }
    None
}

/// Whether `id` names Claude Opus 4.7 or later (`claude-opus-4-7`,
/// `claude-opus-4.7`, `anthropic/claude-opus-5`, …). A trailing date is not
/// a minor version.
fn opus_at_least_4_7(id: &str) -> bool {
    let Some(at) = id.find("opus") else {
        return false;
    };
    let mut numbers = id[at + 4..]
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .take(2)
        .map(|s| {
            if s.len() <= 2 {
                s.parse::<u32>().ok()
            } else {
                None
            }
        });
    let major = numbers.next().flatten();
    let minor = numbers.next().flatten().unwrap_or(0);
    match major {
        Some(m) => m > 4 || (m == 4 && minor >= 7),
        None => false,
    }
}

/// The low-quality ("dense") companion of `high` for foveation: the
/// `8on16-bw` geometry at the same frame size, when it holds more than
/// `high`. Doc and Silver shapes never foveate.
pub fn low_companion(high: &Shape) -> Option<Shape> {
    if high.is_doc() || high.face == Silver {
        return None;
    }
    let low = Shape::by_name(DENSE_SHAPE)?.with_frame_size(high.frame_size);
    (low.geometry().capacity > high.geometry().capacity).then_some(low)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry(name: &str, size: u32) -> (u32, u32, u32) {
        let g = Shape::by_name(name)
            .unwrap()
            .with_frame_size(size)
            .geometry();
        (g.cols, g.rows, g.capacity)
    }

    #[test]
    fn geometry_matches_the_reference_examples() {
        assert_eq!(geometry("11on16-bw", 1568), (142, 98, 13_916));
        assert_eq!(geometry("11on16-bw", 1932), (175, 120, 21_000));
        assert_eq!(geometry("8on22-bw", 1568), (196, 71, 13_916));
        assert_eq!(geometry("8on22-bw", 2048), (256, 93, 23_808));
        assert_eq!(geometry("8on16-bw", 1568), (196, 98, 19_208));
        assert_eq!(geometry("8on16-bw", 1932), (241, 120, 28_920));
    }

    #[test]
    fn line_repeat_and_doc_columns_shrink_the_capacity() {
        assert_eq!(geometry("8x8r-bw", 1568), (196, 98, 19_208));
        assert_eq!(geometry("8x8u-bw", 1568), (196, 196, 38_416));
        assert_eq!(geometry("doc-8on16-bw", 1568), (96, 98, 2 * 96 * 98));
        assert_eq!(geometry("5x8-sent", 2576), (515, 322, 165_830));
    }

    #[test]
    fn every_variant_of_the_table_is_present_once() {
        let names: Vec<&str> = SHAPES.iter().map(|s| s.name).collect();
        assert_eq!(names.len(), 17);
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        let s = Shape::by_name("doc-8on16-sent-dim").unwrap();
        assert_eq!((s.columns, s.ink, s.stopword_dim), (2, Ink::Sent, true));
        assert!(Shape::by_name("6x12-dim").unwrap().stopword_dim);
        assert_eq!(Shape::by_name("8x8r-sent").unwrap().line_repeat, 2);
        assert_eq!(Shape::by_name("5x8-bw").unwrap().frame_size, 2576);
    }

    #[test]
    fn models_get_their_measured_shapes() {
        let pick = |api: &str, id: &str| {
            let r = resolve_shape(api, id, None).unwrap();
            (r.shape.name, r.shape.frame_size, r.frame_tokens)
        };
        assert_eq!(
            pick("anthropic-messages", "claude-opus-4-7"),
            ("11on16-bw", 1932, 5000)
        );
        assert_eq!(
            pick("anthropic-messages", "claude-opus-4.7-20260101"),
            ("11on16-bw", 1932, 5000)
        );
        assert_eq!(
            pick("anthropic-messages", "claude-opus-5"),
            ("11on16-bw", 1932, 5000)
        );
        assert_eq!(
            pick("anthropic-messages", "claude-fable-1"),
            ("11on16-bw", 1932, 5000)
        );
        assert_eq!(
            pick("anthropic-messages", "claude-opus-4-1-20250805"),
            ("11on16-bw", 1568, 3293)
        );
        assert_eq!(
            pick("anthropic-messages", "claude-opus-4-20250514"),
            ("11on16-bw", 1568, 3293)
        );
        assert_eq!(
            pick("anthropic-messages", "claude-sonnet-4-5"),
            ("11on16-bw", 1568, 3293)
        );
        // A Claude through Vertex keeps its shape but is billed by the carrying API.
        assert_eq!(
            pick("google-vertex", "claude-sonnet-4-5"),
            ("11on16-bw", 1568, 1120)
        );
        assert_eq!(
            pick("google-generative-ai", "gemini-3-pro"),
            ("8on22-bw", 2048, 1120)
        );
        assert_eq!(
            pick("openai-responses", "gpt-5.1-codex"),
            ("8on22-bw", 1568, 2882)
        );
        assert_eq!(
            pick("openai-completions", "kimi-k2"),
            ("8on22-bw", 1568, 2882)
        );
        assert_eq!(
            pick("openai-completions", "glm-4.6"),
            ("8on16-bw", 1568, 2882)
        );
        assert_eq!(pick("ollama", "llava-13b"), ("8on22-bw", 1568, 3293));
        assert_eq!(
            resolve_shape("openai-responses", "gpt-5", None)
                .unwrap()
                .detail,
            Some("original")
        );
    }

    #[test]
    fn a_forced_variant_is_never_overridden() {
        let r = resolve_shape("openai-responses", "claude-opus-4-7", Some("5x8-bw")).unwrap();
        assert_eq!(
            (r.shape.name, r.shape.frame_size, r.frame_tokens),
            ("5x8-bw", 2576, 7874)
        );
        let auto = resolve_shape("anthropic-messages", "gpt-4o", Some("auto")).unwrap();
        assert_eq!(auto.shape.name, "8on22-bw");
        assert!(
            matches!(resolve_shape("x", "y", Some("nope")), Err(SnapError::UnknownShape { name, .. }) if name == "nope")
        );
        let message = resolve_shape("x", "y", Some("nope"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            message
                .starts_with("unknown snapcompact shape `nope`: expected auto or one of 8x8r-bw, "),
            "{message}"
        );
        for s in SHAPES {
            assert!(message.contains(s.name), "{message} lacks {}", s.name);
        }
    }

    #[test]
    fn the_dense_companion_only_exists_when_it_holds_more() {
        let high = Shape::by_name("11on16-bw").unwrap().with_frame_size(1932);
        let low = low_companion(&high).unwrap();
        assert_eq!(
            (low.name, low.frame_size, low.geometry().capacity),
            ("8on16-bw", 1932, 28_920)
        );
        assert!(low_companion(&Shape::by_name("8on16-bw").unwrap()).is_none());
        assert!(low_companion(&Shape::by_name("5x8-bw").unwrap()).is_none());
        assert!(low_companion(&Shape::by_name("doc-8on16-bw").unwrap()).is_none());
        assert!(low_companion(&Shape::by_name("silver16-bw").unwrap()).is_none());
    }

    #[test]
    fn wide_characters_take_two_cells_except_in_silver() {
        let grid = Shape::by_name("8on22-bw").unwrap();
        assert_eq!(
            (grid.cells('a'), grid.cells('日'), grid.cells('\u{E}')),
            (1, 2, 0)
        );
        assert_eq!(Shape::by_name("silver16-bw").unwrap().cells('日'), 1);
    }

    #[test]
    fn tiny_frames_are_refused() {
        let s = Shape::by_name("8on22-bw").unwrap().with_frame_size(10);
        assert!(matches!(
            s.checked_geometry(),
            Err(SnapError::FrameSize { size: 10, .. })
        ));
        let huge = s.with_frame_size(u32::MAX);
        assert!(matches!(
            huge.checked_geometry(),
            Err(SnapError::FrameSize { .. })
        ));
        assert_eq!(huge.geometry().cols, u32::MAX / 8);
    }
}
