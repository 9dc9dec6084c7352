//! Lines a reader must not drop: a lone UTF-16 surrogate escape, which pi
//! writes (`JSON.stringify` of a string cut inside an emoji), is read as
//! JavaScript reads it; a line that really cannot be read makes every
//! command that would write from the path refuse, naming the line.

mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{code, json_out, musepi_in, p, stderr, write_file};

const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/work"}"#;

/// A user message line, `id` `m<n>` under `m<n-1>`.
fn message(n: usize, text: &str) -> String {
    let parent = if n == 1 {
        "null".to_owned()
    } else {
        format!("\"m{}\"", n - 1)
    };
    format!(
        r#"{{"type":"message","id":"m{n}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":{n}}}}}"#
    )
}

/// A session of `n` user messages whose 19th holds a lone leading
/// surrogate, each long enough that a compaction has something to cut.
fn with_lone_surrogate(dir: &Path, n: usize) -> PathBuf {
    let mut lines = vec![HEADER.to_owned()];
    for i in 1..=n {
        let text = if i == 19 {
            "a tool output cut inside an emoji \\ud83d".to_owned()
        } else {
            format!("fact{i:03} {}", "word ".repeat(20))
        };
        lines.push(message(i, &text));
    }
    write_file(dir, "s.jsonl", lines.join("\n") + "\n")
}

fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    musepi_in(dir, dir, args, None)
}

#[test]
fn a_lone_surrogate_keeps_every_message_in_the_context() {
    let dir = tempfile::tempdir().unwrap();
    let file = with_lone_surrogate(dir.path(), 114);
    let o = run(dir.path(), &["context", p(&file), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json_out(&o);
    let messages = doc["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 114);
    assert!(
        stderr(&o).is_empty(),
        "no problem to report: {}",
        stderr(&o)
    );
}

#[test]
fn a_compaction_over_a_lone_surrogate_summarizes_from_the_first_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = with_lone_surrogate(dir.path(), 114);
    let before = std::fs::read(&file).unwrap();
    let o = run(
        dir.path(),
        &[
            "compact",
            p(&file),
            "--force",
            "--keep-recent",
            "2000",
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let after = std::fs::read(&file).unwrap();
    // Every line the agent wrote is still there byte for byte, the lone
    // surrogate's line included; the compaction is appended after them.
    assert!(after.starts_with(&before));
    let entry: Value =
        serde_json::from_slice(after[before.len()..].split(|&b| b == b'\n').next().unwrap())
            .unwrap();
    let summary = entry["summary"].as_str().unwrap();
    assert!(
        summary.contains("fact001"),
        "the first message is summarized"
    );
    assert!(
        summary.contains("fact018"),
        "so is the one before the surrogate"
    );
}

#[test]
fn a_rewritten_line_keeps_its_lone_surrogate_escape() {
    let dir = tempfile::tempdir().unwrap();
    let v2 = HEADER.replace("\"version\":3", "\"version\":2");
    let text = format!(
        "{v2}\n{}\n{}\n",
        message(1, "hello"),
        message(2, "cut \\uD83D and \\udc00 alone")
    );
    let file = write_file(dir.path(), "s.jsonl", text);
    let out = dir.path().join("out.jsonl");
    let o = run(dir.path(), &["session", "migrate", p(&file), "-o", p(&out)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let written = std::fs::read_to_string(&out).unwrap();
    // JSON.stringify writes a lone surrogate as its lowercase escape.
    assert!(
        written.contains(r#""content":"cut \ud83d and \udc00 alone""#),
        "{written}"
    );
}

#[test]
fn every_writer_refuses_a_path_cut_by_an_unreadable_line() {
    let dir = tempfile::tempdir().unwrap();
    let broken = message(2, "lost").replace("\"lost\"", "\"lost\",,");
    let text = format!(
        "{HEADER}\n{}\n{broken}\n{}\n",
        message(1, "hello"),
        message(3, "after")
    );
    let file = write_file(dir.path(), "s.jsonl", &text);
    for args in [
        vec!["compact", p(&file), "--force"],
        vec!["compact", p(&file), "--dry-run"],
        vec!["prune", p(&file), "--force"],
        vec!["branch", p(&file), "--to", "m1", "--summarize", "--force"],
        vec!["compact", p(&file), "--force", "--json"],
    ] {
        let o = run(dir.path(), &args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        if args.contains(&"--json") {
            let doc = json_out(&o);
            assert_eq!(doc["error"]["code"], "unreadable-line");
            assert_eq!(doc["error"]["line"], 3);
        } else {
            let err = stderr(&o);
            assert!(err.contains("s.jsonl:3: malformed JSON"), "{args:?}: {err}");
            assert!(err.contains("on the path to the leaf"), "{args:?}: {err}");
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text, "{args:?}");
    }
}
