//! From pi's file-operation tests (`file-operations.test.ts`), with musepi's refusal policy
//! (docs/design.md, "Where musepi differs from pi"): a non-empty file without a valid header is refused
//! and left byte for byte as it was; nothing is rewritten to "recover" it.

mod common;

use common::{header_line, load_text, open, open_err, problems, temp_file, write};
use musepi_session_model::{SequentialIds, SessionError, load_file};

const MSG: &str = r#"{"type":"message","id":"m1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;

#[test]
fn missing_empty_headerless_and_non_json_files_give_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let err = open_err(&missing);
    assert!(matches!(err, SessionError::Io { .. }), "{err:?}");
    assert!(err.to_string().contains("missing.jsonl"), "{err}");
    assert!(!missing.exists(), "opening never creates the file");

    let empty = write(dir.path(), "empty.jsonl", "");
    assert!(matches!(open_err(&empty), SessionError::Empty { .. }));
    assert_eq!(std::fs::read(&empty).unwrap(), b"");

    let headerless = write(
        dir.path(),
        "h.jsonl",
        "{\"type\":\"message\",\"id\":\"1\"}\n",
    );
    let err = open_err(&headerless);
    assert!(
        matches!(err, SessionError::NotASession { line: 1, .. }),
        "{err:?}"
    );

    let not_json = write(dir.path(), "n.jsonl", "not json\n");
    assert!(matches!(
        open_err(&not_json),
        SessionError::NotASession { .. }
    ));
}

#[test]
fn a_header_and_one_message_give_one_entry() {
    let text = format!("{}\n{MSG}\n", header_line("abc"));
    let s = load_text(&text);
    assert_eq!(s.header().id, "abc");
    assert_eq!(s.len(), 1);
    assert_eq!(s.entries()[0].type_name(), "message");
    assert!(s.problems().is_empty());
}

#[test]
fn malformed_lines_are_skipped_and_reported_with_their_line() {
    let text = format!("{}\ngarbage line\n{MSG}\n", header_line("abc"));
    let s = load_text(&text);
    assert_eq!(s.len(), 1);
    assert_eq!(problems(&s), [(2, "malformed-json")]);
}

#[test]
fn a_non_empty_file_without_a_header_is_refused_and_left_untouched() {
    for (name, text) in [
        ("garbage.jsonl", "this is not a session\nat all\n"),
        (
            "other.jsonl",
            "{\"hello\":\"world\"}\n{\"type\":\"message\"}\n",
        ),
        ("msg.jsonl", &format!("{MSG}\n")),
    ] {
        let (_dir, path) = temp_file(name, text);
        let err = open_err(&path);
        assert!(
            matches!(err, SessionError::NotASession { .. }),
            "{name}: {err:?}"
        );
        assert!(err.to_string().contains(name), "{err}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text,
            "{name} untouched"
        );
    }
}

#[test]
fn the_header_is_found_after_blank_and_malformed_lines() {
    let long_id = "x".repeat(8192);
    let text = format!("\n\n  \n{{broken\n{}\n{MSG}\n", header_line(&long_id));
    let (_dir, path) = temp_file("late.jsonl", &text);
    let (s, _) = load_file(&path, &mut SequentialIds::new()).unwrap();
    assert_eq!(s.header().id, long_id);
    assert_eq!(s.len(), 1);
    assert_eq!(
        s.problems().len(),
        1,
        "the malformed line before the header"
    );
    assert_eq!(s.problems()[0].line, 4);
}

#[test]
fn a_header_larger_than_one_mebibyte_opens() {
    let cwd = "d".repeat(1 << 21);
    let header = format!(
        r#"{{"type":"session","version":3,"id":"big","timestamp":"2025-01-01T00:00:00.000Z","cwd":"{cwd}"}}"#
    );
    let (_dir, path) = temp_file("big.jsonl", &format!("{header}\n{MSG}\n"));
    let j = open(&path);
    assert_eq!(j.session().header().cwd.as_deref(), Some(cwd.as_str()));
    assert_eq!(j.session().len(), 1);
}

#[test]
fn long_runs_of_blank_lines_load_as_nothing() {
    let mut text = header_line("pad");
    text.push('\n');
    text.push_str(&"\n".repeat(8 << 20));
    text.push_str(MSG);
    text.push('\n');
    let (_dir, path) = temp_file("padded.jsonl", &text);
    let (s, _) = load_file(&path, &mut SequentialIds::new()).unwrap();
    assert_eq!(s.len(), 1);
    assert!(s.problems().is_empty());
    assert_eq!(common::text_of(&s.entries()[0]), "hi");
}

/// oh-my-pi records how a compaction was made and the context's tokens
/// after it: they are read, written back as read, and a value of another
/// shape is none, not a problem with the line.
#[test]
fn a_compactions_method_and_tokens_after_are_read_and_written() {
    use musepi_session_model::EntryBody;
    let text = format!(
        "{}\n{MSG}\n{}\n{}\n",
        header_line("s"),
        r#"{"type":"compaction","id":"c1","parentId":"m1","timestamp":"2025-01-01T00:00:02.000Z","summary":"s","firstKeptEntryId":"m1","tokensBefore":100,"method":"snapcompact","tokensAfter":40}"#,
        r#"{"type":"compaction","id":"c2","parentId":"c1","timestamp":"2025-01-01T00:00:03.000Z","summary":"s","firstKeptEntryId":"m1","tokensBefore":100,"method":{"kind":"x"},"tokensAfter":"many"}"#,
    );
    let session = load_text(&text);
    assert!(problems(&session).is_empty(), "{:?}", problems(&session));
    let compactions: Vec<_> = session
        .entries()
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Compaction(c) => Some((c.method.clone(), c.tokens_after)),
            _ => None,
        })
        .collect();
    assert_eq!(
        compactions,
        [(Some("snapcompact".to_owned()), Some(40)), (None, None)]
    );
    let written = session.entries()[1].to_json();
    assert_eq!(written["method"], "snapcompact");
    assert_eq!(written["tokensAfter"].as_f64(), Some(40.0));
}
