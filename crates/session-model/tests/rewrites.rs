//! Rewrites in place: what another process appended meanwhile is carried
//! over (or the rewrite stops and writes nothing), links, owner, group and
//! mode are kept, temporary files of killed runs are cleaned, and a live
//! session is recognised.

#![allow(clippy::unwrap_used)]

mod common;

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::{Clock, header_line, open, user, write};
use musepi_session_model::{
    EntryBody, Journal, LiveSign, Replacement, SequentialIds, SessionError, TreeEdit, WriteWarning,
    load_file,
};

fn msg(id: &str, parent: Option<&str>, text: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
    )
}

/// A v3 session of `n` user messages `m1` … `mn`.
fn session(dir: &Path, name: &str, n: usize) -> PathBuf {
    let mut text = header_line("rw") + "\n";
    for i in 1..=n {
        let parent = (i > 1).then(|| format!("m{}", i - 1));
        text.push_str(&msg(
            &format!("m{i}"),
            parent.as_deref(),
            &format!("text {i}"),
        ));
        text.push('\n');
    }
    write(dir, name, &text)
}

/// A replacement for entry `i` that changes its text, as pruning does.
fn changed(j: &Journal, i: usize, text: &str) -> Replacement {
    let e = &j.session().entries()[i];
    let line = msg(
        e.id.as_str(),
        e.parent_id
            .as_ref()
            .map(musepi_session_model::EntryId::as_str),
        text,
    );
    let mut entry = e.clone();
    if let EntryBody::Message(musepi_session_model::AgentMessage::User(u)) = &mut entry.body {
        u.content = musepi_session_model::Content::Text(text.into());
    }
    Replacement::new(i, entry, line)
}

fn append_raw(path: &Path, bytes: &str) {
    let mut f = fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes.as_bytes()).unwrap();
}

/// The text of the file at `path`.
fn contents(path: &Path) -> String {
    fs::read_to_string(path).unwrap()
}

/// A session of `n` messages in a temporary folder of its own, opened.
fn opened(n: usize) -> (tempfile::TempDir, PathBuf, Journal) {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path(), "s.jsonl", n);
    let j = open(&path);
    (dir, path, j)
}

#[test]
fn lines_appended_before_a_rewrite_are_carried_over() {
    let (_dir, path, mut j) = opened(3);
    // The agent appends two entries after musepi read the file.
    let appended = format!(
        "{}\n{}\n",
        msg("x1", Some("m3"), "agent"),
        msg("x2", Some("x1"), "more")
    );
    append_raw(&path, &appended);
    let change = changed(&j, 0, "rewritten");
    j.replace_entries(vec![change]).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains("rewritten"));
    assert!(text.ends_with(&appended), "appended lines last, as written");
    // The journal read them back: they are entries, and the last is the leaf.
    assert_eq!(j.session().len(), 5);
    assert_eq!(j.session().leaf_id().unwrap().as_str(), "x2");
    let mut c = Clock::default();
    j.append(user("after"), &mut c.stamp()).unwrap();
    let (s, _) = load_file(&path, &mut SequentialIds::new()).unwrap();
    assert_eq!(s.len(), 6);
    assert!(s.problems().is_empty(), "{:?}", s.problems());
}

#[test]
fn an_invalid_or_incomplete_appended_line_stops_the_rewrite() {
    for (appended, what) in [
        ("not json at all\n", "is not valid JSON"),
        ("[1,2]\n", "is not a JSON object"),
        ("{\"type\":\"message\"}\n", "has no `id`"),
        ("{\"type\":\"message\",\"id\":\"half", "stays incomplete"),
    ] {
        let (dir, path, mut j) = opened(2);
        append_raw(&path, appended);
        let before = fs::read(&path).unwrap();
        let change = changed(&j, 0, "rewritten");
        let err = j.replace_entries(vec![change]).unwrap_err();
        assert!(
            matches!(&err, SessionError::ChangedOnDisk { what: w, .. } if w.contains(what)),
            "{appended:?}: {err}"
        );
        assert!(err.is_busy());
        assert_eq!(fs::read(&path).unwrap(), before, "{appended:?}: untouched");
        assert_eq!(temp_files(dir.path()), Vec::<String>::new());
    }
}

/// A rewrite copies what is appended while it runs in bounded time: when
/// more than 64 MiB arrived, it gives up as busy and leaves the file, with
/// every appended byte, as it was.
#[test]
fn a_rewrite_gives_up_when_more_than_64_mib_was_appended_meanwhile() {
    let (dir, path, mut j) = opened(3);
    let mut appended = String::new();
    let mut parent = "m3".to_owned();
    // 65 lines of 1 MiB, each a valid entry.
    for i in 0..65 {
        let id = format!("x{i}");
        appended.push_str(&msg(&id, Some(&parent), &"a".repeat(1 << 20)));
        appended.push('\n');
        parent = id;
    }
    append_raw(&path, &appended);
    let before = fs::read(&path).unwrap();
    let change = changed(&j, 0, "rewritten");
    let err = j.replace_entries(vec![change]).unwrap_err();
    assert!(
        matches!(&err, SessionError::ChangedOnDisk { what, .. } if what.contains("appended more than 64 MiB while the rewrite ran")),
        "{err}"
    );
    assert!(err.is_busy());
    assert!(fs::read(&path).unwrap() == before, "untouched");
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
    // Nothing was staged for a later write either.
    assert!(!j.has_staged());
}

#[test]
fn a_rewrite_that_adds_entries_refuses_lines_appended_meanwhile() {
    let (_dir, path, mut j) = opened(3);
    j.stage_replacements(vec![changed(&j, 0, "pruned")])
        .unwrap();
    append_raw(&path, &(msg("x1", Some("m3"), "agent") + "\n"));
    let before = fs::read(&path).unwrap();
    let mut c = Clock::default();
    let err = j
        .append(user("compaction stand-in"), &mut c.stamp())
        .unwrap_err();
    assert!(
        matches!(&err, SessionError::ChangedOnDisk { what, .. } if what.contains("older leaf")),
        "{err}"
    );
    assert_eq!(fs::read(&path).unwrap(), before);
}

/// How many times a test reruns a round that a busy machine made too slow
/// to decide, before it gives up with a message instead of looping on.
const SLOW_ROUNDS: usize = 20;

/// A rewrite that adds an entry (a compaction written with its pruning)
/// is done when an appender that had the old file open writes to it after
/// the rename: the line is carried after the entry, the entry stays the
/// leaf, and the write says that the file no longer ends with it.
#[test]
fn a_line_that_arrives_after_the_entries_of_a_rewrite_is_kept_and_reported() {
    use musepi_test_support::LateWriter;
    use std::sync::atomic::{AtomicBool, Ordering};
    for _ in 0..SLOW_ROUNDS {
        let (_dir, path, mut j) = opened(3);
        j.stage_replacements(vec![changed(&j, 0, "pruned")])
            .unwrap();
        let late_line = msg("x1", Some("m3"), "the agent goes on");
        let late = LateWriter::open(&path);
        let inode = fs::metadata(&path).unwrap().ino();
        let done = AtomicBool::new(false);
        let result = std::thread::scope(|s| {
            // Once the rewrite has renamed its file into place, the appender
            // writes to the old one, which the rewrite waits to be closed.
            s.spawn(|| {
                while fs::metadata(&path).unwrap().ino() == inode {
                    if done.load(Ordering::SeqCst) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                late.write(&late_line);
            });
            let mut c = Clock::default();
            let result = j.append(user("compaction stand-in"), &mut c.stamp());
            done.store(true, Ordering::SeqCst);
            result
        });
        let id = result.unwrap();
        let warnings = j.take_warnings();
        if warnings
            .iter()
            .any(|w| matches!(w, WriteWarning::StillOpenElsewhere { .. }))
        {
            // The machine kept the appender from writing within the 2 s the
            // rewrite waited, as the rewrite said: the round runs again.
            continue;
        }
        assert_eq!(
            warnings,
            vec![WriteWarning::ArrivedAfter {
                path: path.clone(),
                bytes: late_line.len() as u64 + 1,
            }]
        );
        assert!(
            warnings[0]
                .to_string()
                .contains("right after the entries musepi wrote")
        );
        assert_eq!(j.session().leaf_id(), Some(&id), "the entry stays the leaf");
        assert!(
            j.session().index_of("x1").is_some(),
            "the late line is read back"
        );
        let text = contents(&path);
        assert!(text.contains("pruned"));
        assert!(text.ends_with(&format!("{late_line}\n")), "{text}");
        // The next entry hangs under the one written, not under the late line.
        let mut c = Clock::default();
        c.now += 10;
        let next = j.append(user("after"), &mut c.stamp()).unwrap();
        let (s, _) = load_file(&path, &mut SequentialIds::new()).unwrap();
        let i = s.index_of(next.as_str()).unwrap();
        assert_eq!(s.entries()[i].parent_id.as_ref(), Some(&id));
        assert!(s.problems().is_empty(), "{:?}", s.problems());
        return;
    }
    panic!(
        "each of {SLOW_ROUNDS} rounds wrote the late line after the rewrite's wait ran out: the machine is too busy for this test"
    );
}

/// A journal reads again what another writer appended, and its next entry
/// goes on under its own leaf instead of the write refusing as busy.
#[test]
fn a_journal_catches_up_with_lines_another_writer_appended() {
    let (_dir, path, mut j) = opened(3);
    let mut other = open(&path);
    let mut c = Clock::default();
    let theirs = other
        .append(user("the other writer"), &mut c.stamp())
        .unwrap();
    let mut mine = Clock::default();
    mine.now += 100;
    let err = j.append(user("mine"), &mut mine.stamp()).unwrap_err();
    assert!(err.is_busy(), "without catching up: {err}");
    assert_eq!(j.catch_up().unwrap(), 1);
    assert_eq!(j.catch_up().unwrap(), 0, "nothing new the second time");
    assert_eq!(
        j.session().leaf_id().unwrap().as_str(),
        "m3",
        "the leaf stays"
    );
    let id = j.append(user("mine"), &mut mine.stamp()).unwrap();
    assert_ne!(id, theirs, "a fresh id beside the other writer's");
    let (s, _) = load_file(&path, &mut SequentialIds::new()).unwrap();
    assert!(s.problems().is_empty(), "{:?}", s.problems());
    let parent =
        |id: &musepi_session_model::EntryId| s.get(id.as_str()).unwrap().parent_id.clone().unwrap();
    assert_eq!(parent(&theirs).as_str(), "m3");
    assert_eq!(parent(&id).as_str(), "m3");

    // The other writer rewrote the file (pruning): caught up all the same.
    other.catch_up().unwrap();
    other
        .replace_entries(vec![changed(&other, 0, "pruned by the other")])
        .unwrap();
    assert_eq!(j.catch_up().unwrap(), 0);
    j.append(user("again"), &mut mine.stamp()).unwrap();
    let text = contents(&path);
    assert!(text.contains("pruned by the other") && text.contains("again"));
}

#[test]
fn a_journal_does_not_catch_up_with_another_session_or_a_shortened_file() {
    let (dir, path, mut j) = opened(3);
    let before = j.session().len();
    append_raw(&path, &(msg("x1", Some("m3"), "agent") + "\n"));
    let other = session(dir.path(), "other.jsonl", 5);
    let text = contents(&other).replace("\"id\":\"rw\"", "\"id\":\"someone-else\"");
    fs::write(&path, text).unwrap();
    let err = j.catch_up().unwrap_err();
    assert!(
        matches!(&err, SessionError::ChangedOnDisk { what, .. } if what.contains("another session, someone-else")),
        "{err}"
    );
    fs::write(&path, header_line("rw") + "\n").unwrap();
    let err = j.catch_up().unwrap_err();
    assert!(err.is_busy(), "{err}");
    assert_eq!(j.session().len(), before, "nothing changed");
}

#[test]
fn a_symlinked_session_is_rewritten_through_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = session(dir.path(), "real.jsonl", 2);
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let mut j = open(&link);
    let change = changed(&j, 1, "through the link");
    j.replace_entries(vec![change]).unwrap();
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_link(&link).unwrap(), real);
    assert!(contents(&real).contains("through the link"));
}

#[test]
fn a_hard_linked_session_is_not_rewritten_but_takes_appends() {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path(), "s.jsonl", 2);
    let other = dir.path().join("other-name.jsonl");
    fs::hard_link(&path, &other).unwrap();
    let before = fs::read(&path).unwrap();
    let mut j = open(&path);
    let change = changed(&j, 1, "no");
    let err = j.replace_entries(vec![change]).unwrap_err();
    assert!(
        matches!(err, SessionError::HardLinked { links: 2, .. }),
        "{err}"
    );
    assert_eq!(fs::read(&path).unwrap(), before);
    let mut c = Clock::default();
    j.append(user("appended"), &mut c.stamp()).unwrap();
    assert_eq!(fs::read(&path).unwrap(), fs::read(&other).unwrap());
    assert!(contents(&other).contains("appended"));
}

#[test]
fn a_rewrite_keeps_mode_owner_and_group() {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path(), "s.jsonl", 2);
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    let me = fs::metadata(&path).unwrap();
    // As root, the file can belong to someone else and stay theirs.
    let (uid, gid) = if me.uid() == 0 {
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        (65534, 65534)
    } else {
        (me.uid(), me.gid())
    };
    let mut j = open(&path);
    let change = changed(&j, 0, "rewritten");
    j.replace_entries(vec![change]).unwrap();
    let after = fs::metadata(&path).unwrap();
    assert_eq!(after.mode() & 0o7777, 0o640);
    assert_eq!((after.uid(), after.gid()), (uid, gid));
}

fn temp_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.rsplit('.').next() == Some("tmp"))
        .collect();
    names.sort();
    names
}

#[test]
fn temporary_files_of_killed_runs_are_removed_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path(), "s.jsonl", 2);
    // A process that has exited: its pid is free.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = [
        format!(".s.jsonl.musepi.{dead}.0.tmp"),
        // pid 1 is alive, but an hour-old file of ours is stale anyway.
        ".s.jsonl.musepi.1.7.tmp".to_owned(),
    ];
    let kept = [
        // A live process's fresh temporary file may be in use.
        ".s.jsonl.musepi.1.8.tmp".to_owned(),
        // Not ours: other names, another session's, another tool's.
        ".s.jsonl.XYZ123.tmp".to_owned(),
        format!(".other.jsonl.musepi.{dead}.0.tmp"),
        "notes.tmp".to_owned(),
    ];
    for name in stale.iter().chain(&kept) {
        fs::write(dir.path().join(name), "partial").unwrap();
    }
    let old = fs::File::options()
        .append(true)
        .open(dir.path().join(&stale[1]))
        .unwrap();
    old.set_modified(SystemTime::now() - Duration::from_hours(2))
        .unwrap();
    let mut j = open(&path);
    let change = changed(&j, 0, "rewritten");
    j.replace_entries(vec![change]).unwrap();
    let mut expected: Vec<String> = kept.to_vec();
    expected.sort();
    assert_eq!(temp_files(dir.path()), expected);
}

#[test]
fn a_live_session_is_recognised_by_a_recent_write_or_a_held_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path(), "s.jsonl", 2);
    let j = open(&path);
    let now = || {
        i64::try_from(
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_millis(),
        )
        .unwrap()
    };
    // The clock is the file's own modification time: a write this very
    // moment, however long the machine took to get here.
    let written = i64::try_from(
        fs::metadata(&path)
            .unwrap()
            .modified()
            .unwrap()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    let err = j.check_not_live(written).unwrap_err();
    assert!(
        matches!(
            err,
            SessionError::Live {
                sign: LiveSign::RecentWrite { seconds_ago: 0 },
                ..
            }
        ),
        "{err}"
    );
    assert!(err.is_busy());
    assert!(err.to_string().contains("--force"), "{err}");
    let f = fs::File::options().append(true).open(&path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_mins(1))
        .unwrap();
    j.check_not_live(now()).unwrap();
    // Another process (here: another open file) holds the lock.
    let holder = fs::File::open(&path).unwrap();
    holder.lock().unwrap();
    let err = j.check_not_live(now()).unwrap_err();
    assert!(
        matches!(
            err,
            SessionError::Live {
                sign: LiveSign::Locked,
                ..
            }
        ),
        "{err}"
    );
    drop(holder);
    j.check_not_live(now()).unwrap();
}

#[test]
fn a_copy_gets_the_mode_of_its_source_and_never_replaces_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let path = session(dir.path(), "s.jsonl", 2);
    fs::set_permissions(&path, fs::Permissions::from_mode(0o604)).unwrap();
    let j = open(&path);
    let out = dir.path().join("copy.jsonl");
    j.write_copy(&out, musepi_session_model::Replace::Never)
        .unwrap();
    assert_eq!(fs::metadata(&out).unwrap().mode() & 0o777, 0o604);
    assert_eq!(fs::read(&out).unwrap(), fs::read(&path).unwrap());
    let err = j
        .write_copy(&out, musepi_session_model::Replace::Never)
        .unwrap_err();
    assert!(matches!(err, SessionError::AlreadyExists { .. }), "{err}");
    j.write_copy(&out, musepi_session_model::Replace::Existing)
        .unwrap();
}

#[test]
fn a_rewrite_says_when_another_process_keeps_the_replaced_file_open() {
    let (_dir, path, mut j) = opened(3);
    j.replace_entries(vec![changed(&j, 0, "nobody holds it")])
        .unwrap();
    assert_eq!(
        j.take_warnings(),
        vec![],
        "a rewrite nobody else holds open"
    );

    let mut held = musepi_test_support::hold_open(&path, musepi_test_support::Hold::Appending);
    let change = changed(&j, 1, "held open elsewhere");
    j.replace_entries(vec![change]).unwrap();
    held.kill().unwrap();
    held.wait().unwrap();
    let warnings = j.take_warnings();
    assert_eq!(
        warnings,
        vec![WriteWarning::StillOpenElsewhere {
            path: path.clone(),
            waited: Duration::from_secs(2),
        }]
    );
    let text = warnings[0].to_string();
    assert!(
        text.starts_with(&format!("{}: another process still had", path.display()))
            && !text.contains('\n'),
        "{text}"
    );
    assert_eq!(j.take_warnings(), vec![], "taken once");
    assert!(contents(&path).contains("held open elsewhere"));
}

/// A branch summary the journal cannot write (another process appended
/// since it read the file) leaves the leaf where it was and adds nothing.
#[test]
fn a_refused_branch_summary_leaves_the_leaf_where_it_was() {
    let (_dir, path, mut j) = opened(3);
    let leaf = j.session().leaf_id().cloned();
    append_raw(&path, &(msg("x1", Some("m3"), "agent") + "\n"));
    let before = fs::read(&path).unwrap();
    let mut c = Clock::default();
    let err = j
        .branch_with_summary(Some("m1"), "left", None, false, None, &mut c.stamp())
        .unwrap_err();
    assert!(err.is_busy(), "{err}");
    assert_eq!(j.session().leaf_id().cloned(), leaf);
    assert_eq!(j.session().len(), 3);
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn appends_beside_an_appender_that_never_pauses_lose_none_of_its_lines() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    const AGENT_LINES: usize = 20_000;

    let (_dir, path, mut j) = opened(3);
    let stop = Arc::new(AtomicBool::new(false));
    let agent = {
        let (path, stop) = (path.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            // The agent takes no lock and appends whole lines, each a child
            // of the first message, with hardly a pause: a bounded number,
            // so the file stays small and the test quick.
            let mut n = 0;
            while n < AGENT_LINES && !stop.load(Ordering::Relaxed) {
                n += 1;
                append_raw(&path, &(msg(&format!("a{n}"), Some("m1"), "agent") + "\n"));
            }
            n
        })
    };
    let mut clock = Clock::default();
    clock.now += 1000;
    let mut mine = 0;
    while mine < 100 && !agent.is_finished() {
        match j.append(user("mine"), &mut clock.stamp()) {
            Ok(_) => mine += 1,
            Err(e) if e.is_busy() => {
                j.catch_up().unwrap();
            }
            Err(e) => panic!("append: {e}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let theirs = agent.join().unwrap();
    j.catch_up().unwrap();
    let (s, _) = load_file(&path, &mut SequentialIds::new()).unwrap();
    assert!(s.problems().is_empty(), "{:?}", s.problems());
    assert_eq!(
        s.len(),
        3 + mine + theirs,
        "every line of both is in the file"
    );
    assert_eq!(
        j.session().len(),
        s.len(),
        "the journal read every line the agent wrote, before its own lines too"
    );

    // A rewrite copies each entry from where the journal read it: were an
    // offset to point into the agent's line, its line would be doubled.
    j.replace_entries(vec![changed(&j, 0, "rewritten")])
        .unwrap();
    let (after, _) = load_file(&path, &mut SequentialIds::new()).unwrap();
    assert!(after.problems().is_empty(), "{:?}", after.problems());
    let ids = |s: &musepi_session_model::Session| {
        let mut ids: Vec<String> = s
            .entries()
            .iter()
            .map(|e| e.id.as_str().to_owned())
            .collect();
        ids.sort();
        ids
    };
    let mut expected = ids(&s);
    expected.sort();
    let got = ids(&after);
    assert!(got.len() >= expected.len());
    assert!(
        expected.iter().all(|id| got.binary_search(id).is_ok()),
        "every entry survives the rewrite"
    );
    let distinct: std::collections::BTreeSet<_> = got.iter().collect();
    assert_eq!(distinct.len(), got.len(), "no line copied twice");
}
