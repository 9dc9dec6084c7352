//! `musepi-bench retention`: how much of a session's summarized history
//! reaches the model after `musepi compact`, measured with the real
//! binary.
//!
//! For each session (the example session, two generated ones, and the
//! real pi sessions when their folder is given) and each seed it plants
//! facts in the history that compaction will summarize ([`mod@plant`]:
//! decisions, constraints, commands, errors and numbers, in user messages,
//! replies, reasoning and command output, from many templates
//! ([`mod@templates`]), some stated again later with a new value),
//! compacts the copy with `musepi compact` at three reserves (4,096,
//! 16,384 and 65,536 tokens, so archive budgets of 12,000, 39,322 and
//! 157,286 characters) and once for a reader of images (`--model
//! claude-sonnet-4-5`), and looks for each fact verbatim in what `musepi
//! context --llm` shows of the compaction entry.
//!
//! The seeds come in two sets: the tuned seeds, whose misses the case
//! writes out (`misses.txt`) for whoever works on the archive, and the
//! held-out seeds, which also draw from templates the tuned seeds never
//! see and whose misses are never written: they measure what tuning did
//! not see. Besides the planted facts it checks the session's own paths,
//! commands, numbers and constraints ([`mod@facts`]), and reports the
//! compression: the summarized history's tokens against the archive's.

mod facts;
mod plant;
mod repeated;
mod report;
mod sessions;
mod slots;
mod templates;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use musepi_snapcompact::normalize;
use serde_json::Value;

use self::facts::{fold, kept, own_facts};
use self::plant::{Host, Place, plant};
use self::report::{Row, Set};
use self::templates::Kind;
use crate::BoxError;

/// The reserves measured: 4,096, the default 16,384, and 65,536 tokens.
const RESERVES: [u64; 3] = [4096, 16_384, 65_536];
/// The default reserve.
pub(crate) const DEFAULT_RESERVE: u64 = 16_384;
/// A fixed clock for every command.
const NOW: &str = "2026-01-01T00:00:00.000Z";
/// The reader of images measured at the default reserve: Gemini, whose
/// frames cost a fifth of the text they print (Claude's cost about as much
/// as their text, so a Claude reader gets the text archive).
const VISION_MODEL: &str = "gemini-2.5-pro";
/// What Google bills for one frame, in tokens.
const GEMINI_FRAME_TOKENS: u64 = 1_120;
/// The seeds whose misses may be looked at while working on the archive.
const TUNED_SEEDS: [u64; 3] = [1, 2, 3];
/// The seeds that are never looked at: what the archive does on facts it
/// was not tuned on.
const HELD_OUT_SEEDS: [u64; 3] = [1001, 1002, 1003];

struct Options {
    musepi: PathBuf,
    work: PathBuf,
    example: PathBuf,
    shared: Option<PathBuf>,
    sets: Vec<Set>,
    sessions: Option<Vec<String>>,
    reserves: Vec<u64>,
    png: bool,
    keep: bool,
}

fn options(args: &[String]) -> Result<Options, BoxError> {
    let mut o = Options {
        musepi: PathBuf::from("target/release/musepi"),
        work: PathBuf::from("target/bench-data/retention"),
        example: PathBuf::from("examples/sessions/todo-refactor.jsonl"),
        shared: None,
        sets: vec![Set::Tuned, Set::HeldOut],
        sessions: None,
        reserves: RESERVES.to_vec(),
        png: true,
        keep: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--no-png" {
            o.png = false;
            continue;
        }
        if a == "--keep" {
            o.keep = true;
            continue;
        }
        let v = it.next().ok_or_else(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--musepi" => o.musepi = PathBuf::from(v),
            "--work" => o.work = PathBuf::from(v),
            "--example" => o.example = PathBuf::from(v),
            "--shared" => o.shared = Some(PathBuf::from(v)),
            "--set" => {
                o.sets = match v.as_str() {
                    "tuned" => vec![Set::Tuned],
                    "held-out" => vec![Set::HeldOut],
                    "both" => vec![Set::Tuned, Set::HeldOut],
                    other => return Err(format!("--set {other}: tuned, held-out or both").into()),
                }
            }
            "--sessions" => o.sessions = Some(v.split(',').map(str::to_owned).collect()),
            "--reserves" => {
                o.reserves = v
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--reserves: {e}"))?;
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok(o)
}

impl Set {
    fn seeds(self) -> &'static [u64] {
        match self {
            Set::Tuned => &TUNED_SEEDS,
            Set::HeldOut => &HELD_OUT_SEEDS,
        }
    }
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

/// UTF-16 units of `s`.
fn len16(s: &str) -> usize {
    s.encode_utf16().count()
}

/// The last line of `file` (the compaction `musepi compact` appended).
fn compaction_entry(file: &Path) -> Result<Value, BoxError> {
    let text = std::fs::read_to_string(file)?;
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("null");
    Ok(serde_json::from_str(last)?)
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

/// A session migrated into the work folder, with its lines and the
/// positions of the entries a compaction summarizes.
struct Base {
    name: String,
    lines: Vec<Value>,
    by_id: std::collections::HashMap<String, usize>,
    region: Vec<usize>,
}

fn base(o: &Options, name: &str, source: &Path) -> Result<Base, BoxError> {
    let base = o.work.join(format!("{name}.base.jsonl"));
    let src = source.to_string_lossy().into_owned();
    let base_s = base.to_string_lossy().into_owned();
    fresh(&base)?;
    musepi(&o.musepi, &["session", "migrate", &src, "-o", &base_s])?;
    let plan = musepi(&o.musepi, &["plan", &base_s])?;
    let text = std::fs::read_to_string(&base)?;
    let lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let by_id: std::collections::HashMap<String, usize> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l["id"].as_str().map(|id| (id.to_owned(), i)))
        .collect();
    let region = summarized(&plan, &|id| by_id.get(id).copied());
    Ok(Base {
        name: name.to_owned(),
        lines,
        by_id,
        region,
    })
}

/// The configurations measured: each reserve, and the reader of images at
/// the default reserve.
fn configs(o: &Options) -> Vec<(String, Vec<String>)> {
    let mut configs: Vec<(String, Vec<String>)> = o
        .reserves
        .iter()
        .map(|r| {
            (
                format!("text, reserve {r}"),
                vec!["--reserve".to_owned(), r.to_string()],
            )
        })
        .collect();
    if o.png {
        configs.push((
            format!("PNG ({VISION_MODEL}), reserve {DEFAULT_RESERVE}"),
            vec!["--model".to_owned(), VISION_MODEL.to_owned()],
        ));
    }
    configs
}

/// Measures one session with the facts of one seed.
fn measure(
    o: &Options,
    base: &Base,
    set: Set,
    seed: u64,
    misses: &mut String,
) -> Result<Vec<Row>, BoxError> {
    let name = &base.name;
    let mut lines = base.lines.clone();
    let mut planted = plant(&mut lines, &base.region, seed, set == Set::HeldOut);
    let planted_file = o.work.join(format!("{name}.s{seed}.jsonl"));
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
    let region = summarized(&plan, &|id| base.by_id.get(id).copied());
    planted.retain(|p| region.contains(&p.entry));
    // The session's own facts, less those a planted sentence split (a
    // number's neighbouring words around the sentence end it went after).
    let own = own_facts(&base.lines, &region).also_in(&own_facts(&lines, &region));
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
    let mut rows = Vec::new();
    for (k, (config, extra)) in configs(o).iter().enumerate() {
        let out_file = o.work.join(format!("{name}.s{seed}.c{k}.jsonl"));
        let out_s = out_file.to_string_lossy().into_owned();
        fresh(&out_file)?;
        let mut args: Vec<&str> = vec!["compact", &planted_s, "-o", &out_s];
        args.extend(extra.iter().map(String::as_str));
        let compacted = musepi(&o.musepi, &args)?;
        let entry = compacted["entryId"].as_str().unwrap_or_default().to_owned();
        let context = musepi(&o.musepi, &["context", &out_s, "--llm", "--full"])?;
        let (text, mut archive_tokens) = entry_text(&context, &entry);
        // A PNG archive: what its frames print counts as shown, and its
        // cost is its text and each frame as the reader's provider bills
        // it; a text archive written for a reader of images says what its
        // frames would have cost.
        let written = compaction_entry(&out_file)?;
        let png = &written["preserveData"]["snapcompact"];
        let frames_considered = &written["details"]["snapcompact"]["framesConsidered"];
        // What the frames print, normalized for the fonts (line breaks as a
        // glyph, runs of spaces as one) and arguments as JSON strings: a
        // fact counts when its normalized form is there, read with line
        // breaks and escaped quotes as they print and whitespace folded.
        let mut printed = String::new();
        let mut frames_keep_less = false;
        let frames = if let Some(list) = png["frames"].as_array() {
            printed.push_str(png["text"].as_str().unwrap_or_default());
            let shown = len16(written["summary"].as_str().unwrap_or_default())
                + len16(png["textHead"].as_str().unwrap_or_default())
                + len16(png["textTail"].as_str().unwrap_or_default());
            archive_tokens = shown.div_ceil(4) as u64 + list.len() as u64 * GEMINI_FRAME_TOKENS;
            Some((list.len(), archive_tokens, true))
        } else {
            frames_keep_less = frames_considered["keepsAll"] == false;
            frames_considered["tokens"].as_u64().map(|t| {
                (
                    frames_considered["frames"].as_u64().unwrap_or(0) as usize,
                    t,
                    false,
                )
            })
        };
        fresh(&out_file)?;
        let printed = fold(
            &printed
                .replace(musepi_snapcompact::png::NEWLINE_GLYPH, " ")
                .replace("\\\"", "\"")
                .replace("\\\\", "\\"),
        );
        let on_frames =
            |fact: &str| !printed.is_empty() && printed.contains(&fold(&normalize(fact)));
        let folded = fold(&text);
        let mut row = Row {
            session: name.clone(),
            set,
            config: config.clone(),
            history_tokens,
            archive_tokens,
            frames,
            frames_keep_less,
            ..Row::default()
        };
        for p in &planted {
            // A line's indentation is not part of what it says.
            let hit = text.contains(p.text.trim()) || on_frames(p.text.trim());
            row.count(p, hit);
            if !hit && set == Set::Tuned {
                let _ = writeln!(
                    misses,
                    "{name}\tseed {seed}\t{config}\t{}\t{}\t{}\t{}\t{}",
                    p.kind.name(),
                    p.host.name(),
                    p.place.name(),
                    base.lines[p.entry]["id"].as_str().unwrap_or_default(),
                    p.text
                );
            }
        }
        let own_kept = |facts: &[String], fold_them: bool| {
            let (n, total) = kept(facts, &text, &folded, fold_them);
            if printed.is_empty() {
                return (n, total);
            }
            let either = facts
                .iter()
                .filter(|f| {
                    kept(std::slice::from_ref(f), &text, &folded, fold_them).0 == 1 || on_frames(f)
                })
                .count();
            (either, total)
        };
        row.own = [
            own_kept(&own.paths, false),
            own_kept(&own.commands, false),
            own_kept(&own.numbers, true),
            own_kept(&own.constraints, true),
        ];
        rows.push(row);
    }
    if !o.keep {
        fresh(&planted_file)?;
    }
    Ok(rows)
}

/// The sessions measured: the example, the generated ones, and the real
/// pi sessions when `--shared` holds them; `--sessions` keeps some.
fn sessions(o: &Options) -> Result<Vec<(String, PathBuf)>, BoxError> {
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
    if let Some(only) = &o.sessions {
        sessions.retain(|(name, _)| only.iter().any(|s| name.replace(' ', "-") == *s));
    }
    Ok(sessions)
}

/// `musepi-bench retention [--musepi BIN] [--work DIR] [--example FILE]
/// [--shared DIR] [--set tuned|held-out|both] [--sessions a,b]
/// [--reserves 4096,16384] [--no-png] [--keep]`: prints the tables and writes
/// `retention.json` (every row) and, for the tuned seeds, `misses.txt`
/// into the work folder; with `--keep` the planted copies stay there.
pub(crate) fn run(args: &[String]) -> Result<(), BoxError> {
    let o = options(args)?;
    std::fs::create_dir_all(&o.work)?;
    let sessions = sessions(&o)?;
    let mut rows = Vec::new();
    let mut misses = String::new();
    for (name, path) in &sessions {
        let file_name = name.replace(' ', "-");
        let base = base(&o, &file_name, path)?;
        for &set in &o.sets {
            for &seed in set.seeds() {
                eprintln!("retention: {name}, {} seed {seed}", set.name());
                rows.extend(measure(&o, &base, set, seed, &mut misses)?.into_iter().map(
                    |mut r| {
                        r.session.clone_from(name);
                        r
                    },
                ));
            }
        }
    }
    print!("{}", report::print(&rows));
    std::fs::write(
        o.work.join("retention.json"),
        serde_json::to_string_pretty(&report::to_json(&rows))?,
    )?;
    std::fs::write(o.work.join("misses.txt"), misses)?;
    Ok(())
}

/// `musepi-bench retention-repeated` with the options of `retention`
/// (`--reserves` and `--no-png` aside): compacts each session again and
/// again as it grows, and counts the early facts the final context shows
/// (see [`mod@repeated`]); the two filler sessions are measured too.
pub(crate) fn run_repeated(args: &[String]) -> Result<(), BoxError> {
    let o = options(args)?;
    std::fs::create_dir_all(&o.work)?;
    let sessions = sessions(&o)?;
    repeated::run(&o, &sessions)
}

/// The kinds, hosts and places, for the report.
pub(crate) fn dimensions() -> (Vec<&'static str>, Vec<&'static str>, Vec<&'static str>) {
    (
        Kind::ALL.iter().map(|k| k.name()).collect(),
        Host::ALL.iter().map(|h| h.name()).collect(),
        Place::ALL.iter().map(|p| p.name()).collect(),
    )
}
