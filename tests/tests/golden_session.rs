//! Golden snapshots of the real pi sessions after deterministic migration:
//! per entry its id, parent, type or role, line and a hash of its migrated
//! line, plus whole-file numbers. Ids, roles, numbers and hashes only: the
//! sessions' text stays in `../shared`.

use std::fmt::Write as _;
use std::path::Path;

use musepi_session_model::{Journal, SequentialIds, Tree, write_session};
use musepi_tests::{pi_fixture, sha256_hex};

fn render(path: &Path) -> String {
    let journal = Journal::open(path, &mut SequentialIds::new()).expect("opens");
    let s = journal.session();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("migrated.jsonl");
    write_session(&out, s).expect("writes");
    let migrated = std::fs::read(&out).expect("reads back");
    let original = std::fs::read(path).expect("fixture");

    let mut text = String::new();
    let _ = writeln!(text, "original version  {}", s.original_version());
    let _ = writeln!(text, "original bytes    {}", original.len());
    let _ = writeln!(text, "original sha256   {}", sha256_hex(&original));
    let _ = writeln!(text, "migrated bytes    {}", migrated.len());
    let _ = writeln!(text, "migrated sha256   {}", sha256_hex(&migrated));
    let _ = writeln!(text, "entries           {}", s.len());
    let _ = writeln!(text, "problems          {}", s.problems().len());
    let _ = writeln!(
        text,
        "leaf              {}",
        s.leaf_id().map_or("-", |l| l.as_str())
    );
    let _ = writeln!(
        text,
        "path length       {}",
        s.branch(None).expect("path").len()
    );
    let _ = writeln!(text, "roots             {}", Tree::new(s).roots().len());
    let _ = writeln!(text);
    text.push_str(
        "id        parent    type/role               line  sha256 of migrated line (12)\n",
    );
    for (i, e) in s.entries().iter().enumerate() {
        let kind = e.message().map_or(e.type_name(), |m| m.role());
        let line = s.raw_line(i).expect("line");
        let _ = writeln!(
            text,
            "{:<8}  {:<8}  {:<21}  {:>5}  {}",
            e.id.as_str(),
            e.parent_id.as_ref().map_or("-", |p| p.as_str()),
            kind,
            s.line_of(i),
            &sha256_hex(line.as_bytes())[..12]
        );
    }
    text
}

fn check(test: &str, name: &str, snapshot: &str) {
    let Some(path) = pi_fixture(test, name) else {
        return;
    };
    musepi_test_support::golden!(snapshot, render(&path));
}

#[test]
fn before_compaction_migrates_to_known_ids_and_bytes() {
    check(
        "before_compaction_migrates_to_known_ids_and_bytes",
        "before-compaction.jsonl",
        "session__before-compaction",
    );
}

#[test]
fn large_session_migrates_to_known_ids_and_bytes() {
    check(
        "large_session_migrates_to_known_ids_and_bytes",
        "large-session.jsonl",
        "session__large-session",
    );
}
