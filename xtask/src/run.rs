//! Running commands for the tasks: a command's status as an error, its
//! description in messages, a duration as people read it.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};

/// `1.2s`.
pub(crate) fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// Runs `cmd`, inheriting stdio; an error when it fails.
pub(crate) fn run_status(cmd: &mut Command) -> anyhow::Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if status.success() {
        Ok(())
    } else {
        bail!("{} exited with {status}", describe(cmd))
    }
}

/// `cargo test --workspace` for messages.
pub(crate) fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    if let Some(name) = std::path::Path::new(&s).file_name() {
        s = name.to_string_lossy().into_owned();
    }
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}
