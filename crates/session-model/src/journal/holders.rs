//! Other processes that still hold a replaced file open for writing.
//!
//! After a rewrite renames its new file over the old one, nobody can open
//! the old file any more, but an appender that opened it just before the
//! rename can still write to it. An appender that takes no lock (pi's
//! `appendFileSync`) opens, writes and closes in one call, so once no other
//! process holds the old file open for writing, nothing more can reach it:
//! that is when the rewrite takes its last look. The open files are found
//! in Linux's `/proc/<pid>/fd`; where that cannot be read (another system,
//! another user's process) none are seen.

use std::fs::{self, File};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a rewrite waits for other processes to close the file it
/// replaced: an appender holds it for one write, so only a process paused
/// in that moment, or one that keeps the file open, makes it wait.
pub(crate) const CLOSE_WAIT: Duration = Duration::from_secs(2);
const CLOSE_POLL: Duration = Duration::from_millis(2);

/// Waits until no other process holds `file` (already replaced at its
/// path, so it has no name left) open for writing, for at most `wait` (a
/// process that keeps it open past that is not waited for). Returns
/// whether the file was still open elsewhere when the wait ran out.
pub(crate) fn wait_closed_elsewhere(file: &File, wait: Duration) -> bool {
    let Ok(meta) = file.metadata() else {
        return false;
    };
    let deadline = Instant::now() + wait;
    loop {
        if !open_for_writing_elsewhere(meta.dev(), meta.ino()) {
            return false;
        }
        if Instant::now() >= deadline {
            return true;
        }
        std::thread::sleep(CLOSE_POLL);
    }
}

/// Whether a process other than this one has the file `dev`/`ino` open for
/// writing.
fn open_for_writing_elsewhere(dev: u64, ino: u64) -> bool {
    let me = std::process::id();
    let Ok(procs) = fs::read_dir("/proc") else {
        return false;
    };
    for proc_dir in procs.flatten() {
        let is_other = proc_dir
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
            .is_some_and(|pid| pid != me);
        if is_other && holds(&proc_dir.path(), dev, ino) {
            return true;
        }
    }
    false
}

/// Whether the process at `proc_dir` has the file open for writing. Only
/// descriptors of files without a name are looked at closely (the replaced
/// file has none), so the files of other processes are never touched.
fn holds(proc_dir: &Path, dev: u64, ino: u64) -> bool {
    let Ok(fds) = fs::read_dir(proc_dir.join("fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        let unnamed = fs::read_link(fd.path())
            .is_ok_and(|to| to.as_os_str().as_encoded_bytes().ends_with(b" (deleted)"));
        unnamed
            && fs::metadata(fd.path()).is_ok_and(|m| m.dev() == dev && m.ino() == ino)
            && writable(proc_dir, &fd.file_name())
    })
}

/// Whether descriptor `fd` of the process at `proc_dir` was opened for
/// writing (when its flags cannot be read, it counts as writable).
fn writable(proc_dir: &Path, fd: &std::ffi::OsStr) -> bool {
    let flags = fs::read_to_string(proc_dir.join("fdinfo").join(fd))
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        });
    flags.is_none_or(|f| f & 0o3 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use musepi_test_support::{Hold, hold_open};

    /// A file in a temporary folder, opened, with what it was when opened,
    /// held open by one other process for each of `holds`, then removed (as
    /// a rewrite replaces it). The folder goes with it: only the open
    /// descriptors keep the file.
    fn removed_while_held<const N: usize>(
        holds: [Hold; N],
    ) -> (File, fs::Metadata, [std::process::Child; N]) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.jsonl");
        fs::write(&path, "{}\n").expect("written");
        let file = File::open(&path).expect("opened");
        let meta = file.metadata().expect("metadata");
        let holders = holds.map(|how| hold_open(&path, how));
        fs::remove_file(&path).expect("removed");
        (file, meta, holders)
    }

    /// Ends a process that holds the file open, and reaps it.
    fn stop(mut holder: std::process::Child) {
        holder.kill().expect("killed");
        holder.wait().expect("reaped");
    }

    #[test]
    fn another_process_writing_the_replaced_file_is_seen_and_a_reader_is_not() {
        let (_file, meta, [writer, reader]) = removed_while_held([Hold::Appending, Hold::Reading]);
        assert!(open_for_writing_elsewhere(meta.dev(), meta.ino()));
        stop(writer);
        assert!(!open_for_writing_elsewhere(meta.dev(), meta.ino()));
        stop(reader);
    }

    #[test]
    fn the_wait_lasts_until_the_other_process_closes_the_file() {
        let (file, meta, [writer]) = removed_while_held([Hold::Appending]);
        let closing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&closing);
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            stop(writer);
        });
        // A wait far longer than the closer can take on a busy machine.
        assert!(
            !wait_closed_elsewhere(&file, Duration::from_hours(1)),
            "the file counts as still open though it was closed within the wait"
        );
        assert!(
            closing.load(std::sync::atomic::Ordering::SeqCst),
            "returned while the other process still had the file open"
        );
        assert!(!open_for_writing_elsewhere(meta.dev(), meta.ino()));
        closer.join().expect("closer");
    }

    #[test]
    fn a_file_kept_open_past_the_wait_is_reported_and_a_closed_one_is_not() {
        let (file, _, [writer, reader]) = removed_while_held([Hold::Appending, Hold::Reading]);
        let wait = Duration::from_millis(100);
        let started = Instant::now();
        assert!(
            wait_closed_elsewhere(&file, wait),
            "kept open past the wait"
        );
        assert!(
            started.elapsed() >= wait,
            "returned before the wait ran out"
        );
        stop(writer);
        assert!(
            !wait_closed_elsewhere(&file, wait),
            "only a reader holds it now"
        );
        stop(reader);
    }
}
