//! The `context` and `plan` methods of `musepi serve`, timed through the
//! protocol: a `musepi serve` process opens the session the turns left,
//! then answers each method [`CALLS`] times at the open session's leaf,
//! each timed from writing the request line to reading its answer's line.
//!
//! The baseline of each is measured in the same run on the answer it
//! gave: its JSON text parsed into a document and written out again (the
//! least any server costs that builds that document and writes it, and any
//! client that reads it), so the ratio is what computing the answer adds.
//! A `status` request, whose answer is a few hundred bytes, times what any
//! request costs through the protocol (the pipes, the server's loop).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use crate::BoxError;

/// Calls of each method; the median is reported.
const CALLS: usize = 7;

/// The middle of `v` (the upper one of an even count).
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One method, timed.
pub(crate) struct Timed {
    /// Median of the calls, milliseconds.
    pub(crate) ms: f64,
    /// Median of the baseline over the same answer, milliseconds.
    pub(crate) floor_ms: f64,
    /// The answer's line, in bytes.
    pub(crate) bytes: usize,
}

impl Timed {
    pub(crate) fn to_json(&self) -> Value {
        json!({"ms": self.ms, "floorMs": self.floor_ms, "answerBytes": self.bytes})
    }
}

/// A `musepi serve` process and its protocol lines.
struct Serve {
    child: Child,
    input: Option<ChildStdin>,
    output: BufReader<ChildStdout>,
    next_id: u64,
}

impl Serve {
    fn start() -> Result<Self, BoxError> {
        let mut child = Command::new(crate::process::musepi()?)
            .args(["serve", "--quiet"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let input = child.stdin.take();
        let output = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Self {
            child,
            input,
            output,
            next_id: 0,
        })
    }

    /// Sends one request and reads up to its answer's line; the answer's
    /// text and the time from the write to the read, in milliseconds.
    fn call(&mut self, method: &str, params: &Value) -> Result<(String, f64), BoxError> {
        self.next_id += 1;
        let mut request =
            json!({"id": self.next_id, "method": method, "params": params}).to_string();
        request.push('\n');
        let input = self.input.as_mut().ok_or("serve's input is closed")?;
        let mut line = String::new();
        let t = Instant::now();
        input.write_all(request.as_bytes())?;
        input.flush()?;
        // Events the request caused come before its answer.
        loop {
            line.clear();
            if self.output.read_line(&mut line)? == 0 {
                return Err(format!("musepi serve ended before answering `{method}`").into());
            }
            if !line.starts_with("{\"event\"") {
                break;
            }
        }
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let answer: Value = serde_json::from_str(&line)?;
        if answer["id"] != json!(self.next_id) || answer["ok"] != json!(true) {
            return Err(
                format!("musepi serve answered `{method}` with {}", line.trim_end()).into(),
            );
        }
        Ok((line, ms))
    }

    /// `method` [`CALLS`] times, with its baseline over the last answer.
    fn timed(&mut self, method: &str, params: &Value) -> Result<Timed, BoxError> {
        let mut times = Vec::with_capacity(CALLS);
        let mut answer = String::new();
        for _ in 0..CALLS {
            let (line, ms) = self.call(method, params)?;
            times.push(ms);
            answer = line;
        }
        let mut floor = Vec::with_capacity(CALLS);
        for _ in 0..CALLS {
            floor.push(parse_and_write(&answer)?);
        }
        Ok(Timed {
            ms: median(times),
            floor_ms: median(floor),
            bytes: answer.len(),
        })
    }

    fn finish(mut self) -> Result<(), BoxError> {
        self.call("close", &json!({}))?;
        drop(self.input.take());
        let status = self.child.wait()?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("musepi serve exited with {status}").into())
        }
    }
}

/// The baseline: `text` parsed into a JSON document and written out again
/// as one line; milliseconds.
fn parse_and_write(text: &str) -> Result<f64, BoxError> {
    let t = Instant::now();
    let doc: Value = serde_json::from_str(text)?;
    let mut out = serde_json::to_vec(&doc)?;
    out.push(b'\n');
    let ms = t.elapsed().as_secs_f64() * 1e3;
    std::hint::black_box(out);
    Ok(ms)
}

/// The methods timed through `musepi serve`.
pub(crate) struct Methods {
    pub(crate) status: Timed,
    pub(crate) context: Timed,
    pub(crate) plan: Timed,
}

/// `status`, `context` and `plan` at the leaf of `path`, through `musepi
/// serve`.
pub(crate) fn context_and_plan(path: &Path) -> Result<Methods, BoxError> {
    let mut serve = Serve::start()?;
    serve.call("open", &json!({"path": path}))?;
    let status = serve.timed("status", &json!({}))?;
    let context = serve.timed("context", &json!({}))?;
    let plan = serve.timed("plan", &json!({}))?;
    serve.finish()?;
    Ok(Methods {
        status,
        context,
        plan,
    })
}
