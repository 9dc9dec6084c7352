//! One condition, one exit code, one error shape, in every command:
//! 0 success, 1 the operation failed, 2 bad usage or bad input, 3 the
//! session is busy. With `--json` an error is one JSON document on stdout,
//! `{"error": {"code", "message", "line"?}}`, and a line on stderr.

#![allow(clippy::unwrap_used)]

mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use musepi_session_model::LIVE_WINDOW_MS;
use serde_json::{Value, json};
use support::{
    HOOK_IN_TIME_MS, Reply, Server, assert_has, code, error_message, example_session, musepi_in, p,
    repair_json, settle, stderr, stdout,
};

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn run(&self, args: &[&str]) -> Output {
        musepi_in(self.path(), self.path(), args, None)
    }

    fn session(&self) -> PathBuf {
        example_session(self.path(), "s.jsonl")
    }

    /// The example session, and its copy compacted by `musepi compact`
    /// into `compacted.jsonl` (holding a snapcompact archive), settled.
    fn session_and_compacted(&self) -> (PathBuf, PathBuf) {
        let file = self.session();
        let compacted = self.path().join("compacted.jsonl");
        let o = self.run(&["compact", p(&file), "-o", p(&compacted)]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        support::settle(&compacted);
        (file, compacted)
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.file(name, &format!("#!/bin/sh\ncat >/dev/null\n{body}\n"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn hook_settings(&self, script: &Path) -> PathBuf {
        let settings = json!({"hooks": {"session_before_compact": [{"command": [p(script)], "timeoutMs": HOOK_IN_TIME_MS}]}});
        self.file("hooks.json", &settings.to_string())
    }
}

/// The error document of a failed `--json` run, checked for shape: the
/// exit code, one JSON document on stdout with a code and a message, and
/// the error on stderr.
fn error(o: &Output, exit: i32, expected_code: &str) -> Value {
    assert_eq!(
        code(o),
        exit,
        "stdout: {}\nstderr: {}",
        stdout(o),
        stderr(o)
    );
    let doc: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: stdout is not one JSON document: {}", stdout(o)));
    let error = &doc["error"];
    assert_eq!(error["code"], expected_code, "{doc}");
    let message = error["message"].as_str().unwrap();
    assert!(!message.is_empty());
    let keys: Vec<&String> = error.as_object().unwrap().keys().collect();
    assert!(
        keys.iter()
            .all(|k| ["code", "message", "line"].contains(&k.as_str())),
        "{doc}"
    );
    assert!(stderr(o).contains("error:"), "{}", stderr(o));
    doc
}

#[test]
fn every_command_family_answers_a_missing_file_with_a_json_error_and_exit_2() {
    let case = Case::new();
    let families: [&[&str]; 13] = [
        &["session", "stats"],
        &["session", "tree"],
        &["session", "check"],
        &["session", "migrate"],
        &["context"],
        &["plan"],
        &["prune"],
        &["compact"],
        &["branch", "--to", "root"],
        &["handoff", "-o", "new.jsonl"],
        &["snapcompact", "render", "--out", "frames"],
        &["trust"],
        &["view"],
    ];
    for family in families {
        let mut args = family.to_vec();
        let at = if family[0] == "session" || family[0] == "snapcompact" {
            2
        } else {
            1
        };
        args.insert(at, "missing.jsonl");
        args.push("--json");
        let o = case.run(&args);
        // `view` needs a terminal before it reads anything.
        let expected = if family[0] == "view" {
            "usage"
        } else {
            "unreadable-file"
        };
        let doc = error(&o, 2, expected);
        assert!(!case.path().join("missing.jsonl").exists(), "{args:?}");
        if expected == "unreadable-file" {
            assert!(
                error_message(&doc).contains("missing.jsonl"),
                "{args:?}: {doc}"
            );
        }
    }
}

#[test]
fn bad_usage_is_exit_2_with_code_usage() {
    let case = Case::new();
    let file = case.session();
    for args in [
        vec!["context", p(&file), "--bogus", "--json"],
        vec!["compact", p(&file), "--strategy", "nope", "--json"],
        vec!["context", p(&file), "--tokenizer", "nope", "--json"],
        vec![
            "branch",
            p(&file),
            "--to",
            "root",
            "--strategy",
            "x",
            "--json",
        ],
        vec!["hooks", "test", "no_such_event", "--json"],
        vec!["--now", "yesterday", "context", p(&file), "--json"],
        vec!["plan", p(&file), "--context-window", "0", "--json"],
        vec!["prune", p(&file), "-o", "-", "--json"],
        vec!["session", "migrate", p(&file), "-o", "-", "--json"],
    ] {
        error(&case.run(&args), 2, "usage");
    }
    // An unknown shape is bad usage, like an unknown strategy, and the
    // message lists the valid ones, as --help does.
    let o = case.run(&[
        "snapcompact",
        "render",
        p(&file),
        "--out",
        "frames",
        "--shape",
        "nope",
        "--json",
    ]);
    let doc = error(&o, 2, "usage");
    let message = error_message(&doc);
    // What clap lists after a colon continues the sentence.
    // A window of 0 tokens is refused in words, not as a range up to u64::MAX.
    for command in [
        vec!["plan", p(&file)],
        vec!["compact", p(&file)],
        vec!["branch", p(&file), "--to", "root"],
        vec!["view", p(&file)],
        vec!["serve"],
        vec!["context", p(&file), "--chart"],
    ] {
        let mut args = command.clone();
        args.extend(["--context-window", "0", "--json"]);
        let doc = error(&case.run(&args), 2, "usage");
        assert_eq!(
            error_message(&doc),
            "invalid value '0' for '--context-window <N>': the context window must be at least 1 token",
            "{command:?}"
        );
    }
    // Without FILE, the error names --latest too, for every command that takes either.
    for command in [&["plan"][..], &["session", "check"][..], &["view"][..]] {
        let mut args = command.to_vec();
        args.push("--json");
        let missing = error(&case.run(&args), 2, "usage");
        assert_eq!(
            error_message(&missing),
            "the following required arguments were not provided: <FILE|--latest>",
            "{command:?}"
        );
        let o = case.run(command);
        assert_eq!(code(&o), 2, "{command:?}");
        assert_has(
            &stderr(&o),
            "required arguments were not provided:\n  <FILE|--latest>",
        );
    }
    assert!(
        message.starts_with("invalid value 'nope' for '--shape <NAME>'; [possible values: auto, "),
        "{message}"
    );
    let help = stdout(&case.run(&["snapcompact", "render", "--help"]));
    for name in ["auto", "8on22-bw", "11on16-bw", "doc-8on16-sent-dim"] {
        assert!(message.contains(name), "{message}");
        assert!(help.contains(name), "{help}");
    }
    assert!(!case.path().join("frames").exists());
    // Without --json the error is on stderr only.
    let o = case.run(&["compact", p(&file), "--strategy", "nope"]);
    assert_eq!(code(&o), 2);
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
    assert!(
        stderr(&o).starts_with(
            "musepi: error: invalid value 'nope' for '--strategy <snapcompact|llm|remote>'\n  [possible values: snapcompact, llm, remote]"
        ),
        "{}",
        stderr(&o)
    );
    // A summary's strategy lists its own two values; the earlier name of
    // `llm` is still read.
    let o = case.run(&[
        "branch",
        p(&file),
        "--to",
        "root",
        "--strategy",
        "remote",
        "--dry-run",
    ]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("[possible values: llm, snapcompact]"),
        "{}",
        stderr(&o)
    );
    let o = case.run(&["plan", p(&file), "--strategy", "context-full", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["strategy"],
        "llm"
    );
}

#[test]
fn files_that_are_not_sessions_name_the_line() {
    let case = Case::new();
    let text = case.file("notes.txt", "hello\n");
    let doc = error(
        &case.run(&["context", p(&text), "--json"]),
        2,
        "not-a-session",
    );
    assert_eq!(doc["error"]["line"], 1);
    let empty = case.file("empty.jsonl", "");
    error(
        &case.run(&["session", "stats", p(&empty), "--json"]),
        2,
        "empty-file",
    );
}

/// The example session with a torn last line appended (the file's mtime
/// is now), with its number of whole lines.
fn torn_session(case: &Case) -> (PathBuf, Vec<u8>, u64) {
    let file = case.session();
    let lines = std::fs::read_to_string(&file).unwrap().lines().count() as u64;
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(br#"{"type":"mess"#);
    std::fs::write(&file, &bytes).unwrap();
    (file, bytes, lines)
}

/// Every command that writes the session in place.
fn writers(file: &Path) -> [Vec<&str>; 4] {
    [
        vec!["prune", p(file)],
        vec!["compact", p(file)],
        vec!["branch", p(file), "--to", "root"],
        vec!["session", "migrate", p(file)],
    ]
}

#[test]
fn a_torn_tail_is_exit_2_with_its_line_for_every_writer() {
    let case = Case::new();
    let (file, bytes, lines) = torn_session(&case);
    settle(&file);
    for writer in writers(&file) {
        let mut args = writer.clone();
        args.push("--json");
        let doc = error(&case.run(&args), 2, "torn-tail");
        assert_eq!(doc["error"]["line"], lines + 1, "{writer:?}");
        assert_eq!(std::fs::read(&file).unwrap(), bytes, "{writer:?} wrote");
    }
}

/// A torn last line in a file written a moment ago is most likely an
/// agent's append in progress: every writer answers busy (exit 3, retry)
/// instead of asking for a repair, in place, to another file or as a dry
/// run, and `--force` leaves the torn line as the reason.
#[test]
fn a_torn_tail_in_a_live_session_is_exit_3_unless_forced() {
    let case = Case::new();
    let (file, bytes, lines) = torn_session(&case);
    let out = case.path().join("out.jsonl");
    for (writer, dest) in writers(&file).into_iter().flat_map(|w| {
        [
            (w.clone(), vec![]),
            (w.clone(), vec!["-o", p(&out)]),
            (w, vec!["--dry-run"]),
        ]
    }) {
        // Written again just now, so each case sees it inside the live
        // window however long the cases before it took.
        std::fs::write(&file, &bytes).unwrap();
        let mut args = writer.clone();
        args.extend(dest);
        args.push("--json");
        let doc = error(&case.run(&args), 3, "session-live");
        let message = doc["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("the session is live"),
            "{args:?}: {message}"
        );
        assert_eq!(std::fs::read(&file).unwrap(), bytes, "{args:?} wrote");
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
        args.push("--force");
        let doc = error(&case.run(&args), 2, "torn-tail");
        assert_eq!(doc["error"]["line"], lines + 1, "{args:?}");
        assert_eq!(std::fs::read(&file).unwrap(), bytes, "{args:?} wrote");
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
}

/// `session check --repair -o OUT` of a session whose last line is torn
/// while it looks live would write a copy without the line the agent may
/// still be writing: it answers busy (exit 3) as every writer does, by the
/// lock another process holds or by a write a moment ago, and `--force`
/// writes the copy without the torn line.
#[test]
fn repairing_a_torn_tail_in_a_live_session_is_exit_3_unless_forced() {
    let case = Case::new();
    let (file, bytes, lines) = torn_session(&case);
    let out = case.path().join("repaired.jsonl");
    let repair = repair_json(&file, &out);

    // Another process holds the lock of a file nobody wrote for a minute.
    settle(&file);
    let holder = std::fs::File::open(&file).unwrap();
    holder.lock().unwrap();
    let doc = error(&case.run(&repair), 3, "session-live");
    assert!(error_message(&doc).contains("holds its lock"), "{doc}");
    assert!(!out.exists(), "wrote {}", out.display());
    drop(holder);

    // Written a moment ago. A run that a busy machine let end only after
    // the live window (a second less: file times come from a coarse
    // clock) may rightly have repaired it, so it runs again on a fresh
    // write.
    let window = Duration::from_millis(LIVE_WINDOW_MS.unsigned_abs() - 1000);
    let mut rounds = 0;
    let o = loop {
        let _ = std::fs::remove_file(&out);
        let started = Instant::now();
        std::fs::write(&file, &bytes).unwrap();
        let o = case.run(&repair);
        rounds += 1;
        if code(&o) == 3 || started.elapsed() < window || rounds == 20 {
            break o;
        }
    };
    let doc = error(&o, 3, "session-live");
    assert!(error_message(&doc).contains("s ago"), "{doc}");
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert!(!out.exists(), "wrote {}", out.display());

    // --force repairs it anyway, leaving the torn line out.
    let mut forced = repair.to_vec();
    forced.push("--force");
    let o = case.run(&forced);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["repair"]["dropped"][0]["line"], lines + 1, "{doc}");
    let whole = bytes.len() - br#"{"type":"mess"#.len();
    assert_eq!(std::fs::read(&out).unwrap(), &bytes[..whole]);
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
}

#[test]
fn unknown_entry_ids_are_exit_2() {
    let case = Case::new();
    let file = case.session();
    for args in [
        vec!["context", p(&file), "--leaf", "nope", "--json"],
        vec!["branch", p(&file), "--to", "nope", "--json"],
        vec![
            "snapcompact",
            "render",
            p(&file),
            "--out",
            "f",
            "--entry",
            "nope",
            "--json",
        ],
    ] {
        let doc = error(&case.run(&args), 2, "unknown-entry");
        assert!(error_message(&doc).contains("`nope`"));
    }
}

#[test]
fn a_session_changed_while_we_worked_is_busy_exit_3_and_keeps_the_other_writers_bytes() {
    let case = Case::new();
    let file = case.session();
    // The hook stands for another writer: it rewrites the file in place
    // while the compaction waits for the hook's answer.
    let hook = case.script(
        "rewrite.sh",
        &format!(
            "head -n 20 '{0}' > '{0}.part' && cat '{0}.part' > '{0}'",
            p(&file)
        ),
    );
    let settings = case.hook_settings(&hook);
    let o = case.run(&["compact", p(&file), "--settings", p(&settings), "--json"]);
    error(&o, 3, "changed-on-disk");
    let now = std::fs::read_to_string(&file).unwrap();
    assert_eq!(now.lines().count(), 20, "the other writer's file is kept");
}

#[test]
fn settings_and_providers_that_cannot_work_are_exit_2() {
    let case = Case::new();
    let file = case.session();
    let broken = case.file("broken.json", "{ not json");
    error(
        &case.run(&["compact", p(&file), "--settings", p(&broken), "--json"]),
        2,
        "bad-settings",
    );
    error(
        &case.run(&[
            "hooks",
            "test",
            "session_tree",
            "--config",
            p(&broken),
            "--json",
        ]),
        2,
        "bad-settings",
    );
    let bad_hook = case.file(
        "bad-hook.json",
        r#"{"hooks": {"session_tree": [{"command": []}]}}"#,
    );
    error(
        &case.run(&["compact", p(&file), "--settings", p(&bad_hook), "--json"]),
        2,
        "bad-settings",
    );
    let llm = ["compact", p(&file), "--strategy", "llm", "--json"];
    error(&case.run(&llm), 2, "no-model");
    let with = |extra: &[&'static str]| {
        let mut args = llm.to_vec();
        args.extend_from_slice(extra);
        case.run(&args)
    };
    error(&with(&["--provider", "nonsense"]), 2, "bad-provider");
    error(
        &with(&["--provider", "anthropic", "--model", "claude-x"]),
        2,
        "missing-api-key",
    );
    error(
        &case.run(&["serve", "--provider", "nonsense", "--json"]),
        2,
        "bad-provider",
    );
    let before = case.session();
    let out = case.file("taken.jsonl", "precious\n");
    error(
        &case.run(&["handoff", p(&before), "-o", p(&out), "--json"]),
        2,
        "file-exists",
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious\n");
}

#[test]
fn failed_operations_are_exit_1_and_write_nothing() {
    let case = Case::new();
    let file = case.session();
    let before = std::fs::read(&file).unwrap();
    // A provider error.
    let not_found = Reply::json(400, &json!({"error": {"message": "model not found"}}));
    let server = Server::start_blocking(vec![not_found; 3]);
    let base = format!("{}/v1", server.url);
    let o = case.run(&[
        "compact",
        p(&file),
        "--strategy",
        "llm",
        "--base-url",
        &base,
        "--model",
        "m",
        "--json",
    ]);
    let doc = error(&o, 1, "provider-failed");
    assert!(error_message(&doc).contains("model not found"), "{doc}");
    // A hook that cancels.
    let cancel = case.script("cancel.sh", "echo no >&2\nexit 2");
    let settings = case.hook_settings(&cancel);
    let o = case.run(&["compact", p(&file), "--settings", p(&settings), "--json"]);
    error(&o, 1, "cancelled");
    // A write that fails, in a folder that exists (a missing folder is
    // bad usage, refused before any work): a name too long for the system.
    let out = case.path().join(format!("{}.jsonl", "n".repeat(300)));
    let o = case.run(&["compact", p(&file), "-o", p(&out), "--json"]);
    error(&o, 1, "write-failed");
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[test]
fn nothing_to_compact_is_exit_1_only_with_strict() {
    let case = Case::new();
    let tiny = case.file(
        "tiny.jsonl",
        concat!(
            r#"{"type":"session","version":3,"id":"t","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#,
            "\n",
            r#"{"type":"message","id":"00000001","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
            "\n"
        ),
    );
    support::settle(&tiny);
    for command in ["compact", "plan"] {
        let o = case.run(&[command, p(&tiny), "--json"]);
        assert_eq!(code(&o), 0, "{command}: {}", stderr(&o));
        let o = case.run(&[command, p(&tiny), "--strict", "--json"]);
        assert_eq!(code(&o), 1, "{command}: {}", stderr(&o));
        // The usual document, which says there was nothing to do.
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(
            doc["compacted"] == false || doc["nothingToCompact"] == true,
            "{doc}"
        );
    }
}

/// Every command that writes `-o OUT`: the five that write from the
/// session, and `handoff`, which writes a new one.
fn out_writers(file: &Path) -> [Vec<&str>; 6] {
    [
        vec!["prune", p(file), "--min-saving", "0"],
        vec!["compact", p(file)],
        vec!["branch", p(file), "--to", "root"],
        vec!["session", "migrate", p(file)],
        vec!["session", "check", p(file), "--repair"],
        vec!["handoff", p(file)],
    ]
}

#[test]
fn an_existing_out_is_file_exists_for_every_writer_and_replaced_only_with_force() {
    let case = Case::new();
    let file = case.session();
    let before = std::fs::read(&file).unwrap();
    let out = case.file("out.jsonl", "precious\n");
    let expected = format!(
        "{}: the file already exists; pass --force to replace it",
        p(&out)
    );
    for writer in out_writers(&file) {
        let mut args = writer.clone();
        args.extend(["-o", p(&out), "--json"]);
        let doc = error(&case.run(&args), 2, "file-exists");
        assert_eq!(error_message(&doc), expected, "{writer:?}");
        // Without --json, the same message on stderr.
        let o = case.run(&args[..args.len() - 1]);
        assert_eq!(code(&o), 2, "{writer:?}");
        assert_eq!(stderr(&o).trim_end(), format!("musepi: error: {expected}"));
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious\n");
        assert_eq!(std::fs::read(&file).unwrap(), before, "{writer:?}");
    }
    // --force replaces OUT (handoff needs a model, which handoff_cli tests).
    for writer in &out_writers(&file)[..5] {
        std::fs::write(&out, "precious\n").unwrap();
        let mut args = writer.clone();
        args.extend(["-o", p(&out), "--force", "--json"]);
        let o = case.run(&args);
        // `session check` exits 2 when the copy has problems; this one has none.
        assert_eq!(code(&o), 0, "{writer:?}: {}", stderr(&o));
        let copy = std::fs::read_to_string(&out).unwrap();
        assert!(copy.starts_with(r#"{"type":"session""#), "{writer:?}");
        assert_eq!(std::fs::read(&file).unwrap(), before, "{writer:?}");
    }
}

#[test]
fn a_folder_as_out_is_not_a_regular_file_for_every_writer_even_with_force() {
    let case = Case::new();
    let file = case.session();
    let before = std::fs::read(&file).unwrap();
    let folder = case.path().join("out.jsonl");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("keep"), "precious\n").unwrap();
    // Not "the file already exists; pass --force": --force cannot replace a folder.
    let expected = format!(
        "{}: is a folder, not a regular file; a session is a regular file",
        p(&folder)
    );
    for writer in out_writers(&file) {
        for force in [&[][..], &["--force"][..]] {
            let mut args = writer.clone();
            args.extend(["-o", p(&folder), "--json"]);
            args.extend(force);
            let doc = error(&case.run(&args), 2, "not-a-regular-file");
            assert_eq!(error_message(&doc), expected, "{args:?}");
        }
        assert_eq!(
            std::fs::read_to_string(folder.join("keep")).unwrap(),
            "precious\n"
        );
        assert_eq!(std::fs::read(&file).unwrap(), before, "{writer:?}");
    }
}

#[test]
fn an_out_in_a_missing_folder_is_usage_naming_the_folder_for_every_writer() {
    let case = Case::new();
    let file = case.session();
    let before = std::fs::read(&file).unwrap();
    let not_a_folder = case.file("plain", "precious\n");
    for (folder, problem) in [
        (case.path().join("nodir"), "does not exist"),
        (not_a_folder, "is not a folder"),
    ] {
        let out = folder.join("x.jsonl");
        let expected = format!(
            "-o {}: the folder {} {problem}; nothing was written",
            p(&out),
            p(&folder)
        );
        for writer in out_writers(&file) {
            for force in [&[][..], &["--force"][..]] {
                let mut args = writer.clone();
                args.extend(["-o", p(&out)]);
                args.extend(force);
                // Said once, not with the system's reason after it.
                let o = case.run(&args);
                assert_eq!(code(&o), 2, "{args:?}");
                assert_eq!(stderr(&o).trim_end(), format!("musepi: error: {expected}"));
                args.push("--json");
                let doc = error(&case.run(&args), 2, "usage");
                assert_eq!(error_message(&doc), expected, "{args:?}");
            }
            assert_eq!(std::fs::read(&file).unwrap(), before, "{writer:?}");
        }
    }
}

#[test]
fn a_dry_run_with_nothing_to_compact_answers_json_with_json() {
    let case = Case::new();
    let (file, compacted) = case.session_and_compacted();
    let before = std::fs::read(&compacted).unwrap();
    for (strict, exit) in [(false, 0), (true, 1)] {
        let mut args = vec!["compact", p(&compacted), "--dry-run", "--json"];
        if strict {
            args.push("--strict");
        }
        let o = case.run(&args);
        assert_eq!(code(&o), exit, "{args:?}: {}", stderr(&o));
        let doc: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{e}: not one JSON document: {}", stdout(&o)));
        assert_eq!(doc["dryRun"], true, "{doc}");
        assert_eq!(doc["nothingToCompact"], true, "{doc}");
        assert_eq!(doc["reason"], "Already compacted", "{doc}");
        assert_eq!(doc["strategy"], "snapcompact", "{doc}");
        assert!(doc["tokensBefore"].as_u64().unwrap() > 0, "{doc}");
        assert_eq!(doc["prune"]["results"], json!([]), "{doc}");
        assert_eq!(doc["requests"], json!([]), "{doc}");
        assert_eq!(
            std::fs::read(&compacted).unwrap(),
            before,
            "a dry run writes nothing"
        );
    }
    // Without --json, the line for people.
    let o = case.run(&["compact", p(&compacted), "--dry-run"]);
    assert_eq!(
        stdout(&o),
        "nothing to compact: the leaf is a compaction already\n"
    );
    // With something to compact, the same document says so.
    let o = case.run(&["compact", p(&file), "--dry-run", "--json"]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["nothingToCompact"], false, "{doc}");
    assert!(doc["firstKeptEntryId"].is_string(), "{doc}");
}

#[test]
fn dash_reads_standard_input_for_readers_and_is_bad_usage_for_commands_that_need_the_file() {
    let case = Case::new();
    let (_, compacted) = case.session_and_compacted();
    let bytes = std::fs::read(&compacted).unwrap();
    let stdin_run = |args: &[&str]| musepi_in(case.path(), case.path(), args, Some(&bytes));
    // The commands that need the session's file itself.
    for args in [
        vec!["prune", "-"],
        vec!["compact", "-"],
        vec!["branch", "-", "--to", "root"],
        vec!["handoff", "-", "-o", "new.jsonl"],
        vec!["view", "-"],
    ] {
        let mut json = args.clone();
        json.push("--json");
        let doc = error(&stdin_run(&json), 2, "usage");
        let message = error_message(&doc);
        assert!(
            message.starts_with(&format!(
                "musepi {} needs a session file path, not `-` (standard input): it ",
                args[0]
            )),
            "{message}"
        );
        assert!(!case.path().join("-").exists(), "{args:?}");
        assert!(!case.path().join("new.jsonl").exists(), "{args:?}");
    }
    // The commands that read a session, whatever they write elsewhere.
    let frames = case.path().join("frames");
    for args in [
        vec!["session", "stats", "-"],
        vec!["session", "tree", "-"],
        vec!["session", "check", "-"],
        vec!["session", "migrate", "-", "-o", "-"],
        vec!["context", "-"],
        vec!["context", "-", "--chart"],
        vec!["plan", "-"],
        vec!["snapcompact", "render", "-", "--out", p(&frames)],
    ] {
        let o = stdin_run(&args);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        assert!(!o.stdout.is_empty(), "{args:?}");
    }
    assert!(frames.join("archive.json").exists());
    // Standard input redirected from a folder (`- < folder`) is refused as
    // a folder named on the line is.
    let o = std::process::Command::new(support::MUSEPI)
        .args(["session", "stats", "-", "--json"])
        .env("HOME", case.path())
        .stdin(std::fs::File::open(case.path()).unwrap())
        .output()
        .unwrap();
    let doc = error(&o, 2, "not-a-regular-file");
    assert_eq!(
        error_message(&doc),
        "<stdin>: is a folder, not a regular file; a session is a regular file"
    );
    let repaired = case.path().join("repaired.jsonl");
    let o = stdin_run(&["session", "check", "-", "--repair", "-o", p(&repaired)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read(&repaired).unwrap(), bytes);
}

/// One command of every family, each able to succeed on `file` in the
/// case's folder (`compacted` holds a snapcompact archive).
fn every_command<'a>(file: &'a Path, compacted: &'a Path) -> Vec<Vec<&'a str>> {
    vec![
        vec!["session", "stats", p(file)],
        vec!["session", "tree", p(file)],
        vec!["session", "check", p(file)],
        vec!["session", "migrate", p(file), "--dry-run"],
        vec!["context", p(file)],
        vec!["context", p(file), "--chart"],
        vec!["plan", p(file)],
        vec!["prune", p(file), "--dry-run"],
        vec!["compact", p(file), "--dry-run"],
        vec!["branch", p(file), "--to", "root", "--dry-run"],
        vec!["snapcompact", "render", p(compacted), "--out", "frames"],
        vec!["ls", "--session-dir", "no-such-folder"],
        vec!["trust", "--list"],
        vec!["hooks", "test", "session_tree"],
    ]
}

#[test]
fn a_settings_file_that_cannot_be_read_or_parsed_is_bad_settings_for_every_command() {
    let case = Case::new();
    let (file, compacted) = case.session_and_compacted();
    let before = std::fs::read(&file).unwrap();
    let broken = case.file("broken.json", "{ not json");
    let missing = case.path().join("missing.json");
    let valid = case.file(
        "valid.json",
        r#"{"compaction": {"keepRecentTokens": 4000}}"#,
    );
    let mut commands = every_command(&file, &compacted);
    // These do not get far enough to read a file without their settings.
    commands.push(vec!["handoff", p(&file), "-o", "new.jsonl"]);
    commands.push(vec!["view", p(&file)]);
    commands.push(vec!["serve"]);
    for command in &commands {
        for (settings, names) in [(&broken, "not valid JSON"), (&missing, "cannot read")] {
            let mut args = command.clone();
            args.extend(["--settings", p(settings), "--json"]);
            let doc = error(&case.run(&args), 2, "bad-settings");
            let message = error_message(&doc);
            assert!(
                message.contains(p(settings)) && message.contains(names),
                "{command:?}: {message}"
            );
        }
    }
    assert!(!case.path().join("frames").exists());
    assert!(!case.path().join("new.jsonl").exists());
    assert_eq!(std::fs::read(&file).unwrap(), before);
    // A valid file works everywhere, and applies where settings matter.
    for command in every_command(&file, &compacted) {
        let mut args = command.clone();
        args.extend(["--settings", p(&valid)]);
        let o = case.run(&args);
        assert_eq!(code(&o), 0, "{command:?}: {}", stderr(&o));
    }
    let plan = |extra: &[&str]| {
        let mut args = vec!["plan", p(&file), "--json"];
        args.extend_from_slice(extra);
        let doc: Value = serde_json::from_slice(&case.run(&args).stdout).unwrap();
        doc["keepRecentTokens"].clone()
    };
    assert_eq!(
        plan(&["--settings", p(&valid)]),
        plan(&["--keep-recent", "4000"])
    );
    assert_ne!(plan(&[]), plan(&["--keep-recent", "4000"]));
    // The same file saved with a byte-order mark, as some editors do, is
    // read the same.
    let bom = case.path().join("bom.json");
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(&valid).unwrap());
    std::fs::write(&bom, bytes).unwrap();
    assert_eq!(
        plan(&["--settings", p(&bom)]),
        plan(&["--keep-recent", "4000"])
    );
}
