//! Plain-text tables for golden snapshots: aligned columns, a dashed rule
//! under the header, no trailing spaces.

/// A table under construction.
#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Vec<String>,
    right: Vec<bool>,
    rows: Vec<Row>,
}

#[derive(Debug, Clone)]
enum Row {
    Cells(Vec<String>),
    Gap(String),
}

impl Table {
    /// A table with these column names; a name ending in `>` is
    /// right-aligned (the `>` is not printed).
    pub fn new(columns: &[&str]) -> Self {
        let (header, right) = columns
            .iter()
            .map(|c| match c.strip_suffix('>') {
                Some(name) => (name.to_owned(), true),
                None => ((*c).to_owned(), false),
            })
            .unzip();
        Self {
            header,
            right,
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells are empty.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows
            .push(Row::Cells(cells.into_iter().map(Into::into).collect()));
    }

    /// Adds a line that spans the table, such as `…` for skipped rows.
    pub fn gap(&mut self, text: impl Into<String>) {
        self.rows.push(Row::Gap(text.into()));
    }

    /// Number of rows (gaps included).
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as text, one line per row, each line ending in `\n`.
    pub fn render(&self) -> String {
        let n = self.header.len();
        let width = |s: &str| s.chars().count();
        let mut widths: Vec<usize> = self.header.iter().map(|h| width(h)).collect();
        for row in &self.rows {
            if let Row::Cells(cells) = row {
                for (i, c) in cells.iter().enumerate().take(n) {
                    widths[i] = widths[i].max(width(c));
                }
            }
        }
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (i, w) in widths.iter().enumerate() {
                let cell = cells.get(i).map_or("", String::as_str);
                let pad = " ".repeat(w - width(cell));
                if i > 0 {
                    out.push_str("  ");
                }
                if self.right[i] {
                    out.push_str(&pad);
                    out.push_str(cell);
                } else {
                    out.push_str(cell);
                    out.push_str(&pad);
                }
            }
            let mut out = out.trim_end().to_owned();
            out.push('\n');
            out
        };
        let mut out = line(&self.header);
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        out.push_str(&line(&rule));
        for row in &self.rows {
            match row {
                Row::Cells(cells) => out.push_str(&line(cells)),
                Row::Gap(text) => {
                    out.push_str(text.trim_end());
                    out.push('\n');
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_and_lines_have_no_trailing_spaces() {
        let mut t = Table::new(&["#>", "name", "note"]);
        t.row(["1", "alpha", ""]);
        t.gap("…");
        t.row(["10", "β", "x"]);
        assert_eq!(
            t.render(),
            " #  name   note\n--  -----  ----\n 1  alpha\n…\n10  β      x\n"
        );
    }
}
