//! Nothing the context lost is out of reach: after pruning and a
//! compaction, `musepi recall --grep` finds every fact the retention
//! benchmark plants (its own planting code, tuned and held-out seeds,
//! every kind and host) in the entry it was planted in, and `musepi recall
//! --entry` gives back every pruned output byte for byte.

#![allow(clippy::unwrap_used)]

mod support;

/// The benchmark's generator and planting, as `musepi-bench retention`
/// runs them.
#[path = "../../../tests/src/bin/musepi-bench/rng.rs"]
#[allow(dead_code)]
mod rng;

#[path = "../../../tests/src/bin/musepi-bench/retention/plant.rs"]
#[allow(dead_code)]
mod plant;
#[path = "../../../tests/src/bin/musepi-bench/retention/slots.rs"]
#[allow(dead_code)]
mod slots;
#[path = "../../../tests/src/bin/musepi-bench/retention/templates.rs"]
#[allow(dead_code)]
mod templates;

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;
use support::{code, musepi_in, p, stderr};

const NOW: &str = "2026-01-01T00:00:00.000Z";

/// `musepi ARGS --json` in `dir`; its document.
fn run(dir: &Path, args: &[&str]) -> Value {
    let o = musepi_in(dir, &dir.join("home"), args, None);
    assert_eq!(code(&o), 0, "musepi {}: {}", args.join(" "), stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The lines of a session file as JSON.
fn lines_of(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The ids of `plan`'s summarized entries, as positions in `lines`.
fn summarized(plan: &Value, lines: &[Value]) -> Vec<usize> {
    let ids: Vec<&str> = ["messagesToSummarize", "turnPrefixMessages"]
        .iter()
        .flat_map(|k| plan[k].as_array().unwrap().iter())
        .map(|v| v.as_str().unwrap())
        .collect();
    (0..lines.len())
        .filter(|&i| lines[i]["id"].as_str().is_some_and(|id| ids.contains(&id)))
        .collect()
}

/// A tool result's text as recall prints it: its text blocks, one a line.
fn result_text(line: &Value) -> String {
    let content = &line["message"]["content"];
    match content.as_str() {
        Some(s) => s.to_owned(),
        None => content
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// Makes the file look idle to musepi's live-session check.
fn settle(file: &Path) {
    let f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_mins(1))
        .unwrap();
}

#[test]
fn recall_finds_every_planted_fact_and_every_pruned_output_after_pruning_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let example = support::example_session(dir, "example.jsonl");
    let base = dir.join("base.jsonl");
    run(
        dir,
        &["session", "migrate", p(&example), "-o", p(&base), "--json"],
    );
    let base_lines = lines_of(&base);
    let region = summarized(&run(dir, &["plan", p(&base), "--json"]), &base_lines);
    let (mut facts, mut pruned_outputs) = (0, 0);
    for (seed, held_out) in [
        (1, false),
        (2, false),
        (3, false),
        (1001, true),
        (1002, true),
        (1003, true),
    ] {
        let mut lines = base_lines.clone();
        let planted = plant::plant(&mut lines, &region, seed, held_out);
        assert!(planted.len() > 20, "seed {seed}: {} facts", planted.len());
        let file = dir.join(format!("s{seed}.jsonl"));
        let text: String = lines.iter().fold(String::new(), |mut text, l| {
            let _ = writeln!(text, "{l}");
            text
        });
        std::fs::write(&file, text).unwrap();
        settle(&file);
        // Pruning blanks the old outputs; the compaction summarizes the history.
        let pruned = run(
            dir,
            &[
                "prune",
                p(&file),
                "--min-saving",
                "0",
                "--force",
                "--now",
                NOW,
                "--json",
            ],
        );
        assert!(
            !pruned["results"].as_array().unwrap().is_empty(),
            "seed {seed}: nothing pruned"
        );
        let compacted = run(
            dir,
            &["compact", p(&file), "--force", "--now", NOW, "--json"],
        );
        assert_eq!(compacted["compacted"], true, "seed {seed}: {compacted}");
        let after = lines_of(&file);
        // What the compaction summarized: the entries before its first kept one.
        let first_kept = compacted["firstKeptEntryId"].as_str().unwrap();
        let kept_from = lines.iter().position(|l| l["id"] == first_kept).unwrap();
        for fact in planted.iter().filter(|f| {
            f.entry < kept_from || { after[f.entry]["message"]["prunedAt"].is_number() }
        }) {
            let id = lines[fact.entry]["id"].as_str().unwrap();
            // The longest line of the fact: a search reads one line at a time.
            let needle = fact
                .text
                .trim()
                .lines()
                .max_by_key(|l| l.len())
                .unwrap()
                .trim();
            let found = run(
                dir,
                &[
                    "recall",
                    p(&file),
                    "--grep",
                    needle,
                    "--limit",
                    "1000",
                    "--json",
                ],
            );
            assert!(
                found["matches"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["entryId"] == id),
                "seed {seed}: the {} fact in {} entry {id} ({:?}) is not found: {found}",
                fact.kind.name(),
                fact.host.name(),
                fact.text
            );
            facts += 1;
        }
        for (i, line) in after.iter().enumerate() {
            if !line["message"]["prunedAt"].is_number() {
                continue;
            }
            let id = line["id"].as_str().unwrap();
            let page = run(
                dir,
                &[
                    "recall",
                    p(&file),
                    "--entry",
                    id,
                    "--limit",
                    "100000000",
                    "--json",
                ],
            );
            assert_eq!(page["original"], true, "seed {seed}: {id}");
            assert_eq!(
                page["text"].as_str().unwrap(),
                result_text(&lines[i]),
                "seed {seed}: the pruned output of {id} comes back byte for byte"
            );
            pruned_outputs += 1;
        }
    }
    // Every seed planted facts the context lost, and pruned outputs.
    assert!(facts > 100, "{facts} facts checked");
    assert!(
        pruned_outputs > 6,
        "{pruned_outputs} pruned outputs checked"
    );
    eprintln!(
        "recall: {facts} of {facts} planted facts found, {pruned_outputs} of {pruned_outputs} pruned outputs byte for byte"
    );
}
