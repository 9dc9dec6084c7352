//! `ProcessHook` against real processes (`/bin/sh` scripts written into a
//! temporary folder): the payload on stdin, answers on stdout, exit codes,
//! timeouts that kill the whole process group, the cancellation token,
//! garbage answers, and the minimal environment.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use musepi_hooks::events::{
    BeforeTreeEvent, BeforeTreeResult, CompactingEvent, TreeEvent, TreePreparation, TreeRequest,
    names,
};
use musepi_hooks::{Hook, HookError, Hooks, ProcessHook, Reply, StderrMode};
use tokio_util::sync::CancellationToken;

mod common;
use common::{PATIENCE, process_hook, script};

/// A hook for `event` running the script `body(folder)` from a fresh
/// folder, which lives as long as the returned guard.
fn sh_hook(event: &str, body: impl FnOnce(&Path) -> String) -> (tempfile::TempDir, ProcessHook) {
    let dir = tempfile::tempdir().unwrap();
    let text = body(dir.path());
    let path = script(dir.path(), "h.sh", &text);
    let h = process_hook(event, &path);
    (dir, h)
}

/// What `h` answers to [`before_tree`].
async fn before_tree_answer(h: &ProcessHook) -> Result<Option<BeforeTreeResult>, HookError> {
    h.before_tree(&before_tree(), CancellationToken::new())
        .await
}

/// How `h` fails on [`compacting`].
async fn compacting_error(h: &ProcessHook) -> HookError {
    h.compacting(&compacting(), CancellationToken::new())
        .await
        .unwrap_err()
}

/// Shell that writes the value of `$var` into `file` whole: written aside,
/// then renamed, so the file never exists half-written.
fn write_pid(var: &str, file: &Path) -> String {
    let f = file.display();
    format!("echo {var} > '{f}.part' && mv '{f}.part' '{f}'")
}

/// The pid in `file`, waiting (up to [`PATIENCE`]) for the script to write it.
fn read_pid(file: &Path) -> u32 {
    let until = Instant::now() + PATIENCE;
    loop {
        if let Ok(text) = std::fs::read_to_string(file) {
            return text.trim().parse().unwrap();
        }
        assert!(
            Instant::now() < until,
            "{} was never written",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn before_tree() -> BeforeTreeEvent {
    BeforeTreeEvent {
        kind: names::BEFORE_TREE,
        session_file: Some("/tmp/s.jsonl".into()),
        preparation: TreePreparation {
            request: TreeRequest::to(Some("a1".into())).with_summary(true),
            old_leaf_id: Some("d4".into()),
            common_ancestor_id: Some("a1".into()),
            entries_to_summarize: vec!["b2".into(), "c3".into(), "d4".into()],
        },
    }
}

fn compacting() -> CompactingEvent {
    CompactingEvent {
        kind: names::COMPACTING,
        session_id: "sess".into(),
        messages: Vec::new(),
    }
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// Whether process `pid` is gone within [`PATIENCE`]. The processes it
/// waits for would live an hour if nobody killed them.
fn wait_dead(pid: u32) -> bool {
    let until = Instant::now() + PATIENCE;
    while Instant::now() < until {
        if dead(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[tokio::test]
async fn the_payload_arrives_on_stdin_and_the_answer_is_read_from_stdout() {
    let (dir, h) = sh_hook(names::BEFORE_TREE, |dir| {
        format!(
            "cat > '{}'\necho '{{\"summary\": {{\"summary\": \"from sh\"}}, \"label\": \"done\"}}'",
            dir.join("seen.json").display()
        )
    });
    let seen = dir.path().join("seen.json");
    let r = before_tree_answer(&h).await.unwrap().unwrap();
    assert_eq!(r.summary.unwrap().summary, "from sh");
    assert_eq!(r.label.as_deref(), Some("done"));
    let text = std::fs::read_to_string(&seen).unwrap();
    assert!(
        text.ends_with("}\n") && text.lines().count() == 1,
        "one line: {text}"
    );
    let payload: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(payload["type"], "session_before_tree");
    assert_eq!(
        payload["preparation"]["entriesToSummarize"],
        serde_json::json!(["b2", "c3", "d4"])
    );
}

#[test]
fn the_tree_preparation_is_one_flat_object_in_the_order_hooks_read() {
    let mut event = before_tree();
    event.preparation.request = event
        .preparation
        .request
        .with_instructions(Some("keep the plan".into()), true)
        .with_label(Some("here".into()));
    assert_eq!(
        serde_json::to_string(&event).unwrap(),
        concat!(
            r#"{"type":"session_before_tree","sessionFile":"/tmp/s.jsonl","preparation":{"#,
            r#""targetId":"a1","oldLeafId":"d4","commonAncestorId":"a1","#,
            r#""entriesToSummarize":["b2","c3","d4"],"userWantsSummary":true,"#,
            r#""customInstructions":"keep the plan","replaceInstructions":true,"label":"here"}}"#,
        )
    );
}

#[tokio::test]
async fn empty_stdout_is_no_answer() {
    let (_dir, h) = sh_hook(names::BEFORE_TREE, |_| "cat > /dev/null".into());
    assert_eq!(before_tree_answer(&h).await.unwrap(), None);
}

#[tokio::test]
async fn exit_2_cancels_and_stderr_is_the_reason() {
    let (_dir, h) = sh_hook(names::BEFORE_TREE, |_| {
        "echo 'uncommitted work: commit first' >&2\nexit 2".into()
    });
    let r = before_tree_answer(&h).await.unwrap().unwrap();
    assert!(r.cancel);
    let run = h.run(b"{}", None, &CancellationToken::new()).await.unwrap();
    assert_eq!(run.status, 2);
    assert_eq!(
        h.interpret(&run).unwrap(),
        Reply::Cancel {
            reason: "uncommitted work: commit first".into()
        }
    );
}

#[tokio::test]
async fn exit_2_is_a_failure_for_events_that_cannot_cancel() {
    let (_dir, h) = sh_hook(names::COMPACTING, |_| "echo no >&2\nexit 2".into());
    assert_eq!(
        compacting_error(&h).await,
        HookError::Exit {
            status: 2,
            stderr: "no".into()
        }
    );
}

#[tokio::test]
async fn other_exit_statuses_fail_with_the_end_of_stderr() {
    let (_dir, h) = sh_hook(names::BEFORE_TREE, |_| {
        "i=0; while [ $i -lt 30 ]; do echo \"line $i\" >&2; i=$((i+1)); done\necho '{\"cancel\": true}'\nexit 3".into()
    });
    let err = before_tree_answer(&h).await.unwrap_err();
    let HookError::Exit { status, stderr } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*status, 3);
    assert!(stderr.starts_with("line 20\n"), "{stderr}");
    assert!(stderr.ends_with("line 29"), "{stderr}");
    assert!(
        err.to_string().starts_with("exited with status 3: line 20"),
        "{err}"
    );
}

#[tokio::test]
async fn garbage_on_stdout_is_an_invalid_answer_with_a_quoted_prefix() {
    let (_dir, h) = sh_hook(names::COMPACTING, |_| "echo 'Hello, I am not JSON'".into());
    let err = compacting_error(&h).await;
    let HookError::InvalidAnswer(text) = &err else {
        panic!("{err:?}")
    };
    assert!(
        text.starts_with("stdout is not a session.compacting result ("),
        "{text}"
    );
    assert!(text.ends_with(r#": "Hello, I am not JSON\n""#), "{text}");
}

#[tokio::test]
async fn a_well_formed_answer_of_the_wrong_shape_is_invalid_too() {
    let (_dir, h) = sh_hook(names::COMPACTING, |_| {
        r#"echo '{"context": "not a list"}'"#.into()
    });
    let err = compacting_error(&h).await;
    assert!(matches!(err, HookError::InvalidAnswer(_)), "{err:?}");
}

#[tokio::test]
async fn a_hook_past_its_timeout_is_killed_with_its_children() {
    let (dir, h) = sh_hook(names::COMPACTING, |dir| {
        format!(
            "sleep 3600 &\n{}\nwait",
            write_pid("$!", &dir.join("child.pid"))
        )
    });
    let pidfile = dir.path().join("child.pid");
    // On a busy machine the shell may be killed before it started its
    // child: then the hook runs again with twice the time.
    let mut ms = 500;
    let child = loop {
        let err = compacting_error(&h.clone().timeout(Duration::from_millis(ms))).await;
        assert_eq!(err, HookError::Timeout { ms });
        assert_eq!(err.to_string(), format!("timed out after {ms} ms"));
        if let Ok(text) = std::fs::read_to_string(&pidfile) {
            break text.trim().parse::<u32>().unwrap();
        }
        ms *= 2;
    };
    assert!(wait_dead(child), "the hook's child {child} survived");
}

#[tokio::test]
async fn a_background_child_holding_stdout_open_is_killed_at_the_timeout() {
    let (_dir, h) = sh_hook(names::TREE, |_| "sleep 30 &\nexit 0".into());
    let h = h.timeout(Duration::from_millis(300));
    let event = TreeEvent {
        kind: names::TREE,
        session_file: None,
        new_leaf_id: None,
        old_leaf_id: None,
        summary_entry: None,
        from_extension: None,
    };
    let err = h.tree(&event, CancellationToken::new()).await.unwrap_err();
    assert_eq!(err, HookError::Timeout { ms: 300 });
}

#[tokio::test]
async fn the_cancellation_token_kills_the_hook() {
    let (dir, h) = sh_hook(names::COMPACTING, |dir| {
        format!("{}\nsleep 3600", write_pid("$$", &dir.join("hook.pid")))
    });
    let pidfile = dir.path().join("hook.pid");
    let cancel = CancellationToken::new();
    let fire = cancel.clone();
    // Cancels once the hook has written its pid whole (it writes aside and
    // renames), so the pid read below is complete.
    let pid = tokio::task::spawn_blocking(move || {
        let pid = read_pid(&pidfile);
        fire.cancel();
        pid
    });
    // Not a timeout: the hook has far longer than the test waits.
    let err = h.compacting(&compacting(), cancel).await.unwrap_err();
    assert!(matches!(err, HookError::Failed(_)), "{err:?}");
    let pid = pid.await.unwrap();
    assert!(wait_dead(pid), "the hook {pid} survived");
}

/// Where the re-executed test binary writes what the hook saw (see below).
const PROBE_OUT: &str = "MUSEPI_HOOKS_TEST_PROBE_OUT";

/// Run by [`the_environment_is_minimal_and_secrets_stay_out_unless_named`]
/// in a child copy of this test binary whose environment holds a secret and
/// a named variable (the test cannot change its own environment: tests run
/// in parallel and `set_var` is unsafe). Run alone, it has nothing to do.
#[tokio::test]
async fn env_probe_helper() {
    let Some(out) = std::env::var_os(PROBE_OUT) else {
        return;
    };
    let out = PathBuf::from(out);
    let dir = out.parent().unwrap();
    let path = script(dir, "env.sh", &format!("env > '{}'", out.display()));
    let h = process_hook(names::COMPACTING, &path)
        .pass_env(["MUSEPI_TEST_NAMED".to_owned(), "PATH".to_owned()])
        .session_file(Some("/tmp/s.jsonl".into()));
    h.compacting(&compacting(), CancellationToken::new())
        .await
        .unwrap();
}

#[test]
fn the_environment_is_minimal_and_secrets_stay_out_unless_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("env.txt");
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "env_probe_helper", "--test-threads=1", "--quiet"])
        .env(PROBE_OUT, &out)
        .env("OPENAI_API_KEY", "sk-live-secret")
        .env("MUSEPI_TEST_NAMED", "visible")
        .env("LANG", "C.UTF-8")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("sk-live-secret"), "{text}");
    assert!(!text.contains(PROBE_OUT), "{text}");
    assert!(text.contains("MUSEPI_TEST_NAMED=visible\n"), "{text}");
    assert!(text.contains("MUSEPI_EVENT=session.compacting\n"), "{text}");
    assert!(
        text.contains("MUSEPI_SESSION_FILE=/tmp/s.jsonl\n"),
        "{text}"
    );
    assert!(text.contains("LANG=C.UTF-8\n"), "{text}");
    assert_eq!(
        text.matches("\nPATH=").count() + usize::from(text.starts_with("PATH=")),
        1
    );
    // The shell adds PWD, SHLVL and `_` itself; everything else came from us.
    let allowed = [
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "TMPDIR",
        "MUSEPI_EVENT",
        "MUSEPI_SESSION_FILE",
        "MUSEPI_TEST_NAMED",
        "PWD",
        "OLDPWD",
        "SHLVL",
        "_",
    ];
    for line in text.lines() {
        let name = line.split_once('=').map_or(line, |(k, _)| k);
        assert!(
            allowed.contains(&name),
            "unexpected variable {name} in\n{text}"
        );
    }
}

#[tokio::test]
async fn a_program_that_does_not_exist_cannot_start() {
    let h = ProcessHook::new(names::TREE, vec!["/nonexistent/hook".into()]).unwrap();
    let err = h
        .run(b"{}", None, &CancellationToken::new())
        .await
        .unwrap_err();
    let HookError::Spawn(text) = &err else {
        panic!("{err:?}")
    };
    assert!(text.starts_with("/nonexistent/hook: "), "{text}");
}

#[test]
fn configuration_errors_name_the_event() {
    assert_eq!(
        ProcessHook::new("session_before_compaction", vec!["x".into()])
            .unwrap_err()
            .to_string(),
        "unknown hook event `session_before_compaction`: expected one of session_before_compact, session.compacting, session_compact, session_before_tree, session_tree"
    );
    assert_eq!(
        ProcessHook::new(names::TREE, Vec::new())
            .unwrap_err()
            .to_string(),
        "the hook command for `session_tree` is empty: give the program and its arguments"
    );
}

#[tokio::test]
async fn stderr_is_forwarded_line_by_line_with_the_hook_name() {
    let (_dir, h) = sh_hook(names::COMPACTING, |_| {
        "echo one >&2\nprintf 'two' >&2".into()
    });
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let h = h
        .named("mine")
        .stderr(StderrMode::Callback(Arc::new(move |name, line| {
            sink.lock().unwrap().push(format!("{name}|{line}"));
        })));
    h.compacting(&compacting(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(*lines.lock().unwrap(), ["mine|one", "mine|two"]);
}

#[tokio::test]
async fn a_fail_closed_process_hook_cancels_through_the_registry() {
    let (_dir, h) = sh_hook(names::BEFORE_TREE, |_| "exit 7".into());
    let mut hooks = Hooks::new();
    hooks.register(Arc::new(h.with_fail_closed(true)));
    assert!(hooks.has(names::BEFORE_TREE));
    assert!(!hooks.has(names::TREE));
    let d = hooks
        .before_tree(&before_tree(), &CancellationToken::new())
        .await;
    assert!(d.failed_closed);
    assert_eq!(d.warnings.len(), 1);
    assert!(
        d.warnings[0].to_string().ends_with(
            "(session_before_tree) exited with status 7; the operation was cancelled (the hook is fail-closed)"
        ),
        "{}",
        d.warnings[0]
    );
}

#[tokio::test]
async fn more_than_the_stdout_cap_is_an_invalid_answer() {
    // 5 MiB of spaces: valid JSON whitespace, but too much.
    let (_dir, h) = sh_hook(names::COMPACTING, |_| {
        "head -c 5242880 /dev/zero | tr '\\0' ' '".into()
    });
    assert_eq!(
        compacting_error(&h).await,
        HookError::InvalidAnswer("more than 4 MiB on stdout".into())
    );
}

#[tokio::test]
async fn nothing_starts_after_the_cancellation_token_fired() {
    let (dir, h) = sh_hook(names::TREE, |dir| {
        format!("touch '{}'", dir.join("ran").display())
    });
    let marker = dir.path().join("ran");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = h.run(b"{}\n", None, &cancel).await.unwrap_err();
    assert_eq!(err, HookError::Failed("cancelled before it started".into()));
    assert!(!marker.exists());
}
