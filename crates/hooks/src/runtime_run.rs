//! Running one compaction for the maintenance runtime: choosing the
//! strategy (docs/design.md, "When to compact"), the pipeline or the handoff (docs/design.md, "Handoff"), the events
//! with the failure messages (docs/design.md, "When to compact"), and the decision that follows.

use musepi_compaction::prompts::{AUTO_CONTINUE, HANDOFF_THRESHOLD_FOCUS, SUMMARIZATION_SYSTEM};
use musepi_compaction::{CompactionPlan, Reason, handoff_request, handoff_session};
use musepi_context_builder::Tokenizer;
use musepi_session_model::time::format_iso;
use musepi_session_model::{EntryId, Header, Journal, Stamp};

use crate::compact::{CompactError, CompactOptions, SnapcompactStrategy, Strategy, compact};
use crate::runtime::Maintenance;
use crate::runtime_decision::{
    CompactionReport, Decision, MaintenanceEvent, Outcome, UsedStrategy,
};
use crate::runtime_measure::without_failed_tail;
use crate::runtime_settings::MaintenanceStrategy;
use crate::summarizer::SummarizeError;

/// How a run ended short of a compaction.
enum Stop {
    /// Nothing was done and nothing is wrong to report: no model for the
    /// strategy, or nothing to compact. The text is for the decision only.
    Skipped(String),
    /// A hook cancelled it or the abort signal fired.
    Aborted,
    /// It failed; the error text without the reason prefix.
    Failed(String),
}

/// What a run made, with notes for the user.
type Made = (CompactionReport, Vec<String>);

impl Maintenance {
    /// The strategy for `plan`: handoff only for threshold and incomplete
    /// maintenance outside a tool loop; context-full for everything the
    /// handoff cannot do; manual instructions ask for an LLM summary when
    /// there is a model to write it.
    fn choose(&self, plan: CompactionPlan, instructions: bool) -> UsedStrategy {
        match self.settings.strategy {
            MaintenanceStrategy::Handoff
                if matches!(plan.reason, Reason::Threshold | Reason::Incomplete)
                    && !plan.mid_turn =>
            {
                UsedStrategy::Handoff
            }
            MaintenanceStrategy::Snapcompact | MaintenanceStrategy::Off
                if !(plan.reason == Reason::Manual
                    && instructions
                    && self.summarizer.is_some()) =>
            {
                UsedStrategy::Snapcompact
            }
            _ => UsedStrategy::ContextFull,
        }
    }

    /// Runs a compaction for `plan`, reports it, and decides what follows.
    /// `anchor` is the assistant whose usage led here; it is never acted on again.
    pub(crate) async fn run_plan(
        &mut self,
        plan: CompactionPlan,
        instructions: Option<String>,
        anchor: Option<EntryId>,
    ) -> Decision {
        let reason = plan.reason;
        self.emit(MaintenanceEvent::CompactionStart { reason });
        let used = self.choose(plan, instructions.is_some());
        let ignored = (used == UsedStrategy::Snapcompact && instructions.is_some()).then(|| {
            "the instructions need a model to write the summary; the archive was written without them"
                .to_owned()
        });
        let cancel = self.abort.begin();
        let result = match used {
            UsedStrategy::Handoff => self.run_handoff(reason, &cancel).await,
            _ => self.run_pipeline(&plan, used, instructions, &cancel).await,
        };
        self.abort.end();
        let automatic = reason != Reason::Manual;
        if automatic || result.is_ok() {
            self.state.acted_usage = anchor.or_else(|| self.state.acted_usage.take());
        }
        let mut decision = match result {
            Ok((report, notes)) => {
                self.emit(MaintenanceEvent::CompactionEnd {
                    reason,
                    result: Some(report.clone()),
                    aborted: false,
                    will_retry: plan.will_retry,
                    error_message: None,
                });
                let mut d = Decision::of(Outcome::Compacted, Some(reason));
                d.compaction = Some(report);
                d.notes = notes;
                d.notes.extend(ignored);
                d.retry = plan.will_retry;
                if plan.will_retry {
                    d.continue_turn = true;
                } else if plan.auto_continue && !plan.mid_turn {
                    d.continue_turn = true;
                    d.continue_prompt = Some(AUTO_CONTINUE.text().to_owned());
                }
                d
            }
            Err(stop) => self.stopped(reason, automatic, stop),
        };
        decision.remove_last_assistant = plan.remove_last_assistant;
        let context = self.context();
        decision.context = Some(if plan.remove_last_assistant {
            without_failed_tail(context)
        } else {
            context
        });
        decision
    }

    /// The `compaction_end` and the decision of a run that made nothing.
    fn stopped(&self, reason: Reason, automatic: bool, stop: Stop) -> Decision {
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
        self.emit(MaintenanceEvent::CompactionEnd {
            reason,
            result: None,
            aborted,
            will_retry: false,
            error_message: message.clone(),
        });
        let mut d = Decision::of(outcome, Some(reason));
        d.error = message;
        d.notes.extend(note);
        if aborted && !automatic {
            d.error = Some("Compaction cancelled".to_owned());
        }
        d
    }

    /// The compaction pipeline with a snapcompact archive or an LLM summary.
    async fn run_pipeline(
        &mut self,
        plan: &CompactionPlan,
        used: UsedStrategy,
        instructions: Option<String>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Made, Stop> {
        let remote = self
            .remote
            .as_deref()
            .filter(|_| self.settings.remote_enabled && used == UsedStrategy::ContextFull);
        let strategy = if used == UsedStrategy::Snapcompact {
            let mut target = self.reader.clone();
            if target.forced_shape.is_none() {
                target
                    .forced_shape
                    .clone_from(&self.settings.snapcompact_shape);
            }
            Strategy::Snapcompact(Box::new(SnapcompactStrategy {
                target,
                settings: self.settings.snap_settings(),
            }))
        } else if self.summarizer.is_some() {
            if remote.is_some() {
                Strategy::Remote
            } else {
                Strategy::Llm
            }
        } else {
            return Err(Stop::Skipped(
                "No model selected: context-full compaction needs a summarizer".to_owned(),
            ));
        };
        let options = CompactOptions {
            reason: plan.reason,
            will_retry: plan.will_retry,
            custom_instructions: instructions,
            settings: self.settings.compaction(),
            prune: Some(self.settings.prune()),
            strategy,
            summarizer: self.summarizer.as_deref(),
            remote,
            hooks: &self.hooks,
            now: (self.clock)(),
        };
        match compact(&mut self.journal, &options, self.ids.as_mut(), cancel).await {
            Ok(out) => {
                let notes = out.warnings;
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
                Ok((report, notes))
            }
            Err(CompactError::Nothing(n)) => Err(Stop::Skipped(n.to_string())),
            Err(e @ CompactError::NoModel) => Err(Stop::Skipped(e.to_string())),
            Err(CompactError::Aborted | CompactError::CancelledByHook { .. }) => Err(Stop::Aborted),
            Err(e) => Err(Stop::Failed(e.to_string())),
        }
    }

    /// A handoff (docs/design.md, "Handoff"): the document from the live context, then a
    /// new session next to this one whose first entry holds it. The runtime
    /// continues on the new session.
    async fn run_handoff(
        &mut self,
        reason: Reason,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Made, Stop> {
        let Some(summarizer) = self.summarizer.clone() else {
            return Err(Stop::Skipped(
                "No model selected: a handoff needs a summarizer".to_owned(),
            ));
        };
        let session = self.journal.session();
        let tokens_before =
            musepi_snapcompact::context_tokens(session, session.leaf_index(), Tokenizer::Heuristic)
                as f64;
        let history = crate::model_messages(session);
        let focus = (reason == Reason::Threshold).then(|| HANDOFF_THRESHOLD_FOCUS.text());
        let system = self
            .system_prompt
            .clone()
            .unwrap_or_else(|| SUMMARIZATION_SYSTEM.text().to_owned());
        let request = handoff_request(
            without_failed_tail(history),
            &system,
            focus,
            self.settings.reasoning.clone(),
        );
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
            .then(|| crate::summarizer::truncation_warning(request.purpose, summarizer.as_ref()))
            .into_iter()
            .collect();
        let document = response.text.trim().to_owned();
        if document.is_empty() {
            return Err(Stop::Failed(
                "Handoff generation failed: the model returned an empty document".to_owned(),
            ));
        }
        let now = (self.clock)();
        let id = self.ids.fallback();
        let old = session.header();
        let header = Header {
            parent_session: Some(self.journal.path().display().to_string()),
            ..Header::new(
                id.clone(),
                format_iso(now),
                old.cwd.clone().unwrap_or_default(),
            )
        };
        let file = format!("{}_{id}.jsonl", format_iso(now).replace([':', '.'], "-"));
        let path = self
            .journal
            .path()
            .parent()
            .map_or_else(|| file.clone().into(), |d| d.join(&file));
        let mut stamp = Stamp {
            ids: self.ids.as_mut(),
            now,
        };
        let new_session = handoff_session(header, &document, &mut stamp);
        let mut journal =
            Journal::with_session(&path, new_session).map_err(|e| Stop::Failed(e.to_string()))?;
        // The deferred first flush would wait for an assistant message; the
        // successor's file exists at once so the agent can switch to it.
        journal.rewrite().map_err(|e| Stop::Failed(e.to_string()))?;
        self.journal = journal;
        let session = self.journal.session();
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
        Ok((report, notes))
    }
}
