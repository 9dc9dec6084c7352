//! The plan of a compaction as JSON (`musepi plan --json`, and the `plan`
//! method of `musepi serve`), computed as the compaction computes it.

use std::borrow::Cow;

use musepi_protocol::cli::{
    NothingToCompactDoc, PlanAnswer, PlanDoc, PruneDoc, PrunedResultDoc, RequestDoc, ThresholdDoc,
};
use musepi_runtime::compaction::{
    CompactionSettings, NothingToCompact, Preparation, PruneConfig, PruneFirst, PrunePlan,
    RequestOptions, SummaryPlan, history_max_tokens, prune_first,
};
use musepi_runtime::compaction::{Strategy, compact_preparation};
use musepi_runtime::context::{
    ContextEstimate, ContextMessage, SummaryRequest, resolve_threshold_tokens,
};
use musepi_session_model::Session;
use musepi_session_model::json::utf16_len;

pub(crate) fn ids(session: &Session, messages: &[ContextMessage<'_>]) -> Vec<String> {
    messages
        .iter()
        .map(|m| session.entries()[m.entry_index].id.to_string())
        .collect()
}

pub(crate) fn tokens(messages: &[ContextMessage<'_>]) -> u64 {
    messages.iter().map(ContextMessage::tokens).sum()
}

/// The prune section of the plan.
pub(crate) fn prune_doc(session: &Session, plan: &PrunePlan) -> PruneDoc {
    PruneDoc {
        tokens_saved: plan.tokens_saved,
        results: plan
            .candidates
            .iter()
            .map(|c| PrunedResultDoc {
                entry_id: session.entries()[c.entry_index].id.to_string(),
                kind: c.kind.name(),
                tokens: c.tokens,
                saved: c.saved,
                placeholder: c.placeholder.clone(),
            })
            .collect(),
    }
}

/// A request's answer limit for people: the count, or `default` when the
/// request leaves it to the provider (every command says it so).
pub(crate) fn max_tokens_text(max_tokens: Option<u32>) -> String {
    max_tokens.map_or_else(
        || "default".to_owned(),
        |m| crate::output::thousands(u64::from(m)),
    )
}

/// A request as its document.
pub(crate) fn request_doc(r: &SummaryRequest) -> RequestDoc {
    RequestDoc {
        purpose: r.purpose.name(),
        max_tokens: r.max_tokens,
        reasoning: r.reasoning.clone(),
        system_prompt: r.system_prompt.clone(),
        prompt: r.prompt_text(),
    }
}

/// Everything a plan shows, computed as the compaction computes it
/// ([`prune_first`]): the prune plan and the measurement on the session as
/// it is, the preparation over the session as pruning leaves it.
pub(crate) struct Planned<'s> {
    /// What is decided before pruning (borrowed when the caller keeps it).
    pub step: Cow<'s, PruneFirst>,
    /// The session as pruning leaves it: the session itself (not a copy)
    /// when nothing is pruned.
    pub pruned: Cow<'s, Session>,
    /// What the compaction trigger compares, before pruning.
    measured: ContextEstimate,
    threshold: i64,
    window: u64,
}

impl<'s> Planned<'s> {
    /// Plans over `session`; an owned session is pruned in place, a
    /// borrowed one is copied only when pruning changes something.
    pub(crate) fn new(
        session: Cow<'s, Session>,
        leaf: Option<usize>,
        settings: &CompactionSettings,
        prune: Option<&PruneConfig>,
        window: u64,
        now: i64,
    ) -> Self {
        let (step, measured) = {
            let archives = musepi_runtime::archive::SessionArchives::new(&session);
            let step = prune_first(&session, leaf, settings, prune, Some(&archives), now);
            (
                step,
                musepi_runtime::context::measured_tokens(&session, leaf),
            )
        };
        let pruned = step.pruned(session);
        Self::decided(Cow::Owned(step), pruned, measured, settings, window)
    }

    /// The plan of `step`, decided already, over `pruned` (the session as
    /// it leaves it), with `measured` what the trigger compares before
    /// pruning.
    pub(crate) fn decided(
        step: Cow<'s, PruneFirst>,
        pruned: Cow<'s, Session>,
        measured: ContextEstimate,
        settings: &CompactionSettings,
        window: u64,
    ) -> Self {
        Self {
            step,
            pruned,
            measured,
            threshold: resolve_threshold_tokens(window, &settings.thresholds(false)),
            window,
        }
    }

    pub(crate) fn threshold_doc(&self) -> ThresholdDoc {
        ThresholdDoc {
            context_window: self.window,
            threshold_tokens: self.threshold,
            measured_tokens: self.measured.tokens,
            over_threshold: self.over_threshold(),
        }
    }

    /// `threshold 170000 of a 200000-token window; measured 177657, over`.
    /// Whether the measured tokens are over the threshold: an automatic
    /// compaction would run.
    pub(crate) fn over_threshold(&self) -> bool {
        i128::from(self.measured.tokens) > i128::from(self.threshold)
    }

    pub(crate) fn threshold_text(&self) -> String {
        let over = if self.over_threshold() {
            "over"
        } else {
            "under"
        };
        format!(
            "{} of a {}-token window; measured {} ({over})",
            if self.threshold < 0 {
                format!(
                    "-{}",
                    crate::output::thousands(self.threshold.unsigned_abs())
                )
            } else {
                crate::output::thousands(self.threshold.unsigned_abs())
            },
            crate::output::thousands(self.window),
            crate::view::text::thousands(self.measured.tokens)
        )
    }
}

/// The `--json` document of a plan decided already.
pub(crate) fn planned_doc(
    planned: &Planned<'_>,
    leaf: Option<usize>,
    settings: &CompactionSettings,
    show_prompts: bool,
    strategy: &Strategy,
) -> PlanAnswer {
    // Pruning changes no id: the pruned session names every entry.
    let session = planned.pruned.as_ref();
    match planned.step.prepare(session, leaf) {
        Ok(prep) => PlanAnswer::Plan(Box::new(document(
            session,
            leaf,
            planned,
            &prep,
            settings,
            show_prompts,
            strategy,
        ))),
        Err(reason) => PlanAnswer::Nothing(nothing_doc(session, planned, &reason, strategy)),
    }
}

/// The kept messages plus the summary's output limit.
pub(crate) fn estimated_after(prep: &Preparation<'_>, settings: &CompactionSettings) -> u64 {
    tokens(&prep.recent_messages) + u64::from(history_max_tokens(settings))
}

/// What the compaction `strategy` runs would leave, and how it is
/// counted: the kept messages plus the snapcompact archive itself (made
/// here: it needs no model), or plus an LLM summary's output limit.
pub(crate) fn after_strategy(
    prep: &Preparation<'_>,
    settings: &CompactionSettings,
    strategy: &Strategy,
) -> (u64, &'static str) {
    if let Strategy::Snapcompact(snap) = strategy
        && let Ok(made) = compact_preparation(prep, &snap.target, &snap.settings)
    {
        let archive = (utf16_len(&made.summary) as u64).div_ceil(4);
        return (
            tokens(&prep.recent_messages) + archive,
            "kept messages + the archive",
        );
    }
    (
        estimated_after(prep, settings),
        "kept messages + the summary's output limit",
    )
}

/// The requests `strategy` sends for `plan`: none for the archive; the
/// history, the turn prefix of a split turn and, unless it is off, the
/// short summary for an LLM summary.
pub(crate) fn planned_requests(plan: &SummaryPlan, strategy: &Strategy) -> Vec<SummaryRequest> {
    if matches!(strategy, Strategy::Snapcompact(_)) {
        return Vec::new();
    }
    let mut requests: Vec<SummaryRequest> = plan.requests().cloned().collect();
    if plan.short_summary {
        requests.push(plan.short_request(&plan.merge(Some("{history summary}"), None)));
    }
    requests
}

/// `nothing to compact` and why, for people: one sentence whatever the
/// reason (the JSON documents carry the reason as pi words it).
pub(crate) fn nothing_text(reason: &NothingToCompact) -> String {
    let why = match reason {
        NothingToCompact::TooSmall => {
            "the session is too small (everything fits the kept window)".to_owned()
        }
        NothingToCompact::ToolResultsFillWindow {
            tail_tokens,
            keep_recent_tokens,
        } => format!(
            "the last {tail_tokens} tokens are tool results, which fill the kept window of {keep_recent_tokens} alone, and a cut never separates a tool result from its call, so everything is kept; a --keep-recent over {tail_tokens} cuts before them"
        ),
        NothingToCompact::AlreadyCompacted => "the leaf is a compaction already".to_owned(),
        NothingToCompact::NoFirstKeptId => {
            "the first kept entry has no id (the session may need `musepi session migrate`)"
                .to_owned()
        }
    };
    format!("nothing to compact: {why}")
}

/// The document of a plan with nothing to compact.
pub(crate) fn nothing_doc(
    session: &Session,
    planned: &Planned,
    reason: &NothingToCompact,
    strategy: &Strategy,
) -> NothingToCompactDoc {
    NothingToCompactDoc {
        nothing_to_compact: true,
        reason: reason.to_string(),
        tokens_before: planned.step.tokens_before,
        context_tokens_before: planned.step.context_tokens,
        threshold: planned.threshold_doc(),
        prune: prune_doc(session, &planned.step.plan),
        strategy: strategy.name(),
        warnings: None,
    }
}

/// The document of a plan at `leaf`.
pub(crate) fn document(
    session: &Session,
    leaf: Option<usize>,
    planned: &Planned,
    prep: &Preparation<'_>,
    settings: &CompactionSettings,
    show_prompts: bool,
    strategy: &Strategy,
) -> PlanDoc {
    let lists = prep.file_ops.lists();
    let (after, _) = after_strategy(prep, settings, strategy);
    let requests = show_prompts.then(|| {
        let plan = SummaryPlan::new(prep, settings, &RequestOptions::default());
        planned_requests(&plan, strategy)
            .iter()
            .map(request_doc)
            .collect()
    });
    PlanDoc {
        nothing_to_compact: false,
        leaf_id: leaf.map(|i| session.entries()[i].id.to_string()),
        first_kept_entry_id: prep.first_kept_entry_id.to_string(),
        is_split_turn: prep.cut.is_split_turn,
        turn_start_entry_id: prep
            .turn_start_entry()
            .map(|i| session.entries()[i].id.to_string()),
        tokens_before: prep.tokens_before,
        context_tokens_before: planned.step.context_tokens,
        estimated_tokens_after: after,
        strategy: strategy.name(),
        keep_recent_tokens: prep.keep_recent_tokens,
        messages_to_summarize: ids(session, &prep.messages_to_summarize),
        turn_prefix_messages: ids(session, &prep.turn_prefix_messages),
        kept_messages: ids(session, &prep.recent_messages),
        previous_summary: prep.previous_summary.is_some(),
        file_lists: lists,
        threshold: planned.threshold_doc(),
        prune: prune_doc(session, &planned.step.plan),
        requests,
        warnings: None,
    }
}

/// What pruning does, in words: `nothing to prune`, or
/// `27 results, would save 28503 tokens` (`verb` is `would save` or `saved`).
pub(crate) fn prune_text(plan: &PrunePlan, verb: &str) -> String {
    if plan.is_empty() {
        "nothing to prune".to_owned()
    } else {
        format!(
            "{}, {verb} {} tokens",
            crate::output::counted(plan.candidates.len(), "result", "results"),
            crate::output::thousands(plan.tokens_saved)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::max_tokens_text;

    #[test]
    fn a_request_without_a_limit_says_the_provider_default() {
        assert_eq!(max_tokens_text(None), "default");
        assert_eq!(max_tokens_text(Some(13_107)), "13,107");
    }
}
