//! The cases of pi's migration, label and save-entry tests
//! (`migration.test.ts`, `labels.test.ts`, `save-entry.test.ts`): migration, labels, custom entries, the deferred flush.

mod common;

use common::{Clock, asst, body, conversation, created, header, load_text, user};
use musepi_session_model::{EntryBody, EntryId, Header, Journal, SequentialIds, Session, TreeEdit};
use serde_json::json;

/// These lines, each ended by a newline.
fn text(lines: &[&str]) -> String {
    lines.iter().flat_map(|l| [*l, "\n"]).collect()
}

/// The session of these lines.
fn load(lines: &[&str]) -> Session {
    load_text(&text(lines))
}

#[test]
fn v1_entries_get_ids_and_parents() {
    let s = load(&[
        r#"{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":""}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],"timestamp":2}}"#,
    ]);
    assert_eq!(s.header().version, 3);
    assert_eq!(s.original_version(), 1);
    let e = s.entries();
    assert!(e.iter().all(|e| e.id.as_str().len() == 8));
    assert_eq!(e[0].parent_id, None);
    assert_eq!(e[1].parent_id.as_ref(), Some(&e[0].id));
    assert!(s.raw_header().unwrap().contains(r#""version":3"#));
}

/// Ids proposed in turn, then `fffffff0`, `fffffff1`, … (a source as a
/// random one may be: it proposes ids that are taken).
struct Proposed(Vec<&'static str>, u32);

impl musepi_session_model::IdSource for Proposed {
    fn next_candidate(&mut self) -> String {
        if self.0.is_empty() {
            self.1 += 1;
            format!("{:08x}", 0xffff_fff0 + self.1)
        } else {
            self.0.remove(0).to_owned()
        }
    }
}

/// An entry added to a v1 session after its entries were numbered never
/// takes one of their numbers, whatever its id source proposes.
#[test]
fn entries_added_to_a_v1_session_never_take_a_number() {
    let mut s = load(&[
        r#"{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":""}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
        "",
        r#"{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],"timestamp":2}}"#,
    ]);
    let ids: Vec<&str> = s.entries().iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["00000001", "00000002"]);
    let mut source = Proposed(vec!["00000002", "00000001", "0000abcd"], 0);
    let mut stamp = musepi_session_model::Stamp {
        ids: &mut source,
        now: 1_700_000_000_000,
    };
    assert_eq!(s.append(user("next"), &mut stamp), "0000abcd");
    let mut sequential = SequentialIds::after(s.entries().iter().map(|e| &e.id));
    let mut stamp = musepi_session_model::Stamp {
        ids: &mut sequential,
        now: 1_700_000_000_001,
    };
    assert_eq!(s.append(user("then"), &mut stamp), "0000abce");
}

#[test]
fn v2_ids_are_kept() {
    let s = load(&[
        r#"{"type":"session","version":2,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":""}"#,
        r#"{"type":"message","id":"abc12345","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
        r#"{"type":"message","id":"def67890","parentId":"abc12345","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"hookMessage","customType":"x","content":"c","display":true,"timestamp":2}}"#,
    ]);
    let e = s.entries();
    assert_eq!(
        [e[0].id.as_str(), e[1].id.as_str()],
        ["abc12345", "def67890"]
    );
    assert_eq!(
        e[1].parent_id.as_ref().map(EntryId::as_str),
        Some("abc12345")
    );
    assert_eq!(e[1].message().unwrap().role(), "custom");
    assert!(s.raw_line(1).unwrap().contains(r#""role":"custom""#));
}

#[test]
fn v1_first_kept_entry_index_becomes_an_id() {
    let s = load(&[
        r#"{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":""}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"b","timestamp":2}}"#,
        r#"{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":10}"#,
    ]);
    let EntryBody::Compaction(c) = &s.entries()[2].body else {
        panic!()
    };
    assert_eq!(c.first_kept_entry_id.as_ref(), Some(&s.entries()[1].id));
    assert_eq!(s.entries()[1].id.as_str(), "00000002");
    let line = s.raw_line(2).unwrap();
    assert!(!line.contains("firstKeptEntryIndex"), "{line}");
    assert!(
        line.ends_with(r#""id":"00000003","parentId":"00000002","firstKeptEntryId":"00000002"}"#),
        "{line}"
    );
}

#[test]
fn labels_set_clear_and_last_wins() {
    let (mut s, mut c, [id1, id2]) = conversation(["1", "2"]);
    s.append_label(id1.as_str(), Some("checkpoint"), &mut c.stamp())
        .unwrap();
    assert_eq!(s.label(id1.as_str()), Some("checkpoint"));
    s.append_label(id1.as_str(), Some("later"), &mut c.stamp())
        .unwrap();
    assert_eq!(s.label(id1.as_str()), Some("later"));
    s.append_label(id1.as_str(), None, &mut c.stamp()).unwrap();
    assert_eq!(s.label(id1.as_str()), None);
    s.append_label(id2.as_str(), Some(""), &mut c.stamp())
        .unwrap();
    assert_eq!(s.label(id2.as_str()), None, "an empty label clears");
    let err = s
        .append_label("non-existent", Some("x"), &mut c.stamp())
        .unwrap_err();
    assert_eq!(err.to_string(), "Entry non-existent not found");
}

#[test]
fn branched_sessions_recreate_only_on_path_labels() {
    let (mut s, mut c, [id1, id2, id3]) = conversation(["1", "2", "3"]);
    s.append_label(id1.as_str(), Some("one"), &mut c.stamp())
        .unwrap();
    s.append_label(id2.as_str(), Some("two"), &mut c.stamp())
        .unwrap();
    s.append_label(id3.as_str(), Some("three"), &mut c.stamp())
        .unwrap();
    // Branch at id2: id3 is off the path.
    let b = s
        .branched(
            id2.as_str(),
            Header::new("b", "2025-01-02T00:00:00.000Z", "/"),
            &mut c.stamp(),
        )
        .unwrap();
    let labels: Vec<_> = b
        .entries()
        .iter()
        .filter(|e| e.type_name() == "label")
        .collect();
    assert_eq!(labels.len(), 2);
    assert_eq!(b.label(id1.as_str()), Some("one"));
    assert_eq!(b.label(id2.as_str()), Some("two"));
    assert_eq!(b.label(id3.as_str()), None);
    assert_eq!(
        labels[0].parent_id.as_ref(),
        Some(&id2),
        "chained after the last path entry"
    );
}

#[test]
fn labels_are_not_messages() {
    let (mut s, mut c) = (Session::new(header()), Clock::default());
    let id1 = s.append(user("1"), &mut c.stamp());
    s.append_label(id1.as_str(), Some("x"), &mut c.stamp())
        .unwrap();
    let messages = s
        .branch(None)
        .unwrap()
        .iter()
        .filter(|e| e.message().is_some())
        .count();
    assert_eq!(messages, 1);
}

#[test]
fn a_custom_entry_between_messages_chains_but_is_no_message() {
    let (mut s, mut c) = (Session::new(header()), Clock::default());
    let u = s.append(user("1"), &mut c.stamp());
    let cu = s.append(
        body(json!({"type": "custom", "customType": "state", "data": {"n": 1}})),
        &mut c.stamp(),
    );
    let a = s.append(asst("2"), &mut c.stamp());
    assert_eq!(s.len(), 3);
    assert_eq!(s.get(cu.as_str()).unwrap().parent_id.as_ref(), Some(&u));
    assert_eq!(s.get(a.as_str()).unwrap().parent_id.as_ref(), Some(&cu));
    let path = s.branch(None).unwrap();
    assert_eq!(path.len(), 3);
    assert_eq!(path.iter().filter(|e| e.message().is_some()).count(), 2);
}

#[test]
fn the_first_flush_waits_for_an_assistant_and_writes_everything_once() {
    let (_dir, path, mut c, mut j) = created("deferred.jsonl");
    j.append(user("1"), &mut c.stamp()).unwrap();
    j.append(
        body(json!({"type": "thinking_level_change", "thinkingLevel": "high"})),
        &mut c.stamp(),
    )
    .unwrap();
    assert!(!path.exists());
    assert!(!j.is_flushed());
    j.append(asst("2"), &mut c.stamp()).unwrap();
    assert!(j.is_flushed());
    j.append(user("3"), &mut c.stamp()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains(r#""type":"session""#))
            .count(),
        1
    );
    let reopened = Journal::open(&path, &mut SequentialIds::new()).unwrap();
    assert_eq!(reopened.session().entries(), j.session().entries());
}

/// A v1 and a v2 file with what migration changes: ids and parents, a
/// compaction's `firstKeptEntryIndex`, a `hookMessage` role, key order and
/// number forms that `JSON.stringify` prints differently.
const OLD_FILES: [&[&str]; 2] = [
    &[
        r#"{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi \u00e9\n","timestamp":1.0}}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"hookMessage","customType":"x","content":"c","display":true,"timestamp":2}}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"timestamp":3e0}}"#,
        r#"{"type":"compaction","timestamp":"2025-01-01T00:00:04.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":10}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:05.000Z","message":{"role":"user","content":"again","timestamp":5}}"#,
    ],
    &[
        r#"{"type":"session","version":2,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
        r#"{"type":"message","id":"abc12345","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1.50}}"#,
        r#"{"id":"def67890","type":"message","parentId":"abc12345","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"hookMessage","customType":"x","content":"c","display":true,"timestamp":2}}"#,
    ],
];

#[test]
fn migrated_lines_read_from_the_file_are_the_lines_migration_prints() {
    let dir = tempfile::tempdir().unwrap();
    for (n, lines) in OLD_FILES.iter().enumerate() {
        // From memory, every migrated line is printed at once; from a file,
        // it is printed from the file's bytes when it is read.
        let eager = load(lines);
        let path = dir.path().join(format!("old{n}.jsonl"));
        std::fs::write(&path, text(lines)).unwrap();
        let journal = Journal::open(&path, &mut SequentialIds::new()).unwrap();
        let lazy = journal.session();
        assert_eq!(lazy.len(), eager.len());
        assert_eq!(lazy.raw_header().unwrap(), eager.raw_header().unwrap());
        for i in 0..eager.len() {
            assert_eq!(lazy.entries()[i], eager.entries()[i], "file {n}, entry {i}");
            assert_eq!(
                lazy.raw_line(i).unwrap(),
                eager.raw_line(i).unwrap(),
                "file {n}, line {i}"
            );
        }
        // Writing the migration prints the same lines.
        let mut expected = eager.raw_header().unwrap() + "\n";
        for i in 0..eager.len() {
            expected += &eager.raw_line(i).unwrap();
            expected.push('\n');
        }
        let mut journal = journal;
        journal.persist_migration().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            expected,
            "file {n}"
        );
        assert!(expected.contains(r#""role":"custom""#));
    }
}

#[test]
fn the_session_name_is_the_newest_session_info_trimmed_and_a_blank_one_clears_it() {
    let name_after = |names: &[Option<&str>]| {
        let mut entries = vec![(
            "m",
            None,
            json!({"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1}}),
        )];
        let ids: Vec<String> = (0..names.len()).map(|i| format!("n{i}")).collect();
        for (i, name) in names.iter().enumerate() {
            let fields = match name {
                Some(n) => json!({"type": "session_info", "name": n}),
                None => json!({"type": "session_info"}),
            };
            let parent = if i == 0 { "m" } else { ids[i - 1].as_str() };
            entries.push((ids[i].as_str(), Some(parent), fields));
        }
        musepi_test_support::session_of(&entries)
            .session_name()
            .map(str::to_owned)
    };
    assert_eq!(name_after(&[]), None);
    assert_eq!(
        name_after(&[Some("  Refactor parser ✨  ")]).as_deref(),
        Some("Refactor parser ✨")
    );
    assert_eq!(
        name_after(&[Some("\u{feff}\u{a0}\tname\n\u{2028}")]).as_deref(),
        Some("name"),
        "JavaScript's trim removes U+FEFF and line terminators"
    );
    assert_eq!(
        name_after(&[Some("\u{85}x\u{85}")]).as_deref(),
        Some("\u{85}x\u{85}"),
        "and keeps U+0085"
    );
    assert_eq!(
        name_after(&[Some("first"), Some("   ")]),
        None,
        "a blank name clears the title"
    );
    assert_eq!(
        name_after(&[Some("first"), Some("")]),
        None,
        "so does an empty one"
    );
    assert_eq!(
        name_after(&[Some("first"), None]),
        None,
        "and one without a name"
    );
    assert_eq!(
        name_after(&[Some(" "), Some(" second ")]).as_deref(),
        Some("second")
    );
}
