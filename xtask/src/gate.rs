//! `cargo xtask check`: the gate.

use std::time::Instant;

use anyhow::Context;

use crate::cargo;
use crate::run::{run_status, secs};

/// One step of the gate.
enum Step {
    /// A cargo command with extra environment variables.
    Cargo(
        &'static [&'static str],
        &'static [(&'static str, &'static str)],
    ),
    /// A check that runs inside xtask.
    Task(fn() -> anyhow::Result<()>),
}

const STEPS: &[(&str, Step)] = &[
    ("fmt", Step::Cargo(&["fmt", "--all", "--check"], &[])),
    (
        "clippy",
        Step::Cargo(
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--locked",
                "--",
                "-D",
                "warnings",
            ],
            &[],
        ),
    ),
    (
        "test",
        Step::Cargo(
            &["test", "--workspace", "--locked"],
            &[("CI", "true"), ("INSTA_UPDATE", "no")],
        ),
    ),
    (
        "doc",
        Step::Cargo(
            &["doc", "--workspace", "--no-deps", "--locked"],
            &[("RUSTDOCFLAGS", "-D warnings")],
        ),
    ),
    ("deps", Step::Task(crate::deps::run)),
    ("tidy", Step::Task(crate::tidy::run)),
];

/// Runs every step in order, stopping at the first failure.
pub(crate) fn check() -> anyhow::Result<()> {
    let total = Instant::now();
    let mut timings = Vec::new();
    for (name, step) in STEPS {
        eprintln!("==> {name}");
        let start = Instant::now();
        let result = match step {
            Step::Cargo(args, env) => {
                let mut cmd = cargo();
                cmd.args(*args);
                for (k, v) in *env {
                    cmd.env(k, v);
                }
                run_status(&mut cmd)
            }
            Step::Task(f) => f(),
        };
        let took = start.elapsed();
        eprintln!("<== {name}: {} in {}", verdict(&result), secs(took));
        timings.push((*name, took));
        result.with_context(|| format!("step `{name}` failed"))?;
    }
    eprintln!();
    for (name, took) in &timings {
        eprintln!("  {name:<8} {:>8}", secs(*took));
    }
    eprintln!("  {:<8} {:>8}", "total", secs(total.elapsed()));
    eprintln!("check: all steps passed");
    Ok(())
}

fn verdict<T>(r: &anyhow::Result<T>) -> &'static str {
    if r.is_ok() { "ok" } else { "FAILED" }
}
