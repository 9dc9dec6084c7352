//! `musepi session stats|tree|check|migrate` run as a process: output,
//! JSON shapes, exit codes (0 ok, 1 failed, 2 bad usage or input), and the
//! promise that read-only commands never write and that a file we cannot
//! read is never rewritten.

mod support;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use musepi_session_model::{SequentialIds, load_file};
use musepi_test_support::{message_line, pi_fixture};
use serde_json::Value;
use support::{
    assert_escaped, assert_has, assert_stderr_has, fixture, repair_json, settle, settled_copy,
    write_file,
};

/// Runs `musepi ARGS`, which must succeed, and returns its output for
/// people, checked to show each of `parts` and no raw control character.
#[track_caller]
fn shown(args: &[&str], parts: &[&str]) -> String {
    let o = musepi(args);
    assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
    let text = stdout(&o);
    assert_escaped(&text, parts);
    text
}

/// The conformance set in the repository (tests/fixtures/conformance).
fn conformance_dir() -> PathBuf {
    fixture("conformance")
}

fn conformance(name: &str) -> PathBuf {
    conformance_dir().join("sessions").join(name)
}

fn answer(name: &str) -> PathBuf {
    conformance_dir().join("answers").join(name)
}

/// A file of `lines`, each ended by a line break.
fn lines(lines: &[&str]) -> String {
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

/// A v3 session file in a fresh folder: the header, then `entries`, one a
/// line.
fn session(entries: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let text = lines(&[&[HEADER], entries].concat());
    let file = write_file(dir.path(), "session.jsonl", text);
    (dir, file)
}

/// A v3 session of `n` user messages in one line, ids `00000001`…
fn linear_session(dir: &Path, n: usize) -> PathBuf {
    let mut text = format!("{HEADER}\n");
    for i in 1..=n {
        let id = format!("{i:08x}");
        let parent = (i > 1).then(|| format!("{:08x}", i - 1));
        text.push_str(&message_line(&id, parent.as_deref(), &format!("step {i}")));
        text.push('\n');
    }
    let path = dir.join("linear.jsonl");
    std::fs::write(&path, text).expect("write session");
    path
}

fn musepi(args: &[&str]) -> Output {
    musepi_with_stdin(args, None)
}

fn musepi_with_stdin(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_musepi"));
    cmd.args(args)
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("musepi starts");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(bytes) = stdin {
        // A command that refuses before reading closes its end early.
        if let Err(e) = input.write_all(bytes) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {e}");
        }
    }
    drop(input);
    child.wait_with_output().expect("musepi runs")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("utf-8 stderr")
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(o), stderr(o)))
}

fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"cli-test","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#;

#[test]
fn stats_reports_what_the_session_model_reads() {
    let file = conformance("rand-0002.jsonl");
    let o = musepi(&["session", "stats", p(&file), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    let (s, _) = load_file(&file, &mut SequentialIds::new()).unwrap();
    assert_eq!(v["version"], 2);
    assert_eq!(v["entryCount"], s.len());
    assert_eq!(v["leafId"], s.leaf_id().unwrap().as_str());
    let path = s.branch(None).unwrap().len();
    assert_eq!(v["pathLength"], path);
    assert_eq!(
        v["byType"]["message"],
        s.entries().iter().filter(|e| e.message().is_some()).count()
    );
    assert_eq!(v["labels"].as_array().unwrap().len(), s.labels().len());
    assert_eq!(v["sessionName"].as_str(), s.session_name());
    assert_eq!(v["problems"], Value::Array(vec![]));
    let by_type: u64 = v["byType"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(by_type, s.len() as u64);
}

/// A session whose names carry terminal controls: a label with an escape
/// sequence and a line break, a session name that sets the window title,
/// an entry type that clears the screen.
fn session_with_controls() -> (tempfile::TempDir, PathBuf) {
    session(&[
        &message_line("00000001", None, "hello \u{1b}[5mblink"),
        r#"{"type":"label","id":"00000002","parentId":"00000001","timestamp":"2025-01-01T00:00:02.000Z","targetId":"00000001","label":"red\u001b[31m\r\nlabel"}"#,
        r#"{"type":"session_info","id":"00000003","parentId":"00000002","timestamp":"2025-01-01T00:00:03.000Z","name":"title\u001b]0;owned\u0007\tname"}"#,
        r#"{"type":"odd\u001b[2J","id":"00000004","parentId":"00000003","timestamp":"2025-01-01T00:00:04.000Z"}"#,
    ])
}

#[test]
fn stats_escapes_control_characters_and_json_keeps_them() {
    let (_dir, file) = session_with_controls();
    let text = shown(
        &["session", "stats", p(&file)],
        &[
            r"red\u001b[31m\r\nlabel",
            r"title\u001b]0;owned\u0007\tname",
            r"odd\u001b[2J",
        ],
    );
    // Every row stays one line, aligned on the widest key.
    let row = |key: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap_or_else(|| panic!("{key} in {text}"))
            .to_owned()
    };
    let column = |line: &str, value: &str| line.find(value).unwrap();
    assert_eq!(
        column(&row("session name"), "title"),
        column(&row("00000001"), "red")
    );

    let v = json(&musepi(&["session", "stats", p(&file), "--json"]));
    assert_eq!(v["labels"][0]["label"], "red\x1b[31m\r\nlabel");
    assert_eq!(v["sessionName"], "title\x1b]0;owned\x07\tname");
    assert_eq!(v["byType"]["odd\x1b[2J"], 1);
}

#[test]
fn context_ls_and_branch_escape_control_characters() {
    let (dir, file) = session_with_controls();
    for (args, part) in [
        (vec!["context", p(&file)], r"hello \u001b[5mblink"),
        // The session's name, its tab made a space as every preview does.
        (
            vec!["ls", "--session-dir", p(dir.path())],
            r"title\u001b]0;owned\u0007 name",
        ),
    ] {
        shown(&args, &[part]);
    }
    // Going back to the message puts its text back in the editor.
    let out = dir.path().join("back.jsonl");
    shown(
        &["branch", p(&file), "--to", "00000001", "-o", p(&out)],
        &[r"hello \u001b[5mblink"],
    );
}

/// Text whose bidirectional controls would reorder the line a terminal
/// shows ("Trojan Source") and whose zero-width space and tag characters
/// would hide in it is shown with them escaped; an emoji joined by U+200D
/// is left whole; JSON carries every character exactly.
#[test]
fn bidirectional_and_invisible_characters_are_escaped_for_people() {
    let dir = tempfile::tempdir().unwrap();
    let family = "👨\u{200d}👩\u{200d}👧";
    let text = lines(&[
        HEADER,
        &message_line("00000001", None, &format!("run \u{202e}txt.exe{family}")),
        r#"{"type":"label","id":"00000002","parentId":"00000001","timestamp":"2025-01-01T00:00:02.000Z","targetId":"00000001","label":"ok\u2066 // admin\u2069\u200b"}"#,
        r#"{"type":"session_info","id":"00000003","parentId":"00000002","timestamp":"2025-01-01T00:00:03.000Z","name":"name\udb40\udc41\u200f"}"#,
    ]);
    let file = write_file(dir.path(), "bidi.jsonl", text);
    let label = r"ok\u2066 // admin\u2069\u200b";
    let name = r"name\udb40\udc41\u200f";
    shown(&["session", "stats", p(&file)], &[label, name]);
    let tree = shown(
        &["session", "tree", p(&file)],
        &[&format!(r"run \u202etxt.exe{family}"), label],
    );
    assert!(!tree.contains('\u{202e}'), "{tree}");
    shown(&["context", p(&file)], &[r"run \u202etxt.exe"]);
    shown(&["ls", "--session-dir", p(dir.path())], &[name]);

    let v = json(&musepi(&["session", "stats", p(&file), "--json"]));
    assert_eq!(
        v["labels"][0]["label"],
        "ok\u{2066} // admin\u{2069}\u{200b}"
    );
    assert_eq!(v["sessionName"], "name\u{e0041}\u{200f}");
}

/// The footer of `context` names the model, the thinking level and the
/// leaf, all read from the session.
#[test]
fn the_context_footer_escapes_the_model_thinking_level_and_leaf() {
    let (_dir, file) = session(&[
        &message_line("00000001", None, "hello"),
        r#"{"type":"model_change","id":"00000002","parentId":"00000001","timestamp":"2025-01-01T00:00:02.000Z","provider":"p\u001b[31m","modelId":"m\r"}"#,
        r#"{"type":"thinking_level_change","id":"0000\u001b[2J","parentId":"00000002","timestamp":"2025-01-01T00:00:03.000Z","thinkingLevel":"high\u0007"}"#,
    ]);
    shown(
        &["context", p(&file)],
        &[r"model p\u001b[31m/m\r, thinking high\u0007, leaf 0000\u001b[2J"],
    );
    let v = json(&musepi(&["context", p(&file), "--json"]));
    assert_eq!(v["leafId"], "0000\x1b[2J");
    assert_eq!(v["thinkingLevel"], "high\x07");
}

/// `plan --show-prompts` prints the prompts, which quote the session: line
/// breaks kept, other control characters escaped; `--json` exact.
#[test]
fn plan_prompts_escape_what_they_quote() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = format!("{HEADER}\n");
    for i in 1..=12 {
        let id = format!("{i:08x}");
        let parent = (i > 1).then(|| format!("{:08x}", i - 1));
        let said = format!("step {i} \x1b[31mred\r\n\ttwo {}", "x".repeat(400));
        text.push_str(&message_line(&id, parent.as_deref(), &said));
        text.push('\n');
    }
    let file = write_file(dir.path(), "long.jsonl", text);
    let args = [
        "plan",
        p(&file),
        "--keep-recent",
        "200",
        "--strategy",
        "llm",
        "--show-prompts",
    ];
    shown(&args, &["step 1 \\u001b[31mred\n\\ttwo x"]);
    let o = musepi(&[&args[..], &["--json"]].concat());
    let prompt = json(&o)["requests"][0]["prompt"].to_string();
    assert!(
        prompt.contains(r"step 1 \u001b[31mred\r\n\ttwo x"),
        "{prompt}"
    );
}

/// `prune` lists each result it blanks by its entry's id, escaped.
#[test]
fn prune_escapes_the_ids_it_lists() {
    let read = |call: &str| {
        format!(
            r#"{{"role":"assistant","content":[{{"type":"toolCall","id":"{call}","name":"read","arguments":{{"path":"src/a.rs"}}}}],"provider":"p","model":"m","stopReason":"toolUse","timestamp":2}}"#
        )
    };
    let result = |call: &str| {
        format!(
            r#"{{"role":"toolResult","toolCallId":"{call}","toolName":"read","content":[{{"type":"text","text":"{}"}}],"isError":false,"timestamp":3}}"#,
            "fn a() {}\\n".repeat(200)
        )
    };
    let entry = |id: &str, parent: &str, message: &str| {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2025-01-01T00:00:02.000Z","message":{message}}}"#
        )
    };
    let (_dir, file) = session(&[
        &message_line("00000001", None, "read it"),
        &entry("00000002", "00000001", &read("c1")),
        &entry(r"r\u001b[2J", "00000002", &result("c1")),
        &entry("00000004", r"r\u001b[2J", &read("c2")),
        &entry("00000005", "00000004", &result("c2")),
    ]);
    let text = shown(&["prune", p(&file), "--dry-run", "--min-saving", "0"], &[]);
    assert!(text.starts_with(r"superseded  r\u001b[2J  "), "{text}");
}

/// Errors and warnings on stderr escape what they quote from the session.
#[test]
fn errors_escape_the_ids_they_name() {
    let (dir, file) = session(&[
        &message_line("00000001", None, "hello"),
        r#"{"type":"compaction","id":"k\u001b[2J","parentId":"00000001","timestamp":"2025-01-01T00:00:02.000Z","summary":"s","firstKeptEntryId":"00000001","tokensBefore":10}"#,
    ]);
    let out = dir.path().join("frames");
    let o = musepi(&["snapcompact", "render", p(&file), "--out", p(&out)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert_escaped(
        &err,
        &[r"compaction k\u001b[2J holds no snapcompact archive"],
    );
}

#[test]
fn check_help_says_repair_exits_by_the_problems_left_in_the_copy() {
    for args in [
        &["session", "check", "--help"][..],
        &["session", "--help"][..],
    ] {
        let help = stdout(&musepi(args));
        let line = help
            .lines()
            .find(|l| l.contains("exit 2 if there is any"))
            .unwrap_or_else(|| panic!("{args:?}: {help}"));
        assert!(
            line.contains("with --repair, any left in the repaired copy"),
            "{args:?}: {line}"
        );
    }
}

#[test]
fn check_counts_in_words_singular_and_plural() {
    let dir = tempfile::tempdir().unwrap();
    for (messages, bad, counted) in [
        (1, "not json\n", "1 problem (1 entry)"),
        (3, "not json\nnor this\n", "2 problems (3 entries)"),
    ] {
        let ids: Vec<String> = (1..=messages).map(|i| format!("{i:08}")).collect();
        let mut text = vec![HEADER.to_owned()];
        for (i, id) in ids.iter().enumerate() {
            let parent = i.checked_sub(1).map(|j| ids[j].as_str());
            text.push(message_line(id, parent, "hi"));
        }
        let text: Vec<&str> = text.iter().map(String::as_str).collect();
        let file = write_file(dir.path(), &format!("{messages}.jsonl"), lines(&text) + bad);
        let o = musepi(&["session", "check", p(&file)]);
        assert_eq!(code(&o), 2);
        let out = stdout(&o);
        assert!(out.ends_with(&format!(": {counted}\n")), "{out}");
    }
}

/// `session check --repair` names the file it read and the copy it wrote,
/// and why it dropped lines: escaped, as its problem lines are.
#[test]
fn check_and_repair_escape_the_names_they_print() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{}not json\n",
        lines(&[HEADER, &message_line("00000001", None, "hi")])
    );
    let file = write_file(dir.path(), "in\x1b[31m.jsonl", text);
    let out = dir.path().join("out\x1b]0;t\x07.jsonl");
    let text = shown(
        &["session", "check", p(&file), "--repair", "-o", p(&out)],
        &[
            r"in\u001b[31m.jsonl: 1 problem (1 entry)",
            "dropped line 3: malformed JSON",
            r"wrote ",
        ],
    );
    assert!(
        text.contains(r"out\u001b]0;t\u0007.jsonl: ok, no problems"),
        "{text}"
    );
    let v = json(&musepi(&["session", "check", p(&file), "--json"]));
    assert_eq!(v["file"], p(&file));
}

#[test]
fn global_flags_are_accepted_anywhere() {
    let file = conformance("rand-0004.jsonl");
    let a = musepi(&["--json", "session", "stats", p(&file)]);
    let b = musepi(&["session", "--json", "stats", p(&file)]);
    let c = musepi(&["session", "stats", p(&file), "--json", "-q"]);
    assert_eq!(code(&a), 0);
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(a.stdout, c.stdout);
    let d = musepi(&[
        "session",
        "stats",
        p(&file),
        "--now",
        "2025-05-01T10:00:00.000Z",
        "--deterministic-ids",
    ]);
    assert_eq!(code(&d), 0, "{}", stderr(&d));
}

#[test]
fn bad_usage_exits_2() {
    for args in [
        vec!["session", "bogus"],
        vec!["session", "stats"],
        vec!["session", "check", "x.jsonl", "--repair"],
        vec![
            "session",
            "migrate",
            "x.jsonl",
            "-o",
            "y.jsonl",
            "--in-place",
        ],
        vec!["--now", "yesterday", "session", "stats", "x.jsonl"],
    ] {
        let o = musepi(&args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    assert_eq!(code(&musepi(&["--help"])), 0);
}

#[test]
fn a_missing_file_is_bad_input_and_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    for cmd in ["stats", "tree", "check", "migrate"] {
        let o = musepi(&["session", cmd, p(&missing)]);
        assert_eq!(code(&o), 2, "{cmd}");
        let err = stderr(&o);
        assert!(
            err.contains("missing.jsonl") && err.contains("No such file"),
            "{cmd}: {err}"
        );
    }
    assert!(!missing.exists());
}

#[test]
fn a_garbage_file_is_refused_by_every_command_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let text = "this is\nnot a session\n";
    let file = write_file(dir.path(), "garbage.jsonl", text);
    let out = dir.path().join("out.jsonl");
    for args in [
        vec!["session", "stats", p(&file)],
        vec!["session", "tree", p(&file)],
        vec!["session", "check", p(&file)],
        vec!["session", "check", p(&file), "--repair", "-o", p(&out)],
        vec!["session", "migrate", p(&file)],
        vec!["session", "migrate", p(&file), "--in-place"],
    ] {
        let o = musepi(&args);
        assert_eq!(code(&o), 2, "{args:?}");
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert!(
            all.contains("garbage.jsonl") && all.contains("not a pi session"),
            "{args:?}: {all}"
        );
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    assert!(!out.exists());
}

#[test]
fn empty_and_header_only_files() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write_file(dir.path(), "empty.jsonl", "");
    let o = musepi(&["session", "check", p(&empty), "--json"]);
    assert_eq!(code(&o), 2);
    assert_eq!(json(&o)["problems"][0]["kind"], "empty-file");
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);

    let header_only = write_file(dir.path(), "header.jsonl", format!("{HEADER}\n"));
    let o = musepi(&["session", "stats", p(&header_only), "--json"]);
    assert_eq!(code(&o), 0);
    let v = json(&o);
    assert_eq!(v["entryCount"], 0);
    assert_eq!(v["leafId"], Value::Null);
    let o = musepi(&["session", "tree", p(&header_only)]);
    assert_eq!(stdout(&o), "(no entries)\n");
    assert_eq!(code(&musepi(&["session", "check", p(&header_only)])), 0);
}

#[test]
fn check_lists_every_problem_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let text = lines(&[
        HEADER,
        &message_line("a1", None, "one"),
        "not json",
        &message_line("b2", Some("zz"), "dangling"),
        &message_line("a1", Some("a1"), "duplicate"),
    ]);
    let file = write_file(dir.path(), "problems.jsonl", &text);
    let o = musepi(&["session", "check", p(&file), "--json"]);
    assert_eq!(code(&o), 2);
    let v = json(&o);
    let kinds: Vec<(u64, &str)> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["line"].as_u64().unwrap(), p["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            (3, "malformed-json"),
            (4, "dangling-parent"),
            (5, "duplicate-id"),
            (5, "self-parent")
        ]
    );
    assert_eq!(v["problems"][1]["entryId"], "b2");
    assert!(v["problems"][0].get("entryId").is_none());
    assert!(
        v["problems"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("malformed JSON")
    );
    let human = stdout(&musepi(&["session", "check", p(&file)]));
    assert!(
        human.contains(&format!(
            "{}:4: entry b2: parent `zz` does not exist",
            p(&file)
        )),
        "{human}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        text,
        "check never writes"
    );
    assert_eq!(
        code(&musepi(&[
            "session",
            "check",
            p(&conformance("rand-0001.jsonl"))
        ])),
        0
    );
}

#[test]
fn repair_fixes_a_copy_of_a_torn_file_and_never_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "\ngarbage before\n{HEADER}\n{}\n\n{}\n{{\"type\":\"message\",\"id\":\"c3\",\"par",
        message_line("a1", None, "one"),
        message_line("b2", Some("a1"), "two"),
    );
    let file = write_file(dir.path(), "torn.jsonl", &text);
    // Written a minute ago, so the torn line is not an append in progress.
    settle(&file);
    // The journal refuses to migrate or append until the file is repaired.
    let o = musepi(&["session", "migrate", p(&file), "--in-place"]);
    assert_eq!(code(&o), 2);
    assert_stderr_has(&o, "torn");

    let o = musepi(&["session", "check", p(&file), "--repair", "-o", p(&file)]);
    assert_eq!(code(&o), 2, "never in place");
    assert!(stderr(&o).contains("never writes in place"));

    let out = dir.path().join("repaired.jsonl");
    let o = musepi(&repair_json(&file, &out));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    let dropped: Vec<u64> = v["repair"]["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["line"].as_u64().unwrap())
        .collect();
    assert_eq!(dropped, [1, 2, 5, 7]);
    assert_eq!(v["repair"]["keptLines"], 3);
    assert_eq!(v["repair"]["remaining"], Value::Array(vec![]));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        text,
        "the input is untouched"
    );
    let repaired = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        repaired,
        lines(&[
            HEADER,
            &message_line("a1", None, "one"),
            &message_line("b2", Some("a1"), "two"),
        ])
    );
    assert_eq!(code(&musepi(&["session", "check", p(&out)])), 0);
}

#[test]
fn migrate_matches_the_reference_bytes_and_twice_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    for (session, migrated) in [
        ("rand-0005.jsonl", "rand-0005.migrated.jsonl"),
        ("rand-0011.jsonl", "rand-0011.migrated.jsonl"),
        ("rand-0002.jsonl", "rand-0002.migrated.jsonl"),
        ("rand-0008.jsonl", "rand-0008.migrated.jsonl"),
    ] {
        let file = settled_copy(&conformance(session), dir.path(), session);
        let expected = std::fs::read(answer(migrated)).unwrap();
        let o = musepi(&[
            "session",
            "migrate",
            p(&file),
            "--deterministic-ids",
            "--dry-run",
        ]);
        assert_eq!(code(&o), 0);
        assert!(stdout(&o).contains("would migrate"), "{}", stdout(&o));
        assert_eq!(
            std::fs::read(&file).unwrap(),
            std::fs::read(conformance(session)).unwrap(),
            "dry run"
        );

        let out = dir.path().join(format!("out-{session}"));
        let o = musepi(&[
            "session",
            "migrate",
            p(&file),
            "-o",
            p(&out),
            "--deterministic-ids",
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(std::fs::read(&out).unwrap(), expected, "{session} -o");
        assert_eq!(
            std::fs::read(&file).unwrap(),
            std::fs::read(conformance(session)).unwrap()
        );

        let o = musepi(&[
            "session",
            "migrate",
            p(&file),
            "--deterministic-ids",
            "--json",
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(json(&o)["changed"], true);
        assert_eq!(
            std::fs::read(&file).unwrap(),
            expected,
            "{session} in place"
        );

        let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
        let o = musepi(&["session", "migrate", p(&file), "--json"]);
        assert_eq!(code(&o), 0);
        assert_eq!(json(&o)["changed"], false);
        assert_eq!(
            std::fs::read(&file).unwrap(),
            expected,
            "{session}: twice is a no-op"
        );
        assert_eq!(
            std::fs::metadata(&file).unwrap().modified().unwrap(),
            modified
        );
    }
}

#[test]
fn migrate_reads_standard_input_into_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = std::fs::read(conformance("rand-0011.jsonl")).unwrap();
    let out = dir.path().join("from-stdin.jsonl");
    let o = musepi_with_stdin(
        &[
            "session",
            "migrate",
            "-",
            "-o",
            p(&out),
            "--deterministic-ids",
        ],
        Some(&input),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(answer("rand-0011.migrated.jsonl")).unwrap()
    );
    let o = musepi_with_stdin(&["session", "migrate", "-"], Some(&input));
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("-o OUT"));
}

#[test]
fn read_only_commands_never_write() {
    let dir = tempfile::tempdir().unwrap();
    let file = settled_copy(&conformance("rand-0005.jsonl"), dir.path(), "v1.jsonl");
    let before = std::fs::read(&file).unwrap();
    let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
    for cmd in ["stats", "tree", "check"] {
        let o = musepi(&["session", cmd, p(&file)]);
        assert_eq!(code(&o), 0, "{cmd}: {}", stderr(&o));
    }
    assert_eq!(std::fs::read(&file).unwrap(), before);
    assert_eq!(
        std::fs::metadata(&file).unwrap().modified().unwrap(),
        modified
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no temporary or output files: {names:?}");
}

#[test]
fn standard_input_can_be_read() {
    let input = std::fs::read(conformance("rand-0006.jsonl")).unwrap();
    let o = musepi_with_stdin(&["session", "stats", "-", "--json"], Some(&input));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["file"], "<stdin>");
    let (s, _) = load_file(&conformance("rand-0006.jsonl"), &mut SequentialIds::new()).unwrap();
    assert_eq!(v["entryCount"], s.len());
}

#[test]
fn real_sessions_migrate_deterministically() {
    for (name, count) in [
        ("before-compaction.jsonl", 1002),
        ("large-session.jsonl", 1018),
    ] {
        let Some(file) = pi_fixture("real_sessions_migrate_deterministically", name) else {
            continue;
        };
        let o = musepi(&[
            "session",
            "stats",
            p(&file),
            "--json",
            "--deterministic-ids",
        ]);
        assert_eq!(code(&o), 0);
        let v = json(&o);
        assert_eq!(v["version"], 1);
        assert_eq!(v["entryCount"], count);
        assert_eq!(v["leafId"], format!("{count:08x}"));
        assert_eq!(v["pathLength"], count);
    }
}

#[test]
fn the_tree_marks_the_leaf_and_collapses_long_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = linear_session(dir.path(), 1018);
    let o = musepi(&["session", "tree", p(&file)]);
    assert_eq!(code(&o), 0);
    let text = stdout(&o);
    assert!(text.lines().count() < 20, "{text}");
    assert_has(&text, "⋮ 1014 more entries");
    let leaf = text
        .lines()
        .find(|l| l.contains("◀ leaf"))
        .expect("leaf line");
    assert_has(leaf, "000003fa");
    assert!(!text.contains('\x1b'), "no colour when not a terminal");

    let full = stdout(&musepi(&["session", "tree", p(&file), "--full"]));
    assert_eq!(full.lines().count(), 1018);

    let branched = conformance("rand-0001.jsonl");
    let o = musepi(&["session", "tree", p(&branched), "--json"]);
    let v = json(&o);
    let (s, _) = load_file(&branched, &mut SequentialIds::new()).unwrap();
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), s.len());
    assert_eq!(v["leafId"], s.leaf_id().unwrap().as_str());
    let on_path = nodes.iter().filter(|n| n["onLeafPath"] == true).count();
    assert_eq!(on_path, s.branch(None).unwrap().len());
    let text = stdout(&musepi(&["session", "tree", p(&branched)]));
    assert!(text.contains("├─ ") && text.contains("└─ "), "{text}");
}

/// The character column where the type starts on each entry line: after
/// the drawing, the marker, the id and the padding.
fn type_columns(text: &str) -> Vec<usize> {
    text.lines()
        .filter(|l| !l.contains('⋮'))
        .map(|l| {
            let chars: Vec<char> = l.chars().collect();
            let marker = chars
                .iter()
                .position(|c| *c == '●' || *c == '○')
                .expect("a marker on every entry line");
            let after_id = marker + 2 + 8;
            after_id + chars[after_id..].iter().take_while(|c| **c == ' ').count()
        })
        .collect()
}

#[test]
fn the_tree_lines_up_its_columns_under_branches() {
    let o = musepi(&["session", "tree", p(&fixture("tree.jsonl"))]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("      ├─ ○ d0000001"),
        "three levels deep: {text}"
    );
    let columns = type_columns(&text);
    assert!(
        columns.iter().all(|c| *c == columns[0]),
        "types start at columns {columns:?}:\n{text}"
    );
    insta::assert_snapshot!("tree_fixture", text);
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli.md")).unwrap();
    assert!(
        docs.contains(&format!(
            "$ musepi session tree tests/fixtures/tree.jsonl\n{text}```"
        )),
        "docs/cli.md shows this tree as the command prints it:\n{text}"
    );

    let (_dir, file) = session_with_controls();
    let text = stdout(&musepi(&["session", "tree", p(&file)]));
    assert_escaped(&text, &[r"[red\u001b[31m\r\nlabel]", r"odd\u001b[2J"]);
}

/// The type column is as wide as the widest type shown: an entry a
/// collapsed run hides (here a `thinking_level_change`, wider than `user`)
/// takes no room, and shows its width again with `--full`.
#[test]
fn the_tree_pads_types_to_the_rows_it_shows() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = format!("{HEADER}\n");
    for i in 1..=9_usize {
        let id = format!("{i:08x}");
        let parent = (i > 1).then(|| format!("{:08x}", i - 1));
        let line = if i == 5 {
            format!(
                r#"{{"type":"thinking_level_change","id":"{id}","parentId":"{}","timestamp":"2025-01-01T00:00:05.000Z","thinkingLevel":"high"}}"#,
                parent.as_deref().unwrap_or_default()
            )
        } else {
            message_line(&id, parent.as_deref(), &format!("step {i}"))
        };
        text.push_str(&line);
        text.push('\n');
    }
    let file = write_file(dir.path(), "hidden.jsonl", text);
    let collapsed = shown(&["session", "tree", p(&file)], &["⋮ 5 more entries"]);
    assert!(!collapsed.contains("thinking_level_change"), "{collapsed}");
    assert_has(&collapsed, "● 00000001 user  step 1\n");
    let full = shown(
        &["session", "tree", p(&file), "--full"],
        &["thinking_level_change"],
    );
    assert_has(&full, &format!("● 00000001 {:<21}  step 1\n", "user"));
}

/// docs/cli.md quotes the last line `musepi context` prints for the example
/// session.
#[test]
fn the_docs_context_footer_is_what_the_command_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let docs = std::fs::read_to_string(root.join("docs/cli.md")).unwrap();
    let example = root.join("examples/sessions/todo-refactor.jsonl");
    let o = musepi(&["context", p(&example)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    let footer = text.lines().last().unwrap();
    let shown =
        format!("`musepi context examples/sessions/todo-refactor.jsonl` ends with `{footer}`.");
    assert!(docs.contains(&shown), "docs/cli.md shows: {shown}");
}

#[test]
fn no_color_is_respected_even_for_errors() {
    let o = Command::new(env!("CARGO_BIN_EXE_musepi"))
        .args(["session", "stats", "/nonexistent/x.jsonl"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
    assert!(!String::from_utf8_lossy(&o.stderr).contains('\x1b'));
}

/// A rewrite into a folder that cannot be written fails with exit 1 and
/// leaves the file as it was. As root, permissions do not stop writes, so
/// the command runs as the unprivileged user `nobody`.
#[test]
fn a_read_only_folder_fails_the_rewrite_cleanly() {
    use std::os::unix::fs::PermissionsExt as _;
    use std::os::unix::process::CommandExt as _;

    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("ro");
    std::fs::create_dir(&folder).unwrap();
    let file = settled_copy(&conformance("rand-0002.jsonl"), &folder, "v2.jsonl");
    let before = std::fs::read(&file).unwrap();
    // The file itself may be written; only the folder may not.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_musepi"));
    cmd.args(["session", "migrate", p(&file), "--in-place"]);
    if running_as_root() {
        cmd.uid(65534).gid(65534);
    }
    let o = cmd.output().unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(code(&o), 1, "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("v2.jsonl") || err.contains("ro"), "{err}");
    assert_has(&err, "original file is intact");
    assert_eq!(std::fs::read(&file).unwrap(), before);
    let names: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
}

/// Whether this process runs as root, read from `/proc/self/status`.
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}
