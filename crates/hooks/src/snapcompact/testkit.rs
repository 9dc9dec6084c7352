//! What the snapcompact adapter's tests add to the shared session builder:
//! preparing a compaction and committing its result.

use musepi_compaction::{CompactionResult, CompactionSettings, Preparation, prepare};
use musepi_session_model::EntryId;
use musepi_test_support::EntryBuilder;

pub(super) trait BuilderExt {
    /// Appends a compaction result as an entry.
    fn commit(&mut self, result: CompactionResult) -> EntryId;

    /// Prepares a compaction at the leaf, keeping about `keep` tokens.
    fn prepare(&self, keep: u64) -> Preparation<'_>;
}

impl BuilderExt for EntryBuilder {
    fn commit(&mut self, result: CompactionResult) -> EntryId {
        self.push(result.into_body())
    }

    fn prepare(&self, keep: u64) -> Preparation<'_> {
        let mut settings = CompactionSettings::default();
        settings.keep_recent_tokens = keep;
        settings.adapt_keep_recent = false;
        prepare(&self.session, self.session.leaf_index(), &settings)
            .unwrap_or_else(|e| panic!("nothing to compact: {e}"))
    }
}
