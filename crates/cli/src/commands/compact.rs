//! `musepi compact FILE`: compacts at the leaf and appends the entry.

use std::fmt::Write as _;

use musepi_runtime::compaction::{CompactError, compact};
use musepi_runtime::compaction::{RequestOptions, SummaryPlan, prune_first};
use musepi_runtime::hooks::Summarizer;
use musepi_session_model::Journal;

use crate::commands::pi_dir::CHANGES_THE_FILE;
use crate::commands::strategy::{chosen, uses_model};
use crate::commands::writer::{Target, print_warnings, report_write_warnings};
use musepi_protocol::cli::{CompactedDoc, DryRunDoc, NotCompactedDoc, RequestDoc, VerifiedDoc};

use crate::cli::CompactArgs;
use crate::commands::context::resolve_leaf;
use crate::commands::requests::Counted;
use crate::commands::runtime::{Progress, provider, runtime, settings, snap_strategy, snap_target};
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::{
    Color, aligned, escape_controls, escaped_text, preview, print_json, print_text,
    push_lines_preview,
};
use crate::report::plan::{nothing_text, prune_doc, request_doc};

/// Lines of the summary the report shows.
const SUMMARY_LINES: usize = 8;

/// Runs the command.
pub fn run(args: &CompactArgs, ctx: &Ctx) -> CmdResult {
    let settings = settings(ctx);
    let (m, strategy) = chosen(
        ctx,
        &settings,
        &args.budget,
        &args.how,
        args.instructions.is_some(),
        args.llm.model.as_deref(),
    );
    let mut name = strategy.name();
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
    // Said once the outcome is known: a v1 or v2 file is rewritten as v3
    // only when the compaction is written, and a copy whenever one is.
    let version = journal.session().original_version();
    let migrates = journal.migration_pending();
    let provider_flags = args.llm.flags();
    let budgets = m.compaction.clone();
    let prune = (!args.no_prune).then(|| m.prune());
    crate::commands::decisions::say_for_compact(
        ctx,
        journal.session(),
        &m,
        prune.as_ref(),
        &crate::commands::decisions::strategy_reason(
            &strategy,
            args.how.strategy,
            args.how.default_strategy,
            ctx.settings.strategy_named,
            m.strategy,
            args.instructions.is_some(),
        ),
    );
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
    let mut options = m.compact_options(&hooks, ctx.now_ms());
    options.custom_instructions.clone_from(&args.instructions);
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
    // The model's summary failed, and nothing was written: the archive
    // needs no model.
    let mut fell_back = None;
    let result = match result {
        Err(e @ CompactError::Summarize { .. }) if args.archive_on_failure => {
            fell_back = Some(format!(
                "the model's summary failed ({e}); the snapcompact archive was written instead"
            ));
            options.strategy = snap_strategy(&m, snap_target(&m, args.llm.model.as_deref(), None));
            options.summarizer = None;
            options.remote = None;
            name = options.strategy.name();
            progress.run(&rt, async |cancel| {
                compact(&mut journal, &options, ids.as_mut(), cancel).await
            })
        }
        r => r,
    };
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
            if migrates && output.is_some() && !target.in_place() {
                target.note_migration(version, None, ctx);
            }
            let warnings = report_write_warnings(&mut journal);
            if ctx.json() {
                print_json(&NotCompactedDoc {
                    compacted: false,
                    nothing_to_compact: true,
                    reason: reason.to_string(),
                    output,
                    warnings,
                })
                .or_failed()?;
            } else {
                target.report(&format!("{}\n", nothing_text(&reason)), ctx)?;
            }
            return Ok(if args.strict { Exit::Failed } else { Exit::Ok });
        }
        Err(e) => return Err(Failure::failed(e)),
    };
    // The entry is written: whatever follows is said, never failed on. What
    // another process appended right after it is one of the warnings.
    if migrates {
        target.note_migration(version, Some("the compaction"), ctx);
    }
    let mut warnings: Vec<String> = fell_back.into_iter().collect();
    warnings.extend(out.warnings.iter().cloned());
    print_warnings(&warnings, ctx);
    warnings.extend(report_write_warnings(&mut journal));
    let written = target
        .finish(&journal)?
        .unwrap_or_else(|| path.display().to_string());
    let session = journal.session();
    if ctx.json() {
        let doc = CompactedDoc {
            compacted: true,
            file: written,
            strategy: name,
            provider: llm.as_ref().map(|p| p.config().describe()),
            entry_id: out.entry_id.to_string(),
            first_kept_entry_id: out.result.first_kept_entry_id.to_string(),
            tokens_before: out.result.tokens_before,
            context_tokens_before: out.context_tokens_before,
            tokens_after: out.tokens_after,
            summary: out.result.summary.clone(),
            short_summary: out.result.short_summary.clone(),
            details: out.result.details.clone(),
            usage: out
                .result
                .usage
                .as_ref()
                .and_then(|u| serde_json::to_value(u).ok()),
            from_extension: out.result.from_extension,
            requests: out.requests.iter().map(|r| r.name()).collect(),
            prune: prune_doc(session, &out.pruned),
            verified: out.result.verified.map(|v| VerifiedDoc {
                items: v.items,
                in_summary: v.in_summary,
                appended: v.appended,
                left_out: v.left_out,
            }),
            warnings: ctx
                .settings_warnings()
                .into_iter()
                .chain(warnings)
                .collect(),
        };
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
                crate::output::thousands(out.context_tokens_before),
                crate::output::thousands(out.tokens_after),
                crate::view::text::thousands(out.result.tokens_before)
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
                "{}, {} tokens",
                crate::output::counted(out.pruned.candidates.len(), "tool result", "tool results"),
                crate::output::thousands(out.pruned.tokens_saved)
            ),
        ));
    }
    if let Some(v) = out.result.verified {
        rows.push(("verified".to_owned(), verified_text(v)));
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
    Ok(Exit::Ok)
}

/// `--dry-run`: the requests (or the archive plan) and nothing written,
/// prepared as the compaction prepares ([`prune_first`]).
fn dry_run(
    journal: &Journal,
    strategy: &musepi_runtime::compaction::Strategy,
    budgets: &musepi_runtime::compaction::CompactionSettings,
    prune: Option<&musepi_runtime::compaction::PruneConfig>,
    args: &CompactArgs,
    ctx: &Ctx,
) -> CmdResult {
    let session = journal.session();
    let leaf = session.leaf_index();
    let archives = musepi_runtime::archive::SessionArchives::new(session);
    let step = prune_first(session, leaf, budgets, prune, Some(&archives), ctx.now_ms());
    let pruned = step.pruned(std::borrow::Cow::Borrowed(session));
    let prep = match step.prepare(&pruned, leaf) {
        Ok(p) => musepi_runtime::archive::with_frames_history(p),
        Err(reason) => {
            // The dry-run document, saying there is nothing to do as `plan`
            // and the compaction say it.
            if ctx.json() {
                print_json(&DryRunDoc {
                    dry_run: true,
                    nothing_to_compact: true,
                    reason: Some(reason.to_string()),
                    strategy: strategy.name(),
                    first_kept_entry_id: None,
                    tokens_before: step.tokens_before,
                    context_tokens_before: step.context_tokens,
                    estimated_tokens_after: None,
                    prune: prune_doc(session, &step.plan),
                    requests: Vec::new(),
                    warnings: Vec::new(),
                })
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
    let requests: Vec<RequestDoc> = if uses_model(strategy) {
        plan.requests()
            .chain(std::iter::once(&short))
            .map(request_doc)
            .collect()
    } else {
        Vec::new()
    };
    // The tokens after, as `plan` estimates them for this strategy.
    let (after, counted_as) = crate::report::plan::after_strategy(&prep, budgets, strategy);
    if ctx.json() {
        print_json(&DryRunDoc {
            dry_run: true,
            nothing_to_compact: false,
            reason: None,
            strategy: strategy.name(),
            first_kept_entry_id: Some(prep.first_kept_entry_id.to_string()),
            tokens_before: prep.tokens_before,
            context_tokens_before: step.context_tokens,
            estimated_tokens_after: Some(after),
            prune: prune_doc(session, &step.plan),
            requests,
            warnings: Vec::new(),
        })
        .or_failed()?;
        return Ok(Exit::Ok);
    }
    let mut out = format!(
        "dry run: {} would keep from {} ({} summarized, {} in the turn prefix); nothing written\n",
        strategy.name(),
        escape_controls(prep.first_kept_entry_id.as_str()),
        crate::output::counted(prep.messages_to_summarize.len(), "message", "messages"),
        prep.turn_prefix_messages.len()
    );
    let _ = writeln!(
        out,
        "tokens: {} → ~{} in context ({}; tokensBefore {})",
        crate::output::thousands(step.context_tokens),
        crate::output::thousands(after),
        counted_as,
        crate::view::text::thousands(prep.tokens_before)
    );
    if !step.plan.is_empty() {
        let _ = writeln!(
            out,
            "pruning first: {}",
            crate::report::plan::prune_text(&step.plan, "would save")
        );
    }
    if !args.show_prompts {
        if !requests.is_empty() {
            let names: Vec<&str> = requests.iter().map(|r| r.purpose).collect();
            let _ = writeln!(
                out,
                "requests: {} (--show-prompts prints them)",
                names.join(", ")
            );
        }
        print_text(&out).or_failed()?;
        return Ok(Exit::Ok);
    }
    for r in &requests {
        let _ = write!(
            out,
            "\n── {} request (max {} tokens) ──\nsystem: {}\n\n{}\n",
            r.purpose,
            crate::report::plan::max_tokens_text(r.max_tokens),
            escaped_text(&r.system_prompt),
            escaped_text(&r.prompt)
        );
    }
    crate::output::print_paged(&out, ctx.no_pager()).or_failed()?;
    Ok(Exit::Ok)
}

/// What verifying a model's summary found, in a line: `12 ledger items:
/// 9 in the summary, 3 appended verbatim`.
fn verified_text(v: musepi_runtime::compaction::Verified) -> String {
    let mut text = format!(
        "{}: {} in the summary, {} appended verbatim",
        crate::output::counted(v.items, "ledger item", "ledger items"),
        crate::output::thousands(v.in_summary as u64),
        crate::output::thousands(v.appended as u64)
    );
    if v.left_out > 0 {
        let _ = write!(
            text,
            ", {} left out for room (the session file holds them)",
            crate::output::thousands(v.left_out as u64)
        );
    }
    text
}
