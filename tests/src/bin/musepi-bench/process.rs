//! Whole `musepi` processes as cases: the command line as a user runs it,
//! timed from the spawn to the exit, with the child's own peak memory.
//!
//! The binary is `musepi` next to `musepi-bench` (`cargo xtask bench`
//! builds both), or the one `MUSEPI_BIN` names. The child's peak resident
//! memory is its `VmHWM`, read from `/proc/<pid>/status` every millisecond
//! until it exits: a high-water mark, so the last reading holds the peak
//! unless memory grew in the child's last millisecond. Its CPU time (user
//! and system, on every core) is what it adds to this process's children's
//! once it has been waited for.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::BoxError;

/// `musepi plan --json --quiet FILE`.
pub(crate) fn plan(path: &Path) -> Result<Value, BoxError> {
    run(&["plan", "--json", "--quiet"], path)
}

/// `musepi session stats --json --quiet FILE`.
pub(crate) fn stats(path: &Path) -> Result<Value, BoxError> {
    run(&["session", "stats", "--json", "--quiet"], path)
}

/// `musepi compact --json --quiet FILE -o OUT --force`: the whole
/// compaction at the leaf with the default strategy (the snapcompact
/// archive), written to a copy beside the file, which is removed after
/// with the prune store the compaction kept its pruned outputs in.
pub(crate) fn compact(path: &Path) -> Result<Value, BoxError> {
    let out = path.with_extension("compacted.jsonl");
    let out_s = out.to_string_lossy().into_owned();
    let store = musepi_session_model::store_dir(&out);
    let result = run_then(
        &["compact", "--json", "--quiet", "--force"],
        path,
        &["-o", &out_s],
    );
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_dir_all(&store);
    result
}

/// The `musepi` binary the process cases run.
pub(crate) fn musepi() -> Result<PathBuf, BoxError> {
    if let Some(bin) = std::env::var_os("MUSEPI_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe()?;
    let bin = exe.with_file_name("musepi");
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "no musepi next to {} (build it with `cargo build --release -p musepi`, or set MUSEPI_BIN)",
            exe.display()
        )
        .into())
    }
}

fn run(args: &[&str], path: &Path) -> Result<Value, BoxError> {
    run_then(args, path, &[])
}

/// `musepi ARGS FILE AFTER`.
fn run_then(args: &[&str], path: &Path, after: &[&str]) -> Result<Value, BoxError> {
    let bin = musepi()?;
    let cpu_before = crate::cpu_seconds()?.children;
    let start = Instant::now();
    let mut child = Command::new(&bin)
        .args(args)
        .arg(path)
        .args(after)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let status_file = PathBuf::from(format!("/proc/{}/status", child.id()));
    let mut peak = 0u64;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut out).map(|_| out)
    });
    let status = loop {
        if let Some(hwm) = std::fs::read_to_string(&status_file)
            .ok()
            .as_deref()
            .and_then(crate::vm_hwm)
        {
            peak = peak.max(hwm);
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let seconds = start.elapsed().as_secs_f64();
    let cpu = crate::cpu_seconds()?.children - cpu_before;
    let out = reader.join().map_err(|_| "the reader thread panicked")??;
    if !status.success() {
        return Err(format!("{} {} exited with {status}", bin.display(), args.join(" ")).into());
    }
    let answer: Value = serde_json::from_slice(&out)?;
    Ok(json!({
        "command": format!("musepi {} FILE", args.join(" ")),
        "processSeconds": seconds,
        "childPeakBytes": peak,
        "childCpuSeconds": cpu,
        "answerKeys": answer.as_object().map_or(0, serde_json::Map::len),
    }))
}
