//! The compaction and navigation pipelines with real hook processes
//! registered through the Rust API (`ProcessHook` in `Hooks`): the cases of
//! issue 8 — cancel, supplied compaction, context lines and prompt
//! override, timeout, garbage answers, and after-events that see the saved
//! entry.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use musepi_hooks::events::names;
use musepi_hooks::{
    BranchStrategy, CompactError, CompactOptions, CompactOutcome, Hooks, NavigateOptions,
    ProcessHook, TreeRequest,
};
use musepi_session_model::{AgentMessage, ContentBlock, Journal, SequentialIds, StopReason};
use musepi_test_support::last_line;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

mod common;
use common::{
    NOW, Reads, Scripted, Writer, assert_failed_unwritten, assistant, compact_file, navigate_file,
    process_hook, script,
};

/// Records requests and answers with a fixed summary.
fn recorder() -> Scripted {
    Scripted::new("recorder", |_| "## Goal\n- summarized".to_owned())
}

fn process(event: &str, path: &Path) -> Arc<ProcessHook> {
    Arc::new(process_hook(event, path))
}

/// A session file of read turns with one process hook: the script
/// `name` beside it, running `body`, for `event`.
struct Hooked {
    _dir: tempfile::TempDir,
    path: PathBuf,
    hooks: Hooks,
    script: PathBuf,
}

fn hooked(event: &str, name: &str, body: &str) -> Hooked {
    let dir = tempfile::tempdir().unwrap();
    let path = session_file(dir.path());
    let script = script(dir.path(), name, body);
    let mut hooks = Hooks::new();
    hooks.register(process(event, &script));
    Hooked {
        _dir: dir,
        path,
        hooks,
        script,
    }
}

/// Hooks of `supply`, answering `before` with `answer`, and of an
/// after-event `after` whose payload lands in the returned file.
fn supply_and_record(dir: &Path, before: &str, answer: &str, after: &str) -> (Hooks, PathBuf) {
    let supply = script(
        dir,
        "supply.sh",
        &format!("cat > /dev/null\necho '{answer}'"),
    );
    let seen = dir.join("after.json");
    let record = script(dir, "after.sh", &format!("cat > '{}'", seen.display()));
    let mut hooks = Hooks::new();
    hooks.register(process(before, &supply));
    hooks.register(process(after, &record));
    (hooks, seen)
}

/// Three read turns with big results, then a closing answer.
fn session_file(dir: &Path) -> PathBuf {
    let path = dir.join("s.jsonl");
    let mut w = Writer::create(&path, "sess", "/repo");
    w.reads(
        0..3,
        &Reads {
            task: "task",
            call: "c",
            file: "f",
            fill: 'x',
            with_usage: false,
        },
    );
    w.message(AgentMessage::Assistant(assistant(
        vec![ContentBlock::text("done")],
        StopReason::Stop,
    )));
    path
}

async fn run_compact(
    path: &Path,
    hooks: &Hooks,
    summarizer: &Scripted,
    instructions: Option<&str>,
) -> Result<CompactOutcome, CompactError> {
    let mut options = CompactOptions::new(hooks, NOW);
    options.custom_instructions = instructions.map(str::to_owned);
    options.settings.keep_recent_tokens = 2_500;
    options.settings.adapt_keep_recent = false;
    options.prune = None;
    options.summarizer = Some(summarizer);
    compact_file(path, &options, &CancellationToken::new()).await
}

#[tokio::test]
async fn an_exit_2_cancel_leaves_the_file_byte_identical() {
    let veto = hooked(
        names::BEFORE_COMPACT,
        "veto.sh",
        "echo 'not now' >&2\nexit 2",
    );
    let (path, hooks) = (&veto.path, &veto.hooks);
    let before = std::fs::read(path).unwrap();
    let summarizer = recorder();
    let result = run_compact(path, hooks, &summarizer, None).await;
    // The error names the hook and what it wrote on stderr, its reason.
    match &result {
        Err(CompactError::CancelledByHook { by: Some(by), .. }) => {
            assert_eq!(by.reason.as_deref(), Some("not now"));
            assert!(by.hook.ends_with("veto.sh"), "{by:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_failed_unwritten(result, "Compaction cancelled", path, &before);
    assert!(summarizer.seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_supplied_compaction_is_stored_from_extension_and_the_after_event_sees_the_saved_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = session_file(dir.path());
    let (hooks, seen) = supply_and_record(
        dir.path(),
        names::BEFORE_COMPACT,
        r#"{"compaction": {"summary": "from a process", "details": {"readFiles": ["x.rs"], "modifiedFiles": []}}}"#,
        names::COMPACT,
    );
    let summarizer = recorder();
    let out = run_compact(&path, &hooks, &summarizer, None).await.unwrap();
    assert!(out.result.from_extension);
    assert!(summarizer.seen.lock().unwrap().is_empty());
    let saved = last_line(&path);
    assert_eq!(saved["type"], "compaction");
    assert_eq!(saved["summary"], "from a process");
    assert_eq!(saved["fromExtension"], true);
    let event: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(event["type"], "session_compact");
    assert_eq!(event["fromExtension"], true);
    assert_eq!(event["compactionEntry"], saved);
    assert_eq!(event["sessionFile"], path.display().to_string());
}

#[tokio::test]
async fn context_lines_and_a_prompt_override_reach_the_request_with_the_custom_instructions() {
    let steer = hooked(
        names::COMPACTING,
        "steer.sh",
        r#"cat > /dev/null
echo '{"prompt": "LIST ONLY THE FILES", "context": ["ticket ABC-1", "branch feature/x"], "preserveData": {"memory": 1}}'"#,
    );
    let summarizer = recorder();
    let out = run_compact(
        &steer.path,
        &steer.hooks,
        &summarizer,
        Some("focus on tests"),
    )
    .await
    .unwrap();
    let prompt = summarizer.seen.lock().unwrap()[0].prompt_text();
    assert!(
        prompt.ends_with(
            "<additional-context>\n- ticket ABC-1\n- branch feature/x\n</additional-context>\n\nLIST ONLY THE FILES\n\nAdditional focus: focus on tests"
        ),
        "{prompt}"
    );
    assert!(!prompt.contains("## Goal"), "the base prompt is replaced");
    assert_eq!(
        out.result.preserve_data,
        Some(serde_json::json!({"memory": 1}))
    );
}

#[tokio::test]
async fn a_hook_past_its_timeout_is_killed_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = session_file(dir.path());
    let before = std::fs::read(&path).unwrap();
    let slow = script(dir.path(), "slow.sh", "sleep 30");
    let hook = |closed: bool| {
        Arc::new(
            process_hook(names::BEFORE_COMPACT, &slow)
                .timeout(Duration::from_millis(300))
                .with_fail_closed(closed),
        )
    };
    // Fail-closed: the timeout cancels the compaction and nothing is written.
    let mut hooks = Hooks::new();
    hooks.register(hook(true));
    let summarizer = recorder();
    let err = run_compact(&path, &hooks, &summarizer, None)
        .await
        .unwrap_err();
    let CompactError::CancelledByHook { warnings, by } = &err else {
        panic!("{err:?}")
    };
    // The fail-closed hook is the one that cancelled, its failure the reason.
    assert_eq!(
        by.as_ref().map(ToString::to_string),
        Some(format!(
            "cancelled by hook {}: timed out after 300 ms",
            slow.display()
        ))
    );
    assert_eq!(
        warnings[0].to_string(),
        format!(
            "hook {} (session_before_compact) timed out after 300 ms; the operation was cancelled (the hook is fail-closed)",
            slow.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // The default policy: reported, and the compaction goes on without it.
    let mut hooks = Hooks::new();
    hooks.register(hook(false));
    let out = run_compact(&path, &hooks, &summarizer, None).await.unwrap();
    assert_eq!(
        out.warnings,
        [format!(
            "hook {} (session_before_compact) timed out after 300 ms",
            slow.display()
        )]
    );
    assert!(!out.result.from_extension);
}

#[tokio::test]
async fn invalid_json_is_reported_and_ignored() {
    let hook = hooked(
        names::BEFORE_COMPACT,
        "garbage.sh",
        "cat > /dev/null\necho '{oops'",
    );
    let summarizer = recorder();
    let out = run_compact(&hook.path, &hook.hooks, &summarizer, None)
        .await
        .unwrap();
    assert_eq!(out.warnings.len(), 1);
    let w = &out.warnings[0];
    assert!(
        w.starts_with(&format!(
            "hook {} (session_before_compact) invalid answer: stdout is not a session_before_compact result (",
            hook.script.display()
        )),
        "{w}"
    );
    assert!(w.ends_with(r#": "{oops\n""#), "{w}");
    assert!(!out.result.from_extension);
}

#[tokio::test]
async fn tree_hooks_supply_the_summary_and_the_after_event_sees_the_saved_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = session_file(dir.path());
    let session = Journal::open(&path, &mut SequentialIds::new()).unwrap();
    let ids: Vec<String> = session
        .session()
        .entries()
        .iter()
        .map(|e| e.id.to_string())
        .collect();
    drop(session);
    let (hooks, seen) = supply_and_record(
        dir.path(),
        names::BEFORE_TREE,
        r#"{"summary": {"summary": "left the f2 work"}, "label": "checkpoint"}"#,
        names::TREE,
    );
    let request = TreeRequest::to(Some(ids[3].clone())).with_summary(true);
    let mut options = NavigateOptions::new(request, &hooks, NOW);
    options.strategy = BranchStrategy::Llm;
    options.system_prompt = "You summarize.";
    let out = navigate_file(&path, &options).await.unwrap();
    assert!(out.summary.as_ref().unwrap().from_extension);
    let event: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(event["type"], "session_tree");
    assert_eq!(event["fromExtension"], true);
    let text = std::fs::read_to_string(&path).unwrap();
    let saved: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "branch_summary")
        .unwrap();
    assert_eq!(saved["summary"], "left the f2 work");
    assert_eq!(event["summaryEntry"], saved);
    // The hook's label hangs on the summary, so the label entry is the leaf.
    assert_eq!(event["newLeafId"], last_line(&path)["id"]);
    assert_eq!(last_line(&path)["label"], "checkpoint");
}
