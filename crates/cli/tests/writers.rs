//! Commands that change a session, run as processes: the same `-o OUT`,
//! `-o -`, `--dry-run` and `--force` everywhere; a live session refused in
//! place (exit 3); a failed write leaves the file byte for byte as it was.

#![allow(clippy::unwrap_used)]

mod support;

use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use musepi_session_model::{LIVE_WINDOW_MS, SequentialIds, load_bytes};
use support::{assert_has, assert_stderr_has, error_message, fixture, settle, settled_copy};

const MUSEPI: &str = env!("CARGO_BIN_EXE_musepi");
const NOW: &str = "2026-02-01T00:00:00.000Z";

fn musepi(args: &[&str]) -> Output {
    Command::new(MUSEPI)
        .args(args)
        .env("HOME", std::env::temp_dir().join("musepi-writers-home"))
        .env("NO_COLOR", "1")
        .env_remove("MUSEPI_API_KEY")
        .output()
        .unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The example session, copied into `dir` as `name`, not settled.
fn example(dir: &Path, name: &str) -> PathBuf {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions/todo-refactor.jsonl");
    let dst = dir.join(name);
    std::fs::copy(src, &dst).unwrap();
    dst
}

/// A v2 copy of the example (migrate always rewrites it).
fn v2(dir: &Path, name: &str) -> PathBuf {
    let path = example(dir, name);
    let text =
        std::fs::read_to_string(&path)
            .unwrap()
            .replacen("\"version\":3", "\"version\":2", 1);
    std::fs::write(&path, text).unwrap();
    path
}

/// The writing commands, each changing `file` when run in place.
fn writers(file: &str) -> Vec<Vec<String>> {
    let s = |v: &[&str]| v.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    vec![
        s(&["prune", file, "--min-saving", "0", "--now", NOW]),
        s(&["compact", file, "--now", NOW, "--deterministic-ids"]),
        s(&[
            "branch",
            file,
            "--to",
            "00000003",
            "--now",
            NOW,
            "--deterministic-ids",
        ]),
    ]
}

fn run(args: &[String], extra: &[&str]) -> Output {
    let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
    all.extend_from_slice(extra);
    musepi(&all)
}

/// Runs the command `args` makes in place on the copy `make` writes this
/// very moment: the output, the copy and its bytes before the run. A
/// command that, on a busy machine, ended only after the live window of
/// that write may rightly have written, so it runs again on a fresh copy.
fn run_just_written(
    make: impl Fn() -> PathBuf,
    args: impl Fn(&str) -> Vec<String>,
) -> (Output, PathBuf, Vec<u8>) {
    // A second less than the window: file times come from a coarse clock.
    let window =
        Duration::from_millis(LIVE_WINDOW_MS.unsigned_abs()).saturating_sub(Duration::from_secs(1));
    for _ in 0..SLOW_ROUNDS {
        let started = Instant::now();
        let file = make();
        let before = std::fs::read(&file).unwrap();
        let o = run(&args(p(&file)), &[]);
        if code(&o) == 3 || started.elapsed() < window {
            return (o, file, before);
        }
    }
    panic!(
        "each of {SLOW_ROUNDS} runs ended only after the live window of the copy it ran on: \
         the machine is too busy for this test"
    );
}

/// How many times a test reruns a round that a busy machine made too slow
/// to decide, before it gives up with a message instead of looping on.
const SLOW_ROUNDS: usize = 20;

#[test]
fn a_live_session_is_refused_in_place_with_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    for which in 0..writers("").len() {
        let (o, file, before) = run_just_written(
            || example(dir.path(), "live.jsonl"),
            |file| writers(file).swap_remove(which),
        );
        let args = &writers(p(&file))[which];
        assert_eq!(code(&o), 3, "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("live.jsonl")
                && err.contains("s ago")
                && err.contains("musepi serve")
                && err.contains("--force"),
            "{args:?}: {err}"
        );
        assert_eq!(std::fs::read(&file).unwrap(), before, "{args:?}");
    }
    let (o, v2, before) = run_just_written(
        || v2(dir.path(), "live-v2.jsonl"),
        |file| vec!["session".into(), "migrate".into(), file.into()],
    );
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let file = example(dir.path(), "live.jsonl");

    // A process holding the lock is seen too, however old the file.
    settle(&file);
    let holder = std::fs::File::open(&file).unwrap();
    holder.lock().unwrap();
    let o = run(&writers(p(&file))[0], &[]);
    assert_eq!(code(&o), 3);
    assert_stderr_has(&o, "holds its lock");
    drop(holder);

    // Writing elsewhere never needs --force; --force writes in place.
    let out = dir.path().join("out.jsonl");
    let o = run(&writers(p(&file))[0], &["-o", p(&out)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = musepi(&["prune", p(&v2), "--force", "--min-saving", "0"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_ne!(std::fs::read(&v2).unwrap(), before);
}

#[test]
fn every_writer_takes_o_out_and_leaves_the_source_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = example(dir.path(), "s.jsonl");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let before = std::fs::read(&file).unwrap();
    let old = v2(dir.path(), "v2.jsonl");
    let before_v2 = std::fs::read(&old).unwrap();
    let mut cases = writers(p(&file));
    cases.push(vec!["session".into(), "migrate".into(), p(&old).into()]);
    for (n, args) in cases.iter().enumerate() {
        let out = dir.path().join(format!("out-{n}.jsonl"));
        let o = run(args, &["-o", p(&out)]);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        let written = std::fs::read(&out).unwrap();
        let source = if args[0] == "session" {
            &before_v2
        } else {
            &before
        };
        assert_ne!(&written, source, "{args:?}: the copy holds the change");
        let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        if args[0] != "session" {
            assert_eq!(mode, 0o640, "{args:?}: the source's mode");
        }
        // Again: OUT exists now.
        let o = run(args, &["-o", p(&out)]);
        assert_eq!(code(&o), 2, "{args:?}");
        assert!(
            stderr(&o).contains("exists") && stderr(&o).contains("--force"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_eq!(std::fs::read(&out).unwrap(), written);
        let o = run(args, &["-o", p(&out), "--force"]);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        // To standard output: the same session.
        let o = run(args, &["-o", "-"]);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        assert_eq!(
            o.stdout, written,
            "{args:?}: -o - prints what -o OUT writes"
        );
        load_bytes(Path::new("<stdout>"), &o.stdout, &mut SequentialIds::new()).unwrap();
        assert!(!dir.path().join("-").exists(), "{args:?}: no file named -");
    }
    assert_eq!(std::fs::read(&file).unwrap(), before);
    assert_eq!(std::fs::read(&old).unwrap(), before_v2);
    let o = musepi(&["prune", p(&file), "-o", "-", "--json"]);
    assert_eq!(code(&o), 2);
}

/// Every command that writes a session answers `--json` with `warnings`,
/// a list of what its writes had to say (empty when nothing), whatever it
/// did: in place, a copy, a dry run, nothing to do, a new session.
#[test]
fn every_writers_json_result_has_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = |name: &str| {
        let file = example(dir.path(), name);
        settle(&file);
        p(&file).to_owned()
    };
    let s = |v: &[&str]| v.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    let (pruned, compacted, branched) = (fresh("p.jsonl"), fresh("c.jsonl"), fresh("b.jsonl"));
    let old = v2(dir.path(), "v2.jsonl");
    settle(&old);
    let torn = settled_copy(&fixture("bad/torn-tail.jsonl"), dir.path(), "torn.jsonl");
    let supply = support::script(
        dir.path(),
        "supply.sh",
        "cat > /dev/null\nprintf '%s\\n' '{\"compaction\": {\"summary\": \"Goal: go on.\"}}'",
    );
    let hooks = support::hook_settings(
        dir.path(),
        &serde_json::json!({"session_before_compact": [{"command": [p(&supply)]}]}),
    );
    let out = |name: &str| p(&dir.path().join(name)).to_owned();
    let cases = [
        s(&[
            "prune",
            &pruned,
            "--min-saving",
            "0",
            "--force",
            "--now",
            NOW,
        ]),
        s(&["prune", &pruned, "--dry-run"]),
        s(&[
            "compact",
            &compacted,
            "--force",
            "--now",
            NOW,
            "--deterministic-ids",
        ]),
        // Already compacted: nothing to do.
        s(&["compact", &compacted, "--force", "--now", NOW]),
        s(&["compact", &fresh("cd.jsonl"), "--dry-run"]),
        s(&[
            "compact",
            &fresh("co.jsonl"),
            "-o",
            &out("co-out.jsonl"),
            "--now",
            NOW,
        ]),
        s(&[
            "branch",
            &branched,
            "--to",
            "00000003",
            "--force",
            "--now",
            NOW,
            "--deterministic-ids",
        ]),
        s(&["branch", &branched, "--to", "00000002", "--dry-run"]),
        s(&["session", "migrate", p(&old), "--force"]),
        s(&[
            "session",
            "check",
            p(&torn),
            "--repair",
            "-o",
            &out("repaired.jsonl"),
        ]),
        s(&[
            "handoff",
            &fresh("h.jsonl"),
            "-o",
            &out("new.jsonl"),
            "--settings",
            p(&hooks),
        ]),
    ];
    for args in cases {
        let o = run(&args, &["--json"]);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(doc["warnings"], serde_json::json!([]), "{args:?}: {doc}");
    }
    // The same from standard input.
    let stdin = std::fs::read(&old).unwrap();
    let o = support::musepi_in(
        dir.path(),
        dir.path(),
        &[
            "session",
            "migrate",
            "-",
            "-o",
            &out("from-stdin.jsonl"),
            "--json",
        ],
        Some(&stdin),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["warnings"], serde_json::json!([]), "{doc}");
}

#[test]
fn dry_runs_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = example(dir.path(), "s.jsonl");
    settle(&file);
    let before = std::fs::read(&file).unwrap();
    let out = dir.path().join("out.jsonl");
    for args in writers(p(&file)) {
        for extra in [&["--dry-run"][..], &["--dry-run", "-o", p(&out)]] {
            let o = run(&args, extra);
            assert_eq!(code(&o), 0, "{args:?} {extra:?}: {}", stderr(&o));
            assert_eq!(std::fs::read(&file).unwrap(), before);
            assert!(!out.exists());
        }
    }
}

#[test]
fn an_unmigrated_v1_file_reads_with_ids_that_carry_between_commands() {
    let dir = tempfile::tempdir().unwrap();
    let file = settled_copy(&fixture("v1.jsonl"), dir.path(), "v1.jsonl");
    let before = std::fs::read(&file).unwrap();
    let tree = musepi(&["session", "tree", p(&file), "--json"]);
    assert_eq!(code(&tree), 0, "{}", stderr(&tree));
    let text = String::from_utf8_lossy(&tree.stdout).into_owned();
    assert!(
        text.contains("00000001") && text.contains("00000002"),
        "{text}"
    );
    assert_stderr_has(&tree, "session migrate");
    let o = musepi(&["context", p(&file), "--leaf", "00000001", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["leafId"], "00000001");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "reading never migrates"
    );
}

#[test]
fn readers_say_when_the_file_has_problems() {
    let dir = tempfile::tempdir().unwrap();
    // A folder name with a space and an accent: the command to paste is
    // quoted for the shell.
    let folder = dir.path().join("my sessions é");
    std::fs::create_dir(&folder).unwrap();
    let file = example(&folder, "s.jsonl");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("this line is not JSON\n");
    std::fs::write(&file, &text).unwrap();
    for args in [
        vec!["context", p(&file)],
        vec!["plan", p(&file)],
        vec!["session", "tree", p(&file)],
    ] {
        let o = musepi(&args);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        let line = format!(
            "has 1 problem; `musepi session check '{}'` lists them",
            p(&file)
        );
        assert_eq!(err.matches(&line).count(), 1, "{args:?}: {err}");
    }
    // From standard input the command reads `-`, not `<stdin>`, which a
    // shell would take for a redirection.
    let o = support::musepi_in(
        dir.path(),
        dir.path(),
        &["context", "-"],
        Some(text.as_bytes()),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_stderr_has(
        &o,
        "<stdin> has 1 problem; `musepi session check -` on the same input lists them",
    );
    let o = musepi(&["-q", "context", p(&file)]);
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
}

/// Runs `musepi args` under a file-size limit of `limit` bytes (with
/// SIGXFSZ ignored, so a write past it fails with EFBIG instead of killing
/// the process). `ulimit -f` counts 512-byte blocks.
fn under_size_limit(limit_blocks: u64, args: &[&str]) -> Output {
    let mut script = format!("trap '' XFSZ; ulimit -f {limit_blocks}; exec \"{MUSEPI}\"");
    for a in args {
        let _ = write!(script, " '{a}'");
    }
    Command::new("sh")
        .args(["-c", &script])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Appends a `custom` entry under the last line whose line is exactly
/// `len` bytes with its newline.
fn pad(text: &mut String, len: usize) {
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let skeleton = format!(
        "{{\"type\":\"custom\",\"id\":\"pad00000\",\"parentId\":\"{}\",\"timestamp\":\"2026-01-01T11:00:00.000Z\",\"customType\":\"pad\",\"data\":\"\"}}\n",
        last["id"].as_str().unwrap()
    );
    let fill = "y".repeat(len - skeleton.len());
    text.push_str(&skeleton.replace("\"data\":\"\"", &format!("\"data\":\"{fill}\"")));
}

#[test]
fn a_failed_append_is_cut_back_and_a_failed_rewrite_leaves_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let file = example(dir.path(), "s.jsonl");
    // Pad the file to 50 bytes short of a 512-byte block: under a limit of
    // that many blocks, the marker entry a navigation appends is written
    // only in part before the write fails.
    let mut text = std::fs::read_to_string(&file).unwrap();
    let want = (462 + 512 - text.len() % 512) % 512;
    pad(&mut text, if want < 200 { want + 512 } else { want });
    std::fs::write(&file, &text).unwrap();
    settle(&file);
    let before = std::fs::read(&file).unwrap();
    assert_eq!(before.len() % 512, 462);
    let blocks = (before.len() as u64).div_ceil(512);
    let o = under_size_limit(
        blocks,
        &["branch", p(&file), "--to", "00000003", "--now", NOW],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_stderr_has(&o, "File too large");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "cut back to its length"
    );

    // The cut changed the file just now; it is not an agent's write.
    settle(&file);
    // A rewrite that cannot finish its temporary file leaves the file and
    // the folder as they were.
    let o = under_size_limit(1, &["prune", p(&file), "--min-saving", "0", "--now", NOW]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_stderr_has(&o, "original file is intact");
    assert_eq!(std::fs::read(&file).unwrap(), before);
    // No temporary file anywhere; the prune store beside the file may keep
    // originals it wrote before the rewrite failed (content-addressed and
    // checked when read, they stand for nothing until a rewrite names them).
    let mut left = Vec::new();
    let mut folders = vec![dir.path().to_owned()];
    while let Some(folder) = folders.pop() {
        for e in std::fs::read_dir(&folder).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                folders.push(path.clone());
            }
            left.push(path);
        }
    }
    assert!(
        !left.iter().any(|p| p.to_string_lossy().ends_with(".tmp")),
        "no temporary file left: {left:?}"
    );
    let session_folder: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".musepi-store"))
        .collect();
    assert_eq!(session_folder.len(), 1, "{session_folder:?}");
}

/// As root permissions do not stop writes, so the command runs as `nobody`.
#[test]
fn a_file_the_caller_cannot_write_is_refused_not_replaced() {
    use std::os::unix::process::CommandExt as _;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let file = example(dir.path(), "ro.jsonl");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
    settle(&file);
    let before = std::fs::read(&file).unwrap();
    let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&file).unwrap());
    let mut cmd = Command::new(MUSEPI);
    cmd.args(["prune", p(&file), "--min-saving", "0"])
        .env("NO_COLOR", "1");
    if std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    {
        cmd.uid(65534).gid(65534);
    }
    let o = cmd.output().unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_stderr_has(&o, "not writable");
    assert_eq!(std::fs::read(&file).unwrap(), before);
    assert_eq!(
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&file).unwrap()),
        ino,
        "not replaced by a new file"
    );
}

/// `musepi serve` refuses a FIFO at `open` without blocking, and refuses to
/// append an entry `session check` would flag, writing nothing.
#[test]
fn serve_refuses_non_regular_files_and_invalid_entries() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.jsonl");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let file = example(dir.path(), "s.jsonl");
    let before = std::fs::read(&file).unwrap();
    let requests = [
        serde_json::json!({"id": 1, "method": "open", "params": {"path": fifo}}),
        serde_json::json!({"id": 2, "method": "open", "params": {"path": file}}),
        serde_json::json!({"id": 3, "method": "append", "params": {"entry": {"type": "message", "message": {"role": "robot", "content": "beep", "timestamp": 1}}}}),
        serde_json::json!({"id": 4, "method": "append", "params": {"entry": {"type": "label", "targetId": "ghost", "label": "x"}}}),
    ];
    let mut input = String::new();
    for r in &requests {
        input.push_str(&r.to_string());
        input.push('\n');
    }
    let mut child = Command::new(MUSEPI)
        .args(["serve", "--deterministic-ids", "--now", NOW])
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), input.as_bytes()).unwrap();
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    let replies: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v.get("id").is_some())
        .collect();
    assert_eq!(replies.len(), 4, "{replies:?}");
    assert_eq!(replies[0]["ok"], false);
    assert_eq!(replies[0]["error"]["code"], "bad_session");
    let message = error_message(&replies[0]);
    assert_has(message, "not a regular file");
    assert_eq!(replies[1]["ok"], true, "{:?}", replies[1]);
    for r in &replies[2..] {
        assert_eq!(r["ok"], false, "{r:?}");
        assert_eq!(r["error"]["code"], "invalid_params", "{r:?}");
    }
    assert!(
        error_message(&replies[2]).contains("robot"),
        "{:?}",
        replies[2]
    );
    assert!(
        error_message(&replies[3]).contains("ghost"),
        "{:?}",
        replies[3]
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

/// With nothing to do, `plan` and `compact` say so in one sentence, and
/// `compact` and `branch` name no output they did not write: in place
/// `output` is null and the file is untouched; a copy is written and named.
#[test]
fn nothing_to_do_is_said_once_and_names_only_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.jsonl");
    std::fs::write(
        &small,
        format!(
            "{}\n{}\n",
            r#"{"type":"session","version":3,"id":"small","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#,
            musepi_test_support::message_line("00000001", None, "hello")
        ),
    )
    .unwrap();
    settle(&small);
    let before = std::fs::read(&small).unwrap();
    let said = "nothing to compact: the session is too small (everything fits the kept window)\n";
    for args in [vec!["plan", p(&small)], vec!["compact", p(&small)]] {
        let o = musepi(&args);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout), said, "{args:?}");
    }
    let o = musepi(&["compact", p(&small), "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["compacted"], false, "{doc}");
    assert_eq!(doc["nothingToCompact"], true, "{doc}");
    assert_eq!(doc["output"], serde_json::Value::Null, "{doc}");
    assert_eq!(std::fs::read(&small).unwrap(), before);

    // A kept window smaller than the tool result at the end: the cut
    // cannot fall after the call, so everything is kept, as pi does; the
    // sentence says so and what to pass instead of "too small".
    let mut b = musepi_test_support::SessionBuilder::new();
    b.user("read it");
    let call = musepi_test_support::tool_call("c1", "read", &serde_json::json!({"path": "a.rs"}));
    b.assistant(&[call], None);
    b.tool_result("c1", "read", &"x".repeat(4000));
    let tail = dir.path().join("tail.jsonl");
    std::fs::write(&tail, b.jsonl()).unwrap();
    settle(&tail);
    let said = "nothing to compact: the last 1000 tokens are tool results, which fill the kept window of 100 alone, and a cut never separates a tool result from its call, so everything is kept; a --keep-recent over 1000 cuts before them\n";
    for command in ["plan", "compact"] {
        let o = musepi(&[command, p(&tail), "--keep-recent", "100"]);
        assert_eq!(code(&o), 0, "{command}: {}", stderr(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout), said, "{command}");
    }
    let o = musepi(&["plan", p(&tail), "--keep-recent", "1001", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["nothingToCompact"], false, "{doc}");

    let tree = settled_copy(&fixture("tree.jsonl"), dir.path(), "tree.jsonl");
    let before = std::fs::read(&tree).unwrap();
    let o = musepi(&["branch", p(&tree), "--to", "a0000027", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["noOp"], true, "{doc}");
    assert_eq!(doc["output"], serde_json::Value::Null, "{doc}");
    assert_eq!(std::fs::read(&tree).unwrap(), before);

    let out = dir.path().join("copy.jsonl");
    let o = musepi(&[
        "branch",
        p(&tree),
        "--to",
        "a0000027",
        "-o",
        p(&out),
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["output"], p(&out), "{doc}");
    assert_eq!(std::fs::read(&out).unwrap(), before);
}

/// Runs `musepi args` with standard output a pipe whose reader is already
/// gone, as after `musepi … | head` or quitting `less`, and `stdin` on its
/// standard input.
fn into_closed_pipe(args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write as _;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = Command::new(MUSEPI)
        .args(args)
        .env("HOME", std::env::temp_dir().join("musepi-writers-home"))
        .env("NO_COLOR", "1")
        .env_remove("MUSEPI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

/// A JSON document, or a session written with `-o -`, into a pipe its
/// reader closed ends quietly and as it would have otherwise, as text does:
/// no "Broken pipe" error, exit 0, and nothing written in place.
#[test]
fn a_closed_pipe_ends_json_and_session_output_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let file = example(dir.path(), "s.jsonl");
    let v1 = settled_copy(&fixture("v1.jsonl"), dir.path(), "v1.jsonl");
    settle(&file);
    let before = std::fs::read(&file).unwrap();
    let f = p(&file);
    let v1_bytes = std::fs::read(&v1).unwrap();
    let commands: [(&[&str], &[u8]); 8] = [
        (&["session", "tree", f], b""),
        (&["context", f, "--json"], b""),
        (&["plan", f, "--json"], b""),
        (&["session", "migrate", p(&v1), "-o", "-"], b""),
        (&["session", "migrate", f, "-o", "-"], b""),
        (&["session", "migrate", "-", "-o", "-"], &v1_bytes),
        (&["prune", f, "--min-saving", "0", "-o", "-"], b""),
        (&["compact", f, "-o", "-", "--now", NOW], b""),
    ];
    for (args, stdin) in commands {
        let o = into_closed_pipe(args, stdin);
        let err = stderr(&o);
        assert_eq!(code(&o), 0, "{args:?}: {err}");
        assert!(
            !err.contains("musepi: error") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(std::fs::read(&file).unwrap(), before);
}
