//! `musepi plan FILE`: a dry run of compaction at a leaf.

use std::borrow::Cow;
use std::fmt::Write as _;

use musepi_compaction::{Preparation, PrunePlan, RequestOptions, SummaryPlan};
use musepi_session_model::Session;

use crate::cli::PlanArgs;
use crate::commands::context::resolve_leaf;
use crate::commands::files::{Input, keep_until_exit, load_or_fail};
use crate::ctx::{CmdResult, Ctx, Exit, OrExit};
use crate::output::{Color, aligned, escape_controls, escaped_text, print_json, print_text};
use crate::report::plan::{Planned, document, estimated_after, nothing_json, nothing_text, tokens};

/// Runs the command.
pub fn run(args: &PlanArgs, ctx: &Ctx) -> CmdResult {
    let input = Input::from_arg(&args.file.path()?);
    let loaded = load_or_fail(&input, ctx)?;
    let leaf = resolve_leaf(&loaded.session, args.leaf.as_deref())?;
    let file_settings = crate::commands::runtime::settings(ctx);
    let m = crate::commands::runtime::maintenance(&file_settings, &args.budget);
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
        Ok(p) => musepi_hooks::with_frames_history(p),
        Err(reason) => {
            if ctx.json() {
                print_json(&nothing_json(session, &planned, &reason)).or_failed()?;
            } else {
                print_text(&format!("{}\n", nothing_text(&reason))).or_failed()?;
            }
            keep_until_exit(planned);
            return Ok(if args.strict { Exit::Failed } else { Exit::Ok });
        }
    };
    if ctx.json() {
        let doc = document(session, leaf, &planned, &prep, &settings, args.show_prompts);
        print_json(&doc).or_failed()?;
        drop((doc, prep));
        keep_until_exit(planned);
        return Ok(Exit::Ok);
    }
    let plan = SummaryPlan::new(&prep, &settings, &RequestOptions::default());
    print_text(&render(
        session,
        &prep,
        &plan,
        &planned,
        estimated_after(&prep, &settings),
        args.show_prompts,
        ctx,
    ))
    .or_failed()?;
    drop((plan, prep));
    keep_until_exit(planned);
    Ok(Exit::Ok)
}

/// What pruning does, in words: `nothing to prune`, or
/// `27 results, would save 28503 tokens` (`verb` is `would save` or `saved`).
pub(crate) fn prune_text(plan: &PrunePlan, verb: &str) -> String {
    if plan.is_empty() {
        "nothing to prune".to_owned()
    } else {
        format!(
            "{} results, {verb} {} tokens",
            plan.candidates.len(),
            plan.tokens_saved
        )
    }
}

fn render(
    session: &Session,
    prep: &Preparation<'_>,
    plan: &SummaryPlan,
    planned: &Planned,
    estimated_after: u64,
    show_prompts: bool,
    ctx: &Ctx,
) -> String {
    let st = ctx.style;
    let mut rows = vec![
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
            prep.keep_recent_tokens.to_string(),
        ),
        (
            "tokens before".to_owned(),
            format!(
                "{} (pi's estimate: the last usage plus the estimate of what follows it)",
                prep.tokens_before
            ),
        ),
        (
            "context tokens".to_owned(),
            format!(
                "{} (the context's tokens, before pruning)",
                planned.step.context_tokens
            ),
        ),
        (
            "estimated after".to_owned(),
            format!("{estimated_after} (kept messages + the summary's output limit)"),
        ),
        ("threshold".to_owned(), planned.threshold_text()),
        (
            "summarize".to_owned(),
            format!(
                "{} messages, {} tokens",
                prep.messages_to_summarize.len(),
                tokens(&prep.messages_to_summarize)
            ),
        ),
        (
            "turn prefix".to_owned(),
            format!(
                "{} messages, {} tokens",
                prep.turn_prefix_messages.len(),
                tokens(&prep.turn_prefix_messages)
            ),
        ),
        (
            "keep".to_owned(),
            format!(
                "{} messages, {} tokens",
                prep.recent_messages.len(),
                tokens(&prep.recent_messages)
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
    let requests: Vec<&str> = plan
        .requests()
        .map(|r| r.purpose.name())
        .chain(["shortSummary"])
        .collect();
    rows.push(("requests".to_owned(), requests.join(", ")));
    let mut out = aligned(&rows);
    if show_prompts {
        // A prompt quotes the session: its line breaks are kept, its other
        // control characters escaped (`--json` carries it exactly).
        let short = plan.short_request(&plan.merge(Some("{history summary}"), None));
        for r in plan.requests().chain(std::iter::once(&short)) {
            let _ = write!(
                out,
                "\n{}\n{}\n\n{}\n",
                st.paint(
                    Color::Bold,
                    &format!(
                        "── {} request (max {} tokens, reasoning {}) ──",
                        r.purpose.name(),
                        r.max_tokens
                            .map_or_else(|| "default".into(), |m| m.to_string()),
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
