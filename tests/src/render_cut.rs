//! Renderings of a compaction preparation: the cut point as a table of the
//! path with the region of every entry, the cut, the split-turn flag,
//! `tokensBefore`, the `keepRecentTokens` used and the file lists.

use std::collections::HashSet;
use std::fmt::Write as _;

use musepi_compaction::{
    CompactionSettings, NothingToCompact, Preparation, find_cut_point, is_turn_start,
    is_valid_cut_point, prepare, summary_message,
};
use musepi_context_builder::{ContextMessage, estimate_tokens, format_files_block};
use musepi_session_model::{EntryBody, Session};

use crate::render_context::kind;
use crate::show::{Show, message_text};
use crate::table::Table;

/// Which path entries the table lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// Every entry of the path.
    All,
    /// The entries within this many positions of the turn start and the
    /// cut, and the last entries; the rest is summarized per region.
    Around(usize),
}

/// Regions, in the order they are listed. A compaction entry inside the
/// range is in none of them (`no-region`).
const REGIONS: [&str; 5] = [
    "before-boundary",
    "summarize",
    "prefix",
    "kept",
    "no-region",
];

/// `prepare` at `leaf` with `settings`, rendered: the settings line, the
/// table, then the outcome.
pub fn render_cut(
    session: &Session,
    leaf: usize,
    settings: &CompactionSettings,
    show: Show,
    rows: Rows,
) -> String {
    let entries = session.entries();
    let mut out = format!(
        "leaf: {} ({})\n",
        entries[leaf].id,
        entries[leaf].kind_label()
    );
    let _ = writeln!(
        out,
        "settings: keepRecentTokens {}, adaptation {}, reserveTokens {}",
        settings.keep_recent_tokens,
        if settings.adapt_keep_recent {
            "on"
        } else {
            "off"
        },
        settings.reserve_tokens
    );
    match prepare(session, Some(leaf), settings) {
        Ok(prep) => render_preparation(&mut out, session, &prep, show, rows),
        Err(e) => render_nothing(&mut out, session, leaf, settings, &e),
    }
    out
}

fn render_nothing(
    out: &mut String,
    session: &Session,
    leaf: usize,
    settings: &CompactionSettings,
    e: &NothingToCompact,
) {
    let _ = writeln!(out, "\nno preparation: {e}");
    if matches!(e, NothingToCompact::AlreadyCompacted) {
        return;
    }
    let entries = session.entries();
    let path = session.path_indices(leaf);
    // The range a preparation would cover: from the previous compaction's
    // first kept entry when it is on the path, else just after it.
    let start = path
        .iter()
        .rposition(|&i| matches!(entries[i].body, EntryBody::Compaction(_)))
        .map_or(0, |p| {
            let kept = match &entries[path[p]].body {
                EntryBody::Compaction(c) => c.first_kept_entry_id.as_ref(),
                _ => None,
            };
            kept.and_then(|id| path[..p].iter().position(|&i| entries[i].id == *id))
                .unwrap_or(p + 1)
        });
    let cut = find_cut_point(
        entries,
        &path,
        start,
        path.len(),
        settings.keep_recent_tokens,
    );
    let _ = writeln!(
        out,
        "cut search over path [{start}, {}) with keepRecentTokens {}: first kept #{} {} ({}), split {}",
        path.len(),
        settings.keep_recent_tokens,
        cut.first_kept_index,
        entries[path[cut.first_kept_index]].id,
        kind(&entries[path[cut.first_kept_index]]),
        yes_no(cut.is_split_turn)
    );
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// Counts of one region for the summary table.
#[derive(Clone, Default)]
struct RegionStats {
    entries: usize,
    messages: usize,
    tokens: u64,
    first: Option<usize>,
    last: Option<usize>,
}

struct Regions {
    summarize: HashSet<usize>,
    prefix: HashSet<usize>,
    kept: HashSet<usize>,
}

fn entry_set(messages: &[ContextMessage<'_>]) -> HashSet<usize> {
    messages.iter().map(|m| m.entry_index).collect()
}

/// The region of path position `pos`: from the preparation's message
/// lists for entries that give a message, from the positions otherwise.
/// The range starts at the previous compaction's first kept entry when it
/// is on the path, so what that compaction kept is summarized or kept
/// again, and the compaction entry itself is in no region.
fn region(
    prep: &Preparation<'_>,
    r: &Regions,
    session: &Session,
    path: &[usize],
    pos: usize,
) -> &'static str {
    let i = path[pos];
    if r.prefix.contains(&i) {
        return "prefix";
    }
    if r.kept.contains(&i) {
        return "kept";
    }
    if r.summarize.contains(&i) {
        return "summarize";
    }
    if pos < prep.boundary_start {
        return "before-boundary";
    }
    if matches!(session.entries()[i].body, EntryBody::Compaction(_)) {
        return "no-region";
    }
    if summary_message(session, i).is_some() {
        // A message the preparation lost: should never happen.
        return "MISSING";
    }
    if pos < history_end(prep) {
        "summarize"
    } else if pos < prep.cut.first_kept_index {
        "prefix"
    } else {
        "kept"
    }
}

fn history_end(prep: &Preparation<'_>) -> usize {
    match prep.cut.turn_start_index {
        Some(ts) if prep.cut.is_split_turn => ts,
        _ => prep.cut.first_kept_index,
    }
}

fn render_preparation(
    out: &mut String,
    session: &Session,
    prep: &Preparation<'_>,
    show: Show,
    rows: Rows,
) {
    let entries = session.entries();
    let path = prep.branch();
    let at = |pos: usize| &entries[path[pos]];
    let r = Regions {
        summarize: entry_set(&prep.messages_to_summarize),
        prefix: entry_set(&prep.turn_prefix_messages),
        kept: entry_set(&prep.recent_messages),
    };
    let _ = writeln!(out, "keepRecentTokens used: {}", prep.keep_recent_tokens);
    match prep.previous_compaction {
        Some(p) => {
            let _ = writeln!(
                out,
                "previous compaction: #{p} {}, its first kept entry: {}",
                at(p).id,
                prep.previously_kept_start
                    .map_or("(not on the path)".to_owned(), |k| format!(
                        "#{k} {}",
                        at(k).id
                    ))
            );
        }
        None => out.push_str("previous compaction: (none)\n"),
    }
    let _ = writeln!(
        out,
        "cut search: path [{}, {})\n",
        prep.boundary_start, prep.boundary_end
    );

    // The walk back from the end over message entries, as docs/design.md, "Cut points and regions" sums it.
    let mut from_end = vec![None; path.len()];
    let mut acc = 0u64;
    for pos in (prep.boundary_start..prep.boundary_end).rev() {
        if let Some(m) = at(pos).message() {
            acc += estimate_tokens(m);
            from_end[pos] = Some(acc);
        }
    }
    let mut cols = vec![
        "#>",
        "entry",
        "kind",
        "tokens>",
        "from end>",
        "cut?",
        "region",
    ];
    if show == Show::Hash {
        cols.push("sha256[..12]");
    }
    let mut t = Table::new(&cols);
    let shown = |pos: usize| match rows {
        Rows::All => true,
        Rows::Around(n) => {
            let near = |c: usize| pos + n >= c && pos <= c + n;
            near(prep.cut.first_kept_index)
                || prep.cut.turn_start_index.is_some_and(near)
                || pos + 3 >= path.len()
                || pos < 2
        }
    };
    let mut skipped = 0;
    for (pos, acc) in from_end.iter().enumerate() {
        if !shown(pos) {
            skipped += 1;
            continue;
        }
        if skipped > 0 {
            t.gap(format!("     … {skipped} entries"));
            skipped = 0;
        }
        let e = at(pos);
        let message = summary_message(session, path[pos]);
        let mut marks = Vec::new();
        if is_valid_cut_point(e) {
            marks.push("cut");
        }
        if is_turn_start(e) {
            marks.push("turn");
        }
        let mut row = vec![
            pos.to_string(),
            e.id.to_string(),
            kind(e),
            message
                .as_ref()
                .map_or("-".to_owned(), |m| estimate_tokens(m).to_string()),
            acc.map_or(String::new(), |a| a.to_string()),
            marks.join("+"),
            format!(
                "{}{}",
                region(prep, &r, session, &path, pos),
                if pos == prep.cut.first_kept_index {
                    "  <- first kept"
                } else {
                    ""
                }
            ),
        ];
        if show == Show::Hash {
            row.push(message.map_or(String::new(), |m| show.text(&message_text(&m))));
        }
        t.row(row);
    }
    if skipped > 0 {
        t.gap(format!("     … {skipped} entries"));
    }
    out.push_str(&t.render());
    out.push('\n');
    outcome(out, session, prep, &r, show);
}

fn outcome(out: &mut String, session: &Session, prep: &Preparation<'_>, r: &Regions, show: Show) {
    let entries = session.entries();
    let path = prep.branch();
    let at = |pos: usize| &entries[path[pos]];
    let fk = prep.cut.first_kept_index;
    let _ = writeln!(
        out,
        "first kept: #{fk} {} ({})",
        prep.first_kept_entry_id,
        kind(at(fk))
    );
    match prep.cut.turn_start_index {
        Some(ts) => {
            let _ = writeln!(
                out,
                "split turn: {}, turn start #{ts} {} ({})",
                yes_no(prep.is_split_turn()),
                at(ts).id,
                kind(at(ts))
            );
        }
        None => {
            let _ = writeln!(
                out,
                "split turn: {}, no turn start",
                yes_no(prep.is_split_turn())
            );
        }
    }
    let _ = writeln!(out, "tokensBefore: {}", prep.tokens_before);
    let _ = writeln!(
        out,
        "previous summary: {}",
        prep.previous_summary
            .as_deref()
            .map_or("(none)".to_owned(), |s| show.text(s))
    );
    out.push('\n');
    let mut t = Table::new(&[
        "region",
        "entries>",
        "messages>",
        "tokens>",
        "first",
        "last",
    ]);
    let mut per = vec![RegionStats::default(); REGIONS.len()];
    for pos in 0..path.len() {
        let name = region(prep, r, session, &path, pos);
        let Some(k) = REGIONS.iter().position(|n| *n == name) else {
            continue;
        };
        let slot = &mut per[k];
        slot.entries += 1;
        let listed = [&r.summarize, &r.prefix, &r.kept]
            .iter()
            .any(|s| s.contains(&path[pos]));
        if listed {
            slot.messages += 1;
            slot.tokens += summary_message(session, path[pos]).map_or(0, |m| estimate_tokens(&m));
        }
        slot.first = slot.first.or(Some(pos));
        slot.last = Some(pos);
    }
    for (name, s) in REGIONS.iter().zip(per) {
        let f = |p: Option<usize>| p.map_or("-".to_owned(), |p| format!("#{p} {}", at(p).id));
        t.row([
            (*name).to_owned(),
            s.entries.to_string(),
            s.messages.to_string(),
            s.tokens.to_string(),
            f(s.first),
            f(s.last),
        ]);
    }
    out.push_str(&t.render());
    let _ = writeln!(
        out,
        "\nlists: messagesToSummarize {}, turnPrefixMessages {}, recentMessages {}",
        prep.messages_to_summarize.len(),
        prep.turn_prefix_messages.len(),
        prep.recent_messages.len()
    );
    file_lists(out, prep, show);
}

fn file_lists(out: &mut String, prep: &Preparation<'_>, show: Show) {
    let lists = prep.file_ops.lists();
    match show {
        Show::Preview => {
            let _ = writeln!(
                out,
                "file lists: readFiles [{}], modifiedFiles [{}]",
                lists.read_files.join(", "),
                lists.modified_files.join(", ")
            );
            let block = format_files_block(&lists, &prep.file_ops.read);
            if !block.is_empty() {
                let _ = writeln!(out, "{block}");
            }
        }
        Show::Hash => {
            let _ = writeln!(
                out,
                "file lists: readFiles {} (sha {}), modifiedFiles {} (sha {})",
                lists.read_files.len(),
                show.text(&lists.read_files.join("\n")),
                lists.modified_files.len(),
                show.text(&lists.modified_files.join("\n"))
            );
        }
    }
}
