//! `musepi serve`: the maintenance runtime over a JSON-lines protocol on
//! stdin and stdout, so an agent written in any language can keep its
//! context healthy (docs/protocol.md).
//!
//! Each request line gets exactly one response line,
//! `{"id", "ok": true, "result"}` or `{"id", "ok": false, "error": {"code",
//! "message"}}`; the events of the work it caused come before it as
//! `{"event": {"type", …}}` lines. A malformed line gets an error response
//! and the server goes on; end of input ends it with exit 0.
//!
//! While a long request (a compaction, a navigation) runs, the server keeps
//! reading: an `abort` request is answered at once and aborts it; other
//! requests wait their turn.

mod methods;
mod recall;
mod reports;
mod views;

use std::collections::VecDeque;
use std::io::{IsTerminal as _, Write as _};
use std::sync::{Arc, Mutex, PoisonError};

use musepi_runtime::hooks::{
    FromFn, RemoteCompactInput, RemoteCompactor, RemoteFailure, SummarizeError, Summarizer,
};
use musepi_runtime::{EventSink, MaintenanceEvent};
use serde_json::Value;
use tokio::io::AsyncBufReadExt as _;
use tokio::sync::mpsc;

use crate::cli::ServeArgs;
use crate::commands::runtime::settings;
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::note;
use methods::{RpcError, Server};
use musepi_protocol::runtime::{EventDoc, EventLine};
use musepi_protocol::serve::{AbortDoc, ErrorDoc, RequestLine, ResponseLine};
use musepi_providers::{
    Provider, ProviderError, install_crypto_provider, process_env, resolve_provider,
};
use musepi_runtime::DEFAULT_CONTEXT_WINDOW;

/// Where protocol lines go: one whole line per write, flushed.
#[derive(Clone)]
struct Out {
    inner: Arc<Mutex<Box<dyn std::io::Write + Send>>>,
}

impl Out {
    fn stdout() -> Self {
        Self {
            inner: Arc::new(Mutex::new(Box::new(std::io::stdout()))),
        }
    }

    /// Writes `value` as one line; integral floats print as integers
    /// (`90050`, not `90050.0`), as `--json` output and docs/protocol.md do.
    fn line(&self, mut value: Value) -> std::io::Result<()> {
        musepi_session_model::json::js_numbers(&mut value);
        let mut out = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let mut text = value.to_string();
        text.push('\n');
        out.write_all(text.as_bytes())?;
        out.flush()
    }
}

/// The `/responses/compact` of an `openai-responses` provider, shared with
/// the summarizer; `None` for any other provider.
fn native(provider: &Arc<Provider>) -> Option<Arc<dyn RemoteCompactor>> {
    let name = RemoteCompactor::provider(provider.as_responses()?);
    let compactor = FromFn::remote_compactor(
        name,
        Arc::clone(provider),
        async |provider: &Arc<Provider>, input: &RemoteCompactInput, cancel| match provider
            .remote_compactor()
        {
            Some(native) => native.compact(input, cancel).await,
            None => Err(SummarizeError::Remote {
                failure: RemoteFailure::MissingCompactionItem,
                message: Some("the provider has no native compaction".to_owned()),
            }),
        },
    );
    Some(Arc::new(compactor))
}

/// One parsed request.
struct Request {
    id: Value,
    method: String,
    params: Value,
}

/// One line of input: its text, or why it has none (it is not UTF-8).
type Line = Result<String, String>;

/// The longest request line `serve` reads, newline excluded: the cap of a
/// session line. A longer line is skipped unread and answered with a
/// `parse_error`, so a runaway client cannot make the server hold it.
const MAX_REQUEST_BYTES: usize = 64 << 20;

/// Reads one line of standard input, newline excluded; `None` at the end.
/// A line longer than `cap` bytes is consumed to its end without being kept.
async fn next_line(
    input: &mut (impl tokio::io::AsyncBufRead + Unpin),
    number: u64,
    cap: usize,
) -> Option<Line> {
    let mut bytes = Vec::new();
    let mut length = 0usize;
    let mut read_any = false;
    loop {
        let Ok(chunk) = input.fill_buf().await else {
            return None;
        };
        if chunk.is_empty() {
            if !read_any {
                return None;
            }
            break;
        }
        read_any = true;
        let newline = chunk.iter().position(|&b| b == b'\n');
        let content = newline.unwrap_or(chunk.len());
        length = length.saturating_add(content);
        if length <= cap {
            bytes.extend_from_slice(&chunk[..content]);
        } else {
            bytes = Vec::new();
        }
        input.consume(newline.map_or(content, |i| i + 1));
        if newline.is_some() {
            break;
        }
    }
    if length > cap {
        let limit = if cap >= 1 << 20 {
            format!("{} MiB", cap >> 20)
        } else {
            format!("{cap} bytes")
        };
        return Some(Err(format!(
            "line {number} is {length} bytes, longer than a request may be ({limit}); it was skipped"
        )));
    }
    if bytes.last() == Some(&b'\r') {
        bytes.pop();
    }
    Some(String::from_utf8(bytes).map_err(|e| {
        format!(
            "line {number} is not valid UTF-8 (at byte {}); a request is one JSON document in UTF-8",
            e.utf8_error().valid_up_to() + 1
        )
    }))
}

/// Reads a request line; a bad one becomes the error response to send.
fn parse(line: &Line) -> Result<Request, (Value, RpcError)> {
    let line = line
        .as_deref()
        .map_err(|e| (Value::Null, RpcError::new("parse_error", e.clone())))?;
    let value: Value = serde_json::from_str(line).map_err(|e| {
        (
            Value::Null,
            RpcError::new("parse_error", format!("not a JSON document: {e}")),
        )
    })?;
    let Value::Object(map) = &value else {
        return Err((
            Value::Null,
            RpcError::new("invalid_request", "a request is a JSON object"),
        ));
    };
    let id = map.get("id").cloned().unwrap_or(Value::Null);
    let request: RequestLine = musepi_protocol::read(value).map_err(|e| {
        let why = if e.starts_with("`method`") || e.starts_with("missing field `method`") {
            "a request needs a string `method`".to_owned()
        } else if e.starts_with("`params`") {
            "`params` must be an object".to_owned()
        } else {
            e
        };
        (id.clone(), RpcError::new("invalid_request", why))
    })?;
    Ok(Request {
        id: request.id,
        method: request.method,
        params: Value::Object(request.params.unwrap_or_default()),
    })
}

fn response(id: &Value, reply: Result<Value, RpcError>) -> Value {
    let (result, error) = match reply {
        Ok(result) => (Some(result), None),
        Err(e) => (
            None,
            Some(ErrorDoc {
                code: e.code,
                message: e.message,
            }),
        ),
    };
    musepi_protocol::value(&ResponseLine {
        id: id.clone(),
        ok: error.is_none(),
        result,
        error,
    })
}

/// Methods that may run long and can be aborted.
fn abortable(method: &str) -> bool {
    matches!(
        method,
        "afterAssistant" | "beforeRequest" | "idle" | "compact" | "navigate"
    )
}

/// Runs the command.
pub fn run(args: &ServeArgs, ctx: &Ctx) -> CmdResult {
    let settings = settings(ctx);
    install_crypto_provider();
    let flags = args.llm.flags();
    let provider = match resolve_provider(&flags, &settings.provider_settings(), &process_env) {
        Ok(p) => Some(Arc::new(p)),
        Err(ProviderError::NoProviderSelected { .. }) => None,
        Err(e) => return Err(Failure::bad_input(e)),
    };
    let remote = provider.as_ref().and_then(native);
    let summarizer = provider.map(|p| p as Arc<dyn Summarizer>);
    let hooks = crate::hooks::from_settings(&settings, ctx.quiet()).or_bad_input()?;
    // A person who typed `musepi serve` sees a silent prompt: say what it
    // waits for (a program that drives it has no terminal on stdin).
    if std::io::stdin().is_terminal() && !ctx.quiet() {
        note(
            false,
            "musepi serve: speaks JSON lines on stdin and stdout for an agent (docs/protocol.md); ctrl+d ends it",
        );
    }
    let out = Out::stdout();
    let sink_out = out.clone();
    let events: EventSink = Arc::new(move |e: MaintenanceEvent| {
        // A client that stopped reading ends the server at the next response.
        if let Some(event) = EventDoc::of(&e) {
            let _ = sink_out.line(musepi_protocol::value(&EventLine { event }));
        }
    });
    let server = Server {
        settings,
        summarizer,
        remote,
        hooks,
        ctx: ctx.clone(),
        context_window: args.context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW),
        events,
        session: None,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .or_failed()?;
    let result = rt.block_on(serve(server, &out));
    // A read of stdin cannot be cancelled: do not wait for it.
    rt.shutdown_background();
    result.map_err(Failure::failed)?;
    Ok(Exit::Ok)
}

/// The request loop: until end of input, or until stdout is gone.
async fn serve(mut server: Server, out: &Out) -> std::io::Result<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Line>();
    tokio::spawn(async move {
        let mut input = tokio::io::BufReader::new(tokio::io::stdin());
        let mut number = 0;
        loop {
            number += 1;
            let Some(line) = next_line(&mut input, number, MAX_REQUEST_BYTES).await else {
                break;
            };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut waiting: VecDeque<Line> = VecDeque::new();
    loop {
        let line = match waiting.pop_front() {
            Some(l) => l,
            None => match rx.recv().await {
                Some(l) => l,
                None => return Ok(()),
            },
        };
        if line.as_deref().is_ok_and(|l| l.trim().is_empty()) {
            continue;
        }
        let request = match parse(&line) {
            Ok(r) => r,
            Err((id, e)) => {
                out.line(response(&id, Err(e)))?;
                continue;
            }
        };
        if !abortable(&request.method) {
            let reply = server.call(&request.method, &request.params).await;
            out.line(response(&request.id, reply))?;
            continue;
        }
        let abort = server.abort_handle();
        let call = server.call(&request.method, &request.params);
        tokio::pin!(call);
        let reply = loop {
            tokio::select! {
                reply = &mut call => break reply,
                Some(next) = rx.recv() => match parse(&next) {
                    Ok(r) if r.method == "abort" => {
                        let aborted = abort.as_ref().is_some_and(musepi_runtime::AbortHandle::abort);
                        let doc = musepi_protocol::value(&AbortDoc { aborted });
                        out.line(response(&r.id, Ok(doc)))?;
                    }
                    _ => waiting.push_back(next),
                },
            }
        };
        out.line(response(&request.id, reply))?;
    }
}

#[cfg(test)]
mod tests {
    use super::next_line;

    async fn lines(input: &[u8], cap: usize) -> Vec<Result<String, String>> {
        let mut reader = tokio::io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        let mut number = 0;
        while let Some(line) = {
            number += 1;
            next_line(&mut reader, number, cap).await
        } {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn a_line_over_the_cap_is_skipped_with_an_error_and_the_next_line_is_read() {
        let got = lines(b"{\"id\":1}\nabcdefghijklmnop\r\n{\"id\":3}", 10).await;
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0], Ok("{\"id\":1}".to_owned()));
        let error = got[1].clone().unwrap_err();
        assert!(
            error.starts_with("line 2 is 17 bytes, longer than a request may be (10 bytes)"),
            "{error}"
        );
        assert_eq!(got[2], Ok("{\"id\":3}".to_owned()));
    }

    #[tokio::test]
    async fn a_line_at_the_cap_is_kept_whole_across_buffer_refills() {
        let got = lines(b"0123456789\n0123456789", 10).await;
        assert_eq!(
            got,
            vec![Ok("0123456789".to_owned()), Ok("0123456789".to_owned())]
        );
    }
}
