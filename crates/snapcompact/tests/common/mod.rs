//! What the archive's tests add to the shared session builder: preparing
//! a compaction with `musepi-compaction` (the cut, the previous
//! compaction, the file lists) and committing its result; the pass over a
//! preparation, as musepi-hooks' adapter runs it; and the readers they
//! compact for.
#![allow(dead_code, unreachable_pub)] // Each test file uses some of it.

use musepi_compaction::{CompactionSettings, prepare};
use musepi_session_model::EntryId;
use musepi_test_support::EntryBuilder;
use serde_json::{Value, json};

pub use musepi_compaction::{CompactionResult, Preparation};
use musepi_context_builder::ContextMessage;
use musepi_session_model::RawJson;
pub use musepi_snapcompact::{MarkedFiles, PassInput, SnapError, SnapSettings, SnapTarget};

/// A reader of images: `model` of `provider`, over the wire API `api`.
pub fn vision(model: &str, api: &str, provider: &str) -> SnapTarget {
    SnapTarget::images(model, api, provider)
}

/// Claude Sonnet 4.5 over the Anthropic Messages API, which gets PNG frames.
pub fn claude() -> SnapTarget {
    vision("claude-sonnet-4-5", "anthropic-messages", "anthropic")
}

/// Gemini 2.5 Pro over the Google API: a frame of 23,808 characters costs
/// it 1,120 tokens, a fifth of the text it prints, so frames can cost
/// less than the text archive.
pub fn gemini() -> SnapTarget {
    vision("gemini-2.5-pro", "google-generative-ai", "google")
}

/// The `snapcompact` object of `holder` (a result's `details` or
/// `preserveData`), read by `read`.
pub fn snapcompact_in<T>(holder: Option<&Value>, read: impl FnOnce(&Value) -> Option<T>) -> T {
    holder
        .and_then(|h| h.get("snapcompact"))
        .and_then(read)
        .unwrap_or_else(|| panic!("no snapcompact archive in {holder:?}"))
}

pub trait BuilderExt {
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

/// The archive of `prep` for `target`, as the entry a compaction commits:
/// what musepi-hooks' snapcompact adapter hands the pass and makes of it.
pub fn compact_preparation(
    prep: &Preparation<'_>,
    target: &SnapTarget,
    settings: &SnapSettings,
) -> Result<CompactionResult, SnapError> {
    let pass = musepi_snapcompact::compact(&pass_input(prep), target, settings)?;
    Ok(CompactionResult {
        summary: pass.summary,
        short_summary: Some(pass.short_summary),
        first_kept_entry_id: prep.first_kept_entry_id.clone(),
        tokens_before: prep.tokens_before,
        details: Some(pass.details),
        preserve_data: pass.preserve_data,
        usage: None,
        from_extension: false,
        method: Some("snapcompact".to_owned()),
        tokens_after: None,
        verified: None,
    })
}

/// What the pass takes from `prep`, as the hooks' adapter hands it over.
pub fn pass_input<'p>(prep: &'p Preparation<'_>) -> PassInput<'p> {
    let context: Vec<ContextMessage<'_>> = prep
        .messages_to_summarize
        .iter()
        .chain(&prep.turn_prefix_messages)
        .cloned()
        .collect();
    let files = MarkedFiles::from_file_ops(&prep.file_ops);
    let mut input = PassInput::from_context(&context, prep.session, files);
    input.tokens_before = prep.context_tokens.unwrap_or(prep.tokens_before);
    input.previous_preserve = prep.previous_preserve_data.as_ref().map(RawJson::to_value);
    input.previous_details.clone_from(&prep.previous_details);
    input.previous_summary = prep.previous_summary.as_deref();
    input
}
