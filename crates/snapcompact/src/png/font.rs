//! The bundled bitmap fonts: X.org misc-fixed glyphs (public domain) for
//! the characters normalization can produce, read once from
//! `fonts/glyphs.txt` (see `fonts/README.md` for origin and licence).

use std::sync::OnceLock;

use crate::error::SnapError;

/// A set of glyphs that frames can be printed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FontFace {
    /// X.org misc-fixed 4×6 (stands in for unscii 8×8 squeezed to 6×6).
    Misc4x6,
    /// X.org misc-fixed 5×8 (also stands in for unscii 8×8 in 8×8 cells).
    Misc5x8,
    /// X.org misc-fixed 6×12.
    Misc6x12,
    /// X.org misc-fixed 8×13.
    Misc8x13,
    /// The Silver TrueType font for CJK text; not bundled.
    Silver,
}

impl FontFace {
    /// The name frames record as their `font` (`5x8`, `8x13`, `silver`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::Misc4x6 => "4x6",
            Self::Misc5x8 => "5x8",
            Self::Misc6x12 => "6x12",
            Self::Misc8x13 => "8x13",
            Self::Silver => "silver",
        }
    }

    /// The face with this recorded name.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Self::Misc4x6,
            Self::Misc5x8,
            Self::Misc6x12,
            Self::Misc8x13,
            Self::Silver,
        ]
        .into_iter()
        .find(|f| f.name() == name)
    }
}

/// Characters every bundled font has: printable ASCII, Latin-1, U+2588.
pub(crate) const GLYPH_COUNT: usize = 95 + 96 + 1;

/// One bundled font: a glyph per covered character, each a full cell of
/// `height` rows, one byte per row, most significant bit leftmost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Font {
    face: FontFace,
    width: u32,
    height: u32,
    rows: Vec<u8>,
}

impl Font {
    /// Glyph width in pixels (at most 8).
    pub(crate) fn width(&self) -> u32 {
        self.width
    }

    /// Glyph height in pixels.
    pub(crate) fn height(&self) -> u32 {
        self.height
    }

    /// The pixel rows of `c`, or `None` when the font does not cover it.
    pub(crate) fn glyph(&self, c: char) -> Option<&[u8]> {
        let index = glyph_index(c)?;
        let h = self.height as usize;
        self.rows.get(index * h..(index + 1) * h)
    }
}

/// Position of `c` in the table's fixed glyph order.
fn glyph_index(c: char) -> Option<usize> {
    let cp = c as usize;
    match c {
        ' '..='~' => Some(cp - 0x20),
        '\u{A0}'..='\u{FF}' => Some(95 + cp - 0xA0),
        '\u{2588}' => Some(GLYPH_COUNT - 1),
        _ => None,
    }
}

/// The code point at position `i` of the fixed glyph order.
fn glyph_at(i: usize) -> u32 {
    match i {
        0..95 => 0x20 + i as u32,
        95..191 => 0xA0 + (i - 95) as u32,
        _ => 0x2588,
    }
}

static GLYPH_TABLE: &str = include_str!("../../fonts/glyphs.txt");

type Parsed = Result<Vec<Font>, (usize, &'static str)>;

/// The bundled font for `face`.
pub(crate) fn font(face: FontFace) -> Result<&'static Font, SnapError> {
    static FONTS: OnceLock<Parsed> = OnceLock::new();
    let fonts = FONTS
        .get_or_init(|| parse_table(GLYPH_TABLE))
        .as_ref()
        .map_err(|&(line, reason)| SnapError::GlyphTable { line, reason })?;
    fonts
        .iter()
        .find(|f| f.face == face)
        .ok_or(SnapError::FontUnavailable(face.name()))
}

/// Reads `fonts/glyphs.txt`: `font NAME W H` headers, then exactly
/// [`GLYPH_COUNT`] `HEX HEXROWS` lines in the fixed order, then `end`.
fn parse_table(text: &str) -> Parsed {
    let mut fonts: Vec<Font> = Vec::new();
    let mut ended = false;
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if ended {
            return Err((line_no, "text after `end`"));
        }
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or_default();
        if first == "end" {
            ended = true;
            continue;
        }
        if first == "font" {
            check_complete(fonts.last(), line_no)?;
            let face = fields
                .next()
                .and_then(FontFace::from_name)
                .ok_or((line_no, "unknown font name"))?;
            let mut dim = || fields.next().and_then(|v| v.parse::<u32>().ok());
            let (Some(width), Some(height)) = (dim(), dim()) else {
                return Err((line_no, "font header needs a width and a height"));
            };
            if !(1..=8).contains(&width) || !(1..=32).contains(&height) {
                return Err((line_no, "font size out of range"));
            }
            fonts.push(Font {
                face,
                width,
                height,
                rows: Vec::with_capacity(GLYPH_COUNT * height as usize),
            });
            continue;
        }
        let font = fonts
            .last_mut()
            .ok_or((line_no, "glyph before any font header"))?;
        let h = font.height as usize;
        let index = font.rows.len() / h;
        if index >= GLYPH_COUNT || u32::from_str_radix(first, 16).ok() != Some(glyph_at(index)) {
            return Err((line_no, "glyph out of the expected order"));
        }
        let hex = fields.next().ok_or((line_no, "glyph without rows"))?;
        if hex.len() != 2 * h || !hex.is_ascii() {
            return Err((line_no, "glyph row count does not match the font height"));
        }
        for i in 0..h {
            let byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                .map_err(|_| (line_no, "bad hex in glyph rows"))?;
            font.rows.push(byte);
        }
    }
    if !ended {
        return Err((text.lines().count(), "missing `end`"));
    }
    check_complete(fonts.last(), text.lines().count())?;
    Ok(fonts)
}

fn check_complete(font: Option<&Font>, line: usize) -> Result<(), (usize, &'static str)> {
    match font {
        Some(f) if f.rows.len() != GLYPH_COUNT * f.height as usize => {
            Err((line, "font is missing glyphs"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_glyph_table_parses_with_every_font_complete() {
        let fonts = parse_table(GLYPH_TABLE).unwrap_or_default();
        let faces: Vec<(FontFace, u32, u32)> =
            fonts.iter().map(|f| (f.face, f.width, f.height)).collect();
        assert_eq!(
            faces,
            [
                (FontFace::Misc4x6, 4, 6),
                (FontFace::Misc5x8, 5, 8),
                (FontFace::Misc6x12, 6, 12),
                (FontFace::Misc8x13, 8, 13),
            ]
        );
    }

    #[test]
    fn glyphs_have_ink_where_expected() {
        let f = font(FontFace::Misc8x13).unwrap_or_else(|e| panic!("{e}"));
        let ink = |c| {
            f.glyph(c)
                .map_or(0, |rows| rows.iter().map(|r| r.count_ones()).sum::<u32>())
        };
        assert_eq!(ink(' '), 0);
        assert!(ink('A') > 10);
        assert!(ink('é') > ink('e'));
        assert_eq!(ink('\u{2588}'), 8 * 13);
        assert!(f.glyph('日').is_none());
        assert!(matches!(
            font(FontFace::Silver),
            Err(SnapError::FontUnavailable("silver"))
        ));
    }

    #[test]
    fn malformed_tables_are_reported_with_their_line() {
        for (table, line, problem) in [
            (
                "font 4x6 4 6\n0021 00\nend\n",
                2,
                "glyph out of the expected order",
            ),
            (
                "font 4x6 4 6\n0020 0000\nend\n",
                2,
                "glyph row count does not match the font height",
            ),
            (
                "font 4x6 4 6\n0020 000000000000\nend\n",
                3,
                "font is missing glyphs",
            ),
            ("font 9x9 9 9\n", 1, "unknown font name"),
            ("", 0, "missing `end`"),
        ] {
            assert_eq!(parse_table(table).err(), Some((line, problem)), "{table:?}");
        }
    }
}
