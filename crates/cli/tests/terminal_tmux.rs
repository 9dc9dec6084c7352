//! On a terminal (a tmux pane) musepi fits its rows to the width, pages a
//! long report and says what `musepi serve` waits for; off a terminal it
//! prints rows whole, pages nothing and says nothing.
//!
//! tmux is required: without it the test fails and says how to install it.

#![allow(clippy::unwrap_used)]

mod support;
mod tmux;

use std::path::{Path, PathBuf};

use support::{assert_has, code, example_session, musepi_with_env, p, stderr, stdout};
use tmux::Tmux;
use unicode_width::UnicodeWidthStr as _;

const MUSEPI: &str = env!("CARGO_BIN_EXE_musepi");

/// A session folder as pi keeps one: two sessions named
/// `<time>_<session id>.jsonl`.
fn pi_folder(dir: &Path) -> PathBuf {
    let sessions = dir.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    for name in [
        "2026-12-05T10-00-00-000Z_019aeb1c-3d4e-7a00-8b00-00000000c0de.jsonl",
        "2026-12-05T11-00-00-000Z_019aeb5f-0a1b-7c00-8d00-00000000beef.jsonl",
    ] {
        example_session(&sessions, name);
    }
    sessions
}

/// The lines a command wrote in the pane, up to the `exit=` line the
/// shell printed after it.
fn written(tmux: &Tmux) -> Vec<String> {
    tmux.wait_for("the command to end", |s| s.contains("exit="));
    tmux.lines_written()
        .lines()
        .take_while(|l| !l.contains("exit="))
        .map(|l| l.trim_end().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn ls_and_context_fit_a_narrow_terminal_and_print_whole_rows_to_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = pi_folder(dir.path());
    let command = format!(
        "{MUSEPI} ls --session-dir {}; echo exit=$?; sleep 600",
        p(&sessions)
    );
    let tmux = Tmux::start_sized("ls-narrow", dir.path(), &command, 60, 40);
    let lines = written(&tmux);
    assert!(lines.len() >= 3, "{lines:?}");
    assert!(lines[0].starts_with("modified (UTC)"), "{lines:?}");
    // Rows but the last line (which names the folder) fit 60 columns; the
    // session column shows the shortest prefix of the ids that tells them
    // apart (at least 8 characters), padded.
    for line in &lines[..lines.len() - 1] {
        assert!(line.width() <= 60, "{} columns: {line}", line.width());
    }
    // 60 columns leave too little for the name: it is left out.
    assert!(lines[1].ends_with("  31,315  019aeb5f"), "{lines:?}");
    assert!(lines[2].ends_with("  31,315  019aeb1c"), "{lines:?}");
    drop(tmux);
    // Wider, the name or first message takes the room left, cut with `…`.
    let tmux = Tmux::start_sized("ls-wide", dir.path(), &command, 90, 40);
    let lines = written(&tmux);
    for line in &lines[1..lines.len() - 1] {
        assert_eq!(line.width(), 90, "{line}");
        assert!(line.contains("  019aeb"), "{line}");
        assert!(line.ends_with('…'), "{line}");
    }
    drop(tmux);

    let file = sessions.join("2026-12-05T10-00-00-000Z_019aeb1c-3d4e-7a00-8b00-00000000c0de.jsonl");
    let command = format!("{MUSEPI} context {}; echo exit=$?; sleep 600", p(&file));
    let tmux = Tmux::start_sized("context-narrow", dir.path(), &command, 60, 200);
    let lines = written(&tmux);
    assert!(lines.len() > 100, "{}", lines.len());
    for line in &lines[..lines.len() - 1] {
        assert!(line.width() <= 60, "{} columns: {line}", line.width());
    }
    drop(tmux);

    // Piped: the whole file name and the whole preview.
    let o = musepi_with_env(
        dir.path(),
        dir.path(),
        &["ls", "--session-dir", p(&sessions)],
        None,
        &[("COLUMNS", "60")],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_has(
        &stdout(&o),
        "  2026-12-05T10-00-00-000Z_019aeb1c-3d4e-7a00-8b00-00000000c0de.jsonl  The todo CLI",
    );
    let o = musepi_with_env(dir.path(), dir.path(), &["context", p(&file)], None, &[]);
    assert!(stdout(&o).lines().any(|l| l.width() > 80), "{}", stdout(&o));
}

#[test]
fn plan_show_prompts_goes_through_the_pager_on_a_terminal_only() {
    let dir = tempfile::tempdir().unwrap();
    example_session(dir.path(), "s.jsonl");
    let paged = dir.path().join("paged.txt");
    // The pager is a command of the shell, as git runs it.
    let command = format!(
        "MUSEPI_PAGER='cat > paged.txt' {MUSEPI} plan s.jsonl --strategy llm --show-prompts; echo exit=$?; sleep 600"
    );
    let tmux = Tmux::start("pager", dir.path(), &command);
    let lines = written(&tmux);
    assert!(lines.is_empty(), "printed beside the pager: {lines:?}");
    let text = std::fs::read_to_string(&paged).unwrap();
    assert_has(&text, "── history request");
    assert_has(&text, "strategy            llm");
    drop(tmux);
    std::fs::remove_file(&paged).unwrap();

    // `--no-pager` and `PAGER=cat` print on the terminal itself.
    for (name, env, flag) in [
        ("no-pager", "MUSEPI_PAGER='cat > paged.txt'", "--no-pager"),
        ("pager-cat", "PAGER=cat", ""),
    ] {
        let command = format!(
            "{env} {MUSEPI} plan s.jsonl --strategy llm --show-prompts {flag}; echo exit=$?; sleep 600"
        );
        let tmux = Tmux::start(name, dir.path(), &command);
        let lines = written(&tmux);
        // The end of the last prompt (the start has left the scrollback).
        assert!(
            lines
                .iter()
                .any(|l| l.contains("Output the sentences only")),
            "{:?}",
            &lines[lines.len().saturating_sub(5)..]
        );
        assert!(!paged.exists(), "{env} {flag}");
    }

    // Piped: no pager.
    let o = musepi_with_env(
        dir.path(),
        dir.path(),
        &["plan", "s.jsonl", "--strategy", "llm", "--show-prompts"],
        None,
        &[("MUSEPI_PAGER", "cat > paged.txt")],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_has(&stdout(&o), "── history request");
    assert!(!paged.exists());
}

#[test]
fn serve_on_a_terminal_says_it_speaks_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let command = format!("{MUSEPI} serve; echo exit=$?; sleep 600");
    let tmux = Tmux::start("serve", dir.path(), &command);
    let screen = tmux.wait_for("the hint", |s| s.contains("JSON lines"));
    assert_has(
        &screen,
        "musepi serve: speaks JSON lines on stdin and stdout for an agent",
    );
    // It still serves: a request typed there is answered.
    tmux.type_text(r#"{"id": 1, "method": "status"}"#);
    tmux.keys(&["Enter"]);
    tmux.wait_for("an answer", |s| s.contains(r#""id":1"#));
    tmux.keys(&["C-d"]);
    tmux.wait_for("the end", |s| s.contains("exit=0"));
    drop(tmux);
    // A program drives it through a pipe: nothing is said.
    let o = musepi_with_env(dir.path(), dir.path(), &["serve"], Some(b""), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("JSON lines"), "{}", stderr(&o));
}
