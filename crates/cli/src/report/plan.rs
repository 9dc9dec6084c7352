//! The plan of a compaction as JSON (`musepi plan --json`, and the `plan`
//! method of `musepi serve`), computed as the compaction computes it.

use std::borrow::Cow;

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
use serde_json::{Value, json};

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

    pub(crate) fn threshold_json(&self) -> Value {
        json!({
            "contextWindow": self.window,
            "thresholdTokens": self.threshold,
            "measuredTokens": self.measured.tokens,
            "overThreshold": i128::from(self.measured.tokens) > i128::from(self.threshold),
        })
    }

    /// `threshold 170000 of a 200000-token window; measured 177657, over`.
    /// Whether the measured tokens are over the threshold: an automatic
    /// compaction would run.
    pub(crate) fn over_threshold(&self) -> bool {
        i128::from(self.measured.tokens) > i128::from(self.threshold)
    }

    pub(crate) fn threshold_text(&self) -> String {
        let over = if i128::from(self.measured.tokens) > i128::from(self.threshold) {
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
pub(crate) fn planned_json(
    planned: &Planned<'_>,
    leaf: Option<usize>,
    settings: &CompactionSettings,
    show_prompts: bool,
    strategy: &Strategy,
) -> Value {
    // Pruning changes no id: the pruned session names every entry.
    let session = planned.pruned.as_ref();
    match planned.step.prepare(session, leaf) {
        Ok(prep) => document(
            session,
            leaf,
            planned,
            &prep,
            settings,
            show_prompts,
            strategy,
        ),
        Err(reason) => {
            let mut doc = nothing_json(session, planned, &reason);
            doc["strategy"] = strategy.name().into();
            doc
        }
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

pub(crate) fn nothing_json(
    session: &Session,
    planned: &Planned,
    reason: &NothingToCompact,
) -> Value {
    json!({
        "nothingToCompact": true,
        "reason": reason.to_string(),
        "tokensBefore": planned.step.tokens_before,
        "contextTokensBefore": planned.step.context_tokens,
        "threshold": planned.threshold_json(),
        "prune": prune_json(session, &planned.step.plan),
    })
}

pub(crate) fn document(
    session: &Session,
    leaf: Option<usize>,
    planned: &Planned,
    prep: &Preparation<'_>,
    settings: &CompactionSettings,
    show_prompts: bool,
    strategy: &Strategy,
) -> Value {
    let lists = prep.file_ops.lists();
    let (after, _) = after_strategy(prep, settings, strategy);
    let mut doc = json!({
        "nothingToCompact": false,
        "leafId": leaf.map(|i| session.entries()[i].id.to_string()),
        "firstKeptEntryId": prep.first_kept_entry_id.as_str(),
        "isSplitTurn": prep.cut.is_split_turn,
        "turnStartEntryId": prep.turn_start_entry().map(|i| session.entries()[i].id.to_string()),
        "tokensBefore": prep.tokens_before,
        "contextTokensBefore": planned.step.context_tokens,
        "estimatedTokensAfter": after,
        "strategy": strategy.name(),
        "keepRecentTokens": prep.keep_recent_tokens,
        "messagesToSummarize": ids(session, &prep.messages_to_summarize),
        "turnPrefixMessages": ids(session, &prep.turn_prefix_messages),
        "keptMessages": ids(session, &prep.recent_messages),
        "previousSummary": prep.previous_summary.is_some(),
        "fileLists": lists,
        "threshold": planned.threshold_json(),
        "prune": prune_json(session, &planned.step.plan),
    });
    if show_prompts {
        let plan = SummaryPlan::new(prep, settings, &RequestOptions::default());
        doc["requests"] = planned_requests(&plan, strategy)
            .iter()
            .map(request_json)
            .collect();
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
            "{}, {verb} {} tokens",
            crate::output::counted(plan.candidates.len(), "result", "results"),
            crate::output::thousands(plan.tokens_saved)
        )
    }
}
