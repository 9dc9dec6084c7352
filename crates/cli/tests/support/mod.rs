//! What the process tests share: running the `musepi` binary with a clean
//! environment, and (from the workspace's test support) the scripted HTTP
//! server on 127.0.0.1.

// Each test file uses a part of this module.
#![allow(dead_code, unused_imports, unreachable_pub, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

pub use musepi_test_support::http::{Gate, Payload, Reply, Seen, Server, chat};

/// The binary under test.
pub const MUSEPI: &str = env!("CARGO_BIN_EXE_musepi");

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

/// `session check FILE --repair -o OUT --json`: the repair of `file`
/// written to `out`, answered as JSON.
pub fn repair_json<'a>(file: &'a Path, out: &'a Path) -> [&'a str; 7] {
    [
        "session",
        "check",
        p(file),
        "--repair",
        "-o",
        p(out),
        "--json",
    ]
}

/// The example session copied into `dir` as `name`, settled.
pub fn example_session(dir: &Path, name: &str) -> PathBuf {
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions/todo-refactor.jsonl");
    settled_copy(&example, dir, name)
}

/// The file `from` copied into `dir` as `name`, settled.
pub fn settled_copy(from: &Path, dir: &Path, name: &str) -> PathBuf {
    musepi_test_support::copy_written_ago(from, &dir.join(name), SETTLED)
}

/// Makes a session the test just wrote look idle to musepi's live-session
/// check, as a file nobody has written for a minute: its modification time
/// is set a minute into the past. The check itself is tested on files left
/// as they are.
pub fn settle(path: &Path) {
    musepi_test_support::written_ago(path, SETTLED);
}

/// How long ago a settled file was last written.
const SETTLED: Duration = Duration::from_mins(1);

/// An OpenAI-compatible model on 127.0.0.1 that answers every request
/// alike and records the bodies it was sent.
pub struct Model {
    /// Its base URL (`http://127.0.0.1:PORT/v1`).
    pub url: String,
    server: Server,
}

impl Model {
    /// Answering every request with `reply`.
    pub fn start(reply: Reply) -> Self {
        let server = Server::answering_blocking(move |_| reply.clone());
        Self {
            url: format!("{}/v1", server.url),
            server,
        }
    }

    /// The bodies of the requests so far.
    pub fn requests(&self) -> Vec<Value> {
        self.server.bodies()
    }

    /// `--provider openai-compatible --base-url URL --model test-model`.
    pub fn flags(&self) -> Vec<String> {
        [
            "--provider",
            "openai-compatible",
            "--base-url",
            &self.url,
            "--model",
            "test-model",
        ]
        .map(str::to_owned)
        .to_vec()
    }
}

/// A chat-completions answer with `text`, stopped normally, without usage.
pub fn chat_text(text: &str) -> Reply {
    Reply::json(
        200,
        &serde_json::json!({
            "id": "chatcmpl-1",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        }),
    )
}

/// Standard output parsed as one JSON document.
pub fn json_out(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(o), stderr(o)))
}

/// Writes an executable `/bin/sh` script into `dir`.
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A hook script in `dir` that saves the event it reads to `seen`, then
/// runs `then`.
pub fn recording_hook(dir: &Path, name: &str, seen: &Path, then: &str) -> PathBuf {
    script(dir, name, &format!("cat > '{}'\n{then}", p(seen)))
}

/// How long a test's hook may take to answer (`timeoutMs`, 10 minutes):
/// far longer than starting a shell can take on the busiest machine, since
/// those tests are about the answer, not its speed.
pub const HOOK_IN_TIME_MS: u64 = 600_000;

/// Writes `dir/settings.json` holding these `hooks`; a hook without its own
/// `timeoutMs` gets [`HOOK_IN_TIME_MS`] (tests of the timeout set theirs).
pub fn hook_settings(dir: &Path, hooks: &Value) -> PathBuf {
    let mut hooks = hooks.clone();
    for entry in hooks
        .as_object_mut()
        .into_iter()
        .flat_map(|events| events.values_mut())
        .filter_map(Value::as_array_mut)
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        entry
            .entry("timeoutMs")
            .or_insert_with(|| HOOK_IN_TIME_MS.into());
    }
    let path = dir.join("settings.json");
    std::fs::write(&path, serde_json::json!({ "hooks": hooks }).to_string()).unwrap();
    path
}

/// Writes `contents` to `dir/name`; its path.
pub fn write_file(dir: &Path, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// The JSON document in the file at `path`.
pub fn json_file(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

/// Every line of the JSONL file at `path`, parsed.
pub fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The string `key` of each element of the JSON array `list`.
pub fn strings<'a>(list: &'a Value, key: &str) -> Vec<&'a str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v[key].as_str().unwrap())
        .collect()
}

/// The `error.message` of a `--json` error document or a serve answer.
pub fn error_message(doc: &Value) -> &str {
    doc["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no error message in {doc}"))
}

/// Asserts that `text` holds `part`, showing all of it when it does not.
#[track_caller]
pub fn assert_has(text: &str, part: &str) {
    assert!(text.contains(part), "lacks {part:?}:\n{text}");
}

/// The flags that send a command's requests to the loopback server at
/// `base` (its URL and `/v1`), as the OpenAI-compatible model `m`.
pub fn openai_compatible(base: &str) -> [&str; 6] {
    [
        "--provider",
        "openai-compatible",
        "--base-url",
        base,
        "--model",
        "m",
    ]
}

/// Asserts that `text`, output for people, holds no character a terminal
/// would act on or hide (musepi escapes every control character but the
/// line break, every bidirectional control and invisible format character,
/// as JSON writes them) and that it shows each of `parts`.
#[track_caller]
pub fn assert_escaped(text: &str, parts: &[&str]) {
    let raw = text
        .chars()
        .find(|&c| musepi_cli::output::is_unsafe_char(c) && c != '\n');
    assert!(
        raw.is_none(),
        "a raw {raw:?} reaches the terminal: {text:?}"
    );
    for part in parts {
        assert_has(text, part);
    }
}

/// Asserts that the command's standard error holds `part`, showing all of
/// it when it does not.
#[track_caller]
pub fn assert_stderr_has(o: &Output, part: &str) {
    let err = stderr(o);
    assert!(err.contains(part), "stderr lacks {part:?}:\n{err}");
}

pub use musepi_test_support::{fixture, last_line};

/// Runs `musepi` with `args` as an async process, with no API key in the
/// environment and the temporary folder as its home.
pub async fn musepi_async(args: &[&str]) -> Output {
    async_musepi(args, &std::env::temp_dir())
        .output()
        .await
        .unwrap()
}

/// [`musepi_async`] in `dir`, which is its home as well: no settings file
/// from outside the test's folder reaches it.
pub async fn musepi_async_in(dir: &Path, args: &[&str]) -> Output {
    async_musepi(args, dir)
        .current_dir(dir)
        .output()
        .await
        .unwrap()
}

/// The async `musepi` process with `args`, `home` as its home and no API
/// key in its environment.
fn async_musepi(args: &[&str], home: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(MUSEPI);
    command
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("MUSEPI_API_KEY")
        .env("HOME", home);
    command
}
