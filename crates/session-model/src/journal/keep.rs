//! Keeping what pruning blanks: before a write replaces a tool result's
//! content with a placeholder, the original line goes to the prune store
//! beside the file written ([`crate::store`]), durably.

use std::fs::File;
use std::path::Path;

use super::Journal;
use super::lines::OriginReader;
use crate::entry::{Entry, EntryBody};
use crate::error::SessionError;
use crate::id::EntryId;
use crate::message::AgentMessage;

/// Whether `entry` is a tool result that pruning blanked.
fn is_pruned(entry: &Entry) -> bool {
    matches!(&entry.body, EntryBody::Message(AgentMessage::ToolResult(t)) if t.pruned_at.is_some())
}

impl Journal {
    /// The original lines of the results the staged replacements prune
    /// (a tool result not pruned before, pruned now), as the file would
    /// hold them without the pruning, read through `origin` when given.
    fn pruned_originals(
        &self,
        origin: Option<&File>,
    ) -> Result<Vec<(EntryId, Vec<u8>)>, SessionError> {
        let mut reader = OriginReader::new(self.session.origin(), origin);
        let mut scratch = Vec::new();
        let mut out = Vec::new();
        for (i, old, source) in &self.staged {
            let now = &self.session.entries()[*i];
            if is_pruned(now) && !is_pruned(old) {
                let line = reader.bytes(source, &mut scratch)?;
                out.push((old.id.clone(), line.to_vec()));
            }
        }
        Ok(out)
    }

    /// Keeps the originals of the results the staged replacements prune in
    /// the store beside `written` (the file about to be written), durably,
    /// with the permission bits `mode`. Nothing to keep writes nothing.
    pub(super) fn keep_originals(
        &self,
        written: &Path,
        origin: Option<&File>,
        mode: Option<u32>,
    ) -> Result<(), SessionError> {
        let originals = self.pruned_originals(origin)?;
        crate::store::keep(written, &self.session.header().id, &originals, mode)
    }
}
