//! The tables of `retention-repeated`: one replay's figures, counted
//! fact by fact, and printed as Markdown by configuration, kind of session
//! and seed set, then session by session.

use std::fmt::Write as _;

use super::super::plant::{Host, Planted};
use super::super::report::{Cell, Set};
use super::super::templates::Kind;
use super::CONFIGS;

/// One replay's figures.
#[derive(Debug, Clone)]
pub(super) struct Row {
    pub(super) session: String,
    pub(super) filler: bool,
    pub(super) set: Set,
    pub(super) config: &'static str,
    pub(super) compactions: usize,
    /// Planted facts kept in each compaction's summary, in order.
    pub(super) after: Vec<Cell>,
    /// In the final context.
    pub(super) kept: Cell,
    pub(super) by_kind: [Cell; 5],
    pub(super) by_host: [Cell; 4],
    /// The last summary's tokens (characters / 4).
    pub(super) summary_tokens: u64,
}

pub(super) fn add(a: Cell, b: Cell) -> Cell {
    (a.0 + b.0, a.1 + b.1)
}

fn pct((a, b): Cell) -> String {
    if b == 0 {
        "-".to_owned()
    } else {
        format!("{}/{} {:.0}%", a, b, 100.0 * a as f64 / b as f64)
    }
}

pub(super) fn count(row: &mut Row, p: &Planted, hit: bool) {
    let one = (usize::from(hit), 1);
    row.kept = add(row.kept, one);
    let k = Kind::ALL.iter().position(|x| *x == p.kind).unwrap_or(0);
    row.by_kind[k] = add(row.by_kind[k], one);
    let h = Host::ALL.iter().position(|x| *x == p.host).unwrap_or(0);
    row.by_host[h] = add(row.by_host[h], one);
}

/// The tables as Markdown: by configuration, kind of session and seed
/// set; then each session.
pub(super) fn print(rows: &[Row]) -> String {
    let mut out = String::new();
    let sets: Vec<Set> = [Set::Tuned, Set::HeldOut]
        .into_iter()
        .filter(|s| rows.iter().any(|r| r.set == *s))
        .collect();
    let mut cells: Vec<&str> = vec!["configuration", "sessions", "seeds", "compactions"];
    cells.extend(Kind::ALL.iter().map(|k| k.name()));
    cells.extend(Host::ALL.iter().map(|h| h.name()));
    cells.extend(["after the 1st", "after the 3rd", "final context"]);
    let _ = writeln!(out, "| {} |", cells.join(" | "));
    let _ = writeln!(out, "|{}", " --- |".repeat(cells.len()));
    let nth = |r: &Row, n: usize| r.after.get(n).copied().unwrap_or((0, 0));
    for config in CONFIGS {
        for (group, filler) in [("filler", true), ("normal", false)] {
            for set in &sets {
                let of: Vec<&Row> = rows
                    .iter()
                    .filter(|r| r.config == config.name && r.filler == filler && r.set == *set)
                    .collect();
                if of.is_empty() {
                    continue;
                }
                let sum = |f: &dyn Fn(&Row) -> Cell| of.iter().fold((0, 0), |a, r| add(a, f(r)));
                let compactions: usize = of.iter().map(|r| r.compactions).sum();
                let mut line = vec![
                    config.name.to_owned(),
                    group.to_owned(),
                    set.name().to_owned(),
                    format!("{:.1}", compactions as f64 / of.len() as f64),
                ];
                line.extend((0..5).map(|k| pct(sum(&|r| r.by_kind[k]))));
                line.extend((0..4).map(|h| pct(sum(&|r| r.by_host[h]))));
                line.push(pct(sum(&|r| nth(r, 0))));
                line.push(pct(sum(&|r| nth(r, 2))));
                line.push(pct(sum(&|r| r.kept)));
                let _ = writeln!(out, "| {} |", line.join(" | "));
            }
        }
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "| session | configuration | seeds | compactions | after each compaction | final context | last summary tokens |"
    );
    let _ = writeln!(out, "|{}", " --- |".repeat(7));
    let mut sessions: Vec<&str> = Vec::new();
    for r in rows {
        if !sessions.contains(&r.session.as_str()) {
            sessions.push(&r.session);
        }
    }
    for session in sessions {
        for config in CONFIGS {
            for set in &sets {
                let of: Vec<&Row> = rows
                    .iter()
                    .filter(|r| r.session == session && r.config == config.name && r.set == *set)
                    .collect();
                if of.is_empty() {
                    continue;
                }
                let most = of.iter().map(|r| r.after.len()).max().unwrap_or(0);
                let after: Vec<String> = (0..most)
                    .map(|n| {
                        let cell = of
                            .iter()
                            .filter_map(|r| r.after.get(n))
                            .fold((0, 0), |a, c| add(a, *c));
                        if cell.1 == 0 {
                            "-".to_owned()
                        } else {
                            format!("{:.0}%", 100.0 * cell.0 as f64 / cell.1 as f64)
                        }
                    })
                    .collect();
                let kept = of.iter().fold((0, 0), |a, r| add(a, r.kept));
                let compactions: Vec<String> =
                    of.iter().map(|r| r.compactions.to_string()).collect();
                let tokens = of.iter().map(|r| r.summary_tokens).sum::<u64>() / of.len() as u64;
                let _ = writeln!(
                    out,
                    "| {session} | {} | {} | {} | {} | {} | {tokens} |",
                    config.name,
                    set.name(),
                    compactions.join(", "),
                    after.join(" → "),
                    pct(kept)
                );
            }
        }
    }
    out
}
