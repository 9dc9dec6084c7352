//! [`Maintenance`]: the runtime over one session and every natural point.
//! All of its behaviour is here; `setup` is its builder and accessors, and
//! the sibling modules hold the data it reports and the functions it calls.
//!
//! The same usage never causes two compactions: the runtime remembers the
//! assistant whose usage it last acted on, and estimates anchored on it (or
//! on any usage older than the latest compaction) fall back to the
//! context's tokens.
//!
//! The context's tokens at the leaf are kept in a
//! [`ContextAccount`](musepi_context_builder::ContextAccount) as entries
//! are appended: a natural point with nothing to do costs the entries
//! appended since the last one, not the history since the last compaction.

mod setup;

use std::sync::Arc;

use musepi_compaction::{
    Action, CompactionPlan, REPEATED_OVERFLOW, Reason, TriggerContext, after_assistant,
    before_request, has_output, manual, when_idle,
};
use musepi_context_builder::{
    ContextAccount, ContextEstimate, LlmMessage, context_model, resolve_threshold_tokens,
};
use musepi_hooks::{
    Hooks, NavigateError, NavigateOutcome, RemoteCompactor, SnapTarget, Summarizer, TreeRequest,
    navigate,
};
use musepi_session_model::{
    AgentMessage, AssistantMessage, EntryBody, EntryId, IdSource, Journal, ModelChange,
    Replacement, Session, Stamp, StopReason,
};

use crate::decision::{AbortHandle, Decision, EventSink, MaintenanceEvent, Outcome, UsedStrategy};
use crate::measure::{self, without_failed_tail};
use crate::promote::{self, PromotionTarget};
use crate::run::{self, Parts};
use crate::settings::MaintenanceSettings;
use crate::state::{Clock, MaintenanceError, MaintenanceState};
use crate::tree::{self, TreeOutcome};

/// The maintenance runtime over one session.
pub struct Maintenance {
    journal: Journal,
    settings: MaintenanceSettings,
    summarizer: Option<Arc<dyn Summarizer>>,
    remote: Option<Arc<dyn RemoteCompactor>>,
    hooks: Hooks,
    ids: Box<dyn IdSource + Send>,
    clock: Clock,
    events: Option<EventSink>,
    model: Option<(String, String)>,
    reader: SnapTarget,
    system_prompt: Option<String>,
    state: MaintenanceState,
    abort: AbortHandle,
    promotion_targets: Vec<PromotionTarget>,
    /// The context's tokens at the leaf, kept as entries are appended.
    account: ContextAccount,
}

impl std::fmt::Debug for Maintenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Maintenance")
            .field("file", &self.journal.path())
            .field("settings", &self.settings)
            .field(
                "summarizer",
                &self.summarizer.as_ref().map(Summarizer::describe),
            )
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl Maintenance {
    fn emit(&self, event: MaintenanceEvent) {
        if let Some(sink) = &self.events {
            sink(event);
        }
    }

    /// Appends an entry under the leaf, durably. A user message starts a
    /// new run: the recovery state resets.
    pub fn append(&mut self, body: EntryBody) -> Result<EntryId, MaintenanceError> {
        let mut ids = self.append_all(vec![body])?;
        Ok(ids.remove(0))
    }

    /// Appends entries under the leaf, each under the one before, durably
    /// in one write: all of them or, when one is invalid or the write
    /// fails, none. A user message among them starts a new run: the
    /// recovery state resets. Lines another process wrote meanwhile are read
    /// first, and the entries follow them ([`Journal::append_all_following`]).
    pub fn append_all(&mut self, bodies: Vec<EntryBody>) -> Result<Vec<EntryId>, MaintenanceError> {
        let starts_run = bodies
            .iter()
            .any(|b| matches!(b, EntryBody::Message(AgentMessage::User(_))));
        let mut stamp = Stamp {
            ids: self.ids.as_mut(),
            now: (self.clock)(),
        };
        let ids = self.journal.append_all_following(bodies, &mut stamp)?;
        if starts_run {
            self.state.overflow_recovery_attempted = false;
            self.state.empty_incomplete_recoveries = 0;
        }
        Ok(ids)
    }

    /// The provider messages at the leaf, as the agent should send them.
    pub fn context(&self) -> Vec<LlmMessage> {
        crate::model_messages(self.journal.session())
    }

    fn trigger_context(&self) -> TriggerContext {
        let mut ctx = self.settings.trigger_context();
        let session = self.journal.session();
        ctx.current_model = self.model.clone().or_else(|| {
            context_model(session, session.leaf_index()).map(|m| (m.provider, m.model_id))
        });
        ctx.latest_compaction_ms = measure::latest_compaction_ms(session);
        ctx.overflow_recovery_attempted = self.state.overflow_recovery_attempted;
        ctx.empty_incomplete_recoveries = self.state.empty_incomplete_recoveries;
        ctx
    }

    /// The post-turn check after an assistant message was appended (the
    /// leaf, or `entry_id`): overflow recovery, incomplete-output recovery,
    /// threshold maintenance (docs/design.md, "When to compact").
    ///
    /// An assistant that called tools does not end the turn: threshold
    /// maintenance waits for [`Maintenance::before_request`].
    pub async fn after_assistant(
        &mut self,
        entry_id: Option<&str>,
    ) -> Result<Decision, MaintenanceError> {
        let session = self.journal.session();
        let index = match entry_id {
            Some(id) => session
                .index_of(id)
                .ok_or_else(|| MaintenanceError::NotFound(id.to_owned()))?,
            None => session.leaf_index().ok_or(MaintenanceError::Empty)?,
        };
        let entry = &session.entries()[index];
        let Some(AgentMessage::Assistant(message)) = entry.message() else {
            return Err(MaintenanceError::NotAssistant(entry.id.to_string()));
        };
        let (message, id) = (message.clone(), entry.id.clone());
        if self.state.acted_usage.as_ref() == Some(&id)
            || measure::before_latest_compaction(session, index)
        {
            return Ok(Decision::nothing());
        }
        self.observe(&message);
        let action = after_assistant(&message, &self.trigger_context());
        Ok(match action {
            Action::None => Decision::nothing(),
            Action::Warn(warning) => Decision {
                warning: Some(warning),
                ..Decision::of(Outcome::Warned, Some(Reason::Incomplete))
            },
            Action::Retry => {
                self.state.empty_incomplete_recoveries += 1;
                Decision {
                    retry: true,
                    remove_last_assistant: true,
                    continue_turn: true,
                    context: Some(without_failed_tail(self.context())),
                    ..Decision::of(Outcome::Retry, Some(Reason::Incomplete))
                }
            }
            Action::Fail(message) => {
                let reason = if message == REPEATED_OVERFLOW {
                    Reason::Overflow
                } else {
                    Reason::Incomplete
                };
                self.emit(MaintenanceEvent::CompactionEnd {
                    reason,
                    result: None,
                    aborted: false,
                    will_retry: false,
                    error_message: Some(message.clone()),
                });
                Decision {
                    error: Some(message),
                    ..Decision::of(Outcome::Failed, Some(reason))
                }
            }
            Action::Compact(plan) if plan.reason == Reason::Threshold && calls_tools(&message) => {
                Decision::nothing()
            }
            Action::Compact(plan) => {
                if let Some(promoted) = self.try_promote(plan.reason, Some(id.clone()))? {
                    return Ok(promoted);
                }
                if plan.reason == Reason::Overflow {
                    self.state.overflow_recovery_attempted = true;
                }
                self.run_plan(plan, None, Some(id)).await
            }
        })
    }

    /// Updates the recovery state for a new assistant message.
    fn observe(&mut self, message: &AssistantMessage) {
        if !matches!(message.stop_reason, Some(StopReason::Error)) {
            self.state.overflow_recovery_attempted = false;
        }
        if has_output(message) {
            self.state.empty_incomplete_recoveries = 0;
        }
    }

    /// The mid-turn check before the next provider request of a tool loop
    /// (docs/design.md, "When to compact"). `safe_boundary` defaults to [`Maintenance::at_safe_boundary`].
    /// A compaction here never schedules a continuation: the loop owns the
    /// next request and sends the rebuilt context.
    pub async fn before_request(&mut self, safe_boundary: Option<bool>) -> Decision {
        let safe = safe_boundary.unwrap_or_else(|| self.at_safe_boundary());
        let (tokens, anchor) = self.context_tokens();
        match before_request(tokens, safe, &self.trigger_context()) {
            Action::Compact(plan) => self.run_plan(plan, None, anchor).await,
            _ => Decision::nothing(),
        }
    }

    /// Idle maintenance (docs/design.md, "When to compact") after `idle_seconds` without activity;
    /// it never continues.
    pub async fn idle(&mut self, idle_seconds: u64) -> Decision {
        let (tokens, anchor) = self.context_tokens();
        let busy = self.abort.is_running();
        match when_idle(tokens, idle_seconds, busy, &self.trigger_context()) {
            Action::Compact(plan) => self.run_plan(plan, None, anchor).await,
            _ => Decision::nothing(),
        }
    }

    /// Manual `/compact [instructions]` (docs/design.md, "When to compact"): always allowed, it
    /// never starts a turn. Instructions ask for an LLM summary.
    pub async fn compact(&mut self, instructions: Option<String>) -> Decision {
        let (_, anchor) = self.context_tokens();
        let instructions = instructions.filter(|i| !i.trim().is_empty());
        self.run_plan(manual(), instructions, anchor).await
    }

    /// The context size the triggers compare: the last usage plus the
    /// context's tokens of what followed it
    /// ([`musepi_snapcompact::measured_tokens`], which never anchors on a
    /// usage from before the latest compaction on the path), or the
    /// context's tokens when that usage was already acted on or is dated
    /// before the latest compaction. Also returns the anchoring assistant's
    /// entry.
    pub fn context_tokens(&mut self) -> (u64, Option<EntryId>) {
        let session = self.journal.session();
        measure::sync(&mut self.account, session);
        measure::context_tokens(&self.account, session, self.state.acted_usage.as_ref())
    }

    /// The context's tokens at the leaf (what every command reports as the
    /// context's size), from the account the runtime keeps.
    pub fn leaf_context_tokens(&mut self) -> u64 {
        measure::sync(&mut self.account, self.journal.session());
        self.account.context_tokens()
    }

    /// What the compaction trigger compares at the leaf, before the
    /// runtime's own rules (a usage acted on, or dated before the latest
    /// compaction): [`musepi_snapcompact::measured_tokens`], from the
    /// account the runtime keeps.
    pub fn leaf_measured(&mut self) -> ContextEstimate {
        measure::sync(&mut self.account, self.journal.session());
        self.account.measured()
    }

    /// Runs `read` over the session with `changes` (pruning's
    /// replacements) staged in memory, then undoes them: nothing is
    /// written, the session is left as it was, and the token account goes
    /// on from where it was instead of counting the context again. `None`
    /// (and `read` not run) when the journal cannot stage them (a torn last
    /// line, replacements already staged, a change its checks refuse): the
    /// caller reads over a copy instead.
    pub fn with_staged<R>(
        &mut self,
        changes: Vec<Replacement>,
        read: impl FnOnce(&Session) -> R,
    ) -> Option<R> {
        if self.journal.has_staged() {
            return None;
        }
        measure::sync(&mut self.account, self.journal.session());
        let out = match self.journal.stage_replacements(changes) {
            Ok(()) => Some(read(self.journal.session())),
            Err(_) => None,
        };
        self.journal.discard_staged();
        self.account.restored(self.journal.session());
        out
    }

    /// Whether every tool call of the last assistant has its result (a
    /// safe point to compact inside a tool loop).
    pub fn at_safe_boundary(&mut self) -> bool {
        measure::sync(&mut self.account, self.journal.session());
        self.account.calls_answered()
    }

    /// Tries context promotion instead of a compaction for `reason`; `None`
    /// when it is off, the reason does not allow it, or no target fits.
    /// `acted` is the assistant whose usage caused it (never acted on twice).
    fn try_promote(
        &mut self,
        reason: Reason,
        acted: Option<EntryId>,
    ) -> Result<Option<Decision>, MaintenanceError> {
        if !self.settings.context_promotion || !promote::allowed_for(reason) {
            return Ok(None);
        }
        let (tokens, _) = self.context_tokens();
        let ctx = self.trigger_context();
        let thresholds = self.settings.thresholds();
        let Some(target) = promote::pick_target(
            &self.promotion_targets,
            ctx.current_model.as_ref(),
            self.settings.context_window,
            tokens,
            |w| resolve_threshold_tokens(w, &thresholds),
        )
        .cloned() else {
            return Ok(None);
        };
        let from = ctx.current_model.map(|(p, m)| format!("{p}/{m}"));
        self.append(EntryBody::ModelChange(ModelChange {
            provider: Some(target.provider.clone()),
            model_id: Some(target.model_id.clone()),
            ..ModelChange::default()
        }))?;
        self.set_model(
            &target.provider,
            &target.model_id,
            Some(target.context_window),
        );
        if acted.is_some() {
            self.state.acted_usage = acted;
        }
        self.emit(MaintenanceEvent::ContextPromotion {
            reason,
            from_model: from,
            target: target.clone(),
        });
        let retry = reason != Reason::Threshold;
        Ok(Some(Decision {
            retry,
            remove_last_assistant: retry,
            continue_turn: retry,
            context: retry.then(|| without_failed_tail(self.context())),
            promotion: Some(target),
            notes: self.take_write_warnings(),
            ..Decision::of(Outcome::Promoted, Some(reason))
        }))
    }

    /// Runs a compaction for `plan`, reports it, and decides what follows.
    /// `anchor` is the assistant whose usage led here; it is never acted on again.
    async fn run_plan(
        &mut self,
        plan: CompactionPlan,
        instructions: Option<String>,
        anchor: Option<EntryId>,
    ) -> Decision {
        let reason = plan.reason;
        self.emit(MaintenanceEvent::CompactionStart { reason });
        let used = run::choose(
            self.settings.strategy,
            plan,
            instructions.is_some(),
            self.summarizer.is_some(),
        );
        let ignored = (used == UsedStrategy::Snapcompact && instructions.is_some()).then(|| {
            "the instructions need a model to write the summary; the archive was written without them"
                .to_owned()
        });
        let cancel = self.abort.begin();
        let parts = Parts {
            journal: &mut self.journal,
            ids: self.ids.as_mut(),
            settings: &self.settings,
            summarizer: self.summarizer.as_deref(),
            remote: self.remote.as_deref(),
            hooks: &self.hooks,
            reader: &self.reader,
            system_prompt: self.system_prompt.as_deref(),
            now: (self.clock)(),
        };
        let result = run::execute(parts, plan, used, instructions, &cancel).await;
        self.abort.end();
        let automatic = reason != Reason::Manual;
        if automatic || result.is_ok() {
            self.state.acted_usage = anchor.or_else(|| self.state.acted_usage.take());
        }
        let (event, mut decision) = match result {
            Ok(made) => {
                let (event, mut d) = run::compacted(plan, made);
                d.notes.extend(ignored);
                (event, d)
            }
            Err(stop) => run::stopped(reason, automatic, stop),
        };
        self.emit(event);
        decision.notes.extend(self.take_write_warnings());
        decision.remove_last_assistant = plan.remove_last_assistant;
        let context = self.context();
        decision.context = Some(if plan.remove_last_assistant {
            without_failed_tail(context)
        } else {
            context
        });
        decision
    }

    /// Navigates to `request.target_id`, optionally leaving a summary of
    /// the abandoned branch under the target (docs/design.md, "Branch summaries").
    pub async fn navigate_tree(
        &mut self,
        request: TreeRequest,
    ) -> Result<TreeOutcome, MaintenanceError> {
        self.emit(MaintenanceEvent::TreeStart {
            target_id: request.target_id.clone(),
            summarize: request.summarize,
        });
        let old_leaf_id = self.journal.session().leaf_id().cloned();
        let strategy = run::branch_strategy(
            self.settings.strategy,
            request.custom_instructions.is_some(),
            self.summarizer.is_some(),
        );
        let options = tree::options(
            &request,
            strategy,
            self.summarizer.as_deref(),
            &self.settings,
            &self.hooks,
            (self.clock)(),
        );
        let cancel = self.abort.begin();
        let result = navigate(&mut self.journal, &options, self.ids.as_mut(), &cancel).await;
        self.abort.end();
        let mut out = match result {
            Ok(out) => out,
            Err(NavigateError::Aborted | NavigateError::CancelledByHook { .. }) => {
                self.emit(tree::unmoved(old_leaf_id.as_ref(), true, None));
                return Ok(TreeOutcome {
                    cancelled: true,
                    navigation: NavigateOutcome {
                        old_leaf: old_leaf_id.clone(),
                        new_leaf: old_leaf_id,
                        ..NavigateOutcome::default()
                    },
                    context: self.context(),
                    ..TreeOutcome::default()
                });
            }
            Err(e) => {
                self.emit(tree::unmoved(
                    old_leaf_id.as_ref(),
                    false,
                    Some(e.to_string()),
                ));
                return Err(match e {
                    NavigateError::NotFound(id) => MaintenanceError::NotFound(id),
                    other => MaintenanceError::Navigate(other),
                });
            }
        };
        let mut marker_entry_id = None;
        if !out.no_op && out.summary_entry.is_none() && request.label.is_none() {
            let body = tree::marker(out.old_leaf.as_ref(), request.target_id.as_deref());
            let mut stamp = Stamp {
                ids: self.ids.as_mut(),
                now: (self.clock)(),
            };
            marker_entry_id = Some(self.journal.append(body, &mut stamp)?);
        }
        if !out.no_op {
            self.state.overflow_recovery_attempted = false;
            self.state.empty_incomplete_recoveries = 0;
        }
        let new_leaf_id = self.journal.session().leaf_id().cloned();
        self.emit(MaintenanceEvent::TreeEnd {
            old_leaf_id: out.old_leaf.as_ref().map(ToString::to_string),
            new_leaf_id: new_leaf_id.as_ref().map(ToString::to_string),
            summary_entry_id: out.summary_entry.as_ref().map(ToString::to_string),
            aborted: false,
            error_message: None,
        });
        out.new_leaf = new_leaf_id;
        out.warnings.extend(self.take_write_warnings());
        Ok(TreeOutcome {
            cancelled: false,
            navigation: out,
            marker_entry_id,
            context: self.context(),
        })
    }

    /// What the session file's writes since the last look had to tell (a
    /// replaced file another process kept open past the wait for it), once:
    /// a decision and a tree outcome carry those of the writes they made in
    /// their notes; the writes of [`Maintenance::append`] (which rewrites
    /// the file when a migration or pruning is pending) are the caller's
    /// to take here.
    pub fn take_write_warnings(&mut self) -> Vec<String> {
        let warnings = self.journal.take_warnings();
        warnings.iter().map(ToString::to_string).collect()
    }
}

/// Whether the assistant asked for tools (the turn goes on).
fn calls_tools(message: &AssistantMessage) -> bool {
    matches!(message.stop_reason, Some(StopReason::ToolUse))
        || message.tool_calls().next().is_some()
}
