//! The pseudo-cases of `cargo xtask bench` that are tables of their own
//! rather than one timed case: `scaling` (`musepi plan` against `musepi
//! compact` over growing sessions with nothing compacted yet) and the two
//! retention measures, which `musepi-bench` runs with the release
//! `musepi`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::Context;

use super::{Options, Sample, generate_with, run_case, workspace_root};
use crate::cargo;
use crate::run::run_status;

/// The scaling pseudo-case and the cases it times.
pub(super) const SCALING: &str = "scaling";
const SCALING_CASES: [&str; 2] = ["cli-plan", "cli-compact"];
pub(super) const SCALING_SIZES: [u64; 5] = [1, 5, 10, 20, 40];

/// `musepi plan` and `musepi compact` over sessions with nothing compacted
/// yet (the whole history is summarized), at every scaling size: the time
/// of each, the best of `--runs`, and compact's over plan's, so growth in
/// either shows.
pub(super) fn run_scaling(bin: &Path, data: &Path, opts: &Options) -> anyhow::Result<()> {
    println!();
    println!(
        "scaling (sessions with nothing compacted yet; musepi plan and musepi compact, best of {} run(s)):",
        opts.runs
    );
    println!(
        "{:>8} {:>10} {:>10} {:>9} {:>11} {:>12} {:>11} {:>12}",
        "file",
        "plan",
        "plan cpu",
        "compact",
        "compact cpu",
        "compact/plan",
        "compact MB/s",
        "compact peak"
    );
    let mut first: Option<(u64, f64)> = None;
    for &size in &opts.scaling_sizes_mb {
        let file = generate_with(bin, data, size, opts.seed, false)?;
        let bytes = std::fs::metadata(&file)?.len();
        let mut best: BTreeMap<&str, Sample> = BTreeMap::new();
        for case in SCALING_CASES {
            let mut samples = Vec::new();
            for _ in 0..opts.runs {
                samples.push(run_case(bin, case, &file)?);
            }
            let fastest = samples
                .iter()
                .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
                .context("no run")?
                .clone();
            best.insert(case, fastest);
        }
        let (plan, compact) = (&best["cli-plan"], &best["cli-compact"]);
        println!(
            "{:>6} MB {:>9.3}s {:>9.2}s {:>8.3}s {:>10.2}s {:>11.2}x {:>12.1} {:>10.0}MB",
            size,
            plan.seconds,
            plan.cpu,
            compact.seconds,
            compact.cpu,
            compact.seconds / plan.seconds,
            bytes as f64 / 1e6 / compact.seconds,
            compact.peak as f64 / 1e6,
        );
        first.get_or_insert((size, compact.seconds));
        if let (Some((small, small_s)), true) = (first, size > first.map_or(0, |f| f.0)) {
            println!(
                "         compact grows {:.2}x per unit of size from {small} MB (1.00 is linear)",
                (compact.seconds / small_s) / (size as f64 / small as f64)
            );
        }
    }
    Ok(())
}

/// The pseudo-cases that measure retention: after one compaction, and
/// after compacting a growing session again and again.
pub(super) const RETENTION: &str = "retention";
pub(super) const RETENTION_REPEATED: &str = "retention-repeated";

/// Builds `musepi` and has `musepi-bench CASE` (`retention` or
/// `retention-repeated`) measure what `musepi compact` keeps of the
/// example, generated and (when `../shared` is beside the repository)
/// real sessions.
pub(super) fn run_retention(
    bin: &Path,
    target: &Path,
    data: &Path,
    case: &str,
) -> anyhow::Result<()> {
    eprintln!("==> building musepi (release)");
    run_status(cargo().args([
        "build",
        "--release",
        "--locked",
        "-p",
        "musepi",
        "--bin",
        "musepi",
    ]))?;
    let root = workspace_root()?;
    let mut cmd = Command::new(bin);
    cmd.arg(case)
        .arg("--musepi")
        .arg(target.join("release/musepi"))
        .arg("--work")
        .arg(data.join("retention"))
        .arg("--example")
        .arg(root.join("examples/sessions/todo-refactor.jsonl"));
    let shared = root.join("../shared");
    if shared.is_dir() {
        cmd.arg("--shared").arg(shared);
    }
    println!();
    println!(
        "{}",
        if case == RETENTION {
            "retention (planted facts and the sessions' own, verbatim in what `musepi context --llm` shows of the compaction):"
        } else {
            "retention after repeated compactions (early planted facts, verbatim in what `musepi context --llm` shows after the last one):"
        }
    );
    run_status(&mut cmd)
}
