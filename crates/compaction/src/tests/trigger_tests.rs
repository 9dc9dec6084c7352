use musepi_context_builder::ThresholdSettings;
use musepi_session_model::{AssistantMessage, Content, StopReason, Usage};

use crate::{
    Action, REPEATED_OVERFLOW, Reason, TriggerContext, after_assistant, before_request,
    is_overflow_error, when_idle,
};

fn assistant(stop: StopReason, total: f64, error: Option<&str>, text: &str) -> AssistantMessage {
    AssistantMessage {
        content: Content::text(text),
        provider: Some("anthropic".into()),
        model: Some("claude".into()),
        usage: Some(Usage {
            input: total,
            total_tokens: total,
            ..Default::default()
        }),
        stop_reason: Some(stop),
        error_message: error.map(str::to_owned),
        timestamp: Some(2_000.0),
        ..Default::default()
    }
}

fn ctx() -> TriggerContext {
    TriggerContext {
        current_model: Some(("anthropic".into(), "claude".into())),
        context_window: 200_000,
        thresholds: ThresholdSettings::default(),
        ..TriggerContext::default()
    }
}

fn compact(action: &Action) -> crate::CompactionPlan {
    match action {
        Action::Compact(p) => *p,
        other => panic!("expected a compaction, got {other:?}"),
    }
}

/// The compaction after `m` under [`ctx`]: its reason, whether it retries
/// and whether it continues.
fn compaction_after(m: &AssistantMessage) -> (Reason, bool, bool) {
    let plan = compact(&after_assistant(m, &ctx()));
    (plan.reason, plan.will_retry, plan.auto_continue)
}

#[test]
fn overflow_messages_of_every_provider_are_recognized() {
    for m in [
        "prompt is too long: 213462 tokens > 200000 maximum",
        "This model's maximum context length is 128000 tokens",
        "Your input exceeds the context window of this model",
        "input token count (1200000) exceeds the maximum",
        "413 (no body)",
        "400 status code (no body)",
        "context_length_exceeded",
        "Request too large for model with 8192 maximum context length",
    ] {
        assert!(is_overflow_error(m), "{m}");
    }
    assert!(!is_overflow_error("rate limit exceeded"));
    assert!(!is_overflow_error("internal server error"));
}

#[test]
fn an_overflow_compacts_and_retries_once() {
    let m = assistant(StopReason::Error, 0.0, Some("prompt is too long"), "");
    let plan = compact(&after_assistant(&m, &ctx()));
    assert_eq!(plan.reason, Reason::Overflow);
    assert!(plan.will_retry && plan.auto_continue && plan.remove_last_assistant);
    let again = TriggerContext {
        overflow_recovery_attempted: true,
        ..ctx()
    };
    assert_eq!(
        after_assistant(&m, &again),
        Action::Fail(REPEATED_OVERFLOW.into())
    );
    // An overflow of another model does not trigger.
    let other = TriggerContext {
        current_model: Some(("openai".into(), "gpt".into())),
        ..ctx()
    };
    assert_eq!(after_assistant(&m, &other), Action::None);
}

#[test]
fn a_silent_overflow_counts() {
    let m = assistant(StopReason::Stop, 250_000.0, None, "ok");
    assert_eq!(compaction_after(&m).0, Reason::Overflow);
}

#[test]
fn incomplete_answers_compact_above_the_threshold_and_warn_or_retry_below() {
    let above = assistant(StopReason::Length, 180_000.0, None, "partial");
    assert_eq!(compaction_after(&above), (Reason::Incomplete, true, true));
    let below = assistant(StopReason::Length, 10_000.0, None, "partial");
    assert!(matches!(after_assistant(&below, &ctx()), Action::Warn(_)));
    let empty = assistant(StopReason::Length, 10_000.0, None, "");
    assert_eq!(after_assistant(&empty, &ctx()), Action::Retry);
    let third = TriggerContext {
        empty_incomplete_recoveries: 3,
        ..ctx()
    };
    match after_assistant(&empty, &third) {
        Action::Fail(msg) => assert!(
            msg.starts_with("Incomplete response recovery failed: "),
            "{msg}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn threshold_maintenance_after_a_normal_turn() {
    let m = assistant(StopReason::Stop, 171_000.0, None, "done");
    assert_eq!(compaction_after(&m), (Reason::Threshold, false, true));
    let no_continue = TriggerContext {
        auto_continue: false,
        ..ctx()
    };
    assert!(!compact(&after_assistant(&m, &no_continue)).auto_continue);
    assert_eq!(
        after_assistant(&assistant(StopReason::Stop, 169_000.0, None, "x"), &ctx()),
        Action::None
    );
    // Disabled, aborted and stale turns never trigger.
    let off = TriggerContext {
        thresholds: ThresholdSettings {
            enabled: false,
            ..ThresholdSettings::default()
        },
        ..ctx()
    };
    assert_eq!(after_assistant(&m, &off), Action::None);
    assert_eq!(
        after_assistant(
            &assistant(StopReason::Aborted, 190_000.0, None, "x"),
            &ctx()
        ),
        Action::None
    );
    let stale = TriggerContext {
        latest_compaction_ms: Some(2_000.0),
        ..ctx()
    };
    assert_eq!(after_assistant(&m, &stale), Action::None);
}

#[test]
fn mid_turn_compacts_only_at_a_safe_boundary_and_never_continues() {
    let plan = compact(&before_request(171_000, true, &ctx()));
    assert!(plan.mid_turn && !plan.auto_continue && !plan.will_retry);
    assert_eq!(before_request(171_000, false, &ctx()), Action::None);
    let off = TriggerContext {
        mid_turn_enabled: false,
        ..ctx()
    };
    assert_eq!(before_request(171_000, true, &off), Action::None);
}

#[test]
fn idle_compaction_never_continues() {
    let on = TriggerContext {
        idle_enabled: true,
        ..ctx()
    };
    let plan = compact(&when_idle(250_000, 301, false, &on));
    assert_eq!((plan.reason, plan.auto_continue), (Reason::Idle, false));
    assert_eq!(when_idle(250_000, 299, false, &on), Action::None);
    assert_eq!(when_idle(250_000, 301, true, &on), Action::None);
    assert_eq!(when_idle(150_000, 301, false, &on), Action::None);
    assert_eq!(when_idle(250_000, 301, false, &ctx()), Action::None);
}

#[test]
fn failure_messages_name_the_path() {
    for (reason, message) in [
        (Reason::Overflow, "Context overflow recovery failed: x"),
        (Reason::Incomplete, "Incomplete response recovery failed: x"),
        (Reason::Threshold, "Auto-compaction failed: x"),
        (Reason::Idle, "Auto-compaction failed: x"),
    ] {
        assert_eq!(reason.failure_message("x"), message, "{reason:?}");
    }
    assert!(!crate::manual().auto_continue);
}
