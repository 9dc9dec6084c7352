//! What the snapcompact adapter's tests add to the shared session builder:
//! preparing a compaction and committing its result; and the readers they
//! compact for.

use musepi_compaction::{CompactionResult, CompactionSettings, Preparation, prepare};
use musepi_session_model::EntryId;
use musepi_test_support::EntryBuilder;
use serde_json::{Value, json};

use super::SnapTarget;

/// A reader of images: `model` of `provider`, over the wire API `api`.
pub(super) fn vision(model: &str, api: &str, provider: &str) -> SnapTarget {
    SnapTarget::images(model, api, provider)
}

/// Gemini 2.5 Pro over the Google API: a frame of 23,808 characters costs
/// it 1,120 tokens, a fifth of the text it prints, so frames can cost
/// less than the text archive.
pub(super) fn gemini() -> SnapTarget {
    vision("gemini-2.5-pro", "google-generative-ai", "google")
}

/// The `snapcompact` object of `holder` (a result's `details` or
/// `preserveData`), read by `read`.
pub(super) fn snapcompact_in<T>(
    holder: Option<&Value>,
    read: impl FnOnce(&Value) -> Option<T>,
) -> T {
    holder
        .and_then(|h| h.get("snapcompact"))
        .and_then(read)
        .unwrap_or_else(|| panic!("no snapcompact archive in {holder:?}"))
}

pub(super) trait BuilderExt {
    /// Appends a compaction result as an entry.
    fn commit(&mut self, result: CompactionResult) -> EntryId;

    /// Prepares a compaction at the leaf, keeping about `keep` tokens.
    fn prepare(&self, keep: u64) -> Preparation<'_>;

    /// Appends the user's `request`, an answer saying `reply` that reads
    /// `read` (call `r1`) and edits `edited` (call `e1`), and the two
    /// results: `read_text`, and the edit's confirmation.
    fn read_and_edit(&mut self, request: &str, reply: &str, read: (&str, &str), edited: &str);

    /// Appends the user's `request`, an answer saying `reply` with one
    /// call (`id`, `tool`, `arguments`), and its result `output`.
    fn one_call(&mut self, request: &str, reply: &str, call: (&str, &str, Value), output: &str);
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

    fn read_and_edit(
        &mut self,
        request: &str,
        reply: &str,
        (read, read_text): (&str, &str),
        edited: &str,
    ) {
        self.user(request);
        let edit = json!({"path": edited, "oldText": "a", "newText": "b"});
        self.assistant(
            reply,
            &[
                ("r1", "read", json!({ "path": read })),
                ("e1", "edit", edit),
            ],
            None,
        );
        self.result("r1", "read", read_text);
        self.result("e1", "edit", &format!("Edited {edited}"));
    }

    fn one_call(
        &mut self,
        request: &str,
        reply: &str,
        (id, tool, arguments): (&str, &str, Value),
        output: &str,
    ) {
        self.user(request);
        self.call(reply, id, tool, arguments);
        self.result(id, tool, output);
    }
}
