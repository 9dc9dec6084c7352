//! The real pi sessions kept next to the repository (read in place, never
//! copied into it; each test skips with a notice when they are absent):
//! entry counts, ids after deterministic migration, parent links, leaf and
//! path; migrating twice is a no-op; a v3 file round-trips byte for byte.

use std::path::PathBuf;

use musepi_session_model::{Journal, SequentialIds, write_session};
use musepi_test_support::pi_fixture;

/// `(file, entries)`: both are v1 files, one linear path.
const FIXTURES: &[(&str, usize)] = &[
    ("before-compaction.jsonl", 1002),
    ("large-session.jsonl", 1018),
];

/// The fixtures next to the repository, each with its name and entry count
/// (one line each names those `test` skips).
fn present_fixtures(test: &str) -> impl Iterator<Item = (PathBuf, &'static str, usize)> {
    FIXTURES
        .iter()
        .filter_map(move |&(name, count)| Some((pi_fixture(test, name)?, name, count)))
}

#[test]
fn deterministic_migration_numbers_entries_and_chains_them() {
    for (file, name, count) in
        present_fixtures("deterministic_migration_numbers_entries_and_chains_them")
    {
        let j = Journal::open(&file, &mut SequentialIds::new()).unwrap();
        let s = j.session();
        assert_eq!(s.original_version(), 1, "{name}");
        assert!(j.migration_pending(), "{name}");
        assert_eq!(s.len(), count, "{name}");
        assert!(s.problems().is_empty(), "{name}: {:?}", s.problems());
        for (i, e) in s.entries().iter().enumerate() {
            assert_eq!(e.id.as_str(), format!("{:08x}", i + 1), "{name}");
            let parent = (i > 0).then(|| format!("{i:08x}"));
            assert_eq!(
                e.parent_id.as_ref().map(ToString::to_string),
                parent,
                "{name}"
            );
            assert_eq!(s.parent_index(i), i.checked_sub(1), "{name}");
        }
        assert_eq!(
            s.leaf_id().unwrap().as_str(),
            format!("{count:08x}"),
            "{name}"
        );
        assert_eq!(
            s.branch(None).unwrap().len(),
            count,
            "{name}: one linear path"
        );
    }
}

#[test]
fn migrating_twice_is_a_no_op_and_v3_round_trips_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for (file, name, count) in
        present_fixtures("migrating_twice_is_a_no_op_and_v3_round_trips_byte_for_byte")
    {
        let original = std::fs::read(&file).unwrap();
        let migrated = dir.path().join(name);
        let j = Journal::open(&file, &mut SequentialIds::new()).unwrap();
        write_session(&migrated, j.session()).unwrap();
        assert_eq!(
            std::fs::read(&file).unwrap(),
            original,
            "{name}: the fixture is untouched"
        );
        let first = std::fs::read(&migrated).unwrap();

        let mut again = Journal::open(&migrated, &mut SequentialIds::new()).unwrap();
        assert_eq!(again.session().original_version(), 3, "{name}");
        assert!(!again.migration_pending(), "{name}");
        assert!(
            !again.persist_migration().unwrap(),
            "{name}: nothing to migrate"
        );
        assert_eq!(
            std::fs::read(&migrated).unwrap(),
            first,
            "{name}: untouched"
        );
        assert_eq!(again.session().entries(), j.session().entries(), "{name}");
        assert_eq!(again.session().len(), count);

        let copy = dir.path().join(format!("copy-{name}"));
        write_session(&copy, again.session()).unwrap();
        assert_eq!(
            std::fs::read(&copy).unwrap(),
            first,
            "{name}: v3 round-trips byte for byte"
        );
        again.rewrite().unwrap();
        assert_eq!(
            std::fs::read(&migrated).unwrap(),
            first,
            "{name}: a rewrite changes nothing"
        );
    }
}
