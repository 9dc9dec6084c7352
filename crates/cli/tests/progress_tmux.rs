//! The progress of a long LLM compaction, end to end: on a terminal (a
//! tmux pane) the spinner says which request of how many is running, for
//! how long, and the tokens sent and received; off a terminal nothing of
//! it reaches stderr. The summarizer is a server on 127.0.0.1 that holds
//! each answer until the test has seen what the spinner says meanwhile.
//!
//! A report on standard error is coloured as standard error is: on a
//! terminal, and not in a file, wherever standard output goes.
//!
//! tmux is required: without it the test fails and says how to install it.

#![allow(clippy::unwrap_used)]

mod support;
mod tmux;

use std::path::Path;

use serde_json::json;
use support::{Gate, Reply, Server, assert_has, code, openai_compatible, stderr};
use tmux::Tmux;

const MUSEPI: &str = env!("CARGO_BIN_EXE_musepi");

/// A chat-completions server on 127.0.0.1 whose answers wait for `gate`.
fn held_server(gate: &Gate) -> Server {
    let gate = gate.clone();
    Server::answering_blocking(move |_| {
        Reply::json(
            200,
            &json!({
                "choices": [{"message": {"role": "assistant", "content": "## Goal\n- Keep the todo store appendable"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912}
            }),
        )
        .held(&gate)
    })
}

/// The example session, copied to `dir`.
fn session(dir: &Path) -> std::path::PathBuf {
    support::example_session(dir, "s.jsonl")
}

/// Runs `prune -o -` on the example session in `dir` in a tmux pane named
/// `name`, the shell redirecting as `redirect` says, and returns the pane
/// with its screen once prune exited 0.
fn prune_to_stdout(dir: &Path, name: &str, redirect: &str) -> (Tmux, String) {
    session(dir);
    let command = format!(
        "{MUSEPI} prune s.jsonl -o - --min-saving 0 {redirect}; echo \"exit=$? done\"; sleep 600"
    );
    let tmux = Tmux::start(name, dir, &command);
    let screen = tmux.wait_for("the result", |s| s.contains("exit="));
    assert_has(&screen, "exit=0");
    (tmux, screen)
}

fn compact_args(base: &str) -> Vec<String> {
    let compact = ["compact", "s.jsonl", "--strategy", "llm"];
    let now = ["--now", "2026-02-01T00:00:00.000Z"];
    [&compact[..], &openai_compatible(base), &now]
        .concat()
        .into_iter()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_long_compaction_says_which_request_of_how_many_on_a_terminal_only() {
    let gate = Gate::new();
    let server = held_server(&gate);
    let base = format!("{}/v1", server.url);

    // On a terminal: request k of N, elapsed time and tokens.
    let dir = tempfile::tempdir().unwrap();
    session(dir.path());
    let command = format!(
        "MUSEPI_API_KEY= {MUSEPI} {}; echo \"exit=$? done\"; sleep 600",
        compact_args(&base).join(" ")
    );
    let tmux = Tmux::start("progress", dir.path(), &command);
    let screen = tmux.wait_for("the first request", |s| s.contains("compacting · request"));
    let line = screen
        .lines()
        .find(|l| l.contains("compacting · request"))
        .unwrap()
        .to_owned();
    // The history first, alone or with the turn prefix beside it; the
    // elapsed time at the end of the line.
    assert!(
        line.contains("· request 1 of ") || line.contains("· requests 1, 2 of "),
        "{line}"
    );
    assert_has(&line, " tokens sent, 0 received · hist");
    assert!(line.trim_end().ends_with('s'), "the elapsed time: {line}");
    assert!(line.chars().count() <= 80, "{line}");
    // The last of the requests announced (the short summary), after the
    // answers before it.
    let last = |screen: &str| -> Option<(String, String)> {
        screen.lines().find_map(|l| {
            let (k, n) = l
                .split("compacting · request ")
                .nth(1)?
                .split(" · ")
                .next()?
                .split_once(" of ")?;
            (k == n).then(|| (n.to_owned(), l.to_owned()))
        })
    };
    // Every answer but the last request's goes; that one waits until the
    // screen has shown its request.
    let total: usize = line
        .split(" of ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    gate.release(total - 1);
    let screen = tmux.wait_for("the last request", |s| last(s).is_some());
    let (n, line) = last(&screen).unwrap();
    gate.open();
    assert!(!line.contains(" 0 received"), "{line}");
    // Not "done" alone: the spinner says "3 of 3 requests done" a moment.
    let screen = tmux.wait_for("the result", |s| s.contains("exit="));
    assert_has(&screen, "exit=0");
    assert!(
        !screen.contains("compacting ·"),
        "the spinner is cleared:\n{screen}"
    );
    assert_eq!(server.count().to_string(), n);

    // Off a terminal: nothing of it on stderr, the same result.
    let dir = tempfile::tempdir().unwrap();
    session(dir.path());
    let out = std::process::Command::new(MUSEPI)
        .args(compact_args(&base))
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env_remove("MUSEPI_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let stderr = stderr(&out);
    assert!(!stderr.contains("request"), "{stderr}");
    assert!(!stderr.contains("tokens sent"), "{stderr}");
}

/// With `-o -` the session goes to standard output and the report to
/// standard error, printed as it is built and coloured as standard error
/// is: on a terminal its painted ids keep their colours instead of showing
/// the colour codes escaped, even with standard output in a file; in a
/// file it has none, even with standard output on a terminal.
#[test]
fn a_report_on_stderr_keeps_its_colours() {
    let dir = tempfile::tempdir().unwrap();
    let (tmux, screen) = prune_to_stdout(dir.path(), "report", ">out.jsonl");
    assert_has(&screen, "superseded  ");
    assert!(!screen.contains("\\u001b"), "{screen}");
    // The ids are cyan.
    assert_has(&tmux.screen_with_colours(), "\x1b[36m");
    let out = std::fs::read_to_string(dir.path().join("out.jsonl")).unwrap();
    assert!(!out.contains('\x1b'), "the session is not painted: {out}");
}

#[test]
fn a_report_in_a_file_has_no_colours_while_the_session_goes_to_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let _pane = prune_to_stdout(dir.path(), "report-file", "2>report.txt");
    let report = std::fs::read_to_string(dir.path().join("report.txt")).unwrap();
    assert_has(&report, "superseded  ");
    assert!(!report.contains('\x1b'), "{report:?}");
}

/// Runs `command` in a tmux pane once its every byte is recorded to
/// `pane.log` in `dir`; returns the pane and the log's path.
fn recorded(dir: &Path, name: &str, command: &str) -> (Tmux, std::path::PathBuf) {
    let gated = format!("while [ ! -e go ]; do sleep 0.05; done; {command}");
    let tmux = Tmux::start(name, dir, &gated);
    let log = dir.join("pane.log");
    tmux.record(&log);
    std::fs::write(dir.join("go"), "").unwrap();
    (tmux, log)
}

/// The pane's log once it holds `what`.
fn log_with(log: &Path, what: &str) -> String {
    let start = std::time::Instant::now();
    loop {
        let text = String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()).into_owned();
        if text.contains(what) {
            return text;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_mins(3),
            "waited for {what:?} in what the pane was sent: {text:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn prune_says_what_it_is_doing_on_a_terminal_and_clears_it() {
    let dir = tempfile::tempdir().unwrap();
    session(dir.path());
    let (tmux, log) = recorded(
        dir.path(),
        "prune-progress",
        &format!("{MUSEPI} prune s.jsonl --min-saving 0; echo \"exit=$? done\"; sleep 600"),
    );
    let screen = tmux.wait_for("the result", |s| s.contains("exit="));
    assert_has(&screen, "exit=0");
    assert_has(&screen, "saved");
    let sent = log_with(&log, "exit=");
    assert_has(&sent, "pruning · reading s.jsonl");
    // The spinner's line is gone from the screen once the report is there.
    assert!(!screen.contains("pruning ·"), "{screen}");

    // Off a terminal nothing of it is written.
    let dir = tempfile::tempdir().unwrap();
    session(dir.path());
    let out = std::process::Command::new(MUSEPI)
        .args(["prune", "s.jsonl", "--min-saving", "0"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("pruning ·"), "{}", stderr(&out));
}

#[test]
fn the_view_says_it_is_reading_before_its_screen_shows() {
    let dir = tempfile::tempdir().unwrap();
    session(dir.path());
    let (tmux, log) = recorded(
        dir.path(),
        "view-progress",
        &format!("{MUSEPI} view s.jsonl; echo \"exit=$? done\"; sleep 600"),
    );
    tmux.wait_for("the view", |s| s.contains("s.jsonl"));
    // The alternate screen the view draws on.
    let sent = log_with(&log, "\x1b[?1049h");
    let reading = sent
        .find("reading s.jsonl")
        .unwrap_or_else(|| panic!("{sent:?}"));
    assert!(reading < sent.find("\x1b[?1049h").unwrap(), "{sent:?}");
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("the exit", |s| s.contains("exit="));
    assert_has(&screen, "exit=0");
    assert!(!screen.contains("reading s.jsonl"), "{screen}");
}
