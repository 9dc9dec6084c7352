//! Hook commands through the `musepi` binary: real hook processes (shell
//! and Python scripts written into a temporary folder) configured with
//! `--settings FILE`, against session files the tests write, with a
//! loopback chat-completions server where a model request must be seen.
//!
//! The cases of issue 8: a cancel leaves the file byte-identical; a supplied
//! compaction is stored with `fromExtension: true` and kept out of later
//! file tracking; context lines reach `<additional-context>`; a prompt
//! override replaces the base prompt and keeps the custom instructions; a
//! hook past its timeout is killed and reported and the file is unchanged;
//! garbage on stdout is reported; the after-events see the saved entry.
//! Plus `musepi hooks test`, the examples under examples/hooks, and the
//! payloads docs/hooks.md shows.

#![allow(clippy::unwrap_used)]

mod support;

use support::{
    HOOK_IN_TIME_MS, Model, assert_escaped, assert_has, assert_stderr_has, chat, code,
    hook_settings as settings, json_file, json_out, last_line, p, recording_hook, script, stderr,
    stdout, write_file,
};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

// ---------------------------------------------------------------- helpers

fn musepi(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_musepi"));
    cmd.args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// A v3 session: `turns` read turns (user, assistant reading
/// `src/f{n}.rs`, a big tool result), then a closing answer.
fn session(dir: &Path, turns: u32) -> PathBuf {
    let path = dir.join("s.jsonl");
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": "hooks-cli", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/repo"})
            .to_string(),
    ];
    let mut last = None;
    push_turns(&mut lines, &mut last, 0, turns, "f");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    support::settle(&path);
    path
}

/// Appends `turns` more read turns (`src/{stem}{n}.rs`) after the file's last line.
fn append_turns(path: &Path, turns: u32, stem: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let start = text.lines().count() as u32 + 100;
    let mut lines = Vec::new();
    let mut parent = last["id"].as_str().map(str::to_owned);
    push_turns(&mut lines, &mut parent, start, turns, stem);
    std::fs::write(path, text + &lines.join("\n") + "\n").unwrap();
    support::settle(path);
}

fn push_turns(
    lines: &mut Vec<String>,
    last: &mut Option<String>,
    start: u32,
    turns: u32,
    stem: &str,
) {
    let mut n = start;
    let mut entry = |lines: &mut Vec<String>, message: Value| {
        n += 1;
        let id = format!("{n:08x}");
        lines.push(
            json!({"type": "message", "id": id, "parentId": last, "timestamp": "2025-01-01T00:00:01.000Z", "message": message})
                .to_string(),
        );
        *last = Some(id);
    };
    for t in 0..turns {
        entry(
            lines,
            json!({"role": "user", "content": format!("task {stem}{t}"), "timestamp": 1}),
        );
        entry(
            lines,
            json!({"role": "assistant", "content": [{"type": "toolCall", "id": format!("c{stem}{t}"), "name": "read", "arguments": {"path": format!("src/{stem}{t}.rs")}}],
                   "provider": "p", "model": "m", "stopReason": "toolUse", "timestamp": 2}),
        );
        entry(
            lines,
            json!({"role": "toolResult", "toolCallId": format!("c{stem}{t}"), "toolName": "read",
                   "content": [{"type": "text", "text": "x".repeat(8_000)}], "isError": false, "timestamp": 3}),
        );
    }
    entry(
        lines,
        json!({"role": "assistant", "content": [{"type": "text", "text": "done"}], "provider": "p", "model": "m", "stopReason": "stop", "timestamp": 4}),
    );
}

/// A script `name` running `body` and a settings file that runs it on
/// `event`: the script's path and the settings'.
fn one_hook(dir: &Path, event: &str, name: &str, body: &str) -> (PathBuf, PathBuf) {
    let path = script(dir, name, body);
    let s = settings(dir, &json!({ event: [{"command": [p(&path)]}] }));
    (path, s)
}

/// A temporary folder with a session of `turns` turns and a settings file
/// with one hook (see [`one_hook`]): the folder, the session, the hook's
/// script and the settings.
fn with_hook(
    turns: u32,
    event: &str,
    name: &str,
    body: &str,
) -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path(), turns);
    let (hook, settings) = one_hook(dir.path(), event, name, body);
    (dir, file, hook, settings)
}

/// `musepi compact FILE --settings S --strategy snapcompact --keep-recent 2500 …`.
fn compact(dir: &Path, file: &Path, settings: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "compact",
        p(file),
        "--settings",
        p(settings),
        "--keep-recent",
        "2500",
        "--no-prune",
        "--now",
        "2025-05-01T10:00:00.000Z",
        "--deterministic-ids",
    ];
    if !extra.contains(&"--strategy") {
        args.extend(["--strategy", "snapcompact"]);
    }
    args.extend(extra);
    musepi(dir, &args, &[])
}

/// `musepi hooks test EVENT --config CONFIG ARGS…` in `dir`, with `env` set.
fn hooks_test(
    dir: &Path,
    event: &str,
    config: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut all = vec!["hooks", "test", event, "--config", p(config)];
    all.extend(args);
    musepi(dir, &all, env)
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet) within
/// two minutes. The processes it waits for would live an hour if nobody
/// killed them.
fn dead(pid: u32) -> bool {
    let until = Instant::now() + Duration::from_mins(2);
    while Instant::now() < until {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) => {
                let state = stat
                    .rsplit(')')
                    .next()
                    .and_then(|r| r.split_whitespace().next());
                if matches!(state, Some("Z" | "X")) {
                    return true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

// ---------------------------------------------------------------- a loopback model

/// The text of the last user message of a chat-completions body.
fn last_user_text(body: &Value) -> String {
    let message = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap();
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => panic!("content {other}"),
    }
}

// ---------------------------------------------------------------- compact

#[test]
fn a_cancel_leaves_the_file_byte_identical() {
    let (dir, file, veto, s) = with_hook(
        3,
        "session_before_compact",
        "veto.sh",
        "echo 'hold on: tests are red' >&2\nexit 2",
    );
    let before = std::fs::read(&file).unwrap();
    let o = compact(dir.path(), &file, &s, &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_stderr_has(&o, &format!("hook {}: hold on: tests are red", p(&veto)));
    assert_stderr_has(&o, "compaction cancelled by hook ");
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[test]
fn a_supplied_compaction_is_from_extension_and_stays_out_of_later_file_tracking() {
    let (dir, file, _, s) = with_hook(
        3,
        "session_before_compact",
        "supply.sh",
        r#"cat > /dev/null
echo '{"compaction": {"summary": "summary by a hook", "details": {"readFiles": ["hook/read.rs"], "modifiedFiles": ["hook/changed.rs"]}}}'"#,
    );
    let o = compact(dir.path(), &file, &s, &["--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json_out(&o);
    assert_eq!(doc["fromExtension"], true);
    let saved = last_line(&file);
    assert_eq!(saved["type"], "compaction");
    assert_eq!(saved["summary"], "summary by a hook");
    assert_eq!(saved["fromExtension"], true);
    assert_eq!(saved["details"]["readFiles"], json!(["hook/read.rs"]));
    // A later compaction without the hook: its file lists come from its own
    // messages, not from the extension's details.
    append_turns(&file, 3, "g");
    let none = settings(dir.path(), &json!({}));
    let o = compact(dir.path(), &file, &none, &["--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let later = last_line(&file);
    assert_eq!(later["type"], "compaction");
    assert_ne!(later["fromExtension"], true);
    let files: Vec<String> = ["readFiles", "modifiedFiles"]
        .iter()
        .flat_map(|k| later["details"][*k].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    assert!(files.iter().any(|f| f.starts_with("src/")), "{later}");
    assert!(files.iter().all(|f| !f.starts_with("hook/")), "{files:?}");
    assert!(!later["summary"].as_str().unwrap().contains("hook/read.rs"));
}

#[test]
fn context_lines_and_a_prompt_override_reach_the_model_with_the_custom_instructions() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path(), 3);
    let model = Model::start(chat("## Goal\n- summarized", "stop"));
    let (_, s) = one_hook(
        dir.path(),
        "session.compacting",
        "steer.sh",
        r#"cat > /dev/null
echo '{"prompt": "LIST ONLY THE FILES YOU SAW", "context": ["ticket ABC-1", "branch fix/eol"]}'"#,
    );
    let flags = model.flags();
    let mut extra: Vec<&str> = vec![
        "--strategy",
        "llm",
        "--instructions",
        "focus on tests",
        "--json",
    ];
    extra.extend(flags.iter().map(String::as_str));
    let o = compact(dir.path(), &file, &s, &extra);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let requests = model.requests();
    assert!(!requests.is_empty());
    let prompt = last_user_text(&requests[0]);
    assert!(
        prompt.ends_with(
            "<additional-context>\n- ticket ABC-1\n- branch fix/eol\n</additional-context>\n\nLIST ONLY THE FILES YOU SAW\n\nAdditional focus: focus on tests"
        ),
        "{prompt}"
    );
    assert!(
        !prompt.contains("## Goal"),
        "the base prompt is replaced: {prompt}"
    );
    assert_eq!(last_line(&file)["type"], "compaction");
}

#[test]
fn a_hook_past_its_timeout_is_killed_reported_and_the_file_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path(), 3);
    let before = std::fs::read(&file).unwrap();
    let pidfile = dir.path().join("child.pid");
    let slow = script(
        dir.path(),
        "slow.sh",
        // Written aside and renamed: the file never holds half a pid.
        &format!(
            "sleep 3600 &\necho $! > '{f}.part' && mv '{f}.part' '{f}'\nwait",
            f = p(&pidfile)
        ),
    );
    // On a busy machine the shell may be killed before it started its
    // child: then the hook runs again with twice the time.
    let mut ms = 500;
    let child = loop {
        let s = settings(
            dir.path(),
            &json!({"session_before_compact": [{"command": [p(&slow)], "timeoutMs": ms, "onFailure": "cancel"}]}),
        );
        let o = compact(dir.path(), &file, &s, &[]);
        assert_eq!(code(&o), 1, "{}", stderr(&o));
        assert_stderr_has(
            &o,
            &format!(
                "hook {} (session_before_compact) timed out after {ms} ms",
                p(&slow)
            ),
        );
        assert_stderr_has(&o, "compaction cancelled by hook ");
        assert_eq!(std::fs::read(&file).unwrap(), before);
        if let Ok(text) = std::fs::read_to_string(&pidfile) {
            break text.trim().parse::<u32>().unwrap();
        }
        ms *= 2;
    };
    assert!(dead(child), "the hook's child {child} outlived the timeout");
    // With the default policy the timeout is reported and the compaction goes on.
    let s = settings(
        dir.path(),
        &json!({"session_before_compact": [{"command": [p(&slow)], "timeoutMs": 300}]}),
    );
    let o = compact(dir.path(), &file, &s, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_stderr_has(&o, "timed out after 300 ms");
    assert_eq!(last_line(&file)["type"], "compaction");
}

#[test]
fn garbage_on_stdout_is_reported_and_ignored() {
    let (dir, file, garbage, s) = with_hook(
        3,
        "session_before_compact",
        "garbage.sh",
        "cat > /dev/null\necho 'Compaction looks fine to me!'",
    );
    let o = compact(dir.path(), &file, &s, &["--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_stderr_has(
        &o,
        &format!(
            "musepi: warning: hook {} (session_before_compact) invalid answer: stdout is not a session_before_compact result (",
            p(&garbage)
        ),
    );
    assert_stderr_has(&o, r#": "Compaction looks fine to me!\n""#);
    let doc = json_out(&o);
    assert_eq!(doc["fromExtension"], false);
    assert_eq!(doc["warnings"].as_array().unwrap().len(), 1);
}

#[test]
fn the_after_compact_event_sees_the_saved_entry() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path(), 3);
    let seen = dir.path().join("after.json");
    let env_seen = dir.path().join("after.env");
    let (_, s) = one_hook(
        dir.path(),
        "session_compact",
        "after.sh",
        &format!("cat > '{}'\nenv > '{}'", p(&seen), p(&env_seen)),
    );
    let o = compact(dir.path(), &file, &s, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let event: Value = json_file(&seen);
    assert_eq!(event["type"], "session_compact");
    assert_eq!(event["compactionEntry"], last_line(&file));
    assert_eq!(event["fromExtension"], false);
    let env = std::fs::read_to_string(&env_seen).unwrap();
    assert_has(&env, "MUSEPI_EVENT=session_compact\n");
    assert!(
        env.contains(&format!("MUSEPI_SESSION_FILE={}", p(&file))),
        "{env}"
    );
}

#[test]
fn api_keys_reach_a_hook_only_when_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path(), 3);
    let dump = dir.path().join("env.txt");
    let hook = script(dir.path(), "env.sh", &format!("env > '{}'", p(&dump)));
    let s = settings(
        dir.path(),
        &json!({"session_before_compact": [{"command": [p(&hook)], "env": ["TICKET_TOKEN"]}]}),
    );
    let o = musepi(
        dir.path(),
        &[
            "compact",
            p(&file),
            "--settings",
            p(&s),
            "--strategy",
            "snapcompact",
            "--keep-recent",
            "2500",
        ],
        &[
            ("OPENAI_API_KEY", "sk-openai-secret"),
            ("ANTHROPIC_API_KEY", "sk-ant-secret"),
            ("TICKET_TOKEN", "named-and-passed"),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let env = std::fs::read_to_string(&dump).unwrap();
    assert!(!env.contains("secret"), "{env}");
    assert_has(&env, "TICKET_TOKEN=named-and-passed\n");
    assert_has(&env, "MUSEPI_EVENT=session_before_compact\n");
}

#[test]
fn unusable_hook_settings_are_bad_input_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path(), 3);
    let before = std::fs::read(&file).unwrap();
    for (hooks, needle) in [
        (
            json!({"session_before_compaction": [{"command": ["x"]}]}),
            "hooks.session_before_compaction: unknown event",
        ),
        (
            json!({"session_compact": [{"command": []}]}),
            "hooks.session_compact[0].command is empty",
        ),
        (
            json!({"session_compact": [{"command": ["x"], "onFailure": "abort"}]}),
            "hooks.session_compact[0].onFailure is `abort`",
        ),
    ] {
        let s = settings(dir.path(), &hooks);
        let o = compact(dir.path(), &file, &s, &[]);
        assert_eq!(code(&o), 2, "{hooks}: {}", stderr(&o));
        assert_stderr_has(&o, needle);
        assert_eq!(std::fs::read(&file).unwrap(), before);
    }
}

// ---------------------------------------------------------------- branch

#[test]
fn tree_hooks_cancel_navigation_or_supply_the_summary_and_the_after_event_sees_it() {
    let (dir, file, _, s) = with_hook(2, "session_before_tree", "veto.sh", "exit 2");
    let before = std::fs::read(&file).unwrap();
    let args = [
        "branch",
        p(&file),
        "--to",
        "00000002",
        "--summarize",
        "--strategy",
        "snapcompact",
        "--settings",
    ];
    let mut with = args.to_vec();
    with.push(p(&s));
    let o = musepi(dir.path(), &with, &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(std::fs::read(&file).unwrap(), before);

    let supply = script(
        dir.path(),
        "supply.sh",
        r#"cat > /dev/null
echo '{"summary": {"summary": "left the f1 work", "details": {"by": "hook"}}}'"#,
    );
    let seen = dir.path().join("tree.json");
    let after = recording_hook(dir.path(), "after.sh", &seen, "");
    let s = settings(
        dir.path(),
        &json!({"session_before_tree": [{"command": [p(&supply)]}], "session_tree": [{"command": [p(&after)]}]}),
    );
    let mut with = args.to_vec();
    with.extend([p(&s), "--json"]);
    let o = musepi(dir.path(), &with, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_out(&o)["fromExtension"], true);
    let saved = last_line(&file);
    assert_eq!(saved["type"], "branch_summary");
    assert_eq!(saved["summary"], "left the f1 work");
    assert_eq!(saved["fromExtension"], true);
    let event: Value = json_file(&seen);
    assert_eq!(event["type"], "session_tree");
    assert_eq!(event["summaryEntry"], saved);
    assert_eq!(event["newLeafId"], saved["id"]);
    assert_eq!(event["fromExtension"], true);
}

// ---------------------------------------------------------------- musepi hooks test

#[test]
fn hooks_test_runs_each_hook_with_the_sample_and_reports_what_came_back() {
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("seen.json");
    let good = recording_hook(
        dir.path(),
        "good.sh",
        &seen,
        r#"echo '{"context": ["from good"]}'"#,
    );
    let quiet = script(dir.path(), "quiet.sh", "cat > /dev/null");
    let bad = script(dir.path(), "bad.sh", "echo 'not json'");
    let hook_config = json!({"hooks": {"session.compacting": [
        {"command": [p(&good)]}, {"command": [p(&quiet)]}, {"command": [p(&bad)], "onFailure": "cancel"}
    ]}});
    let config = write_file(dir.path(), "hooks.json", hook_config.to_string());
    let run = |args: &[&str]| hooks_test(dir.path(), "session.compacting", &config, args, &[]);
    let o = run(&["--json"]);
    assert_eq!(code(&o), 1, "a failed hook makes exit 1: {}", stderr(&o));
    let doc = json_out(&o);
    assert_eq!(doc["event"], "session.compacting");
    assert_eq!(doc["payload"]["type"], "session.compacting");
    let hooks = doc["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 3);
    assert_eq!(hooks[0]["outcome"], "answer");
    assert_eq!(hooks[0]["exitCode"], 0);
    assert_eq!(hooks[0]["answer"]["context"], json!(["from good"]));
    assert!(hooks[0]["durationMs"].is_u64());
    assert_eq!(hooks[1]["outcome"], "empty");
    assert_eq!(hooks[2]["outcome"], "failed");
    assert_eq!(hooks[2]["failClosed"], true);
    assert!(
        hooks[2]["error"]
            .as_str()
            .unwrap()
            .starts_with("invalid answer: "),
        "{}",
        hooks[2]
    );
    // The hook read exactly the payload that was printed.
    let read: Value = json_file(&seen);
    assert_eq!(read, doc["payload"]);
    // Text output names each hook and its verdict.
    let text = stdout(&run(&[]));
    assert!(
        text.starts_with("session.compacting: 3 hooks run with the sample payload\n"),
        "{text}"
    );
    assert_has(&text, "ok, answered");
    assert_has(&text, "ok, no answer");
    assert_has(&text, "failed");
}

#[test]
fn hooks_test_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let ok = script(dir.path(), "ok.sh", "exit 0");
    let cancel = script(dir.path(), "cancel.sh", "echo 'not today' >&2\nexit 2");
    let s = settings(
        dir.path(),
        &json!({"session_tree": [{"command": [p(&ok)]}], "session_before_tree": [{"command": [p(&cancel)]}]}),
    );
    // --settings feeds the discovered settings when --config is not given.
    let o = musepi(
        dir.path(),
        &["hooks", "test", "session_tree", "--settings", p(&s)],
        &[],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = hooks_test(dir.path(), "session_before_tree", &s, &["--json"], &[]);
    assert_eq!(code(&o), 1);
    let doc = json_out(&o);
    assert_eq!(doc["hooks"][0]["outcome"], "cancel");
    assert_eq!(doc["hooks"][0]["reason"], "not today");
    assert_eq!(doc["hooks"][0]["exitCode"], 2);
    // The human report escapes what the hook wrote.
    let o = hooks_test(dir.path(), "session_before_tree", &s, &[], &[]);
    assert_eq!(code(&o), 1);
    assert_has(&stdout(&o), "   reason: not today\n");
    let sly = script(dir.path(), "sly.sh", "printf 'no\\033[2J\\rpe' >&2\nexit 2");
    let sly_settings = settings(
        dir.path(),
        &json!({"session_before_tree": [{"command": [p(&sly)]}]}),
    );
    let o = hooks_test(dir.path(), "session_before_tree", &sly_settings, &[], &[]);
    assert_eq!(code(&o), 1);
    assert_escaped(&stdout(&o), &[r"   reason: no\u001b[2J\rpe"]);
    let o = hooks_test(dir.path(), "session_compact", &s, &[], &[]);
    assert_eq!(code(&o), 0);
    let text = stdout(&o);
    assert!(
        text.starts_with("no hooks configured for session_compact"),
        "{text}"
    );
    let o = musepi(dir.path(), &["hooks", "test", "session.compact"], &[]);
    assert_eq!(code(&o), 2);
    assert_stderr_has(&o, "unknown hook event `session.compact`");
}

/// The report for people escapes what came from the settings file (a
/// hook's name, here a command that cannot start) and what a hook
/// answered beyond what JSON escapes (C1 controls, bidirectional
/// controls); `--json` carries both exactly.
#[test]
fn hooks_test_escapes_hook_names_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let answers = script(
        dir.path(),
        "answers.sh",
        "cat > /dev/null\nprintf '{\"context\": [\"a\\342\\200\\256b\\302\\205c\"]}'",
    );
    let missing = "no-such-hook\u{1b}]0;owned\u{7}\u{202e}";
    let config = write_file(
        dir.path(),
        "hooks.json",
        json!({"hooks": {"session.compacting": [
            {"command": [p(&answers)]}, {"command": [missing]}
        ]}})
        .to_string(),
    );
    let o = hooks_test(dir.path(), "session.compacting", &config, &[], &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let text = stdout(&o);
    assert_escaped(
        &text,
        &[
            r"2. no-such-hook\u001b]0;owned\u0007\u202e  no exit status",
            r#""a\u202eb\u0085c""#,
        ],
    );
    let doc = json_out(&hooks_test(
        dir.path(),
        "session.compacting",
        &config,
        &["--json"],
        &[],
    ));
    assert_eq!(doc["hooks"][0]["answer"]["context"][0], "a\u{202e}b\u{85}c");
    assert_eq!(doc["hooks"][1]["hook"], missing);
}

// ---------------------------------------------------------------- docs/hooks.md

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The JSON block after each `<!-- KIND: EVENT -->` marker of docs/hooks.md.
fn doc_blocks(kind: &str) -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(repo().join("docs/hooks.md")).unwrap();
    let marker = format!("<!-- {kind}: ");
    let mut out = Vec::new();
    for (at, _) in text.match_indices(&marker) {
        let rest = &text[at + marker.len()..];
        let event = rest[..rest.find(" -->").unwrap()].to_owned();
        let body = &rest[rest.find("```json\n").unwrap() + 8..];
        let body = &body[..body.find("\n```").unwrap()];
        let value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{event}: {e}\n{body}"));
        out.push((event, value));
    }
    out
}

/// Numbers compared as numbers (`1.0` equals `1`).
fn numbers_as_f64(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(a) => Value::Array(a.iter().map(numbers_as_f64).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), numbers_as_f64(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[test]
fn the_docs_show_the_payload_of_every_event_as_hooks_test_sends_it() {
    let dir = tempfile::tempdir().unwrap();
    let empty = settings(dir.path(), &json!({}));
    let blocks = doc_blocks("payload");
    let events: Vec<&str> = blocks.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(
        events,
        [
            "session_before_compact",
            "session.compacting",
            "session_compact",
            "session_before_tree",
            "session_tree"
        ]
    );
    for (event, shown) in &blocks {
        let o = hooks_test(dir.path(), event, &empty, &["--json"], &[]);
        assert_eq!(code(&o), 0);
        assert_eq!(
            numbers_as_f64(&json_out(&o)["payload"]),
            numbers_as_f64(shown),
            "{event}"
        );
    }
}

#[test]
fn every_result_the_docs_show_is_understood() {
    use musepi_hooks::events::{BeforeCompactResult, BeforeTreeResult, CompactingResult};
    let blocks = doc_blocks("result");
    assert_eq!(blocks.len(), 5);
    for (event, value) in blocks {
        let understood = match event.as_str() {
            "session_before_compact" => {
                serde_json::from_value::<BeforeCompactResult>(value.clone()).map(|r| !r.is_empty())
            }
            "session.compacting" => {
                serde_json::from_value::<CompactingResult>(value.clone()).map(|r| !r.is_empty())
            }
            "session_before_tree" => {
                serde_json::from_value::<BeforeTreeResult>(value.clone()).map(|r| !r.is_empty())
            }
            other => panic!("no results for {other}"),
        };
        assert!(understood.unwrap(), "{event}: {value}");
    }
}

// ---------------------------------------------------------------- examples/hooks

/// A settings file running the examples from the repository, for `dir`.
fn example_settings(dir: &Path) -> PathBuf {
    let examples = repo().join("examples/hooks");
    settings(
        dir,
        &json!({
            "session_before_compact": [{"command": [p(&examples.join("hold-compaction.sh"))], "timeoutMs": HOOK_IN_TIME_MS}],
            "session.compacting": [{
                "command": ["python3", p(&examples.join("git-context.py"))],
                "timeoutMs": HOOK_IN_TIME_MS,
                "env": ["GIT_CEILING_DIRECTORIES"],
            }],
        }),
    )
}

#[test]
fn the_shell_example_holds_compaction_while_the_marker_exists() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path(), 3);
    let s = example_settings(dir.path());
    std::fs::create_dir_all(dir.path().join(".musepi")).unwrap();
    std::fs::write(dir.path().join(".musepi/wip"), "").unwrap();
    let before = std::fs::read(&file).unwrap();
    let o = compact(dir.path(), &file, &s, &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_stderr_has(&o, "work in progress (.musepi/wip exists)");
    assert_eq!(std::fs::read(&file).unwrap(), before);
    // Through `hooks test` too: the sample is a manual compaction.
    let o = hooks_test(dir.path(), "session_before_compact", &s, &["--json"], &[]);
    assert_eq!(json_out(&o)["hooks"][0]["outcome"], "cancel");
    // An overflow compaction is never held.
    let mut run = Command::new(repo().join("examples/hooks/hold-compaction.sh"))
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        run.stdin.as_mut().unwrap(),
        br#"{"type":"session_before_compact","reason":"overflow"}"#,
    )
    .unwrap();
    drop(run.stdin.take());
    assert!(run.wait().unwrap().success());
    // Without the marker the compaction goes ahead.
    std::fs::remove_file(dir.path().join(".musepi/wip")).unwrap();
    let o = compact(dir.path(), &file, &s, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(last_line(&file)["type"], "compaction");
}

fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn the_python_example_adds_git_status_to_the_summary_request() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "fix/eol"]);
    std::fs::write(dir.path().join("README.md"), "hello\n").unwrap();
    git(dir.path(), &["add", "README.md"]);
    git(dir.path(), &["commit", "-q", "-m", "first commit"]);
    std::fs::write(dir.path().join("README.md"), "hello again\n").unwrap();
    let file = session(dir.path(), 3);
    let s = example_settings(dir.path());
    let model = Model::start(chat("## Goal\n- summarized", "stop"));
    let flags = model.flags();
    let mut extra: Vec<&str> = vec!["--strategy", "llm"];
    extra.extend(flags.iter().map(String::as_str));
    let o = compact(dir.path(), &file, &s, &extra);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let prompt = last_user_text(&model.requests()[0]);
    let block = &prompt[prompt.find("<additional-context>\n").unwrap()..];
    let block = &block[..block.find("</additional-context>").unwrap()];
    assert_has(block, "- git branch: fix/eol\n");
    assert_has(block, "- last commit: ");
    assert_has(block, " first commit\n");
    assert_has(block, "- uncommitted (M): README.md\n");
    // Outside a repository it answers nothing.
    let plain = tempfile::tempdir().unwrap();
    let s = example_settings(plain.path());
    let o = hooks_test(
        plain.path(),
        "session.compacting",
        &s,
        &["--json"],
        &[("GIT_CEILING_DIRECTORIES", p(plain.path().parent().unwrap()))],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_out(&o)["hooks"][0]["outcome"], "empty");
}
