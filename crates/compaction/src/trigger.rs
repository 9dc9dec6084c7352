//! When to compact (docs/design.md, "When to compact"): pure decisions over plain inputs, one per
//! natural point of an agent loop.

use std::sync::OnceLock;

use musepi_context_builder::{ThresholdSettings, calculate_context_tokens, should_compact};
use musepi_session_model::{AssistantMessage, ContentBlock, StopReason};
use regex::RegexSet;

/// Why a compaction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// `/compact [instructions]`.
    Manual,
    /// The provider rejected the context as too long.
    Overflow,
    /// The answer stopped at the output limit.
    Incomplete,
    /// The context crossed the threshold after a turn (or mid-turn).
    Threshold,
    /// The session sat idle with a large context.
    Idle,
}

impl Reason {
    /// The event name (`reason` of `auto_compaction_start`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Manual => "manual",
            Self::Overflow => "overflow",
            Self::Incomplete => "incomplete",
            Self::Threshold => "threshold",
            Self::Idle => "idle",
        }
    }

    /// The `errorMessage` of a failed compaction for this reason (docs/design.md, "When to compact").
    pub fn failure_message(self, error: &str) -> String {
        match self {
            Self::Overflow => format!("Context overflow recovery failed: {error}"),
            Self::Incomplete => format!("Incomplete response recovery failed: {error}"),
            Self::Threshold | Self::Idle => format!("Auto-compaction failed: {error}"),
            Self::Manual => error.to_owned(),
        }
    }
}

/// The message after a second overflow in one run (docs/design.md, "When to compact").
pub const REPEATED_OVERFLOW: &str = "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.";

/// How many no-output incomplete answers in a row are retried before giving up.
pub const MAX_EMPTY_INCOMPLETE_RECOVERIES: u32 = 3;

/// A compaction to run, and what to do after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionPlan {
    /// Why.
    pub reason: Reason,
    /// The failed request will be retried after it (`willRetry`).
    pub will_retry: bool,
    /// Start the agent again after it (retry, or the auto-continue prompt).
    pub auto_continue: bool,
    /// Drop the failing assistant message from the live context first (it stays in the journal).
    pub remove_last_assistant: bool,
    /// Inside a tool loop: the loop owns the next request, so no separate continuation.
    pub mid_turn: bool,
}

/// What the agent loop should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing.
    None,
    /// Run a compaction.
    Compact(CompactionPlan),
    /// Give up on recovery; report this message (`auto_compaction_end.errorMessage`).
    Fail(String),
    /// Keep the turn and tell the user (a truncated answer that compaction cannot help).
    Warn(String),
    /// Retry the turn without compacting (an empty truncated answer below the threshold).
    Retry,
}

/// What the decisions read about the session and its settings.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TriggerContext {
    /// The model the agent uses now: `(provider, model id)`.
    pub current_model: Option<(String, String)>,
    /// Its context window.
    pub context_window: u64,
    /// Timestamp (ms) of the latest compaction on the branch.
    pub latest_compaction_ms: Option<f64>,
    /// Threshold settings.
    pub thresholds: ThresholdSettings,
    /// `compaction.midTurnEnabled`.
    pub mid_turn_enabled: bool,
    /// `compaction.autoContinue`.
    pub auto_continue: bool,
    /// `compaction.idleEnabled`.
    pub idle_enabled: bool,
    /// `compaction.idleThresholdTokens`.
    pub idle_threshold_tokens: u64,
    /// `compaction.idleTimeoutSeconds`.
    pub idle_timeout_seconds: u64,
    /// An overflow recovery already ran in this run.
    pub overflow_recovery_attempted: bool,
    /// No-output incomplete answers retried in a row.
    pub empty_incomplete_recoveries: u32,
}

impl Default for TriggerContext {
    fn default() -> Self {
        Self {
            current_model: None,
            context_window: 0,
            latest_compaction_ms: None,
            thresholds: ThresholdSettings::default(),
            mid_turn_enabled: true,
            auto_continue: true,
            idle_enabled: false,
            idle_threshold_tokens: 200_000,
            idle_timeout_seconds: 300,
            overflow_recovery_attempted: false,
            empty_incomplete_recoveries: 0,
        }
    }
}

fn overflow_patterns() -> &'static RegexSet {
    static SET: OnceLock<RegexSet> = OnceLock::new();
    SET.get_or_init(|| {
        let patterns = [
            r"(?i)prompt is too long",
            r"(?i)input is too long for requested model",
            r"(?i)exceeds the context window",
            r"(?i)input token count.*exceeds the maximum",
            r"(?i)maximum prompt length is \d+",
            r"(?i)reduce the length of the messages",
            r"(?i)maximum context length is \d+ tokens",
            r"(?i)exceeds the limit of \d+",
            r"(?i)exceeds the available context size",
            r"(?i)greater than the context length",
            r"(?i)context window exceeds limit",
            r"(?i)exceeded model token limit",
            r"(?i)too large for model with \d+ maximum context length",
            r"(?i)model_context_window_exceeded",
            r"(?i)context[_ ]length[_ ]exceeded",
            r"(?i)too many tokens",
            r"(?i)token limit exceeded",
            r"(?i)^4(00|13)\s*(status code)?\s*\(no body\)",
        ];
        // The patterns are fixed and valid.
        RegexSet::new(patterns).unwrap_or_else(|_| RegexSet::empty())
    })
}

/// Whether a provider error text says the context was too long (docs/design.md, "When to compact").
pub fn is_overflow_error(error_message: &str) -> bool {
    overflow_patterns().is_match(error_message)
}

/// Whether an assistant message is a context overflow: an error with an
/// overflow message, or a silent overflow (a normal stop whose input
/// exceeded the window).
pub fn is_context_overflow(message: &AssistantMessage, context_window: Option<u64>) -> bool {
    match message.stop_reason {
        Some(StopReason::Error) => message
            .error_message
            .as_deref()
            .is_some_and(is_overflow_error),
        Some(StopReason::Stop) => match (context_window, &message.usage) {
            (Some(w), Some(u)) if w > 0 => u.input + u.cache_read > w as f64,
            _ => false,
        },
        _ => false,
    }
}

fn same_model(message: &AssistantMessage, ctx: &TriggerContext) -> bool {
    match &ctx.current_model {
        Some((p, m)) => {
            message.provider.as_deref() == Some(p) && message.model.as_deref() == Some(m)
        }
        None => true,
    }
}

fn stale(message: &AssistantMessage, ctx: &TriggerContext) -> bool {
    matches!((message.timestamp, ctx.latest_compaction_ms), (Some(t), Some(c)) if t <= c)
}

/// Whether the assistant delivered text or a tool call (an answer cut at
/// the output limit with nothing in it is retried; one with output resets
/// the count of empty recoveries).
pub fn has_output(message: &AssistantMessage) -> bool {
    message.content.blocks().iter().any(|b| match b {
        ContentBlock::Text { text, .. } => !text.trim().is_empty(),
        ContentBlock::ToolCall(_) => true,
        _ => false,
    }) || message
        .content
        .as_text()
        .is_some_and(|t| !t.trim().is_empty())
}

/// The post-turn check after an assistant message (docs/design.md, "When to compact"):
/// overflow recovery, incomplete-output recovery, or threshold maintenance.
pub fn after_assistant(message: &AssistantMessage, ctx: &TriggerContext) -> Action {
    if !ctx.thresholds.enabled
        || matches!(message.stop_reason, Some(StopReason::Aborted))
        || stale(message, ctx)
    {
        return Action::None;
    }
    let window = (ctx.context_window > 0).then_some(ctx.context_window);
    if is_context_overflow(message, window) && same_model(message, ctx) {
        if ctx.overflow_recovery_attempted {
            return Action::Fail(REPEATED_OVERFLOW.to_owned());
        }
        return Action::Compact(CompactionPlan {
            reason: Reason::Overflow,
            will_retry: true,
            auto_continue: true,
            remove_last_assistant: true,
            mid_turn: false,
        });
    }
    let tokens = message.usage.as_ref().map_or(0, calculate_context_tokens);
    let over = should_compact(tokens, ctx.context_window, &ctx.thresholds);
    if matches!(message.stop_reason, Some(StopReason::Length)) && same_model(message, ctx) {
        if over {
            return Action::Compact(CompactionPlan {
                reason: Reason::Incomplete,
                will_retry: true,
                auto_continue: true,
                remove_last_assistant: true,
                mid_turn: false,
            });
        }
        if has_output(message) {
            return Action::Warn(
                "The answer stopped at the output limit; it was kept, since compacting cannot raise the limit.".into(),
            );
        }
        if ctx.empty_incomplete_recoveries >= MAX_EMPTY_INCOMPLETE_RECOVERIES {
            return Action::Fail(Reason::Incomplete.failure_message(&format!(
                "the model stopped at the output limit without output {MAX_EMPTY_INCOMPLETE_RECOVERIES} times in a row"
            )));
        }
        return Action::Retry;
    }
    if matches!(message.stop_reason, Some(StopReason::Error)) {
        return Action::None;
    }
    if over {
        return Action::Compact(CompactionPlan {
            reason: Reason::Threshold,
            will_retry: false,
            auto_continue: ctx.auto_continue,
            remove_last_assistant: false,
            mid_turn: false,
        });
    }
    Action::None
}

/// The mid-turn check before the next request of a tool loop (docs/design.md, "When to compact"):
/// only at a safe boundary (every tool call of the last assistant has its
/// result), never with a separate continuation.
pub fn before_request(context_tokens: u64, safe_boundary: bool, ctx: &TriggerContext) -> Action {
    if !ctx.mid_turn_enabled
        || !safe_boundary
        || !should_compact(context_tokens, ctx.context_window, &ctx.thresholds)
    {
        return Action::None;
    }
    Action::Compact(CompactionPlan {
        reason: Reason::Threshold,
        will_retry: false,
        auto_continue: false,
        remove_last_assistant: false,
        mid_turn: true,
    })
}

/// Idle maintenance (docs/design.md, "When to compact"): never continues.
pub fn when_idle(
    context_tokens: u64,
    idle_seconds: u64,
    busy: bool,
    ctx: &TriggerContext,
) -> Action {
    if !ctx.idle_enabled
        || busy
        || idle_seconds < ctx.idle_timeout_seconds
        || context_tokens <= ctx.idle_threshold_tokens
    {
        return Action::None;
    }
    Action::Compact(CompactionPlan {
        reason: Reason::Idle,
        will_retry: false,
        auto_continue: false,
        remove_last_assistant: false,
        mid_turn: false,
    })
}

/// Manual compaction: always allowed, never starts a turn by itself.
pub fn manual() -> CompactionPlan {
    CompactionPlan {
        reason: Reason::Manual,
        will_retry: false,
        auto_continue: false,
        remove_last_assistant: false,
        mid_turn: false,
    }
}
