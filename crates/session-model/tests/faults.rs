//! Fault tests: torn writes, concurrent writers, missing, garbage, empty,
//! header-only and very long lines. Each gets a clear error or a correct
//! result, and no complete entry is ever lost.

mod common;

use std::fmt::Write as _;
use std::sync::{Arc, Barrier};

use common::{Clock, asst, header_line, open, open_err, temp_file, user};
use musepi_session_model::{
    EntryId, IdSource, Journal, ProblemKind, SequentialIds, SessionError, Stamp, TreeEdit,
    load_file,
};

fn session_text(entries: usize) -> String {
    let mut text = header_line("faults");
    text.push('\n');
    for i in 1..=entries {
        let parent = if i == 1 {
            "null".to_owned()
        } else {
            format!("\"{:08x}\"", i - 1)
        };
        let _ = writeln!(
            text,
            r#"{{"type":"message","id":"{i:08x}","parentId":{parent},"timestamp":"2025-01-01T00:00:0{}.000Z","message":{{"role":"user","content":"m{i}","timestamp":{i}}}}}"#,
            i % 10
        );
    }
    text
}

/// `torn.jsonl`: three entries and a torn fourth line; and its text.
fn torn_session() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let mut text = session_text(3);
    text.push_str(r#"{"type":"message","id":"00000004","parentId":"000"#);
    let (dir, path) = temp_file("torn.jsonl", &text);
    (dir, path, text)
}

/// A branch summary on a file the journal may not write: the leaf that
/// moved for it moves back, nothing is added or written, and the target is
/// looked up first (an unknown one is reported as such, the file's problem
/// by the append that follows a valid one).
#[test]
fn a_branch_summary_on_a_torn_file_leaves_the_leaf_and_the_file_as_they_were() {
    let (_dir, path, text) = torn_session();
    let mut j = open(&path);
    let leaf = j.session().leaf_id().cloned();
    let mut c = Clock::default();
    let err = j
        .branch_with_summary(Some("00000001"), "left", None, false, None, &mut c.stamp())
        .unwrap_err();
    assert!(
        matches!(err, SessionError::TornTail { line: 5, .. }),
        "{err:?}"
    );
    assert_eq!(j.session().leaf_id().cloned(), leaf);
    assert_eq!(j.session().len(), 3);
    let err = j
        .branch_with_summary(Some("nowhere"), "left", None, false, None, &mut c.stamp())
        .unwrap_err();
    assert!(matches!(err, SessionError::EntryNotFound(_)), "{err:?}");
    assert_eq!(j.session().leaf_id().cloned(), leaf);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn a_torn_last_line_blocks_writes_until_repaired() {
    let (_dir, path, text) = torn_session();
    let mut j = open(&path);
    assert_eq!(j.session().len(), 3, "every complete entry loads");
    let p = j.session().problems();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].line, 5);
    assert!(matches!(p[0].kind, ProblemKind::TornLine { .. }));
    let mut c = Clock::default();
    let err = j.append(user("more"), &mut c.stamp()).unwrap_err();
    assert!(
        matches!(err, SessionError::TornTail { line: 5, .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("torn.jsonl:5") && msg.contains("--repair"),
        "{msg}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "nothing written"
    );
    assert_eq!(
        j.session().len(),
        3,
        "the failed append is undone in memory"
    );
}

/// Ids that start with a writer's letter, so each writer's entries are known.
struct Tagged {
    tag: char,
    n: u32,
}

impl IdSource for Tagged {
    fn next_candidate(&mut self) -> String {
        self.n += 1;
        format!("{}{:07x}", self.tag, self.n)
    }
}

#[test]
fn concurrent_writers_never_interleave_or_lose_entries() {
    let (_dir, path) = temp_file("shared.jsonl", &session_text(1));
    let writers = 4;
    let per_writer = 25;
    let barrier = Arc::new(Barrier::new(writers));
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let path = path.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let tag = char::from(b'a' + w as u8);
                let mut ids = Tagged { tag, n: 0 };
                let mut written: Vec<EntryId> = Vec::new();
                let mut changed = 0;
                barrier.wait();
                let mut j = Journal::open(&path, &mut SequentialIds::new()).unwrap();
                while written.len() < per_writer {
                    let mut stamp = Stamp {
                        ids: &mut ids,
                        now: 1_735_689_600_000,
                    };
                    match j.append(user(&format!("{tag}{}", written.len())), &mut stamp) {
                        Ok(id) => written.push(id),
                        Err(SessionError::ChangedOnDisk { .. }) => {
                            changed += 1;
                            j = Journal::open(&path, &mut SequentialIds::new()).unwrap();
                        }
                        Err(e) => panic!("writer {tag}: {e}"),
                    }
                }
                (written, changed)
            })
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        let (written, _changed) = h.join().unwrap();
        all.extend(written);
    }
    let (s, tail) = load_file(&path, &mut SequentialIds::new()).unwrap();
    assert!(s.problems().is_empty(), "{:?}", s.problems());
    assert!(tail.ends_with_newline);
    assert_eq!(
        s.len(),
        1 + writers * per_writer,
        "no entry lost, none doubled"
    );
    for id in &all {
        assert!(s.get(id.as_str()).is_some(), "{id} was reported written");
    }
    // Every append saw the latest file, so each entry hangs under the previous one.
    for i in 1..s.len() {
        assert_eq!(s.parent_index(i), Some(i - 1), "line {}", s.line_of(i));
    }
}

#[test]
fn a_missing_file_is_a_clear_error_and_is_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.jsonl");
    let err = open_err(&path);
    let SessionError::Io { source, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    assert!(err.to_string().contains("nope.jsonl"));
    assert!(!path.exists());
}

#[test]
fn a_garbage_file_is_refused_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect();
    let path = dir.path().join("garbage.jsonl");
    std::fs::write(&path, &bytes).unwrap();
    let err = open_err(&path);
    assert!(matches!(err, SessionError::NotASession { .. }), "{err:?}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_zero_byte_file_is_empty_and_stays_empty() {
    let (_dir, path) = temp_file("zero.jsonl", "");
    let err = open_err(&path);
    assert!(matches!(err, SessionError::Empty { .. }), "{err:?}");
    assert!(err.to_string().contains("zero.jsonl"));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
}

#[test]
fn a_header_only_file_opens_and_takes_appends() {
    let (_dir, path) = temp_file("header.jsonl", &format!("{}\n", header_line("h")));
    let mut j = open(&path);
    assert!(j.session().is_empty());
    assert_eq!(j.session().leaf_id(), None);
    let mut c = Clock::default();
    let id = j.append(asst("first"), &mut c.stamp()).unwrap();
    let (s, _) = load_file(&path, &mut SequentialIds::new()).unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!(s.leaf_id(), Some(&id));
    assert_eq!(s.entries()[0].parent_id, None);
}

#[test]
fn a_fifty_megabyte_line_loads() {
    let big = "x".repeat(50 << 20);
    let text = format!(
        "{}\n{{\"type\":\"message\",\"id\":\"big00001\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{big}\",\"timestamp\":1}}}}\n",
        header_line("big")
    );
    let (_dir, path) = temp_file("big.jsonl", &text);
    drop(text);
    let j = open(&path);
    let s = j.session();
    assert_eq!(s.len(), 1);
    assert!(s.problems().is_empty());
    assert_eq!(common::text_of(&s.entries()[0]).len(), 50 << 20);
}

#[test]
fn a_file_that_changed_on_disk_is_not_written() {
    let (_dir, path) = temp_file("changed.jsonl", &session_text(2));
    let mut j = open(&path);
    let mut other = open(&path);
    let mut c = Clock::default();
    other
        .append(user("from another writer"), &mut c.stamp())
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    let err = j.append(user("stale"), &mut c.stamp()).unwrap_err();
    assert!(matches!(err, SessionError::ChangedOnDisk { .. }), "{err:?}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}
