//! Printing normalized text onto 1-bit grayscale PNG frames.
//!
//! A frame is as wide as the shape's frame size and exactly as tall as the
//! rows it prints, so a partly filled last frame bills no blank rows. Grid
//! shapes read left to right, top to bottom, with no word wrap; doc shapes
//! print two word-wrapped columns with a three-cell gutter.
//!
//! Frames are 1-bit, so the inks the design prints in colour or gray are
//! approximated: sentence hues (`sent`), dim tool output and dimmed
//! function words all print black, and the copies of a repeated line
//! (`lineRepeat`) print without their pale highlight band. The scope
//! markers and `<out>` blocks still tell tool output from conversation.

use crate::error::SnapError;
use crate::png::font::{Font, font};
use crate::png::layout::{walk_grid, wrap_lines};
use crate::png::normalize::NEWLINE_GLYPH;
use crate::png::shape::{DOC_GUTTER_CELLS, Shape};
use crate::util::len16;

/// One printed frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The PNG file (1-bit grayscale).
    pub png: Vec<u8>,
    /// Width in pixels: the frame size.
    pub width: u32,
    /// Height in pixels: the printed rows only.
    pub height: u32,
    /// Characters per row (per column for doc shapes).
    pub cols: u32,
    /// Text rows printed (per column for doc shapes).
    pub rows: u32,
    /// UTF-16 units of the text that the frame holds; text beyond one
    /// frame is not printed.
    pub chars: usize,
}

impl Frame {
    /// The PNG as standard base64 with padding.
    pub fn base64(&self) -> String {
        base64_encode(&self.png)
    }
}

/// Prints `text` (normalized, see [`crate::png::normalize()`]) with `shape` on a
/// frame of edge `frame_size` pixels.
///
/// Characters the font lacks print as `?`; the newline glyph U+2588 prints
/// as a solid black cell; ink toggles print nothing.
pub fn render(text: &str, shape: &Shape, frame_size: u32) -> Result<Frame, SnapError> {
    let shape = shape.with_frame_size(frame_size);
    let geometry = shape.checked_geometry()?;
    let font = font(shape.face)?;
    let mut cells: Vec<(u32, u32, char)> = Vec::with_capacity(geometry.capacity as usize);
    let (consumed, rows_used) = if shape.is_doc() {
        let (lines, end) = wrap_lines(text, &shape, geometry.cols, 2 * geometry.rows as usize);
        for (i, line) in lines.iter().enumerate() {
            let i = i as u32;
            let (x0, row) = if i < geometry.rows {
                (0, i)
            } else {
                (geometry.cols + DOC_GUTTER_CELLS, i - geometry.rows)
            };
            walk_grid(
                &text[line.clone()],
                &shape,
                geometry.cols,
                1,
                |col, _, c| cells.push((x0 + col, row, c)),
            );
        }
        (end, (lines.len() as u32).min(geometry.rows))
    } else {
        walk_grid(text, &shape, geometry.cols, geometry.rows, |col, row, c| {
            cells.push((col, row, c));
        })
    };
    let band = shape.cell_height * shape.line_repeat;
    let height = rows_used.max(1) * band;
    let mut canvas = Canvas::new(frame_size, height);
    let glyph_x = (shape.cell_width.saturating_sub(font.width())) / 2;
    let glyph_y = (shape.cell_height.saturating_sub(font.height())) / 2;
    for &(col, row, c) in &cells {
        let x = col * shape.cell_width;
        for copy in 0..shape.line_repeat {
            let y = row * band + copy * shape.cell_height;
            if c == NEWLINE_GLYPH {
                canvas.fill(x, y, shape.cell_width, shape.cell_height);
            } else {
                canvas.blit(x + glyph_x, y + glyph_y, glyph_or_fallback(font, c));
            }
        }
    }
    Ok(Frame {
        png: canvas.encode()?,
        width: frame_size,
        height,
        cols: geometry.cols,
        rows: rows_used,
        chars: len16(&text[..consumed]),
    })
}

fn glyph_or_fallback(font: &Font, c: char) -> &[u8] {
    font.glyph(c)
        .or_else(|| font.glyph('?'))
        .unwrap_or_default()
}

/// A 1-bit image, white (1) by default, rows packed most significant bit
/// first as PNG stores them.
struct Canvas {
    width: u32,
    height: u32,
    row_bytes: usize,
    bits: Vec<u8>,
}

impl Canvas {
    fn new(width: u32, height: u32) -> Self {
        let row_bytes = width.div_ceil(8) as usize;
        Self {
            width,
            height,
            row_bytes,
            bits: vec![0xFF; row_bytes * height as usize],
        }
    }

    /// Inks the set bits of `rows` (one byte per row, MSB left) at `x, y`.
    fn blit(&mut self, x: u32, y: u32, rows: &[u8]) {
        let byte = (x / 8) as usize;
        let shift = x % 8;
        for (r, &bits) in rows.iter().enumerate() {
            if bits == 0 {
                continue;
            }
            let yy = y as usize + r;
            if yy >= self.height as usize {
                break;
            }
            let wide = (u16::from(bits) << 8) >> shift;
            let at = yy * self.row_bytes + byte;
            if let Some(b) = self.bits.get_mut(at) {
                *b &= !((wide >> 8) as u8);
            }
            let low = (wide & 0xFF) as u8;
            if low != 0
                && byte + 1 < self.row_bytes
                && let Some(b) = self.bits.get_mut(at + 1)
            {
                *b &= !low;
            }
        }
    }

    /// Inks a solid rectangle.
    fn fill(&mut self, x: u32, y: u32, w: u32, h: u32) {
        let x_end = (x + w).min(self.width);
        let y_end = (y + h).min(self.height);
        for yy in y..y_end {
            let line = yy as usize * self.row_bytes;
            for xx in x..x_end {
                if let Some(b) = self.bits.get_mut(line + (xx / 8) as usize) {
                    *b &= !(0x80u8 >> (xx % 8));
                }
            }
        }
    }

    fn encode(&self) -> Result<Vec<u8>, SnapError> {
        let mut out = Vec::with_capacity(self.bits.len() / 4 + 128);
        let mut encoder = png::Encoder::new(&mut out, self.width, self.height);
        encoder.set_color(png::ColorType::Grayscale);
        encoder.set_depth(png::BitDepth::One);
        // Measured on text frames: zlib level 3 without row filters keeps
        // 1568 px frames around 50-80 KB at 2-4 M chars/s; the balanced
        // level saves under 10% more and is three times slower, and fdeflate
        // is faster still but makes frames half again as large.
        encoder.set_deflate_compression(png::DeflateCompression::Level(3));
        encoder.set_filter(png::Filter::NoFilter);
        let mut writer = encoder.write_header()?;
        writer.write_image_data(&self.bits)?;
        writer.finish()?;
        Ok(out)
    }
}

/// Standard base64 (RFC 4648) with padding.
pub fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let sextet = |i: u32| char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]);
        out.push(sextet(0));
        out.push(sextet(1));
        out.push(if chunk.len() > 1 { sextet(2) } else { '=' });
        out.push(if chunk.len() > 2 { sextet(3) } else { '=' });
    }
    out
}

/// Decodes standard base64 (RFC 4648, padding optional; ASCII whitespace
/// ignored), as stored frames hold their PNG; none when the text is not
/// base64.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    }
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let body = digits
        .strip_suffix(b"==")
        .or_else(|| digits.strip_suffix(b"="))
        .unwrap_or(&digits);
    if body.len() % 4 == 1 || (body.len() != digits.len() && !digits.len().is_multiple_of(4)) {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() / 4 * 3 + 2);
    for chunk in body.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes a frame back into rows of booleans (true = ink).
    fn decode(frame: &Frame) -> Vec<Vec<bool>> {
        let decoder = png::Decoder::new(std::io::Cursor::new(frame.png.as_slice()));
        let mut reader = decoder.read_info().unwrap();
        let info = reader.info();
        assert_eq!((info.width, info.height), (frame.width, frame.height));
        assert_eq!(info.color_type, png::ColorType::Grayscale);
        assert_eq!(info.bit_depth, png::BitDepth::One);
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let out = reader.next_frame(&mut buf).unwrap();
        let row_bytes = out.line_size;
        (0..frame.height as usize)
            .map(|y| {
                (0..frame.width as usize)
                    .map(|x| buf[y * row_bytes + x / 8] & (0x80 >> (x % 8)) == 0)
                    .collect()
            })
            .collect()
    }

    fn ink_in(image: &[Vec<bool>], x: std::ops::Range<usize>, y: std::ops::Range<usize>) -> usize {
        image[y]
            .iter()
            .map(|row| row[x.clone()].iter().filter(|&&b| b).count())
            .sum()
    }

    fn shape(name: &str) -> Shape {
        Shape::by_name(name).unwrap()
    }

    #[test]
    fn a_rendered_frame_decodes_with_its_size_and_ink() {
        let text = "Hello, frames! ".repeat(30);
        let frame = render(&text, &shape("8on22-bw"), 1568).unwrap();
        assert_eq!((frame.width, frame.cols, frame.rows), (1568, 196, 3));
        assert_eq!(frame.height, 3 * 22);
        assert_eq!(frame.chars, text.len());
        let image = decode(&frame);
        // 'H' is the first cell; a space cell has no ink.
        assert!(ink_in(&image, 0..8, 0..22) > 10);
        assert_eq!(ink_in(&image, 6 * 8..7 * 8, 0..22), 0);
        // The third row holds 450 - 392 = 58 characters; the rest is blank.
        assert!(ink_in(&image, 0..58 * 8, 44..66) > 0);
        assert_eq!(ink_in(&image, 58 * 8..1568, 44..66), 0);
    }

    #[test]
    fn the_newline_glyph_is_a_solid_cell_and_toggles_print_nothing() {
        let frame = render("a\u{2588}\u{E}b\u{F}", &shape("11on16-bw"), 1568).unwrap();
        let image = decode(&frame);
        assert_eq!(ink_in(&image, 11..22, 0..16), 11 * 16);
        assert!(ink_in(&image, 22..33, 0..16) > 0);
        assert_eq!(ink_in(&image, 33..1568, 0..16), 0);
        assert_eq!(frame.chars, 5);
    }

    #[test]
    fn only_one_page_is_printed() {
        let text = "x".repeat(20_000);
        let frame = render(&text, &shape("8on22-bw"), 1568).unwrap();
        assert_eq!(
            (frame.rows, frame.chars, frame.height),
            (71, 13_916, 71 * 22)
        );
    }

    #[test]
    fn line_repeat_prints_each_row_twice() {
        let frame = render("AB", &shape("8x8r-bw"), 1568).unwrap();
        assert_eq!(frame.height, 16);
        let image = decode(&frame);
        assert_eq!(image[0..8], image[8..16]);
        assert!(ink_in(&image, 0..16, 0..8) > 0);
    }

    #[test]
    fn doc_shapes_print_two_wrapped_columns() {
        let s = shape("doc-8on16-bw").with_frame_size(400);
        let g = s.geometry();
        assert_eq!((g.cols, g.rows), (23, 25));
        let text = "word ".repeat(200);
        let frame = render(&text, &s, 400).unwrap();
        assert_eq!(frame.rows, 25);
        let image = decode(&frame);
        let right = (23 + 3) * 8;
        assert!(ink_in(&image, 0..23 * 8, 0..16) > 0);
        assert_eq!(
            ink_in(&image, 23 * 8..right, 0..400),
            0,
            "gutter stays blank"
        );
        assert!(ink_in(&image, right..right + 23 * 8, 0..16) > 0);
        // 4 words of 4 letters fit a 23-cell line: 50 lines hold 200 words.
        assert_eq!(frame.chars, text.len());
    }

    #[test]
    fn unknown_characters_print_as_question_marks() {
        let unknown = decode(&render("\u{263A}", &shape("8x13-bw"), 1568).unwrap());
        let question = decode(&render("?", &shape("8x13-bw"), 1568).unwrap());
        assert_eq!(unknown, question);
    }

    #[test]
    fn the_same_text_gives_the_same_png_bytes() {
        let text = "determinism ".repeat(500);
        let a = render(&text, &shape("11on16-bw"), 1932).unwrap();
        let b = render(&text, &shape("11on16-bw"), 1932).unwrap();
        assert_eq!(a.png, b.png);
        assert!(a.png.starts_with(b"\x89PNG\r\n\x1a\n"));
    }

    #[test]
    fn silver_and_tiny_frames_are_refused() {
        assert!(matches!(
            render("x", &shape("silver16-bw"), 1568),
            Err(SnapError::FontUnavailable("silver"))
        ));
        assert!(matches!(
            render("x", &shape("8on22-bw"), 8),
            Err(SnapError::FrameSize { .. })
        ));
    }

    #[test]
    fn empty_text_prints_one_blank_row() {
        let frame = render("", &shape("8on16-bw"), 1568).unwrap();
        assert_eq!((frame.rows, frame.height, frame.chars), (0, 16, 0));
        assert_eq!(ink_in(&decode(&frame), 0..1568, 0..16), 0);
    }

    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_encode(input.as_bytes()), expected);
        }
        assert_eq!(base64_encode(&[0xFB, 0xFF]), "+/8=");
    }

    #[test]
    fn base64_decodes_what_it_encodes_and_refuses_the_rest() {
        for input in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            let encoded = base64_encode(input.as_bytes());
            assert_eq!(base64_decode(&encoded).as_deref(), Some(input.as_bytes()));
            let bare = encoded.trim_end_matches('=');
            assert_eq!(base64_decode(bare).as_deref(), Some(input.as_bytes()));
        }
        assert_eq!(base64_decode("+/8=").as_deref(), Some(&[0xFB, 0xFF][..]));
        let frame = render("decode me", &shape("8on16-bw"), 64).unwrap();
        assert_eq!(base64_decode(&frame.base64()), Some(frame.png));
        for bad in ["Z", "Zg=", "Z!==", "Zm9v=", "blob:sha256:00"] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
    }
}
