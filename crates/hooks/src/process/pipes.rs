//! The plumbing of a hook run: the process group guard, the capped stdout
//! reader, and the stderr forwarder that keeps the last lines.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::io::{AsyncRead, AsyncReadExt as _};

use super::{MAX_STDOUT, StderrMode};

/// Lines of stderr kept for failure reports.
const TAIL_LINES: usize = 10;
/// Characters of one kept stderr line.
const TAIL_LINE_CHARS: usize = 300;
/// A stderr "line" longer than this is forwarded in pieces.
const MAX_LINE_BYTES: usize = 16 * 1024;

/// Kills the process group on drop (or on demand) until disarmed.
pub(super) struct GroupGuard(Option<rustix::process::Pid>);

impl GroupGuard {
    pub(super) fn new(pid: Option<u32>) -> Self {
        Self(
            pid.and_then(|p| i32::try_from(p).ok())
                .and_then(rustix::process::Pid::from_raw),
        )
    }

    pub(super) fn kill(&self) {
        if let Some(pgid) = self.0 {
            // The group may be gone already; nothing to do then.
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
    }

    pub(super) fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads everything, keeping at most [`MAX_STDOUT`] bytes (the rest is
/// drained so the hook never blocks on a full pipe).
pub(super) async fn read_capped(pipe: Option<impl AsyncRead + Unpin>) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut overflow = false;
    let Some(mut pipe) = pipe else {
        return (kept, overflow);
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_STDOUT - kept.len();
                if n > room {
                    overflow = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    (kept, overflow)
}

/// Forwards stderr line by line and keeps its last lines in `tail`.
pub(super) async fn forward_stderr(
    pipe: Option<impl AsyncRead + Unpin>,
    name: &str,
    mode: &StderrMode,
    tail: &Mutex<VecDeque<String>>,
) {
    let Some(mut pipe) = pipe else { return };
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 8 * 1024];
    let emit = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        let line = text.trim_end_matches(['\n', '\r']);
        match mode {
            StderrMode::Forward => eprintln!("hook {name}: {line}"),
            StderrMode::Capture => {}
            StderrMode::Callback(f) => f(name, line),
        }
        if let Ok(mut t) = tail.lock() {
            if t.len() == TAIL_LINES {
                t.pop_front();
            }
            t.push_back(line.chars().take(TAIL_LINE_CHARS).collect());
        }
    };
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            emit(&line);
        }
        if pending.len() > MAX_LINE_BYTES {
            emit(&std::mem::take(&mut pending));
        }
    }
    if !pending.is_empty() {
        emit(&pending);
    }
}

pub(super) fn join_tail(tail: &Mutex<VecDeque<String>>) -> String {
    tail.lock()
        .map(|t| {
            let lines: Vec<&str> = t
                .iter()
                .map(String::as_str)
                .filter(|l| !l.trim().is_empty())
                .collect();
            lines.join("\n")
        })
        .unwrap_or_default()
}
