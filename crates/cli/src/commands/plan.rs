//! `musepi plan FILE`: a dry run of compaction at a leaf.

use std::fmt::Write as _;

use musepi_compaction::{
    NothingToCompact, Preparation, PrunePlan, RequestOptions, SummaryPlan, history_max_tokens,
    plan_prune, prepare,
};
use musepi_context_builder::{
    ContextMessage, SummaryRequest, estimate_context_tokens, resolve_threshold_tokens,
};
use musepi_session_model::Session;
use serde_json::{Value, json};

use crate::cli::PlanArgs;
use crate::commands::context::resolve_leaf;
use crate::commands::files::{Input, load_or_fail};
use crate::commands::settings_glue::context_window;
use crate::commands::{CmdResult, Ctx, Exit, OrExit};
use crate::output::{Color, aligned, print_json, print_text};

fn ids(session: &Session, messages: &[ContextMessage<'_>]) -> Vec<String> {
    messages
        .iter()
        .map(|m| session.entries()[m.entry_index].id.to_string())
        .collect()
}

fn tokens(messages: &[ContextMessage<'_>]) -> u64 {
    messages.iter().map(ContextMessage::tokens).sum()
}

/// The prune section of the plan.
pub(crate) fn prune_json(session: &Session, plan: &PrunePlan) -> Value {
    json!({
        "tokensSaved": plan.tokens_saved,
        "results": plan.candidates.iter().map(|c| json!({
            "entryId": session.entries()[c.entry_index].id.as_str(),
            "kind": c.kind.name(),
            "tokens": c.tokens,
            "saved": c.saved,
            "placeholder": c.placeholder,
        })).collect::<Vec<_>>(),
    })
}

/// A request as JSON.
pub(crate) fn request_json(r: &SummaryRequest) -> Value {
    json!({
        "purpose": r.purpose.name(),
        "maxTokens": r.max_tokens,
        "reasoning": r.reasoning,
        "systemPrompt": r.system_prompt,
        "prompt": r.prompt_text(),
    })
}

/// Runs the command.
pub fn run(args: &PlanArgs, ctx: &Ctx) -> CmdResult {
    let input = Input::from_arg(&args.file);
    let loaded = load_or_fail(&input, ctx)?;
    let session = &loaded.session;
    let leaf = resolve_leaf(session, args.leaf.as_deref())?;
    let file_settings = crate::commands::runtime::settings(ctx)?;
    let settings = crate::commands::runtime::budgets(&file_settings, &args.budget, None);
    let window = context_window(&args.budget, None);
    let context = musepi_context_builder::build_context_at(session, leaf);
    let estimate = estimate_context_tokens(context.agent_messages());
    let threshold = resolve_threshold_tokens(window, &settings.thresholds(false));
    let prune = plan_prune(
        session,
        leaf,
        &crate::commands::runtime::prune_config(&file_settings),
    );
    let threshold_json = json!({
        "contextWindow": window,
        "thresholdTokens": threshold,
        "contextTokens": estimate.tokens,
        "overThreshold": estimate.tokens > threshold as f64,
    });
    let prep = match prepare(session, leaf, &settings) {
        Ok(p) => p,
        Err(reason) => return nothing(ctx, args, &reason, &threshold_json, &prune, session),
    };
    let plan = SummaryPlan::new(&prep, &settings, &RequestOptions::default());
    let kept_tokens = tokens(&prep.recent_messages);
    let estimated_after = kept_tokens + u64::from(history_max_tokens(&settings));
    let lists = prep.file_ops.lists();
    if ctx.json() {
        let mut doc = json!({
            "nothingToCompact": false,
            "leafId": leaf.map(|i| session.entries()[i].id.to_string()),
            "firstKeptEntryId": prep.first_kept_entry_id.as_str(),
            "isSplitTurn": prep.cut.is_split_turn,
            "turnStartEntryId": prep.cut.turn_start_index.map(|p| session.entries()[prep.path[p]].id.to_string()),
            "tokensBefore": prep.tokens_before,
            "estimatedTokensAfter": estimated_after,
            "keepRecentTokens": prep.keep_recent_tokens,
            "messagesToSummarize": ids(session, &prep.messages_to_summarize),
            "turnPrefixMessages": ids(session, &prep.turn_prefix_messages),
            "keptMessages": ids(session, &prep.recent_messages),
            "previousSummary": prep.previous_summary.is_some(),
            "fileLists": {"readFiles": lists.read_files, "modifiedFiles": lists.modified_files},
            "threshold": threshold_json,
            "prune": prune_json(session, &prune),
        });
        if args.show_prompts {
            let mut requests: Vec<Value> = plan.requests().map(request_json).collect();
            requests.push(request_json(
                &plan.short_request(&plan.merge(Some("{history summary}"), None)),
            ));
            doc["requests"] = Value::Array(requests);
        }
        print_json(&doc).or_failed()?;
        return Ok(Exit::Ok);
    }
    print_text(&render(
        session,
        &prep,
        &plan,
        &prune,
        estimated_after,
        threshold,
        window,
        args.show_prompts,
        ctx,
    ))
    .or_failed()?;
    Ok(Exit::Ok)
}

fn nothing(
    ctx: &Ctx,
    args: &PlanArgs,
    reason: &NothingToCompact,
    threshold: &Value,
    prune: &PrunePlan,
    session: &Session,
) -> CmdResult {
    if ctx.json() {
        let doc = json!({
            "nothingToCompact": true,
            "reason": reason.to_string(),
            "threshold": threshold,
            "prune": prune_json(session, prune),
        });
        print_json(&doc).or_failed()?;
    } else {
        print_text(&format!("nothing to compact: {reason}\n")).or_failed()?;
    }
    Ok(if args.strict { Exit::Failed } else { Exit::Ok })
}

#[allow(clippy::too_many_arguments)]
fn render(
    session: &Session,
    prep: &Preparation<'_>,
    plan: &SummaryPlan,
    prune: &PrunePlan,
    estimated_after: u64,
    threshold: i64,
    window: u64,
    show_prompts: bool,
    ctx: &Ctx,
) -> String {
    let st = ctx.style;
    let entry = |p: usize| session.entries()[prep.path[p]].id.to_string();
    let mut rows = vec![
        (
            "first kept entry".to_owned(),
            prep.first_kept_entry_id.to_string(),
        ),
        (
            "split turn".to_owned(),
            match prep.cut.turn_start_index {
                Some(ts) if prep.cut.is_split_turn => {
                    format!("yes, the turn starts at {}", entry(ts))
                }
                _ => "no".to_owned(),
            },
        ),
        (
            "keep recent tokens".to_owned(),
            prep.keep_recent_tokens.to_string(),
        ),
        ("tokens before".to_owned(), prep.tokens_before.to_string()),
        (
            "estimated after".to_owned(),
            format!("{estimated_after} (kept messages + the summary's output limit)"),
        ),
        (
            "threshold".to_owned(),
            format!("{threshold} of a {window}-token window"),
        ),
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
            if prune.is_empty() {
                "nothing".to_owned()
            } else {
                format!(
                    "{} results, {} tokens saved",
                    prune.candidates.len(),
                    prune.tokens_saved
                )
            },
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
                st.paint(Color::Dim, &format!("system: {}", r.system_prompt)),
                r.prompt_text()
            );
        }
    }
    out
}
