//! `musepi-bench retention-repeated`: what survives compacting the same
//! session again and again, measured with the real binary.
//!
//! Each session is replayed entry by entry as pi would run it: after
//! every assistant message the context is measured (`musepi plan --leaf`,
//! every message estimated, as no usage is kept), and once it crosses the
//! threshold of the configuration (the window less the reserve) `musepi
//! compact --leaf` compacts there, with the configuration's window,
//! reserve and keep-recent; the entries after it then continue from the
//! compaction, and so on, up to [`MAX_COMPACTIONS`] times. Each later
//! compaction folds the archive of the one before into its own.
//!
//! A few facts ([`plant_few`]) are planted early, in what the first
//! compaction summarizes, so every one of them goes through every
//! compaction; what counts is whether the final context (the last
//! compaction and what it keeps) shows each verbatim, and, compaction by
//! compaction, whether that compaction's summary does. The sessions are
//! the two filler sessions (the same sentences in every turn, as in pi's
//! end-to-end test), the example, the generated ones and the real pi
//! sessions when they are there; the seeds are those of the single
//! compaction case, tuned and held-out.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::Value;

use super::plant::plant_few;
use super::report::Set;
use super::{Options, base, entry_text, fresh, musepi};
use crate::BoxError;

mod table;

use table::{Row, add, count, print};

/// The configurations: a small window with small reserves (the pi user of
/// the end-to-end test), and the default reserve and keep-recent in a
/// window small enough for several compactions.
const CONFIGS: [Config; 2] = [
    Config {
        name: "16k window, reserve 4,000, keep 4,000",
        window: 16_000,
        reserve: 4_000,
        keep: 4_000,
    },
    Config {
        name: "64k window, default reserve and keep",
        window: 64_000,
        reserve: 16_384,
        keep: 20_000,
    },
];
/// Compactions per replay at most.
const MAX_COMPACTIONS: usize = 6;
/// The share of the history before the first compaction's cut that facts
/// are planted in (the rest is a margin for the cut).
const PLANT_SHARE: f64 = 0.7;

/// One configuration of window, reserve and keep-recent.
#[derive(Debug, Clone, Copy)]
struct Config {
    name: &'static str,
    window: u64,
    reserve: u64,
    keep: u64,
}

impl Config {
    fn args(&self) -> Vec<String> {
        vec![
            "--context-window".to_owned(),
            self.window.to_string(),
            "--reserve".to_owned(),
            self.reserve.to_string(),
            "--keep-recent".to_owned(),
            self.keep.to_string(),
            "--no-prune".to_owned(),
        ]
    }
}

/// The entries on the path to the last entry of `lines` (the header
/// first), without earlier compactions and without usage: the replay
/// measures every message by its text, as a context that was compacted
/// differently has to be measured.
fn chain(lines: &[Value]) -> Vec<Value> {
    let by_id: std::collections::HashMap<&str, &Value> = lines
        .iter()
        .filter_map(|l| l["id"].as_str().map(|id| (id, l)))
        .collect();
    let mut path = Vec::new();
    let mut at = lines.last().and_then(|l| l["id"].as_str());
    while let Some(id) = at {
        let Some(entry) = by_id.get(id) else { break };
        path.push((*entry).clone());
        at = entry["parentId"].as_str();
    }
    path.reverse();
    path.retain(|e| e["type"] != "compaction" && e["type"] != "branch_summary");
    for e in &mut path {
        if let Some(m) = e["message"].as_object_mut() {
            m.remove("usage");
        }
    }
    let mut out = vec![lines[0].clone()];
    out.extend(path);
    out
}

/// A rough estimate of an entry's tokens (four characters each), to
/// choose where facts go: the first compaction's real cut decides which
/// of them count.
fn rough_tokens(entry: &Value) -> u64 {
    let m = &entry["message"];
    let chars = match &m["content"] {
        Value::String(s) => s.len(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().map_or(0, str::len),
                Some("thinking") => b["thinking"].as_str().map_or(0, str::len),
                Some("toolCall") => b["arguments"].to_string().len() + 8,
                _ => 0,
            })
            .sum(),
        _ => 0,
    };
    (chars / 4) as u64
}

/// The positions of `chain` (after the header) that the first compaction
/// of `config` will summarize, roughly: the messages whose running total
/// stays within [`PLANT_SHARE`] of the threshold less what is kept.
fn early_region(chain: &[Value], config: &Config) -> Vec<usize> {
    let limit = ((config.window - config.reserve).saturating_sub(config.keep)) as f64 * PLANT_SHARE;
    let mut total = 0u64;
    let mut region = Vec::new();
    for (i, e) in chain.iter().enumerate().skip(1) {
        total += rough_tokens(e);
        if total as f64 > limit {
            break;
        }
        if e["type"] == "message" {
            region.push(i);
        }
    }
    region
}

/// The lines of a session file: `head` and then `rest`, each entry of
/// `rest` a child of the one before it (the first of the last of `head`,
/// or a root when `head` is the header alone).
fn file_text(head: &[Value], rest: &[Value]) -> String {
    let mut out = String::new();
    for l in head {
        let _ = writeln!(out, "{l}");
    }
    // The header's id is the session's, not an entry's: an entry after it
    // alone is a root.
    let mut parent = head
        .last()
        .filter(|l| l["type"] != "session")
        .and_then(|l| l["id"].as_str())
        .map(str::to_owned);
    for e in rest {
        let mut e = e.clone();
        e["parentId"] = parent.map_or(Value::Null, Value::String);
        parent = e["id"].as_str().map(str::to_owned);
        let _ = writeln!(out, "{e}");
    }
    out
}

/// Whether the context at `leaf` of `file` is over the threshold of
/// `config`.
fn over(o: &Options, file: &str, leaf: &str, config: &Config) -> Result<bool, BoxError> {
    let mut args: Vec<String> = vec!["plan".into(), file.into(), "--leaf".into(), leaf.into()];
    args.extend(config.args());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let plan = musepi(&o.musepi, &args)?;
    Ok(plan["threshold"]["overThreshold"] == true)
}

/// One replay of `chain` (facts planted) under `config`: the summaries of
/// its compactions, the final context's text, and the first kept entry of
/// the first compaction.
struct Replay {
    summaries: Vec<String>,
    context: String,
    first_kept: Option<String>,
}

fn replay(o: &Options, name: &str, chain: &[Value], config: &Config) -> Result<Replay, BoxError> {
    let file = o.work.join(format!("{name}.replay.jsonl"));
    let out = o.work.join(format!("{name}.replay-out.jsonl"));
    let file_s = file.to_string_lossy().into_owned();
    let out_s = out.to_string_lossy().into_owned();
    // What is written for good: the header, the entries replayed so far
    // and the compactions.
    let mut head: Vec<Value> = vec![chain[0].clone()];
    let mut next = 1usize;
    let mut summaries = Vec::new();
    let mut first_kept = None;
    let assistant_at =
        |i: usize| chain[i]["type"] == "message" && chain[i]["message"]["role"] == "assistant";
    while summaries.len() < MAX_COMPACTIONS {
        let rest = &chain[next..];
        std::fs::write(&file, file_text(&head, rest))?;
        let candidates: Vec<usize> = (next..chain.len()).filter(|&i| assistant_at(i)).collect();
        let leaf_id = |i: usize| chain[i]["id"].as_str().unwrap_or_default().to_owned();
        // The first candidate over the threshold: galloping, then
        // bisection (the context only grows as entries are added).
        let (mut lo, mut hi) = (0usize, None);
        let mut step = 1usize;
        while lo < candidates.len() {
            let probe = (lo + step - 1).min(candidates.len() - 1);
            if over(o, &file_s, &leaf_id(candidates[probe]), config)? {
                hi = Some(probe);
                break;
            }
            lo = probe + 1;
            step *= 2;
        }
        let Some(mut hi) = hi else { break };
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if over(o, &file_s, &leaf_id(candidates[mid]), config)? {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let at = candidates[hi];
        fresh(&out)?;
        let mut args: Vec<String> = vec![
            "compact".into(),
            file_s.clone(),
            "--leaf".into(),
            leaf_id(at),
            "-o".into(),
            out_s.clone(),
            "--force".into(),
        ];
        args.extend(config.args());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let compacted = musepi(&o.musepi, &args)?;
        if compacted["compacted"] != true {
            break;
        }
        summaries.push(compacted["summary"].as_str().unwrap_or_default().to_owned());
        if first_kept.is_none() {
            first_kept = compacted["firstKeptEntryId"].as_str().map(str::to_owned);
        }
        let written = std::fs::read_to_string(&out)?;
        let entry: Value = serde_json::from_str(
            written
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("null"),
        )?;
        // The entries replayed now hang under the last one written (the
        // previous compaction), as in the file just compacted.
        let text = file_text(&head, &chain[next..=at]);
        head = text
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?;
        head.push(entry);
        next = at + 1;
    }
    fresh(&out)?;
    if summaries.is_empty() {
        fresh(&file)?;
        return Ok(Replay {
            summaries,
            context: String::new(),
            first_kept,
        });
    }
    let leaf = head
        .last()
        .and_then(|l| l["id"].as_str())
        .unwrap_or_default()
        .to_owned();
    std::fs::write(&file, file_text(&head, &[]))?;
    let context = musepi(
        &o.musepi,
        &["context", &file_s, "--leaf", &leaf, "--llm", "--full"],
    )?;
    let mut text = String::new();
    let entries: Vec<String> = context["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["entryId"].as_str().map(str::to_owned))
        .collect();
    let mut seen = Vec::new();
    for id in entries {
        if !seen.contains(&id) {
            text.push_str(&entry_text(&context, &id).0);
            seen.push(id);
        }
    }
    if !o.keep {
        fresh(&file)?;
    }
    Ok(Replay {
        summaries,
        context: text,
        first_kept,
    })
}

/// Measures one session under every configuration with the facts of one
/// seed.
fn measure(
    o: &Options,
    (name, file_name): (&str, &str),
    filler: bool,
    lines: &[Value],
    set: Set,
    seed: u64,
    misses: &mut String,
) -> Result<Vec<Row>, BoxError> {
    let mut rows = Vec::new();
    let base = chain(lines);
    for (k, config) in CONFIGS.iter().enumerate() {
        let mut planted_chain = base.clone();
        let region = early_region(&base, config);
        let mut planted = plant_few(&mut planted_chain, &region, seed, set == Set::HeldOut);
        let replay = replay(
            o,
            &format!("{file_name}.s{seed}.c{k}"),
            &planted_chain,
            config,
        )?;
        if replay.summaries.is_empty() {
            continue;
        }
        // Only what the first compaction summarized went through them all.
        let cut = replay
            .first_kept
            .as_deref()
            .and_then(|id| planted_chain.iter().position(|e| e["id"] == id))
            .unwrap_or(0);
        planted.retain(|p| p.entry < cut);
        let mut row = Row {
            session: name.to_owned(),
            filler,
            set,
            config: config.name,
            compactions: replay.summaries.len(),
            after: vec![(0, 0); replay.summaries.len()],
            kept: (0, 0),
            by_kind: [(0, 0); 5],
            by_host: [(0, 0); 4],
            summary_tokens: replay
                .summaries
                .last()
                .map_or(0, |s| s.encode_utf16().count().div_ceil(4) as u64),
        };
        for p in &planted {
            let text = p.text.trim();
            for (cell, summary) in row.after.iter_mut().zip(&replay.summaries) {
                *cell = add(*cell, (usize::from(summary.contains(text)), 1));
            }
            let hit = replay.context.contains(text);
            count(&mut row, p, hit);
            if !hit && set == Set::Tuned {
                let _ = writeln!(
                    misses,
                    "{name}\tseed {seed}\t{}\t{}\t{}\t{}\t{}",
                    config.name,
                    p.kind.name(),
                    p.host.name(),
                    p.place.name(),
                    p.text
                );
            }
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Replays every session with every seed of the chosen sets, prints the
/// tables and writes, for the tuned seeds, `misses-repeated.txt` into the
/// work folder.
pub(crate) fn run(o: &Options, sessions: &[(String, PathBuf)]) -> Result<(), BoxError> {
    let mut all = sessions.to_vec();
    all.splice(0..0, super::sessions::filler(&o.work)?);
    if let Some(only) = &o.sessions {
        all.retain(|(name, _)| only.iter().any(|s| name.replace(' ', "-") == *s));
    }
    let mut rows = Vec::new();
    let mut misses = String::new();
    for (name, path) in &all {
        let file_name = name.replace(' ', "-");
        let base = base(o, &file_name, path)?;
        let filler = name.starts_with("filler");
        for &set in &o.sets {
            for &seed in set.seeds() {
                eprintln!("retention-repeated: {name}, {} seed {seed}", set.name());
                rows.extend(measure(
                    o,
                    (name, &file_name),
                    filler,
                    &base.lines,
                    set,
                    seed,
                    &mut misses,
                )?);
            }
        }
        if !o.keep {
            fresh(&o.work.join(format!("{file_name}.base.jsonl")))?;
        }
    }
    print!("{}", print(&rows));
    std::fs::write(o.work.join("misses-repeated.txt"), misses)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_chain_drops_compactions_and_usage_and_follows_the_parents() {
        let lines = vec![
            json!({"type": "session", "id": "s"}),
            json!({"type": "message", "id": "a", "parentId": null, "message": {"role": "user", "content": "hi"}}),
            json!({"type": "message", "id": "b", "parentId": "a", "message": {"role": "assistant", "content": [], "usage": {"input": 5}}}),
            json!({"type": "message", "id": "x", "parentId": "a", "message": {"role": "user", "content": "other branch"}}),
            json!({"type": "compaction", "id": "c", "parentId": "b"}),
            json!({"type": "message", "id": "d", "parentId": "c", "message": {"role": "user", "content": "again"}}),
        ];
        let out = chain(&lines);
        let ids: Vec<&str> = out.iter().map(|e| e["id"].as_str().unwrap_or("")).collect();
        assert_eq!(ids, ["s", "a", "b", "d"]);
        assert!(out[2]["message"].get("usage").is_none());
        let text = file_text(&out[..2], &out[2..]);
        let reread: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
            .collect();
        assert_eq!(reread[3]["parentId"], "b");
        assert_eq!(reread[2]["parentId"], "a");
    }
}
