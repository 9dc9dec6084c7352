//! Renderings of a tree navigation that summarizes the branch it leaves:
//! the abandoned entries with their tokens and whether they fit the
//! budget, the summary request, the stored summary for a fixed answer, and
//! where the leaf lands.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use musepi_branch_summary::{
    BranchPreparation, Collected, FALLBACK_CONTEXT_WINDOW, PrepareOptions, RequestOptions, Summary,
    ToolResults, apply_navigation, collect_entries, destination, finish, prepare_branch,
    summary_request, token_budget,
};
use musepi_context_builder::SummaryResponse;
use musepi_session_model::{AgentMessage, EntryBody, SequentialIds, Session, Stamp};

use crate::render_context::kind;
use crate::render_request::render_request;
use crate::show::{message_text, preview};
use crate::table::Table;

/// Characters of the text preview in the entry table.
const PREVIEW: usize = 36;

/// "Now" for the summary entry a navigation appends.
const NOW_MS: i64 = 1_741_000_000_000;

/// One navigation to render.
#[derive(Debug, Clone, Copy)]
pub struct Navigation<'a> {
    /// The leaf navigated away from.
    pub old_leaf: &'a str,
    /// The entry navigated to; `None` is the root (before the first entry).
    pub target: Option<&'a str>,
    /// The summarizing model's context window, `None` when unknown.
    pub context_window: Option<u64>,
    /// `branchSummary.reserveTokens`.
    pub reserve_tokens: u64,
    /// What happens to tool results.
    pub tool_results: ToolResults,
    /// The summarizer system prompt.
    pub system_prompt: &'a str,
    /// What the model answers, fixed.
    pub answer: &'a str,
}

/// An entry as `id (kind)`, or `(root)` for none.
fn entry_ref(session: &Session, position: Option<usize>) -> String {
    position.map_or_else(
        || "(root)".to_owned(),
        |i| {
            let e = &session.entries()[i];
            format!("{} ({})", e.id, kind(e))
        },
    )
}

fn tool_results_name(t: ToolResults) -> &'static str {
    match t {
        ToolResults::Truncated => "truncated to 2000 characters, useless ones left out (ours)",
        ToolResults::Skip => "skipped (the reference)",
    }
}

fn budget_line(nav: &Navigation<'_>, budget: u64) -> String {
    let window = match nav.context_window.filter(|&w| w > 0) {
        Some(w) => format!("context window {w}"),
        None => format!("context window unknown, so {FALLBACK_CONTEXT_WINDOW}"),
    };
    let limit = if budget == 0 { " = no limit" } else { "" };
    format!(
        "budget: {budget}{limit} ({window} - reserve {})",
        nav.reserve_tokens
    )
}

fn list(paths: &[String]) -> String {
    if paths.is_empty() {
        "(none)".to_owned()
    } else {
        paths.join(", ")
    }
}

/// Why an entry gave the branch summary no message.
fn no_message_reason(
    session: &Session,
    i: usize,
    nav: &Navigation<'_>,
    dropped: &[String],
) -> &'static str {
    match &session.entries()[i].body {
        EntryBody::Message(AgentMessage::ToolResult(t)) => match nav.tool_results {
            ToolResults::Skip => "- (tool result skipped)",
            ToolResults::Truncated if dropped.contains(&t.tool_call_id) => {
                "- (useless result left out)"
            }
            ToolResults::Truncated => "- (no message)",
        },
        _ => "- (no message)",
    }
}

/// The collected entries, oldest first: tokens and whether each fit.
fn entry_table(
    session: &Session,
    collected: &Collected,
    prep: &BranchPreparation<'_>,
    unlimited: &BranchPreparation<'_>,
    budget: u64,
    nav: &Navigation<'_>,
) -> String {
    // Every message the entries give, as the budget walk sees it.
    let messages: HashMap<usize, (&AgentMessage, u64)> = unlimited
        .items
        .iter()
        .map(|it| {
            (
                it.message.entry_index,
                (it.message.message.as_ref(), it.tokens),
            )
        })
        .collect();
    // Taken items whose running total (newest first) passes the budget:
    // summaries kept under the 90% rule.
    let mut past_budget = HashSet::new();
    let mut running = 0;
    for it in prep.items.iter().rev() {
        running += it.tokens;
        if budget > 0 && running > budget {
            past_budget.insert(it.message.entry_index);
        }
    }
    let taken: HashSet<usize> = prep.items.iter().map(|it| it.message.entry_index).collect();
    // The walk takes the newest messages and stops at the first that does
    // not fit (taking it only when it is a summary under the 90% rule):
    // nothing older than a message left out is taken.
    let with_message: Vec<usize> = collected
        .entries
        .iter()
        .copied()
        .filter(|i| messages.contains_key(i))
        .collect();
    let first_taken = with_message
        .iter()
        .position(|i| taken.contains(i))
        .unwrap_or(with_message.len());
    assert!(
        with_message[first_taken..]
            .iter()
            .all(|i| taken.contains(i)),
        "a message older than one left out was taken"
    );
    let stopped_at = if past_budget.is_empty() {
        first_taken.checked_sub(1).map(|n| with_message[n])
    } else {
        None
    };

    let mut t = Table::new(&["#>", "entry", "kind", "message", "tokens>", "fits", "text"]);
    for (n, &i) in collected.entries.iter().enumerate() {
        let e = &session.entries()[i];
        let text = messages
            .get(&i)
            .map(|(m, _)| *m)
            .or_else(|| e.message())
            .map_or_else(String::new, |m| preview(&message_text(m), PREVIEW));
        let (role, tokens, fits) = match messages.get(&i) {
            None => (
                "-".to_owned(),
                "-".to_owned(),
                no_message_reason(session, i, nav, &unlimited.dropped_calls).to_owned(),
            ),
            Some((m, tokens)) => {
                let fits = if past_budget.contains(&i) {
                    "yes, past the budget (a summary, total under 90%)"
                } else if taken.contains(&i) {
                    "yes"
                } else if Some(i) == stopped_at {
                    "no (over the budget: the walk stops)"
                } else {
                    "no (not reached)"
                };
                (m.role().to_owned(), tokens.to_string(), fits.to_owned())
            }
        };
        t.row([
            (n + 1).to_string(),
            e.id.to_string(),
            kind(e),
            role,
            tokens,
            fits,
            text,
        ]);
    }
    t.render()
}

fn summary_section(summary: Option<&Summary>) -> String {
    let mut out = String::new();
    match summary {
        None => out.push_str("(none: nothing was abandoned, so no summary is written)\n"),
        Some(s) => {
            let _ = writeln!(
                out,
                "details: {}",
                s.details.as_ref().map_or(
                    "(none)".to_owned(),
                    musepi_session_model::json::js_stringify
                )
            );
            let _ = writeln!(out, "fromExtension: {}", s.from_extension);
            let _ = writeln!(out, "\n{}", s.summary);
        }
    }
    out
}

/// The whole navigation: ends, budget, the entry table, totals and file
/// lists, the request (or why there is none), the answer and the stored
/// summary, and where the leaf and the summary entry land.
pub fn render_navigation(session: &Session, nav: &Navigation<'_>) -> String {
    let position = |id: &str| {
        session
            .index_of(id)
            .unwrap_or_else(|| panic!("no entry {id}"))
    };
    let old_leaf = position(nav.old_leaf);
    let target = nav.target.map(position);
    let collected =
        collect_entries(session, Some(old_leaf), target).unwrap_or_else(|e| panic!("collect: {e}"));
    let budget = token_budget(nav.context_window, nav.reserve_tokens);
    let prepare = |b| {
        prepare_branch(
            session,
            &collected.entries,
            b,
            &PrepareOptions {
                tool_results: nav.tool_results,
            },
        )
        .unwrap_or_else(|e| panic!("prepare: {e}"))
    };
    let prep = prepare(budget);
    let unlimited = prepare(0);

    let mut out = String::new();
    let _ = writeln!(out, "tool results: {}", tool_results_name(nav.tool_results));
    let _ = writeln!(out, "old leaf: {}", entry_ref(session, Some(old_leaf)));
    let _ = writeln!(out, "target: {}", entry_ref(session, target));
    let _ = writeln!(
        out,
        "common ancestor: {}",
        collected
            .common_ancestor
            .map_or_else(|| "(none)".to_owned(), |i| entry_ref(session, Some(i)))
    );
    let _ = writeln!(out, "{}", budget_line(nav, budget));

    let _ = writeln!(
        out,
        "\n=== collected entries: {} (oldest first) ===",
        collected.entries.len()
    );
    if collected.is_empty() {
        out.push_str("(none)\n");
    } else {
        out.push_str(&entry_table(
            session, &collected, &prep, &unlimited, budget, nav,
        ));
    }
    let _ = writeln!(
        out,
        "\ntotal tokens: {} in {} message{} (budget {budget})",
        prep.total_tokens,
        prep.items.len(),
        if prep.items.len() == 1 { "" } else { "s" }
    );
    let lists = prep.file_lists();
    let _ = writeln!(out, "read files: {}", list(&lists.read_files));
    let _ = writeln!(out, "modified files: {}", list(&lists.modified_files));

    let request = summary_request(&prep, &RequestOptions::new(nav.system_prompt));
    let summary = if collected.is_empty() {
        None
    } else if request.is_some() {
        Some(finish(
            &prep,
            &SummaryResponse {
                text: nav.answer.to_owned(),
                usage: None,
                truncated: false,
            },
        ))
    } else {
        Some(Summary::no_content())
    };
    out.push_str("\n=== request ===\n");
    match &request {
        Some(r) => {
            out.push_str(&render_request(r));
            let _ = writeln!(out, "\n=== model answer (fixed) ===\n{}", nav.answer);
        }
        None if collected.is_empty() => {
            out.push_str("no request: nothing was abandoned\n");
        }
        None => {
            let _ = writeln!(out, "no request: {}", musepi_branch_summary::NO_CONTENT);
        }
    }
    let _ = write!(
        out,
        "\n=== stored summary ===\n{}",
        summary_section(summary.as_ref())
    );

    let dest = destination(session, nav.target).unwrap_or_else(|e| panic!("destination: {e}"));
    let new_leaf = dest.new_leaf.as_ref().map(|id| position(id.as_str()));
    out.push_str("\n=== destination ===\n");
    let _ = writeln!(out, "new leaf: {}", entry_ref(session, new_leaf));
    let _ = writeln!(
        out,
        "editor text: {}",
        dest.editor_text
            .as_deref()
            .map_or_else(|| "(none)".to_owned(), |t| preview(t, 200))
    );
    let mut after = session.clone();
    let mut ids = SequentialIds::new();
    let mut stamp = Stamp {
        ids: &mut ids,
        now: NOW_MS,
    };
    let entry = apply_navigation(&mut after, &dest, summary.as_ref(), None, &mut stamp)
        .unwrap_or_else(|e| panic!("apply: {e}"));
    if let Some(id) = &entry {
        let e = after
            .get(id.as_str())
            .unwrap_or_else(|| panic!("no entry {id}"));
        let from_id = match &e.body {
            EntryBody::BranchSummary(b) => b.from_id.clone(),
            _ => format!("(not a branch summary: {})", kind(e)),
        };
        let _ = writeln!(
            out,
            "summary entry: {id}, parent {}, fromId {from_id}",
            e.parent_id
                .as_ref()
                .map_or_else(|| "(none)".to_owned(), ToString::to_string)
        );
    } else {
        out.push_str("summary entry: (none)\n");
    }
    let _ = writeln!(
        out,
        "leaf after navigation: {}",
        after
            .leaf_id()
            .map_or_else(|| "(none)".to_owned(), ToString::to_string)
    );
    out
}
