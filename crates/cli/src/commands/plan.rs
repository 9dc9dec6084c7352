//! `musepi plan FILE`: a dry run of compaction at a leaf.

use std::borrow::Cow;
use std::fmt::Write as _;

use musepi_runtime::compaction::{Preparation, RequestOptions, SummaryPlan};

use crate::cli::PlanArgs;
use crate::commands::context::resolve_leaf;
use crate::commands::files::{Input, keep_until_exit, load_or_fail};
use crate::commands::strategy::chosen;
use crate::ctx::{CmdResult, Ctx, Exit, OrExit};
use crate::output::{Color, aligned, escape_controls, escaped_text, print_json, print_text};
use crate::report::plan::{
    Planned, after_strategy, document, nothing_doc, nothing_text, planned_requests, prune_text,
    tokens,
};
use musepi_runtime::compaction::Strategy;

/// Runs the command.
pub fn run(args: &PlanArgs, ctx: &Ctx) -> CmdResult {
    let input = Input::from_arg(&args.file.path()?);
    let loaded = load_or_fail(&input, ctx)?;
    let leaf = resolve_leaf(&loaded.session, args.leaf.as_deref())?;
    // The strategy `compact` with the same flags runs.
    let file_settings = crate::commands::runtime::settings(ctx);
    let (m, strategy) = chosen(ctx, &file_settings, &args.budget, &args.how, false, None);
    let reason = crate::commands::decisions::strategy_reason(
        &strategy,
        args.how.strategy,
        args.how.default_strategy,
        ctx.settings.strategy_named,
        m.strategy,
        false,
    );
    let (settings, window) = (m.compaction.clone(), m.context_window);
    // What `compact` prunes first, or nothing with --no-prune, as there.
    let prune = (!args.no_prune).then(|| m.prune());
    // The session is pruned in place: the plan needs no copy of it (the
    // entries keep their ids, which is all the plan shows of them).
    let planned = Planned::new(
        Cow::Owned(loaded.session),
        leaf,
        &settings,
        prune.as_ref(),
        window,
        ctx.now_ms(),
    );
    let session = planned.pruned.as_ref();
    let prep = match planned.step.prepare(session, leaf) {
        Ok(p) => musepi_runtime::archive::with_frames_history(p),
        Err(nothing) => {
            crate::commands::decisions::say(
                ctx,
                &[
                    reason,
                    format!(
                        "nothing to compact: {}",
                        crate::ctx::lowercase_start(&nothing.to_string())
                    ),
                ],
            );
            let reason = nothing;
            if ctx.json() {
                let mut doc = nothing_doc(session, &planned, &reason, &strategy);
                doc.warnings = Some(ctx.settings_warnings());
                print_json(&doc).or_failed()?;
            } else {
                print_text(&format!("{}\n", nothing_text(&reason))).or_failed()?;
            }
            keep_until_exit(planned);
            return Ok(if args.strict { Exit::Failed } else { Exit::Ok });
        }
    };
    if ctx.json() {
        let mut doc = document(
            session,
            leaf,
            &planned,
            &prep,
            &settings,
            args.show_prompts,
            &strategy,
        );
        doc.warnings = Some(ctx.settings_warnings());
        print_json(&doc).or_failed()?;
        drop((doc, prep));
        keep_until_exit(planned);
        return Ok(Exit::Ok);
    }
    if ctx.verbose() > 0 {
        let lines = crate::commands::decisions::lines(
            &reason,
            &planned,
            &prep,
            &settings,
            prune.as_ref(),
            ctx.verbose() > 1,
        );
        crate::commands::decisions::say(ctx, &lines);
    }
    let plan = SummaryPlan::new(&prep, &settings, &RequestOptions::default());
    let text = render(
        &prep,
        &plan,
        &planned,
        &strategy,
        after_strategy(&prep, &settings, &strategy),
        args.show_prompts,
        ctx,
    );
    // The prompts run to thousands of lines: on a terminal they go
    // through the pager, as `git log` does.
    if args.show_prompts {
        crate::output::print_paged(&text, ctx.no_pager()).or_failed()?;
    } else {
        print_text(&text).or_failed()?;
    }
    drop((plan, prep));
    keep_until_exit(planned);
    Ok(Exit::Ok)
}

fn render(
    prep: &Preparation<'_>,
    plan: &SummaryPlan,
    planned: &Planned,
    strategy: &Strategy,
    (estimated_after, counted): (u64, &str),
    show_prompts: bool,
    ctx: &Ctx,
) -> String {
    let st = ctx.style;
    let session = planned.pruned.as_ref();
    let mut rows = vec![
        (
            "strategy".to_owned(),
            match strategy {
                Strategy::Snapcompact(_) => "snapcompact (the archive: no model)",
                Strategy::Llm => "llm (a summary by the model)",
                Strategy::Remote => "remote (the provider's compaction, else a summary)",
            }
            .to_owned(),
        ),
        (
            "first kept entry".to_owned(),
            escape_controls(prep.first_kept_entry_id.as_str()).into_owned(),
        ),
        (
            "split turn".to_owned(),
            match prep.turn_start_entry() {
                Some(ts) if prep.cut.is_split_turn => {
                    format!(
                        "yes, the turn starts at {}",
                        escape_controls(session.entries()[ts].id.as_str())
                    )
                }
                _ => "no".to_owned(),
            },
        ),
        (
            "keep recent tokens".to_owned(),
            crate::output::thousands(prep.keep_recent_tokens),
        ),
        (
            "tokens before".to_owned(),
            format!(
                "{} (pi's estimate: the last usage plus the estimate of what follows it)",
                crate::view::text::thousands(prep.tokens_before)
            ),
        ),
        (
            "context tokens".to_owned(),
            format!(
                "{} (the context's tokens, before pruning)",
                crate::output::thousands(planned.step.context_tokens)
            ),
        ),
        (
            "estimated after".to_owned(),
            format!("{} ({counted})", crate::output::thousands(estimated_after)),
        ),
        ("threshold".to_owned(), planned.threshold_text()),
        (
            "summarize".to_owned(),
            format!(
                "{}, {} tokens",
                crate::output::counted(prep.messages_to_summarize.len(), "message", "messages"),
                crate::output::thousands(tokens(&prep.messages_to_summarize))
            ),
        ),
        (
            "turn prefix".to_owned(),
            format!(
                "{}, {} tokens",
                crate::output::counted(prep.turn_prefix_messages.len(), "message", "messages"),
                crate::output::thousands(tokens(&prep.turn_prefix_messages))
            ),
        ),
        (
            "keep".to_owned(),
            format!(
                "{}, {} tokens",
                crate::output::counted(prep.recent_messages.len(), "message", "messages"),
                crate::output::thousands(tokens(&prep.recent_messages))
            ),
        ),
        (
            "previous summary".to_owned(),
            if prep.previous_summary.is_some() {
                "yes (update prompt)"
            } else {
                "no"
            }
            .into(),
        ),
        (
            "files".to_owned(),
            format!(
                "{} read, {} modified",
                plan.file_lists.read_files.len(),
                plan.file_lists.modified_files.len()
            ),
        ),
        (
            "prune".to_owned(),
            prune_text(&planned.step.plan, "would save"),
        ),
    ];
    let requests = planned_requests(plan, strategy);
    let names: Vec<&str> = requests.iter().map(|r| r.purpose.name()).collect();
    rows.push((
        "requests".to_owned(),
        if names.is_empty() {
            "none (the archive needs no model)".to_owned()
        } else {
            names.join(", ")
        },
    ));
    let mut out = aligned(&rows);
    if show_prompts {
        // A prompt quotes the session: its line breaks are kept, its other
        // control characters escaped (`--json` carries it exactly).
        for r in &requests {
            let _ = write!(
                out,
                "\n{}\n{}\n\n{}\n",
                st.paint(
                    Color::Bold,
                    &format!(
                        "── {} request (max {} tokens, reasoning {}) ──",
                        r.purpose.name(),
                        crate::report::plan::max_tokens_text(r.max_tokens),
                        r.reasoning.as_deref().unwrap_or("none")
                    )
                ),
                st.paint(
                    Color::Dim,
                    &escaped_text(&format!("system: {}", r.system_prompt))
                ),
                escaped_text(&r.prompt_text())
            );
        }
    }
    out
}
