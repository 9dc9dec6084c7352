//! The maintenance runtime: what a live agent loop calls at its natural
//! points to keep its context healthy (docs/design.md, "When to compact" and "Summaries" and "Branch summaries").
//!
//! [`Maintenance`] owns the session's [`Journal`], the settings, the
//! summarizer, the hooks and the recovery state. The agent loop calls:
//!
//! - [`Maintenance::after_assistant`] after each assistant message is
//!   appended: overflow recovery, incomplete-output recovery, threshold
//!   maintenance after a turn;
//! - [`Maintenance::before_request`] before each provider request inside a
//!   tool loop: mid-turn maintenance, only at a safe boundary;
//! - [`Maintenance::idle`] while the agent waits for the user;
//! - [`Maintenance::compact`] on `/compact [instructions]`;
//! - [`Maintenance::navigate_tree`] on `/tree`.
//!
//! Each returns a [`Decision`]: whether to retry (after dropping the failing
//! assistant from the live messages), whether to continue and with which
//! developer prompt, what to tell the user, and the rebuilt context. Events
//! (`compaction_start`, `compaction_end`, `context_promotion`, `tree_start`,
//! `tree_end`) go to the
//! caller's [`EventSink`] before the method returns. An [`AbortHandle`]
//! stops a running compaction or navigation from another task.
//!
//! The same usage never causes two compactions: the runtime remembers the
//! assistant whose usage it last acted on, and estimates anchored on it (or
//! on any usage older than the latest compaction) fall back to the chars/4
//! estimate of the rebuilt context.

use std::sync::Arc;

use musepi_compaction::{
    Action, REPEATED_OVERFLOW, Reason, TriggerContext, after_assistant, before_request, has_output,
    manual, when_idle,
};
use musepi_context_builder::{LlmMessage, build_context};
use musepi_session_model::{
    AgentMessage, AssistantMessage, EntryBody, EntryId, IdSource, Journal, SequentialIds,
    SessionError, Stamp, StopReason,
};

use crate::compact::{RemoteCompactor, SnapTarget};
use crate::runner::Hooks;
use crate::runtime_decision::{AbortHandle, Decision, EventSink, MaintenanceEvent, Outcome};
use crate::runtime_measure::without_failed_tail;
use crate::runtime_settings::MaintenanceSettings;
use crate::summarizer::Summarizer;

/// "Now" in epoch milliseconds.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// The recovery state of one agent run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MaintenanceState {
    /// An overflow recovery ran in this run (reset by user input and by a
    /// non-error assistant message).
    pub overflow_recovery_attempted: bool,
    /// Empty truncated answers retried in a row (reset by user input and
    /// by actionable output).
    pub empty_incomplete_recoveries: u32,
    /// The assistant whose usage the last compaction acted on.
    pub acted_usage: Option<EntryId>,
}

/// Why a runtime call could not be made.
#[derive(Debug, thiserror::Error)]
pub enum MaintenanceError {
    /// No entry has this id.
    #[error("Entry {0} not found")]
    NotFound(String),
    /// The entry is not an assistant message.
    #[error("entry {0} is not an assistant message")]
    NotAssistant(String),
    /// The session is empty.
    #[error("the session has no entries")]
    Empty,
    /// The journal could not be written.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// A navigation failed (no model for the summary, the summarizer failed).
    #[error(transparent)]
    Navigate(crate::navigate::NavigateError),
}

/// The maintenance runtime over one session.
pub struct Maintenance {
    pub(crate) journal: Journal,
    pub(crate) settings: MaintenanceSettings,
    pub(crate) summarizer: Option<Arc<dyn Summarizer>>,
    pub(crate) remote: Option<Arc<dyn RemoteCompactor>>,
    pub(crate) hooks: Hooks,
    pub(crate) ids: Box<dyn IdSource + Send>,
    pub(crate) clock: Clock,
    pub(crate) events: Option<EventSink>,
    pub(crate) model: Option<(String, String)>,
    pub(crate) reader: SnapTarget,
    pub(crate) system_prompt: Option<String>,
    pub(crate) state: MaintenanceState,
    pub(crate) abort: AbortHandle,
    pub(crate) promotion_targets: Vec<crate::runtime_promote::PromotionTarget>,
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

fn system_clock() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Maintenance {
    /// A runtime over `journal` with `settings`: no summarizer, no hooks,
    /// sequential ids after the file's highest, the system clock, no events.
    pub fn new(journal: Journal, settings: MaintenanceSettings) -> Self {
        let ids = SequentialIds::after(journal.session().entries().iter().map(|e| &e.id));
        Self {
            journal,
            settings,
            summarizer: None,
            remote: None,
            hooks: Hooks::new(),
            ids: Box::new(ids),
            clock: Arc::new(system_clock),
            events: None,
            model: None,
            reader: SnapTarget::default(),
            system_prompt: None,
            state: MaintenanceState::default(),
            abort: AbortHandle::default(),
            promotion_targets: Vec::new(),
        }
    }

    /// The model that writes LLM summaries and handoff documents.
    #[must_use]
    pub fn with_summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.summarizer = Some(summarizer);
        self
    }

    /// The provider-native remote compaction (`/responses/compact`;
    /// docs/design.md, "Remote summaries"), tried before the LLM summary
    /// when `remote_enabled`.
    #[must_use]
    pub fn with_remote(mut self, remote: Arc<dyn RemoteCompactor>) -> Self {
        self.remote = Some(remote);
        self
    }

    /// Extension handlers.
    #[must_use]
    pub fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Where new entry ids come from.
    #[must_use]
    pub fn with_ids(mut self, ids: Box<dyn IdSource + Send>) -> Self {
        self.ids = ids;
        self
    }

    /// Where "now" comes from.
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Where events go.
    #[must_use]
    pub fn with_events(mut self, sink: EventSink) -> Self {
        self.events = Some(sink);
        self
    }

    /// Who reads snapcompact archives: the agent's model, whether it reads
    /// images (PNG frames) and its wire API. [`Maintenance::set_model`]
    /// keeps its model id and provider up to date.
    #[must_use]
    pub fn with_reader(mut self, reader: SnapTarget) -> Self {
        self.reader = reader;
        self
    }

    /// The live agent's system prompt, sent with handoff requests.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the model the agent uses now (`provider`, model id) and its
    /// context window. Without it the session's latest model counts.
    pub fn set_model(&mut self, provider: &str, model_id: &str, context_window: Option<u64>) {
        self.model = Some((provider.to_owned(), model_id.to_owned()));
        self.reader.provider = Some(provider.to_owned());
        self.reader.model_id = Some(model_id.to_owned());
        if let Some(w) = context_window {
            self.settings.context_window = w;
        }
    }

    /// The journal.
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Gives the journal back.
    pub fn into_journal(self) -> Journal {
        self.journal
    }

    /// The settings.
    pub fn settings(&self) -> &MaintenanceSettings {
        &self.settings
    }

    /// Replaces the settings.
    pub fn set_settings(&mut self, settings: MaintenanceSettings) {
        self.settings = settings;
    }

    /// The recovery state.
    pub fn state(&self) -> &MaintenanceState {
        &self.state
    }

    /// A handle that aborts the running compaction or navigation.
    pub fn abort_handle(&self) -> AbortHandle {
        self.abort.clone()
    }

    /// Aborts the running compaction or navigation (`abortCompaction`);
    /// `false` when nothing runs.
    pub fn abort(&self) -> bool {
        self.abort.abort()
    }

    pub(crate) fn emit(&self, event: MaintenanceEvent) {
        if let Some(sink) = &self.events {
            sink(event);
        }
    }

    /// Appends an entry under the leaf, durably. A user message starts a
    /// new run: the recovery state resets.
    pub fn append(&mut self, body: EntryBody) -> Result<EntryId, MaintenanceError> {
        if let EntryBody::Message(AgentMessage::User(_)) = &body {
            self.state.overflow_recovery_attempted = false;
            self.state.empty_incomplete_recoveries = 0;
        }
        let mut stamp = Stamp {
            ids: self.ids.as_mut(),
            now: (self.clock)(),
        };
        Ok(self.journal.append(body, &mut stamp)?)
    }

    /// The provider messages at the leaf, as the agent should send them.
    pub fn context(&self) -> Vec<LlmMessage> {
        crate::model_messages(self.journal.session())
    }

    pub(crate) fn trigger_context(&self) -> TriggerContext {
        let mut ctx = self.settings.trigger_context();
        ctx.current_model = self.model.clone().or_else(|| {
            build_context(self.journal.session())
                .model
                .map(|m| (m.provider, m.model_id))
        });
        ctx.latest_compaction_ms = self.latest_compaction_ms();
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
        if self.state.acted_usage.as_ref() == Some(&id) || self.before_latest_compaction(index) {
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
}

/// Whether the assistant asked for tools (the turn goes on).
fn calls_tools(message: &AssistantMessage) -> bool {
    matches!(message.stop_reason, Some(StopReason::ToolUse))
        || message.tool_calls().next().is_some()
}
