//! A prepared compaction as owned data: the requests to send and what
//! finishing needs, so the caller can drop the borrowed preparation while
//! the model works.

use musepi_context_builder::{
    FileLists, PathSet, SummaryRequest, format_files_block, serialize_for_summary,
    upsert_file_operations,
};
use musepi_session_model::{EntryId, RawJson, Usage};
use serde_json::Value;

use crate::finish::{CompactionResult, NO_PRIOR_HISTORY, merge_summaries};
use crate::prepare::Preparation;
use crate::request::{
    RequestOptions, history_max_tokens, history_request, short_summary_max_tokens,
    turn_prefix_request,
};
use crate::settings::CompactionSettings;
use crate::verify::Ledger;

/// Everything needed to finish a compaction once the summaries are written.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryPlan {
    /// The history request, when there is history to summarize.
    pub history: Option<SummaryRequest>,
    /// The split-turn prefix request, when the cut splits a turn.
    pub turn_prefix: Option<SummaryRequest>,
    /// The history text when no history request is made: the previous
    /// summary unchanged, or `No prior history.`.
    pub history_fallback: String,
    /// The kept messages, serialized, for the short summary.
    pub recent_conversation: String,
    /// Lines for `<additional-context>`.
    pub additional_context: Vec<String>,
    /// The first entry kept verbatim.
    pub first_kept_entry_id: EntryId,
    /// Context size before compaction.
    pub tokens_before: u64,
    /// The file lists of what is summarized.
    pub file_lists: FileLists,
    /// The cumulative read set (for `RW` markers).
    pub read_set: PathSet,
    /// The previous compaction's `preserveData`.
    pub previous_preserve_data: Option<RawJson>,
    /// The history as units, for summarizing in windows when it is too
    /// large for the summarizer (docs/design.md, "Summaries").
    pub history_units: crate::window::HistoryUnits,
    /// Whether a short summary is asked for after the summary
    /// ([`CompactionSettings::short_summary`]).
    pub short_summary: bool,
    /// The ledger of the summarized history, whose items the summary
    /// must hold (appended when it does not: [`crate::verify`]).
    pub ledger: Ledger,
    /// The bound on what is appended, in characters.
    pub ledger_bound: usize,
    /// Output limit and reasoning of the short summary.
    short_max_tokens: u32,
    reasoning: Option<String>,
}

impl SummaryPlan {
    /// Builds the plan of `prep`.
    pub fn new(
        prep: &Preparation<'_>,
        settings: &CompactionSettings,
        options: &RequestOptions,
    ) -> Self {
        let history_fallback = prep
            .previous_summary
            .clone()
            .unwrap_or_else(|| NO_PRIOR_HISTORY.to_owned());
        Self {
            history: history_request(prep, settings, options),
            history_units: crate::window::HistoryUnits::new(
                &prep.messages_to_summarize,
                prep.previous_summary.clone(),
                settings,
                options,
                prep.reasoning.clone(),
            ),
            turn_prefix: turn_prefix_request(prep, settings),
            history_fallback,
            recent_conversation: serialize_for_summary(&prep.recent_messages),
            additional_context: options.additional_context.clone(),
            first_kept_entry_id: prep.first_kept_entry_id.clone(),
            tokens_before: prep.tokens_before,
            file_lists: prep.file_ops.lists(),
            read_set: prep.file_ops.read.clone(),
            previous_preserve_data: prep.previous_preserve_data.clone(),
            short_summary: settings.short_summary,
            ledger: Ledger::of(
                &[&prep.messages_to_summarize, &prep.turn_prefix_messages],
                prep.previous_summary.as_deref(),
            ),
            ledger_bound: Ledger::bound_chars(history_max_tokens(settings)),
            short_max_tokens: short_max(settings),
            reasoning: prep.reasoning.clone(),
        }
    }

    /// Every request the plan sends before the short summary, in order.
    pub fn requests(&self) -> impl Iterator<Item = &SummaryRequest> {
        self.history.iter().chain(&self.turn_prefix)
    }

    /// The merged summary text from the answers (docs/design.md, "Summaries").
    pub fn merge(&self, history: Option<&str>, turn_prefix: Option<&str>) -> String {
        merge_summaries(history.unwrap_or(&self.history_fallback), turn_prefix)
    }

    /// The short-summary request over the kept messages, with the merged
    /// summary as the previous summary.
    pub fn short_request(&self, merged: &str) -> SummaryRequest {
        crate::request::short_request(
            &self.recent_conversation,
            merged,
            &self.additional_context,
            self.short_max_tokens,
            self.reasoning.clone(),
        )
    }

    /// The `<files>` block of the plan.
    pub fn files_block(&self) -> String {
        format_files_block(&self.file_lists, &self.read_set)
    }

    /// The compaction entry's data from the merged summary: the ledger
    /// items it does not hold appended, then the file list.
    pub fn finish(
        &self,
        merged: &str,
        short_summary: Option<String>,
        usage: Option<Usage>,
        preserve_data: Option<Value>,
    ) -> CompactionResult {
        let (summary, verified) = self.ledger.complete_counted(merged, self.ledger_bound);
        CompactionResult {
            summary: upsert_file_operations(&summary, &self.files_block()),
            verified: Some(verified),
            short_summary,
            first_kept_entry_id: self.first_kept_entry_id.clone(),
            tokens_before: self.tokens_before,
            details: Some(self.file_lists.to_details()),
            preserve_data,
            usage,
            from_extension: false,
            method: Some("llm".to_owned()),
            tokens_after: None,
        }
    }
}

fn short_max(settings: &CompactionSettings) -> u32 {
    short_summary_max_tokens(settings)
}
