//! `musepi snapcompact render` run as a process: the files it writes for a
//! PNG archive, a text archive and a re-rendered archive, its JSON report,
//! and its exit codes (0 ok, 2 bad input).

mod support;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use musepi_compaction::{CompactionSettings, prepare};
use musepi_hooks::snapcompact::{SnapSettings, SnapTarget, compact_preparation};
use musepi_session_model::{Journal, SequentialIds, Stamp};
use serde_json::{Value, json};
use support::{assert_escaped, assert_has};

fn musepi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_musepi"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("musepi runs")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// A session of `turns` long turns, then a short ending.
fn session_lines(turns: usize) -> String {
    let mut out = String::from(
        r#"{"type":"session","version":3,"id":"snap-cli","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/repo"}"#,
    );
    out.push('\n');
    let mut parent = Value::Null;
    let mut push = |n: usize, message: Value| {
        let id = format!("{n:08x}");
        let line = json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z", "message": message});
        let _ = writeln!(out, "{line}");
        parent = Value::String(id);
    };
    let mut n = 0;
    for t in 0..turns {
        let words: Vec<String> = (0..200).map(|w| format!("t{t}w{w}")).collect();
        n += 1;
        push(
            n,
            json!({"role": "user", "content": words.join(" "), "timestamp": 1}),
        );
        n += 1;
        push(
            n,
            json!({"role": "assistant", "content": [{"type": "text", "text": format!("done with turn {t}")}], "stopReason": "stop", "timestamp": 1}),
        );
    }
    n += 1;
    push(
        n,
        json!({"role": "user", "content": "Carry on.", "timestamp": 1}),
    );
    push(
        n + 1,
        json!({"role": "assistant", "content": [{"type": "text", "text": "Carrying on."}], "stopReason": "stop", "timestamp": 1}),
    );
    out
}

/// Writes a session and compacts it at the leaf for `target`; the path and
/// the compaction's id.
fn compacted(dir: &Path, name: &str, turns: usize, target: &SnapTarget) -> (PathBuf, String) {
    let path = dir.join(name);
    std::fs::write(&path, session_lines(turns)).expect("write session");
    let mut ids = SequentialIds::new();
    let mut journal = Journal::open(&path, &mut ids).expect("open");
    let mut settings = CompactionSettings::default();
    settings.keep_recent_tokens = 1;
    settings.adapt_keep_recent = false;
    let session = journal.session();
    let prep = prepare(session, session.leaf_index(), &settings).expect("something to compact");
    let result = compact_preparation(&prep, target, &SnapSettings::default()).expect("compacts");
    let mut after = SequentialIds::after(session.entries().iter().map(|e| &e.id));
    let mut stamp = Stamp {
        ids: &mut after,
        now: 1_735_689_700_000,
    };
    let id = journal
        .append(result.into_body(), &mut stamp)
        .expect("append");
    (path, id.to_string())
}

/// Gemini: its frames cost a fifth of the text they print, so a history
/// of a few frames is archived on frames.
fn gemini() -> SnapTarget {
    SnapTarget::images("gemini-2.5-pro", "google-generative-ai", "google")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json")
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_png_archive_is_written_as_frames_edges_and_metadata() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (file, id) = compacted(dir.path(), "png.jsonl", 120, &gemini());
    let out = dir.path().join("frames");
    let o = musepi(&["snapcompact", "render", p(&file), "--out", p(&out)]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let meta = read_json(&out.join("archive.json"));
    let frames = meta["frames"].as_array().expect("frames");
    assert!(frames.len() >= 2, "{meta}");
    let mut expected: Vec<String> = (1..=frames.len())
        .map(|i| format!("frame-{i:03}.png"))
        .collect();
    expected.extend(
        [
            "archive.json",
            "archive.txt",
            "text-head.txt",
            "text-tail.txt",
        ]
        .map(str::to_owned),
    );
    expected.sort();
    assert_eq!(names(&out), expected);
    for (i, frame) in frames.iter().enumerate() {
        let png = std::fs::read(out.join(format!("frame-{:03}.png", i + 1))).expect("png");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert_eq!(frame["pngBytes"].as_u64(), Some(png.len() as u64));
        assert_eq!(frame["shape"], "8on22-bw");
        assert_eq!(frame["cols"], 256);
        assert!(frame.get("data").is_none());
    }
    assert_eq!(
        (&meta["archive"], &meta["rerendered"], &meta["entryId"]),
        (&json!("png"), &json!(false), &json!(id))
    );
    let head = std::fs::read_to_string(out.join("text-head.txt")).expect("head");
    assert!(head.starts_with("¶user:t0w0 t0w1"), "{head}");
    assert!(!head.contains('█'));
    let tail = std::fs::read_to_string(out.join("text-tail.txt")).expect("tail");
    assert!(tail.ends_with("¶user:Carry on."), "{tail}");
    let report = text(&o.stdout);
    assert_has(&report, "png, ");
    assert_has(&report, "frame-001.png");
}

#[test]
fn a_rerender_prints_the_archive_text_in_another_shape_and_replaces_old_frames() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (file, _) = compacted(dir.path(), "png.jsonl", 120, &gemini());
    let out = dir.path().join("frames");
    std::fs::create_dir_all(&out).expect("mkdir");
    std::fs::write(out.join("frame-099.png"), b"stale").expect("stale frame");
    std::fs::write(out.join("notes.md"), b"mine").expect("user file");
    let o = musepi(&[
        "--json",
        "snapcompact",
        "render",
        p(&file),
        "--out",
        p(&out),
        "--shape",
        "8on16-bw",
        // The folder holds an earlier render: replacing it takes --force.
        "--force",
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("json report");
    assert_eq!(doc["shape"], "8on16-bw");
    assert_eq!(doc["rerendered"], true);
    let frames = doc["frames"].as_array().expect("frames");
    assert!(!frames.is_empty());
    assert!(
        frames
            .iter()
            .all(|f| f["shape"] == "8on16-bw" && f["cols"] == 196)
    );
    let files = names(&out);
    assert!(!files.contains(&"frame-099.png".to_owned()), "{files:?}");
    assert!(files.contains(&"notes.md".to_owned()));
    assert_eq!(
        doc["files"].as_array().map(Vec::len),
        Some(frames.len() + 4)
    );
}

#[test]
fn a_text_archive_is_written_as_pages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (file, _) = compacted(dir.path(), "text.jsonl", 60, &SnapTarget::default());
    let out = dir.path().join("pages");
    // An earlier PNG render left its frames and edges there: none stays.
    std::fs::create_dir_all(&out).expect("mkdir");
    for stale in ["frame-001.png", "text-head.txt", "text-tail.txt"] {
        std::fs::write(out.join(stale), b"stale").expect("stale file");
    }
    let o = musepi(&[
        "snapcompact",
        "render",
        p(&file),
        "--out",
        p(&out),
        "--force",
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let meta = read_json(&out.join("archive.json"));
    assert_eq!(meta["archive"], "text");
    let pages = meta["pages"].as_array().expect("pages");
    assert!(!pages.is_empty());
    let mut expected: Vec<String> = (1..=pages.len())
        .map(|i| format!("page-{i:03}.txt"))
        .chain(["archive.json".to_owned(), "archive.txt".to_owned()])
        .collect();
    expected.sort();
    assert_eq!(names(&out), expected);
    let page = std::fs::read_to_string(out.join("page-001.txt")).expect("page");
    assert_eq!(
        Some(page.encode_utf16().count() as u64),
        pages[0]["chars"].as_u64()
    );
    let all = std::fs::read_to_string(out.join("archive.txt")).expect("archive");
    assert!(all.starts_with(&page));
    // The pages are the archive, each ending at a line end.
    let joined: String = (1..=pages.len())
        .map(|i| std::fs::read_to_string(out.join(format!("page-{i:03}.txt"))).expect("page"))
        .collect();
    assert_eq!(joined, all);
    assert!(page.ends_with('\n') || pages.len() == 1);
    assert!(text(&o.stdout).contains("text, "));
}

/// The report names the compaction by its id, escaped as every id read
/// from a session is.
#[test]
fn the_report_escapes_the_entry_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (file, id) = compacted(dir.path(), "text.jsonl", 60, &SnapTarget::default());
    // The compaction is the last entry: nothing else names it.
    let original = std::fs::read_to_string(&file).expect("read");
    let renamed = original.replace(
        &format!("\"id\":\"{id}\""),
        &format!("\"id\":\"{id}\\u001b[2J\""),
    );
    assert_ne!(renamed, original);
    std::fs::write(&file, renamed).expect("write");
    let out = dir.path().join("pages");
    let o = musepi(&["snapcompact", "render", p(&file), "--out", p(&out)]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let shown = text(&o.stdout);
    assert_escaped(&shown, &[]);
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("entry ") && l.ends_with(&format!("  {id}\\u001b[2J"))),
        "{shown}"
    );
}

#[test]
fn bad_entries_shapes_and_sessions_without_an_archive_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (file, _) = compacted(dir.path(), "png.jsonl", 3, &gemini());
    let out = dir.path().join("out");
    for (args, message) in [
        (
            vec!["--entry", "00000001"],
            "is a message, not a compaction",
        ),
        (vec!["--entry", "nope"], "unknown entry id `nope`"),
        (
            vec!["--shape", "9x9-bw"],
            "invalid value '9x9-bw' for '--shape <NAME>'",
        ),
    ] {
        let mut all = vec!["snapcompact", "render", p(&file), "--out", p(&out)];
        all.extend(args);
        let o = musepi(&all);
        assert_eq!(code(&o), 2, "{all:?}");
        assert!(text(&o.stderr).contains(message), "{}", text(&o.stderr));
    }
    let plain = dir.path().join("plain.jsonl");
    std::fs::write(&plain, session_lines(1)).expect("write");
    let o = musepi(&["snapcompact", "render", p(&plain), "--out", p(&out)]);
    assert_eq!(code(&o), 2);
    assert!(text(&o.stderr).contains("no compaction on the path to the leaf"));
    let o = musepi(&["snapcompact", "render", p(&plain)]);
    assert_eq!(code(&o), 2, "--out is required");
    // --out naming a file, not a folder: bad usage, and the file is kept.
    let o = musepi(&["snapcompact", "render", p(&file), "--out", p(&plain)]);
    assert_eq!(code(&o), 2, "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains(&format!("--out {}: is a file, not a folder", p(&plain))),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&plain).expect("read"),
        session_lines(1)
    );
}

#[test]
fn an_unknown_shape_lists_the_valid_ones_before_the_file_is_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    // The file does not exist: the flag is checked first.
    let missing = dir.path().join("missing.jsonl");
    let o = musepi(&[
        "snapcompact",
        "render",
        p(&missing),
        "--out",
        p(&out),
        "--shape",
        "nonsense",
    ]);
    assert_eq!(code(&o), 2);
    let err = text(&o.stderr);
    assert!(
        err.contains("invalid value 'nonsense' for '--shape <NAME>'\n  [possible values: auto, "),
        "{err}"
    );
    for name in ["8on22-bw", "11on16-bw", "doc-8on16-sent-dim"] {
        assert!(err.contains(name), "{err}");
    }
    assert!(!out.exists(), "nothing is written");
}
