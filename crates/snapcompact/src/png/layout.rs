//! Where characters land on a frame: the grid walk and the word wrap of the
//! two-column doc shapes. Pagination (planning an archive) and printing use
//! the same functions, so a planned page always fits its frame exactly.

use std::ops::Range;

use crate::png::shape::{Geometry, Shape};

/// Walks `text` over a grid of `cols` × `rows` cells, left to right and top
/// to bottom with no word wrap, calling `place(col, row, c)` for every
/// printed character. A wide character that would straddle the right edge
/// moves to the next row (one pad cell). Returns the byte offset where the
/// page is full (`text.len()` when everything fits) and the rows used.
pub(crate) fn walk_grid(
    text: &str,
    shape: &Shape,
    cols: u32,
    rows: u32,
    mut place: impl FnMut(u32, u32, char),
) -> (usize, u32) {
    let (mut col, mut row, mut used) = (0u32, 0u32, 0u32);
    for (i, c) in text.char_indices() {
        let w = shape.cells(c);
        if w == 0 {
            continue;
        }
        if col + w > cols {
            col = 0;
            row += 1;
        }
        if row >= rows {
            return (i, used);
        }
        place(col, row, c);
        used = row + 1;
        col += w;
        if col >= cols {
            col = 0;
            row += 1;
        }
    }
    (text.len(), used)
}

/// Greedy word wrap of `text` into at most `max_lines` lines of `cols`
/// cells: lines break at spaces (which are dropped), and only a word wider
/// than a line is split. Returns the lines as byte ranges and the offset
/// where the next line would start (`text.len()` when all of it fits).
pub(crate) fn wrap_lines(
    text: &str,
    shape: &Shape,
    cols: u32,
    max_lines: usize,
) -> (Vec<Range<usize>>, usize) {
    let mut lines = Vec::new();
    let mut pos = 0usize;
    loop {
        pos += text[pos..].len() - text[pos..].trim_start_matches(' ').len();
        if pos >= text.len() || lines.len() >= max_lines {
            return (lines, pos);
        }
        let start = pos;
        let mut width = 0u32;
        let mut last_break: Option<usize> = None;
        let mut end = text.len();
        for (i, c) in text[start..].char_indices() {
            let at = start + i;
            if c == ' ' {
                last_break = Some(at);
            }
            let w = shape.cells(c);
            if width + w > cols {
                end = match last_break {
                    _ if c == ' ' => at,
                    Some(b) => b,
                    None => at,
                };
                break;
            }
            width += w;
        }
        if end == start {
            // Nothing fits (a cell wider than the line): take one character.
            end += text[start..].chars().next().map_or(1, char::len_utf8);
        }
        lines.push(start..end);
        pos = end;
    }
}

/// Where a page that could hold `text[..full]` ends so no word is split:
/// after the last line break (the newline glyph) in its last third, else
/// after its last space in its second half, else at `full` (a word longer
/// than half a page). The whole rest ends where it ends.
pub(crate) fn break_back(text: &str, full: usize) -> usize {
    if full >= text.len() {
        return text.len();
    }
    let head = &text[..full];
    let glyph = crate::png::normalize::NEWLINE_GLYPH;
    if text[full..].starts_with([' ', glyph]) || head.ends_with([' ', glyph]) {
        return full;
    }
    if let Some(at) = head.rfind(glyph).filter(|&at| at * 3 >= full * 2) {
        return at + glyph.len_utf8();
    }
    if let Some(at) = head.rfind(' ').filter(|&at| at * 2 >= full && at > 0) {
        return at + 1;
    }
    full
}

/// Where the newest `text[from..]` starts so no word is split: after the
/// first line break or space in its first third, else at `from`.
pub(crate) fn break_forward(text: &str, from: usize) -> usize {
    if from == 0 {
        return 0;
    }
    let tail = &text[from..];
    let glyph = crate::png::normalize::NEWLINE_GLYPH;
    if text[..from].ends_with([' ', glyph]) || tail.starts_with([' ', glyph]) {
        return from;
    }
    let limit = tail.len() / 3;
    if let Some(at) = tail.find(glyph).filter(|&at| at <= limit) {
        return from + at + glyph.len_utf8();
    }
    if let Some(at) = tail.find(' ').filter(|&at| at <= limit) {
        return from + at + 1;
    }
    from
}

/// Consecutive byte ranges of `text`, one per frame: full grid pages for
/// grid shapes, `2 × rows` wrapped lines for doc shapes.
pub(crate) fn paginate(text: &str, shape: &Shape, geometry: Geometry) -> Vec<Range<usize>> {
    let mut pages = Vec::new();
    let mut start = 0usize;
    while start < text.len() {
        let rest = &text[start..];
        let mut end = if shape.is_doc() {
            wrap_lines(rest, shape, geometry.cols, 2 * geometry.rows as usize).1
        } else {
            let full = walk_grid(rest, shape, geometry.cols, geometry.rows, |_, _, _| {}).0;
            break_back(rest, full)
        };
        if end == 0 {
            end = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        pages.push(start..start + end);
        start += end;
    }
    pages
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Shape {
        Shape::by_name("8on22-bw").unwrap()
    }

    fn wrap(text: &str, cols: u32, max: usize) -> (Vec<&str>, usize) {
        let (lines, end) = wrap_lines(text, &grid(), cols, max);
        (lines.into_iter().map(|r| &text[r]).collect(), end)
    }

    #[test]
    fn the_grid_fills_rows_without_word_wrap() {
        let mut placed = Vec::new();
        let (end, used) = walk_grid("abcdefg", &grid(), 3, 2, |col, row, c| {
            placed.push((col, row, c));
        });
        assert_eq!(end, 6);
        assert_eq!(used, 2);
        assert_eq!(
            placed,
            [
                (0, 0, 'a'),
                (1, 0, 'b'),
                (2, 0, 'c'),
                (0, 1, 'd'),
                (1, 1, 'e'),
                (2, 1, 'f')
            ]
        );
    }

    #[test]
    fn a_wide_character_never_straddles_the_right_edge() {
        let mut placed = Vec::new();
        walk_grid("ab日c", &grid(), 3, 3, |col, row, c| {
            placed.push((col, row, c));
        });
        assert_eq!(
            placed,
            [(0, 0, 'a'), (1, 0, 'b'), (0, 1, '日'), (2, 1, 'c')]
        );
    }

    #[test]
    fn ink_toggles_take_no_cell() {
        let (end, used) = walk_grid("a\u{E}b\u{F}", &grid(), 2, 1, |_, _, _| {});
        assert_eq!((end, used), (4, 1));
    }

    #[test]
    fn word_wrap_breaks_at_spaces_and_splits_only_long_words() {
        assert_eq!(
            wrap("the quick brown fox", 10, 9),
            (vec!["the quick", "brown fox"], 19)
        );
        assert_eq!(
            wrap("abcdefghijkl xy", 5, 9),
            (vec!["abcde", "fghij", "kl xy"], 15)
        );
        assert_eq!(wrap("one two three", 3, 2), (vec!["one", "two"], 8));
    }

    #[test]
    fn pages_cover_the_text_exactly() {
        let text = "lorem ipsum dolor sit amet ".repeat(50);
        for name in ["8on22-bw", "doc-8on16-bw"] {
            let shape = Shape::by_name(name).unwrap().with_frame_size(200);
            let pages = paginate(&text, &shape, shape.geometry());
            assert!(pages.len() > 1, "{name}");
            assert_eq!(pages.first().map(|p| p.start), Some(0));
            assert_eq!(pages.last().map(|p| p.end), Some(text.len()));
            assert!(pages.windows(2).all(|w| w[0].end == w[1].start));
        }
    }

    #[test]
    fn grid_pages_end_at_a_line_end_or_a_space() {
        let shape = grid();
        let g = shape.geometry();
        let words: Vec<String> = (0..4000).map(|i| format!("word{i}")).collect();
        let text = words.join(" ");
        let pages = paginate(&text, &shape, g);
        assert!(pages.len() > 1);
        let joined: String = pages.iter().map(|r| &text[r.clone()]).collect();
        assert_eq!(joined, text);
        for r in &pages[..pages.len() - 1] {
            assert!(
                text[r.clone()].ends_with(' '),
                "{:?}",
                &text[r.end - 10..r.end]
            );
        }
        // A line end near the cut wins over a space.
        let glyph = crate::png::normalize::NEWLINE_GLYPH;
        let lined = words
            .chunks(10)
            .map(|c| c.join(" "))
            .collect::<Vec<_>>()
            .join(&glyph.to_string());
        for r in &paginate(&lined, &shape, g)[..1] {
            assert!(lined[r.clone()].ends_with(glyph));
        }
    }

    #[test]
    fn a_word_longer_than_half_a_page_is_cut_where_the_page_is_full() {
        let text = "x".repeat(40_000);
        let shape = grid();
        let pages = paginate(&text, &shape, shape.geometry());
        assert_eq!(pages[0].len(), shape.geometry().capacity as usize);
        assert_eq!(break_forward("ab cd", 1), 3);
        assert_eq!(break_forward("ab cd", 3), 3);
        assert_eq!(break_back("ab cd ef", 7), 6);
        assert_eq!(break_back("ab cd ef", 5), 5);
    }
}
