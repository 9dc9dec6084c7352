//! An unmigrated v1 file, whose entries have no ids, read by every command:
//! each numbers the entries `00000001`, `00000002`, … in parsed-entry order
//! (the header, blank and malformed lines not counted), so an id one
//! command prints is the one the next takes, and `session migrate` writes
//! those ids. Entries musepi adds get ids no entry has.

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use support::{
    assert_stderr_has, code, fixture, json_lines, json_out, musepi_in, p, settle, settled_copy,
    stderr,
};

/// The conformance session `rand-0011.jsonl`: v1, 70 entries, two
/// compactions and a blank line.
fn v1_session(dir: &Path) -> PathBuf {
    let file = fixture("conformance/sessions/rand-0011.jsonl");
    settled_copy(&file, dir, "v1.jsonl")
}

/// The conformance session `rand-0005.jsonl`: v1, 52 entries, superseded
/// reads to prune.
fn v1_session_to_prune(dir: &Path) -> PathBuf {
    let file = fixture("conformance/sessions/rand-0005.jsonl");
    settled_copy(&file, dir, "prunable.jsonl")
}

/// Runs `musepi ARGS` in `dir` (its home as well).
fn musepi(dir: &Path, args: &[&str]) -> Output {
    musepi_in(dir, dir, args, None)
}

/// `musepi ARGS --json` in `dir`, which must succeed: its document.
fn json(dir: &Path, args: &[&str]) -> Value {
    let o = musepi(dir, &[args, &["--json"]].concat());
    assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
    json_out(&o)
}

/// The ids of a session file's entries, in file order.
fn file_ids(file: &Path) -> Vec<String> {
    json_lines(file)
        .iter()
        .skip(1)
        .map(|l| l["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The k-th id of the v1 numbering.
fn nth(k: usize) -> String {
    format!("{k:08x}")
}

/// The ids `session tree --json` prints, in its order.
fn tree_ids(tree: &Value) -> Vec<String> {
    tree["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn every_command_numbers_a_v1_file_alike_and_migration_keeps_the_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = v1_session(d);
    let before = std::fs::read(&file).unwrap();
    let numbered: Vec<String> = (1..=70).map(nth).collect();

    // `session tree` and `session stats` name the entries by their numbers.
    let tree = json(d, &["session", "tree", p(&file)]);
    let mut shown = tree_ids(&tree);
    shown.sort();
    assert_eq!(shown, numbered, "{tree}");
    assert_eq!(json(d, &["session", "stats", p(&file)])["leafId"], nth(70));

    // `ls` lists the same leaf, run after run.
    for _ in 0..2 {
        let listed = json(d, &["ls", "--session-dir", p(d)]);
        assert_eq!(listed["sessions"][0]["leafId"], nth(70), "{listed}");
    }

    // What `plan` says is what `compact -o` does.
    let plan = json(d, &["plan", p(&file), "--keep-recent", "2000"]);
    let first_kept = plan["firstKeptEntryId"].as_str().unwrap().to_owned();
    assert!(numbered.contains(&first_kept), "{plan}");
    let compacted = d.join("compacted.jsonl");
    let doc = json(
        d,
        &[
            "compact",
            p(&file),
            "--keep-recent",
            "2000",
            "-o",
            p(&compacted),
        ],
    );
    assert_eq!(doc["firstKeptEntryId"], first_kept.as_str(), "{doc}");
    let ids = file_ids(&compacted);
    assert_eq!(ids[..70], numbered[..], "the copy keeps the numbers");
    assert_eq!(last(&compacted)["firstKeptEntryId"], first_kept.as_str());

    // `prune --dry-run` names the same results run after run, by numbers
    // `session tree` shows.
    let prunable = v1_session_to_prune(d);
    let pruned: Vec<Value> = (0..2)
        .map(|_| {
            json(
                d,
                &["prune", p(&prunable), "--dry-run", "--min-saving", "0"],
            )
        })
        .collect();
    assert_eq!(pruned[0], pruned[1]);
    let results = pruned[0]["results"].as_array().unwrap();
    assert!(!results.is_empty(), "{}", pruned[0]);
    let tree = json(d, &["session", "tree", p(&prunable)]);
    for r in results {
        assert!(tree_ids(&tree).contains(&r["entryId"].as_str().unwrap().to_owned()));
    }

    // An id `session tree` shows is one `branch --to`, `context --leaf` and
    // `plan --leaf` take.
    let moved = d.join("moved.jsonl");
    let o = musepi(
        d,
        &[
            "branch",
            p(&file),
            "--to",
            &nth(16),
            "-o",
            p(&moved),
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json_out(&o);
    assert_eq!(doc["targetId"], nth(16));
    assert_eq!(doc["oldLeafId"], nth(70));
    assert_stderr_has(
        &o,
        "is a v1 file; the copy is written as v3 with the navigation",
    );
    assert_eq!(file_ids(&moved)[..70], numbered[..]);
    assert_eq!(
        json(d, &["context", p(&file), "--leaf", &nth(16)])["leafId"],
        nth(16)
    );
    assert_eq!(
        json(
            d,
            &[
                "plan",
                p(&file),
                "--leaf",
                &nth(40),
                "--keep-recent",
                "2000"
            ]
        )["leafId"],
        nth(40)
    );

    // `session migrate` writes those numbers, without --deterministic-ids
    // and with it alike, as pi's rewrite would be with those ids.
    let expected = std::fs::read(fixture("conformance/answers/rand-0011.migrated.jsonl")).unwrap();
    for (name, extra) in [
        ("m1.jsonl", &[][..]),
        ("m2.jsonl", &["--deterministic-ids"][..]),
    ] {
        let out = d.join(name);
        let o = musepi(
            d,
            &[&["session", "migrate", p(&file), "-o", p(&out)], extra].concat(),
        );
        assert_eq!(code(&o), 0, "{extra:?}: {}", stderr(&o));
        assert_eq!(std::fs::read(&out).unwrap(), expected, "{extra:?}");
    }
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "nothing above wrote it"
    );

    // In place too: the ids read before are the ids written.
    let o = musepi(d, &["session", "migrate", p(&file)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read(&file).unwrap(), expected);
    settle(&file);
    let o = musepi(d, &["branch", p(&file), "--to", &nth(16)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

/// The entries musepi adds to a v1 file get ids no numbered entry has:
/// random ones, or with `--deterministic-ids` the numbers after the last.
#[test]
fn entries_added_to_a_v1_file_never_take_a_number() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = v1_session(d);
    for (name, extra) in [
        ("random.jsonl", &[][..]),
        ("numbered.jsonl", &["--deterministic-ids"][..]),
    ] {
        let out = d.join(name);
        let args = [
            &["compact", p(&file), "--keep-recent", "2000", "-o", p(&out)][..],
            extra,
        ]
        .concat();
        let o = musepi(d, &args);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        let ids = file_ids(&out);
        assert_eq!(ids.len(), 71);
        let unique: BTreeSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), 71, "{ids:?}");
        let added = &ids[70];
        if extra.is_empty() {
            let n = u32::from_str_radix(added, 16).unwrap();
            assert!(!(1..=70).contains(&n), "{added}");
        } else {
            assert_eq!(*added, nth(71));
        }
    }
}

/// An in-place `prune` of a v1 file rewrites it as v3 and says so, as
/// `compact` does; the numbers stay.
#[test]
fn an_in_place_prune_of_a_v1_file_says_it_rewrote_it_as_v3() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = v1_session_to_prune(d);
    let o = musepi(d, &["prune", p(&file), "--min-saving", "0"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_stderr_has(
        &o,
        &format!(
            "musepi: {} is a v1 file; it is rewritten as v3 with the pruned results",
            p(&file)
        ),
    );
    let lines = json_lines(&file);
    assert_eq!(lines[0]["version"], 3);
    assert_eq!(file_ids(&file), (1..=52).map(nth).collect::<Vec<_>>());
    assert!(lines.iter().any(|l| l["message"]["prunedAt"].is_number()));
}

fn last(file: &Path) -> Value {
    json_lines(file).pop().unwrap()
}

/// A v1 session whose compaction (line 4) has a `firstKeptEntryIndex` of 0,
/// which names the header: migration drops it.
fn v1_with_unresolved_index(dir: &Path) -> PathBuf {
    let text = [
        r#"{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"port the lexer","timestamp":1}}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ported"}],"provider":"p","model":"m","stopReason":"stop","timestamp":2}}"#,
        r#"{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"the lexer is ported","firstKeptEntryIndex":0,"tokensBefore":10}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"user","content":"now the parser, with every rule of the grammar written out","timestamp":4}}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:05.000Z","message":{"role":"assistant","content":[{"type":"text","text":"the parser is written and every rule of the grammar has a test"}],"provider":"p","model":"m","stopReason":"stop","timestamp":5}}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:06.000Z","message":{"role":"user","content":"and the emitter","timestamp":6}}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:07.000Z","message":{"role":"assistant","content":[{"type":"text","text":"the emitter is done"}],"provider":"p","model":"m","stopReason":"stop","timestamp":7}}"#,
    ]
    .map(|l| format!("{l}\n"))
    .concat();
    let path = dir.join("index.jsonl");
    std::fs::write(&path, text).unwrap();
    settle(&path);
    path
}

/// The compaction line of a migrated copy, as pi writes it: no index and
/// no first kept entry.
const DROPPED: &str = r#"{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"the lexer is ported","tokensBefore":10,"id":"00000003","parentId":"00000002"}"#;

/// Without `--force` every writer refuses the file, naming the line and the
/// way forward; with it, the file is written as pi rewrites it and stderr
/// says what that changes.
#[test]
fn force_rewrites_an_unresolved_v1_index_as_pi_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = v1_with_unresolved_index(d);
    let before = std::fs::read(&file).unwrap();
    let out = d.join("out.jsonl");
    let writers: [&[&str]; 2] = [
        &["session", "migrate", p(&file), "-o", p(&out)],
        &["compact", p(&file), "--keep-recent", "1", "-o", p(&out)],
    ];
    for args in writers {
        let o = musepi(d, &[args, &["--json"]].concat());
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        let error = &json_out(&o)["error"];
        assert_eq!(error["code"], "problems-block-rewrite", "{args:?}");
        assert_eq!(error["line"], 4, "{args:?}");
        let message = error["message"].as_str().unwrap();
        for part in [
            "names the header",
            "--force",
            "musepi session check --repair",
        ] {
            assert!(message.contains(part), "{args:?}: {message}");
        }
        assert!(!out.exists(), "{args:?}");

        let o = musepi(d, &[args, &["--force"]].concat());
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        assert_stderr_has(
            &o,
            &format!(
                "musepi: warning: {}:4: v1 compaction's `firstKeptEntryIndex` 0 names the header; migration would drop it; --force drops it as pi does: the compaction keeps no entry from before it",
                p(&file)
            ),
        );
        let written = std::fs::read_to_string(&out).unwrap();
        assert_eq!(written.lines().nth(3), Some(DROPPED), "{args:?}");
        std::fs::remove_file(&out).unwrap();
    }
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "only copies were written"
    );

    // From standard input, and in place.
    let o = musepi_in(
        d,
        d,
        &["session", "migrate", "-", "-o", "-", "--force"],
        Some(&before),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap().lines().nth(3),
        Some(DROPPED)
    );
    let o = musepi(d, &["session", "migrate", p(&file), "--force"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().lines().nth(3),
        Some(DROPPED)
    );
}

/// `session check --repair` writes a copy without the index, as pi's
/// migration leaves the line, and says so; the copy then migrates without
/// `--force`.
#[test]
fn a_repair_drops_an_unresolved_v1_index_as_pi_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = v1_with_unresolved_index(d);
    let repaired = d.join("repaired.jsonl");
    let o = musepi(d, &support::repair_json(&file, &repaired));
    let doc = json_out(&o);
    let changed = &doc["repair"]["changed"];
    assert_eq!(changed[0]["line"], 4, "{doc}");
    let reason = changed[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("`firstKeptEntryIndex` 0") && reason.contains("as pi's migration drops it"),
        "{reason}"
    );
    // What is left is pi's own shape of such a compaction: no first kept
    // entry, which loses nothing and blocks nothing.
    let remaining = doc["repair"]["remaining"].as_array().unwrap();
    assert_eq!(remaining.len(), 1, "{doc}");
    assert_eq!(remaining[0]["kind"], "missing-field");
    assert_eq!(code(&o), 2);
    let line = std::fs::read_to_string(&repaired).unwrap();
    assert_eq!(
        line.lines().nth(3),
        Some(
            r#"{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"the lexer is ported","tokensBefore":10}"#
        )
    );
    let again = d.join("again.jsonl");
    let o = musepi(
        d,
        &["session", "check", p(&file), "--repair", "-o", p(&again)],
    );
    assert!(
        support::stdout(&o).contains("7 lines kept byte for byte, 1 rewritten, 0 dropped"),
        "{}",
        support::stdout(&o)
    );
    settle(&repaired);
    let migrated = d.join("migrated.jsonl");
    let o = musepi(d, &["session", "migrate", p(&repaired), "-o", p(&migrated)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&migrated).unwrap().lines().nth(3),
        Some(DROPPED)
    );
}

/// An in-place `compact` of a v1 file with nothing to compact writes
/// nothing, so it does not say it rewrote the file; a copy is written as
/// v3 and says so; a compaction written in place says it.
#[test]
fn compact_says_a_v1_file_is_rewritten_only_when_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let small = v1_session(d);
    let before = std::fs::read(&small).unwrap();
    let o = musepi(d, &["compact", p(&small), "--keep-recent", "1000000"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        support::stdout(&o).starts_with("nothing to compact"),
        "{}",
        support::stdout(&o)
    );
    assert!(!stderr(&o).contains("v1 file"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&small).unwrap(), before, "nothing written");

    let copy = d.join("copy.jsonl");
    let o = musepi(
        d,
        &[
            "compact",
            p(&small),
            "--keep-recent",
            "1000000",
            "-o",
            p(&copy),
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_stderr_has(
        &o,
        &format!(
            "musepi: {} is a v1 file; the copy is written as v3",
            p(&small)
        ),
    );
    assert_eq!(json_lines(&copy)[0]["version"], 3);

    let o = musepi(d, &["compact", p(&small), "--keep-recent", "200"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_stderr_has(
        &o,
        &format!(
            "musepi: {} is a v1 file; it is rewritten as v3 with the compaction",
            p(&small)
        ),
    );
    assert_eq!(last(&small)["type"], "compaction");
}
