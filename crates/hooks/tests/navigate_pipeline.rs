//! Tree navigation end to end over a journal file: the summary under the
//! target, the leaf rules, hooks, the model-free digest, and that a veto or
//! failure changes nothing.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use musepi_context_builder::{SummaryResponse, build_context};
use musepi_hooks::events::{BeforeTreeEvent, BeforeTreeResult, SuppliedSummary, TreeEvent};
use musepi_hooks::{
    BranchStrategy, FromFn, Hook, HookFuture, Hooks, NavigateError, NavigateOptions,
    SummarizeError, Summarizer, TreeRequest, navigate,
};
use musepi_session_model::{
    AgentMessage, ContentBlock, EntryBody, Journal, SequentialIds, StopReason,
};
use tokio_util::sync::CancellationToken;

mod common;
use common::{
    NOW, Scripted, Writer, assert_failed_unwritten, assistant, navigate_file, read_call, user,
};

/// Answers every request with the same summary, or, `failing`, with
/// nothing.
fn echoing(failing: bool) -> Scripted {
    let s = Scripted::new("echo", |_| "## Goal\n- tried plan B".to_owned());
    if failing {
        s.failing(
            None,
            SummarizeError::EmptyResponse {
                provider: "echo".into(),
            },
        )
    } else {
        s
    }
}

/// A → B(user "plan A") → C(asst, reads a.rs) → D(user "plan B"); leaf D.
/// Returns the file and the ids [A, B, C, D].
fn tree_file(dir: &Path) -> (PathBuf, Vec<String>) {
    let path = dir.join("t.jsonl");
    let mut w = Writer::create(&path, "t", "/r");
    let asst = |t: &str, calls: Vec<ContentBlock>| {
        let mut blocks = vec![ContentBlock::text(t)];
        blocks.extend(calls);
        AgentMessage::Assistant(assistant(blocks, StopReason::Stop))
    };
    let read = read_call("r", "src/a.rs");
    let out = vec![
        w.message(user("start")),
        w.message(asst("ok", vec![])),
        w.message(asst("reading a.rs for plan B", vec![read])),
        w.message(user("plan B is slow")),
    ];
    (path, out)
}

fn options<'a>(
    target: &str,
    summarize: bool,
    summarizer: Option<&'a dyn Summarizer>,
    hooks: &'a Hooks,
) -> NavigateOptions<'a> {
    let request = TreeRequest::to(Some(target.into()))
        .with_summary(summarize)
        .with_instructions(None, true);
    let mut options = NavigateOptions::new(request, hooks, NOW);
    options.strategy = BranchStrategy::Llm;
    options.summarizer = summarizer;
    options.system_prompt = "You summarize.";
    options
}

async fn go(
    path: &Path,
    opts: &NavigateOptions<'_>,
) -> Result<musepi_hooks::NavigateOutcome, NavigateError> {
    navigate_file(path, opts).await
}

#[tokio::test]
async fn the_summary_hangs_under_the_target_and_the_context_continues_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ids) = tree_file(dir.path());
    let echo = echoing(false);
    let hooks = Hooks::new();
    let out = go(&path, &options(&ids[1], true, Some(&echo), &hooks))
        .await
        .unwrap();
    assert_eq!(out.abandoned, [ids[2].as_str(), ids[3].as_str()]);
    let request = echo.seen.lock().unwrap()[0].clone();
    assert_eq!(request.max_tokens, Some(2048));
    assert!(
        request
            .prompt_text()
            .contains("[Assistant]: reading a.rs for plan B")
    );
    assert!(request.prompt_text().contains("[User]: plan B is slow"));
    let j = Journal::open(&path, &mut SequentialIds::new()).unwrap();
    let s = j.session();
    let entry = s.leaf_entry().unwrap();
    assert_eq!(entry.parent_id.as_ref().unwrap().as_str(), ids[1]);
    let EntryBody::BranchSummary(b) = &entry.body else {
        panic!("not a branch summary")
    };
    assert_eq!(b.from_id, ids[1]);
    assert!(
        b.summary
            .contains("## Goal\n- tried plan B\n\n<files>\na.rs (Read)")
            || b.summary.contains("# src/\na.rs (Read)"),
        "{}",
        b.summary.as_str()
    );
    let ctx = build_context(s);
    let roles: Vec<&str> = ctx.messages.iter().map(|m| m.message.role()).collect();
    assert_eq!(roles, ["user", "assistant", "branchSummary"]);
}

#[tokio::test]
async fn a_user_message_target_moves_the_leaf_to_its_parent_and_returns_its_text() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ids) = tree_file(dir.path());
    let hooks = Hooks::new();
    let before = std::fs::read(&path).unwrap();
    let mut j = Journal::open(&path, &mut SequentialIds::new()).unwrap();
    let mut seq = SequentialIds::after(j.session().entries().iter().map(|e| &e.id));
    let out = navigate(
        &mut j,
        &options(&ids[0], false, None, &hooks),
        &mut seq,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(out.editor_text(), Some("start"));
    assert_eq!(j.session().leaf_id(), None);
    assert_eq!(out.abandoned.len(), 3);
    // Without a summary nothing is written: the leaf moves in memory.
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// Answers every `session_before_tree` with the same result.
struct Answers(BeforeTreeResult);
impl Hook for Answers {
    fn name(&self) -> String {
        "answers".into()
    }
    fn before_tree<'a>(
        &'a self,
        _: &'a BeforeTreeEvent,
        _: CancellationToken,
    ) -> HookFuture<'a, Option<BeforeTreeResult>> {
        Box::pin(async { Ok(Some(self.0.clone())) })
    }
}

/// What the after-event saw: the summary text and whether an extension made it.
type Seen = Arc<Mutex<Vec<(Option<String>, bool)>>>;

struct Supplier(Seen);
impl Hook for Supplier {
    fn name(&self) -> String {
        "supplier".into()
    }
    fn before_tree<'a>(
        &'a self,
        e: &'a BeforeTreeEvent,
        _: CancellationToken,
    ) -> HookFuture<'a, Option<BeforeTreeResult>> {
        let wants = e.preparation.request.summarize;
        Box::pin(async move {
            Ok(wants.then(|| BeforeTreeResult {
                summary: Some(SuppliedSummary {
                    summary: "hook summary".into(),
                    details: None,
                }),
                ..Default::default()
            }))
        })
    }
    fn tree<'a>(&'a self, e: &'a TreeEvent, _: CancellationToken) -> HookFuture<'a, ()> {
        self.0.lock().unwrap().push((
            e.summary_entry
                .as_ref()
                .map(|s| s["summary"].as_str().unwrap().to_owned()),
            e.from_extension == Some(true),
        ));
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn a_hook_veto_or_a_failed_summary_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ids) = tree_file(dir.path());
    let before = std::fs::read(&path).unwrap();
    let echo = echoing(false);
    let mut hooks = Hooks::new();
    hooks.register(Arc::new(Answers(BeforeTreeResult {
        cancel: true,
        ..Default::default()
    })));
    assert!(matches!(
        go(&path, &options(&ids[1], true, Some(&echo), &hooks)).await,
        Err(NavigateError::CancelledByHook { .. })
    ));
    assert!(echo.seen.lock().unwrap().is_empty());
    let failing = echoing(true);
    let none = Hooks::new();
    assert_failed_unwritten(
        go(&path, &options(&ids[1], true, Some(&failing), &none)).await,
        "Branch summarization failed: echo returned an empty summary",
        &path,
        &before,
    );
}

#[tokio::test]
async fn a_hook_summary_is_used_only_when_the_user_wants_one() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ids) = tree_file(dir.path());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut hooks = Hooks::new();
    hooks.register(Arc::new(Supplier(seen.clone())));
    let out = go(&path, &options(&ids[1], true, None, &hooks))
        .await
        .unwrap();
    assert!(out.summary.as_ref().unwrap().from_extension);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.lines()
            .last()
            .unwrap()
            .contains(r#""summary":"hook summary","fromExtension":true"#),
        "{text}"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [(Some("hook summary".to_owned()), true)]
    );
}

#[tokio::test]
async fn a_hook_summary_that_is_empty_is_kept_in_the_outcome_but_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ids) = tree_file(dir.path());
    let before = std::fs::read(&path).unwrap();
    let mut hooks = Hooks::new();
    hooks.register(Arc::new(Answers(BeforeTreeResult {
        summary: Some(SuppliedSummary {
            summary: String::new(),
            details: None,
        }),
        ..Default::default()
    })));
    let out = go(&path, &options(&ids[1], true, None, &hooks))
        .await
        .unwrap();
    let summary = out.summary.as_ref().unwrap();
    assert!(summary.summary.is_empty() && summary.from_extension);
    assert_eq!(out.summary_entry, None);
    assert_eq!(out.new_leaf.as_ref().unwrap().as_str(), ids[1]);
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[tokio::test]
async fn the_digest_needs_no_model() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ids) = tree_file(dir.path());
    let hooks = Hooks::new();
    let mut opts = options(&ids[1], true, None, &hooks);
    opts.strategy = BranchStrategy::Snapcompact;
    let out = go(&path, &opts).await.unwrap();
    let summary = out.summary.unwrap().summary;
    assert!(summary.contains("plan B is slow"), "{summary}");
    // Introduced as the branch left, not as history to carry on from.
    assert!(summary.contains("archived deterministically, without a model"));
    assert!(summary.contains("not part of the current path"));
    assert!(
        !summary.contains("Resume the prior conversation"),
        "{summary}"
    );
    assert!(!summary.contains("before compaction"), "{summary}");
    assert!(summary.contains("src/a.rs (Read)"));
    let llm = go(&path, &options(&ids[1], true, None, &hooks))
        .await
        .unwrap_err();
    assert!(matches!(llm, NavigateError::NoModel));
}

/// A digest costs the context what an LLM branch summary may: at most its
/// output limit, however long the branch.
#[test]
fn a_long_branchs_digest_stays_within_a_branch_summarys_budget() {
    let mut b = musepi_test_support::EntryBuilder::new();
    let fork = b.user("start");
    for i in 0..200 {
        b.user(&format!(
            "step {i}: {}",
            "try the other parser design and measure it ".repeat(20)
        ));
        b.assistant(
            &format!(
                "step {i} answer: {}",
                "the numbers moved a little ".repeat(40)
            ),
            &[],
            None,
        );
    }
    let session = b.session;
    let leaf = session.leaf_index();
    let target = session.index_of(fork.as_str()).unwrap();
    let collected = musepi_branch_summary::collect_entries(&session, leaf, Some(target)).unwrap();
    let prep = musepi_branch_summary::prepare_branch(
        &session,
        &collected.entries,
        0,
        &musepi_branch_summary::PrepareOptions::default(),
    )
    .unwrap();
    let digest = musepi_hooks::branch_digest(&prep);
    let tokens = musepi_session_model::json::utf16_len(&digest.summary).div_ceil(4);
    assert!(
        tokens <= musepi_branch_summary::MAX_TOKENS as usize + 100,
        "{tokens} tokens"
    );
    assert!(tokens > 1_000, "it uses the room it has: {tokens} tokens");
}

#[tokio::test]
async fn navigating_to_the_leaf_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ids) = tree_file(dir.path());
    let hooks = Hooks::new();
    let out = go(&path, &options(&ids[3], true, None, &hooks))
        .await
        .unwrap();
    assert!(out.no_op);
    assert!(
        matches!(go(&path, &options("nope", false, None, &hooks)).await, Err(NavigateError::NotFound(id)) if id == "nope")
    );
}

/// Answers every request with a summary the model stopped at its output limit.
fn cut() -> impl Summarizer {
    FromFn::summarizer("cut", (), async |(), _, _| {
        Ok(SummaryResponse {
            text: "## Goal\n- tried plan".into(),
            usage: None,
            truncated: true,
        })
    })
}

#[tokio::test]
async fn a_summary_cut_at_the_output_limit_is_kept_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ids) = tree_file(dir.path());
    let hooks = Hooks::new();
    let out = go(&path, &options(&ids[1], true, Some(&cut()), &hooks))
        .await
        .unwrap();
    assert_eq!(
        out.warnings,
        [
            "the branchSummary answer of cut stopped at its output limit, so it may end mid-sentence; it is used as written (a larger output limit gives a complete one)"
        ]
    );
    let j = Journal::open(&path, &mut SequentialIds::new()).unwrap();
    let EntryBody::BranchSummary(b) = &j.session().leaf_entry().unwrap().body else {
        panic!("not a branch summary")
    };
    assert!(
        b.summary.contains("## Goal\n- tried plan"),
        "{}",
        b.summary.as_str()
    );
}
