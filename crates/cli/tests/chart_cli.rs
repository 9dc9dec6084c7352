//! `musepi context --chart`: the context's tokens along the path, drawn in
//! the terminal (a golden snapshot at two widths), as JSON whose figures
//! are `musepi context`'s own, and as an SVG file an XML parser reads.
//! The session is generated here: our own content, two compactions.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::assert_escaped;

const MUSEPI: &str = env!("CARGO_BIN_EXE_musepi");

fn time(n: usize) -> String {
    format!("2025-06-01T10:{:02}:{:02}.000Z", n / 60 % 60, n % 60)
}

/// 24 turns of a user request and a longer answer, growing; compactions
/// after turns 10 and 18, each keeping the last two turns.
fn session(dir: &Path) -> PathBuf {
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": "chart-demo", "timestamp": time(0), "cwd": "/home/dev/chart"}),
    ];
    let mut parent: Option<String> = None;
    let mut n = 0;
    let mut push = |lines: &mut Vec<Value>, mut entry: Value| {
        n += 1;
        let id = format!("{n:08}");
        entry["id"] = id.clone().into();
        entry["parentId"] = parent.clone().map_or(Value::Null, Value::String);
        entry["timestamp"] = time(n).into();
        lines.push(entry);
        parent = Some(id.clone());
        id
    };
    let mut turn_starts = Vec::new();
    for turn in 1..=24usize {
        let user = format!("Step {turn}: extend the report with section {turn}. ").repeat(4);
        let id = push(
            &mut lines,
            json!({"type": "message", "message": {"role": "user", "content": user, "timestamp": turn}}),
        );
        turn_starts.push(id);
        let answer = format!("Section {turn} is written and checked. ").repeat(8 + turn * 2);
        push(
            &mut lines,
            json!({"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": answer}],
                "provider": "p", "model": "m", "stopReason": "stop", "timestamp": turn}}),
        );
        if turn == 10 || turn == 18 {
            let kept = turn_starts[turn - 2].clone();
            push(
                &mut lines,
                json!({"type": "compaction", "summary": format!("## Goal\nA report, {turn} sections so far."),
                    "firstKeptEntryId": kept, "tokensBefore": 1000 * turn, "details": {"readFiles": [], "modifiedFiles": []}}),
            );
        }
    }
    let path = dir.join("chart.jsonl");
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn musepi(dir: &Path, args: &[&str], columns: &str) -> Output {
    Command::new(MUSEPI)
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("COLUMNS", columns)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// What a real XML parser (Python's) reads in the SVG file at `svg`, one
/// line each: the vertices of the line, the dashed lines (one per
/// compaction), the texts joined by `|`, the title.
fn parsed_svg(svg: &Path) -> String {
    let check = Command::new("python3")
        .arg("-c")
        .arg(
            r#"
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == ns + "svg", root.tag
line = root.find(ns + "polyline")
print(0 if line is None else len(line.get("points").split()))
print(sum(1 for l in root.iter(ns + "line") if l.get("stroke-dasharray") == "4 3"))
print("|".join(t.text for t in root.iter(ns + "text")))
print(root.find(ns + "title").text)
"#,
        )
        .arg(svg)
        .output()
        .expect("python3 parses the SVG");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    String::from_utf8(check.stdout).unwrap()
}

#[test]
fn the_terminal_chart_is_aligned_deterministic_and_fits_the_width() {
    let dir = tempfile::tempdir().unwrap();
    session(dir.path());
    for columns in ["72", "40"] {
        let chart = ok(&musepi(
            dir.path(),
            &["context", "chart.jsonl", "--chart"],
            columns,
        ));
        let width: usize = columns.parse().unwrap();
        for line in chart.lines() {
            assert!(
                line.chars().count() <= width,
                "wider than {width}: {line:?}"
            );
        }
        assert_eq!(
            chart,
            ok(&musepi(
                dir.path(),
                &["context", "chart.jsonl", "--chart"],
                columns
            )),
            "the same file gives the same chart"
        );
        insta::assert_snapshot!(format!("chart_{columns}_columns"), chart);
    }
}

#[test]
fn the_json_figures_are_those_of_musepi_context_at_each_point() {
    let dir = tempfile::tempdir().unwrap();
    session(dir.path());
    let doc: Value = serde_json::from_str(&ok(&musepi(
        dir.path(),
        &[
            "context",
            "chart.jsonl",
            "--chart",
            "--json",
            "--context-window",
            "8000",
        ],
        "80",
    )))
    .unwrap();
    assert_eq!(doc["pathLength"], 50);
    assert_eq!(doc["contextWindow"], 8000);
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 50, "every entry of a short path");
    let tokens_at = |id: &str| -> Value {
        let out = ok(&musepi(
            dir.path(),
            &["context", "chart.jsonl", "--leaf", id, "--json"],
            "80",
        ));
        serde_json::from_str::<Value>(&out).unwrap()["tokens"].clone()
    };
    for p in points.iter().step_by(7) {
        assert_eq!(
            p["tokens"],
            tokens_at(p["entryId"].as_str().unwrap()),
            "{p}"
        );
    }
    let leaf = points.last().unwrap();
    assert_eq!(doc["tokens"], leaf["tokens"]);
    assert_eq!(doc["tokens"], tokens_at(doc["leafId"].as_str().unwrap()));
    let compactions = doc["compactions"].as_array().unwrap();
    assert_eq!(compactions.len(), 2);
    for c in compactions {
        let at = c["position"].as_u64().unwrap() as usize;
        assert_eq!(c["tokensAfter"], points[at]["tokens"]);
        assert_eq!(c["tokensBefore"], points[at - 1]["tokens"]);
        assert_eq!(
            c["removed"].as_u64().unwrap(),
            c["tokensBefore"].as_u64().unwrap() - c["tokensAfter"].as_u64().unwrap()
        );
        assert_eq!(c["madeBy"], "llm");
    }
    // The first summarizes turns 1 to 8 (16 messages), the second turns 9 to 16.
    assert_eq!(compactions[0]["messagesSummarized"], 16);
    assert_eq!(compactions[1]["messagesSummarized"], 16);
}

#[test]
fn the_svg_file_is_well_formed_and_shows_every_compaction() {
    let dir = tempfile::tempdir().unwrap();
    session(dir.path());
    let out = ok(&musepi(
        dir.path(),
        &["context", "chart.jsonl", "--chart", "--out", "chart.svg"],
        "80",
    ));
    assert!(
        out.starts_with("wrote chart.svg (50 points, 2 compactions, peak "),
        "{out}"
    );
    let svg = dir.path().join("chart.svg");
    // A real XML parser reads it; the structure is what the chart draws.
    let report = parsed_svg(&svg);
    let mut lines = report.lines();
    assert_eq!(lines.next(), Some("50"), "one vertex per point");
    assert_eq!(lines.next(), Some("2"), "one dashed line per compaction");
    let texts = lines.next().unwrap();
    assert!(
        texts.contains("context tokens along the path to 00000050 (50 entries)"),
        "{texts}"
    );
    assert!(texts.contains("1 −") && texts.contains("2 −"), "{texts}");
    // The same session gives the same bytes (replacing the file takes
    // --force).
    let first = std::fs::read(&svg).unwrap();
    ok(&musepi(
        dir.path(),
        &[
            "context",
            "chart.jsonl",
            "--chart",
            "--out",
            "chart.svg",
            "--force",
        ],
        "80",
    ));
    assert_eq!(std::fs::read(&svg).unwrap(), first);
}

#[test]
fn out_must_be_an_svg_file_and_never_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let before = std::fs::read(&file).unwrap();
    for (out, message) in [
        (
            "chart.png",
            "the chart is written as SVG, to a file named *.svg",
        ),
        ("chart.jsonl", "the chart is written as SVG"),
    ] {
        let o = musepi(
            dir.path(),
            &["context", "chart.jsonl", "--chart", "--out", out],
            "80",
        );
        assert_eq!(o.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(message),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    std::fs::create_dir(dir.path().join("folder.svg")).unwrap();
    let o = musepi(
        dir.path(),
        &["context", "chart.jsonl", "--chart", "--out", "folder.svg"],
        "80",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a regular file"));
    // --out and --context-window need --chart; --chart takes no --llm.
    for args in [
        vec!["context", "chart.jsonl", "--out", "c.svg"],
        vec!["context", "chart.jsonl", "--chart", "--llm"],
    ] {
        assert_eq!(
            musepi(dir.path(), &args, "80").status.code(),
            Some(2),
            "{args:?}"
        );
    }
    assert_eq!(std::fs::read(&file).unwrap(), before);
    assert!(!dir.path().join("chart.png").exists());
}

#[test]
fn json_positions_count_from_0_where_the_table_counts_from_1() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let doc: Value = serde_json::from_str(&ok(&musepi(
        dir.path(),
        &["context", file.to_str().unwrap(), "--chart", "--json"],
        "120",
    )))
    .unwrap();
    let points = doc["points"].as_array().unwrap();
    let path_length = doc["pathLength"].as_u64().unwrap();
    assert_eq!(points[0]["position"], 0, "the first entry of the path");
    assert_eq!(
        points.last().unwrap()["position"],
        path_length - 1,
        "the leaf"
    );
    let text = ok(&musepi(
        dir.path(),
        &["context", file.to_str().unwrap(), "--chart"],
        "120",
    ));
    // The table: `#  entry  at  before → after …`, one row per compaction.
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip_while(|l| !l.starts_with("#  entry"))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    let compactions = doc["compactions"].as_array().unwrap();
    assert_eq!(rows.len(), compactions.len(), "{text}");
    for (row, c) in rows.iter().zip(compactions) {
        assert_eq!(row[1], c["entryId"], "{text}");
        let at: u64 = row[2].parse().unwrap();
        assert_eq!(at, c["position"].as_u64().unwrap() + 1, "{text}");
    }
    // The axis ends at the path's length, the leaf's number from 1.
    assert!(
        text.lines()
            .any(|l| l.trim_end().ends_with(&path_length.to_string())),
        "{text}"
    );
}

/// The chart's title, in the terminal and in the SVG file, names the leaf
/// by its id, escaped as every id read from a session is.
#[test]
fn the_chart_escapes_the_leaf_id() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        json!({"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}),
        json!({"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hello","timestamp":1}}),
        json!({"type":"message","id":"z\u{1b}[2J\u{202e}\u{7}","parentId":"a1","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"again","timestamp":2}}),
    ];
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(dir.path().join("esc.jsonl"), text).unwrap();
    let chart = ok(&musepi(
        dir.path(),
        &["context", "esc.jsonl", "--chart"],
        "80",
    ));
    assert_escaped(&chart, &[]);
    assert!(
        chart.starts_with("context tokens along the path to z\\u001b[2J\\u202e\\u0007 (2 entries)"),
        "{chart}"
    );
    // In the SVG file too, which stays XML an XML parser reads: XML allows
    // no C0 control, and a bidirectional control would reorder the title.
    ok(&musepi(
        dir.path(),
        &["context", "esc.jsonl", "--chart", "--out", "esc.svg"],
        "80",
    ));
    let svg = std::fs::read_to_string(dir.path().join("esc.svg")).unwrap();
    assert_escaped(&svg, &[]);
    let report = parsed_svg(&dir.path().join("esc.svg"));
    assert_eq!(
        report.lines().last(),
        Some("context tokens along the path to z\\u001b[2J\\u202e\\u0007 of esc.jsonl"),
        "{report}"
    );
}

/// README.md shows the chart of the example session after the README's
/// first command compacts it, as `musepi context --chart` prints it on an
/// 80-column terminal; only the compaction's id, new on every run, is the
/// README's own.
#[test]
fn the_readme_chart_is_what_the_command_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let command = "$ musepi context target/todo-refactor.compacted.jsonl --chart\n";
    let start = readme
        .find(command)
        .expect("README shows the chart command")
        + command.len();
    let shown = &readme[start..start + readme[start..].find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let example = root.join("examples/sessions/todo-refactor.jsonl");
    let compacted = dir.path().join("todo-refactor.compacted.jsonl");
    let (example, compacted) = (example.to_str().unwrap(), compacted.to_str().unwrap());
    ok(&musepi(
        dir.path(),
        &["compact", example, "-o", compacted],
        "80",
    ));
    let chart = ok(&musepi(
        dir.path(),
        &["context", compacted, "--chart"],
        "80",
    ));
    // `context tokens along the path to ID (…)`: the leaf is the compaction.
    let id = |text: &str| text.split_whitespace().nth(6).unwrap().to_owned();
    assert_eq!(chart.replace(&id(&chart), &id(shown)), shown);
}
