//! What compactions and pruning took out of the model's view, read back:
//! one entry's original content a page at a time, or a search of that
//! history (docs/design.md, "Recall"). `musepi recall` prints these views
//! and `musepi serve` answers its `recall` method with them.

use std::path::Path;

use musepi_runtime::context::{Recalled, Search, lost_history, recall_entry};
use musepi_session_model::{Entry, PruneStore, Session};

pub use musepi_protocol::context::{EntryPage, Match, SearchPage};

use super::entries::kind_of;

/// The most bytes of an entry's text one page shows, unless asked otherwise.
pub const PAGE_BYTES: usize = 16_000;
/// The most matches one page of a search lists, unless asked otherwise.
pub const PAGE_MATCHES: usize = 20;
/// About how many characters of a matching line a match shows.
const MATCH_WIDTH: usize = 160;

/// The originals a reader finds in a session's prune store, and what it
/// had to say about them.
pub struct Originals {
    store: PruneStore,
    /// What did not match, one line each.
    pub warnings: Vec<String>,
}

impl Originals {
    /// The store beside `store_of` (the session's file, or the file named
    /// by `--store-of`) for `session`; none for a session read from
    /// standard input without one.
    pub fn open(store_of: Option<&Path>, session: &Session) -> Self {
        let Some(path) = store_of else {
            return Self {
                store: PruneStore::default(),
                warnings: Vec::new(),
            };
        };
        let (store, warnings) = PruneStore::open(path, &session.header().id);
        Self {
            store,
            warnings: warnings.iter().map(ToString::to_string).collect(),
        }
    }

    /// The store, for the callers that write with it.
    pub fn store(&self) -> &PruneStore {
        &self.store
    }

    /// The original of `entry`, checked; what does not match is a warning.
    pub fn original(&mut self, entry: &Entry) -> Option<Entry> {
        self.original_line(entry).map(|o| o.entry)
    }

    /// [`Originals::original`] with the line it was read from.
    pub fn original_line(&mut self, entry: &Entry) -> Option<musepi_session_model::Original> {
        match self.store.original(entry) {
            Ok(found) => found,
            Err(w) => {
                self.warnings.push(w.to_string());
                None
            }
        }
    }
}

/// The page of entry `index` starting at byte `offset` (rounded down to a
/// character), at most `limit` bytes, ending at a line end when one falls
/// in the second half of the page.
pub fn entry_page(
    session: &Session,
    leaf: Option<usize>,
    index: usize,
    originals: &mut Originals,
    offset: usize,
    limit: usize,
) -> EntryPage {
    let entry = &session.entries()[index];
    let found = recall_entry(session, leaf, index, &mut |e| originals.original(e));
    let (text, summarized, pruned, original, tool_name) = match &found {
        Some(r) => (r.text(), r.summarized, r.pruned, r.original, tool_name(r)),
        // An entry that carries no message: its line, as the file has it.
        None => (
            session.raw_line(index).unwrap_or_default(),
            false,
            false,
            true,
            None,
        ),
    };
    let (start, end) = page_bounds(&text, offset, limit);
    EntryPage {
        entry_id: entry.id.to_string(),
        role: kind_of(entry).to_owned(),
        tool_name,
        summarized,
        pruned,
        original,
        text: text[start..end].to_owned(),
        offset: start,
        length: text.len(),
        next: (end < text.len()).then_some(end),
        warnings: std::mem::take(&mut originals.warnings),
    }
}

fn tool_name(r: &Recalled<'_>) -> Option<String> {
    r.message
        .as_tool_result()
        .map(|t| t.tool_name.as_str().to_owned())
}

/// The bytes of `text` one page shows: from `offset` (rounded down to a
/// character boundary) for at most `limit` bytes (at least one character),
/// cut after the last line break of the page when it falls in its second
/// half, else at a character boundary.
fn page_bounds(text: &str, offset: usize, limit: usize) -> (usize, usize) {
    let mut start = offset.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let limit = limit.max(1);
    if text.len() - start <= limit {
        return (start, text.len());
    }
    let mut end = start + limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end == start {
        // A limit smaller than the character there: show that character.
        end = start + text[start..].chars().next().map_or(0, char::len_utf8);
    }
    if let Some(nl) = text[start..end].rfind('\n')
        && nl + 1 > (end - start) / 2
    {
        end = start + nl + 1;
    }
    (start, end)
}

/// Searches the history the model no longer sees at `leaf` for `search`,
/// and lists matches `offset` to `offset + limit`.
pub fn search_page(
    session: &Session,
    leaf: Option<usize>,
    search: &Search,
    query: &str,
    originals: &mut Originals,
    offset: usize,
    limit: usize,
) -> SearchPage {
    let history = lost_history(session, leaf, &mut |e| originals.original(e));
    let entries = session.entries();
    let mut unrecoverable = Vec::new();
    let mut searched = 0;
    let mut total = 0;
    let mut matches = Vec::new();
    let limit = limit.max(1);
    for r in &history {
        let entry = &entries[r.entry_index];
        if r.pruned && !r.original {
            unrecoverable.push(entry.id.to_string());
            continue;
        }
        searched += 1;
        for hit in search.hits(&r.text(), MATCH_WIDTH) {
            if total >= offset && matches.len() < limit {
                matches.push(Match {
                    entry_id: entry.id.to_string(),
                    role: kind_of(entry).to_owned(),
                    tool_name: tool_name(r),
                    summarized: r.summarized,
                    pruned: r.pruned,
                    line: hit.line,
                    text: hit.context,
                });
            }
            total += 1;
        }
    }
    let end = offset.saturating_add(matches.len());
    SearchPage {
        query: query.to_owned(),
        leaf_id: leaf.map(|i| entries[i].id.to_string()),
        searched,
        unrecoverable,
        total,
        offset,
        limit,
        next: (end < total).then_some(end),
        matches,
        warnings: std::mem::take(&mut originals.warnings),
    }
}

#[cfg(test)]
mod tests {
    use super::page_bounds;

    #[test]
    fn pages_end_at_a_line_end_in_their_second_half_and_cover_the_text() {
        let text = "aaaa\nbbbb\ncccc\n";
        assert_eq!(page_bounds(text, 0, 8), (0, 5));
        assert_eq!(page_bounds(text, 5, 8), (5, 10));
        assert_eq!(page_bounds(text, 10, 8), (10, 15));
        // No line end in the second half: cut at the limit.
        assert_eq!(page_bounds("abcdefghij", 0, 4), (0, 4));
        // Past the end: an empty last page.
        assert_eq!(page_bounds(text, 99, 8), (15, 15));
        // Pages taken one after another give the text back, byte for byte.
        let text = "é€😀 line\n".repeat(50);
        for limit in [1, 3, 7, 64] {
            let (mut at, mut joined) = (0, String::new());
            loop {
                let (s, e) = page_bounds(&text, at, limit);
                assert_eq!(s, at);
                joined.push_str(&text[s..e]);
                if e == text.len() {
                    break;
                }
                assert!(e > s);
                at = e;
            }
            assert_eq!(joined, text);
        }
        // An offset inside a character starts at that character.
        assert_eq!(page_bounds("😀x", 2, 10), (0, 5));
    }
}
