//! What a compaction does before any model call: it prepares over the
//! session as pruning left it, asks the `session_before_compact` and
//! `session.compacting` hooks, and chooses between a supplied result, the
//! snapcompact archive and the requests of an LLM summary.

use std::borrow::Cow;

use musepi_compaction::{CompactionResult, Preparation, PruneFirst, RequestOptions, SummaryPlan};
use musepi_context_builder::{ContextMessage, ConvertOptions, convert_to_llm};
use musepi_session_model::{EntryBody, EntryId, Journal, Session};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{CompactError, CompactOptions, RemoteCompactInput, RemoteCompactor, Strategy};
use crate::events::{
    BeforeCompactEvent, CompactingEvent, PreparationView, SummarizedMessages, SuppliedCompaction,
    names, session_file,
};
use crate::runner::warning_lines;
use crate::snapcompact::compact_preparation;

/// What the pipeline decided before any model call.
pub(super) enum Route {
    Supplied(Box<CompactionResult>),
    Summarize {
        plan: Box<SummaryPlan>,
        preserve: Option<Value>,
        remote_input: Option<RemoteCompactInput>,
    },
}

fn summarized(session: &Session, p: &Preparation<'_>) -> SummarizedMessages {
    SummarizedMessages::of(session, &p.messages_to_summarize, &p.turn_prefix_messages)
}

fn preparation_view(session: &Session, p: &Preparation<'_>) -> PreparationView {
    PreparationView {
        first_kept_entry_id: p.first_kept_entry_id.to_string(),
        tokens_before: p.tokens_before,
        is_split_turn: p.cut.is_split_turn,
        summarized: summarized(session, p),
        kept_message_count: p.recent_messages.len(),
        previous_summary: p.previous_summary.clone(),
        files: p.file_ops.lists(),
    }
}

/// `prep` with the summarized messages that a staged prune blanked put
/// back as they were.
fn with_unpruned_history<'j>(journal: &'j Journal, mut prep: Preparation<'j>) -> Preparation<'j> {
    let restore = |m: &mut ContextMessage<'j>| {
        if let Some(EntryBody::Message(original)) =
            journal.staged_original(m.entry_index).map(|e| &e.body)
        {
            m.message = Cow::Borrowed(original);
        }
    };
    prep.messages_to_summarize.iter_mut().for_each(restore);
    prep.turn_prefix_messages.iter_mut().for_each(restore);
    prep
}

/// Prepares (over the session as pruning left it, measured before
/// pruning), asks the hooks, and decides the route.
pub(super) async fn decide(
    journal: &Journal,
    options: &CompactOptions<'_>,
    step: &PruneFirst,
    cancel: &CancellationToken,
    warnings: &mut Vec<String>,
) -> Result<Route, CompactError> {
    let session = journal.session();
    let prep = step.prepare(session, session.leaf_index())?;
    let hooks = options.hooks;
    // The message views are made once: the compacting event receives the
    // ones the before-compact event showed.
    let mut views = None;
    if hooks.has(names::BEFORE_COMPACT) {
        let event = BeforeCompactEvent {
            kind: names::BEFORE_COMPACT,
            session_file: session_file(session),
            session_id: session.header().id.clone(),
            reason: options.reason.name().to_owned(),
            will_retry: options.will_retry,
            custom_instructions: options.custom_instructions.clone(),
            preparation: preparation_view(session, &prep),
            branch_entry_ids: prep
                .branch()
                .into_iter()
                .map(|i| session.entries()[i].id.to_string())
                .collect(),
        };
        let d = hooks.before_compact(&event, cancel).await;
        warnings.extend(warning_lines(&d.warnings));
        if d.failed_closed || d.result.as_ref().is_some_and(|r| r.cancel) {
            return Err(CompactError::CancelledByHook {
                warnings: d.warnings,
                by: d.cancelled_by,
            });
        }
        if let Some(supplied) = d.result.and_then(|r| r.compaction) {
            return Ok(Route::Supplied(Box::new(supplied_result(supplied, &prep))));
        }
        views = Some(event.preparation.summarized);
    }
    let mut request_options = RequestOptions::default();
    request_options
        .custom_instructions
        .clone_from(&options.custom_instructions);
    let mut preserve = None;
    if hooks.has(names::COMPACTING) {
        let event = CompactingEvent {
            kind: names::COMPACTING,
            session_id: session.header().id.clone(),
            messages: views
                .unwrap_or_else(|| summarized(session, &prep))
                .into_messages(),
        };
        let d = hooks.compacting(&event, cancel).await;
        warnings.extend(warning_lines(&d.warnings));
        if d.failed_closed {
            return Err(CompactError::CancelledByHook {
                warnings: d.warnings,
                by: d.cancelled_by,
            });
        }
        if let Some(r) = d.result {
            request_options.prompt_override = r.prompt;
            request_options.additional_context = r.context;
            preserve = r.preserve_data;
        }
    }
    if let Strategy::Snapcompact(snap) = &options.strategy {
        // The archive shortens tool output by its own salience rules: it
        // reads what pruning blanked as it was, so the cut, the regions and
        // the kept messages stay those of the pruned session.
        let prep = with_unpruned_history(journal, prep);
        let mut result = compact_preparation(&prep, &snap.target, &snap.settings)?;
        result.preserve_data = merge_preserve(result.preserve_data.take(), preserve);
        return Ok(Route::Supplied(Box::new(result)));
    }
    let prep = crate::snapcompact::with_frames_history(prep);
    let plan = SummaryPlan::new(&prep, &options.settings, &request_options);
    let remote_input =
        (options.strategy == Strategy::Remote && options.remote.is_some()).then(|| {
            let provider = options
                .remote
                .map(RemoteCompactor::provider)
                .unwrap_or_default();
            let previous_history = prep
                .previous_preserve_data
                .as_ref()
                .map(musepi_session_model::RawJson::to_value)
                .and_then(|v| v.get("openaiRemoteCompaction").cloned())
                .filter(|r| r.get("provider").and_then(Value::as_str) == Some(provider.as_str()))
                .and_then(|r| {
                    r.get("replacementHistory")
                        .and_then(Value::as_array)
                        .cloned()
                });
            let all: Vec<ContextMessage<'_>> = prep
                .messages_to_summarize
                .iter()
                .chain(&prep.turn_prefix_messages)
                .chain(&prep.recent_messages)
                .cloned()
                .collect();
            RemoteCompactInput {
                instructions: musepi_compaction::prompts::SUMMARIZATION_SYSTEM
                    .text()
                    .to_owned(),
                previous_history,
                messages: convert_to_llm(&all, &ConvertOptions::default()),
            }
        });
    Ok(Route::Summarize {
        plan: Box::new(plan),
        preserve,
        remote_input,
    })
}

/// Hook `preserveData` merged over the strategy's (hook keys win).
fn merge_preserve(base: Option<Value>, hook: Option<Value>) -> Option<Value> {
    match (base, hook) {
        (Some(Value::Object(mut a)), Some(Value::Object(b))) => {
            a.extend(b);
            Some(Value::Object(a))
        }
        (a, b) => b.or(a),
    }
}

fn supplied_result(s: SuppliedCompaction, prep: &Preparation<'_>) -> CompactionResult {
    CompactionResult {
        summary: s.summary,
        short_summary: s.short_summary,
        first_kept_entry_id: s
            .first_kept_entry_id
            .map_or_else(|| prep.first_kept_entry_id.clone(), EntryId::from),
        tokens_before: s.tokens_before.unwrap_or(prep.tokens_before),
        details: s.details,
        preserve_data: s.preserve_data,
        usage: None,
        from_extension: true,
        method: None,
        tokens_after: None,
        verified: None,
    }
}
