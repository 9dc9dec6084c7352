//! `musepi-bench`: the benchmark binary that `cargo xtask bench` drives.
//!
//! `musepi-bench generate --size-mb N --seed S --out FILE` writes a
//! deterministic synthetic session; `musepi-bench run CASE FILE` runs one
//! case once and prints `{case, bytes, seconds, cpuSeconds, peakBytes,
//! detail}` as one JSON line, where `cpuSeconds` is the CPU time (user and
//! system, on every core) the process spent in the case and `peakBytes`
//! is the process's own peak resident memory (`VmHWM`). `musepi-bench list` names the cases, the baseline first.
//! `musepi-bench to-v1 V3FILE OUT` writes a generated session as a v1 file.
//! `musepi-bench retention [--musepi BIN] [--work DIR] [--example FILE]
//! [--shared DIR]` measures what `musepi compact` keeps of a history (see
//! `retention/mod.rs`); `musepi-bench retention-repeated` with the same
//! options, what compacting a growing session again and again keeps of
//! its early facts (`retention/repeated.rs`).
//!
//! A new case is one function in `cases.rs` and one line in its table.

mod cases;
mod floor;
mod generate;
mod process;
mod retention;
mod rng;
mod serve;
mod serve_methods;
mod snap;
mod v1;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

type BoxError = Box<dyn std::error::Error>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("musepi-bench: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<(), BoxError> {
    match args.first().map(String::as_str) {
        Some("list") => {
            for case in cases::CASES {
                println!("{}", case.name);
            }
            Ok(())
        }
        Some("retention") => retention::run(&args[1..]),
        Some("retention-repeated") => retention::run_repeated(&args[1..]),
        Some("generator-version") => {
            println!("{}", generate::VERSION);
            Ok(())
        }
        Some("to-v1") => {
            let [_, from, out] = args else {
                return Err("usage: musepi-bench to-v1 V3FILE OUT".into());
            };
            println!("{}", v1::to_v1(from.as_ref(), out.as_ref())?);
            Ok(())
        }
        Some("generate") => {
            let mut size_mb = 50u64;
            let mut seed = 1u64;
            let mut out = None;
            let mut compactions = true;
            let mut it = args[1..].iter();
            while let Some(a) = it.next() {
                if a == "--no-compaction" {
                    compactions = false;
                    continue;
                }
                let v = it.next().ok_or_else(|| format!("{a} needs a value"))?;
                match a.as_str() {
                    "--size-mb" => size_mb = v.parse()?,
                    "--seed" => seed = v.parse()?,
                    "--out" => out = Some(PathBuf::from(v)),
                    other => return Err(format!("unknown argument {other}").into()),
                }
            }
            let out = out.ok_or("--out FILE is required")?;
            let summary = generate::generate_with(&out, size_mb * 1_000_000, seed, compactions)?;
            println!("{summary}");
            Ok(())
        }
        Some("run") => {
            let [_, case, file] = args else {
                return Err("usage: musepi-bench run CASE FILE".into());
            };
            let case = cases::CASES
                .iter()
                .find(|c| c.name == case)
                .ok_or_else(|| format!("unknown case {case}"))?;
            let file = PathBuf::from(file);
            let bytes = std::fs::metadata(&file)?.len();
            let cpu_before = cpu_seconds()?;
            let start = Instant::now();
            let detail = (case.run)(&file)?;
            let seconds = start.elapsed().as_secs_f64();
            let cpu = cpu_seconds()?.own - cpu_before.own;
            let result = serde_json::json!({
                "case": case.name,
                "bytes": bytes,
                "seconds": seconds,
                "cpuSeconds": cpu,
                "peakBytes": peak_bytes()?,
                "detail": detail,
            });
            println!("{result}");
            Ok(())
        }
        _ => Err(
            "usage: musepi-bench list | generator-version | generate --size-mb N --seed S [--no-compaction] --out FILE | to-v1 V3FILE OUT | run CASE FILE | retention [--musepi BIN] [--work DIR] [--example FILE] [--shared DIR] | retention-repeated [the same options]"
                .into(),
        ),
    }
}

/// CPU time (user and system) so far, in seconds.
struct CpuTime {
    /// This process's, on all its threads.
    own: f64,
    /// Its children's that it has waited for.
    children: f64,
}

/// This process's CPU time, from `/proc/self/stat`.
fn cpu_seconds() -> Result<CpuTime, BoxError> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // The fields after the command name (which may hold spaces), from the
    // third: utime, stime, cutime and cstime are the 14th to the 17th.
    let after = stat
        .rsplit_once(')')
        .ok_or("no command name in /proc/self/stat")?
        .1;
    let ticks: Vec<f64> = after
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let [utime, stime, cutime, cstime] = ticks[..] else {
        return Err("/proc/self/stat has fewer than 17 fields".into());
    };
    let hz = rustix::param::clock_ticks_per_second() as f64;
    Ok(CpuTime {
        own: (utime + stime) / hz,
        children: (cutime + cstime) / hz,
    })
}

/// The process's peak resident set (`VmHWM`), in bytes.
fn peak_bytes() -> Result<u64, BoxError> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    vm_hwm(&status).ok_or_else(|| "no VmHWM in /proc/self/status".into())
}

/// The `VmHWM` of a `/proc/<pid>/status` text, in bytes.
fn vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}
