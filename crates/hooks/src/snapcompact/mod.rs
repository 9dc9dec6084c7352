//! The snapcompact strategy's adapter: a compaction preparation in, a
//! compaction result out, through the archive of `musepi-snapcompact`.
//!
//! The preparation decides what leaves the context (`musepi-compaction`);
//! the archive decides how it is kept. This module converts the summarized
//! and turn-prefix messages as the summarizer converts them, names their
//! entries, collects the useless results and the file lists, hands the
//! previous compaction's stored archive over, and wraps the archive into
//! the entry the pipeline commits.
//!
//! The entry is written with `fromExtension: false`. `MusePi` delivered its
//! text archive through a `session_before_compact` hook, so pi stored it as
//! extension-made and the next compaction ignored its file lists; we do
//! not reproduce that, so cumulative file tracking keeps working across
//! snapcompact compactions.

use musepi_compaction::{CompactionResult, Preparation};
use musepi_context_builder::ContextMessage;
use musepi_session_model::RawJson;
use musepi_snapcompact::summary_with_frames_history;
use musepi_snapcompact::{MarkedFiles, PassInput, SnapError};
pub use musepi_snapcompact::{SnapSettings, SnapTarget};

/// Compacts `prep` into a snapcompact archive for `target`: the PNG-frame
/// archive when the reader takes images, the text-frame archive otherwise.
///
/// A pure function: the same preparation, target and settings always give
/// the same result, to the byte.
pub fn compact_preparation(
    prep: &Preparation<'_>,
    target: &SnapTarget,
    settings: &SnapSettings,
) -> Result<CompactionResult, SnapError> {
    if prep.first_kept_entry_id.as_str().is_empty() {
        return Err(SnapError::NoFirstKeptId);
    }
    let input = pass_input(prep);
    let pass = musepi_snapcompact::compact(&input, target, settings)?;
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

/// `prep` with the transcript a previous PNG archive carries on its frames
/// put after its previous summary, for an LLM summary that takes over from
/// it: the frames carry that history instead of the summary's text, and a
/// summarizer reads text (see
/// [`musepi_snapcompact::summary_with_frames_history`]).
pub fn with_frames_history(mut prep: Preparation<'_>) -> Preparation<'_> {
    let update = prep
        .previous_preserve_data
        .as_ref()
        .map(RawJson::to_value)
        .and_then(|preserve| {
            summary_with_frames_history(
                prep.previous_summary.as_deref().unwrap_or_default(),
                &preserve,
            )
        });
    if update.is_some() {
        prep.previous_summary = update;
    }
    prep
}

/// What the archive takes from the preparation.
fn pass_input<'p>(prep: &'p Preparation<'_>) -> PassInput<'p> {
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

#[cfg(test)]
mod tests;
