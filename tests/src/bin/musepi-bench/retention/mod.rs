//! `musepi-bench retention`: how much of a session's summarized history
//! reaches the model after `musepi compact`, measured with the real
//! binary.
//!
//! For each session (the example session, two generated ones, and the
//! real pi sessions when their folder is given) it plants facts in the
//! history that compaction will summarize ([`mod@plant`]), compacts the copy
//! with `musepi compact` at three reserves (4,096, 16,384 and 65,536
//! tokens, so archive budgets of 12,000, 39,322 and 157,286 characters)
//! and once for a reader of images (`--model claude-sonnet-4-5`), and
//! looks for each fact verbatim in what `musepi context --llm` shows of
//! the compaction entry. Besides the planted facts it checks the
//! session's own paths, commands, numbers and constraints ([`mod@facts`]),
//! and reports the compression: the summarized history's tokens against
//! the archive's.

mod facts;
mod plant;
mod sessions;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use self::facts::{fold, kept, own_facts};
use self::plant::{Kind, POSITIONS, plant};
use crate::BoxError;

/// The reserves measured: 4,096, the default 16,384, and 65,536 tokens.
const RESERVES: [u64; 3] = [4096, 16_384, 65_536];
/// A fixed clock for every command.
const NOW: &str = "2026-01-01T00:00:00.000Z";
/// The reader of images measured at the default reserve.
const VISION_MODEL: &str = "claude-sonnet-4-5";

struct Options {
    musepi: PathBuf,
    work: PathBuf,
    example: PathBuf,
    shared: Option<PathBuf>,
}

fn options(args: &[String]) -> Result<Options, BoxError> {
    let mut o = Options {
        musepi: PathBuf::from("target/release/musepi"),
        work: PathBuf::from("target/bench-data/retention"),
        example: PathBuf::from("examples/sessions/todo-refactor.jsonl"),
        shared: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = PathBuf::from(it.next().ok_or_else(|| format!("{a} needs a value"))?);
        match a.as_str() {
            "--musepi" => o.musepi = v,
            "--work" => o.work = v,
            "--example" => o.example = v,
            "--shared" => o.shared = Some(v),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok(o)
}

/// Runs `musepi ARGS` and parses its `--json` answer.
fn musepi(bin: &Path, args: &[&str]) -> Result<Value, BoxError> {
    let out = Command::new(bin)
        .args(args)
        .args(["--json", "--deterministic-ids", "--now", NOW])
        .env("HOME", "/nonexistent-musepi-bench-home")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if !out.status.success() {
        return Err(format!(
            "musepi {} exited with {}: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// One session's figures at one configuration.
#[derive(Debug, Default, Clone)]
struct Row {
    session: String,
    config: String,
    by_kind: [(usize, usize); 5],
    by_position: [(usize, usize); 3],
    own: [(usize, usize); 4],
    history_tokens: u64,
    archive_tokens: u64,
}

impl Row {
    fn planted(&self) -> (usize, usize) {
        sum(&self.by_kind)
    }
}

fn sum(cells: &[(usize, usize)]) -> (usize, usize) {
    cells.iter().fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
}

fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str().map(str::to_owned))
        .collect()
}

/// The text of the messages of `entry` in `musepi context --llm --json
/// --full`: text and reasoning blocks (images are not text).
fn entry_text(context: &Value, entry: &str) -> (String, u64) {
    let mut text = String::new();
    let mut tokens = 0u64;
    for row in context["messages"].as_array().into_iter().flatten() {
        if row["entryId"] != entry {
            continue;
        }
        tokens += row["tokens"].as_u64().unwrap_or(0);
        for block in row["message"]["content"].as_array().into_iter().flatten() {
            for key in ["text", "thinking"] {
                if let Some(t) = block[key].as_str() {
                    text.push_str(t);
                    text.push('\n');
                }
            }
        }
    }
    (text, tokens)
}

/// Removes an output of an earlier run: musepi does not replace a file
/// it did not just write.
fn fresh(path: &Path) -> Result<(), BoxError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Makes a file the bench just wrote look idle to musepi's live-session
/// check: its modification time a minute in the past (the bench is the
/// only writer).
fn settle(path: &Path) -> Result<(), BoxError> {
    let file = std::fs::OpenOptions::new().append(true).open(path)?;
    file.set_modified(std::time::SystemTime::now() - std::time::Duration::from_mins(1))?;
    Ok(())
}

/// The positions of the summarized entries of a `musepi plan --json`.
fn summarized(plan: &Value, position: &dyn Fn(&str) -> Option<usize>) -> Vec<usize> {
    ids(&plan["messagesToSummarize"])
        .into_iter()
        .chain(ids(&plan["turnPrefixMessages"]))
        .filter_map(|id| position(&id))
        .collect()
}

/// Measures one session.
fn measure(o: &Options, name: &str, source: &Path) -> Result<Vec<Row>, BoxError> {
    let base = o.work.join(format!("{name}.base.jsonl"));
    let src = source.to_string_lossy().into_owned();
    let base_s = base.to_string_lossy().into_owned();
    fresh(&base)?;
    musepi(&o.musepi, &["session", "migrate", &src, "-o", &base_s])?;
    let plan = musepi(&o.musepi, &["plan", &base_s])?;
    let text = std::fs::read_to_string(&base)?;
    let mut lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let by_id: std::collections::HashMap<String, usize> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l["id"].as_str().map(|id| (id.to_owned(), i)))
        .collect();
    let position = |id: &str| by_id.get(id).copied();
    let region = summarized(&plan, &position);
    let base_lines = lines.clone();
    let mut planted = plant(&mut lines, &region);
    let planted_file = o.work.join(format!("{name}.planted.jsonl"));
    let mut out = String::new();
    for l in &lines {
        let _ = writeln!(out, "{l}");
    }
    std::fs::write(&planted_file, out)?;
    settle(&planted_file)?;
    let planted_s = planted_file.to_string_lossy().into_owned();
    // The planted text moves the cut a little: what counts is what the
    // compaction of the planted copy summarizes.
    let plan = musepi(&o.musepi, &["plan", &planted_s])?;
    let region = summarized(&plan, &position);
    planted.retain(|p| region.contains(&p.entry));
    let own = own_facts(&base_lines, &region);
    let kept_ids = ids(&plan["keptMessages"]);
    // The history the archive replaces: every message of the context
    // before the kept ones.
    let before = musepi(&o.musepi, &["context", &planted_s])?;
    let history_tokens: u64 = before["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| !kept_ids.iter().any(|k| r["entryId"] == k.as_str()))
        .filter_map(|r| r["tokens"].as_u64())
        .sum();
    let mut configs: Vec<(String, Vec<String>)> = RESERVES
        .iter()
        .map(|r| {
            (
                format!("text, reserve {r}"),
                vec!["--reserve".to_owned(), r.to_string()],
            )
        })
        .collect();
    configs.push((
        format!("PNG ({VISION_MODEL}), reserve 16384"),
        vec!["--model".to_owned(), VISION_MODEL.to_owned()],
    ));
    let mut rows = Vec::new();
    for (k, (config, extra)) in configs.iter().enumerate() {
        let out_file = o.work.join(format!("{name}.c{k}.jsonl"));
        let out_s = out_file.to_string_lossy().into_owned();
        fresh(&out_file)?;
        let mut args: Vec<&str> = vec!["compact", &planted_s, "-o", &out_s];
        args.extend(extra.iter().map(String::as_str));
        let compacted = musepi(&o.musepi, &args)?;
        let entry = compacted["entryId"].as_str().unwrap_or_default().to_owned();
        let context = musepi(&o.musepi, &["context", &out_s, "--llm", "--full"])?;
        let (text, archive_tokens) = entry_text(&context, &entry);
        let folded = fold(&text);
        let mut row = Row {
            session: name.to_owned(),
            config: config.clone(),
            history_tokens,
            archive_tokens,
            ..Row::default()
        };
        for p in &planted {
            let hit = usize::from(text.contains(p.text.as_str()));
            let kind = Kind::ALL.iter().position(|k| *k == p.kind).unwrap_or(0);
            row.by_kind[kind].0 += hit;
            row.by_kind[kind].1 += 1;
            row.by_position[p.position].0 += hit;
            row.by_position[p.position].1 += 1;
        }
        row.own = [
            kept(&own.paths, &text, &folded, false),
            kept(&own.commands, &text, &folded, false),
            kept(&own.numbers, &text, &folded, true),
            kept(&own.constraints, &text, &folded, true),
        ];
        rows.push(row);
    }
    Ok(rows)
}

fn pct((a, b): (usize, usize)) -> String {
    if b == 0 {
        "-".to_owned()
    } else {
        format!("{}/{} {:.0}%", a, b, 100.0 * a as f64 / b as f64)
    }
}

/// Prints the two tables as Markdown, one row per session and
/// configuration, then the totals per configuration.
fn print(rows: &[Row]) -> String {
    let mut out = String::new();
    let mut configs: Vec<&str> = Vec::new();
    for r in rows {
        if !configs.contains(&r.config.as_str()) {
            configs.push(&r.config);
        }
    }
    let mut all: Vec<Row> = rows.to_vec();
    for c in &configs {
        let mut t = Row {
            session: "all".to_owned(),
            config: (*c).to_owned(),
            ..Row::default()
        };
        for r in rows.iter().filter(|r| r.config == *c) {
            for i in 0..5 {
                t.by_kind[i] = sum(&[t.by_kind[i], r.by_kind[i]]);
            }
            for i in 0..3 {
                t.by_position[i] = sum(&[t.by_position[i], r.by_position[i]]);
            }
            for i in 0..4 {
                t.own[i] = sum(&[t.own[i], r.own[i]]);
            }
            t.history_tokens += r.history_tokens;
            t.archive_tokens += r.archive_tokens;
        }
        all.push(t);
    }
    let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
    let positions: Vec<&str> = POSITIONS.iter().map(|p| p.0).collect();
    let _ = writeln!(
        out,
        "| session | archive | {} | {} | planted |",
        kinds.join(" | "),
        positions.join(" | ")
    );
    let _ = writeln!(
        out,
        "|{}",
        " --- |".repeat(3 + kinds.len() + positions.len())
    );
    for r in &all {
        let cells: Vec<String> = r
            .by_kind
            .iter()
            .chain(&r.by_position)
            .map(|c| pct(*c))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            r.session,
            r.config,
            cells.join(" | "),
            pct(r.planted())
        );
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "| session | archive | paths | commands | user numbers | user constraints | history tokens | archive tokens | compression |"
    );
    let _ = writeln!(out, "|{}", " --- |".repeat(9));
    for r in &all {
        let ratio = if r.archive_tokens == 0 {
            "-".to_owned()
        } else {
            format!("{:.1}×", r.history_tokens as f64 / r.archive_tokens as f64)
        };
        let cells: Vec<String> = r.own.iter().map(|c| pct(*c)).collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {ratio} |",
            r.session,
            r.config,
            cells.join(" | "),
            r.history_tokens,
            r.archive_tokens
        );
    }
    out
}

fn to_json(rows: &[Row]) -> Value {
    let cell = |(a, b): (usize, usize)| json!([a, b]);
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({
                    "session": r.session,
                    "archive": r.config,
                    "byKind": Kind::ALL.iter().zip(&r.by_kind).map(|(k, c)| (k.name().to_owned(), cell(*c))).collect::<serde_json::Map<_, _>>(),
                    "byPosition": POSITIONS.iter().zip(&r.by_position).map(|(p, c)| (p.0.to_owned(), cell(*c))).collect::<serde_json::Map<_, _>>(),
                    "paths": cell(r.own[0]),
                    "commands": cell(r.own[1]),
                    "userNumbers": cell(r.own[2]),
                    "userConstraints": cell(r.own[3]),
                    "historyTokens": r.history_tokens,
                    "archiveTokens": r.archive_tokens,
                })
            })
            .collect(),
    )
}

/// `musepi-bench retention [--musepi BIN] [--work DIR] [--example FILE]
/// [--shared DIR]`: prints the tables and writes `retention.json` into the
/// work folder.
pub(crate) fn run(args: &[String]) -> Result<(), BoxError> {
    let o = options(args)?;
    std::fs::create_dir_all(&o.work)?;
    let mut sessions: Vec<(String, PathBuf)> = vec![("example".to_owned(), o.example.clone())];
    sessions.extend(sessions::generated(&o.work)?);
    match o.shared.as_ref().map(|s| s.join("fixtures/pi")) {
        Some(dir) if dir.is_dir() => {
            let mut pi: Vec<PathBuf> = std::fs::read_dir(&dir)?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .collect();
            pi.sort();
            for p in pi {
                let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
                sessions.push((format!("pi {}", stem.unwrap_or_default()), p));
            }
        }
        _ => eprintln!(
            "retention: no real pi sessions (../shared/fixtures/pi is not beside the repository); measuring the example and generated sessions only"
        ),
    }
    let mut rows = Vec::new();
    for (name, path) in &sessions {
        eprintln!("retention: {name}");
        let file_name = name.replace(' ', "-");
        rows.extend(measure(&o, &file_name, path)?.into_iter().map(|mut r| {
            r.session.clone_from(name);
            r
        }));
    }
    print!("{}", print(&rows));
    std::fs::write(
        o.work.join("retention.json"),
        serde_json::to_string_pretty(&to_json(&rows))?,
    )?;
    Ok(())
}
