//! The compaction pipeline end to end over a journal file, with a scripted
//! summarizer: what is written, what is sent, and that failures, aborts
//! and hook vetoes write nothing.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use musepi_compaction::{CompactionSettings, PruneConfig};
use musepi_context_builder::{RequestPurpose, SummaryRequest, SummaryResponse};
use musepi_hooks::events::{
    BeforeCompactEvent, BeforeCompactResult, CompactEvent, CompactingEvent, CompactingResult,
    MessageView, SummarizedMessages, SuppliedCompaction,
};
use musepi_hooks::{
    CompactError, CompactOptions, Hook, HookError, HookFuture, HookWarning, Hooks, Strategy,
    SummarizeError, SummarizeFuture, Summarizer,
};
use musepi_session_model::{
    AgentMessage, ContentBlock, EntryBody, Journal, MadeBy, SequentialIds, StopReason, Usage,
};
use tokio_util::sync::CancellationToken;

mod common;
use common::{NOW, Reads, Scripted, Writer, assert_failed_unwritten, assistant, compact_file};

/// Answers by purpose with a usage, and fails the requests of `fail` with
/// an HTTP 500.
fn scripted(fail: Option<RequestPurpose>) -> Scripted {
    let answer = |purpose| match purpose {
        RequestPurpose::History => "## Goal\n- history summary".to_owned(),
        RequestPurpose::TurnPrefix => "## Original Request\n- prefix summary".to_owned(),
        RequestPurpose::ShortSummary => "I changed things.".to_owned(),
        other => format!("{other:?}"),
    };
    let s = Scripted::new("scripted", answer).with_usage(Usage {
        input: 10.0,
        output: 5.0,
        total_tokens: 15.0,
        ..Default::default()
    });
    match fail {
        Some(purpose) => s.failing(
            Some(purpose),
            SummarizeError::Provider {
                provider: "scripted".into(),
                status: Some(500),
                message: "boom".into(),
            },
        ),
        None => s,
    }
}

/// The read turns of a session file: `task n`, call `cn` of `src/fn.rs`
/// with a growing usage, 8,000 `x`s.
const FIRST: Reads = Reads {
    task: "task",
    call: "c",
    file: "f",
    fill: 'x',
    with_usage: true,
};

/// The read turns appended later: `more n`, call `gn` of `src/gn.rs`,
/// 8,000 `y`s.
const MORE: Reads = Reads {
    task: "more",
    call: "g",
    file: "g",
    fill: 'y',
    with_usage: false,
};

/// A session file: three turns with a big tool result each.
fn session_file(dir: &tempfile::TempDir) -> PathBuf {
    session_file_with(dir, 3)
}

/// A [`session_file`] in a temporary folder: the folder, the file, its
/// bytes as written, and a [`scripted`] summarizer failing at `fail`.
fn saved(fail: Option<RequestPurpose>) -> (tempfile::TempDir, PathBuf, Vec<u8>, Scripted) {
    let dir = tempfile::tempdir().unwrap();
    let path = session_file(&dir);
    let before = std::fs::read(&path).unwrap();
    (dir, path, before, scripted(fail))
}

/// A session file with `turns` turns, then a closing answer.
fn session_file_with(dir: &tempfile::TempDir, turns: u32) -> PathBuf {
    let path = dir.path().join("s.jsonl");
    let mut w = Writer::create(&path, "sess", "/repo");
    w.reads(0..turns, &FIRST);
    w.message(AgentMessage::Assistant(assistant(
        vec![ContentBlock::text("All three files are read.")],
        StopReason::Stop,
    )));
    path
}

fn settings() -> CompactionSettings {
    let mut settings = CompactionSettings::default();
    settings.keep_recent_tokens = 2_500;
    settings.adapt_keep_recent = false;
    settings
}

/// An LLM compaction by `summarizer`, without pruning.
fn options<'a>(summarizer: &'a dyn Summarizer, hooks: &'a Hooks) -> CompactOptions<'a> {
    let mut options = CompactOptions::new(hooks, NOW);
    options.settings = settings();
    options.prune = None;
    options.summarizer = Some(summarizer);
    options
}

/// [`options`] that also prune, keeping less.
fn pruning<'a>(summarizer: &'a dyn Summarizer, hooks: &'a Hooks) -> CompactOptions<'a> {
    let mut opts = options(summarizer, hooks);
    let mut prune = PruneConfig::default();
    prune.protect_tokens = 2_000;
    prune.minimum_savings = 0;
    opts.prune = Some(prune);
    opts.settings.keep_recent_tokens = 600;
    opts
}

async fn run(
    path: &Path,
    opts: &CompactOptions<'_>,
    cancel: &CancellationToken,
) -> Result<musepi_hooks::CompactOutcome, CompactError> {
    compact_file(path, opts, cancel).await
}

/// Compacts `path` with [`options`].
async fn run_default(
    path: &Path,
    summarizer: &dyn Summarizer,
    hooks: &Hooks,
) -> Result<musepi_hooks::CompactOutcome, CompactError> {
    run(path, &options(summarizer, hooks), &CancellationToken::new()).await
}

#[tokio::test]
async fn an_llm_compaction_is_appended_with_its_summaries_and_file_list() {
    let (_dir, path, _, summarizer) = saved(None);
    let hooks = Hooks::new();
    let out = run_default(&path, &summarizer, &hooks).await.unwrap();
    assert_eq!(
        out.requests,
        [RequestPurpose::History, RequestPurpose::ShortSummary]
    );
    assert!(
        out.result
            .summary
            // The paths the summary left out appended verbatim, then the
            // file list.
            .starts_with(
                "## Goal\n- history summary\n\n## Verbatim from the session (not in the summary above)\n- path: src/f0.rs\n- path: src/f1.rs\n\n<files>\n# src/\n"
            ),
        "{}",
        out.result.summary
    );
    assert_eq!(
        out.result.short_summary.as_deref(),
        Some("I changed things.")
    );
    assert_eq!(
        out.result.usage.as_ref().map(|u| u.total_tokens),
        Some(30.0)
    );
    let reopened = Journal::open(&path, &mut SequentialIds::new()).unwrap();
    let leaf = reopened.session().leaf_entry().unwrap();
    assert_eq!(leaf.id, out.entry_id);
    let EntryBody::Compaction(c) = &leaf.body else {
        panic!("not a compaction")
    };
    assert_eq!(c.made_by, MadeBy::extension(false));
    assert_eq!(
        c.first_kept_entry_id,
        Some(out.result.first_kept_entry_id.clone())
    );
    assert!(out.tokens_after < 6_000, "{}", out.tokens_after);
    // How it was made and the context after it, as oh-my-pi records them:
    // what the reopened session counts at the entry.
    assert_eq!(c.method.as_deref(), Some("llm"));
    let after = musepi_snapcompact::context_tokens(
        reopened.session(),
        reopened.session().leaf_index(),
        musepi_context_builder::Tokenizer::Heuristic,
    );
    assert_eq!(c.tokens_after, Some(after));
    assert_eq!(out.tokens_after, after);
}

#[tokio::test]
async fn a_snapcompact_entry_records_its_method_and_the_context_after_it() {
    let (_dir, path, _, summarizer) = saved(None);
    let hooks = Hooks::new();
    let mut opts = options(&summarizer, &hooks);
    opts.strategy = Strategy::snapcompact(musepi_hooks::SnapTarget::default());
    let out = run(&path, &opts, &CancellationToken::new()).await.unwrap();
    let reopened = Journal::open(&path, &mut SequentialIds::new()).unwrap();
    let EntryBody::Compaction(c) = &reopened.session().leaf_entry().unwrap().body else {
        panic!("not a compaction")
    };
    assert_eq!(c.method.as_deref(), Some("snapcompact"));
    let after = musepi_snapcompact::context_tokens(
        reopened.session(),
        reopened.session().leaf_index(),
        musepi_context_builder::Tokenizer::Heuristic,
    );
    assert_eq!((c.tokens_after, out.tokens_after), (Some(after), after));
}

#[tokio::test]
async fn a_failed_summary_writes_nothing() {
    let (_dir, path, before, summarizer) = saved(Some(RequestPurpose::History));
    let hooks = Hooks::new();
    let opts = pruning(&summarizer, &hooks);
    assert_failed_unwritten(
        run(&path, &opts, &CancellationToken::new()).await,
        "Summarization failed: scripted request failed (HTTP 500): boom",
        &path,
        &before,
    );
}

#[tokio::test]
async fn an_abort_writes_nothing() {
    let (_dir, path, before, summarizer) = saved(None);
    let hooks = Hooks::new();
    let cancel = CancellationToken::new();
    cancel.cancel();
    assert!(matches!(
        run(&path, &options(&summarizer, &hooks), &cancel).await,
        Err(CompactError::Aborted)
    ));
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[tokio::test]
async fn staged_pruning_is_written_with_the_entry() {
    let (_dir, path, _, summarizer) = saved(None);
    let hooks = Hooks::new();
    let opts = pruning(&summarizer, &hooks);
    let out = run(&path, &opts, &CancellationToken::new()).await.unwrap();
    assert!(!out.pruned.is_empty());
    let history = summarizer.seen.lock().unwrap()[0].prompt_text();
    assert!(
        history.contains("[Output truncated - 2000 tokens; original kept: recall entry "),
        "{history}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text.matches("\"prunedAt\":1800000000000").count(),
        out.pruned.candidates.len()
    );
    // Every result the compaction blanked has its original in the store.
    let (session, _) =
        musepi_session_model::load_file(&path, &mut SequentialIds::default()).unwrap();
    let (store, warnings) = musepi_session_model::PruneStore::open(&path, &session.header().id);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(store.len(), out.pruned.candidates.len());
    for c in &out.pruned.candidates {
        let entry = &session.entries()[c.entry_index];
        let original = store.original(entry).unwrap().unwrap();
        assert!(
            original
                .entry
                .message()
                .unwrap()
                .as_tool_result()
                .unwrap()
                .pruned_at
                .is_none()
        );
    }
}

#[tokio::test]
async fn a_snapcompact_archive_reads_what_staged_pruning_blanked() {
    let (_dir, path, _, summarizer) = saved(None);
    let hooks = Hooks::new();
    let mut opts = pruning(&summarizer, &hooks);
    opts.strategy = Strategy::snapcompact(musepi_hooks::SnapTarget::default());
    let out = run(&path, &opts, &CancellationToken::new()).await.unwrap();
    assert!(!out.pruned.is_empty());
    // The archive shows the outputs as they were, not their placeholders…
    assert!(
        !out.result.summary.contains("[Output truncated"),
        "{}",
        out.result.summary
    );
    assert!(
        out.result.summary.contains(&"x".repeat(200)),
        "{}",
        out.result.summary
    );
    // …while the kept history is pruned on disk as before.
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text.matches("\"prunedAt\":1800000000000").count(),
        out.pruned.candidates.len()
    );
}

/// A hook, named by its first field, that answers every
/// `session_before_compact` with its second.
struct Answers(&'static str, BeforeCompactResult);
impl Hook for Answers {
    fn name(&self) -> String {
        self.0.into()
    }
    fn before_compact<'a>(
        &'a self,
        _: &'a BeforeCompactEvent,
        _: CancellationToken,
    ) -> HookFuture<'a, Option<BeforeCompactResult>> {
        Box::pin(std::future::ready(Ok(Some(self.1.clone()))))
    }
}

/// Cancels every compaction.
fn veto() -> Answers {
    Answers(
        "veto",
        BeforeCompactResult {
            cancel: true,
            ..Default::default()
        },
    )
}

struct Supply(Arc<Mutex<Vec<bool>>>);
impl Hook for Supply {
    fn name(&self) -> String {
        "supply".into()
    }
    fn before_compact<'a>(
        &'a self,
        e: &'a BeforeCompactEvent,
        _: CancellationToken,
    ) -> HookFuture<'a, Option<BeforeCompactResult>> {
        let first = e.preparation.first_kept_entry_id.clone();
        Box::pin(async move {
            Ok(Some(BeforeCompactResult {
                cancel: false,
                reason: None,
                compaction: Some(SuppliedCompaction {
                    summary: "from a hook".into(),
                    first_kept_entry_id: Some(first),
                    tokens_before: None,
                    details: Some(serde_json::json!({"mine": 1})),
                    short_summary: None,
                    preserve_data: None,
                }),
            }))
        })
    }
    fn compacted<'a>(&'a self, e: &'a CompactEvent, _: CancellationToken) -> HookFuture<'a, ()> {
        self.0
            .lock()
            .unwrap()
            .push(e.from_extension && e.compaction_entry["summary"] == "from a hook");
        Box::pin(async { Ok(()) })
    }
}

struct Steer;
impl Hook for Steer {
    fn name(&self) -> String {
        "steer".into()
    }
    fn compacting<'a>(
        &'a self,
        _: &'a CompactingEvent,
        _: CancellationToken,
    ) -> HookFuture<'a, Option<CompactingResult>> {
        Box::pin(async {
            Ok(Some(CompactingResult {
                prompt: Some("ONLY LIST FILES".into()),
                context: vec!["ticket ABC-1".into()],
                preserve_data: Some(serde_json::json!({"mem": true})),
            }))
        })
    }
}

/// Answers `session.compacting` with garbage; `fail_closed` says whether
/// that cancels the compaction.
struct Broken {
    fail_closed: bool,
}
impl Hook for Broken {
    fn name(&self) -> String {
        "broken".into()
    }
    fn fail_closed(&self) -> bool {
        self.fail_closed
    }
    fn compacting<'a>(
        &'a self,
        _: &'a CompactingEvent,
        _: CancellationToken,
    ) -> HookFuture<'a, Option<CompactingResult>> {
        Box::pin(async { Err(HookError::InvalidAnswer("not JSON".into())) })
    }
}

#[tokio::test]
async fn a_hook_can_cancel_and_nothing_is_written() {
    let (_dir, path, before, summarizer) = saved(None);
    let mut hooks = Hooks::new();
    hooks.register(Arc::new(veto()));
    let result = run_default(&path, &summarizer, &hooks).await;
    assert_failed_unwritten(result, "Compaction cancelled", &path, &before);
    assert!(summarizer.seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_supplied_compaction_is_stored_as_extension_made_and_the_after_event_sees_it() {
    let (_dir, path, _, summarizer) = saved(None);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut hooks = Hooks::new();
    hooks.register(Arc::new(Supply(seen.clone())));
    let out = run_default(&path, &summarizer, &hooks).await.unwrap();
    assert!(out.result.from_extension);
    assert!(summarizer.seen.lock().unwrap().is_empty());
    assert_eq!(*seen.lock().unwrap(), [true]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.lines()
            .last()
            .unwrap()
            .contains(r#""details":{"mine":1},"fromExtension":true"#)
    );
}

/// A broken `session.compacting` hook (`fail_closed` or not), then
/// [`Steer`]; and what the hooks tell of the failures that cancel, as they
/// happen.
fn broken_then_steer(fail_closed: bool) -> (Hooks, Arc<Mutex<Vec<String>>>) {
    let mut hooks = Hooks::new();
    let told = Arc::new(Mutex::new(Vec::new()));
    let sink = told.clone();
    hooks.report_cancels(Arc::new(move |w: &HookWarning| {
        sink.lock().unwrap().push(w.to_string());
    }));
    hooks.register(Arc::new(Broken { fail_closed }));
    hooks.register(Arc::new(Steer));
    (hooks, told)
}

#[tokio::test]
async fn compacting_hooks_steer_the_prompt_and_a_broken_one_is_reported() {
    let (_dir, path, _, summarizer) = saved(None);
    let (hooks, told) = broken_then_steer(false);
    let mut opts = options(&summarizer, &hooks);
    opts.custom_instructions = Some("focus on tests".into());
    let out = run(&path, &opts, &CancellationToken::new()).await.unwrap();
    let history = summarizer.seen.lock().unwrap()[0].prompt_text();
    assert!(history.ends_with("<additional-context>\n- ticket ABC-1\n</additional-context>\n\nONLY LIST FILES\n\nAdditional focus: focus on tests"), "{history}");
    assert_eq!(
        out.result.preserve_data,
        Some(serde_json::json!({"mem": true}))
    );
    assert_eq!(
        out.warnings,
        ["hook broken (session.compacting) invalid answer: not JSON"]
    );
    assert!(
        told.lock().unwrap().is_empty(),
        "a failure that cancels nothing is only a warning"
    );
}

#[tokio::test]
async fn a_fail_closed_hook_that_fails_cancels_and_is_told_as_it_happens() {
    let (_dir, path, before, summarizer) = saved(None);
    let (hooks, told) = broken_then_steer(true);
    let result = run_default(&path, &summarizer, &hooks).await;
    assert_failed_unwritten(result, "Compaction cancelled", &path, &before);
    assert_eq!(
        *told.lock().unwrap(),
        [
            "hook broken (session.compacting) invalid answer: not JSON; the operation was cancelled (the hook is fail-closed)"
        ]
    );
    assert!(summarizer.seen.lock().unwrap().is_empty());
}

/// Records the summarized messages `session_before_compact` shows and the
/// messages `session.compacting` receives; with `only_compacting` it
/// handles only the latter.
#[derive(Default)]
struct Watch {
    only_compacting: bool,
    shown: Mutex<Vec<SummarizedMessages>>,
    received: Mutex<Vec<Vec<MessageView>>>,
}
impl Hook for Watch {
    fn name(&self) -> String {
        "watch".into()
    }
    fn handles(&self, event: &str) -> bool {
        !self.only_compacting || event == musepi_hooks::names::COMPACTING
    }
    fn before_compact<'a>(
        &'a self,
        e: &'a BeforeCompactEvent,
        _: CancellationToken,
    ) -> HookFuture<'a, Option<BeforeCompactResult>> {
        self.shown
            .lock()
            .unwrap()
            .push(e.preparation.summarized.clone());
        Box::pin(std::future::ready(Ok(None)))
    }
    fn compacting<'a>(
        &'a self,
        e: &'a CompactingEvent,
        _: CancellationToken,
    ) -> HookFuture<'a, Option<CompactingResult>> {
        self.received.lock().unwrap().push(e.messages.clone());
        Box::pin(std::future::ready(Ok(None)))
    }
}

#[tokio::test]
async fn the_compacting_event_receives_the_messages_the_before_compact_event_showed() {
    let (_dir, path, _, summarizer) = saved(None);
    let both = Arc::new(Watch::default());
    let mut hooks = Hooks::new();
    hooks.register(both.clone());
    run_default(&path, &summarizer, &hooks).await.unwrap();
    let shown = both.shown.lock().unwrap().clone();
    let received = both.received.lock().unwrap().clone();
    assert_eq!(shown.len(), 1);
    assert!(!shown[0].messages_to_summarize.is_empty());
    assert_eq!(received, [shown[0].clone().into_messages()]);
    // Without a before-compact hook the compacting event is the same.
    let (_dir, path, _, summarizer) = saved(None);
    let alone = Arc::new(Watch {
        only_compacting: true,
        ..Watch::default()
    });
    let mut hooks = Hooks::new();
    hooks.register(alone.clone());
    run_default(&path, &summarizer, &hooks).await.unwrap();
    assert!(alone.shown.lock().unwrap().is_empty());
    assert_eq!(*alone.received.lock().unwrap(), received);
}

/// Appends `turns` more read turns (`src/g{n}.rs`) after the leaf.
fn append_turns(path: &Path, turns: std::ops::Range<u32>) {
    Writer::open(path, 1_900_000_000_000).reads(turns, &MORE);
}

/// Supplies a compaction whose `details` name files no message touched.
fn supply_files() -> Answers {
    Answers(
        "supply-files",
        BeforeCompactResult {
            cancel: false,
            reason: None,
            compaction: Some(SuppliedCompaction {
                summary: "hook summary".into(),
                first_kept_entry_id: None,
                tokens_before: None,
                details: Some(serde_json::json!({
                    "readFiles": ["hook/only-read.rs"],
                    "modifiedFiles": ["hook/only-changed.rs"],
                })),
                short_summary: None,
                preserve_data: None,
            }),
        },
    )
}

/// The files of the second compaction after a first one made by `first`
/// (`None`: the default LLM summary), and the first compaction's details.
async fn files_after_two_compactions(
    first: Option<Arc<dyn Hook>>,
) -> (Vec<String>, serde_json::Value) {
    let (_dir, path, _, summarizer) = saved(None);
    let mut hooks = Hooks::new();
    if let Some(h) = first {
        hooks.register(h);
    }
    let one = run_default(&path, &summarizer, &hooks).await.unwrap();
    append_turns(&path, 0..3);
    let none = Hooks::new();
    let two = run_default(&path, &summarizer, &none).await.unwrap();
    assert!(!two.result.from_extension);
    let details = two.result.details.clone().unwrap();
    let mut files: Vec<String> = ["readFiles", "modifiedFiles"]
        .iter()
        .flat_map(|k| details[*k].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    files.sort();
    (files, one.result.details.unwrap())
}

#[tokio::test]
async fn a_supplied_compactions_files_are_not_carried_into_the_next_compaction() {
    let (files, first) = files_after_two_compactions(Some(Arc::new(supply_files()))).await;
    assert_eq!(first["readFiles"], serde_json::json!(["hook/only-read.rs"]));
    assert!(
        files.iter().all(|f| !f.starts_with("hook/")),
        "the extension's files leaked into file tracking: {files:?}"
    );
    assert!(files.contains(&"src/g0.rs".to_owned()), "{files:?}");
}

#[tokio::test]
async fn a_generated_compactions_files_are_carried_into_the_next_compaction() {
    // The contrast: without the hook, what the first compaction summarized
    // (src/f0.rs, src/f1.rs) reaches the second one through its details.
    let (files, first) = files_after_two_compactions(None).await;
    assert!(
        first["readFiles"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("src/f0.rs"))
    );
    assert!(files.contains(&"src/f0.rs".to_owned()), "{files:?}");
    assert!(files.contains(&"src/g0.rs".to_owned()), "{files:?}");
}

/// Rejects any prompt longer than `limit` characters as too long, like a
/// small model's server; otherwise answers with the size it summarized.
struct Small {
    /// Longest `<conversation>` accepted, in characters.
    limit: usize,
    /// The window the rejection states.
    stated: u64,
    window: Option<u64>,
    seen: Mutex<Vec<usize>>,
    /// The requests the pipeline announced.
    expected: Mutex<usize>,
}

impl Small {
    fn new(limit: usize, stated: u64, window: Option<u64>) -> Self {
        Self {
            limit,
            stated,
            window,
            seen: Mutex::new(Vec::new()),
            expected: Mutex::new(0),
        }
    }
}

impl Small {
    /// Its answer to `request`, known at once.
    fn answer(&self, request: &SummaryRequest) -> Result<SummaryResponse, SummarizeError> {
        let prompt = request.prompt_text();
        let conversation = prompt.find("\n</conversation>").unwrap_or(prompt.len());
        self.seen.lock().unwrap().push(conversation);
        if conversation > self.limit {
            return Err(SummarizeError::ContextOverflow {
                provider: "small".into(),
                status: Some(400),
                message: format!("maximum context length is {} tokens", self.stated),
            });
        }
        Ok(SummaryResponse {
            text: format!("summary of {} chars", prompt.len()),
            usage: None,
            truncated: false,
        })
    }
}

impl Summarizer for Small {
    fn summarize<'a>(
        &'a self,
        request: &'a SummaryRequest,
        _: CancellationToken,
    ) -> SummarizeFuture<'a> {
        Box::pin(std::future::ready(self.answer(request)))
    }

    fn describe(&self) -> String {
        "small".into()
    }

    fn context_window(&self) -> Option<u64> {
        self.window
    }

    fn expect_requests(&self, more: usize) {
        *self.expected.lock().unwrap() += more;
    }
}

#[tokio::test]
async fn an_overflowing_history_is_summarized_in_windows() {
    let hooks = Hooks::new();
    // Learnt from the rejection, which states the window: windows of what fits.
    let dir = tempfile::tempdir().unwrap();
    let path = session_file_with(&dir, 12);
    let small = Small::new(16_000, 8_000, None);
    let mut opts = options(&small, &hooks);
    opts.settings.keep_recent_tokens = 600;
    opts.settings.reserve_tokens = 4_000;
    let out = run(&path, &opts, &CancellationToken::new()).await.unwrap();
    let seen = small.seen.lock().unwrap().clone();
    let history_calls = out
        .requests
        .iter()
        .filter(|p| **p == RequestPurpose::History)
        .count();
    assert!(history_calls >= 3, "{:?} {seen:?}", out.requests);
    // Every request sent was announced, the windows once the rejection came.
    assert_eq!(*small.expected.lock().unwrap(), out.requests.len());
    assert_eq!(seen.len(), out.requests.len(), "every request is listed");
    assert!(
        seen[0] > 16_000 && seen[1..].iter().all(|n| *n <= 16_000),
        "{seen:?}"
    );
    assert!(
        out.result.summary.starts_with("summary of "),
        "{}",
        out.result.summary
    );

    // Known window: windows from the start, no rejected request.
    let dir = tempfile::tempdir().unwrap();
    let path = session_file_with(&dir, 12);
    let known = Small::new(16_000, 0, Some(25_000));
    let mut opts = options(&known, &hooks);
    opts.settings.keep_recent_tokens = 600;
    opts.settings.reserve_tokens = 4_000;
    let out = run(&path, &opts, &CancellationToken::new()).await.unwrap();
    assert!(
        out.requests
            .iter()
            .filter(|p| **p == RequestPurpose::History)
            .count()
            >= 2,
        "{:?}",
        out.requests
    );
    assert!(known.seen.lock().unwrap().iter().all(|n| *n <= 16_000));
    // Known window: all announced before the first request.
    assert_eq!(*known.expected.lock().unwrap(), out.requests.len());

    // A window that cannot shrink further fails cleanly and writes nothing.
    let dir = tempfile::tempdir().unwrap();
    let path = session_file(&dir);
    let before = std::fs::read(&path).unwrap();
    let tiny = Small::new(10, 4_096, None);
    let mut opts = options(&tiny, &hooks);
    opts.settings.keep_recent_tokens = 600;
    let err = run(&path, &opts, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("Summarization failed: small rejected the summarizer input"),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
}
