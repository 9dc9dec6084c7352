//! The deterministic branch digest: the abandoned branch archived with the
//! snapcompact text engine, for users without a model.

use std::collections::BTreeSet;

use musepi_branch_summary::{BranchPreparation, PREAMBLE, Summary};
use musepi_context_builder::{ConvertOptions, convert_to_llm};
use musepi_snapcompact::text::{SnapInput, snap_compact};

/// A branch summary that needs no model: the preamble, then the text
/// archive of the branch with its file list.
pub fn branch_digest(prep: &BranchPreparation<'_>) -> Summary {
    let messages = branch_messages(prep);
    let ops = &prep.file_ops;
    let read = ops.read.sorted();
    let written = ops.written.sorted();
    let edited = ops.edited.sorted();
    let files = musepi_snapcompact::MarkedFiles::from_ops(
        read.iter().map(String::as_str),
        written.iter().map(String::as_str),
        edited.iter().map(String::as_str),
    );
    let useless: BTreeSet<String> = BTreeSet::new();
    let input = SnapInput {
        useless: &useless,
        // As long as an LLM branch summary may be (its output limit, pi's
        // too), so a digest costs the context what a summary would.
        summary_max_chars: Some(musepi_branch_summary::MAX_TOKENS as usize * 4),
        branch: true,
        ..SnapInput::new(&messages, &files)
    };
    let result = snap_compact(&input);
    let lists = ops.lists();
    Summary {
        summary: format!("{}\n\n{}", PREAMBLE.text(), result.summary),
        details: Some(lists.to_details()),
        from_extension: false,
        usage: None,
    }
}

/// The messages of a branch as the model would see them, for a digest.
fn branch_messages(
    prep: &musepi_branch_summary::BranchPreparation<'_>,
) -> Vec<musepi_context_builder::LlmMessage> {
    convert_to_llm(&prep.messages(), &ConvertOptions::for_summary())
}
