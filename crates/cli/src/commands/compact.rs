//! `musepi compact FILE`: compacts at the leaf and appends the entry.

use std::fmt::Write as _;

use musepi_compaction::{RequestOptions, SummaryPlan, prune_first};
use musepi_hooks::{CompactError, CompactOptions, Summarizer, compact};
use musepi_session_model::{EntryBody, Journal};

use crate::commands::pi_dir::CHANGES_THE_FILE;
use crate::commands::strategy::{pick, uses_model};
use crate::commands::writer::{Target, print_warnings, write_warnings};
use serde_json::json;

use crate::cli::CompactArgs;
use crate::commands::context::resolve_leaf;
use crate::commands::requests::Counted;
use crate::commands::runtime::{Progress, maintenance, provider, runtime, settings};
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::{
    Color, aligned, escape_controls, escaped_text, note, preview, print_json, print_text,
    push_lines_preview,
};
use crate::report::plan::{nothing_text, prune_json, request_json};

/// Lines of the summary the report shows.
const SUMMARY_LINES: usize = 8;

/// Runs the command.
pub fn run(args: &CompactArgs, ctx: &Ctx) -> CmdResult {
    let settings = settings(ctx);
    let m = maintenance(&settings, &args.budget);
    let strategy = pick(
        args.strategy.as_deref(),
        &m,
        args.instructions.is_some(),
        args.llm.model.as_deref(),
    )?;
    let name = strategy.name();
    let file = args.file.file_path("compact", CHANGES_THE_FILE)?;
    let target = Target::new(&file, &args.write, ctx)?;
    let mut journal = target.open(ctx)?;
    target.refuse_unreadable(&journal)?;
    target.refuse_live(&journal)?;
    if let Some(leaf) = args.leaf.as_deref() {
        // Compact there, as `plan --leaf` plans there: the entry goes under it.
        match resolve_leaf(journal.session(), Some(leaf))? {
            Some(i) => {
                let id = journal.session().entries()[i].id.to_string();
                journal.set_leaf(&id).or_failed()?;
            }
            None => journal.reset_leaf(),
        }
    }
    let path = &file;
    if journal.migration_pending() && !args.write.dry_run {
        note(
            ctx.quiet(),
            &format!(
                "musepi: {} is a v{} file; {} as v3 with the compaction",
                path.display(),
                journal.session().original_version(),
                if target.in_place() {
                    "it is rewritten"
                } else {
                    "the copy is written"
                }
            ),
        );
    }
    let provider_flags = args.llm.flags();
    let budgets = m.compaction.clone();
    let prune = (!args.no_prune).then(|| m.prune());
    if args.write.dry_run {
        return dry_run(&journal, &strategy, &budgets, prune.as_ref(), args, ctx);
    }
    let hooks = crate::hooks::from_settings(&settings, ctx.quiet()).or_bad_input()?;
    let rt = runtime()?;
    let label = format!("compacting with {name}");
    let progress = Progress::start(ctx, &label);
    let llm = if uses_model(&strategy) {
        Some(provider(ctx, &settings, &provider_flags, &progress)?)
    } else {
        None
    };
    // The spinner says which request of how many is running.
    let counted = llm
        .as_ref()
        .map(|p| Counted::new(p as &dyn Summarizer, &progress, "compacting"));
    let mut options = CompactOptions::new(&hooks, ctx.now_ms());
    options.custom_instructions.clone_from(&args.instructions);
    options.settings = budgets;
    options.prune = prune;
    options.strategy = strategy;
    options.summarizer = counted.as_ref().map(|c| c as &dyn Summarizer);
    options.remote = llm
        .as_ref()
        .and_then(musepi_providers::Provider::remote_compactor);
    let mut ids = crate::ids::for_session(ctx.deterministic_ids(), journal.session());
    let result = progress.run(&rt, async |cancel| {
        compact(&mut journal, &options, ids.as_mut(), cancel).await
    });
    let out = match result {
        Ok(out) => out,
        Err(CompactError::Nothing(reason)) => {
            // A copy is the result even when nothing changed, unless --strict
            // makes "nothing to do" a failure.
            let output = if args.strict {
                None
            } else {
                target.finish_changed(&journal, false)?
            };
            if ctx.json() {
                print_json(&json!({
                    "compacted": false,
                    "nothingToCompact": true,
                    "reason": reason.to_string(),
                    "output": output,
                }))
                .or_failed()?;
            } else {
                target.report(&format!("{}\n", nothing_text(&reason)), ctx)?;
            }
            return Ok(if args.strict { Exit::Failed } else { Exit::Ok });
        }
        Err(e) => return Err(Failure::failed(e)),
    };
    let mut warnings = out.warnings.clone();
    warnings.extend(write_warnings(&mut journal));
    print_warnings(&warnings, ctx);
    let written = target
        .finish(&journal)?
        .unwrap_or_else(|| path.display().to_string());
    let session = journal.session();
    if ctx.json() {
        let doc = json!({
            "compacted": true,
            "file": written,
            "strategy": name,
            "provider": llm.as_ref().map(|p| p.config().describe()),
            "entryId": out.entry_id.as_str(),
            "firstKeptEntryId": out.result.first_kept_entry_id.as_str(),
            "tokensBefore": out.result.tokens_before,
            "contextTokensBefore": out.context_tokens_before,
            "tokensAfter": out.tokens_after,
            "summary": out.result.summary,
            "shortSummary": out.result.short_summary,
            "details": out.result.details,
            "usage": out.result.usage,
            "fromExtension": out.result.from_extension,
            "requests": out.requests.iter().map(|r| r.name()).collect::<Vec<_>>(),
            "prune": prune_json(session, &out.pruned),
            "warnings": warnings,
        });
        print_json(&doc).or_failed()?;
        return Ok(Exit::Ok);
    }
    let st = target.style(ctx);
    let mut rows = vec![
        ("file".to_owned(), escape_controls(&written).into_owned()),
        (
            "strategy".to_owned(),
            match &llm {
                Some(p) => format!("{name} ({})", p.config().describe()),
                None => name.to_owned(),
            },
        ),
        (
            "tokens".to_owned(),
            format!(
                "{} → {} in context (tokensBefore {})",
                out.context_tokens_before, out.tokens_after, out.result.tokens_before
            ),
        ),
        (
            "entry".to_owned(),
            format!(
                "{} (keeps from {})",
                escape_controls(out.entry_id.as_str()),
                escape_controls(out.result.first_kept_entry_id.as_str())
            ),
        ),
    ];
    if !out.pruned.is_empty() {
        rows.push((
            "pruned".to_owned(),
            format!(
                "{} tool results, {} tokens",
                out.pruned.candidates.len(),
                out.pruned.tokens_saved
            ),
        ));
    }
    if let Some(short) = &out.result.short_summary {
        rows.push((
            "short summary".to_owned(),
            escape_controls(&preview(short, 100)).into_owned(),
        ));
    }
    let mut text = aligned(&rows);
    // The summary is the model's or the archive's, quoting the session: its
    // line breaks are kept, its other control characters escaped.
    let _ = writeln!(text, "{}", st.paint(Color::Dim, "summary:"));
    push_lines_preview(&mut text, &out.result.summary, SUMMARY_LINES, st);
    target.report(&text, ctx)?;
    if matches!(
        session.leaf_entry().map(|e| &e.body),
        Some(EntryBody::Compaction(_))
    ) {
        Ok(Exit::Ok)
    } else {
        Err(Failure::failed(anyhow::anyhow!(
            "the compaction entry is not the leaf after writing"
        )))
    }
}

/// `--dry-run`: the requests (or the archive plan) and nothing written,
/// prepared as the compaction prepares ([`prune_first`]).
fn dry_run(
    journal: &Journal,
    strategy: &musepi_hooks::Strategy,
    budgets: &musepi_compaction::CompactionSettings,
    prune: Option<&musepi_compaction::PruneConfig>,
    args: &CompactArgs,
    ctx: &Ctx,
) -> CmdResult {
    let session = journal.session();
    let leaf = session.leaf_index();
    let archives = musepi_snapcompact::SessionArchives::new(session);
    let step = prune_first(session, leaf, budgets, prune, Some(&archives), ctx.now_ms());
    let pruned = step.pruned(std::borrow::Cow::Borrowed(session));
    let prep = match step.prepare(&pruned, leaf) {
        Ok(p) => musepi_hooks::with_frames_history(p),
        Err(reason) => {
            // The dry-run document, saying there is nothing to do as `plan`
            // and the compaction say it.
            if ctx.json() {
                print_json(&json!({
                    "dryRun": true,
                    "nothingToCompact": true,
                    "reason": reason.to_string(),
                    "strategy": strategy.name(),
                    "tokensBefore": step.tokens_before,
                    "contextTokensBefore": step.context_tokens,
                    "prune": prune_json(session, &step.plan),
                    "requests": [],
                }))
                .or_failed()?;
            } else {
                print_text(&format!("{}\n", nothing_text(&reason))).or_failed()?;
            }
            return Ok(if args.strict { Exit::Failed } else { Exit::Ok });
        }
    };
    let mut options = RequestOptions::default();
    options.custom_instructions.clone_from(&args.instructions);
    let plan = SummaryPlan::new(&prep, budgets, &options);
    let short = plan.short_request(&plan.merge(Some("{history summary}"), None));
    let requests: Vec<serde_json::Value> = if uses_model(strategy) {
        plan.requests()
            .chain(std::iter::once(&short))
            .map(request_json)
            .collect()
    } else {
        Vec::new()
    };
    if ctx.json() {
        print_json(&json!({
            "dryRun": true,
            "nothingToCompact": false,
            "strategy": strategy.name(),
            "firstKeptEntryId": prep.first_kept_entry_id.as_str(),
            "tokensBefore": prep.tokens_before,
            "contextTokensBefore": step.context_tokens,
            "prune": prune_json(session, &step.plan),
            "requests": requests,
        }))
        .or_failed()?;
        return Ok(Exit::Ok);
    }
    let mut out = format!(
        "dry run: {} would keep from {} ({} messages summarized, {} in the turn prefix); nothing written\n",
        strategy.name(),
        escape_controls(prep.first_kept_entry_id.as_str()),
        prep.messages_to_summarize.len(),
        prep.turn_prefix_messages.len()
    );
    for r in &requests {
        let _ = write!(
            out,
            "\n── {} request (max {} tokens) ──\nsystem: {}\n\n{}\n",
            r["purpose"].as_str().unwrap_or_default(),
            r["maxTokens"],
            escaped_text(r["systemPrompt"].as_str().unwrap_or_default()),
            escaped_text(r["prompt"].as_str().unwrap_or_default())
        );
    }
    print_text(&out).or_failed()?;
    Ok(Exit::Ok)
}
