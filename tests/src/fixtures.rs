//! Loading fixture sessions: our own in `tests/fixtures`, the real pi
//! sessions in `../shared/fixtures/pi` (read in place, never copied).
//!
//! Files older than v3 are migrated in memory with the deterministic ids
//! `00000001`, `00000002`, … (docs/design.md, "The session file and its tree"); the files are not touched.

use std::path::{Path, PathBuf};

use musepi_session_model::{SequentialIds, Session, load_file};

/// `tests/fixtures/<name>`.
pub fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// Loads a session file, panicking with the path on failure.
pub fn load(path: &Path) -> Session {
    let (session, _tail) = load_file(path, &mut SequentialIds::new())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    session
}

/// Loads `tests/fixtures/<name>`; our fixtures must load without problems.
pub fn load_fixture(name: &str) -> Session {
    let session = load(&fixture_path(name));
    assert!(
        session.problems().is_empty(),
        "{name}: {:?}",
        session.problems()
    );
    session
}

/// Loads `../shared/fixtures/pi/<name>` in place, or `None` (with a
/// notice naming `test`) when the real sessions are not there.
pub fn load_pi(test: &str, name: &str) -> Option<Session> {
    crate::pi_fixture(test, name).map(|path| load(&path))
}

/// Position of the entry with this id, panicking when there is none.
pub fn index(session: &Session, id: &str) -> usize {
    session
        .index_of(id)
        .unwrap_or_else(|| panic!("no entry {id}"))
}
