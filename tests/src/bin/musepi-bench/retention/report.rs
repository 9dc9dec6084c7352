//! The retention case's figures: one row per session, seed and
//! configuration, summed into Markdown tables and written as JSON.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::plant::{Host, POSITIONS, Place, Planted};
use super::templates::Kind;
use super::{DEFAULT_RESERVE, dimensions};

/// The two sets of seeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Set {
    /// Seeds whose misses may be looked at.
    #[default]
    Tuned,
    /// Seeds never looked at.
    HeldOut,
}

impl Set {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Set::Tuned => "tuned",
            Set::HeldOut => "held-out",
        }
    }
}

/// `(kept, total)`.
pub(crate) type Cell = (usize, usize);

/// One session's figures with one seed at one configuration.
#[derive(Debug, Default, Clone)]
pub(crate) struct Row {
    pub session: String,
    pub set: Set,
    pub config: String,
    pub by_kind: [Cell; 5],
    pub by_host: [Cell; 4],
    pub by_position: [Cell; 3],
    pub by_place: [Cell; 3],
    pub restated: Cell,
    pub own: [Cell; 4],
    pub history_tokens: u64,
    pub archive_tokens: u64,
    /// For a reader of images: the frames of the PNG archive, its tokens,
    /// and whether it was written (else the text archive was, and these
    /// are what the frames would have cost).
    pub frames: Option<(usize, u64, bool)>,
    /// The frames would have dropped pages or facts the text archive shows.
    pub frames_keep_less: bool,
}

fn add(a: Cell, b: Cell) -> Cell {
    (a.0 + b.0, a.1 + b.1)
}

fn index<T: PartialEq>(all: &[T], x: &T) -> usize {
    all.iter().position(|y| y == x).unwrap_or(0)
}

impl Row {
    /// Counts `p`, kept or not.
    pub(crate) fn count(&mut self, p: &Planted, hit: bool) {
        let one = (usize::from(hit), 1);
        let k = index(&Kind::ALL, &p.kind);
        self.by_kind[k] = add(self.by_kind[k], one);
        let h = index(&Host::ALL, &p.host);
        self.by_host[h] = add(self.by_host[h], one);
        self.by_position[p.position] = add(self.by_position[p.position], one);
        let pl = index(&Place::ALL, &p.place);
        self.by_place[pl] = add(self.by_place[pl], one);
        if p.restated {
            self.restated = add(self.restated, one);
        }
    }

    pub(crate) fn planted(&self) -> Cell {
        self.by_kind.iter().fold((0, 0), |a, b| add(a, *b))
    }

    /// `self` plus `other`'s counts and tokens.
    fn absorb(&mut self, other: &Row) {
        for (a, b) in self.by_kind.iter_mut().zip(&other.by_kind) {
            *a = add(*a, *b);
        }
        for (a, b) in self.by_host.iter_mut().zip(&other.by_host) {
            *a = add(*a, *b);
        }
        for (a, b) in self.by_position.iter_mut().zip(&other.by_position) {
            *a = add(*a, *b);
        }
        for (a, b) in self.by_place.iter_mut().zip(&other.by_place) {
            *a = add(*a, *b);
        }
        self.restated = add(self.restated, other.restated);
        self.history_tokens += other.history_tokens;
        self.archive_tokens += other.archive_tokens;
    }
}

fn pct((a, b): Cell) -> String {
    if b == 0 {
        "-".to_owned()
    } else {
        format!("{}/{} {:.0}%", a, b, 100.0 * a as f64 / b as f64)
    }
}

fn ratio(history: u64, archive: u64) -> String {
    if archive == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}×", history as f64 / archive as f64)
    }
}

/// The distinct values of `key` in `rows`, in their order.
fn distinct<'r>(rows: &'r [Row], key: impl Fn(&'r Row) -> &'r str) -> Vec<&'r str> {
    let mut out: Vec<&str> = Vec::new();
    for r in rows {
        let k = key(r);
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// The sum of the rows `keep` selects.
fn total(rows: &[Row], keep: impl Fn(&Row) -> bool) -> Row {
    let mut t = Row::default();
    for r in rows.iter().filter(|r| keep(r)) {
        t.absorb(r);
    }
    t
}

fn header(out: &mut String, cells: &[&str]) {
    let _ = writeln!(out, "| {} |", cells.join(" | "));
    let _ = writeln!(out, "|{}", " --- |".repeat(cells.len()));
}

/// The tables as Markdown: the planted facts over all sessions by
/// configuration and seed set; each session at the default reserve; the
/// sessions' own facts.
pub(crate) fn print(rows: &[Row]) -> String {
    let mut out = String::new();
    let (kinds, hosts, places) = dimensions();
    let positions: Vec<&str> = POSITIONS.iter().map(|p| p.0).collect();
    let configs = distinct(rows, |r| r.config.as_str());
    let sessions = distinct(rows, |r| r.session.as_str());
    let sets: Vec<Set> = [Set::Tuned, Set::HeldOut]
        .into_iter()
        .filter(|s| rows.iter().any(|r| r.set == *s))
        .collect();

    let mut cells = vec!["archive", "seeds"];
    cells.extend(&kinds);
    cells.extend(&hosts);
    cells.extend(&positions);
    cells.extend(["restated", "planted", "compression"]);
    header(&mut out, &cells);
    for config in &configs {
        for set in &sets {
            let t = total(rows, |r| r.config == *config && r.set == *set);
            let row: Vec<String> = t
                .by_kind
                .iter()
                .chain(&t.by_host)
                .chain(&t.by_position)
                .map(|c| pct(*c))
                .collect();
            let _ = writeln!(
                out,
                "| {config} | {} | {} | {} | {} | {} |",
                set.name(),
                row.join(" | "),
                pct(t.restated),
                pct(t.planted()),
                ratio(t.history_tokens, t.archive_tokens)
            );
        }
    }

    out.push('\n');
    let mut cells = vec!["session", "archive", "seeds"];
    cells.extend(&places);
    cells.extend(["planted", "history tokens", "archive tokens", "compression"]);
    header(&mut out, &cells);
    let default = format!("reserve {DEFAULT_RESERVE}");
    for session in &sessions {
        for config in configs.iter().filter(|c| c.ends_with(&default)) {
            for set in &sets {
                let n = rows
                    .iter()
                    .filter(|r| r.session == *session && r.config == *config && r.set == *set)
                    .count()
                    .max(1) as u64;
                let t = total(rows, |r| {
                    r.session == *session && r.config == *config && r.set == *set
                });
                let places: Vec<String> = t.by_place.iter().map(|c| pct(*c)).collect();
                let _ = writeln!(
                    out,
                    "| {session} | {config} | {} | {} | {} | {} | {} | {} |",
                    set.name(),
                    places.join(" | "),
                    pct(t.planted()),
                    t.history_tokens / n,
                    t.archive_tokens / n,
                    ratio(t.history_tokens, t.archive_tokens)
                );
            }
        }
    }

    out.push('\n');
    header(
        &mut out,
        &[
            "session",
            "seeds",
            "reader of images gets",
            "frames",
            "PNG tokens",
            "text archive tokens",
            "planted kept (images)",
            "planted kept (text)",
        ],
    );
    let text_config = format!("text, reserve {DEFAULT_RESERVE}");
    for session in &sessions {
        for set in &sets {
            let of = |config: &str| -> Vec<&Row> {
                rows.iter()
                    .filter(|r| r.session == *session && r.set == *set && r.config == config)
                    .collect()
            };
            let images: Vec<&Row> = rows
                .iter()
                .filter(|r| r.session == *session && r.set == *set && r.frames.is_some())
                .collect();
            let text = of(&text_config);
            if images.is_empty() || text.is_empty() {
                continue;
            }
            let written = images
                .iter()
                .filter(|r| r.frames.is_some_and(|f| f.2))
                .count();
            let gets = match written {
                0 if images.iter().any(|r| r.frames_keep_less) => {
                    "text (frames keep less)".to_owned()
                }
                0 => "text (frames cost more)".to_owned(),
                n if n == images.len() => "frames".to_owned(),
                n => format!("frames {n} of {}", images.len()),
            };
            let n = images.len() as u64;
            let frames: usize = images.iter().filter_map(|r| r.frames.map(|f| f.0)).sum();
            let png: u64 = images.iter().filter_map(|r| r.frames.map(|f| f.1)).sum();
            let text_tokens: u64 =
                text.iter().map(|r| r.archive_tokens).sum::<u64>() / text.len() as u64;
            let kept_images = images.iter().fold((0, 0), |a, r| add(a, r.planted()));
            let kept_text = text.iter().fold((0, 0), |a, r| add(a, r.planted()));
            let _ = writeln!(
                out,
                "| {session} | {} | {gets} | {} | {} | {text_tokens} | {} | {} |",
                set.name(),
                frames / images.len(),
                png / n,
                pct(kept_images),
                pct(kept_text)
            );
        }
    }

    out.push('\n');
    header(
        &mut out,
        &[
            "session",
            "archive",
            "paths",
            "commands",
            "user numbers",
            "user constraints",
        ],
    );
    for session in &sessions {
        for config in &configs {
            // The worst seed: a fact of the session's own counts only when
            // every planting kept it.
            let own: Vec<String> = (0..4)
                .map(|i| {
                    rows.iter()
                        .filter(|r| r.session == *session && r.config == *config)
                        .map(|r| r.own[i])
                        .min_by(|a, b| (a.0 * b.1.max(1)).cmp(&(b.0 * a.1.max(1))))
                        .map_or_else(|| "-".to_owned(), pct)
                })
                .collect();
            let _ = writeln!(out, "| {session} | {config} | {} |", own.join(" | "));
        }
    }
    out
}

/// Every row as JSON.
pub(crate) fn to_json(rows: &[Row]) -> Value {
    let cell = |(a, b): Cell| json!([a, b]);
    let (kinds, hosts, places) = dimensions();
    let named = |names: &[&str], cells: &[Cell]| -> serde_json::Map<String, Value> {
        names
            .iter()
            .zip(cells)
            .map(|(n, c)| ((*n).to_owned(), cell(*c)))
            .collect()
    };
    let positions: Vec<&str> = POSITIONS.iter().map(|p| p.0).collect();
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({
                    "session": r.session,
                    "seeds": r.set.name(),
                    "archive": r.config,
                    "byKind": named(&kinds, &r.by_kind),
                    "byHost": named(&hosts, &r.by_host),
                    "byPosition": named(&positions, &r.by_position),
                    "byPlace": named(&places, &r.by_place),
                    "restated": cell(r.restated),
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
