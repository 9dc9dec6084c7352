//! A writer that never stops appending cannot make a rewrite hold what it
//! appends in memory, or keep the rewrite running for as long as it
//! writes: the rewrite copies what arrives through a small buffer, gives up
//! (exit 3) after a bounded number of rounds or 64 MiB, and leaves the
//! file as it was with every appended line after it.
//!
//! The command runs with its data segment capped (`ulimit -d`), so holding
//! what the writer appends would make it fail; the peak resident set it
//! reached is sampled from `/proc` while it runs, for the figures of
//! `cargo xtask reliability` (docs/reliability.md).

#![allow(clippy::unwrap_used)]

mod support;

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use support::{MUSEPI, example_session, stderr};

const NOW: &str = "2026-02-01T00:00:00.000Z";

/// The cap on the command's data segment: 256 MiB, a few times what it
/// needs, far less than what the writer appends while it runs.
const DATA_LIMIT_KIB: u64 = 256 << 10;

/// How long each appended line is: 64 KiB.
const LINE_BYTES: usize = 64 << 10;

/// How many times a round is run again when the rewrite caught up with the
/// writer after all (the machine held the writer back between two lines),
/// before the test gives up with a message instead of looping on.
const SLOW_ROUNDS: usize = 20;

fn rounds(default: usize) -> usize {
    std::env::var("MUSEPI_RELIABILITY_ROUNDS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map_or(default, |scale| default * scale)
}

/// Appends `custom` entries of [`LINE_BYTES`] to a session as pi does
/// (open, one write, close; no lock) without pausing, until it is stopped
/// or the file at the path is replaced (the rewrite caught up and renamed
/// its new file into place); returns the lines it wrote, in order.
struct Writer {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<Vec<u8>>>,
}

impl Writer {
    fn start(path: &Path) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let path = path.to_owned();
        let inode = fs::metadata(&path).unwrap().ino();
        let last = support::last_line(&path);
        let mut parent = last["id"].as_str().unwrap().to_owned();
        let handle = std::thread::spawn(move || {
            let mut written = Vec::new();
            while !flag.load(Ordering::Relaxed) && fs::metadata(&path).unwrap().ino() == inode {
                let id = format!("ap{:06}", written.len());
                let head = format!(
                    "{{\"type\":\"custom\",\"id\":\"{id}\",\"parentId\":\"{parent}\",\"timestamp\":\"2026-01-02T00:00:00.000Z\",\"customType\":\"agent\",\"data\":\""
                );
                let mut line = head.into_bytes();
                line.resize(LINE_BYTES - 3, b'x');
                line.extend_from_slice(b"\"}\n");
                let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
                f.write_all(&line).unwrap();
                drop(f);
                written.push(line);
                parent = id;
            }
            written
        });
        Self { stop, handle }
    }

    fn finish(self) -> Vec<Vec<u8>> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap()
    }
}

/// The high-water mark of the resident set of process `pid`, in KiB, from
/// `/proc` (`None` once it has exited).
fn peak_kib(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn temp_files(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect()
}

/// `musepi prune FILE --force` with its data segment capped: its output
/// and the peak of its resident set seen while it ran, in KiB.
fn prune_capped(file: &Path) -> (std::process::Output, u64) {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -d {DATA_LIMIT_KIB} && exec \"$0\" \"$@\""))
        .arg(MUSEPI)
        .args([
            "prune",
            file.to_str().unwrap(),
            "--force",
            "--min-saving",
            "0",
            "--now",
            NOW,
            "--json",
        ])
        .env("HOME", file.parent().unwrap())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        peak = peak.max(peak_kib(child.id()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(2));
    }
    (child.wait_with_output().unwrap(), peak)
}

#[test]
fn a_rewrite_beside_a_writer_that_never_stops_gives_up_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let wanted = rounds(1);
    let (mut gave_up, mut caught_up, mut appended, mut peak) = (0, 0, 0u64, 0u64);
    for round in 0..SLOW_ROUNDS * wanted {
        let file = example_session(dir.path(), &format!("s{round}.jsonl"));
        let original = fs::read(&file).unwrap();
        let writer = Writer::start(&file);
        let (o, seen) = prune_capped(&file);
        let lines = writer.finish();
        peak = peak.max(seen);
        appended += lines.iter().map(|l| l.len() as u64).sum::<u64>();
        let bytes = fs::read(&file).unwrap();
        match o.status.code() {
            Some(3) => {
                // Nothing of the rewrite's, every appended byte after the
                // original ones.
                let mut expected = original.clone();
                expected.extend(lines.iter().flatten());
                assert!(
                    bytes == expected,
                    "round {round}: the file is not the original followed by the {} lines appended ({} bytes, {} expected)",
                    lines.len(),
                    bytes.len(),
                    expected.len()
                );
                let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
                assert_eq!(doc["error"]["code"], "changed-on-disk", "{doc}");
                gave_up += 1;
            }
            // The machine held the writer back long enough for a round to
            // find nothing new: the rewrite went through, with every line.
            Some(0) => {
                let found: Vec<&[u8]> = bytes
                    .split_inclusive(|&b| b == b'\n')
                    .filter(|l| l.starts_with(b"{\"type\":\"custom\",\"id\":\"ap"))
                    .collect();
                let written: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
                assert!(
                    found == written,
                    "round {round}: every appended line, in order"
                );
                caught_up += 1;
            }
            _ => panic!(
                "round {round}: {} (peak {seen} KiB of a {DATA_LIMIT_KIB} KiB cap): {}",
                o.status,
                stderr(&o)
            ),
        }
        assert_eq!(
            temp_files(dir.path()),
            Vec::<PathBuf>::new(),
            "round {round}"
        );
        fs::remove_file(&file).unwrap();
        if gave_up == wanted {
            break;
        }
    }
    eprintln!(
        "reliability: a writer that never stops: {} rewrites beside it, {gave_up} gave up as busy with the file untouched, {caught_up} caught up with it; {} MiB appended, 0 lost; peak resident set {} MiB (data capped at {} MiB)",
        gave_up + caught_up,
        appended >> 20,
        peak >> 10,
        DATA_LIMIT_KIB >> 10
    );
    assert_eq!(
        gave_up, wanted,
        "in {SLOW_ROUNDS} rounds per give-up the rewrite caught up with a writer that never stops every time: the machine is too busy for this test"
    );
}
