//! Running one compaction for the maintenance runtime: choosing the
//! strategy (docs/design.md, "When to compact"), the pipeline or the
//! handoff (docs/design.md, "Handoff"), and the events and decisions that
//! report how it ended, with the failure messages.
//!
//! Everything here works on the parts of the runtime it is handed (the
//! journal, the id source, the summarizer): the runtime's own state stays
//! in [`crate::Maintenance`].

use musepi_compaction::prompts::{AUTO_CONTINUE, HANDOFF_THRESHOLD_FOCUS, SUMMARIZATION_SYSTEM};
use musepi_compaction::{CompactionPlan, Reason, handoff_request, handoff_session};
use musepi_context_builder::{Tokenizer, context_thinking_level, summary_reasoning};
use musepi_hooks::{
    BranchStrategy, CompactError, CompactOptions, Hooks, RemoteCompactor, SnapTarget,
    SnapcompactStrategy, Strategy, SummarizeError, Summarizer, compact, truncation_warning,
};
use musepi_session_model::time::format_iso;
use musepi_session_model::{Header, IdSource, Journal, Stamp};
use tokio_util::sync::CancellationToken;

use crate::decision::{CompactionReport, Decision, MaintenanceEvent, Outcome, UsedStrategy};
use crate::measure::without_failed_tail;
use crate::settings::{MaintenanceSettings, MaintenanceStrategy};

/// How a run ended short of a compaction.
pub(crate) enum Stop {
    /// Nothing was done and nothing is wrong to report: no model for the
    /// strategy, or nothing to compact. The text is for the decision only.
    Skipped(String),
    /// A hook cancelled it or the abort signal fired.
    Aborted,
    /// It failed; the error text without the reason prefix.
    Failed(String),
}

/// What a run made, with notes for the user.
pub(crate) type Made = (CompactionReport, Vec<String>);

/// The parts of the runtime a compaction run works on.
pub(crate) struct Parts<'a> {
    /// The session; a handoff replaces it with its successor.
    pub journal: &'a mut Journal,
    /// Where new entry ids come from.
    pub ids: &'a mut (dyn IdSource + Send),
    /// The settings.
    pub settings: &'a MaintenanceSettings,
    /// The model that writes LLM summaries and handoff documents.
    pub summarizer: Option<&'a dyn Summarizer>,
    /// The provider-native remote compaction.
    pub remote: Option<&'a dyn RemoteCompactor>,
    /// Extension handlers.
    pub hooks: &'a Hooks,
    /// Who reads snapcompact archives.
    pub reader: &'a SnapTarget,
    /// The live agent's system prompt, sent with handoff requests.
    pub system_prompt: Option<&'a str>,
    /// "Now", in epoch milliseconds.
    pub now: i64,
}

/// Runs `plan` with the `used` strategy: a handoff, or the pipeline.
pub(crate) async fn execute(
    parts: Parts<'_>,
    plan: CompactionPlan,
    used: UsedStrategy,
    instructions: Option<String>,
    cancel: &CancellationToken,
) -> Result<Made, Stop> {
    if used == UsedStrategy::Handoff {
        let input = HandoffInput {
            journal: parts.journal,
            summarizer: parts.summarizer,
            system_prompt: parts.system_prompt,
            reason: plan.reason,
            now: parts.now,
        };
        let (journal, made) = handoff(input, parts.ids, cancel).await?;
        *parts.journal = journal;
        return Ok(made);
    }
    let remote_allowed =
        parts.settings.remote_enabled || parts.settings.strategy == MaintenanceStrategy::Remote;
    let remote = parts
        .remote
        .filter(|_| remote_allowed && used == UsedStrategy::ContextFull);
    let strategy = pipeline_strategy(
        used,
        parts.reader,
        parts.settings,
        parts.summarizer.is_some(),
        remote.is_some(),
    )?;
    let mut options = parts.settings.compact_options(parts.hooks, parts.now);
    options.reason = plan.reason;
    options.will_retry = plan.will_retry;
    options.custom_instructions = instructions;
    options.strategy = strategy;
    options.summarizer = parts.summarizer;
    options.remote = remote;
    pipeline(parts.journal, parts.ids, &options, used, cancel).await
}

/// The strategy for `plan`: handoff only for threshold and incomplete
/// maintenance outside a tool loop; context-full for everything the
/// handoff cannot do; manual instructions ask for an LLM summary when
/// there is a model to write it.
pub(crate) fn choose(
    configured: MaintenanceStrategy,
    plan: CompactionPlan,
    instructions: bool,
    has_summarizer: bool,
) -> UsedStrategy {
    match configured {
        MaintenanceStrategy::Handoff
            if matches!(plan.reason, Reason::Threshold | Reason::Incomplete) && !plan.mid_turn =>
        {
            UsedStrategy::Handoff
        }
        MaintenanceStrategy::Snapcompact | MaintenanceStrategy::Off
            if !(plan.reason == Reason::Manual && instructions && has_summarizer) =>
        {
            UsedStrategy::Snapcompact
        }
        _ => UsedStrategy::ContextFull,
    }
}

/// How a branch summary is written: by the model for the LLM strategies,
/// as the model-free digest for snapcompact (unless instructions ask for a
/// directed summary and a model is there).
pub(crate) fn branch_strategy(
    configured: MaintenanceStrategy,
    instructions: bool,
    has_summarizer: bool,
) -> BranchStrategy {
    match configured {
        MaintenanceStrategy::ContextFull
        | MaintenanceStrategy::Remote
        | MaintenanceStrategy::Handoff => BranchStrategy::Llm,
        MaintenanceStrategy::Snapcompact | MaintenanceStrategy::Off
            if instructions && has_summarizer =>
        {
            BranchStrategy::Llm
        }
        MaintenanceStrategy::Snapcompact | MaintenanceStrategy::Off => BranchStrategy::Snapcompact,
    }
}

/// The pipeline's strategy for `used`: the archive for `reader` (the
/// settings' shape unless the reader forces one), else an LLM summary,
/// tried remotely first when `remote`.
fn pipeline_strategy(
    used: UsedStrategy,
    reader: &SnapTarget,
    settings: &MaintenanceSettings,
    has_summarizer: bool,
    remote: bool,
) -> Result<Strategy, Stop> {
    if used == UsedStrategy::Snapcompact {
        let mut target = reader.clone();
        if target.forced_shape.is_none() {
            target.forced_shape.clone_from(&settings.snapcompact_shape);
        }
        Ok(Strategy::Snapcompact(Box::new(SnapcompactStrategy {
            target,
            settings: settings.snap_settings(),
        })))
    } else if !has_summarizer {
        Err(Stop::Skipped(
            "No model selected: an LLM summary needs a summarizer".to_owned(),
        ))
    } else if remote {
        Ok(Strategy::Remote)
    } else {
        Ok(Strategy::Llm)
    }
}

/// The compaction pipeline with a snapcompact archive or an LLM summary.
async fn pipeline(
    journal: &mut Journal,
    ids: &mut (dyn IdSource + Send),
    options: &CompactOptions<'_>,
    used: UsedStrategy,
    cancel: &CancellationToken,
) -> Result<Made, Stop> {
    match compact(journal, options, ids, cancel).await {
        Ok(out) => {
            let report = CompactionReport {
                strategy: used,
                entry_id: Some(out.entry_id),
                summary: out.result.summary,
                short_summary: out.result.short_summary,
                first_kept_entry_id: Some(out.result.first_kept_entry_id),
                tokens_before: out.result.tokens_before,
                tokens_after: out.tokens_after,
                from_extension: out.result.from_extension,
                session_file: None,
            };
            Ok((report, out.warnings))
        }
        Err(CompactError::Nothing(n)) => Err(Stop::Skipped(n.to_string())),
        Err(e @ CompactError::NoModel) => Err(Stop::Skipped(e.to_string())),
        Err(CompactError::Aborted | CompactError::CancelledByHook { .. }) => Err(Stop::Aborted),
        Err(e) => Err(Stop::Failed(e.to_string())),
    }
}

/// What a handoff needs besides the id source.
struct HandoffInput<'a> {
    /// The session being handed off.
    pub journal: &'a Journal,
    /// The model that writes the document.
    pub summarizer: Option<&'a dyn Summarizer>,
    /// The live agent's system prompt, sent with the request.
    pub system_prompt: Option<&'a str>,
    /// Why it runs.
    pub reason: Reason,
    /// "Now", in epoch milliseconds.
    pub now: i64,
}

/// A handoff (docs/design.md, "Handoff"): the document from the live
/// context, then a new session next to this one whose first entry holds
/// it. Returns the new session's journal, which the runtime continues on.
async fn handoff(
    input: HandoffInput<'_>,
    ids: &mut (dyn IdSource + Send),
    cancel: &CancellationToken,
) -> Result<(Journal, Made), Stop> {
    let Some(summarizer) = input.summarizer else {
        return Err(Stop::Skipped(
            "No model selected: a handoff needs a summarizer".to_owned(),
        ));
    };
    let session = input.journal.session();
    let tokens_before =
        musepi_snapcompact::context_tokens(session, session.leaf_index(), Tokenizer::Heuristic);
    let history = crate::model_messages(session);
    let focus = (input.reason == Reason::Threshold).then(|| HANDOFF_THRESHOLD_FOCUS.text());
    let system = input
        .system_prompt
        .unwrap_or_else(|| SUMMARIZATION_SYSTEM.text());
    // The session's thinking level, as every summary request carries it.
    let reasoning = summary_reasoning(&context_thinking_level(session, session.leaf_index()));
    let request = handoff_request(without_failed_tail(history), system, focus, reasoning);
    let response = match summarizer.summarize(&request, cancel.clone()).await {
        Ok(r) => r,
        Err(SummarizeError::Cancelled) => return Err(Stop::Aborted),
        Err(e) => return Err(Stop::Failed(format!("Handoff generation failed: {e}"))),
    };
    if cancel.is_cancelled() {
        return Err(Stop::Aborted);
    }
    let notes: Vec<String> = response
        .truncated
        .then(|| truncation_warning(request.purpose, summarizer))
        .into_iter()
        .collect();
    let document = response.text.trim().to_owned();
    if document.is_empty() {
        return Err(Stop::Failed(
            "Handoff generation failed: the model returned an empty document".to_owned(),
        ));
    }
    let now = input.now;
    let id = ids.session_id(now);
    let old = session.header();
    let header = Header {
        parent_session: Some(input.journal.path().display().to_string()),
        ..Header::new(
            id.clone(),
            format_iso(now),
            old.cwd.clone().unwrap_or_default(),
        )
    };
    let file = format!("{}_{id}.jsonl", format_iso(now).replace([':', '.'], "-"));
    let path = input
        .journal
        .path()
        .parent()
        .map_or_else(|| file.clone().into(), |d| d.join(&file));
    let mut stamp = Stamp { ids, now };
    let new_session = handoff_session(header, &document, &mut stamp);
    let mut journal =
        Journal::with_session(&path, new_session).map_err(|e| Stop::Failed(e.to_string()))?;
    // The deferred first flush would wait for an assistant message; the
    // successor's file exists at once so the agent can switch to it.
    journal.rewrite().map_err(|e| Stop::Failed(e.to_string()))?;
    let session = journal.session();
    let tokens_after =
        musepi_snapcompact::context_tokens(session, session.leaf_index(), Tokenizer::Heuristic);
    let report = CompactionReport {
        strategy: UsedStrategy::Handoff,
        entry_id: None,
        summary: document,
        short_summary: None,
        first_kept_entry_id: None,
        tokens_before,
        tokens_after,
        from_extension: false,
        session_file: Some(path),
    };
    Ok((journal, (report, notes)))
}

/// The `compaction_end` and the decision of a run that made `made`.
pub(crate) fn compacted(
    plan: CompactionPlan,
    (report, notes): Made,
) -> (MaintenanceEvent, Decision) {
    let event = MaintenanceEvent::CompactionEnd {
        reason: plan.reason,
        result: Some(report.clone()),
        aborted: false,
        will_retry: plan.will_retry,
        error_message: None,
    };
    let mut d = Decision::of(Outcome::Compacted, Some(plan.reason));
    d.compaction = Some(report);
    d.notes = notes;
    d.retry = plan.will_retry;
    if plan.will_retry {
        d.continue_turn = true;
    } else if plan.auto_continue && !plan.mid_turn {
        d.continue_turn = true;
        d.continue_prompt = Some(AUTO_CONTINUE.text().to_owned());
    }
    (event, d)
}

/// The `compaction_end` and the decision of a run that made nothing.
pub(crate) fn stopped(reason: Reason, automatic: bool, stop: Stop) -> (MaintenanceEvent, Decision) {
    let (outcome, aborted, message, note) = match stop {
        // As pi reports it: no model, or nothing to compact, ends without a
        // message for automatic runs; a manual run reports it.
        Stop::Skipped(why) if automatic => (Outcome::Skipped, false, None, Some(why)),
        Stop::Skipped(why) | Stop::Failed(why) => (
            Outcome::Failed,
            false,
            Some(reason.failure_message(&why)),
            None,
        ),
        Stop::Aborted => (Outcome::Aborted, true, None, None),
    };
    let event = MaintenanceEvent::CompactionEnd {
        reason,
        result: None,
        aborted,
        will_retry: false,
        error_message: message.clone(),
    };
    let mut d = Decision::of(outcome, Some(reason));
    d.error = message;
    d.notes.extend(note);
    if aborted && !automatic {
        d.error = Some("Compaction cancelled".to_owned());
    }
    (event, d)
}
