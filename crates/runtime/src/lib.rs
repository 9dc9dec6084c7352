//! The maintenance runtime: what a live agent loop calls at its natural
//! points to keep its context healthy (docs/design.md, "When to compact",
//! "Summaries" and "Branch summaries").
//!
//! This crate owns the decisions around the pipelines: when the triggers
//! of `musepi-compaction` fire, which strategy a compaction uses (the
//! snapcompact archive, an LLM summary, a remote compaction, a handoff to a
//! new session, or context promotion to a larger-context model instead),
//! what the agent is told to do next, and the events it reports. It runs
//! the pipelines of `musepi-hooks`; it must not know settings files,
//! terminals or any wire protocol: the caller fills
//! [`MaintenanceSettings`] from its own settings and passes a
//! [`Summarizer`](musepi_hooks::Summarizer) (for example a provider of
//! `musepi-providers`).
//!
//! [`Maintenance`] owns the session's journal, the settings, the
//! summarizer, the hooks and the recovery state. The agent loop calls:
//!
//! - [`Maintenance::after_assistant`] after each assistant message is
//!   appended: overflow recovery, incomplete-output recovery, threshold
//!   maintenance after a turn;
//! - [`Maintenance::before_request`] before each provider request inside a
//!   tool loop: mid-turn maintenance, only at a safe boundary;
//! - [`Maintenance::idle`] while the agent waits for the user;
//! - [`Maintenance::compact`] on `/compact [instructions]`;
//! - [`Maintenance::navigate_tree`] on `/tree` ([`TreeRequest`],
//!   [`TreeOutcome`]).
//!
//! Each returns a [`Decision`]: whether to retry (after dropping the failing
//! assistant from the live messages), whether to continue and with which
//! developer prompt, what to tell the user, and the rebuilt context
//! ([`model_messages`]). Events ([`MaintenanceEvent`]: `compaction_start`,
//! `compaction_end`, `context_promotion`, `tree_start`, `tree_end`) go to
//! the caller's [`EventSink`] before the method returns. An [`AbortHandle`]
//! stops a running compaction or navigation from another task.
//!
//! A program that works on sessions outside a live loop (the `musepi`
//! command line) reaches the engines through this crate too, in four
//! modules: [`context`] (what the model sees, its tokens, recall),
//! [`compaction`] (a compaction or pruning run by hand, a handoff),
//! [`archive`] (snapcompact's archives shown, rendered and priced),
//! [`branch`] (leaving a branch by hand) and [`hooks`] (extensions and
//! the summarizer seam). They name the lower crates' items such a caller
//! needs and nothing more, so the caller depends on this crate,
//! `musepi-session-model` for the session itself and a provider crate,
//! whatever the engines' crates become.
//!
//! ```no_run
//! use musepi_runtime::{Maintenance, MaintenanceSettings, Outcome};
//! use musepi_session_model::{Journal, SequentialIds};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let journal = Journal::open("session.jsonl", &mut SequentialIds::new())?;
//! let mut runtime = Maintenance::new(journal, MaintenanceSettings::default());
//! // After the agent appended an assistant message:
//! let decision = runtime.after_assistant(None).await?;
//! if decision.outcome == Outcome::Compacted {
//!     let messages = decision.context.unwrap_or_default();
//!     println!("compacted; {} messages from now on", messages.len());
//! }
//! # Ok(()) }
//! ```

pub mod archive;
pub mod branch;
pub mod compaction;
pub mod context;
mod decision;
pub mod hooks;
mod maintenance;
mod measure;
mod promote;
mod run;
mod settings;
mod state;
mod tree;

pub use decision::{
    AbortHandle, CompactionReport, Decision, EventSink, MaintenanceEvent, Outcome, UsedStrategy,
};
pub use maintenance::Maintenance;
pub use musepi_hooks::TreeRequest;
pub use promote::PromotionTarget;
pub use settings::{DEFAULT_CONTEXT_WINDOW, MaintenanceSettings, MaintenanceStrategy};
pub use state::{Clock, MaintenanceError, MaintenanceState, system_clock};
pub use tree::{NAVIGATE_MARKER, TreeOutcome, marker as navigation_marker};

/// The provider messages at the session's leaf, as an agent should send
/// them: refined (no dangling calls or dead error turns), custom messages as
/// developer messages, snapcompact PNG archives as images between their
/// text edges, and a provider-native compaction's stored history as a
/// [`ProviderHistory`](musepi_context_builder::ProviderHistory) that each
/// provider resolves with [`resolve_replays`](musepi_context_builder::resolve_replays).
pub fn model_messages(
    session: &musepi_session_model::Session,
) -> Vec<musepi_context_builder::LlmMessage> {
    let ctx = musepi_context_builder::build_context(session);
    let archives = musepi_snapcompact::SessionArchives::new(session);
    let options = musepi_context_builder::ConvertOptions {
        archive: Some(&archives),
        session: Some(session),
        ..Default::default()
    };
    musepi_context_builder::convert_to_llm(&ctx.messages, &options)
}
