//! `musepi plan FILE`: a dry run of compaction at a leaf.

use std::fmt::Write as _;

use musepi_compaction::{
    CompactionSettings, NothingToCompact, Preparation, PruneConfig, PruneFirst, PrunePlan,
    RequestOptions, SummaryPlan, history_max_tokens, prune_first,
};
use musepi_context_builder::{
    ContextEstimate, ContextMessage, SummaryRequest, resolve_threshold_tokens,
};
use musepi_session_model::{Session, SessionError};
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

/// Everything a plan shows, computed as the compaction computes it
/// ([`prune_first`]): the prune plan and the measurement on the session as
/// it is, the preparation over the session as pruning leaves it.
struct Planned {
    step: PruneFirst,
    pruned: Session,
    /// What the compaction trigger compares, before pruning.
    measured: ContextEstimate,
    threshold: i64,
    window: u64,
}

impl Planned {
    fn new(
        session: &Session,
        leaf: Option<usize>,
        settings: &CompactionSettings,
        prune: &PruneConfig,
        window: u64,
        now: i64,
    ) -> Result<Self, SessionError> {
        let archives = musepi_snapcompact::SessionArchives::new(session);
        let step = prune_first(session, leaf, settings, Some(prune), Some(&archives), now)?;
        let mut pruned = session.clone();
        step.apply_to(&mut pruned);
        Ok(Self {
            step,
            pruned,
            measured: musepi_snapcompact::measured_tokens(session, leaf),
            threshold: resolve_threshold_tokens(window, &settings.thresholds(false)),
            window,
        })
    }

    fn threshold_json(&self) -> Value {
        json!({
            "contextWindow": self.window,
            "thresholdTokens": self.threshold,
            "measuredTokens": self.measured.tokens,
            "overThreshold": self.measured.tokens > self.threshold as f64,
        })
    }

    /// `threshold 170000 of a 200000-token window; measured 177657, over`.
    fn threshold_text(&self) -> String {
        let over = if self.measured.tokens > self.threshold as f64 {
            "over"
        } else {
            "under"
        };
        format!(
            "{} of a {}-token window; measured {} ({over})",
            self.threshold, self.window, self.measured.tokens
        )
    }
}

/// `musepi plan --json` at `leaf`, as `musepi serve`'s `plan` answers.
pub(crate) fn plan_json(
    session: &Session,
    leaf: Option<usize>,
    settings: &CompactionSettings,
    prune: &PruneConfig,
    window: u64,
    show_prompts: bool,
    now: i64,
) -> Result<Value, SessionError> {
    let planned = Planned::new(session, leaf, settings, prune, window, now)?;
    Ok(match planned.step.prepare(&planned.pruned, leaf) {
        Ok(prep) => document(session, leaf, &planned, &prep, settings, show_prompts),
        Err(reason) => nothing_json(session, &planned, &reason),
    })
}

/// Runs the command.
pub fn run(args: &PlanArgs, ctx: &Ctx) -> CmdResult {
    let input = Input::from_arg(&args.file.path()?);
    let loaded = load_or_fail(&input, ctx)?;
    let session = &loaded.session;
    let leaf = resolve_leaf(session, args.leaf.as_deref())?;
    let file_settings = crate::commands::runtime::settings(ctx)?;
    let settings = crate::commands::runtime::budgets(&file_settings, &args.budget, None);
    let window = context_window(&args.budget, None);
    let prune = crate::commands::runtime::prune_config(&file_settings);
    let planned =
        Planned::new(session, leaf, &settings, &prune, window, ctx.now_ms()).or_bad_input()?;
    let prep = match planned.step.prepare(&planned.pruned, leaf) {
        Ok(p) => p,
        Err(reason) => {
            if ctx.json() {
                print_json(&nothing_json(session, &planned, &reason)).or_failed()?;
            } else {
                print_text(&format!("nothing to compact: {reason}\n")).or_failed()?;
            }
            return Ok(if args.strict { Exit::Failed } else { Exit::Ok });
        }
    };
    if ctx.json() {
        let doc = document(session, leaf, &planned, &prep, &settings, args.show_prompts);
        print_json(&doc).or_failed()?;
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
    Ok(Exit::Ok)
}

/// The kept messages plus the summary's output limit.
fn estimated_after(prep: &Preparation<'_>, settings: &CompactionSettings) -> u64 {
    tokens(&prep.recent_messages) + u64::from(history_max_tokens(settings))
}

fn nothing_json(session: &Session, planned: &Planned, reason: &NothingToCompact) -> Value {
    json!({
        "nothingToCompact": true,
        "reason": reason.to_string(),
        "tokensBefore": planned.step.tokens_before,
        "threshold": planned.threshold_json(),
        "prune": prune_json(session, &planned.step.plan),
    })
}

fn document(
    session: &Session,
    leaf: Option<usize>,
    planned: &Planned,
    prep: &Preparation<'_>,
    settings: &CompactionSettings,
    show_prompts: bool,
) -> Value {
    let lists = prep.file_ops.lists();
    let mut doc = json!({
        "nothingToCompact": false,
        "leafId": leaf.map(|i| session.entries()[i].id.to_string()),
        "firstKeptEntryId": prep.first_kept_entry_id.as_str(),
        "isSplitTurn": prep.cut.is_split_turn,
        "turnStartEntryId": prep.cut.turn_start_index.map(|p| session.entries()[prep.path[p]].id.to_string()),
        "tokensBefore": prep.tokens_before,
        "estimatedTokensAfter": estimated_after(prep, settings),
        "keepRecentTokens": prep.keep_recent_tokens,
        "messagesToSummarize": ids(session, &prep.messages_to_summarize),
        "turnPrefixMessages": ids(session, &prep.turn_prefix_messages),
        "keptMessages": ids(session, &prep.recent_messages),
        "previousSummary": prep.previous_summary.is_some(),
        "fileLists": {"readFiles": lists.read_files, "modifiedFiles": lists.modified_files},
        "threshold": planned.threshold_json(),
        "prune": prune_json(session, &planned.step.plan),
    });
    if show_prompts {
        let plan = SummaryPlan::new(prep, settings, &RequestOptions::default());
        let mut requests: Vec<Value> = plan.requests().map(request_json).collect();
        requests.push(request_json(
            &plan.short_request(&plan.merge(Some("{history summary}"), None)),
        ));
        doc["requests"] = Value::Array(requests);
    }
    doc
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
