//! A scripted HTTP server on 127.0.0.1 that records every request: the one
//! server provider and command tests talk to instead of a model.
//!
//! It answers either from a queue of [`Reply`]s, in order and then with 599
//! ([`Server::start`]), or with a function of the request
//! ([`Server::answering`]). Every request is recorded as a [`Seen`].
//! An answer may wait for a [`Gate`] the test opens, so what a client
//! shows while it waits is seen however slow the machine is.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

/// How a scripted body is sent.
#[derive(Debug, Clone)]
pub enum Payload {
    /// These bytes.
    Text(String),
    /// 64 KiB chunks of `x` without end, until the client stops reading.
    Endless,
    /// The first half of these bytes, then a broken connection.
    Cut(String),
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Payload,
    /// How long to wait before answering.
    pub delay: Duration,
    /// The gate the answer waits for, after the delay.
    pub gate: Option<Gate>,
}

/// Holds back the answers made with [`Reply::held`] until the test lets
/// them go, a given number or all from now on.
#[derive(Debug, Clone)]
pub struct Gate(Arc<tokio::sync::Semaphore>);

impl Gate {
    /// A gate holding every answer back.
    pub fn new() -> Self {
        Self(Arc::new(tokio::sync::Semaphore::new(0)))
    }

    /// Lets `n` more answers go.
    pub fn release(&self, n: usize) {
        self.0.add_permits(n);
    }

    /// Lets every answer go, now and from now on.
    pub fn open(&self) {
        self.0.close();
    }

    async fn pass(&self) {
        // A closed gate (an error) lets everything through.
        if let Ok(permit) = self.0.acquire().await {
            permit.forget();
        }
    }
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl Reply {
    /// A JSON answer.
    pub fn json(status: u16, body: &Value) -> Self {
        Self::raw(status, &body.to_string())
    }

    /// A raw answer (labelled as JSON).
    pub fn raw(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type", "application/json".to_owned())],
            body: Payload::Text(body.to_owned()),
            delay: Duration::ZERO,
            gate: None,
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

    /// Answered once `gate` lets it go.
    #[must_use]
    pub fn held(mut self, gate: &Gate) -> Self {
        self.gate = Some(gate.clone());
        self
    }
}

/// A chat-completions answer with `text` and `finish_reason`, and usage.
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

/// How the server picks its answers.
type Responder = dyn Fn(&Seen) -> Reply + Send + Sync;

struct Script {
    replies: Mutex<VecDeque<Reply>>,
    responder: Option<Box<Responder>>,
    seen: Mutex<Vec<Seen>>,
}

/// A recording server on 127.0.0.1.
pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    script: Arc<Script>,
    /// The runtime of a server started outside one.
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts on the current tokio runtime; it answers `replies` in order,
    /// then 599.
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::serve(Script::queue(replies)).await
    }

    /// Starts on the current tokio runtime, answering each request with
    /// `respond`.
    pub async fn answering(respond: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        Self::serve(Script::responder(Box::new(respond))).await
    }

    /// [`Server::start`] on a runtime of its own, for tests that are not async.
    pub fn start_blocking(replies: Vec<Reply>) -> Self {
        Self::blocking(Script::queue(replies))
    }

    /// [`Server::answering`] on a runtime of its own.
    pub fn answering_blocking(respond: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        Self::blocking(Script::responder(Box::new(respond)))
    }

    fn blocking(script: Script) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the test server");
        let mut server = runtime.block_on(Self::serve(script));
        server.runtime = Some(runtime);
        server
    }

    async fn serve(script: Script) -> Self {
        let script = Arc::new(script);
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        let url = format!(
            "http://{}",
            listener.local_addr().expect("the server's address")
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            url,
            script,
            runtime: None,
        }
    }

    /// The requests received so far.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.script.seen).clone()
    }

    /// The bodies of the requests received so far.
    pub fn bodies(&self) -> Vec<Value> {
        lock(&self.script.seen)
            .iter()
            .map(|s| s.body.clone())
            .collect()
    }

    /// How many requests arrived so far.
    pub fn count(&self) -> usize {
        lock(&self.script.seen).len()
    }

    /// Waits until `n` requests have arrived.
    pub async fn wait_for_requests(&self, n: usize) {
        while self.count() < n {
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

impl Script {
    fn queue(replies: Vec<Reply>) -> Self {
        Self {
            replies: Mutex::new(replies.into()),
            responder: None,
            seen: Mutex::default(),
        }
    }

    fn responder(respond: Box<Responder>) -> Self {
        Self {
            replies: Mutex::default(),
            responder: Some(respond),
            seen: Mutex::default(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn answer(State(script): State<Arc<Script>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let seen = Seen {
        path: parts.uri.path().to_owned(),
        headers: parts.headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    };
    let reply = match &script.responder {
        Some(respond) => respond(&seen),
        None => lock(&script.replies)
            .pop_front()
            .unwrap_or_else(|| Reply::raw(599, "no reply scripted")),
    };
    lock(&script.seen).push(seen);
    tokio::time::sleep(reply.delay).await;
    if let Some(gate) = &reply.gate {
        gate.pass().await;
    }
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
    response
        .body(body)
        .unwrap_or_else(|_| Response::new(Body::from("bad scripted reply")))
}
