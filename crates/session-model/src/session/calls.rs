//! The index of tool call ids: which assistant messages name each one.
//!
//! A tool result names the call it answers by id, and the call may lie
//! anywhere before it on the path. A reader that looks for it (pruning
//! reads a result's file path from its `read` call) asks the index first:
//! a call no entry names needs no search, and one that entries name needs
//! a search no further back than the oldest of them.

use rustc_hash::FxHashMap;

use super::Session;
use crate::entry::Entry;
use crate::message::AgentMessage;

/// The entries whose assistant message names a tool call id, in file order.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallIndex {
    by_id: FxHashMap<Box<str>, Vec<u32>>,
}

/// The tool call ids `entry` names (an assistant message's calls), in
/// order; an id the message names twice comes twice.
fn call_ids(entry: &Entry) -> impl Iterator<Item = &str> {
    let calls = match entry.message() {
        Some(AgentMessage::Assistant(a)) => Some(a.tool_calls()),
        _ => None,
    };
    calls.into_iter().flatten().map(|c| c.id.as_str())
}

impl CallIndex {
    /// Records the calls of `entry`, at position `i`.
    pub(crate) fn add(&mut self, i: usize, entry: &Entry) {
        let i = i as u32;
        for id in call_ids(entry) {
            let sites = self.by_id.entry(id.into()).or_default();
            // Positions stay in file order: an append comes last, a
            // replacement goes back where it was.
            let at = sites.partition_point(|&s| s < i);
            if sites.get(at) != Some(&i) {
                sites.insert(at, i);
            }
        }
    }

    /// Forgets the calls of `entry`, at position `i`.
    pub(crate) fn remove(&mut self, i: usize, entry: &Entry) {
        let i = i as u32;
        for id in call_ids(entry) {
            if let Some(sites) = self.by_id.get_mut(id) {
                sites.retain(|&s| s != i);
                if sites.is_empty() {
                    self.by_id.remove(id);
                }
            }
        }
    }

    fn sites(&self, id: &str) -> &[u32] {
        self.by_id.get(id).map_or(&[], Vec::as_slice)
    }
}

impl Session {
    /// The positions of the entries whose assistant message names tool call
    /// `id`, in file order: on any branch, before or after any entry (empty
    /// when no entry names it).
    pub fn entries_calling(&self, id: &str) -> impl Iterator<Item = usize> + '_ {
        self.calls.sites(id).iter().map(|&i| i as usize)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::id::SequentialIds;
    use crate::session::{Replacement, Session, Stamp};

    const FILE: &str = concat!(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T10:00:00.000Z","cwd":"/w"}"#,
        "\n",
        r#"{"type":"message","id":"e1","parentId":null,"timestamp":"2026-01-01T10:00:01.000Z","message":{"role":"user","content":"go","timestamp":1}}"#,
        "\n",
        r#"{"type":"message","id":"e2","parentId":"e1","timestamp":"2026-01-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"a","name":"read","arguments":{"path":"x"}},{"type":"toolCall","id":"b","name":"bash","arguments":{"command":"ls"}},{"type":"toolCall","id":"a","name":"read","arguments":{"path":"y"}}],"timestamp":2}}"#,
        "\n",
        r#"{"type":"message","id":"e3","parentId":"e2","timestamp":"2026-01-01T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"a","toolName":"read","content":"x","isError":false,"timestamp":3}}"#,
        "\n",
        r#"{"type":"message","id":"e4","parentId":"e1","timestamp":"2026-01-01T10:00:04.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"a","name":"read","arguments":{"path":"z"}}],"timestamp":4}}"#,
        "\n",
        r#"{"type":"message","id":"e5","parentId":"e4","timestamp":"2026-01-01T10:00:05.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"read","arguments":{"path":"w"}}],"timestamp":5}}"#,
        "\n",
    );

    fn calling(s: &Session, id: &str) -> Vec<usize> {
        s.entries_calling(id).collect()
    }

    fn load() -> Session {
        crate::load_bytes(
            Path::new("calls.jsonl"),
            FILE.as_bytes(),
            &mut SequentialIds::new(),
        )
        .unwrap()
    }

    #[test]
    fn a_loaded_session_lists_the_entries_calling_each_id_once_in_file_order() {
        let s = load();
        assert_eq!(calling(&s, "a"), [1, 3]);
        assert_eq!(calling(&s, "b"), [1]);
        assert_eq!(calling(&s, "c"), [4]);
        assert!(calling(&s, "nowhere").is_empty());
        // A result names a call; it does not call it.
        assert!(calling(&s, "e3").is_empty());
    }

    #[test]
    fn replacements_and_undone_appends_keep_the_index_true() {
        let mut s = load();
        let calls_c = s.entries()[4].clone();
        let result = s.entries()[2].clone();
        // Replaced by an entry without calls, then put back.
        let old = s.replace(Replacement::new(1, result, String::new()));
        assert_eq!(calling(&s, "a"), [3]);
        assert!(calling(&s, "b").is_empty());
        s.replace(Replacement::new(1, old.0, String::new()));
        assert_eq!(calling(&s, "a"), [1, 3]);
        assert_eq!(calling(&s, "b"), [1]);
        // An append is indexed, and forgotten when it is undone.
        let snapshot = s.clone_state();
        let mut ids = SequentialIds::new();
        let mut stamp = Stamp {
            ids: &mut ids,
            now: 6_000,
        };
        s.append(calls_c.body, &mut stamp);
        assert_eq!(calling(&s, "c"), [4, 5]);
        s.restore_state(snapshot);
        assert_eq!(calling(&s, "c"), [4]);
    }
}
