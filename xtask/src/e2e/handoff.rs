//! The handoff step of `cargo xtask e2e`: `musepi handoff` sends the
//! context at the leaf (tool calls and their results included) to the same
//! server, and the new session starts from the document it wrote.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};
use serde_json::Value;

use super::process::run_captured;
use super::{KEY_VARIABLES, REQUEST_DEADLINE, first_chars};

/// Runs `musepi handoff` on the compacted `session` into `handoff.jsonl`
/// beside it and checks the new file; returns the document's first words.
pub(super) fn handoff(
    musepi: &Path,
    session: &Path,
    base_url: &str,
    model: &str,
    local: bool,
) -> anyhow::Result<String> {
    let work = session.parent().context("the session has no folder")?;
    let new = work.join("handoff.jsonl");
    if new.exists() {
        fs::remove_file(&new).with_context(|| format!("cannot remove {}", new.display()))?;
    }
    let mut cmd = Command::new(musepi);
    cmd.arg("handoff")
        .arg(session)
        .arg("-o")
        .arg(&new)
        .args(["--provider", "openai-compatible"])
        .args(["--base-url", base_url, "--model", model, "--json"])
        .args(["--deadline", REQUEST_DEADLINE])
        .current_dir(work)
        .env("HOME", work.join("home"));
    if local {
        for key in KEY_VARIABLES {
            cmd.env_remove(key);
        }
    }
    let stdout = run_captured(&mut cmd, &work.join("handoff"))?;
    let out: Value = serde_json::from_str(&stdout)
        .with_context(|| format!("musepi handoff --json printed no JSON:\n{stdout}"))?;
    let text =
        fs::read_to_string(&new).with_context(|| format!("cannot read {}", new.display()))?;
    let lines: Vec<Value> = text
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .with_context(|| format!("{} is not JSON lines", new.display()))?;
    let [header, first] = lines.as_slice() else {
        bail!(
            "{} has {} lines, not the header and the handoff message",
            new.display(),
            lines.len()
        );
    };
    if header["type"] != "session" || header["parentSession"].as_str().is_none() {
        bail!("the new session's header does not name its parent: {header}");
    }
    let document = first.pointer("/content/0/text").and_then(Value::as_str);
    if first["type"] != "custom_message" || first["customType"] != "handoff" {
        bail!("the new session does not start with the handoff message: {first}");
    }
    let Some(document) = document.filter(|d| !d.trim().is_empty()) else {
        bail!("the handoff document is empty: {first}");
    };
    if out["document"].as_str() != Some(document) {
        bail!("the file's document differs from the one musepi handoff --json printed");
    }
    eprintln!(
        "e2e: {} starts from a handoff document of {} lines",
        new.display(),
        document.lines().count()
    );
    Ok(first_chars(document, 160))
}
