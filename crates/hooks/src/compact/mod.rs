//! The compaction pipeline (docs/design.md, "When to compact" and "Summaries"): prune, prepare, ask the
//! hooks, summarize, commit, rebuild, report.
//!
//! Nothing reaches the file until the very end: pruning is staged in
//! memory and written together with the compaction entry in one atomic
//! rewrite (or the entry alone is appended durably). A cancellation, a hook
//! veto or a failure at any step leaves the file byte for byte as it was.

use std::future::Future;
use std::pin::Pin;

use musepi_compaction::{
    CompactionResult, CompactionSettings, NothingToCompact, PruneConfig, PrunePlan, Reason,
    prune_first,
};
use musepi_context_builder::{LlmMessage, RequestPurpose, Tokenizer};
use musepi_session_model::{EntryId, IdSource, Journal, SessionError, Stamp};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::events::{CompactEvent, entry_json, names, session_file};
use crate::runner::{HookCancel, HookWarning, Hooks, warning_lines};
use crate::snapcompact::{SnapSettings, SnapTarget};
use crate::summarizer::{SummarizeError, Summarizer};

mod route;
mod summarize;

/// How the summary is made.
#[derive(Debug, Clone, PartialEq)]
pub enum Strategy {
    /// An LLM summary (`context-full`).
    Llm,
    /// The provider-native remote compaction first (docs/design.md, "Remote summaries"), falling
    /// back to an LLM summary when it fails; the LLM summary is always
    /// written too (design era).
    Remote,
    /// The deterministic archive: no model, no key, no network
    /// (docs/snapcompact.md). PNG frames for a vision model, text frames otherwise.
    Snapcompact(Box<SnapcompactStrategy>),
}

/// Who reads a snapcompact archive, and its budgets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SnapcompactStrategy {
    /// The model that will read the archive.
    pub target: SnapTarget,
    /// Serialization budgets and the reserve.
    pub settings: SnapSettings,
}

impl Strategy {
    /// The snapcompact strategy for `target` with default budgets.
    pub fn snapcompact(target: SnapTarget) -> Self {
        Self::Snapcompact(Box::new(SnapcompactStrategy {
            target,
            settings: SnapSettings::default(),
        }))
    }

    /// A stable name for messages and JSON.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Llm => "llm",
            Self::Remote => "remote",
            Self::Snapcompact(_) => "snapcompact",
        }
    }
}

/// What a remote-native compaction sends (docs/design.md, "Remote summaries").
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteCompactInput {
    /// The summarization instructions.
    pub instructions: String,
    /// The replacement history of the previous remote compaction of the same provider.
    pub previous_history: Option<Vec<Value>>,
    /// Summarized, prefix and kept messages, as the model sees them.
    pub messages: Vec<LlmMessage>,
}

/// The future a [`RemoteCompactor`] returns: the `preserveData.openaiRemoteCompaction` object.
pub type RemoteFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Value, SummarizeError>> + Send + 'a>>;

/// A provider-native compaction endpoint (`/responses/compact`).
pub trait RemoteCompactor: Send + Sync {
    /// The provider name stored with the replacement history.
    fn provider(&self) -> String;
    /// Runs the remote compaction; the answer is stored under
    /// `preserveData.openaiRemoteCompaction`.
    fn compact<'a>(
        &'a self,
        input: &'a RemoteCompactInput,
        cancel: CancellationToken,
    ) -> RemoteFuture<'a>;
}

/// Everything a compaction run needs besides the journal.
///
/// Start from [`CompactOptions::new`] and set what differs: fields are
/// added as the pipeline grows.
#[non_exhaustive]
pub struct CompactOptions<'a> {
    /// Why it runs.
    pub reason: Reason,
    /// Whether the failed request is retried afterwards (passed to hooks).
    pub will_retry: bool,
    /// The user's focus.
    pub custom_instructions: Option<String>,
    /// Compaction settings.
    pub settings: CompactionSettings,
    /// Prune tool outputs first (staged, written with the entry).
    pub prune: Option<PruneConfig>,
    /// How the summary is made.
    pub strategy: Strategy,
    /// The summarizing model.
    pub summarizer: Option<&'a dyn Summarizer>,
    /// The remote-native compactor, for [`Strategy::Remote`].
    pub remote: Option<&'a dyn RemoteCompactor>,
    /// Extension handlers.
    pub hooks: &'a Hooks,
    /// "Now", in epoch milliseconds.
    pub now: i64,
}

impl<'a> CompactOptions<'a> {
    /// A manual compaction at `now` with the default settings: pruning
    /// first with its defaults, an LLM summary, no model, no instructions.
    pub fn new(hooks: &'a Hooks, now: i64) -> Self {
        Self {
            reason: Reason::Manual,
            will_retry: false,
            custom_instructions: None,
            settings: CompactionSettings::default(),
            prune: Some(PruneConfig::default()),
            strategy: Strategy::Llm,
            summarizer: None,
            remote: None,
            hooks,
            now,
        }
    }
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CompactOutcome {
    /// The new entry.
    pub entry_id: EntryId,
    /// What it holds.
    pub result: CompactionResult,
    /// What pruning changed, written together with the entry.
    pub pruned: PrunePlan,
    /// The context's tokens before compaction, measured before pruning
    /// (`result.tokens_before` holds pi's estimate of the same context, as
    /// the entry stores it).
    pub context_tokens_before: u64,
    /// The context's tokens after compaction.
    pub tokens_after: u64,
    /// Requests sent, in order.
    pub requests: Vec<RequestPurpose>,
    /// Hooks that failed, and other things the user should know.
    pub warnings: Vec<String>,
}

/// Why a compaction did not happen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// There is nothing to compact.
    #[error("{0}")]
    Nothing(#[from] NothingToCompact),
    /// A hook cancelled it.
    #[error("Compaction cancelled")]
    CancelledByHook {
        /// Hooks that failed before it.
        warnings: Vec<HookWarning>,
        /// Which hook cancelled, and why.
        by: Option<HookCancel>,
    },
    /// The abort signal fired.
    #[error("Compaction cancelled")]
    Aborted,
    /// The strategy needs a model and none is configured.
    #[error("No model selected: configure a provider (--provider) or use --strategy snapcompact")]
    NoModel,
    /// A summarizer call failed (`Summarization failed: …`, docs/design.md, "When to compact").
    #[error("{}: {error}", purpose.failure_prefix())]
    Summarize {
        /// Which call.
        purpose: RequestPurpose,
        /// Why.
        error: SummarizeError,
    },
    /// The journal could not be written.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The snapcompact archive could not be made.
    #[error("snapcompact failed: {0}")]
    Snapcompact(#[from] musepi_snapcompact::SnapError),
}

/// Runs a compaction on `journal` at its leaf.
pub async fn compact(
    journal: &mut Journal,
    options: &CompactOptions<'_>,
    ids: &mut dyn IdSource,
    cancel: &CancellationToken,
) -> Result<CompactOutcome, CompactError> {
    let mut warnings = Vec::new();
    let session = journal.session();
    // A line on the path that cannot be read would silently shorten what
    // is compacted: refuse, naming it.
    if let Some(leaf) = session.leaf_index() {
        session.check_path_readable(leaf, journal.path())?;
    }
    let step = prune_first(
        session,
        session.leaf_index(),
        &options.settings,
        options.prune.as_ref(),
        Some(&musepi_snapcompact::SessionArchives::new(session)),
        options.now,
    );
    if !step.changes.is_empty() {
        journal.stage_replacements(step.changes.clone())?;
    }
    let pruned = step.plan.clone();
    let context_tokens_before = step.context_tokens;
    let result = match route::decide(journal, options, &step, cancel, &mut warnings).await {
        Ok(route) => summarize::finish(route, options, cancel, &mut warnings).await,
        Err(e) => Err(e),
    };
    let (result, requests) = match result {
        Ok(r) => r,
        Err(e) => {
            journal.discard_staged();
            return Err(e);
        }
    };
    if cancel.is_cancelled() {
        journal.discard_staged();
        return Err(CompactError::Aborted);
    }
    // The entry records the context's tokens after it: measured with it
    // appended in memory, the same count as after it is written.
    let mut result = result;
    let tokens_after = journal.with_appended(result.clone().into_body(), options.now, |s, at| {
        musepi_snapcompact::context_tokens(s, Some(at), Tokenizer::Heuristic)
    });
    result.tokens_after = Some(tokens_after);
    let mut stamp = Stamp {
        ids,
        now: options.now,
    };
    let entry_id = match journal.append(result.clone().into_body(), &mut stamp) {
        Ok(id) => id,
        Err(e) => {
            journal.discard_staged();
            return Err(e.into());
        }
    };
    let session = journal.session();
    let index = session.index_of(entry_id.as_str()).unwrap_or(0);
    let event = CompactEvent {
        kind: names::COMPACT,
        session_file: session_file(session),
        compaction_entry: entry_json(session, index).unwrap_or(Value::Null),
        from_extension: result.from_extension,
        reason: options.reason.name().to_owned(),
        will_retry: options.will_retry,
    };
    warnings.extend(warning_lines(
        &options.hooks.compacted(&event, cancel).await,
    ));
    Ok(CompactOutcome {
        entry_id,
        result,
        pruned,
        context_tokens_before,
        tokens_after,
        requests,
        warnings,
    })
}
