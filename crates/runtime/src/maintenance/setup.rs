//! How a [`Maintenance`] is set up (its builder, the model and settings it
//! works with) and what it lets callers read; what it does at each natural
//! point is in the parent module.

use std::sync::Arc;

use musepi_context_builder::ContextAccount;
use musepi_hooks::{Hooks, RemoteCompactor, SnapTarget, Summarizer};
use musepi_session_model::{IdSource, Journal, SequentialIds};

use super::Maintenance;
use crate::decision::{AbortHandle, EventSink};
use crate::measure;
use crate::promote::PromotionTarget;
use crate::settings::MaintenanceSettings;
use crate::state::{Clock, MaintenanceState, system_clock};

impl Maintenance {
    /// A runtime over `journal` with `settings`: no summarizer, no hooks,
    /// sequential ids after the file's highest, the system clock, no events.
    /// The context's tokens at the leaf are counted once here, then kept as
    /// entries are appended.
    pub fn new(journal: Journal, settings: MaintenanceSettings) -> Self {
        let ids = SequentialIds::after(journal.session().entries().iter().map(|e| &e.id));
        let mut account = ContextAccount::default();
        measure::sync(&mut account, journal.session());
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
            account,
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

    /// Who reads a snapcompact archive ([`Maintenance::with_reader`]).
    pub fn reader(&self) -> &SnapTarget {
        &self.reader
    }

    /// The live agent's system prompt, sent with handoff requests.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// The models context promotion may switch to.
    #[must_use]
    pub fn with_promotion_targets(mut self, targets: Vec<PromotionTarget>) -> Self {
        self.promotion_targets = targets;
        self
    }

    /// Replaces the models context promotion may switch to.
    pub fn set_promotion_targets(&mut self, targets: Vec<PromotionTarget>) {
        self.promotion_targets = targets;
    }

    /// The models context promotion may switch to.
    pub fn promotion_targets(&self) -> &[PromotionTarget] {
        &self.promotion_targets
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
}
