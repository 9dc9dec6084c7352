//! `musepi recall FILE --entry ID | --grep TEXT`: an entry's content as
//! the agent wrote it (a pruned result's original from the prune store),
//! or a search of what compactions and pruning took out of the context
//! (docs/design.md, "Recall"). It writes nothing; every page is bounded,
//! and `--offset` pages on.

use std::fmt::Write as _;

use musepi_runtime::context::Search;

use crate::cli::RecallArgs;
use crate::commands::context::resolve_leaf;
use crate::commands::files::{Input, load_or_fail};
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::{
    Color, column_width, counted, escape_controls, escaped_text, note, pad_end, pad_start,
    print_json, print_text,
};
use crate::report::recall::{
    EntryPage, Originals, PAGE_BYTES, PAGE_MATCHES, SearchPage, entry_page, search_page,
};

/// Runs the command.
pub fn run(args: &RecallArgs, ctx: &Ctx) -> CmdResult {
    let file = args.file.path()?;
    let input = Input::from_arg(&file);
    let loaded = load_or_fail(&input, ctx)?;
    let session = &loaded.session;
    let leaf = resolve_leaf(session, args.leaf.as_deref())?;
    let store_of = args.store_of.clone().or(match &input {
        Input::File(path) => Some(path.clone()),
        Input::Stdin => None,
    });
    let mut originals = Originals::open(store_of.as_deref(), session);
    if let Some(id) = &args.entry {
        let index = session
            .index_of(id)
            .ok_or_else(|| Failure::unknown_entry(id))?;
        let page = entry_page(
            session,
            leaf,
            index,
            &mut originals,
            args.offset,
            args.limit.unwrap_or(PAGE_BYTES),
        );
        if page.pruned && !page.original {
            return Err(no_original(&page.entry_id, &page.warnings));
        }
        say_warnings(&page.warnings, ctx);
        if ctx.json() {
            print_json(&page).or_failed()?;
        } else {
            print_text(&entry_text(&page, ctx)).or_failed()?;
        }
        return Ok(Exit::Ok);
    }
    let query = args.grep.as_deref().unwrap_or_default();
    let search = Search::new(query)
        .ok_or_else(|| Failure::usage(anyhow::anyhow!("--grep needs a text to search for")))?;
    let page = search_page(
        session,
        leaf,
        &search,
        query,
        &mut originals,
        args.offset,
        args.limit.unwrap_or(PAGE_MATCHES),
    );
    say_warnings(&page.warnings, ctx);
    if ctx.json() {
        print_json(&page).or_failed()?;
    } else {
        print_text(&search_text(&page, ctx)).or_failed()?;
    }
    Ok(Exit::Ok)
}

/// A pruned result whose original the prune store does not have (exit 1,
/// `no-original`), with what the store said about it.
pub(crate) fn no_original(id: &str, warnings: &[String]) -> Failure {
    let why = warnings.first().map_or_else(
        || {
            "it is not in the prune store beside the session (the store was deleted, or the result was pruned before musepi kept originals)".to_owned()
        },
        Clone::clone,
    );
    Failure::new(
        Exit::Failed,
        "no-original",
        anyhow::anyhow!("entry {id} was pruned and its original cannot be read: {why}"),
    )
}

fn say_warnings(warnings: &[String], ctx: &Ctx) {
    for w in warnings {
        note(ctx.quiet(), &format!("musepi: warning: {w}"));
    }
}

/// What an entry's page shows people: a line that says what it is, the
/// text, and where the next page starts when there is one.
fn entry_text(page: &EntryPage, ctx: &Ctx) -> String {
    let st = ctx.style;
    let mut head = format!(
        "{}  {}",
        st.paint(Color::Cyan, &escape_controls(&page.entry_id)),
        escape_controls(&page.role)
    );
    if let Some(tool) = &page.tool_name {
        let _ = write!(head, " {}", escape_controls(tool));
    }
    let mut marks = Vec::new();
    if page.summarized {
        marks.push("summarized by a compaction");
    }
    if page.pruned {
        marks.push("pruned; the original, from the prune store");
    }
    if !marks.is_empty() {
        let _ = write!(head, "  ({})", marks.join("; "));
    }
    let mut out = format!("{}\n", st.paint(Color::Dim, &head));
    out.push_str(&escaped_text(&page.text));
    if !out.ends_with('\n') {
        out.push('\n');
    }
    if page.offset > 0 || page.next.is_some() {
        let mut foot = format!(
            "bytes {}–{} of {}",
            page.offset,
            page.offset + page.text.len(),
            page.length
        );
        if let Some(next) = page.next {
            let _ = write!(foot, "; the next page: --offset {next}");
        }
        let _ = writeln!(out, "{}", st.paint(Color::Dim, &foot));
    }
    out
}

/// A search's page for people: one aligned row per match, then the counts
/// and where the next page starts.
fn search_text(page: &SearchPage, ctx: &Ctx) -> String {
    let st = ctx.style;
    let rows: Vec<[String; 5]> = page
        .matches
        .iter()
        .map(|m| {
            let place = match (m.summarized, m.pruned) {
                (true, true) => "summarized, pruned",
                (true, false) => "summarized",
                (false, _) => "pruned",
            };
            [
                escape_controls(&m.entry_id).into_owned(),
                escape_controls(&m.role).into_owned(),
                m.tool_name
                    .as_deref()
                    .map(|t| escape_controls(t).into_owned())
                    .unwrap_or_default(),
                place.to_owned(),
                m.line.to_string(),
            ]
        })
        .collect();
    let width = |k: usize, min: usize| column_width(rows.iter().map(|r| &r[k]), min);
    let (w_id, w_role, w_tool, w_place, w_line) = (
        width(0, 8),
        width(1, 4),
        width(2, 4),
        width(3, 5),
        width(4, 4),
    );
    let mut out = String::new();
    if !rows.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            st.paint(
                Color::Dim,
                &format!(
                    "{}  {}  {}  {}  {}  text",
                    pad_end("entry", w_id),
                    pad_end("role", w_role),
                    pad_end("tool", w_tool),
                    pad_end("where", w_place),
                    pad_start("line", w_line),
                )
            )
        );
    }
    for (r, m) in rows.iter().zip(&page.matches) {
        let _ = writeln!(
            out,
            "{}  {}  {}  {}  {}  {}",
            st.paint(Color::Cyan, &pad_end(&r[0], w_id)),
            pad_end(&r[1], w_role),
            pad_end(&r[2], w_tool),
            pad_end(&r[3], w_place),
            pad_start(&r[4], w_line),
            escape_controls(&m.text),
        );
    }
    let shown = if page.matches.is_empty() {
        String::new()
    } else {
        format!(
            "{}–{} of ",
            page.offset + 1,
            page.offset + page.matches.len()
        )
    };
    let mut foot = format!(
        "{shown}{} in {} searched",
        counted(page.total, "match", "matches"),
        counted(page.searched, "entry", "entries"),
    );
    if !page.unrecoverable.is_empty() {
        let _ = write!(
            foot,
            "; {} with no original in the prune store: {}",
            counted(page.unrecoverable.len(), "pruned result", "pruned results"),
            page.unrecoverable.join(", ")
        );
    }
    if let Some(next) = page.next {
        let _ = write!(foot, "; the next page: --offset {next}");
    }
    let _ = writeln!(out, "{foot}");
    out
}
