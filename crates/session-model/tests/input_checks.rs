//! Input that is not a session, or is one with structural defects: refused
//! at once with the file, line and cause, or reported per line by the same
//! checks that every new entry passes before it is written.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{Clock, header_line, open, open_err, problems, temp_file, user};
use musepi_session_model::{
    AgentMessage, Compaction, EntryBody, EntryId, MAX_LINE_BYTES, MadeBy, ProblemKind,
    SequentialIds, SessionError, Text, load_file,
};
use musepi_test_support::message_line;

#[test]
fn fifos_devices_and_folders_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // Reading the FIFO or /dev/zero would block or never end: each is
    // refused by its kind before anything is read.
    for (path, kind) in [
        (fifo.as_path(), "FIFO"),
        (Path::new("/dev/zero"), "character device"),
        (Path::new("/dev/null"), "character device"),
        (dir.path(), "folder"),
    ] {
        let err = open_err(path);
        assert!(
            matches!(err, SessionError::NotRegular { kind: k, .. } if k.starts_with(kind)),
            "{}: {err:?}",
            path.display()
        );
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(err.is_bad_input());
    }
}

#[test]
fn a_line_longer_than_the_cap_is_an_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.jsonl");
    let mut text = format!(
        "{}\n{}\n",
        header_line("long"),
        message_line("a1", None, "fine")
    );
    let (head, tail) = (
        r#"{"type":"message","id":"b2","parentId":"a1","message":""#,
        "\"}",
    );
    let filler = usize::try_from(MAX_LINE_BYTES).unwrap() + 1 - head.len() - tail.len();
    text.push_str(head);
    text.push_str(&"x".repeat(filler));
    text.push_str(tail);
    text.push('\n');
    std::fs::write(&path, &text).unwrap();
    drop(text);
    let err = open_err(&path);
    assert!(
        matches!(err, SessionError::LineTooLong { line: 3, limit, .. } if limit == MAX_LINE_BYTES),
        "{err:?}"
    );
    assert!(err.to_string().contains("long.jsonl:3"), "{err}");

    // Exactly at the cap still reads (as a malformed line, here).
    let at_cap = dir.path().join("at-cap.jsonl");
    let mut text = format!("{}\n", header_line("cap"));
    text.push_str(&"y".repeat(usize::try_from(MAX_LINE_BYTES).unwrap()));
    text.push('\n');
    std::fs::write(&at_cap, &text).unwrap();
    drop(text);
    let (s, _) = load_file(&at_cap, &mut SequentialIds::new()).unwrap();
    assert!(matches!(
        s.problems()[0].kind,
        ProblemKind::MalformedJson { .. }
    ));
}

#[test]
fn an_unrecognised_version_is_refused_and_nothing_is_migrated() {
    for (version, shown) in [
        (r#""3""#, r#""3""#),
        ("0", "0"),
        ("4", "4"),
        ("2.5", "2.5"),
        ("-1", "-1"),
        ("null", "null"),
        ("true", "true"),
        ("[3]", "[3]"),
    ] {
        let text = format!(
            "{{\"type\":\"session\",\"version\":{version},\"id\":\"v\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/\"}}\n{}\n",
            message_line("a1", None, "hi")
        );
        let (_dir, path) = temp_file("v.jsonl", &text);
        let err = open_err(&path);
        assert!(
            matches!(&err, SessionError::UnknownVersion { line: 1, found, .. } if found == shown),
            "{version}: {err:?}"
        );
        assert!(err.to_string().contains("unrecognised session version"));
        assert!(err.is_bad_input());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }
    // 3.0 is the number 3, as JavaScript compares it.
    let text = format!(
        "{{\"type\":\"session\",\"version\":3.0,\"id\":\"v\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/\"}}\n{}\n",
        message_line("a1", None, "hi")
    );
    let (_dir, path) = temp_file("v3.jsonl", &text);
    let j = open(&path);
    assert_eq!(j.session().original_version(), 3);
    assert!(!j.migration_pending());
}

#[test]
fn a_byte_order_mark_or_invalid_utf8_header_is_named_as_line_1() {
    let dir = tempfile::tempdir().unwrap();
    let mut bom = vec![0xEF, 0xBB, 0xBF];
    bom.extend_from_slice(format!("{}\n", header_line("bom")).as_bytes());
    let mut latin1 = header_line("bad").into_bytes();
    latin1[40] = 0xFF;
    latin1.push(b'\n');
    for (name, bytes, said) in [
        ("bom.jsonl", bom, "byte-order mark"),
        (
            "latin1.jsonl",
            latin1,
            "not valid UTF-8 (byte 0xff at column 41)",
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let err = open_err(&path);
        assert!(
            matches!(&err, SessionError::NotASession { line: 1, reason, .. } if reason.contains(said)),
            "{name}: {err:?}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name}: untouched");
    }
}

/// Every structural defect `session check` reports, each on its line.
#[test]
fn structural_defects_are_reported_with_their_lines() {
    let lines = [
        header_line("defects"),
        message_line("a1", None, "root"),
        // 3: its own parent
        message_line("s1", Some("s1"), "self"),
        // 4: a role nobody knows
        r#"{"type":"message","id":"r1","parentId":"a1","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"robot","content":"beep","timestamp":2}}"#.to_owned(),
        // 5: tool call arguments as a string
        r#"{"type":"message","id":"t1","parentId":"r1","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":"{\"path\":\"a\"}"}],"provider":"p","model":"m","stopReason":"toolUse","timestamp":3}}"#.to_owned(),
        // 6: first kept entry missing
        r#"{"type":"compaction","id":"k1","parentId":"t1","timestamp":"2025-01-01T00:00:04.000Z","summary":"s","firstKeptEntryId":"nope","tokensBefore":1}"#.to_owned(),
        // 7: first kept entry is itself
        r#"{"type":"compaction","id":"k2","parentId":"k1","timestamp":"2025-01-01T00:00:05.000Z","summary":"s","firstKeptEntryId":"k2","tokensBefore":1}"#.to_owned(),
        // 8: first kept entry written later (line 12)
        r#"{"type":"compaction","id":"k3","parentId":"k2","timestamp":"2025-01-01T00:00:06.000Z","summary":"s","firstKeptEntryId":"z9","tokensBefore":1}"#.to_owned(),
        // 9: first kept entry on another branch
        r#"{"type":"compaction","id":"k4","parentId":"k3","timestamp":"2025-01-01T00:00:07.000Z","summary":"s","firstKeptEntryId":"s1","tokensBefore":1}"#.to_owned(),
        // 10: branch summary from nowhere
        r#"{"type":"branch_summary","id":"b1","parentId":"k4","timestamp":"2025-01-01T00:00:08.000Z","fromId":"gone","summary":"s"}"#.to_owned(),
        // 11: label on nothing
        r#"{"type":"label","id":"l1","parentId":"b1","timestamp":"2025-01-01T00:00:09.000Z","targetId":"ghost","label":"x"}"#.to_owned(),
        message_line("z9", Some("l1"), "late"),
    ];
    let (_dir, path) = temp_file("defects.jsonl", &(lines.join("\n") + "\n"));
    let (s, _) = load_file(&path, &mut SequentialIds::new()).unwrap();
    assert_eq!(
        problems(&s),
        [
            (3, "self-parent"),
            (4, "unknown-role"),
            (5, "tool-call-arguments"),
            (6, "first-kept-missing"),
            (7, "first-kept-self"),
            (8, "first-kept-later"),
            (9, "first-kept-off-path"),
            (10, "dangling-from-id"),
            (11, "dangling-label-target"),
        ]
    );
    let text: Vec<String> = s.problems().iter().map(ToString::to_string).collect();
    assert!(
        text[2].contains("`c1`") && text[2].contains("a string"),
        "{}",
        text[2]
    );
    assert!(text[5].contains("line 12"), "{}", text[5]);
    // None of these is rewritten wrongly: the lines are copied as they are.
    assert!(s.problems().iter().all(|p| !p.kind.blocks_rewrite()));
}

#[test]
fn bad_v1_compaction_indexes_are_reported_and_block_rewrites() {
    let v1 = |index: &str| {
        format!(
            "{{\"type\":\"session\",\"id\":\"v1\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/\"}}\n\
             {{\"type\":\"message\",\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"a\",\"timestamp\":1}}}}\n\
             {{\"type\":\"compaction\",\"timestamp\":\"2025-01-01T00:00:02.000Z\",\"summary\":\"s\",\"firstKeptEntryIndex\":{index},\"tokensBefore\":1}}\n"
        )
    };
    for (index, reason) in [
        ("1.5", "is not a whole number"),
        ("-1", "is negative"),
        ("0", "names the header"),
        ("7", "names no earlier entry"),
    ] {
        let text = v1(index);
        let (_dir, path) = temp_file("v1.jsonl", &text);
        let mut j = open(&path);
        let p = &j.session().problems()[0];
        assert_eq!((p.line, p.kind.name()), (3, "first-kept-index"), "{index}");
        assert!(p.kind.to_string().contains(reason), "{}", p.kind);
        assert!(p.kind.blocks_rewrite());
        let err = j.persist_migration().unwrap_err();
        assert!(
            matches!(err, SessionError::Blocked { line: 3, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("--force"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        // Allowed to, the rewrite drops the index as pi's migration does:
        // no `firstKeptEntryIndex`, no `firstKeptEntryId`.
        let dropped = j.drop_unresolved_first_kept();
        assert_eq!(dropped.len(), 1);
        assert_eq!(dropped[0].line, 3);
        j.persist_migration().unwrap();
        let written = std::fs::read_to_string(&path).unwrap();
        let compaction = written.lines().nth(2).unwrap();
        assert_eq!(
            compaction,
            r#"{"type":"compaction","timestamp":"2025-01-01T00:00:02.000Z","summary":"s","tokensBefore":1,"id":"00000002","parentId":"00000001"}"#,
            "{index}"
        );
        // pi writes such a compaction without a first kept entry, which
        // `session check` still lists; nothing blocks a write any more.
        let after: Vec<_> = open(&path)
            .session()
            .problems()
            .iter()
            .map(|p| (p.line, p.kind.name(), p.kind.blocks_rewrite()))
            .collect();
        assert_eq!(after, [(3, "missing-field", false)]);
        // The line a repaired copy holds: the v1 line without its index.
        let line = text.lines().nth(2).unwrap();
        assert_eq!(
            musepi_session_model::without_first_kept_index(line.as_bytes()).unwrap(),
            r#"{"type":"compaction","timestamp":"2025-01-01T00:00:02.000Z","summary":"s","tokensBefore":1}"#
        );
    }
    let (_dir, good) = temp_file("good.jsonl", &v1("1"));
    let j = open(&good);
    assert!(j.session().problems().is_empty());
}

/// The journal runs the same checks on what it is asked to write: an entry
/// the next `session check` would flag is refused, and nothing is written.
#[test]
fn appends_that_would_fail_the_check_are_refused() {
    let text = format!(
        "{}\n{}\n{}\n{}\n",
        header_line("v"),
        message_line("a1", None, "one"),
        message_line("b2", Some("a1"), "branch one"),
        message_line("c3", Some("a1"), "branch two"),
    );
    let (_dir, path) = temp_file("s.jsonl", &text);
    let mut j = open(&path);
    let mut c = Clock::default();
    let unknown = EntryBody::Message(AgentMessage::Other {
        role: "robot".into(),
        timestamp: Some(1.0),
    });
    let compaction = |first: &str| {
        EntryBody::Compaction(Compaction {
            summary: Text::new("summary"),
            first_kept_entry_id: Some(EntryId::new(first)),
            tokens_before: 10,
            details: None,
            made_by: MadeBy::extension(true),
            short_summary: None,
            preserve_data: None,
            usage: None,
            method: None,
            tokens_after: None,
        })
    };
    let label = EntryBody::Label {
        target_id: EntryId::new("ghost"),
        label: Some("x".into()),
    };
    for (body, what) in [
        (unknown, "message"),
        (compaction("b2"), "not on the path"),
        (compaction("nope"), "names no entry"),
        (label, "names no entry"),
    ] {
        let err = j.append(body, &mut c.stamp()).unwrap_err();
        assert!(
            matches!(&err, SessionError::InvalidEntry { problem, .. } if problem.contains(what)),
            "{err:?}"
        );
        assert_eq!(j.session().len(), 3, "the session is as it was");
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    // The leaf is c3, so a compaction keeping from a1 is on the path.
    j.append(compaction("a1"), &mut c.stamp()).unwrap();
    j.append(user("more"), &mut c.stamp()).unwrap();
    let (s, _) = load_file(&path, &mut SequentialIds::new()).unwrap();
    assert!(s.problems().is_empty(), "{:?}", s.problems());
    assert_eq!(s.len(), 5);
}

/// A batch is appended whole or not at all: an entry the check refuses
/// leaves out the valid ones before it too, and a valid batch lands in the
/// file in order, each entry under the one before.
#[test]
fn a_batch_with_one_refused_entry_appends_none_of_it() {
    let text = format!(
        "{}\n{}\n",
        header_line("v"),
        message_line("a1", None, "one")
    );
    let (_dir, path) = temp_file("s.jsonl", &text);
    let mut j = open(&path);
    let mut c = Clock::default();
    let label = |target: &str| EntryBody::Label {
        target_id: EntryId::new(target),
        label: Some("x".into()),
    };
    let err = j
        .append_all([user("fine"), label("ghost")], &mut c.stamp())
        .unwrap_err();
    assert!(
        matches!(&err, SessionError::InvalidEntry { problem, .. } if problem.contains("names no entry")),
        "{err:?}"
    );
    assert_eq!(j.session().len(), 1, "the session is as it was");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);

    let ids = j
        .append_all([user("two"), user("three")], &mut c.stamp())
        .unwrap();
    let labelled = j
        .append_all([user("four"), label(ids[0].as_str())], &mut c.stamp())
        .unwrap();
    let none: [EntryBody; 0] = [];
    assert!(j.append_all(none, &mut c.stamp()).unwrap().is_empty());
    let (s, _) = load_file(&path, &mut SequentialIds::new()).unwrap();
    assert!(s.problems().is_empty(), "{:?}", s.problems());
    let order: Vec<&str> = s.entries().iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        order,
        [
            "a1",
            ids[0].as_str(),
            ids[1].as_str(),
            labelled[0].as_str(),
            labelled[1].as_str()
        ]
    );
    let parents: Vec<Option<&str>> = s.entries()[1..]
        .iter()
        .map(|e| e.parent_id.as_ref().map(EntryId::as_str))
        .collect();
    assert_eq!(
        parents,
        [
            Some("a1"),
            Some(ids[0].as_str()),
            Some(ids[1].as_str()),
            Some(labelled[0].as_str())
        ]
    );
}
