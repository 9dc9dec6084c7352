//! The local model server and the commands the driver runs.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

use super::{MODEL_ID, Options};
use crate::run::{describe, secs};

const READY_TIMEOUT: Duration = Duration::from_mins(3);
const COMMAND_TIMEOUT: Duration = Duration::from_mins(15);

/// The local model server; stopped when dropped.
pub(super) struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    pub(super) port: u16,
    pub(super) log: PathBuf,
}

impl Server {
    pub(super) fn start(
        node: &Path,
        gguf: &Path,
        opts: &Options,
        log: &Path,
    ) -> anyhow::Result<Self> {
        let log_file =
            fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
        let mut cmd = Command::new("node");
        cmd.arg(node.join("server.mjs"))
            .arg("--model")
            .arg(gguf)
            .args(["--port", &opts.port.to_string()])
            .args(["--max-tokens", &opts.max_tokens.to_string()])
            .args(["--threads", "2", "--name", MODEL_ID, "--exit-with-stdin"])
            .current_dir(node)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot run {}", describe(&cmd)))?;
        let stdin = child.stdin.take();
        // From here on, dropping `server` stops the process.
        let mut server = Self {
            child,
            stdin,
            port: 0,
            log: log.to_owned(),
        };
        match server.wait_ready() {
            Ok(()) => Ok(server),
            Err(e) => Err(server.explain(&e)),
        }
    }

    /// Waits for the ready line and reads the port from it.
    fn wait_ready(&mut self) -> anyhow::Result<()> {
        let stdout = self.child.stdout.take().context("no stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + READY_TIMEOUT;
        let (ready, line) = loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(line) => match serde_json::from_str::<Value>(&line) {
                    Ok(v) if v["ready"] == true => break (v, line),
                    _ => eprintln!("model server: {line}"),
                },
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(status) = self.child.try_wait()? {
                        bail!("the model server exited with {status} before it was ready");
                    }
                    if Instant::now() > deadline {
                        bail!(
                            "the model server was not ready after {}",
                            secs(READY_TIMEOUT)
                        );
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    bail!("the model server closed its output before it was ready")
                }
            }
        };
        self.port = ready["port"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .with_context(|| format!("no port in the ready line `{line}`"))?;
        eprintln!(
            "e2e: model server on 127.0.0.1:{} (context {} tokens, replies capped at {} tokens), log {}",
            self.port,
            ready["contextSize"],
            ready["maxTokens"],
            self.log.display()
        );
        Ok(())
    }

    /// Closes its standard input (it exits), then kills it if it lingers.
    pub(super) fn stop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The server's per-request lines.
    pub(super) fn replies(&self) -> Vec<String> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("server: reply") || l.starts_with("server: refused"))
            .map(str::to_owned)
            .collect()
    }

    /// `e` followed by the end of the server's log.
    pub(super) fn explain(&self, e: &anyhow::Error) -> anyhow::Error {
        anyhow::anyhow!(
            "{e:#}\nthe end of the server log {}:\n{}",
            self.log.display(),
            self.tail()
        )
    }

    /// The last lines of its log.
    fn tail(&self) -> String {
        tail(&fs::read_to_string(&self.log).unwrap_or_default(), 20)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `cmd` with stdout and stderr in `<stem>.stdout` and `<stem>.stderr`,
/// killing it after [`COMMAND_TIMEOUT`]; its stdout when it succeeds.
pub(super) fn run_captured(cmd: &mut Command, stem: &Path) -> anyhow::Result<String> {
    let out_path = stem.with_extension("stdout");
    let err_path = stem.with_extension("stderr");
    cmd.stdin(Stdio::null())
        .stdout(fs::File::create(&out_path)?)
        .stderr(fs::File::create(&err_path)?);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot run {}", describe(cmd)))?;
    let status = wait_timeout(&mut child, COMMAND_TIMEOUT)?;
    let stdout = fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = fs::read_to_string(&err_path).unwrap_or_default();
    match status {
        Some(s) if s.success() => Ok(stdout),
        Some(s) => bail!(
            "{} exited with {s}\n{}{}",
            describe(cmd),
            tail(&stderr, 30),
            tail(&stdout, 10)
        ),
        None => bail!(
            "{} did not finish in {}; killed\n{}",
            describe(cmd),
            secs(COMMAND_TIMEOUT),
            tail(&stderr, 30)
        ),
    }
}

pub(super) fn wait_timeout(
    child: &mut Child,
    timeout: Duration,
) -> anyhow::Result<Option<ExitStatus>> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `cmd` with its output captured; its last lines in the error.
pub(super) fn quiet(cmd: &mut Command) -> anyhow::Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", describe(cmd)))?;
    if out.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    bail!(
        "{} exited with {}\n{}",
        describe(cmd),
        out.status,
        excerpt(&text, 12)
    )
}

/// The stdout of a command that succeeded.
pub(super) fn output(cmd: &mut Command) -> anyhow::Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot run {}", describe(cmd)))?;
    if !out.status.success() {
        bail!("{} exited with {}", describe(cmd), out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The first and the last `n` non-empty lines of `text`, each indented
/// (tools print the reason first and a log location last).
fn excerpt(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() <= 2 * n {
        return tail(text, 2 * n);
    }
    let mut out = tail(&lines[..n].join("\n"), n);
    out.push_str("  …\n");
    out.push_str(&tail(text, n));
    out
}

/// The last `n` non-empty lines of `text`, each indented.
pub(super) fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    let mut out = String::new();
    for line in &lines[start..] {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_keep_the_last_lines() {
        assert_eq!(tail("a\n\nb\nc\n", 2), "  b\n  c\n");
        assert_eq!(excerpt("a\nb\nc\nd\ne\n", 1), "  a\n  …\n  e\n");
        assert_eq!(excerpt("a\nb\n", 1), "  a\n  b\n");
    }
}
