//! The serve case's own table: its per-turn and per-call medians from the
//! fastest run, the `context` and `plan` methods of `musepi serve` each
//! beside its baseline (its own answer parsed and written again).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{BenchFile, Sample};

/// The columns: header, width.
const COLUMNS: [(&str, usize); 21] = [
    ("file", 10),
    ("open", 8),
    ("append", 7),
    ("floor", 7),
    ("overhd", 7),
    ("afterA", 7),
    ("beforeR", 7),
    ("maint", 7),
    ("first10", 7),
    ("last10", 7),
    ("prune", 6),
    ("prepare", 7),
    ("(msgs)", 7),
    ("status", 7),
    ("context", 8),
    ("floor", 7),
    ("ratio", 7),
    ("plan", 8),
    ("floor", 7),
    ("ratio", 7),
    ("answers", 16),
];

/// Prints the table when the serve case ran.
pub(super) fn print(table: &[(BenchFile, u64, BTreeMap<String, Sample>)]) {
    let rows: Vec<(String, &Value)> = table
        .iter()
        .filter_map(|(f, _, r)| Some((f.label(), &r.get("serve")?.detail)))
        .collect();
    if rows.is_empty() {
        return;
    }
    println!();
    println!(
        "serve, milliseconds (medians of the fastest run; `status`, `context` and `plan` through `musepi serve` at the leaf, the last two against parsing and writing their own answer):"
    );
    let header: Vec<String> = COLUMNS
        .iter()
        .map(|(name, width)| format!("{name:>width$}"))
        .collect();
    println!("{}", header.join(" "));
    for (label, d) in rows {
        let ms = |key: &str| d[key].as_f64().unwrap_or(f64::NAN);
        let method = |key: &str| {
            let m = &d[key];
            let (t, floor) = (
                m["ms"].as_f64().unwrap_or(f64::NAN),
                m["floorMs"].as_f64().unwrap_or(f64::NAN),
            );
            (t, floor, m["answerBytes"].as_f64().unwrap_or(f64::NAN))
        };
        let (context, context_floor, context_bytes) = method("serveContext");
        let (plan, plan_floor, plan_bytes) = method("servePlan");
        let (status, _, _) = method("serveStatus");
        let cells = [
            label,
            format!("{:.0}", ms("openMs")),
            format!("{:.3}", ms("appendMs")),
            format!("{:.3}", ms("appendFloorMs")),
            format!("{:.3}", ms("appendOverheadMs")),
            format!("{:.3}", ms("afterAssistantMs")),
            format!("{:.3}", ms("beforeRequestMs")),
            format!("{:.3}", ms("maintenanceMs")),
            format!("{:.3}", ms("firstTenTurnsMs")),
            format!("{:.3}", ms("lastTenTurnsMs")),
            format!("{:.2}", ms("planPruneMs")),
            format!("{:.2}", ms("planPrepareMs")),
            format!("{:.0}", ms("planMessagesToSummarize")),
            format!("{status:.3}"),
            format!("{context:.2}"),
            format!("{context_floor:.2}"),
            format!("{:.2}x", context / context_floor),
            format!("{plan:.2}"),
            format!("{plan_floor:.2}"),
            format!("{:.2}x", plan / plan_floor),
            format!("{:.0}+{:.0} KB", context_bytes / 1e3, plan_bytes / 1e3),
        ];
        let line: Vec<String> = cells
            .iter()
            .zip(COLUMNS)
            .map(|(cell, (_, width))| format!("{cell:>width$}"))
            .collect();
        println!("{}", line.join(" "));
    }
}
