//! Search in the transcript: the rows on screen first, then the text
//! inside closed folds (which opens the fold that holds the match).

use super::app::App;
use super::lines::FoldKey;
use super::model::Part;
use super::text::find_all;

/// The text a closed part hides.
fn hidden_text(part: &Part) -> Option<String> {
    match part {
        Part::Text { .. } => None,
        Part::Fold { body, .. } => Some(body.clone()),
        Part::Divider(d) => {
            let mut text = d.summary.clone();
            if let Some(short) = &d.short_summary {
                text.push('\n');
                text.push_str(short);
            }
            if let Some(a) = &d.archive {
                for l in a.describe() {
                    text.push('\n');
                    text.push_str(&l);
                }
            }
            Some(text)
        }
    }
}

impl App {
    /// Rows that contain `query`.
    pub fn match_rows(&self, query: &str) -> Vec<usize> {
        self.rows
            .iter()
            .enumerate()
            .filter(|(_, r)| !find_all(&r.text, query).is_empty())
            .map(|(i, _)| i)
            .collect()
    }

    /// Moves to the next (or previous) row holding `query`, wrapping
    /// around; when no row shows it, opens the next closed fold that
    /// holds it. Says what it found on the status line.
    pub fn search(&mut self, query: &str, forward: bool) -> bool {
        let found = self.find_row(query, forward) || self.open_fold_with(query, forward);
        if found {
            let matches = self.match_rows(query);
            let at = matches
                .iter()
                .position(|&i| i == self.cursor)
                .map_or(0, |p| p + 1);
            self.say(format!("/{query}: match {at} of {}", matches.len()), false);
        } else {
            self.say(format!("/{query}: not found"), true);
        }
        found
    }

    fn find_row(&mut self, query: &str, forward: bool) -> bool {
        let n = self.rows.len();
        for step in 1..=n {
            let i = if forward {
                (self.cursor + step) % n
            } else {
                (self.cursor + n - step % n) % n
            };
            if !find_all(&self.rows[i].text, query).is_empty() {
                self.cursor = i;
                self.clamp();
                return true;
            }
        }
        false
    }

    fn open_fold_with(&mut self, query: &str, forward: bool) -> bool {
        let blocks = self.transcript.blocks.len();
        if blocks == 0 {
            return false;
        }
        let here = self.rows.get(self.cursor).map_or(0, |r| r.block);
        for step in 1..=blocks {
            let b = if forward {
                (here + step) % blocks
            } else {
                (here + blocks - step % blocks) % blocks
            };
            let block = &self.transcript.blocks[b];
            let hit = block.parts.iter().enumerate().find_map(|(p, part)| {
                let key = FoldKey {
                    entry: block.entry_index,
                    part: p,
                };
                let text = hidden_text(part)?;
                (!self.expanded.contains(&key) && !find_all(&text, query).is_empty())
                    .then_some((key, p))
            });
            if let Some((key, p)) = hit {
                self.expanded.insert(key);
                self.relayout();
                let rows = || self.rows.iter().enumerate();
                self.cursor = rows()
                    .find(|(_, r)| {
                        r.block == b && r.part == Some(p) && !find_all(&r.text, query).is_empty()
                    })
                    .or_else(|| rows().find(|(_, r)| r.block == b && r.part == Some(p)))
                    .map_or(self.cursor, |(i, _)| i);
                self.clamp();
                return true;
            }
        }
        false
    }
}
