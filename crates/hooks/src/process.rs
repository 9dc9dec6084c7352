//! Hook processes: a command from the settings that handles one event.
//!
//! The protocol (docs/hooks.md): the event is written as one JSON document
//! on the hook's stdin, which is then closed; the hook answers with one JSON
//! document on stdout (empty stdout: no answer) and exits.
//!
//! - exit 0: success; a non-empty stdout is parsed as the event's result;
//! - exit 2: for `session_before_compact` and `session_before_tree`, cancel
//!   the operation (stderr says why); for the other events a failure;
//! - any other status, death by a signal, a timeout, or stdout that is not
//!   a valid result: the hook failed. The failure is reported and the
//!   answer ignored, unless the hook is fail-closed (`onFailure: "cancel"`):
//!   then the operation is cancelled.
//!
//! Each hook runs in its own process group. A timeout (default
//! [`DEFAULT_TIMEOUT`]) or the cancellation token kills the whole group
//! with `SIGKILL`, so a hook's own children cannot outlive it. The hook
//! gets a cleared environment: only [`BASE_ENV`], `MUSEPI_EVENT`,
//! `MUSEPI_SESSION_FILE` (when the session has a file) and the variables
//! its settings name, so API keys never reach it unless asked for. Its
//! stderr is forwarded line by line, prefixed with the hook's name
//! ([`StderrMode`]), and its last lines are kept for failure reports.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt as _;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::AsyncWriteExt as _;
use tokio_util::sync::CancellationToken;

use crate::events::{BeforeCompactResult, BeforeTreeResult, CompactingResult, names};
use crate::runner::HookError;

mod handler;
mod pipes;

use pipes::{GroupGuard, forward_stderr, join_tail, read_capped};

/// How long a hook may run when its settings do not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a hook may print on stdout; more is an invalid answer.
pub const MAX_STDOUT: usize = 4 * 1024 * 1024;
/// The exit status with which a `session_before_*` hook cancels the operation.
pub const EXIT_CANCEL: i32 = 2;
/// The variables every hook gets from our environment (when they are set).
pub const BASE_ENV: [&str; 5] = ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR"];

/// Characters of stdout quoted in an invalid-answer report.
const QUOTE_CHARS: usize = 80;

/// A hook's settings that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookConfigError {
    /// The event name is not one of [`names::ALL`].
    #[error("unknown hook event `{event}`: expected one of {}", names::ALL.join(", "))]
    UnknownEvent {
        /// The name that was given.
        event: String,
    },
    /// The command has no program.
    #[error("the hook command for `{event}` is empty: give the program and its arguments")]
    EmptyCommand {
        /// The event.
        event: String,
    },
}

/// Receives a hook's stderr: the hook's name and one line without its newline.
pub type StderrSink = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// Where a hook's stderr goes.
#[derive(Clone, Default)]
pub enum StderrMode {
    /// To our stderr, line by line, as `hook NAME: LINE`.
    #[default]
    Forward,
    /// Nowhere; the last lines still appear in failure reports.
    Capture,
    /// To a function, line by line (the line without its newline).
    Callback(StderrSink),
}

impl std::fmt::Debug for StderrMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Forward => "Forward",
            Self::Capture => "Capture",
            Self::Callback(_) => "Callback",
        })
    }
}

/// What one run of a hook process did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The exit status, or the signal that killed it, negated.
    pub status: i32,
    /// Everything it printed on stdout (at most [`MAX_STDOUT`] bytes).
    pub stdout: Vec<u8>,
    /// Whether it printed more than [`MAX_STDOUT`] bytes.
    pub stdout_overflow: bool,
    /// The last lines it printed on stderr.
    pub stderr_tail: String,
    /// How long it ran.
    pub duration: Duration,
}

/// What a hook's run means, once its status and stdout are read.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// It succeeded and said nothing (empty stdout, or a notification).
    Empty,
    /// It answered: the result as musepi understood it.
    Answer(Value),
    /// It cancelled the operation (exit 2 or `"cancel": true`).
    Cancel {
        /// Its stderr, the reason.
        reason: String,
    },
}

/// A hook command for one event (see the module docs for the protocol).
#[derive(Debug, Clone)]
pub struct ProcessHook {
    event: &'static str,
    command: Vec<String>,
    name: String,
    timeout: Duration,
    env: Vec<String>,
    fail_closed: bool,
    stderr: StderrMode,
    session_file: Option<String>,
}

impl ProcessHook {
    /// A hook running `command` (the program, then its arguments) for `event`.
    pub fn new(event: &str, command: Vec<String>) -> Result<Self, HookConfigError> {
        let event = names::ALL
            .into_iter()
            .find(|n| *n == event)
            .ok_or_else(|| HookConfigError::UnknownEvent {
                event: event.to_owned(),
            })?;
        if command.first().is_none_or(String::is_empty) {
            return Err(HookConfigError::EmptyCommand {
                event: event.to_owned(),
            });
        }
        let name = short_name(&command);
        Ok(Self {
            event,
            command,
            name,
            timeout: DEFAULT_TIMEOUT,
            env: Vec::new(),
            fail_closed: false,
            stderr: StderrMode::default(),
            session_file: None,
        })
    }

    /// How long it may run before its process group is killed.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Variables copied from our environment (when set) besides [`BASE_ENV`].
    #[must_use]
    pub fn pass_env(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.env.extend(names);
        self
    }

    /// Whether its failure cancels the operation (`onFailure: "cancel"`).
    #[must_use]
    pub fn with_fail_closed(mut self, fail_closed: bool) -> Self {
        self.fail_closed = fail_closed;
        self
    }

    /// Where its stderr goes.
    #[must_use]
    pub fn stderr(mut self, mode: StderrMode) -> Self {
        self.stderr = mode;
        self
    }

    /// `MUSEPI_SESSION_FILE` for events whose payload names no file.
    #[must_use]
    pub fn session_file(mut self, file: Option<String>) -> Self {
        self.session_file = file;
        self
    }

    /// A different name for messages (default: the command line, shortened).
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The event it handles.
    pub fn event(&self) -> &'static str {
        self.event
    }

    /// The program and its arguments.
    pub fn command(&self) -> &[String] {
        &self.command
    }

    /// Its time limit.
    pub fn time_limit(&self) -> Duration {
        self.timeout
    }

    /// The environment it gets: [`BASE_ENV`] and its named variables as
    /// far as they are set here, then `MUSEPI_EVENT` and `MUSEPI_SESSION_FILE`.
    pub fn environment(&self, session_file: Option<&str>) -> Vec<(String, OsString)> {
        let mut vars: Vec<(String, OsString)> = Vec::new();
        for name in BASE_ENV
            .iter()
            .copied()
            .chain(self.env.iter().map(String::as_str))
        {
            if vars.iter().any(|(n, _)| n == name) {
                continue;
            }
            if let Some(value) = std::env::var_os(name) {
                vars.push((name.to_owned(), value));
            }
        }
        vars.retain(|(n, _)| n != "MUSEPI_EVENT" && n != "MUSEPI_SESSION_FILE");
        vars.push(("MUSEPI_EVENT".to_owned(), self.event.into()));
        if let Some(file) = session_file.or(self.session_file.as_deref()) {
            vars.push(("MUSEPI_SESSION_FILE".to_owned(), file.into()));
        }
        vars
    }

    /// Runs the process with `payload` on stdin: its status, stdout and
    /// stderr. A timeout, the cancellation token or a failed start are
    /// errors; an exit status of any kind is not (see [`Self::interpret`]).
    pub async fn run(
        &self,
        payload: &[u8],
        session_file: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Invocation, HookError> {
        if cancel.is_cancelled() {
            return Err(HookError::Failed("cancelled before it started".to_owned()));
        }
        let started = Instant::now();
        let mut command = tokio::process::Command::new(&self.command[0]);
        command
            .args(&self.command[1..])
            .env_clear()
            .envs(self.environment(session_file))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let mut child = spawn_when_not_busy(&mut command, BUSY_RETRY, cancel)
            .await
            .map_err(|e| HookError::Spawn(format!("{}: {e}", self.command[0])))?;
        let group = GroupGuard::new(child.id());
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let ending = {
            let io = async {
                let write = async move {
                    if let Some(mut stdin) = stdin {
                        // A hook may exit without reading its stdin: a broken pipe is fine.
                        let _ = stdin.write_all(payload).await;
                        let _ = stdin.shutdown().await;
                    }
                };
                let ((), out, ()) = tokio::join!(
                    write,
                    read_capped(stdout),
                    forward_stderr(stderr, &self.name, &self.stderr, &tail)
                );
                (out, child.wait().await)
            };
            tokio::select! {
                done = io => Ending::Done(done),
                () = tokio::time::sleep(self.timeout) => Ending::Timeout,
                () = cancel.cancelled() => Ending::Cancelled,
            }
        };
        let ((stdout, stdout_overflow), status) = match ending {
            Ending::Done(done) => done,
            Ending::Timeout | Ending::Cancelled => {
                group.kill();
                let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
                return Err(if matches!(ending, Ending::Timeout) {
                    HookError::Timeout {
                        ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
                    }
                } else {
                    HookError::Failed("cancelled; its process group was killed".to_owned())
                });
            }
        };
        group.disarm();
        let status = status.map_err(|e| HookError::Spawn(format!("{}: {e}", self.command[0])))?;
        let status = status
            .code()
            .or_else(|| status.signal().map(|s| -s))
            .unwrap_or(-1);
        Ok(Invocation {
            status,
            stdout,
            stdout_overflow,
            stderr_tail: join_tail(&tail),
            duration: started.elapsed(),
        })
    }

    /// What a run means for this hook's event: an answer (the result type
    /// of the event, re-serialized as musepi understood it), a cancel, or a
    /// failure.
    pub fn interpret(&self, run: &Invocation) -> Result<Reply, HookError> {
        match self.event {
            names::BEFORE_COMPACT => Ok(match self.decode::<BeforeCompactResult>(run)? {
                Decoded::Cancel(reason) => Reply::Cancel { reason },
                Decoded::Answer(Some(r)) if r.cancel => Reply::Cancel {
                    reason: run.stderr_tail.clone(),
                },
                Decoded::Answer(r) => to_reply(r.filter(|r| !r.is_empty()).as_ref()),
            }),
            names::BEFORE_TREE => Ok(match self.decode::<BeforeTreeResult>(run)? {
                Decoded::Cancel(reason) => Reply::Cancel { reason },
                Decoded::Answer(Some(r)) if r.cancel => Reply::Cancel {
                    reason: run.stderr_tail.clone(),
                },
                Decoded::Answer(r) => to_reply(r.filter(|r| !r.is_empty()).as_ref()),
            }),
            names::COMPACTING => match self.decode::<CompactingResult>(run)? {
                Decoded::Answer(r) => Ok(to_reply(r.filter(|r| !r.is_empty()).as_ref())),
                Decoded::Cancel(_) => Err(exit_error(run)),
            },
            _ if run.status == 0 => Ok(Reply::Empty),
            _ => Err(exit_error(run)),
        }
    }

    /// Reads a run's stdout as `T` after its status.
    fn decode<T: DeserializeOwned>(&self, run: &Invocation) -> Result<Decoded<T>, HookError> {
        let cancellable = matches!(self.event, names::BEFORE_COMPACT | names::BEFORE_TREE);
        match run.status {
            0 => {}
            EXIT_CANCEL if cancellable => return Ok(Decoded::Cancel(run.stderr_tail.clone())),
            _ => return Err(exit_error(run)),
        }
        if run.stdout_overflow {
            return Err(HookError::InvalidAnswer(format!(
                "more than {} MiB on stdout",
                MAX_STDOUT / (1024 * 1024)
            )));
        }
        let text = String::from_utf8_lossy(&run.stdout);
        if text.trim().is_empty() {
            return Ok(Decoded::Answer(None));
        }
        serde_json::from_str::<T>(&text)
            .map(|r| Decoded::Answer(Some(r)))
            .map_err(|e| {
                HookError::InvalidAnswer(format!(
                    "stdout is not a {} result ({e}): {}",
                    self.event,
                    quote(&text)
                ))
            })
    }

    /// Serializes `event`, runs the hook and reads its answer as `T`.
    async fn call<E: Serialize, T: DeserializeOwned>(
        &self,
        event: &E,
        session_file: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Decoded<T>, HookError> {
        let run = self.run(&payload(event)?, session_file, cancel).await?;
        self.decode(&run)
    }
}

enum Ending<T> {
    Done(T),
    Timeout,
    Cancelled,
}

enum Decoded<T> {
    Answer(Option<T>),
    Cancel(String),
}

/// The event as the hook reads it: one line of JSON and a newline.
pub fn payload<E: Serialize>(event: &E) -> Result<Vec<u8>, HookError> {
    let mut value = serde_json::to_value(event)
        .map_err(|e| HookError::Failed(format!("cannot serialize the event: {e}")))?;
    musepi_session_model::json::js_numbers(&mut value);
    let mut bytes = serde_json::to_vec(&value)
        .map_err(|e| HookError::Failed(format!("cannot serialize the event: {e}")))?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn to_reply<T: Serialize>(result: Option<&T>) -> Reply {
    match result.map(serde_json::to_value) {
        Some(Ok(v)) => Reply::Answer(v),
        _ => Reply::Empty,
    }
}

fn exit_error(run: &Invocation) -> HookError {
    HookError::Exit {
        status: run.status,
        stderr: run.stderr_tail.clone(),
    }
}

/// The command line, at most 60 characters.
fn short_name(command: &[String]) -> String {
    let line = command.join(" ");
    if line.chars().count() <= 60 {
        line
    } else {
        let mut s: String = line.chars().take(59).collect();
        s.push('…');
        s
    }
}

/// The first characters of `text`, quoted.
fn quote(text: &str) -> String {
    let head: String = text.chars().take(QUOTE_CHARS).collect();
    if head.len() < text.len() {
        format!("{head:?}…")
    } else {
        format!("{head:?}")
    }
}

/// How long a start refused because the program is open for writing is
/// retried: the first wait, and the waits' sum at most.
const BUSY_RETRY: (Duration, Duration) = (Duration::from_millis(5), Duration::from_secs(2));

/// Starts `command`, retrying while the system refuses with "text file
/// busy": the program is still open for writing somewhere (a tool that just
/// wrote the hook script, or a process that forked while it was being
/// written and has not yet run its own program). `retry` is the first wait
/// and the waits' sum at most ([`BUSY_RETRY`]).
async fn spawn_when_not_busy(
    command: &mut tokio::process::Command,
    retry: (Duration, Duration),
    cancel: &CancellationToken,
) -> std::io::Result<tokio::process::Child> {
    let (mut wait, most) = retry;
    let mut waited = Duration::ZERO;
    loop {
        match command.spawn() {
            Err(e)
                if e.kind() == std::io::ErrorKind::ExecutableFileBusy
                    && waited < most
                    && !cancel.is_cancelled() =>
            {
                tokio::time::sleep(wait).await;
                waited += wait;
                wait = (wait * 2).min(most.saturating_sub(waited).max(Duration::from_millis(1)));
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    use std::time::Duration;

    use tokio_util::sync::CancellationToken;

    use super::spawn_when_not_busy;

    #[tokio::test]
    async fn a_hook_whose_script_is_still_open_for_writing_starts_once_it_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hook.sh");
        let mut writer = std::fs::File::create(&path).unwrap();
        writer.write_all(b"#!/bin/sh\nexit 7\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        // While this process holds the script open for writing, the system
        // refuses to run it.
        let refused = std::process::Command::new(&path).spawn().unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::ExecutableFileBusy);
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(writer);
        });
        let mut command = tokio::process::Command::new(&path);
        // Retried for as long as the closer takes, however busy the machine.
        let retry = (Duration::from_millis(5), Duration::from_hours(1));
        let mut child = spawn_when_not_busy(&mut command, retry, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(child.wait().await.unwrap().code(), Some(7));
        closer.join().unwrap();
    }
}
