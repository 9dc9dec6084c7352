//! `cargo xtask reliability [--scale N]`: runs the reliability tests of the
//! cli (appends during rewrites, kills during rewrites, a writer that
//! never stops, the bad-input corpus, the attacks on trust) with N times
//! their usual rounds and prints the figures they measured, as recorded in
//! docs/reliability.md.

use std::process::Stdio;

use anyhow::{Context, bail};

use crate::cargo;

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let scale = match args {
        [] => 10,
        [flag, n] if flag == "--scale" => n
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .with_context(|| format!("--scale {n}: expected a positive whole number"))?,
        _ => bail!("usage: cargo xtask reliability [--scale N]"),
    };
    eprintln!("reliability: running the tests with {scale} times their rounds");
    let out = cargo()
        .args([
            "test",
            "--locked",
            "-p",
            "musepi",
            "--test",
            "reliability",
            "--test",
            "endless_writer",
            "--test",
            "bad_inputs",
            "--test",
            "trust_cli",
            "--",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("MUSEPI_RELIABILITY_ROUNDS", scale.to_string())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .output()
        .context("running cargo test")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let figures: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("reliability: "))
        .collect();
    if !out.status.success() {
        eprintln!("{stderr}");
        bail!("the reliability tests failed");
    }
    println!("scale {scale}:");
    for f in &figures {
        println!("  {}", f.trim_start_matches("reliability: "));
    }
    Ok(())
}
