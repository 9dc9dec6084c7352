//! Nothing is lost: what pruning blanks is kept in the prune store beside
//! the session, `musepi unprune` puts it back byte for byte, and `musepi
//! recall` reads it back, with what compactions summarized
//! (docs/design.md, "The prune store" and "Recall").

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{code, example_session, json_out, musepi_in, p, stderr, stdout};

const NOW: &str = "2026-02-01T00:00:00.000Z";

fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    musepi_in(dir, &dir.join("home"), args, None)
}

/// The store's folder beside `file`.
fn store_of(file: &Path) -> PathBuf {
    file.with_file_name(format!(
        ".{}.musepi-store",
        file.file_name().unwrap().to_str().unwrap()
    ))
}

/// Each tool result's text in a session file, by entry id.
fn result_texts(file: &Path) -> BTreeMap<String, String> {
    fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["message"]["role"] == "toolResult")
        .map(|v| {
            let text: String = v["message"]["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect();
            (v["id"].as_str().unwrap().to_owned(), text)
        })
        .collect()
}

/// Prunes `file` in place with no minimum saving; returns the pruned ids.
fn prune(dir: &Path, file: &Path) -> Vec<String> {
    let o = run(
        dir,
        &[
            "prune",
            p(file),
            "--min-saving",
            "0",
            "--force",
            "--now",
            NOW,
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    json_out(&o)["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["entryId"].as_str().unwrap().to_owned())
        .collect()
}

/// Every page of `recall --entry ID`, joined.
fn recall_whole(dir: &Path, file: &Path, id: &str, limit: usize) -> (String, usize) {
    let (mut text, mut pages, mut offset) = (String::new(), 0, 0);
    loop {
        let o = run(
            dir,
            &[
                "recall",
                p(file),
                "--entry",
                id,
                "--offset",
                &offset.to_string(),
                "--limit",
                &limit.to_string(),
                "--json",
            ],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let page = json_out(&o);
        assert_eq!(page["offset"], offset);
        text.push_str(page["text"].as_str().unwrap());
        pages += 1;
        let Some(next) = page["next"].as_u64() else {
            assert_eq!(page["length"], text.len());
            return (text, pages);
        };
        offset = usize::try_from(next).unwrap();
    }
}

#[test]
fn pruning_keeps_every_original_which_recall_reads_and_unprune_puts_back_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let file = example_session(dir.path(), "s.jsonl");
    let before = fs::read(&file).unwrap();
    let originals = result_texts(&file);
    let pruned = prune(dir.path(), &file);
    assert_eq!(pruned.len(), 20);
    let now = result_texts(&file);
    for id in &pruned {
        // The placeholder says how to get the original back.
        assert!(
            now[id].ends_with(&format!("; original kept: recall entry {id}]")),
            "{}",
            now[id]
        );
        let (text, pages) = recall_whole(dir.path(), &file, id, 300);
        assert!(pages > 1, "{id}: paged");
        assert_eq!(text, originals[id], "{id}: the original, byte for byte");
    }
    // The store is a hidden folder of content-addressed objects.
    let store = store_of(&file);
    assert_eq!(
        fs::read_to_string(store.join("index"))
            .unwrap()
            .lines()
            .count(),
        pruned.len()
    );
    // Pruning again keeps nothing twice.
    let o = run(
        dir.path(),
        &[
            "unprune",
            p(&file),
            "--entry",
            &pruned[0],
            "--force",
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_out(&o)["restored"], serde_json::json!([pruned[0]]));
    assert_eq!(result_texts(&file)[&pruned[0]], originals[&pruned[0]]);
    prune(dir.path(), &file);
    assert_eq!(
        fs::read_to_string(store.join("index"))
            .unwrap()
            .lines()
            .count(),
        pruned.len()
    );
    let o = run(dir.path(), &["unprune", p(&file), "--force", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json_out(&o);
    assert_eq!(doc["restored"].as_array().unwrap().len(), pruned.len());
    assert_eq!(doc["unrecoverable"], serde_json::json!([]));
    assert_eq!(doc["written"], true);
    assert_eq!(
        fs::read(&file).unwrap(),
        before,
        "the session is the file before pruning, byte for byte"
    );
    // Nothing pruned is left: an entry that is not pruned is refused.
    let o = run(dir.path(), &["unprune", p(&file), "--force"]);
    assert_eq!((code(&o), stdout(&o).trim()), (0, "nothing to put back"));
    let o = run(
        dir.path(),
        &[
            "unprune",
            p(&file),
            "--entry",
            &pruned[0],
            "--force",
            "--json",
        ],
    );
    assert_eq!(code(&o), 2);
    assert_eq!(json_out(&o)["error"]["code"], "not-pruned");
}

#[test]
fn a_store_that_cannot_be_written_stops_the_prune_and_leaves_the_session_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let file = example_session(dir.path(), "s.jsonl");
    let before = fs::read(&file).unwrap();
    // A file where the store's folder would go.
    fs::write(store_of(&file), b"not a folder").unwrap();
    let o = run(
        dir.path(),
        &["prune", p(&file), "--min-saving", "0", "--force", "--json"],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(json_out(&o)["error"]["code"], "write-failed");
    assert_eq!(fs::read(&file).unwrap(), before);
}

#[test]
fn a_copy_keeps_its_originals_beside_it_and_a_store_that_does_not_match_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let file = example_session(dir.path(), "s.jsonl");
    let before = fs::read(&file).unwrap();
    let out = dir.path().join("out.jsonl");
    let o = run(
        dir.path(),
        &["prune", p(&file), "--min-saving", "0", "-o", p(&out)],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(fs::read(&file).unwrap(), before);
    assert!(!store_of(&file).exists(), "FILE was not changed");
    assert!(store_of(&out).join("index").is_file());
    let pruned: Vec<String> = result_texts(&out)
        .into_iter()
        .filter(|(_, t)| t.contains("original kept"))
        .map(|(id, _)| id)
        .collect();
    let id = pruned[0].as_str();
    let o = run(dir.path(), &["recall", p(&out), "--entry", id, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_out(&o)["text"], result_texts(&file)[id]);
    // The same session read from standard input finds its store by name.
    let o = musepi_in(
        dir.path(),
        &dir.path().join("home"),
        &[
            "recall",
            "-",
            "--store-of",
            p(&out),
            "--entry",
            id,
            "--json",
        ],
        Some(&fs::read(&out).unwrap()),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_out(&o)["original"], true);

    // A damaged object is ignored with a warning.
    let index = fs::read_to_string(store_of(&out).join("index")).unwrap();
    let record: Value = index
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["entry"] == id)
        .unwrap();
    let sha = record["sha256"].as_str().unwrap();
    let object = store_of(&out)
        .join("objects")
        .join(&sha[..2])
        .join(&sha[2..]);
    let good = fs::read(&object).unwrap();
    fs::write(&object, b"{}").unwrap();
    let o = run(dir.path(), &["recall", p(&out), "--entry", id, "--json"]);
    assert_eq!(code(&o), 1);
    let doc = json_out(&o);
    assert_eq!(doc["error"]["code"], "no-original");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("missing or damaged"),
        "{doc}"
    );
    fs::write(&object, &good).unwrap();

    // A line of the index that is not a record is skipped, with a warning
    // naming the index and the line; a torn last line (a killed run) is
    // skipped without one.
    let lines = index.lines().count();
    fs::write(
        store_of(&out).join("index"),
        format!("{index}not a record\n{{\"session\":"),
    )
    .unwrap();
    let o = run(dir.path(), &["recall", p(&out), "--entry", id, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json_out(&o);
    let expected = format!(
        "{}:{}: the line is not a record of the prune store",
        store_of(&out).join("index").display(),
        lines + 1
    );
    assert_eq!(doc["warnings"].as_array().unwrap().len(), 1, "{doc}");
    assert!(
        doc["warnings"][0].as_str().unwrap().starts_with(&expected),
        "{doc}"
    );
    assert_eq!(doc["original"], true);
    fs::write(store_of(&out).join("index"), &index).unwrap();

    // Another session under the same name: its store is not this one's.
    let text = fs::read_to_string(&out).unwrap().replacen(
        "6a1f0c2e-3b7d-4e59-9c21-8d4f5a6b7c80",
        "01890a5d-ac96-774b-bcce-b302099a8057",
        1,
    );
    fs::write(&out, text).unwrap();
    let o = run(dir.path(), &["recall", p(&out), "--grep", "fn ", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json_out(&o);
    assert!(
        doc["warnings"][0]
            .as_str()
            .unwrap()
            .contains("holds originals of another session"),
        "{doc}"
    );
    assert_eq!(doc["unrecoverable"].as_array().unwrap().len(), pruned.len());
    assert!(stderr(&o).contains("another session"), "{}", stderr(&o));
    // Deleting the store loses the recovery only.
    fs::remove_dir_all(store_of(&out)).unwrap();
    let o = run(dir.path(), &["unprune", p(&out), "--force", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_out(&o)["restored"], serde_json::json!([]));
    let o = run(dir.path(), &["recall", p(&out), "--entry", id]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("cannot be read"), "{}", stderr(&o));
}

#[test]
fn recall_searches_what_a_compaction_summarized_a_page_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let file = example_session(dir.path(), "s.jsonl");
    let o = run(dir.path(), &["compact", p(&file), "--force", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let first_kept = json_out(&o)["firstKeptEntryId"]
        .as_str()
        .unwrap()
        .to_owned();
    // The first user message was summarized; the search finds it whole.
    let o = run(
        dir.path(),
        &["recall", p(&file), "--grep", "APPEND-ONLY LOG", "--json"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json_out(&o);
    assert_eq!(doc["total"], 1, "{doc}");
    let m = &doc["matches"][0];
    assert_eq!(
        (
            m["entryId"].as_str(),
            m["role"].as_str(),
            m["summarized"].as_bool()
        ),
        (Some("00000003"), Some("user"), Some(true))
    );
    assert!(m["text"].as_str().unwrap().contains("append-only log"));
    // What the context still holds is not searched: the kept messages are
    // there for the model to read.
    let o = run(dir.path(), &["recall", p(&file), "--grep", "fn ", "--json"]);
    let all = json_out(&o);
    let kept: Vec<String> = fs::read_to_string(&file)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .skip_while(|v| v["id"] != first_kept.as_str())
        .filter_map(|v| v["id"].as_str().map(str::to_owned))
        .collect();
    // Paging: every page's matches, in order, are the whole list.
    let total = usize::try_from(all["total"].as_u64().unwrap()).unwrap();
    assert!(total > 40, "{total}");
    let (mut seen, mut offset) = (Vec::new(), 0);
    loop {
        let o = run(
            dir.path(),
            &[
                "recall",
                p(&file),
                "--grep",
                "fn ",
                "--limit",
                "17",
                "--offset",
                &offset.to_string(),
                "--json",
            ],
        );
        let page = json_out(&o);
        for m in page["matches"].as_array().unwrap() {
            assert!(!kept.contains(&m["entryId"].as_str().unwrap().to_owned()));
            seen.push((m["entryId"].clone(), m["line"].clone()));
        }
        match page["next"].as_u64() {
            Some(next) => offset = usize::try_from(next).unwrap(),
            None => break,
        }
    }
    assert_eq!(seen.len(), total);
    // People get aligned rows and the way to the next page.
    let o = run(
        dir.path(),
        &["recall", p(&file), "--grep", "fn ", "--limit", "3"],
    );
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("entry     role"), "{text}");
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[4].ends_with("the next page: --offset 3"), "{text}");
    // An empty search is bad usage; an unknown entry is bad input.
    let o = run(dir.path(), &["recall", p(&file), "--grep", "", "--json"]);
    assert_eq!(
        (code(&o), json_out(&o)["error"]["code"].as_str()),
        (2, Some("usage"))
    );
    let o = run(
        dir.path(),
        &["recall", p(&file), "--entry", "nope", "--json"],
    );
    assert_eq!(
        (code(&o), json_out(&o)["error"]["code"].as_str()),
        (2, Some("unknown-entry"))
    );
}
