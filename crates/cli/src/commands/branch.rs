//! `musepi branch FILE --to ID|root`: tree navigation, optionally leaving a
//! summary of the abandoned branch under the target.

use std::fmt::Write as _;

use musepi_protocol::cli::{BranchDoc, BranchDryRunDoc};
use musepi_runtime::MaintenanceStrategy;
use musepi_runtime::branch::{BranchStrategy, NavigateOptions, TreeRequest, navigate};
use musepi_runtime::branch::{
    PrepareOptions, RequestOptions, ToolResults, collect_entries, prepare_branch, summary_request,
    token_budget,
};
use musepi_runtime::compaction::SUMMARIZATION_SYSTEM;
use musepi_runtime::context::{context_thinking_level, summary_reasoning};
use musepi_runtime::hooks::Summarizer;
use musepi_session_model::Journal;

use crate::cli::BranchArgs;
use crate::commands::pi_dir::CHANGES_THE_FILE;
use crate::commands::runtime::{Progress, default_branch_strategy, provider, runtime, settings};
use crate::commands::writer::{Target, mark_leaf, print_warnings, report_write_warnings};
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::{
    Color, aligned, counted, escape_controls, escaped_text, note, print_json, print_text,
    push_lines_preview, thousands,
};
use crate::report::plan::request_doc;
use musepi_session_model::json::utf16_len;

/// Lines of the summary the report shows.
const SUMMARY_LINES: usize = 10;

/// Runs the command.
pub fn run(args: &BranchArgs, ctx: &Ctx) -> CmdResult {
    let settings = settings(ctx);
    let file = args.file.file_path("branch", CHANGES_THE_FILE)?;
    let dest = Target::new(&file, &args.write, ctx)?;
    let mut journal = dest.open(ctx)?;
    let target = (args.to != "root").then(|| args.to.clone());
    let session = journal.session();
    for id in target.iter().chain(args.from.iter()) {
        if session.index_of(id).is_none() {
            return Err(Failure::unknown_entry(id));
        }
    }
    // The summary covers the path being left: one cut by a line that cannot
    // be read would leave out what is above it.
    if args.summarize
        && let Some(from) = args
            .from
            .as_deref()
            .and_then(|id| session.index_of(id))
            .or_else(|| session.leaf_index())
    {
        session.check_path_readable(from, &file)?;
    }
    let flags = args.llm.flags();
    let default = args.default_strategy;
    let strategy = match args.strategy {
        Some(strategy) => strategy,
        // Only a summary needs a provider: a plain move never fails on one.
        None if !args.summarize => BranchStrategy::Snapcompact,
        // The user's own `compaction.strategy` wins over an agent's default.
        None if default.is_some() && ctx.settings.strategy_named => {
            match settings.compaction.strategy.unwrap_or_default() {
                MaintenanceStrategy::Snapcompact | MaintenanceStrategy::Off => {
                    BranchStrategy::Snapcompact
                }
                _ => BranchStrategy::Llm,
            }
        }
        None => match default {
            Some(d) => d,
            None => default_branch_strategy(&settings, &flags).or_bad_input()?,
        },
    };
    let reserve = settings
        .maintenance(musepi_runtime::DEFAULT_CONTEXT_WINDOW)
        .branch_summary_reserve_tokens;
    if args.summarize
        && args.strategy.is_none()
        && args.default_strategy.is_none()
        && strategy == BranchStrategy::Snapcompact
    {
        note(
            ctx.quiet(),
            "musepi: no provider configured: the branch summary is the snapcompact digest (no model); pass --provider for an LLM summary",
        );
    }
    if args.write.dry_run {
        return dry_run(&journal, target.as_deref(), args, strategy, reserve, ctx);
    }
    dest.refuse_live(&journal)?;
    let hooks = crate::hooks::from_settings(&settings, ctx.quiet()).or_bad_input()?;
    let rt = runtime()?;
    let progress = Progress::start(ctx, "summarizing the branch");
    let llm = if args.summarize && strategy == BranchStrategy::Llm {
        Some(provider(ctx, &settings, &flags, &progress)?)
    } else {
        None
    };
    let request = TreeRequest::to(target.clone())
        .with_summary(args.summarize)
        .with_instructions(args.instructions.clone(), args.replace_instructions)
        .with_label(args.label.clone());
    let mut options = NavigateOptions::new(request, &hooks, ctx.now_ms());
    options.from.clone_from(&args.from);
    options.strategy = strategy;
    options.summarizer = llm.as_ref().map(|p| p as &dyn Summarizer);
    options.context_window = llm
        .as_ref()
        .and_then(|p| p.config().context_window())
        .map(u64::from);
    options.reserve_tokens = reserve;
    let migrating = journal
        .migration_pending()
        .then(|| journal.session().original_version());
    let mut ids = crate::ids::for_session(ctx.deterministic_ids(), journal.session());
    let result = progress.run(&rt, async |cancel| {
        navigate(&mut journal, &options, ids.as_mut(), cancel).await
    });
    let out = match result {
        Ok(out) => out,
        Err(e) => return Err(Failure::failed(e)),
    };
    let marker = mark_leaf(&mut journal, &out, &options, ids.as_mut())?;
    if let Some(from) = migrating.filter(|_| !out.no_op || !dest.in_place()) {
        dest.note_migration(from, Some("the navigation"), ctx);
    }
    print_warnings(&out.warnings, ctx);
    let mut warnings = out.warnings.clone();
    warnings.extend(report_write_warnings(&mut journal));
    // Where the leaf already is, nothing changes.
    let written = dest.finish_changed(&journal, !out.no_op)?;
    if ctx.json() {
        print_json(&BranchDoc {
            output: written,
            no_op: out.no_op,
            old_leaf_id: out.old_leaf.as_ref().map(ToString::to_string),
            target_id: target,
            new_leaf_id: journal.session().leaf_id().map(ToString::to_string),
            abandoned: out.abandoned.iter().map(ToString::to_string).collect(),
            summary_entry_id: out.summary_entry.as_ref().map(ToString::to_string),
            strategy: out.summary_entry.as_ref().map(|_| strategy_name(strategy)),
            summary: out.summary.as_ref().map(|s| s.summary.clone()),
            from_extension: out.summary.as_ref().map(|s| s.from_extension),
            editor_text: out.editor_text().map(str::to_owned),
            marker_entry_id: marker.as_ref().map(ToString::to_string),
            warnings: ctx
                .settings_warnings()
                .into_iter()
                .chain(warnings)
                .collect(),
        })
        .or_failed()?;
        return Ok(Exit::Ok);
    }
    if out.no_op {
        // In place nothing is written; a copy (`-o OUT`) is written all
        // the same, unchanged, and the report says so.
        let text = match written.as_deref() {
            Some("-") => "already there: the leaf does not move; wrote the session unchanged to standard output\n".to_owned(),
            Some(path) => format!(
                "already there: the leaf does not move; wrote the session unchanged to {}\n",
                escape_controls(path)
            ),
            None => "already there: nothing to do\n".to_owned(),
        };
        dest.report(&text, ctx)?;
        return Ok(Exit::Ok);
    }
    let mut rows = vec![
        (
            "from".to_owned(),
            out.old_leaf.as_ref().map_or("null".into(), |id| {
                escape_controls(id.as_str()).into_owned()
            }),
        ),
        (
            "to".to_owned(),
            escape_controls(target.as_deref().unwrap_or("root")).into_owned(),
        ),
        (
            "abandoned".to_owned(),
            format!("{} entries", out.abandoned.len()),
        ),
        (
            "new leaf".to_owned(),
            journal.session().leaf_id().map_or("null".into(), |id| {
                escape_controls(id.as_str()).into_owned()
            }),
        ),
    ];
    if let Some(id) = &out.summary_entry {
        rows.push((
            "summary entry".to_owned(),
            escape_controls(id.as_str()).into_owned(),
        ));
        rows.push((
            "summarized by".to_owned(),
            match (strategy, &llm) {
                _ if out.summary.as_ref().is_some_and(|s| s.from_extension) => {
                    "a session_before_tree hook".to_owned()
                }
                (BranchStrategy::Llm, Some(p)) => format!("llm ({})", p.config().describe()),
                _ => "the snapcompact digest (no model)".to_owned(),
            },
        ));
    }
    if let Some(name) = written.filter(|_| !dest.in_place()) {
        rows.push(("written to".to_owned(), escape_controls(&name).into_owned()));
    }
    if let Some(text) = out.editor_text() {
        rows.push((
            "editor text".to_owned(),
            escape_controls(&crate::output::preview(text, 80)).into_owned(),
        ));
    }
    let mut text = aligned(&rows);
    if let Some(s) = &out.summary {
        let st = dest.style(ctx);
        let _ = writeln!(text, "{}", st.paint(Color::Dim, "summary:"));
        // The summary quotes the branch: line breaks kept, other control
        // characters escaped.
        push_lines_preview(&mut text, &s.summary, SUMMARY_LINES, st);
    }
    dest.report(&text, ctx)?;
    Ok(Exit::Ok)
}

/// The strategy's name in `--json` output.
fn strategy_name(strategy: BranchStrategy) -> &'static str {
    match strategy {
        BranchStrategy::Llm => "llm",
        BranchStrategy::Snapcompact => "snapcompact",
    }
}

/// `--dry-run`: the collected entries and what the run would do with
/// them: move the leaf, and with `--summarize` write the digest (shown)
/// or send the request (shown whole with `--show-prompts`).
fn dry_run(
    journal: &Journal,
    target: Option<&str>,
    args: &BranchArgs,
    strategy: BranchStrategy,
    reserve: u64,
    ctx: &Ctx,
) -> CmdResult {
    let session = journal.session();
    let old = match &args.from {
        Some(id) => session.index_of(id),
        None => session.leaf_index(),
    };
    let target_index = target.and_then(|t| session.index_of(t));
    let collected = collect_entries(session, old, target_index).or_bad_input()?;
    let budget = token_budget(args.context_window, reserve);
    let prep = prepare_branch(
        session,
        &collected.entries,
        budget,
        &PrepareOptions {
            tool_results: ToolResults::Truncated,
        },
    )
    .or_bad_input()?;
    let reasoning = summary_reasoning(&context_thinking_level(session, old));
    let request_options = RequestOptions {
        custom_instructions: args.instructions.as_deref(),
        replace_instructions: args.replace_instructions,
        reasoning: reasoning.as_deref(),
        ..RequestOptions::new(SUMMARIZATION_SYSTEM.text())
    };
    // What the real run makes: the digest needs no model, an LLM summary
    // sends the request; a plain move makes neither.
    let digest =
        (args.summarize && strategy == BranchStrategy::Snapcompact && !prep.items.is_empty())
            .then(|| musepi_runtime::branch::branch_digest(&prep).summary);
    let request = (args.summarize && strategy == BranchStrategy::Llm)
        .then(|| summary_request(&prep, &request_options))
        .flatten();
    let lists = prep.file_lists();
    let id = |i: usize| session.entries()[i].id.to_string();
    if ctx.json() {
        print_json(&BranchDryRunDoc {
            old_leaf_id: old.map(id),
            target_id: target.map(str::to_owned),
            common_ancestor_id: collected.common_ancestor.map(id),
            entries: collected.entries.iter().map(|&i| id(i)).collect(),
            token_budget: budget,
            messages: prep
                .items
                .iter()
                .map(|m| id(m.message.entry_index))
                .collect(),
            total_tokens: prep.total_tokens,
            file_lists: lists,
            summarize: args.summarize,
            strategy: args.summarize.then(|| strategy_name(strategy)),
            request: request.as_ref().map(request_doc),
            digest,
            warnings: Vec::new(),
        })
        .or_failed()?;
        return Ok(Exit::Ok);
    }
    // Ids come from the session, printed escaped.
    let shown = |text: String| escape_controls(&text).into_owned();
    let mut rows = vec![
        ("from".to_owned(), shown(old.map_or("null".into(), id))),
        ("to".to_owned(), shown(target.unwrap_or("root").to_owned())),
        (
            "common ancestor".to_owned(),
            shown(collected.common_ancestor.map_or("none".into(), id)),
        ),
        (
            "abandoned".to_owned(),
            counted(collected.entries.len(), "entry", "entries"),
        ),
    ];
    let summary = if !args.summarize {
        "none (--summarize leaves one)".to_owned()
    } else if prep.items.is_empty() {
        "nothing to summarize".to_owned()
    } else {
        rows.push((
            "fits the budget".to_owned(),
            format!(
                "{}, {} of {} tokens",
                counted(prep.items.len(), "message", "messages"),
                thousands(prep.total_tokens),
                thousands(budget)
            ),
        ));
        match (&digest, &request) {
            (Some(d), _) => format!(
                "the snapcompact digest (no model), {} tokens",
                thousands((utf16_len(d) as u64).div_ceil(4))
            ),
            (None, Some(r)) => format!(
                "an LLM summary: 1 request of {} tokens, at most {} back{}",
                thousands((utf16_len(&r.prompt_text()) as u64).div_ceil(4)),
                crate::report::plan::max_tokens_text(r.max_tokens),
                if args.show_prompts {
                    ""
                } else {
                    " (--show-prompts prints it)"
                }
            ),
            (None, None) => "nothing to summarize".to_owned(),
        }
    };
    rows.push(("summary".to_owned(), summary));
    rows.push((
        "writes".to_owned(),
        if args.summarize && (digest.is_some() || request.is_some()) {
            "a branch_summary entry under the target, the new leaf".to_owned()
        } else {
            "a navigation marker under the target, the new leaf (nothing when it is the leaf already)"
                .to_owned()
        },
    ));
    let mut text = aligned(&rows);
    text.push_str("dry run: nothing written\n");
    if let Some(d) = &digest {
        // What the entry would hold: its first lines, or all of it with
        // --show-prompts.
        let _ = writeln!(text, "\n── the digest ──");
        if args.show_prompts {
            let _ = writeln!(text, "{}", escaped_text(d));
        } else {
            push_lines_preview(&mut text, d, DIGEST_LINES, ctx.style);
        }
    }
    if let Some(r) = request.as_ref().filter(|_| args.show_prompts) {
        let _ = write!(
            text,
            "\n── branch summary request (max {} tokens) ──\n{}\n",
            thousands(u64::from(r.max_tokens.unwrap_or(0))),
            escaped_text(&r.prompt_text())
        );
    }
    if args.show_prompts {
        crate::output::print_paged(&text, ctx.no_pager()).or_failed()?;
    } else {
        print_text(&text).or_failed()?;
    }
    Ok(Exit::Ok)
}

/// Lines of the digest a dry run shows without `--show-prompts`.
const DIGEST_LINES: usize = 10;
