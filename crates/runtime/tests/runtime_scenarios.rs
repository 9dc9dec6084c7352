//! The maintenance runtime at each natural point of an agent loop, over a
//! journal file, with a scripted summarizer: which trigger fires, the events
//! it reports, what the agent is told to do, and what reaches the file.

#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use musepi_compaction::prompts::AUTO_CONTINUE;
use musepi_compaction::{REPEATED_OVERFLOW, Reason};
use musepi_context_builder::{LlmMessage, RequestPurpose, SummaryRequest, SummaryResponse};
use musepi_hooks::{FromFn, RemoteCompactor, SummarizeError};
use musepi_runtime::{
    Decision, Maintenance, MaintenanceEvent, MaintenanceSettings, MaintenanceStrategy,
    NAVIGATE_MARKER, Outcome, PromotionTarget, TreeOutcome, TreeRequest, UsedStrategy,
};
use musepi_session_model::{
    AgentMessage, AssistantMessage, Content, ContentBlock, EntryBody, Header, Journal, JsonValue,
    StopReason, Text, ToolCall, ToolResultMessage, Usage, UserMessage,
};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

// ------------------------------------------------------------ the model

/// Answers every summary request with a fixed text; can fail or hang.
#[derive(Default)]
struct Scripted {
    fail: bool,
    hang: bool,
    started: Notify,
    seen: Mutex<Vec<RequestPurpose>>,
}

impl Scripted {
    async fn answer(
        &self,
        request: &SummaryRequest,
        cancel: CancellationToken,
    ) -> Result<SummaryResponse, SummarizeError> {
        self.seen.lock().unwrap().push(request.purpose);
        self.started.notify_one();
        if self.hang {
            cancel.cancelled().await;
            return Err(SummarizeError::Cancelled);
        }
        if self.fail {
            return Err(SummarizeError::Provider {
                provider: "scripted".into(),
                status: Some(500),
                message: "boom".into(),
            });
        }
        let text = match request.purpose {
            RequestPurpose::ShortSummary => "Worked on the parser.".to_owned(),
            RequestPurpose::Handoff => "## Goal\nFinish the parser.".to_owned(),
            _ => "## Goal\nFix the parser.".to_owned(),
        };
        Ok(SummaryResponse {
            text,
            usage: None,
            truncated: false,
        })
    }
}

// ------------------------------------------------------------ the session

const WINDOW: u64 = 100_000;
/// Above the default threshold of a 100,000 window (83,616).
const HIGH: f64 = 90_000.0;
/// Below it.
const LOW: f64 = 10_000.0;

struct Rig {
    _dir: tempfile::TempDir,
    runtime: Maintenance,
    events: Arc<Mutex<Vec<MaintenanceEvent>>>,
    clock: Arc<AtomicI64>,
    model: Arc<Scripted>,
}

fn settings(strategy: MaintenanceStrategy) -> MaintenanceSettings {
    let mut settings = MaintenanceSettings::default();
    settings.strategy = strategy;
    settings.compaction.keep_recent_tokens = 300;
    // The usage figures are thresholds, not what a provider would count for
    // these short messages: the kept window is not adapted to them.
    settings.compaction.adapt_keep_recent = false;
    settings.context_window = WINDOW;
    settings
}

fn rig_with(settings: MaintenanceSettings, model: Scripted) -> Rig {
    rig_of(settings, model, true)
}

fn rig_of(settings: MaintenanceSettings, model: Scripted, with_model: bool) -> Rig {
    rig_remote(settings, model, with_model, None)
}

fn rig_remote(
    settings: MaintenanceSettings,
    model: Scripted,
    with_model: bool,
    remote: Option<Arc<dyn RemoteCompactor>>,
) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::create(
        dir.path().join("s.jsonl"),
        Header::new("sess", "2025-01-01T00:00:00.000Z", "/repo"),
    )
    .unwrap();
    let clock = Arc::new(AtomicI64::new(1_735_689_600_000));
    let tick = clock.clone();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let model = Arc::new(model);
    let mut runtime = Maintenance::new(journal, settings);
    if with_model {
        runtime = runtime.with_summarizer(Arc::new(FromFn::summarizer(
            "scripted",
            model.clone(),
            async |model, request, cancel| model.answer(request, cancel).await,
        )));
    }
    if let Some(remote) = remote {
        runtime = runtime.with_remote(remote);
    }
    let mut runtime = runtime
        .with_clock(Arc::new(move || tick.fetch_add(1000, Ordering::SeqCst)))
        .with_events(Arc::new(move |e| sink.lock().unwrap().push(e)));
    runtime.set_model("scripted", "m1", None);
    let mut rig = Rig {
        _dir: dir,
        runtime,
        events,
        clock,
        model,
    };
    for turn in 0..3 {
        rig.user(&format!(
            "step {turn}: {}",
            "explain the parser ".repeat(40)
        ));
        rig.assistant(
            &"the parser reads tokens ".repeat(60),
            StopReason::Stop,
            LOW,
        );
    }
    rig.events.lock().unwrap().clear();
    rig
}

/// A rig for `strategy` with `change` made to the test settings.
fn rig_set(strategy: MaintenanceStrategy, change: impl FnOnce(&mut MaintenanceSettings)) -> Rig {
    let mut s = settings(strategy);
    change(&mut s);
    rig_with(s, Scripted::default())
}

fn rig(strategy: MaintenanceStrategy) -> Rig {
    rig_with(settings(strategy), Scripted::default())
}

impl Rig {
    fn now(&self) -> f64 {
        self.clock.load(Ordering::SeqCst) as f64
    }

    fn append(&mut self, message: AgentMessage) -> String {
        self.runtime
            .append(EntryBody::Message(message))
            .unwrap()
            .to_string()
    }

    fn user(&mut self, text: &str) -> String {
        let timestamp = Some(self.now());
        self.append(AgentMessage::User(UserMessage {
            content: Content::text(text),
            timestamp,
            attribution: None,
        }))
    }

    fn reply(&self, content: Content, stop: StopReason, input: f64) -> AssistantMessage {
        AssistantMessage {
            content,
            provider: Some("scripted".into()),
            model: Some("m1".into()),
            usage: Some(Usage {
                input,
                output: 100.0,
                total_tokens: input + 100.0,
                ..Usage::default()
            }),
            stop_reason: Some(stop),
            timestamp: Some(self.now()),
            ..AssistantMessage::default()
        }
    }

    fn assistant(&mut self, text: &str, stop: StopReason, input: f64) -> String {
        let m = self.reply(Content::text(text), stop, input);
        self.append(AgentMessage::Assistant(m))
    }

    fn tool_call(&mut self, id: &str, input: f64) -> String {
        let call = ToolCall {
            id: id.into(),
            name: Text::new("read"),
            arguments: JsonValue::new(serde_json::json!({"path": "src/parser.rs"})),
            intent: None,
        };
        let content = Content::Blocks(vec![
            ContentBlock::text("reading"),
            ContentBlock::ToolCall(call),
        ]);
        let m = self.reply(content, StopReason::ToolUse, input);
        self.append(AgentMessage::Assistant(m))
    }

    fn tool_result(&mut self, id: &str) -> String {
        let timestamp = Some(self.now());
        self.append(AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: Content::text("fn parse() {}"),
            timestamp,
            ..ToolResultMessage::default()
        }))
    }

    fn overflow(&mut self) -> String {
        self.overflow_from("m1")
    }

    /// A context overflow reported by `model` (of the `scripted` provider).
    fn overflow_from(&mut self, model: &str) -> String {
        let mut m = self.reply(Content::Blocks(Vec::new()), StopReason::Error, 0.0);
        m.model = Some(model.into());
        m.usage = None;
        m.error_message = Some("prompt is too long: 210000 tokens > 200000 maximum".into());
        self.append(AgentMessage::Assistant(m))
    }

    fn events(&self) -> Vec<MaintenanceEvent> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }

    /// The last line of the file, parsed.
    fn last_line(&self) -> serde_json::Value {
        musepi_test_support::last_line(self.runtime.journal().path())
    }

    fn compactions_in_file(&self) -> usize {
        let text = std::fs::read_to_string(self.runtime.journal().path()).unwrap();
        text.lines()
            .filter(|l| l.contains(r#""type":"compaction""#))
            .count()
    }
}

fn start(reason: Reason) -> MaintenanceEvent {
    MaintenanceEvent::CompactionStart { reason }
}

/// The `compaction_end` of a run that wrote nothing.
fn end_without_result(
    reason: Reason,
    aborted: bool,
    error_message: Option<String>,
) -> MaintenanceEvent {
    MaintenanceEvent::CompactionEnd {
        reason,
        result: None,
        aborted,
        will_retry: false,
        error_message,
    }
}

/// The `compaction_end` of a successful run, its result taken from the decision.
fn end_ok(reason: Reason, will_retry: bool, d: &Decision) -> MaintenanceEvent {
    MaintenanceEvent::CompactionEnd {
        reason,
        result: d.compaction.clone(),
        aborted: false,
        will_retry,
        error_message: None,
    }
}

impl Rig {
    /// Appends an assistant answer and runs the after-turn check.
    async fn answer(&mut self, text: &str, stop: StopReason, input: f64) -> Decision {
        self.assistant(text, stop, input);
        self.runtime.after_assistant(None).await.unwrap()
    }

    /// The model stops at its output limit half way through an answer,
    /// with `input` tokens of context: the after-turn check's decision.
    async fn length_stop(&mut self, input: f64) -> Decision {
        self.answer("half of the answer", StopReason::Length, input)
            .await
    }

    /// Moves the leaf to `target` through the runtime, summarizing the
    /// branch left when `summarize`.
    async fn navigate(&mut self, target: &str, summarize: bool) -> TreeOutcome {
        let mut request = TreeRequest::to(Some(target.to_owned()));
        request.summarize = summarize;
        self.runtime.navigate_tree(request).await.unwrap()
    }

    /// Asserts that the usage of `answer` triggers nothing more: not the
    /// post-turn check on it again, not the next request that still carries it.
    async fn assert_settled_after(&mut self, answer: &str) {
        assert_eq!(
            self.runtime.after_assistant(Some(answer)).await.unwrap(),
            Decision::nothing()
        );
        assert_eq!(
            self.runtime.before_request(Some(true)).await,
            Decision::nothing()
        );
    }

    /// Asserts that `d` compacted for `reason` in one successful run and
    /// neither retries nor starts or continues a turn.
    fn assert_compacted_without_a_turn(&self, d: &Decision, reason: Reason) {
        assert_eq!(d.outcome, Outcome::Compacted, "{:?}", d.notes);
        assert_eq!(d.reason, Some(reason));
        assert!(!d.retry && !d.continue_turn && d.continue_prompt.is_none());
        self.assert_ran_once(reason, false, d);
    }

    /// Asserts that the events since the last look are one successful run
    /// for `reason`: its start, and its end with the decision's result.
    fn assert_ran_once(&self, reason: Reason, will_retry: bool, d: &Decision) {
        assert_eq!(
            self.events(),
            vec![start(reason), end_ok(reason, will_retry, d)]
        );
    }
}

/// The error of a failed decision, which starts with `prefix`.
fn failure(d: &Decision, prefix: &str) -> String {
    assert_eq!(d.outcome, Outcome::Failed);
    let message = d.error.clone().unwrap();
    assert!(message.starts_with(prefix), "{message}");
    message
}

/// Asserts that `d` is `outcome` for `reason` and sends the request again:
/// the failed answer is gone from the rebuilt context, and the turn goes on.
fn assert_retries(d: &Decision, outcome: &Outcome, reason: Reason) {
    assert_eq!(&d.outcome, outcome);
    assert_eq!(d.reason, Some(reason));
    assert!(d.retry && d.remove_last_assistant && d.continue_turn);
    assert!(!last_is_failed_assistant(d.context.as_ref().unwrap()));
}

fn last_is_failed_assistant(context: &[LlmMessage]) -> bool {
    matches!(
        context.last(),
        Some(LlmMessage::Assistant {
            stop_reason: Some(StopReason::Error | StopReason::Length),
            ..
        })
    )
}

// ------------------------------------------------------------ scenarios

#[tokio::test]
async fn an_overflow_compacts_and_retries_once_then_gives_up() {
    let mut r = rig(MaintenanceStrategy::ContextFull);
    r.user("one more step");
    r.overflow();
    let d = r.runtime.after_assistant(None).await.unwrap();
    assert_retries(&d, &Outcome::Compacted, Reason::Overflow);
    assert_eq!(d.continue_prompt, None);
    assert_eq!(
        r.events(),
        vec![start(Reason::Overflow), end_ok(Reason::Overflow, true, &d)]
    );
    assert_eq!(r.compactions_in_file(), 1);
    assert!(r.runtime.state().overflow_recovery_attempted);

    // The retry overflows again: one compact-and-retry per run.
    r.overflow();
    let d = r.runtime.after_assistant(None).await.unwrap();
    assert_eq!(d.outcome, Outcome::Failed);
    assert_eq!(d.error.as_deref(), Some(REPEATED_OVERFLOW));
    assert!(!d.retry);
    assert_eq!(
        r.events(),
        vec![end_without_result(
            Reason::Overflow,
            false,
            Some(REPEATED_OVERFLOW.into())
        )]
    );
    assert_eq!(r.compactions_in_file(), 1);

    // A new user message starts a new run.
    r.user("try again");
    assert!(!r.runtime.state().overflow_recovery_attempted);
}

#[tokio::test]
async fn an_overflow_from_another_model_is_left_alone() {
    let mut r = rig(MaintenanceStrategy::ContextFull);
    r.overflow();
    r.runtime.set_model("other", "bigger", Some(400_000));
    let d = r.runtime.after_assistant(None).await.unwrap();
    assert_eq!(d, Decision::nothing());
    assert!(r.events().is_empty());
}

#[tokio::test]
async fn a_length_stop_below_the_threshold_keeps_the_turn_and_warns() {
    let mut r = rig(MaintenanceStrategy::ContextFull);
    let d = r.length_stop(LOW).await;
    assert_eq!(d.outcome, Outcome::Warned);
    assert!(d.warning.unwrap().contains("output limit"));
    assert!(!d.retry && !d.continue_turn && d.context.is_none());
    assert!(r.events().is_empty());
    assert_eq!(r.compactions_in_file(), 0);
}

#[tokio::test]
async fn a_length_stop_above_the_threshold_compacts_and_continues() {
    let mut r = rig(MaintenanceStrategy::ContextFull);
    let d = r.length_stop(HIGH).await;
    assert_retries(&d, &Outcome::Compacted, Reason::Incomplete);
    r.assert_ran_once(Reason::Incomplete, true, &d);
    assert_eq!(r.compactions_in_file(), 1);
}

#[tokio::test]
async fn three_empty_recoveries_then_the_failure_message() {
    let mut r = rig(MaintenanceStrategy::ContextFull);
    for n in 1..=3 {
        let d = r.answer("", StopReason::Length, LOW).await;
        assert_eq!(d.outcome, Outcome::Retry, "recovery {n}");
        assert!(d.retry && d.remove_last_assistant && d.continue_turn);
        assert_eq!(r.runtime.state().empty_incomplete_recoveries, n);
    }
    let d = r.answer("", StopReason::Length, LOW).await;
    let message = failure(&d, "Incomplete response recovery failed: ");
    assert_eq!(
        r.events(),
        vec![end_without_result(Reason::Incomplete, false, Some(message))]
    );
    assert_eq!(r.compactions_in_file(), 0);
}

#[tokio::test]
async fn threshold_maintenance_after_a_turn_continues_with_the_developer_prompt() {
    let mut r = rig(MaintenanceStrategy::ContextFull);
    r.user("next step");
    let id = r.assistant("done with the parser", StopReason::Stop, HIGH);
    let d = r.runtime.after_assistant(None).await.unwrap();
    assert_eq!(d.outcome, Outcome::Compacted);
    assert_eq!(d.reason, Some(Reason::Threshold));
    assert!(!d.retry && !d.remove_last_assistant && d.continue_turn);
    assert_eq!(d.continue_prompt.as_deref(), Some(AUTO_CONTINUE.text()));
    let report = d.compaction.clone().unwrap();
    assert_eq!(report.strategy, UsedStrategy::ContextFull);
    assert!(report.summary.contains("Fix the parser"));
    r.assert_ran_once(Reason::Threshold, false, &d);

    // The same usage never compacts twice: not the same message again, not
    // the next request that still carries it.
    r.assert_settled_after(&id).await;
    assert!(r.events().is_empty());
    assert_eq!(r.compactions_in_file(), 1);
}

#[tokio::test]
async fn auto_continue_off_compacts_without_continuing() {
    let mut r = rig_set(MaintenanceStrategy::ContextFull, |s| {
        s.auto_continue = false;
    });
    let d = r.answer("done", StopReason::Stop, HIGH).await;
    assert_eq!(d.outcome, Outcome::Compacted);
    assert!(!d.continue_turn && d.continue_prompt.is_none());
}

#[tokio::test]
async fn a_mid_turn_crossing_compacts_before_the_next_request_without_a_second_continuation() {
    let mut r = rig(MaintenanceStrategy::ContextFull);
    r.user("read the parser");
    r.tool_call("call-1", HIGH);
    // The turn goes on: the post-turn check leaves it to the next request.
    assert_eq!(
        r.runtime.after_assistant(None).await.unwrap(),
        Decision::nothing()
    );
    // The call has no result yet: not a safe boundary.
    assert!(!r.runtime.at_safe_boundary());
    assert_eq!(r.runtime.before_request(None).await, Decision::nothing());
    r.tool_result("call-1");
    let d = r.runtime.before_request(None).await;
    r.assert_compacted_without_a_turn(&d, Reason::Threshold);
    assert!(d.context.is_some());
    assert_eq!(r.runtime.before_request(None).await, Decision::nothing());
    assert_eq!(r.compactions_in_file(), 1);
}

#[tokio::test]
async fn mid_turn_checks_can_be_switched_off() {
    let mut r = rig_set(MaintenanceStrategy::ContextFull, |s| {
        s.mid_turn_enabled = false;
    });
    r.tool_call("call-1", HIGH);
    r.tool_result("call-1");
    assert_eq!(r.runtime.before_request(None).await, Decision::nothing());
}

#[tokio::test]
async fn idle_compaction_waits_for_the_timeout_and_never_continues() {
    let mut r = rig_set(MaintenanceStrategy::ContextFull, |s| {
        s.idle_enabled = true;
        s.idle_threshold_tokens = 5_000;
    });
    r.assistant("waiting for you", StopReason::Stop, LOW);
    assert_eq!(
        r.runtime.after_assistant(None).await.unwrap(),
        Decision::nothing()
    );
    assert_eq!(r.runtime.idle(299).await, Decision::nothing());
    let d = r.runtime.idle(300).await;
    r.assert_compacted_without_a_turn(&d, Reason::Idle);
    // Once is enough.
    assert_eq!(r.runtime.idle(3_000).await, Decision::nothing());
}

#[tokio::test]
async fn a_manual_compaction_while_idle_never_starts_a_turn() {
    let mut r = rig(MaintenanceStrategy::ContextFull);
    let d = r.runtime.compact(Some("focus on the parser".into())).await;
    r.assert_compacted_without_a_turn(&d, Reason::Manual);
    // Right after, there is nothing left to compact: an error, no turn.
    let d = r.runtime.compact(None).await;
    assert_eq!(d.outcome, Outcome::Failed);
    assert_eq!(d.error.as_deref(), Some("Already compacted"));
    assert!(!d.continue_turn);
}

#[tokio::test]
async fn strategy_off_stops_automatic_maintenance_but_not_manual() {
    let mut r = rig_with(settings(MaintenanceStrategy::Off), Scripted::default());
    r.assistant("done", StopReason::Stop, HIGH);
    assert_eq!(
        r.runtime.after_assistant(None).await.unwrap(),
        Decision::nothing()
    );
    let d = r.runtime.compact(Some("keep the parser".into())).await;
    assert_eq!(d.outcome, Outcome::Compacted);
}

#[tokio::test]
async fn failures_carry_the_message_of_their_path() {
    let failing = || Scripted {
        fail: true,
        ..Scripted::default()
    };
    let mut r = rig_with(settings(MaintenanceStrategy::ContextFull), failing());
    let d = r.answer("done", StopReason::Stop, HIGH).await;
    let message = failure(&d, "Auto-compaction failed: Summarization failed: ");
    let events = r.events();
    assert!(matches!(
        &events[1],
        MaintenanceEvent::CompactionEnd { error_message: Some(m), aborted: false, .. } if *m == message
    ));
    assert_eq!(r.compactions_in_file(), 0);

    let mut r = rig_with(settings(MaintenanceStrategy::ContextFull), failing());
    r.overflow();
    let d = r.runtime.after_assistant(None).await.unwrap();
    assert!(!d.retry);
    assert!(
        d.error
            .unwrap()
            .starts_with("Context overflow recovery failed: ")
    );
}

#[tokio::test]
async fn abort_stops_a_running_compaction_and_writes_nothing() {
    let hanging = Scripted {
        hang: true,
        ..Scripted::default()
    };
    let mut r = rig_with(settings(MaintenanceStrategy::ContextFull), hanging);
    r.assistant("done", StopReason::Stop, HIGH);
    let before = std::fs::read(r.runtime.journal().path()).unwrap();
    let handle = r.runtime.abort_handle();
    let model = r.model.clone();
    let aborter = tokio::spawn(async move {
        model.started.notified().await;
        handle.abort()
    });
    let d = r.runtime.after_assistant(None).await.unwrap();
    assert!(aborter.await.unwrap());
    assert_eq!(d.outcome, Outcome::Aborted);
    assert_eq!(
        r.events(),
        vec![
            start(Reason::Threshold),
            end_without_result(Reason::Threshold, true, None)
        ]
    );
    assert_eq!(std::fs::read(r.runtime.journal().path()).unwrap(), before);
    assert!(!r.runtime.abort_handle().is_running());
}

#[tokio::test]
async fn a_handoff_starts_a_new_session_and_mid_turn_falls_back_to_a_summary() {
    let mut r = rig(MaintenanceStrategy::Handoff);
    let old = r.runtime.journal().path().to_owned();
    let d = r.answer("done", StopReason::Stop, HIGH).await;
    assert_eq!(d.outcome, Outcome::Compacted);
    let report = d.compaction.clone().unwrap();
    assert_eq!(report.strategy, UsedStrategy::Handoff);
    assert_eq!(report.entry_id, None);
    let new = report.session_file.unwrap();
    assert_eq!(r.runtime.journal().path(), new);
    let text = std::fs::read_to_string(&new).unwrap();
    assert!(text.contains(r#""customType":"handoff""#), "{text}");
    assert!(text.contains(&format!(r#""parentSession":"{}""#, old.display())));
    // The successor's id is a UUIDv7 of the runtime's clock (deterministic
    // here: the ids are sequential), named in its file name too.
    let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let id = header["id"].as_str().unwrap();
    let ms = i64::from_str_radix(&id[..13].replace('-', ""), 16).unwrap();
    assert!((1_735_689_600_000..1_735_689_700_000).contains(&ms), "{id}");
    assert_eq!((&id[14..15], &id[19..20]), ("7", "8"), "{id}");
    assert!(new.to_str().unwrap().ends_with(&format!("_{id}.jsonl")));
    assert_eq!(
        r.model.seen.lock().unwrap().as_slice(),
        [RequestPurpose::Handoff]
    );

    // Mid-turn never hands off: it writes a context-full compaction.
    let mut r = rig(MaintenanceStrategy::Handoff);
    r.tool_call("call-1", HIGH);
    r.tool_result("call-1");
    let d = r.runtime.before_request(None).await;
    assert_eq!(d.compaction.unwrap().strategy, UsedStrategy::ContextFull);
    assert_eq!(r.compactions_in_file(), 1);
}

#[tokio::test]
async fn navigate_tree_moves_the_leaf_with_or_without_a_summary() {
    let mut r = rig(MaintenanceStrategy::ContextFull);
    let fork = r.user("a question I will abandon");
    r.assistant("an answer I will abandon", StopReason::Stop, LOW);
    let target = r.runtime.journal().session().entries()[1].id.to_string();
    let d = r.navigate(&target, true).await;
    assert!(!d.cancelled);
    assert!(d.navigation.abandoned.iter().any(|id| id.as_str() == fork));
    let summary_id = d.navigation.summary_entry.clone().unwrap();
    assert_eq!(d.navigation.new_leaf.as_ref(), Some(&summary_id));
    let events = r.events();
    assert_eq!(
        events.first(),
        Some(&MaintenanceEvent::TreeStart {
            target_id: Some(target.clone()),
            summarize: true
        })
    );
    assert!(matches!(
        events.last(),
        Some(MaintenanceEvent::TreeEnd { summary_entry_id: Some(id), aborted: false, .. }) if *id == summary_id.to_string()
    ));

    // Without a summary, a marker entry makes the new leaf durable.
    let d = r.navigate(&target, false).await;
    let marker = d.marker_entry_id.unwrap();
    let session = r.runtime.journal().session();
    assert_eq!(session.leaf_id(), Some(&marker));
    assert!(matches!(
        &session.get(marker.as_str()).unwrap().body,
        EntryBody::Custom { custom_type, .. } if custom_type == NAVIGATE_MARKER
    ));
}

#[tokio::test]
async fn the_default_snapcompact_strategy_needs_no_model() {
    let mut r = rig_of(
        settings(MaintenanceStrategy::default()),
        Scripted::default(),
        false,
    );
    let d = r.answer("done", StopReason::Stop, HIGH).await;
    assert_eq!(d.outcome, Outcome::Compacted, "{d:?}");
    let report = d.compaction.clone().unwrap();
    assert_eq!(report.strategy, UsedStrategy::Snapcompact);
    assert!(report.tokens_after < 3_000, "{report:?}");
    assert!(d.continue_turn && d.continue_prompt.is_some());
    r.assert_ran_once(Reason::Threshold, false, &d);
    assert_eq!(r.compactions_in_file(), 1);
    assert!(r.model.seen.lock().unwrap().is_empty());

    // Manual instructions ask for a model; without one the archive is
    // written anyway, and the decision says the instructions were not used.
    r.user("more work");
    r.assistant(
        &"the parser reads tokens ".repeat(60),
        StopReason::Stop,
        LOW,
    );
    r.user("and more");
    r.assistant(
        &"the parser reads tokens ".repeat(60),
        StopReason::Stop,
        LOW,
    );
    let d = r.runtime.compact(Some("keep the parser".into())).await;
    assert_eq!(d.outcome, Outcome::Compacted, "{d:?}");
    assert_eq!(d.compaction.unwrap().strategy, UsedStrategy::Snapcompact);
    assert!(d.notes.iter().any(|n| n.contains("instructions")));
}

#[tokio::test]
async fn context_full_without_a_model_is_skipped_quietly() {
    let mut r = rig_of(
        settings(MaintenanceStrategy::ContextFull),
        Scripted::default(),
        false,
    );
    let d = r.answer("done", StopReason::Stop, HIGH).await;
    assert_eq!(d.outcome, Outcome::Skipped);
    assert!(d.error.is_none() && !d.continue_turn);
    assert_eq!(
        r.events(),
        vec![
            start(Reason::Threshold),
            end_without_result(Reason::Threshold, false, None)
        ]
    );
    // A manual compaction says why.
    let d = r.runtime.compact(None).await;
    assert_eq!(d.outcome, Outcome::Failed);
    assert!(d.error.unwrap().starts_with("No model selected"));
}

#[tokio::test]
async fn usage_from_before_a_compaction_never_triggers_again() {
    // No timestamps at all: the position in the tree is what counts.
    let mut r = rig(MaintenanceStrategy::ContextFull);
    r.user("next step");
    let mut m = r.reply(Content::text("done"), StopReason::Stop, HIGH);
    m.timestamp = None;
    let high = r.append(AgentMessage::Assistant(m));
    let d = r.runtime.compact(None).await;
    assert_eq!(d.outcome, Outcome::Compacted);
    r.events();
    // The kept answer still carries its high usage: neither the post-turn
    // check on it nor the next request's check acts on it.
    r.assert_settled_after(&high).await;
    let (tokens, anchor) = r.runtime.context_tokens();
    assert!(tokens < 5_000 && anchor.is_none(), "{tokens} {anchor:?}");
    assert!(r.events().is_empty());
}

#[tokio::test]
async fn context_full_tries_the_native_remote_compaction_first_when_enabled() {
    // `llm` tries it when `remoteEnabled` says so; `remote` always does.
    for (strategy, remote_enabled, enabled) in [
        (MaintenanceStrategy::ContextFull, true, true),
        (MaintenanceStrategy::ContextFull, false, false),
        (MaintenanceStrategy::Remote, false, true),
    ] {
        let mut s = settings(strategy);
        s.remote_enabled = remote_enabled;
        // A native remote compaction that counts its calls.
        let native = Arc::new(FromFn::remote_compactor(
            "openai",
            Mutex::new(0usize),
            async |calls, _, _| {
                *calls.lock().unwrap() += 1;
                Ok(serde_json::json!({"provider": "openai", "replacementHistory": []}))
            },
        ));
        let mut r = rig_remote(s, Scripted::default(), true, Some(native.clone()));
        let d = r.answer("done", StopReason::Stop, HIGH).await;
        assert_eq!(d.outcome, Outcome::Compacted);
        assert_eq!(*native.state().lock().unwrap(), usize::from(enabled));
        let text = std::fs::read_to_string(r.runtime.journal().path()).unwrap();
        assert_eq!(text.contains("openaiRemoteCompaction"), enabled);
    }
}

// ------------------------------------------------------------ context promotion

/// Promotion on, with two larger models of the `scripted` provider.
fn promoting_rig(targets: &[(&str, u64)]) -> Rig {
    let mut r = rig_with(
        {
            let mut value = settings(MaintenanceStrategy::ContextFull);
            value.context_promotion = true;
            value
        },
        Scripted::default(),
    );
    r.runtime.set_promotion_targets(
        targets
            .iter()
            .map(|(m, w)| PromotionTarget::new("scripted", m, *w))
            .collect(),
    );
    r
}

fn promoted(reason: Reason, from: &str, to: &str, window: u64) -> MaintenanceEvent {
    MaintenanceEvent::ContextPromotion {
        reason,
        from_model: Some(format!("scripted/{from}")),
        target: PromotionTarget::new("scripted", to, window),
    }
}

#[tokio::test]
async fn overflows_climb_the_promotion_targets_then_fall_back_to_compaction() {
    let mut r = promoting_rig(&[("m3", 1_000_000), ("m2", 400_000)]);
    r.user("one more step");
    r.overflow();
    let d = r.runtime.after_assistant(None).await.unwrap();
    assert_retries(&d, &Outcome::Promoted, Reason::Overflow);
    assert_eq!(
        d.promotion,
        Some(PromotionTarget::new("scripted", "m2", 400_000))
    );
    assert_eq!(
        r.events(),
        vec![promoted(Reason::Overflow, "m1", "m2", 400_000)]
    );
    // The switch is in the file; nothing was compacted.
    let line = r.last_line();
    assert_eq!(line["type"], "model_change");
    assert_eq!(line["provider"], "scripted");
    assert_eq!(line["modelId"], "m2");
    assert_eq!(r.compactions_in_file(), 0);
    assert_eq!(r.runtime.settings().context_window, 400_000);
    assert!(!r.runtime.state().overflow_recovery_attempted);

    // The larger model overflows too: the next one up.
    r.overflow_from("m2");
    let d = r.runtime.after_assistant(None).await.unwrap();
    assert_eq!(d.outcome, Outcome::Promoted);
    assert_eq!(
        r.events(),
        vec![promoted(Reason::Overflow, "m2", "m3", 1_000_000)]
    );

    // No larger model is left: compact and retry, as without promotion.
    r.overflow_from("m3");
    let d = r.runtime.after_assistant(None).await.unwrap();
    assert_eq!(d.outcome, Outcome::Compacted);
    assert!(d.retry && d.promotion.is_none());
    assert_eq!(r.compactions_in_file(), 1);
}

#[tokio::test]
async fn threshold_maintenance_promotes_without_continuing_and_only_once() {
    let mut r = promoting_rig(&[("m2", 400_000)]);
    let id = r.assistant("done", StopReason::Stop, HIGH);
    let d = r.runtime.after_assistant(None).await.unwrap();
    assert_eq!(d.outcome, Outcome::Promoted);
    assert_eq!(d.reason, Some(Reason::Threshold));
    assert!(!d.retry && !d.remove_last_assistant && !d.continue_turn);
    assert_eq!(d.continue_prompt, None);
    assert_eq!(d.context, None);
    assert_eq!(
        r.events(),
        vec![promoted(Reason::Threshold, "m1", "m2", 400_000)]
    );
    assert_eq!(r.compactions_in_file(), 0);
    // The same usage never acts twice.
    let again = r.runtime.after_assistant(Some(&id)).await.unwrap();
    assert_eq!(again, Decision::nothing());
}

#[tokio::test]
async fn a_target_whose_threshold_the_context_still_crosses_is_not_a_promotion() {
    // 105,000 tokens of window put the threshold at 88,616: 90,000 crosses it.
    let mut r = promoting_rig(&[("m2", 105_000)]);
    let d = r.answer("done", StopReason::Stop, HIGH).await;
    assert_eq!(d.outcome, Outcome::Compacted);
    assert_eq!(r.compactions_in_file(), 1);
    assert_eq!(r.runtime.settings().context_window, WINDOW);
}

#[tokio::test]
async fn a_length_stop_above_the_threshold_promotes_and_retries() {
    let mut r = promoting_rig(&[("m2", 400_000)]);
    let d = r.length_stop(HIGH).await;
    assert_retries(&d, &Outcome::Promoted, Reason::Incomplete);
    assert_eq!(r.compactions_in_file(), 0);
}

#[tokio::test]
async fn targets_without_the_setting_never_promote() {
    let mut r = rig(MaintenanceStrategy::ContextFull);
    r.runtime
        .set_promotion_targets(vec![PromotionTarget::new("scripted", "m2", 400_000)]);
    r.overflow();
    let d = r.runtime.after_assistant(None).await.unwrap();
    assert_eq!(d.outcome, Outcome::Compacted);
    assert!(d.promotion.is_none());
    assert!(
        !r.events()
            .iter()
            .any(|e| matches!(e, MaintenanceEvent::ContextPromotion { .. }))
    );
}

/// What the triggers compare, computed from the whole context at the leaf:
/// the measured tokens, or the context's tokens when their usage was acted
/// on or is dated before the latest compaction.
fn measured_from_scratch(r: &Rig) -> (u64, Option<String>) {
    let s = r.runtime.journal().session();
    let leaf = s.leaf_index();
    let m = musepi_snapcompact::measured_tokens(s, leaf);
    let Some(i) = m.last_usage_index else {
        return (m.tokens, None);
    };
    let context = musepi_context_builder::build_context(s);
    let anchor = &s.entries()[context.messages[i].entry_index];
    let compaction_ms = leaf
        .and_then(|l| s.path_summary(l).compaction)
        .and_then(|c| s.entries()[c as usize].timestamp_ms());
    let dated_before = matches!(
        (anchor.message().and_then(AgentMessage::timestamp), compaction_ms),
        (Some(t), Some(c)) if t <= c as f64
    );
    if r.runtime.state().acted_usage.as_ref() == Some(&anchor.id) || dated_before {
        let all = musepi_snapcompact::context_tokens(
            s,
            leaf,
            musepi_context_builder::Tokenizer::Heuristic,
        );
        (all, None)
    } else {
        (m.tokens, Some(anchor.id.to_string()))
    }
}

fn assert_measured_as_from_scratch(r: &mut Rig, step: &str) {
    let expected = measured_from_scratch(r);
    let (tokens, anchor) = r.runtime.context_tokens();
    assert_eq!(
        (tokens, anchor.map(|a| a.to_string())),
        expected,
        "after {step}"
    );
    let answered = musepi_context_builder::calls_answered(&musepi_context_builder::build_context(
        r.runtime.journal().session(),
    ));
    assert_eq!(r.runtime.at_safe_boundary(), answered, "after {step}");
}

#[tokio::test]
async fn the_measured_size_follows_appends_compactions_and_navigation() {
    let mut r = rig(MaintenanceStrategy::ContextFull);
    assert_measured_as_from_scratch(&mut r, "open");
    r.user("fix the parser");
    r.tool_call("c1", LOW);
    assert_measured_as_from_scratch(&mut r, "a call without its result");
    assert!(!r.runtime.at_safe_boundary());
    r.tool_result("c1");
    assert_measured_as_from_scratch(&mut r, "its result");
    let answered = r.assistant("fixed", StopReason::Stop, LOW);
    r.user("and the lexer");
    let (tokens, anchor) = r.runtime.context_tokens();
    assert_eq!(anchor.map(|a| a.to_string()), Some(answered));
    assert!(tokens > LOW as u64 + 100, "{tokens}");
    assert_measured_as_from_scratch(&mut r, "a usage and a message after it");
    let fork = r.runtime.journal().session().entries()[0].id.to_string();
    let d = r.runtime.compact(None).await;
    assert_eq!(d.outcome, Outcome::Compacted);
    assert_measured_as_from_scratch(&mut r, "a compaction");
    r.tool_call("c2", LOW);
    r.tool_result("c2");
    assert_measured_as_from_scratch(&mut r, "a tool loop after the compaction");
    r.navigate(&fork, false).await;
    assert_measured_as_from_scratch(&mut r, "a move back to the first message");
    r.assistant("a new answer", StopReason::Stop, LOW);
    assert_measured_as_from_scratch(&mut r, "an answer on the new branch");
}

#[tokio::test]
async fn a_rewrite_past_another_process_holding_the_old_file_open_is_in_the_notes() {
    let dir = tempfile::tempdir().unwrap();
    // A v2 session: the compaction entry is written with the migration, in
    // one rewrite of the file.
    let path = musepi_test_support::example_as_v2(dir.path(), "s.jsonl");
    let journal = Journal::open(&path, &mut musepi_session_model::SequentialIds::new()).unwrap();
    let mut runtime = Maintenance::new(journal, MaintenanceSettings::default());
    let mut held = musepi_test_support::hold_open(&path, musepi_test_support::Hold::Appending);
    let d = runtime.compact(None).await;
    held.kill().unwrap();
    held.wait().unwrap();
    assert_eq!(d.outcome, Outcome::Compacted, "{d:?}");
    let expected = format!(
        "{}: another process still had the replaced file open for writing 2 s after the rewrite",
        path.display()
    );
    assert_eq!(
        d.notes.iter().filter(|n| n.starts_with(&expected)).count(),
        1,
        "{:?}",
        d.notes
    );
}
