//! Turning summarizer answers into a compaction entry (docs/design.md, "Summaries").

pub use musepi_context_builder::NO_PRIOR_HISTORY;
use musepi_context_builder::{format_files_block, upsert_file_operations};
use musepi_session_model::{Compaction, EntryBody, EntryId, MadeBy, RawJson, Text, Usage};
use serde_json::Value;

use crate::prepare::Preparation;
use crate::request::history_max_tokens;
use crate::settings::CompactionSettings;
use crate::verify::Ledger;

/// Everything a compaction entry holds, before it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionResult {
    /// The summary, file list included.
    pub summary: String,
    /// The one-line summary for UIs.
    pub short_summary: Option<String>,
    /// The first entry kept verbatim.
    pub first_kept_entry_id: EntryId,
    /// Context size before compaction.
    pub tokens_before: u64,
    /// `{readFiles, modifiedFiles}`, or whatever an extension supplied.
    pub details: Option<Value>,
    /// Data carried to later compactions.
    pub preserve_data: Option<Value>,
    /// Usage of the calls that produced it.
    pub usage: Option<Usage>,
    /// An extension supplied it (`session_before_compact`).
    pub from_extension: bool,
    /// How it was made (`snapcompact`, `llm`, `remote`), as the entry's
    /// `method` records it; `None` for one an extension supplied.
    pub method: Option<String>,
    /// The context's tokens right after it, as the entry's `tokensAfter`
    /// records it (set when it is committed).
    pub tokens_after: Option<u64>,
    /// For a model's summary, what verifying it against the ledger found
    /// ([`crate::verify`]); not written to the entry.
    pub verified: Option<crate::verify::Verified>,
}

impl CompactionResult {
    /// The entry body to append.
    pub fn into_body(self) -> EntryBody {
        EntryBody::Compaction(Compaction {
            summary: Text::new(self.summary),
            first_kept_entry_id: Some(self.first_kept_entry_id),
            tokens_before: self.tokens_before,
            details: self.details,
            made_by: MadeBy::extension(self.from_extension),
            short_summary: self.short_summary,
            preserve_data: self.preserve_data.as_ref().map(RawJson::from_value),
            usage: self.usage,
            method: self.method,
            tokens_after: self.tokens_after,
        })
    }
}

/// The history part of the summary when no call was made for it: the
/// previous summary unchanged, or [`NO_PRIOR_HISTORY`].
pub fn history_without_call(prep: &Preparation<'_>) -> String {
    prep.previous_summary
        .clone()
        .unwrap_or_else(|| NO_PRIOR_HISTORY.to_owned())
}

/// Joins the history summary and the turn-prefix summary (docs/design.md, "Summaries").
pub fn merge_summaries(history: &str, turn_prefix: Option<&str>) -> String {
    match turn_prefix {
        Some(prefix) => format!("{history}\n\n---\n\n**Turn Context (split turn):**\n\n{prefix}"),
        None => history.to_owned(),
    }
}

/// Appends the `<files>` block of the preparation's file operations,
/// replacing any list the text already has.
pub fn with_file_list(prep: &Preparation<'_>, summary: &str) -> String {
    let lists = prep.file_ops.lists();
    upsert_file_operations(summary, &format_files_block(&lists, &prep.file_ops.read))
}

/// Builds the result of an LLM compaction from the merged summary, with
/// the ledger items it does not hold appended ([`crate::verify`], within
/// the bound of `settings`).
pub fn finish(
    prep: &Preparation<'_>,
    settings: &CompactionSettings,
    merged_summary: &str,
    short_summary: Option<String>,
    usage: Option<Usage>,
    preserve_data: Option<Value>,
) -> CompactionResult {
    let ledger = Ledger::of(
        &[&prep.messages_to_summarize, &prep.turn_prefix_messages],
        prep.previous_summary.as_deref(),
    );
    let lists = prep.file_ops.lists();
    let files = format_files_block(&lists, &prep.file_ops.read);
    let bound = Ledger::bound_chars(history_max_tokens(settings));
    let (summary, verified) = ledger.complete_counted(merged_summary, bound);
    CompactionResult {
        summary: upsert_file_operations(&summary, &files),
        verified: Some(verified),
        short_summary,
        first_kept_entry_id: prep.first_kept_entry_id.clone(),
        tokens_before: prep.tokens_before,
        details: Some(prep.file_ops.lists().to_details()),
        preserve_data,
        usage,
        from_extension: false,
        method: Some("llm".to_owned()),
        tokens_after: None,
    }
}

/// Field-wise sum of usages; the optional fields are summed when either side has them.
pub fn sum_usage<'u>(usages: impl IntoIterator<Item = &'u Usage>) -> Option<Usage> {
    let mut total: Option<Usage> = None;
    for u in usages {
        let t = total.get_or_insert_with(Usage::default);
        t.input += u.input;
        t.output += u.output;
        t.cache_read += u.cache_read;
        t.cache_write += u.cache_write;
        t.total_tokens += u.total_tokens;
        let add = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        t.cache_write_1h = add(t.cache_write_1h, u.cache_write_1h);
        t.reasoning = add(t.reasoning, u.reasoning);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_turn_layout_is_exact() {
        assert_eq!(
            merge_summaries("HISTORY", Some("PREFIX")),
            "HISTORY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX"
        );
        assert_eq!(
            merge_summaries(NO_PRIOR_HISTORY, Some("P")),
            "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nP"
        );
        assert_eq!(merge_summaries("H", None), "H");
    }

    #[test]
    fn usages_add_up_field_by_field() {
        let a = Usage {
            input: 10.0,
            output: 10.0,
            total_tokens: 20.0,
            ..Default::default()
        };
        let b = Usage {
            input: 10.0,
            output: 10.0,
            total_tokens: 20.0,
            reasoning: Some(5.0),
            ..Default::default()
        };
        let s = sum_usage([&a, &b]).unwrap();
        assert_eq!(
            (s.input, s.output, s.total_tokens, s.reasoning),
            (20.0, 20.0, 40.0, Some(5.0))
        );
        assert_eq!(sum_usage([]), None);
    }
}
