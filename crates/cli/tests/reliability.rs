//! The file is never lost or torn: an agent appending while musepi rewrites
//! the session in place loses no line, and a rewrite killed at any point
//! leaves exactly the old or the new file, plus every appended line.
//!
//! Each test prints its figures as a `reliability:` line (shown with
//! `--nocapture`); `cargo xtask reliability` runs them with more rounds and
//! collects the lines for docs/reliability.md. `MUSEPI_RELIABILITY_ROUNDS`
//! scales the rounds.

#![allow(clippy::unwrap_used)]

mod support;

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use support::{code, settle, stderr};

const MUSEPI: &str = env!("CARGO_BIN_EXE_musepi");
const NOW: &str = "2026-02-01T00:00:00.000Z";

fn rounds(default: usize) -> usize {
    std::env::var("MUSEPI_RELIABILITY_ROUNDS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map_or(default, |scale| default * scale)
}

fn musepi(args: &[&str]) -> Output {
    Command::new(MUSEPI)
        .args(args)
        .env("HOME", std::env::temp_dir().join("musepi-reliability-home"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The example session with `filler` more entries of about 1 KB each, as
/// a v2 file (so `session migrate` rewrites every line).
fn base_session(dir: &Path, filler: usize) -> PathBuf {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions/todo-refactor.jsonl");
    let mut text = fs::read_to_string(src)
        .unwrap()
        .replacen("\"version\":3", "\"version\":2", 1);
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let mut parent = last["id"].as_str().unwrap().to_owned();
    for i in 0..filler {
        let id = format!("f{i:07x}");
        let _ = writeln!(
            text,
            "{{\"type\":\"custom\",\"id\":\"{id}\",\"parentId\":\"{parent}\",\"timestamp\":\"2026-01-01T12:00:00.000Z\",\"customType\":\"filler\",\"data\":{{\"n\":{i},\"text\":\"{}\"}}}}",
            "lorem ipsum dolor ".repeat(56)
        );
        parent = id;
    }
    let path = dir.join("base.jsonl");
    fs::write(&path, text).unwrap();
    path
}

/// How an appender writes its lines.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    /// As pi does: open, write the line, close; no lock.
    Plain,
    /// The protocol of docs/reliability.md: lock the file, check it is
    /// still the one at the path, write, unlock.
    Locking,
}

/// A second writer appending `custom` entries `ap000000`, `ap000001`, …
/// to `path` until stopped; returns the lines it wrote, in order.
struct Appender {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<String>>,
}

impl Appender {
    fn start(path: &Path, style: Style) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let path = path.to_owned();
        let text = fs::read_to_string(&path).unwrap();
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        let mut parent = format!("\"{}\"", last["id"].as_str().unwrap());
        let handle = std::thread::spawn(move || {
            let mut written = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                let id = format!("ap{:06}", written.len());
                let line = format!(
                    "{{\"type\":\"custom\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-02T00:00:00.000Z\",\"customType\":\"agent\",\"data\":{{\"n\":{}}}}}\n",
                    written.len()
                );
                append_line(&path, &line, style);
                written.push(line);
                parent = format!("\"{id}\"");
                std::thread::sleep(Duration::from_micros(300));
            }
            written
        });
        Self { stop, handle }
    }

    fn finish(self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap()
    }

    /// Stops appending and asserts that every line it appended is in
    /// `file`, in order (`what` names the round); returns the file's bytes
    /// without them.
    fn finish_and_check(self, file: &Path, tally: &mut Tally, what: &str) -> Vec<u8> {
        let lines = self.finish();
        tally.appended += lines.len();
        let (found, rest) = split_appended(&fs::read(file).unwrap());
        tally.lost += lines.len().saturating_sub(found.len());
        assert!(
            found == lines,
            "{what}: every appended line, in order: {}",
            first_difference(&found, &lines)
        );
        rest
    }
}

/// The lines appenders wrote over a test's rounds, and how many of them a
/// rewrite lost.
#[derive(Default)]
struct Tally {
    appended: usize,
    lost: usize,
}

fn append_line(path: &Path, line: &str, style: Style) {
    loop {
        let mut f = fs::OpenOptions::new().append(true).open(path).unwrap();
        if style == Style::Locking {
            f.lock().unwrap();
            let (a, b) = (f.metadata().unwrap(), fs::metadata(path).unwrap());
            if a.ino() != b.ino() {
                // Replaced while we waited for the lock: append to the new file.
                continue;
            }
        }
        // One write, as appendFileSync makes it.
        f.write_all(line.as_bytes()).unwrap();
        return;
    }
}

/// The appended lines found in `bytes` (lines whose id starts `ap`), and
/// the bytes without them.
fn split_appended(bytes: &[u8]) -> (Vec<String>, Vec<u8>) {
    let mut appended = Vec::new();
    let mut rest = Vec::new();
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        if line.starts_with(b"{\"type\":\"custom\",\"id\":\"ap") {
            appended.push(String::from_utf8_lossy(line).into_owned());
        } else {
            rest.extend_from_slice(line);
        }
    }
    (appended, rest)
}

fn temp_files(dir: &Path) -> usize {
    fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            let name = name.to_string_lossy();
            name.contains(".musepi.") && name.rsplit('.').next() == Some("tmp")
        })
        .count()
}

/// Where `found` first differs from `written`, for a readable failure.
fn first_difference(found: &[String], written: &[String]) -> String {
    let at = found
        .iter()
        .zip(written)
        .position(|(a, b)| a != b)
        .unwrap_or(found.len().min(written.len()));
    format!(
        "{} lines found, {} written; first difference at {at}: found {:?}, written {:?}",
        found.len(),
        written.len(),
        found.get(at).map(|l| &l[..40.min(l.len())]),
        written.get(at).map(|l| &l[..40.min(l.len())])
    )
}

/// The commands that rewrite the file in place, with what they need.
fn rewriters(file: &str) -> Vec<(&'static str, Vec<String>)> {
    let s = |v: &[&str]| v.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    vec![
        ("migrate", s(&["session", "migrate", file, "--force"])),
        (
            "prune",
            s(&["prune", file, "--force", "--min-saving", "0", "--now", NOW]),
        ),
        (
            "compact",
            s(&[
                "compact",
                file,
                "--force",
                "--now",
                NOW,
                "--deterministic-ids",
            ]),
        ),
    ]
}

/// Runs the rewriter `name` of [`rewriters`] on `file`.
fn rewrite(name: &str, file: &Path) -> Output {
    let (_, args) = rewriters(file.to_str().unwrap())
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap();
    musepi(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn lines_appended_during_rewrites_are_never_lost() {
    let dir = tempfile::tempdir().unwrap();
    let base = base_session(dir.path(), 2000);
    let per_command = rounds(6);
    let mut tally = Tally::default();
    let (mut written, mut busy) = (0, 0);
    for style in [Style::Plain, Style::Locking] {
        for (name, _) in rewriters("") {
            // What the command writes with nobody appending.
            let quiet = dir.path().join(format!("quiet-{name}.jsonl"));
            fs::copy(&base, &quiet).unwrap();
            let o = rewrite(name, &quiet);
            assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
            let expected = fs::read(&quiet).unwrap();
            let original = fs::read(&base).unwrap();
            for round in 0..per_command {
                let file = dir.path().join(format!("{name}-{round}.jsonl"));
                fs::copy(&base, &file).unwrap();
                let appender = Appender::start(&file, style);
                std::thread::sleep(Duration::from_millis(2));
                let o = rewrite(name, &file);
                std::thread::sleep(Duration::from_millis(5));
                let how = if style == Style::Plain {
                    "plain"
                } else {
                    "locking"
                };
                let what = format!("{name} round {round} ({how})");
                let rest = appender.finish_and_check(&file, &mut tally, &what);
                match o.status.code() {
                    // A compaction hangs under the leaf it read, which
                    // depends on what was appended by then: check it reads
                    // back clean instead.
                    Some(0) if name == "compact" => {
                        written += 1;
                        let check = musepi(&["session", "check", file.to_str().unwrap()]);
                        assert_eq!(check.status.code(), Some(0), "{name} round {round}");
                        assert!(String::from_utf8_lossy(&rest).contains("\"type\":\"compaction\""));
                    }
                    Some(0) => {
                        written += 1;
                        assert_eq!(rest, expected, "{name} round {round}: the rewrite itself");
                    }
                    // Another process appended while a compaction worked:
                    // nothing of musepi's was written.
                    Some(3) => {
                        busy += 1;
                        assert_eq!(rest, original, "{name} round {round}: untouched");
                    }
                    other => panic!("{name} round {round}: exit {other:?}: {}", stderr(&o)),
                }
                assert_eq!(temp_files(dir.path()), 0);
            }
        }
    }
    eprintln!(
        "reliability: concurrent appends: {} rewrites with an appender running ({written} written, {busy} refused as busy), {} lines appended, {} lost",
        written + busy,
        tally.appended,
        tally.lost
    );
    assert_eq!(tally.lost, 0);
}

/// Starts `musepi session migrate FILE --force` and returns, with it still
/// running, once FILE is no longer the file of inode `old_inode`.
fn migrate_until_replaced(file: &Path, old_inode: u64) -> std::process::Child {
    let child = Command::new(MUSEPI)
        .args(["session", "migrate", file.to_str().unwrap(), "--force"])
        .env("HOME", std::env::temp_dir().join("musepi-reliability-home"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while fs::metadata(file).unwrap().ino() == old_inode {
        assert!(
            started.elapsed() < Duration::from_mins(2),
            "the file was never replaced"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    child
}

/// pi's `appendFileSync` opens the file, writes and closes. Opened just
/// before a rewrite renames its new file into place, the old file gets the
/// write, and the rewrite must still carry it over: here the write comes
/// well after the rename, when musepi would long have finished if it did
/// not wait for the old file to be closed.
#[test]
fn a_line_written_to_the_old_file_after_the_rename_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..SLOW_ROUNDS {
        let file = base_session(dir.path(), 200);
        let text = fs::read_to_string(&file).unwrap();
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        let line = format!(
            "{{\"type\":\"custom\",\"id\":\"ap000000\",\"parentId\":\"{}\",\"timestamp\":\"2026-01-02T00:00:00.000Z\",\"customType\":\"agent\",\"data\":{{\"n\":0}}}}\n",
            last["id"].as_str().unwrap()
        );
        let old_inode = fs::metadata(&file).unwrap().ino();
        let mut held = fs::OpenOptions::new().append(true).open(&file).unwrap();
        let child = migrate_until_replaced(&file, old_inode);
        // Well past the rename and the syncs that follow it, yet well within
        // the 2 seconds musepi waits for the old file to be closed.
        std::thread::sleep(Duration::from_millis(600));
        held.write_all(line.as_bytes()).unwrap();
        drop(held);
        let o = child.wait_with_output().unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        if waited_in_vain(&o) {
            // A machine so busy that the write came after musepi's wait
            // ran out, as it said: the round runs again.
            continue;
        }
        let (found, _) = split_appended(&fs::read(&file).unwrap());
        assert_eq!(found, vec![line], "the line written to the old file");
        return;
    }
    panic!(
        "each of {SLOW_ROUNDS} rounds wrote the line after musepi's wait for the old file ran out: the machine is too busy for this test"
    );
}

/// Whether the rewrite said it stopped waiting for another process to
/// close the replaced file (a test that holds it open for a moment was
/// slower than that wait on a busy machine).
fn waited_in_vain(o: &Output) -> bool {
    stderr(o).contains("still had the replaced file open for writing")
}

/// How many times a test reruns a round that a busy machine made too slow
/// to decide, before it gives up with a message instead of looping on.
const SLOW_ROUNDS: usize = 20;

/// An appender of the lock protocol that opened the file and waits for its
/// lock while a rewrite runs is let go as soon as the file is replaced: it
/// finds the file replaced and goes on to the new one, which the rewrite
/// still holds locked. (Kept waiting until the rewrite was done, it would
/// have held the old file open, and the rewrite would have waited for it.)
#[test]
fn an_appender_waiting_for_the_lock_is_let_go_once_the_file_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..SLOW_ROUNDS {
        let file = base_session(dir.path(), 200);
        let old_inode = fs::metadata(&file).unwrap().ino();
        let waiting = fs::OpenOptions::new().append(true).open(&file).unwrap();
        let child = migrate_until_replaced(&file, old_inode);
        waiting.lock().unwrap();
        let new = fs::File::open(&file).unwrap();
        let still_locked = matches!(new.try_lock(), Err(fs::TryLockError::WouldBlock));
        drop((new, waiting));
        let o = child.wait_with_output().unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        // Until its wait for the old file (which `waiting` held open) ran
        // out, the rewrite held the new file's lock. On a machine so busy
        // that the wait ran out first, as it said, the round runs again.
        if !still_locked && waited_in_vain(&o) {
            continue;
        }
        assert!(
            still_locked,
            "the old file's lock came only when the rewrite was over"
        );
        return;
    }
    panic!(
        "each of {SLOW_ROUNDS} rounds ran past musepi's wait for the old file: the machine is too busy for this test"
    );
}

/// Runs the rewriter `name` of [`rewriters`] on `file` with `--json -q`:
/// its output and its JSON result.
fn rewrite_json_quiet(name: &str, file: &Path) -> (Output, serde_json::Value) {
    let (_, mut args) = rewriters(file.to_str().unwrap())
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap();
    args.extend(["--json".to_owned(), "-q".to_owned()]);
    let o = musepi(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let doc =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{name}: {e}: {}", stderr(&o)));
    (o, doc)
}

/// An appender that keeps the old file open past the 2 seconds a rewrite
/// waits for it is not waited for: whatever it writes there later reaches
/// no file, so the command says so in one line on standard error, even
/// with `-q` (which hides chatter, never a loss), and lists it in the
/// `warnings` of its JSON result, which every rewriter has (empty when
/// there is nothing to say).
#[test]
fn an_appender_keeping_the_old_file_open_past_the_wait_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let base = base_session(dir.path(), 0);
    for (name, _) in rewriters("") {
        let quiet = dir.path().join(format!("quiet-{name}.jsonl"));
        fs::copy(&base, &quiet).unwrap();
        let (o, doc) = rewrite_json_quiet(name, &quiet);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        assert!(!stderr(&o).contains("warning"), "{name}: {}", stderr(&o));
        assert_eq!(doc["warnings"], serde_json::json!([]), "{name}: {doc}");

        let file = dir.path().join(format!("held-{name}.jsonl"));
        fs::copy(&base, &file).unwrap();
        let held = fs::OpenOptions::new().append(true).open(&file).unwrap();
        let (o, doc) = rewrite_json_quiet(name, &file);
        drop(held);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        let expected = format!(
            "{}: another process still had the replaced file open for writing 2 s after the rewrite",
            file.display()
        );
        let err = stderr(&o);
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("musepi: warning: "))
            .collect();
        assert_eq!(lines.len(), 1, "{name}: {err}");
        assert!(lines[0].contains(&expected), "{name}: {}", lines[0]);
        let warnings = doc["warnings"].as_array().unwrap();
        assert_eq!(warnings.len(), 1, "{name}: {doc}");
        assert!(
            warnings[0].as_str().unwrap().starts_with(&expected),
            "{name}: {doc}"
        );
    }
}

/// Runs `compact FILE --force -q` (with `--json` when `json`) on a new v2
/// session in `dir` (the compaction rewrites it, to write its migration),
/// while an appender that opened the file before writes one line to it
/// after the rename, as the compaction waits for it to close the replaced
/// file. Returns the output, the file and the line; `None` when the
/// machine kept the appender from writing within that wait, as musepi said.
fn compact_with_a_late_line(dir: &Path, json: bool) -> Option<(Output, PathBuf, String)> {
    let file = base_session(dir, 0);
    let last = musepi_test_support::last_line(&file);
    let line = format!(
        "{{\"type\":\"custom\",\"id\":\"ap000000\",\"parentId\":\"{}\",\"timestamp\":\"2026-01-02T00:00:00.000Z\",\"customType\":\"agent\",\"data\":{{\"n\":0}}}}",
        last["id"].as_str().unwrap()
    );
    let old_inode = fs::metadata(&file).unwrap().ino();
    let late = musepi_test_support::LateWriter::open(&file);
    let mut args = vec![
        "compact",
        file.to_str().unwrap(),
        "--force",
        "-q",
        "--now",
        NOW,
        "--deterministic-ids",
    ];
    if json {
        args.push("--json");
    }
    let child = Command::new(MUSEPI)
        .args(&args)
        .env("HOME", std::env::temp_dir().join("musepi-reliability-home"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while fs::metadata(&file).unwrap().ino() == old_inode {
        assert!(
            started.elapsed() < Duration::from_mins(2),
            "the file was never replaced"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    late.write(&line);
    let o = child.wait_with_output().unwrap();
    (!waited_in_vain(&o)).then_some((o, file, line))
}

/// `compact --force` beside an appender that had the session open and
/// writes to it after the rename: the compaction is written, and the
/// command says so (exit 0), with a warning that a line arrived after it,
/// on standard error even with `-q`, and in `warnings` with `--json`. (It
/// exited 1, "the compaction entry is not the leaf after writing", after
/// writing it, so a caller that retried compacted twice.)
#[test]
fn a_compaction_that_a_line_arrives_after_is_written_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    for json in [false, true] {
        let Some((o, file, line)) =
            (0..SLOW_ROUNDS).find_map(|_| compact_with_a_late_line(dir.path(), json))
        else {
            panic!(
                "each of {SLOW_ROUNDS} rounds wrote the late line after musepi's wait for the old file ran out: the machine is too busy for this test"
            );
        };
        assert_eq!(code(&o), 0, "--json {json}: {}", stderr(&o));
        let expected = format!(
            "{}: another process appended {} bytes right after the entries musepi wrote",
            file.display(),
            line.len() + 1
        );
        assert!(
            stderr(&o).contains(&format!("musepi: warning: {expected}")),
            "--json {json}: {}",
            stderr(&o)
        );
        let text = fs::read_to_string(&file).unwrap();
        assert!(
            text.ends_with(&format!("{line}\n")),
            "the late line is kept, last"
        );
        let check = musepi(&["session", "check", file.to_str().unwrap()]);
        assert_eq!(
            code(&check),
            0,
            "{}",
            String::from_utf8_lossy(&check.stdout)
        );
        let compactions = text.matches("\"type\":\"compaction\"").count();
        assert_eq!(compactions, 1, "one compaction entry");
        if json {
            let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(doc["compacted"], serde_json::json!(true), "{doc}");
            let warnings = doc["warnings"].as_array().unwrap();
            assert_eq!(warnings.len(), 1, "{doc}");
            assert!(
                warnings[0].as_str().unwrap().starts_with(&expected),
                "{doc}"
            );
            let entry = format!("\"id\":\"{}\"", doc["entryId"].as_str().unwrap());
            assert!(text.contains(&entry), "the compaction entry is in the file");
        }
    }
}

/// A small deterministic generator for kill times.
struct Lcg(u64);

impl Lcg {
    fn next_fraction(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[test]
fn a_rewrite_killed_at_any_point_leaves_the_old_or_the_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let base = base_session(dir.path(), 3000);
    let old = fs::read(&base).unwrap();
    let reference = dir.path().join("reference.jsonl");
    fs::copy(&base, &reference).unwrap();
    let started = Instant::now();
    let o = musepi(&["session", "migrate", reference.to_str().unwrap(), "--force"]);
    let full = started.elapsed();
    assert_eq!(o.status.code(), Some(0));
    let new = fs::read(&reference).unwrap();
    assert_ne!(old, new);
    let kills = rounds(30);
    let mut rng = Lcg(0x5eed);
    let (mut as_old, mut as_new, mut torn) = (0, 0, 0);
    let mut tally = Tally::default();
    let (mut left, mut cleaned) = (0, 0);
    for k in 0..kills {
        let file = dir.path().join("s.jsonl");
        fs::copy(&base, &file).unwrap();
        settle(&file);
        let appender = Appender::start(&file, Style::Locking);
        let mut child = Command::new(MUSEPI)
            .args(["session", "migrate", file.to_str().unwrap(), "--force"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Anywhere from the start to a little past the usual end.
        std::thread::sleep(full.mul_f64(rng.next_fraction() * 1.2));
        let _ = child.kill();
        child.wait().unwrap();
        let rest = appender.finish_and_check(&file, &mut tally, &format!("kill {k}"));
        if rest == old {
            as_old += 1;
        } else if rest == new {
            as_new += 1;
        } else {
            torn += 1;
        }
        let stale = temp_files(dir.path());
        if stale > 0 {
            left += 1;
            // The next run cleans what the killed one left.
            let o = musepi(&[
                "prune",
                file.to_str().unwrap(),
                "--force",
                "--min-saving",
                "0",
                "--now",
                NOW,
            ]);
            assert_eq!(code(&o), 0, "{}", stderr(&o));
            assert_eq!(
                temp_files(dir.path()),
                0,
                "kill {k}: cleaned by the next run"
            );
            cleaned += 1;
        }
        fs::remove_file(&file).unwrap();
    }
    eprintln!(
        "reliability: kill -9 during migrate --in-place: {kills} kill points, {as_old} left the old file, {as_new} the new one, {torn} torn, {} lines appended by a locking appender, {} lost, {left} left a temporary file, {cleaned} of them removed by the next run",
        tally.appended, tally.lost
    );
    assert_eq!(torn, 0);
    assert_eq!(tally.lost, 0);
    assert_eq!(left, cleaned);
}

/// Temporary files a killed run left in the prune store's object folders.
fn store_temp_files(store: &Path) -> usize {
    let Ok(folders) = fs::read_dir(store.join("objects")) else {
        return 0;
    };
    folders.map(|d| temp_files(&d.unwrap().path())).sum()
}

#[test]
fn a_prune_killed_at_any_point_leaves_the_session_unpruned_or_pruned_with_every_original_kept() {
    let dir = tempfile::tempdir().unwrap();
    let base = base_session(dir.path(), 3000);
    let v3 = fs::read_to_string(&base)
        .unwrap()
        .replacen("\"version\":2", "\"version\":3", 1);
    fs::write(&base, v3).unwrap();
    let old = fs::read(&base).unwrap();
    let prune = |file: &Path| {
        Command::new(MUSEPI)
            .args(["prune", file.to_str().unwrap(), "--force"])
            .args(["--min-saving", "0", "--now", NOW, "-q"])
            .env("HOME", std::env::temp_dir().join("musepi-reliability-home"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let reference = dir.path().join("reference.jsonl");
    fs::copy(&base, &reference).unwrap();
    let started = Instant::now();
    assert!(prune(&reference).wait().unwrap().success());
    let full = started.elapsed();
    let new = fs::read(&reference).unwrap();
    assert_ne!(old, new);
    let whole = dir.path().join("reference.restored.jsonl");
    let o = musepi(&[
        "unprune",
        reference.to_str().unwrap(),
        "-o",
        whole.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        fs::read(&whole).unwrap(),
        old,
        "a prune left alone keeps every original"
    );
    let kills = rounds(20);
    let mut rng = Lcg(0x00c0_ffee);
    let (mut as_old, mut as_new, mut torn, mut lost, mut left) = (0, 0, 0, 0, 0);
    let mut tally = Tally::default();
    for k in 0..kills {
        let file = dir.path().join("s.jsonl");
        let store = dir.path().join(".s.jsonl.musepi-store");
        let _ = fs::remove_dir_all(&store);
        fs::copy(&base, &file).unwrap();
        settle(&file);
        let appender = Appender::start(&file, Style::Locking);
        let mut child = prune(&file);
        std::thread::sleep(full.mul_f64(rng.next_fraction() * 1.2));
        let _ = child.kill();
        child.wait().unwrap();
        let rest = appender.finish_and_check(&file, &mut tally, &format!("kill {k}"));
        if rest == old {
            as_old += 1;
        } else if rest == new {
            as_new += 1;
            // Every original the rewrite blanked is in the store: putting
            // them back gives the session before the prune, byte for byte.
            let restored = dir.path().join("restored.jsonl");
            let _ = fs::remove_file(&restored);
            let o = musepi(&[
                "unprune",
                file.to_str().unwrap(),
                "-o",
                restored.to_str().unwrap(),
                "--json",
            ]);
            assert_eq!(code(&o), 0, "{}", stderr(&o));
            let (_, restored_rest) = split_appended(&fs::read(&restored).unwrap());
            if restored_rest != old {
                lost += 1;
            }
        } else {
            torn += 1;
        }
        if store_temp_files(&store) > 0 {
            left += 1;
        }
        fs::remove_file(&file).unwrap();
    }
    eprintln!(
        "reliability: kill -9 during prune: {kills} kill points, {as_old} left the session unpruned, {as_new} pruned, {torn} torn, {lost} pruned without every original kept, {} lines appended by a locking appender, {} lost, {left} left a temporary file in the store",
        tally.appended, tally.lost
    );
    assert_eq!(torn, 0);
    assert_eq!(lost, 0);
    assert_eq!(tally.lost, 0);
}

#[test]
fn lines_appended_while_unprune_puts_originals_back_are_never_lost() {
    let dir = tempfile::tempdir().unwrap();
    let base = base_session(dir.path(), 2000);
    // A v3 file, which pruning rewrites with no migration.
    let v3 = fs::read_to_string(&base)
        .unwrap()
        .replacen("\"version\":2", "\"version\":3", 1);
    fs::write(&base, v3).unwrap();
    let original = fs::read(&base).unwrap();
    let mut tally = Tally::default();
    let (mut written, mut busy) = (0, 0);
    for style in [Style::Plain, Style::Locking] {
        for round in 0..rounds(4) {
            // A pruned session with its originals in the store beside it.
            let file = dir.path().join(format!("unprune-{round}.jsonl"));
            let store = dir
                .path()
                .join(format!(".unprune-{round}.jsonl.musepi-store"));
            let _ = fs::remove_dir_all(&store);
            fs::copy(&base, &file).unwrap();
            let o = rewrite("prune", &file);
            assert_eq!(code(&o), 0, "{}", stderr(&o));
            let pruned = fs::read(&file).unwrap();
            assert_ne!(pruned, original);
            let appender = Appender::start(&file, style);
            std::thread::sleep(Duration::from_millis(2));
            let o = musepi(&["unprune", file.to_str().unwrap(), "--force"]);
            std::thread::sleep(Duration::from_millis(5));
            let rest =
                appender.finish_and_check(&file, &mut tally, &format!("unprune round {round}"));
            match o.status.code() {
                // Every original back: the file before the prune, byte for byte.
                Some(0) => {
                    written += 1;
                    assert!(
                        rest == original,
                        "unprune round {round}: the originals put back"
                    );
                }
                Some(3) => {
                    busy += 1;
                    assert_eq!(rest, pruned, "unprune round {round}: untouched");
                }
                other => panic!("unprune round {round}: exit {other:?}: {}", stderr(&o)),
            }
            assert_eq!(temp_files(dir.path()), 0);
            fs::remove_file(&file).unwrap();
        }
    }
    eprintln!(
        "reliability: unprune beside an appender: {} rewrites ({written} written, {busy} refused as busy), {} lines appended, {} lost",
        written + busy,
        tally.appended,
        tally.lost
    );
    assert_eq!(tally.lost, 0);
}
