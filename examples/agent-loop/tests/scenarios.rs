//! Each trigger of the maintenance runtime, driven by scripted answers of
//! a model on the loopback server: what fires, what the agent is told, what
//! it sends next, and what reaches the session file.

#![allow(clippy::unwrap_used)]

use musepi_agent_loop::agent::{Point, Step};
use musepi_agent_loop::model::AGENT_MODEL;
use musepi_agent_loop::scenarios::{LARGE_MODEL, LARGE_WINDOW, Run, Scenario, run};
use musepi_compaction::Reason;
use musepi_compaction::prompts::AUTO_CONTINUE;
use musepi_runtime::{MaintenanceEvent, Outcome};

async fn scenario(s: Scenario) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let run = run(s, dir.path()).await.unwrap();
    assert_eq!(run.unused_replies, 0, "{:#?}", run.log);
    run
}

fn started(step: &Step, reason: Reason) -> bool {
    step.events.first() == Some(&MaintenanceEvent::CompactionStart { reason })
}

fn ended_ok(step: &Step, retry: bool) -> bool {
    matches!(
        step.events.last(),
        Some(MaintenanceEvent::CompactionEnd { result: Some(_), aborted: false, will_retry, error_message: None, .. })
            if *will_retry == retry
    )
}

#[tokio::test]
async fn an_overflow_error_leads_to_compaction_and_a_retry() {
    let r = scenario(Scenario::Overflow).await;
    let acted = r.acted();
    assert_eq!(acted.len(), 1, "{:#?}", r.log);
    let s = acted[0];
    assert_eq!(s.point, Point::AfterAssistant);
    assert_eq!(s.decision.outcome, Outcome::Compacted);
    assert_eq!(s.decision.reason, Some(Reason::Overflow));
    assert!(s.decision.retry && s.decision.remove_last_assistant && s.decision.continue_turn);
    assert!(started(s, Reason::Overflow) && ended_ok(s, true));
    // The retry went out, and its answer ended the turn.
    assert_eq!(r.agent_requests, 2);
    assert_eq!(r.compactions_in_file(), 1);
    assert!(r.summary_requests >= 1);
}

#[tokio::test]
async fn with_context_promotion_an_overflow_retries_on_the_larger_model_without_compacting() {
    let r = scenario(Scenario::Promotion).await;
    let acted = r.acted();
    assert_eq!(acted.len(), 1, "{:#?}", r.log);
    let s = acted[0];
    assert_eq!(s.decision.outcome, Outcome::Promoted);
    assert_eq!(s.decision.reason, Some(Reason::Overflow));
    assert!(s.decision.retry && s.decision.remove_last_assistant && s.decision.continue_turn);
    let target = s.decision.promotion.as_ref().unwrap();
    assert_eq!(
        (target.model_id.as_str(), target.context_window),
        (LARGE_MODEL, LARGE_WINDOW)
    );
    assert!(matches!(
        s.events.as_slice(),
        [MaintenanceEvent::ContextPromotion {
            reason: Reason::Overflow,
            ..
        }]
    ));
    // The retry named the larger model, and nothing was summarized.
    assert_eq!(r.agent_models, vec![AGENT_MODEL, LARGE_MODEL]);
    assert_eq!(r.summary_requests, 0);
    assert_eq!(r.compactions_in_file(), 0);
    assert!(r.file.contains(r#""type":"model_change""#));
}

#[tokio::test]
async fn a_length_stop_below_the_threshold_keeps_the_turn_and_warns() {
    let r = scenario(Scenario::TruncatedBelowThreshold).await;
    let acted = r.acted();
    assert_eq!(acted.len(), 1);
    assert_eq!(acted[0].decision.outcome, Outcome::Warned);
    assert!(
        acted[0]
            .decision
            .warning
            .as_deref()
            .unwrap()
            .contains("output limit")
    );
    assert!(acted[0].events.is_empty());
    assert_eq!(
        (
            r.agent_requests,
            r.summary_requests,
            r.compactions_in_file()
        ),
        (1, 0, 0)
    );
}

#[tokio::test]
async fn a_length_stop_above_the_threshold_compacts_and_continues() {
    let r = scenario(Scenario::TruncatedAboveThreshold).await;
    let acted = r.acted();
    assert_eq!(acted.len(), 1);
    let s = acted[0];
    assert_eq!(s.decision.reason, Some(Reason::Incomplete));
    assert_eq!(s.decision.outcome, Outcome::Compacted);
    assert!(s.decision.retry && s.decision.continue_turn && s.decision.remove_last_assistant);
    assert!(started(s, Reason::Incomplete) && ended_ok(s, true));
    assert_eq!(r.agent_requests, 2);
    assert_eq!(r.compactions_in_file(), 1);
}

#[tokio::test]
async fn three_empty_recoveries_stop_with_the_failure_message() {
    let r = scenario(Scenario::EmptyRecoveries).await;
    let acted = r.acted();
    let outcomes: Vec<Outcome> = acted.iter().map(|s| s.decision.outcome.clone()).collect();
    assert_eq!(
        outcomes,
        [
            Outcome::Retry,
            Outcome::Retry,
            Outcome::Retry,
            Outcome::Failed
        ]
    );
    let last = acted[3];
    let message = last.decision.error.clone().unwrap();
    assert!(
        message.starts_with("Incomplete response recovery failed: "),
        "{message}"
    );
    assert_eq!(
        last.events,
        [MaintenanceEvent::CompactionEnd {
            reason: Reason::Incomplete,
            result: None,
            aborted: false,
            will_retry: false,
            error_message: Some(message),
        }]
    );
    assert_eq!(
        (
            r.agent_requests,
            r.summary_requests,
            r.compactions_in_file()
        ),
        (4, 0, 0)
    );
}

#[tokio::test]
async fn threshold_maintenance_after_a_normal_turn_continues_with_the_developer_prompt() {
    let r = scenario(Scenario::Threshold).await;
    let acted = r.acted();
    assert_eq!(acted.len(), 1);
    let s = acted[0];
    assert_eq!(s.point, Point::AfterAssistant);
    assert_eq!(s.decision.reason, Some(Reason::Threshold));
    assert!(!s.decision.retry && s.decision.continue_turn);
    assert_eq!(
        s.decision.continue_prompt.as_deref(),
        Some(AUTO_CONTINUE.text())
    );
    assert!(started(s, Reason::Threshold) && ended_ok(s, false));
    // The agent continued once, with the developer prompt in its context.
    assert_eq!(r.agent_requests, 2);
    assert!(r.file.contains(r#""customType":"auto-continue""#));
    assert_eq!(r.compactions_in_file(), 1);
}

#[tokio::test]
async fn a_mid_turn_crossing_compacts_before_the_next_request_without_a_second_continuation() {
    let r = scenario(Scenario::MidTurn).await;
    let acted = r.acted();
    assert_eq!(acted.len(), 1, "{:#?}", r.log);
    let s = acted[0];
    assert_eq!(s.point, Point::BeforeRequest);
    assert_eq!(s.decision.reason, Some(Reason::Threshold));
    assert!(!s.decision.retry && !s.decision.continue_turn && s.decision.continue_prompt.is_none());
    assert!(started(s, Reason::Threshold) && ended_ok(s, false));
    // Tool call, tool call, then the answer: the compaction added no request.
    assert_eq!(r.agent_requests, 3);
    assert!(!r.file.contains("auto-continue"));
    assert_eq!(r.compactions_in_file(), 1);
}

#[tokio::test]
async fn idle_compaction_does_not_continue() {
    let r = scenario(Scenario::Idle).await;
    let acted = r.acted();
    assert_eq!(acted.len(), 1);
    let s = acted[0];
    assert_eq!(s.point, Point::Idle);
    assert_eq!(s.decision.reason, Some(Reason::Idle));
    assert!(!s.decision.continue_turn && s.decision.continue_prompt.is_none());
    assert!(started(s, Reason::Idle) && ended_ok(s, false));
    assert_eq!(r.agent_requests, 1);
    assert_eq!(r.compactions_in_file(), 1);
}

#[tokio::test]
async fn a_manual_compaction_while_idle_never_starts_a_turn() {
    let r = scenario(Scenario::Manual).await;
    let acted = r.acted();
    assert_eq!(acted.len(), 1);
    let s = acted[0];
    assert_eq!(s.point, Point::Compact);
    assert_eq!(s.decision.reason, Some(Reason::Manual));
    assert_eq!(s.decision.outcome, Outcome::Compacted);
    assert!(!s.decision.continue_turn && !s.decision.retry);
    assert!(started(s, Reason::Manual) && ended_ok(s, false));
    assert_eq!(r.agent_requests, 0);
    assert!(r.summary_requests >= 1);
    assert_eq!(r.compactions_in_file(), 1);
}
