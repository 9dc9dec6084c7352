//! `musepi context FILE --chart [--out FILE.svg]`: the context's tokens
//! along the path to the leaf, each compaction and what it removed, drawn
//! in the terminal ([`text`]) or as an SVG file ([`svg`]), or as JSON.
//!
//! The figures are the context's tokens as `musepi context` totals them,
//! measured with the leaf at each point of the path: at every entry of a
//! path of up to [`MAX_POINTS`] entries (evenly spaced points of a longer
//! one), and just before and at every compaction.
//!
//! Each figure is the context as it was when that entry was the leaf: a
//! tool result pruned later (by a compaction that pruned first, or by
//! `musepi prune`) counts at its original size, read from the prune store
//! beside the session, so a compaction's "before" is what `musepi compact`
//! reported as the context before it. A result whose original the store
//! does not have counts as it stands.

pub mod svg;
pub mod text;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::path::Path;

use musepi_protocol::setup::{ChartCompactionDoc, ChartDoc, ChartPointDoc};
use musepi_session_model::{
    AgentMessage, Entry, EntryBody, Original, Replacement, Session, SummaryEntry as _,
};

use crate::ctx::{Ctx, Exit, Failure, OrExit};
use crate::output::{escape_controls, print_json, print_text, write_atomically};
use crate::report::context::context_tokens;
use crate::report::recall::Originals;
use musepi_session_model::same_file;

/// The most points measured along a path.
pub const MAX_POINTS: usize = 400;

/// The context's tokens with the leaf at one entry of the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    /// Where on the path (0: the first entry).
    pub position: usize,
    /// The entry.
    pub entry_id: String,
    /// The context's tokens there.
    pub tokens: u64,
}

/// A compaction on the path and what it removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drop {
    /// 1 for the first compaction on the path.
    pub number: usize,
    /// Where on the path.
    pub position: usize,
    /// The compaction entry.
    pub entry_id: String,
    /// The context's tokens at the entry before it.
    pub before: u64,
    /// The context's tokens at it: its summary and the kept messages.
    pub after: u64,
    /// Messages on the path it summarized: from the previous compaction's
    /// first kept entry (or the start) to its own.
    pub summarized: usize,
    /// `snapcompact`, `llm`, `remote` or `hook`.
    pub made_by: &'static str,
}

impl Drop {
    /// The tokens it removed.
    pub fn removed(&self) -> u64 {
        self.before.saturating_sub(self.after)
    }

    /// The share of the tokens before it that it removed, in whole percent.
    pub fn removed_percent(&self) -> u64 {
        (self.removed() * 100).checked_div(self.before).unwrap_or(0)
    }
}

/// The context's tokens along the path to a leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// The leaf.
    pub leaf_id: Option<String>,
    /// Entries on the path.
    pub path_len: usize,
    /// The points measured, in path order.
    pub points: Vec<Point>,
    /// The compactions on the path, in path order.
    pub compactions: Vec<Drop>,
    /// The context window the figures are read against.
    pub window: u64,
}

impl Series {
    /// The figures of `session` along the path to `leaf`, each as the
    /// context was when its entry was the leaf: `original` gives the
    /// original of a pruned tool result (`None`: it counts as it stands).
    pub fn measure(
        session: &Session,
        leaf: Option<usize>,
        window: u64,
        original: &mut dyn FnMut(&Entry) -> Option<Original>,
    ) -> Self {
        let path = leaf.map(|l| session.path_indices(l)).unwrap_or_default();
        let n = path.len();
        let mut positions: BTreeSet<usize> = if n <= MAX_POINTS {
            (0..n).collect()
        } else {
            (0..MAX_POINTS)
                .map(|i| i * (n - 1) / (MAX_POINTS - 1))
                .collect()
        };
        let compaction_positions: Vec<usize> = (0..n)
            .filter(|&p| matches!(session.entries()[path[p]].body, EntryBody::Compaction(_)))
            .collect();
        for &p in &compaction_positions {
            positions.insert(p);
            positions.extend(p.checked_sub(1));
        }
        let id = |p: usize| session.entries()[path[p]].id.to_string();
        let tokens = tokens_then(session, &path, &positions, original);
        let points: Vec<Point> = positions
            .iter()
            .map(|&p| Point {
                position: p,
                entry_id: id(p),
                tokens: tokens[&p],
            })
            .collect();
        let at = |p: usize| {
            points
                .iter()
                .find(|pt| pt.position == p)
                .map_or(0, |pt| pt.tokens)
        };
        let position_of = |entry: Option<&str>| {
            entry.and_then(|e| {
                path.iter()
                    .position(|&i| session.entries()[i].id.as_str() == e)
            })
        };
        let mut boundary = 0;
        let mut compactions = Vec::new();
        for (k, &p) in compaction_positions.iter().enumerate() {
            let EntryBody::Compaction(c) = &session.entries()[path[p]].body else {
                continue;
            };
            let kept = position_of(
                c.first_kept_entry_id
                    .as_ref()
                    .map(musepi_session_model::EntryId::as_str),
            )
            .unwrap_or(p);
            let summarized = path[boundary.min(kept)..kept]
                .iter()
                .filter(|&&i| session.entries()[i].message().is_some())
                .count();
            boundary = kept.max(boundary);
            compactions.push(Drop {
                number: k + 1,
                position: p,
                entry_id: id(p),
                before: p.checked_sub(1).map_or(0, at),
                after: at(p),
                summarized,
                made_by: made_by(c),
            });
        }
        Self {
            leaf_id: leaf.map(|l| session.entries()[l].id.to_string()),
            path_len: n,
            points,
            compactions,
            window,
        }
    }

    /// The highest figure.
    pub fn peak(&self) -> u64 {
        self.points.iter().map(|p| p.tokens).max().unwrap_or(0)
    }

    /// The figure at the leaf.
    pub fn at_leaf(&self) -> u64 {
        self.points.last().map_or(0, |p| p.tokens)
    }

    /// The `--json` document.
    pub fn to_doc(&self) -> ChartDoc {
        ChartDoc {
            leaf_id: self.leaf_id.clone(),
            path_length: self.path_len,
            context_window: self.window,
            tokens: self.at_leaf(),
            peak: self.peak(),
            points: self
                .points
                .iter()
                .map(|p| ChartPointDoc {
                    position: p.position,
                    entry_id: p.entry_id.clone(),
                    tokens: p.tokens,
                })
                .collect(),
            compactions: self
                .compactions
                .iter()
                .map(|c| ChartCompactionDoc {
                    entry_id: c.entry_id.clone(),
                    position: c.position,
                    tokens_before: c.before,
                    tokens_after: c.after,
                    removed: c.removed(),
                    messages_summarized: c.summarized,
                    made_by: c.made_by,
                })
                .collect(),
            out: None,
        }
    }
}

/// The context's tokens at each of `positions` of `path`, as they were when
/// that entry was the leaf. Walking the path backwards from the leaf, the
/// tool results pruned after an entry's time are put back (in a copy of
/// the session, made once the first is needed) before its figure is
/// taken; going back only ever puts more back. Entry times that go
/// backwards along the path are read as the earliest time after them.
fn tokens_then(
    session: &Session,
    path: &[usize],
    positions: &BTreeSet<usize>,
    original: &mut dyn FnMut(&Entry) -> Option<Original>,
) -> BTreeMap<usize, u64> {
    // The pruned results on the path, latest pruning first.
    let mut pruned: Vec<(i64, usize)> = path
        .iter()
        .filter_map(|&i| match &session.entries()[i].body {
            EntryBody::Message(AgentMessage::ToolResult(t)) => t.pruned_at.map(|at| (at as i64, i)),
            _ => None,
        })
        .collect();
    pruned.sort_unstable_by(|a, b| b.cmp(a));
    let mut then = Cow::Borrowed(session);
    let mut next = pruned.iter().peekable();
    let mut time = i64::MAX;
    let mut tokens = BTreeMap::new();
    for &p in positions.iter().rev() {
        let entry = &session.entries()[path[p]];
        time = time.min(entry.timestamp_ms().unwrap_or(time));
        while let Some(&&(at, i)) = next.peek() {
            if at <= time {
                break;
            }
            next.next();
            if let Some(o) = original(&session.entries()[i]) {
                let line = String::from_utf8_lossy(&o.line).into_owned();
                then.to_mut().replace(Replacement::new(i, o.entry, line));
            }
        }
        tokens.insert(p, context_tokens(&then, Some(path[p])));
    }
    tokens
}

/// Who made a compaction, as far as the entry tells.
fn made_by(c: &musepi_session_model::Compaction) -> &'static str {
    let details = c.details.as_ref();
    let preserved = c
        .preserve_data
        .as_ref()
        .map(musepi_session_model::RawJson::to_value);
    if c.is_from_extension() {
        "hook"
    } else if details.is_some_and(|d| d.get("snapcompact").is_some()) {
        "snapcompact"
    } else if preserved.is_some_and(|p| p.get("openaiRemoteCompaction").is_some()) {
        "remote"
    } else {
        "llm"
    }
}

/// The terminal's width: the terminal's own when standard output is one,
/// else `$COLUMNS`, else 80.
fn terminal_width() -> usize {
    if std::io::stdout().is_terminal()
        && let Ok((w, _)) = crossterm::terminal::size()
        && w > 0
    {
        return usize::from(w);
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|&w| w > 0)
        .unwrap_or(80)
}

/// Runs `musepi context --chart`: JSON, an SVG file, or the terminal chart.
pub fn run(
    session: &Session,
    leaf: Option<usize>,
    window: u64,
    input: &Path,
    store_of: Option<&Path>,
    out: Option<(&Path, bool)>,
    ctx: &Ctx,
) -> Result<Exit, Failure> {
    if let Some((out, force)) = out {
        check_out(out, input, force)?;
    }
    let out = out.map(|(o, _)| o);
    let mut originals = Originals::open(store_of, session);
    let series = Series::measure(session, leaf, window, &mut |e| originals.original_line(e));
    for w in &originals.warnings {
        crate::output::note(ctx.quiet(), &format!("musepi: warning: {w}"));
    }
    if let Some(out) = out {
        let svg = svg::render(&series, &input.display().to_string());
        write_atomically(out, |w| std::io::Write::write_all(w, svg.as_bytes()))
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))
            .or_failed()?;
    }
    if ctx.json() {
        let mut doc = series.to_doc();
        doc.out = out.map(|o| o.display().to_string());
        print_json(&doc).or_failed()?;
    } else if let Some(out) = out {
        print_text(&format!(
            "wrote {} ({}, {}, peak {} tokens)\n",
            escape_controls(&out.display().to_string()),
            crate::output::counted(series.points.len(), "point", "points"),
            crate::output::counted(series.compactions.len(), "compaction", "compactions"),
            crate::view::text::thousands(series.peak())
        ))
        .or_failed()?;
    } else {
        let chart = text::render(&series, terminal_width(), text::HEIGHT, ctx.style);
        print_text(&chart).or_failed()?;
    }
    Ok(Exit::Ok)
}

/// `--out` must name an `.svg` file that is not the session itself, and
/// that does not exist unless `force` (`--force`) replaces it.
fn check_out(out: &Path, input: &Path, force: bool) -> Result<(), Failure> {
    let svg = out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"));
    if !svg {
        return Err(Failure::usage(anyhow::anyhow!(
            "--out {}: the chart is written as SVG, to a file named *.svg",
            out.display()
        )));
    }
    if out.exists() && same_file(out, input) {
        return Err(Failure::usage(anyhow::anyhow!(
            "--out {}: that is the session file itself",
            out.display()
        )));
    }
    if std::fs::symlink_metadata(out).is_ok_and(|m| !m.is_file()) {
        return Err(Failure::usage(anyhow::anyhow!(
            "--out {}: not a regular file",
            out.display()
        )));
    }
    if !force && std::fs::symlink_metadata(out).is_ok() {
        return Err(Failure::file_exists(out));
    }
    Ok(())
}
