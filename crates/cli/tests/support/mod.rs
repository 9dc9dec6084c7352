//! What the process tests share: a scripted HTTP server on 127.0.0.1 and
//! running the `musepi` binary with a clean environment.

// Each test file uses a part of this module.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

/// The binary under test.
pub const MUSEPI: &str = env!("CARGO_BIN_EXE_musepi");

/// How a scripted body is sent.
#[derive(Clone)]
pub enum Payload {
    /// These bytes.
    Text(String),
    /// 64 KiB chunks of `x` without end, until the client stops reading.
    Endless,
    /// The first half of these bytes, then a broken connection.
    Cut(String),
}

/// One scripted answer.
#[derive(Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Payload,
    /// How long to wait before answering.
    pub delay: Duration,
}

impl Reply {
    /// A JSON answer.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::raw(status, &body.to_string())
    }

    /// A raw answer.
    pub fn raw(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type", "application/json".to_owned())],
            body: Payload::Text(body.to_owned()),
            delay: Duration::ZERO,
        }
    }

    /// A 200 whose body never ends.
    pub fn endless() -> Self {
        Self {
            body: Payload::Endless,
            ..Self::raw(200, "")
        }
    }

    /// The same answer, cut off halfway by a broken connection.
    #[must_use]
    pub fn cut(mut self) -> Self {
        if let Payload::Text(text) = self.body {
            self.body = Payload::Cut(text);
        }
        self
    }

    /// A redirect to `location`.
    pub fn redirect(status: u16, location: &str) -> Self {
        Self::raw(status, "").header("location", location)
    }

    /// With one more header.
    #[must_use]
    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }

    /// Answered after `delay`.
    #[must_use]
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// A chat-completions answer with `text` and `finish_reason`.
pub fn chat(text: &str, finish_reason: &str) -> Reply {
    Reply::json(
        200,
        &json!({
            "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        }),
    )
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The path.
    pub path: String,
    /// The headers.
    pub headers: HeaderMap,
    /// The body as JSON (`null` when it is not JSON).
    pub body: Value,
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
}

/// A scripted server on 127.0.0.1; it answers the scripted replies in
/// order, then 599.
pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    script: Arc<Script>,
    /// The runtime of a server started with [`Server::start_blocking`].
    runtime: Option<tokio::runtime::Runtime>,
}

impl Server {
    /// Starts on the current tokio runtime.
    pub async fn start(replies: Vec<Reply>) -> Self {
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into()),
            seen: Mutex::default(),
        });
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            url,
            script,
            runtime: None,
        }
    }

    /// Starts on a runtime of its own, for tests that are not async.
    pub fn start_blocking(replies: Vec<Reply>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let mut server = runtime.block_on(Self::start(replies));
        server.runtime = Some(runtime);
        server
    }

    /// The requests received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.script.seen.lock().unwrap().clone()
    }

    /// Waits until `n` requests have arrived.
    pub async fn wait_for_requests(&self, n: usize) {
        while self.script.seen.lock().unwrap().len() < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

async fn answer(State(script): State<Arc<Script>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    script.seen.lock().unwrap().push(Seen {
        path: parts.uri.path().to_owned(),
        headers: parts.headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    });
    let reply = script.replies.lock().unwrap().pop_front();
    let reply = reply.unwrap_or_else(|| Reply::raw(599, "no reply scripted"));
    tokio::time::sleep(reply.delay).await;
    let mut response = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        response = response.header(*name, value);
    }
    let body = match reply.body {
        Payload::Text(text) => Body::from(text),
        Payload::Cut(text) => {
            let half = Bytes::from(text.as_bytes()[..text.len() / 2].to_vec());
            let broken = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "cut");
            Body::from_stream(futures_util::stream::iter([Ok(half), Err(broken)]))
        }
        Payload::Endless => {
            let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
            Body::from_stream(futures_util::stream::repeat_with(move || {
                Ok::<_, std::io::Error>(chunk.clone())
            }))
        }
    };
    response.body(body).unwrap()
}

/// Runs `musepi` with `args` in `cwd`, with no API key in the environment
/// and `home` as the home folder; `stdin` is written to its standard input.
pub fn musepi_in(cwd: &Path, home: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    musepi_with_env(cwd, home, args, stdin, &[])
}

/// [`musepi_in`] with these environment variables set as well.
pub fn musepi_with_env(
    cwd: &Path,
    home: &Path,
    args: &[&str],
    stdin: Option<&[u8]>,
    env: &[(&str, &str)],
) -> Output {
    use std::io::Write as _;
    let mut child = Command::new(MUSEPI)
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("MUSEPI_API_KEY")
        .env_remove("NO_COLOR")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        // A command that refuses before reading closes its end early.
        let _ = input.write_all(bytes);
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// The exit code.
pub fn code(o: &Output) -> i32 {
    o.status.code().expect("an exit code")
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A path as `&str`.
pub fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The example session copied into `dir` as `name`.
pub fn example_session(dir: &Path, name: &str) -> PathBuf {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions/todo-refactor.jsonl");
    let dst = dir.join(name);
    std::fs::copy(src, &dst).unwrap();
    settle(&dst);
    dst
}

/// Makes a session the test just wrote look idle to musepi's live-session
/// check, as a file nobody has written for a minute: its modification time
/// is set a minute into the past. The check itself is tested on files left
/// as they are.
pub fn settle(path: &Path) {
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open the session to settle it");
    file.set_modified(SystemTime::now() - Duration::from_mins(1))
        .expect("set the modification time");
}
