//! The compaction pipeline (docs/design.md, "When to compact" and "Summaries"): prune, prepare, ask the
//! hooks, summarize, commit, rebuild, report.
//!
//! Nothing reaches the file until the very end: pruning is staged in
//! memory and written together with the compaction entry in one atomic
//! rewrite (or the entry alone is appended durably). A cancellation, a hook
//! veto or a failure at any step leaves the file byte for byte as it was.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;

use musepi_compaction::{
    CompactionResult, CompactionSettings, DEFAULT_SUMMARIZER_WINDOW, HistoryUnits,
    NothingToCompact, Preparation, PruneConfig, PruneFirst, PrunePlan, Reason, RequestOptions,
    SummaryPlan, input_budget_tokens, min_window_tokens, prune_first, sum_usage,
    window_from_overflow_message,
};
use musepi_context_builder::{
    ContextMessage, ConvertOptions, LlmMessage, RequestPurpose, SummaryRequest, Tokenizer,
    convert_to_llm,
};
use musepi_session_model::{EntryBody, EntryId, IdSource, Journal, SessionError, Stamp, Usage};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::events::{
    BeforeCompactEvent, CompactEvent, CompactingEvent, MessageView, PreparationView,
    SuppliedCompaction, names,
};
use crate::runner::{HookWarning, Hooks};
use crate::snapcompact::{SnapSettings, SnapTarget, compact_preparation};
use crate::summarizer::{SummarizeError, Summarizer, truncation_warning};

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
    /// The context's tokens after compaction (`result.tokens_before` holds
    /// them before, measured before pruning).
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

fn views(
    session: &musepi_session_model::Session,
    messages: &[ContextMessage<'_>],
) -> Vec<MessageView> {
    messages
        .iter()
        .map(|m| MessageView {
            entry_id: session.entries()[m.entry_index].id.to_string(),
            role: m.message.role().to_owned(),
            message: m.message.as_ref().clone(),
        })
        .collect()
}

fn preparation_view(
    session: &musepi_session_model::Session,
    p: &Preparation<'_>,
) -> PreparationView {
    let lists = p.file_ops.lists();
    PreparationView {
        first_kept_entry_id: p.first_kept_entry_id.to_string(),
        tokens_before: p.tokens_before,
        is_split_turn: p.cut.is_split_turn,
        messages_to_summarize: views(session, &p.messages_to_summarize),
        turn_prefix_messages: views(session, &p.turn_prefix_messages),
        kept_message_count: p.recent_messages.len(),
        previous_summary: p.previous_summary.clone(),
        read_files: lists.read_files,
        modified_files: lists.modified_files,
    }
}

/// What the pipeline decided before any model call.
enum Route {
    Supplied(CompactionResult),
    Summarize {
        plan: Box<SummaryPlan>,
        preserve: Option<Value>,
        remote_input: Option<RemoteCompactInput>,
    },
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
    let step = prune_first(
        session,
        session.leaf_index(),
        &options.settings,
        options.prune.as_ref(),
        Some(&musepi_snapcompact::SessionArchives::new(session)),
        options.now,
    )?;
    if !step.changes.is_empty() {
        journal.stage_replacements(step.changes.clone())?;
    }
    let pruned = step.plan.clone();
    let result = run(journal, options, &step, cancel, &mut warnings).await;
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
    let tokens_after =
        musepi_snapcompact::context_tokens(session, session.leaf_index(), Tokenizer::Heuristic);
    let index = session.index_of(entry_id.as_str()).unwrap_or(0);
    let entry_json = session
        .raw_line(index)
        .ok()
        .and_then(|l| serde_json::from_str(&l).ok())
        .unwrap_or(Value::Null);
    let event = CompactEvent {
        kind: names::COMPACT,
        session_file: session.origin().map(|p| p.display().to_string()),
        compaction_entry: entry_json,
        from_extension: result.from_extension,
        reason: options.reason.name().to_owned(),
        will_retry: options.will_retry,
    };
    warnings.extend(
        options
            .hooks
            .compacted(&event, cancel)
            .await
            .iter()
            .map(ToString::to_string),
    );
    Ok(CompactOutcome {
        entry_id,
        result,
        pruned,
        tokens_after,
        requests,
        warnings,
    })
}

/// Everything up to the finished result; writes nothing.
async fn run(
    journal: &Journal,
    options: &CompactOptions<'_>,
    step: &PruneFirst,
    cancel: &CancellationToken,
    warnings: &mut Vec<String>,
) -> Result<(CompactionResult, Vec<RequestPurpose>), CompactError> {
    let route = decide(journal, options, step, cancel, warnings).await?;
    match route {
        Route::Supplied(result) => Ok((result, Vec::new())),
        Route::Summarize {
            plan,
            preserve,
            remote_input,
        } => {
            let summarizer = options.summarizer.ok_or(CompactError::NoModel)?;
            let mut preserve = preserve;
            let mut requests = Vec::new();
            if let (Some(remote), Some(input)) = (options.remote, &remote_input) {
                match remote.compact(input, cancel.clone()).await {
                    Ok(payload) => {
                        let mut map = match preserve.take() {
                            Some(Value::Object(m)) => m,
                            _ => serde_json::Map::new(),
                        };
                        map.insert("openaiRemoteCompaction".into(), payload);
                        preserve = Some(Value::Object(map));
                    }
                    Err(SummarizeError::Cancelled) => return Err(CompactError::Aborted),
                    Err(e) => warnings.push(format!(
                        "remote compaction failed, writing a local summary instead: {e}"
                    )),
                }
            }
            let (merged, short, usage) =
                summarize(&plan, summarizer, cancel, &mut requests, warnings).await?;
            Ok((plan.finish(&merged, short, usage, preserve), requests))
        }
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
async fn decide(
    journal: &Journal,
    options: &CompactOptions<'_>,
    step: &PruneFirst,
    cancel: &CancellationToken,
    warnings: &mut Vec<String>,
) -> Result<Route, CompactError> {
    let session = journal.session();
    let prep = step.prepare(session, session.leaf_index())?;
    let hooks = options.hooks;
    if hooks.has(names::BEFORE_COMPACT) {
        let event = BeforeCompactEvent {
            kind: names::BEFORE_COMPACT,
            session_file: session.origin().map(|p| p.display().to_string()),
            session_id: session.header().id.clone(),
            reason: options.reason.name().to_owned(),
            will_retry: options.will_retry,
            custom_instructions: options.custom_instructions.clone(),
            preparation: preparation_view(session, &prep),
            branch_entry_ids: prep
                .path
                .iter()
                .map(|&i| session.entries()[i].id.to_string())
                .collect(),
        };
        let d = hooks.before_compact(&event, cancel).await;
        warnings.extend(d.warnings.iter().map(ToString::to_string));
        if d.failed_closed || d.result.as_ref().is_some_and(|r| r.cancel) {
            return Err(CompactError::CancelledByHook {
                warnings: d.warnings,
            });
        }
        if let Some(supplied) = d.result.and_then(|r| r.compaction) {
            return Ok(Route::Supplied(supplied_result(supplied, &prep)));
        }
    }
    let mut request_options = RequestOptions {
        custom_instructions: options.custom_instructions.clone(),
        ..RequestOptions::default()
    };
    let mut preserve = None;
    if hooks.has(names::COMPACTING) {
        let mut messages = views(session, &prep.messages_to_summarize);
        messages.extend(views(session, &prep.turn_prefix_messages));
        let event = CompactingEvent {
            kind: names::COMPACTING,
            session_id: session.header().id.clone(),
            messages,
        };
        let d = hooks.compacting(&event, cancel).await;
        warnings.extend(d.warnings.iter().map(ToString::to_string));
        if d.failed_closed {
            return Err(CompactError::CancelledByHook {
                warnings: d.warnings,
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
        return Ok(Route::Supplied(result));
    }
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
    }
}

async fn call(
    summarizer: &dyn Summarizer,
    request: &SummaryRequest,
    cancel: &CancellationToken,
) -> Result<musepi_context_builder::SummaryResponse, CompactError> {
    match summarizer.summarize(request, cancel.clone()).await {
        Ok(r) => Ok(r),
        Err(SummarizeError::Cancelled) => Err(CompactError::Aborted),
        Err(error) => Err(CompactError::Summarize {
            purpose: request.purpose,
            error,
        }),
    }
}

/// The history summary: one request, or, when the history is too large for
/// the summarizer (known from its context window, or learnt from an
/// overflow rejection), windows folded one into the next (docs/design.md, "Summaries").
/// Returns the answer and how many requests were sent.
async fn history_summary(
    plan: &SummaryPlan,
    summarizer: &dyn Summarizer,
    cancel: &CancellationToken,
) -> Result<(Option<musepi_context_builder::SummaryResponse>, usize), CompactError> {
    let Some(request) = &plan.history else {
        return Ok((None, 0));
    };
    let units = &plan.history_units;
    let window = summarizer.context_window();
    let min = min_window_tokens(window.unwrap_or(DEFAULT_SUMMARIZER_WINDOW));
    if let Some(budget) = known_budget(units, window) {
        // Announced with the other requests.
        return windowed(units, summarizer, cancel, budget, min, false)
            .await
            .map(|(r, n)| (Some(r), n));
    }
    match call(summarizer, request, cancel).await {
        Ok(r) => Ok((Some(r), 1)),
        Err(CompactError::Summarize { error, .. }) if error.is_context_overflow() => {
            // The rejection often states the model's window; else halve.
            let (budget, min) = match overflow_window(&error) {
                Some(w) => (
                    input_budget_tokens(w, units.max_tokens()),
                    min_window_tokens(w),
                ),
                None => (units.tokens() / 2, min),
            };
            let (r, n) = windowed(units, summarizer, cancel, budget, min, true).await?;
            Ok((Some(r), n + 1))
        }
        Err(e) => Err(e),
    }
}

/// The window budget when the summarizer's known window is too small for
/// the whole history in one request.
fn known_budget(units: &HistoryUnits, window: Option<u64>) -> Option<u64> {
    let budget = input_budget_tokens(window?, units.max_tokens());
    (units.tokens() > budget).then_some(budget)
}

/// The requests a summary plan sends when none is rejected: the history
/// (one, or one per window), the turn prefix, the short summary.
fn expected_requests(plan: &SummaryPlan, window: Option<u64>) -> usize {
    let units = &plan.history_units;
    let history = match (&plan.history, known_budget(units, window)) {
        (None, _) => 0,
        (Some(_), None) => 1,
        (Some(_), Some(budget)) => {
            let min = min_window_tokens(window.unwrap_or(DEFAULT_SUMMARIZER_WINDOW));
            units.window_count(0, budget.max(min))
        }
    };
    history + usize::from(plan.turn_prefix.is_some()) + 1
}

fn overflow_window(error: &SummarizeError) -> Option<u64> {
    match error {
        SummarizeError::ContextOverflow { message, .. } => window_from_overflow_message(message),
        _ => None,
    }
}

/// Summarizes the history window by window, halving the window after an
/// overflow rejection, down to `min_tokens`. The windows are announced to
/// the summarizer unless the caller did (`announce`), and so are those a
/// halving adds.
async fn windowed(
    units: &HistoryUnits,
    summarizer: &dyn Summarizer,
    cancel: &CancellationToken,
    mut budget: u64,
    min_tokens: u64,
    announce: bool,
) -> Result<(musepi_context_builder::SummaryResponse, usize), CompactError> {
    let mut summary = units.previous_summary().map(str::to_owned);
    let mut usages = Vec::new();
    let mut truncated = false;
    let mut calls = 0;
    let mut start = 0;
    budget = budget.max(min_tokens);
    if announce {
        summarizer.expect_requests(units.window_count(0, budget));
    }
    while start < units.len() {
        let window = units.next_window(start, budget);
        let request = units.window_request(window.clone(), summary.as_deref(), budget);
        calls += 1;
        match call(summarizer, &request, cancel).await {
            Ok(r) => {
                summary = Some(r.text);
                usages.extend(r.usage);
                truncated |= r.truncated;
                start = window.end;
            }
            Err(CompactError::Summarize { error, purpose }) if error.is_context_overflow() => {
                if budget <= min_tokens {
                    return Err(CompactError::Summarize { error, purpose });
                }
                let expected = units.window_count(start, budget);
                budget = (budget / 2).max(min_tokens);
                // The rejected window was sent; its smaller windows follow.
                summarizer.expect_requests(
                    (units.window_count(start, budget) + 1).saturating_sub(expected),
                );
            }
            Err(e) => return Err(e),
        }
    }
    let text = summary.unwrap_or_default();
    Ok((
        musepi_context_builder::SummaryResponse {
            text,
            usage: sum_usage(usages.iter()),
            truncated,
        },
        calls,
    ))
}

/// The history and turn-prefix calls run concurrently; the short summary
/// follows (it reads the merged summary). A failed short summary is a
/// warning, not a failure: the compaction is still good.
async fn summarize(
    plan: &SummaryPlan,
    summarizer: &dyn Summarizer,
    cancel: &CancellationToken,
    requests: &mut Vec<RequestPurpose>,
    warnings: &mut Vec<String>,
) -> Result<(String, Option<String>, Option<Usage>), CompactError> {
    summarizer.expect_requests(expected_requests(plan, summarizer.context_window()));
    let history = history_summary(plan, summarizer, cancel);
    let prefix = async {
        match &plan.turn_prefix {
            Some(r) => call(summarizer, r, cancel).await.map(Some),
            None => Ok(None),
        }
    };
    let (history, prefix) = tokio::join!(history, prefix);
    let ((history, history_calls), prefix) = (history?, prefix?);
    requests.extend(std::iter::repeat_n(RequestPurpose::History, history_calls));
    if plan.turn_prefix.is_some() {
        requests.push(RequestPurpose::TurnPrefix);
    }
    let merged = plan.merge(
        history.as_ref().map(|h| h.text.as_str()),
        prefix.as_ref().map(|p| p.text.as_str()),
    );
    let short_request = plan.short_request(&merged);
    requests.push(RequestPurpose::ShortSummary);
    let short = match call(summarizer, &short_request, cancel).await {
        Ok(r) => Some(r),
        Err(CompactError::Aborted) => return Err(CompactError::Aborted),
        Err(e) => {
            warnings.push(e.to_string());
            None
        }
    };
    let answers = [
        (RequestPurpose::History, &history),
        (RequestPurpose::TurnPrefix, &prefix),
        (RequestPurpose::ShortSummary, &short),
    ];
    for (purpose, answer) in answers {
        if answer.as_ref().is_some_and(|a| a.truncated) {
            warnings.push(truncation_warning(purpose, summarizer));
        }
    }
    let usage = {
        let usages: Vec<&Usage> = [&history, &prefix, &short]
            .into_iter()
            .filter_map(|r| r.as_ref().and_then(|r| r.usage.as_ref()))
            .collect();
        sum_usage(usages)
    };
    Ok((merged, short.map(|s| s.text.trim().to_owned()), usage))
}
