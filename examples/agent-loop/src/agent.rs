//! A small agent loop: it sends the live context to the model, appends what
//! comes back, runs the `read` tool, and calls the maintenance runtime at
//! each natural point, doing what each decision says.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use musepi_context_builder::{LlmMessage, resolve_replays};
use musepi_providers::{Provider, ProviderConfig, ProviderKind, shared_client};
use musepi_runtime::{
    Decision, Maintenance, MaintenanceError, MaintenanceEvent, MaintenanceSettings, Outcome,
    PromotionTarget,
};
use musepi_session_model::{
    AgentMessage, AssistantMessage, Content, ContentBlock, CustomMessageEntry, EntryBody, Journal,
    JsonValue, SessionError, StopReason, Text, ToolCall, ToolResultMessage, Usage, UserMessage,
};
use serde_json::{Value, json};

use crate::model::{AGENT_MODEL, SUMMARIZER_MODEL};

/// The provider name the agent's answers carry.
pub const PROVIDER: &str = "loopback";
/// The most requests one user turn may make.
pub const MAX_REQUESTS: usize = 12;

/// Why the loop stopped.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model server could not be reached or answered something unreadable.
    #[error("model request failed: {0}")]
    Http(#[from] reqwest::Error),
    /// The runtime refused a call.
    #[error(transparent)]
    Runtime(#[from] MaintenanceError),
    /// The session file could not be made.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The loopback server could not start.
    #[error("cannot start the model server: {0}")]
    Io(#[from] std::io::Error),
    /// A turn kept going past [`MAX_REQUESTS`].
    #[error("the turn made more than {MAX_REQUESTS} requests")]
    TooManyRequests,
}

/// A natural point of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// Before a model request.
    BeforeRequest,
    /// After an assistant message was appended.
    AfterAssistant,
    /// While waiting for the user.
    Idle,
    /// `/compact`.
    Compact,
}

impl Point {
    /// The runtime method's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::BeforeRequest => "before_request",
            Self::AfterAssistant => "after_assistant",
            Self::Idle => "idle",
            Self::Compact => "compact",
        }
    }
}

/// One call of the runtime, what it decided and the events it reported.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Where.
    pub point: Point,
    /// What to do.
    pub decision: Decision,
    /// `compaction_start` / `compaction_end`.
    pub events: Vec<MaintenanceEvent>,
}

/// The agent: its runtime, its HTTP client and its live messages.
pub struct Agent {
    runtime: Maintenance,
    http: reqwest::Client,
    url: String,
    live: Vec<LlmMessage>,
    /// The model the agent's requests name (context promotion changes it).
    model: String,
    events: Arc<Mutex<Vec<MaintenanceEvent>>>,
    steps: Vec<Step>,
    log: Vec<String>,
}

fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A provider message in the chat-completions shape. Chat completions
/// replay no provider's native history: the caller resolves each provider
/// history into its summary and kept messages first, and one left in place
/// reads as its summary.
fn wire(m: &LlmMessage) -> Value {
    match m {
        LlmMessage::User { .. } | LlmMessage::ProviderHistory(_) => {
            json!({"role": "user", "content": text_of(m.content())})
        }
        LlmMessage::Developer { content } => {
            json!({"role": "developer", "content": text_of(content)})
        }
        LlmMessage::Assistant { content, .. } => {
            let calls: Vec<Value> = content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolCall(c) => Some(json!({
                        "id": c.id, "type": "function",
                        "function": {"name": c.name.as_str(), "arguments": c.arguments.value().to_string()},
                    })),
                    _ => None,
                })
                .collect();
            let mut v = json!({"role": "assistant", "content": text_of(content)});
            if !calls.is_empty() {
                v["tool_calls"] = Value::Array(calls);
            }
            v
        }
        LlmMessage::ToolResult {
            tool_call_id,
            content,
            ..
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": text_of(content)}),
    }
}

/// The model's answer as a session message: text, tool calls, stop
/// reason and usage; an HTTP error becomes an `error` stop with its message.
fn assistant_of(model: &str, ok: bool, body: &Value) -> AssistantMessage {
    let base = AssistantMessage {
        provider: Some(PROVIDER.to_owned()),
        model: Some(model.to_owned()),
        ..AssistantMessage::default()
    };
    if !ok {
        let message = body["error"]["message"]
            .as_str()
            .unwrap_or("the model request failed");
        return AssistantMessage {
            stop_reason: Some(StopReason::Error),
            error_message: Some(message.to_owned()),
            ..base
        };
    }
    let choice = &body["choices"][0];
    let mut blocks = Vec::new();
    if let Some(text) = choice["message"]["content"]
        .as_str()
        .filter(|t| !t.is_empty())
    {
        blocks.push(ContentBlock::text(text));
    }
    for call in choice["message"]["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let arguments = call["function"]["arguments"]
            .as_str()
            .and_then(|a| serde_json::from_str(a).ok())
            .unwrap_or_else(|| json!({}));
        blocks.push(ContentBlock::ToolCall(ToolCall {
            id: call["id"].as_str().unwrap_or_default().to_owned(),
            name: Text::new(call["function"]["name"].as_str().unwrap_or_default()),
            arguments: JsonValue::new(arguments),
            intent: None,
        }));
    }
    let usage = &body["usage"];
    let number = |key: &str| usage[key].as_f64().unwrap_or(0.0);
    AssistantMessage {
        content: Content::Blocks(blocks),
        stop_reason: Some(match choice["finish_reason"].as_str() {
            Some("length") => StopReason::Length,
            Some("tool_calls") => StopReason::ToolUse,
            _ => StopReason::Stop,
        }),
        usage: Some(Usage {
            input: number("prompt_tokens"),
            output: number("completion_tokens"),
            total_tokens: number("total_tokens"),
            ..Usage::default()
        }),
        ..base
    }
}

fn short(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > 60 {
        format!("{}…", line.chars().take(60).collect::<String>())
    } else {
        line.to_owned()
    }
}

/// A decision in one line.
pub fn describe(d: &Decision) -> String {
    let mut parts = vec![d.outcome.name().to_owned()];
    if let Some(r) = d.reason {
        parts.push(format!("reason {}", r.name()));
    }
    if d.remove_last_assistant {
        parts.push("drop the failed answer".into());
    }
    if d.retry {
        parts.push("retry".into());
    } else if d.continue_prompt.is_some() {
        parts.push("continue with the developer prompt".into());
    }
    if let Some(c) = &d.compaction {
        parts.push(format!(
            "{} {:.0} -> {} tokens",
            c.strategy.name(),
            c.tokens_before,
            c.tokens_after
        ));
    }
    if let Some(w) = &d.warning {
        parts.push(format!("warning: {w}"));
    }
    if let Some(e) = &d.error {
        parts.push(format!("error: {e}"));
    }
    parts.join(", ")
}

/// An event in one line.
pub fn describe_event(e: &MaintenanceEvent) -> String {
    match e {
        MaintenanceEvent::CompactionStart { reason } => {
            format!("compaction_start ({})", reason.name())
        }
        MaintenanceEvent::CompactionEnd {
            reason,
            result,
            aborted,
            will_retry,
            error_message,
        } => {
            let what = match (result, error_message) {
                (Some(r), _) => format!(
                    "{}, entry {}",
                    r.strategy.name(),
                    r.entry_id.as_ref().map_or("-", |id| id.as_str())
                ),
                (None, Some(m)) => m.clone(),
                (None, None) if *aborted => "aborted".to_owned(),
                (None, None) => "nothing done".to_owned(),
            };
            format!(
                "compaction_end ({}, willRetry {will_retry}): {what}",
                reason.name()
            )
        }
        MaintenanceEvent::ContextPromotion {
            reason,
            from_model,
            target,
        } => format!(
            "context_promotion ({}): {} -> {}/{} ({} tokens)",
            reason.name(),
            from_model.as_deref().unwrap_or("?"),
            target.provider,
            target.model_id,
            target.context_window
        ),
        other => other.name().to_owned(),
    }
}

impl Agent {
    /// An agent over `journal` talking to the model at `url` (which also
    /// writes the summaries).
    pub fn new(
        journal: Journal,
        url: &str,
        settings: MaintenanceSettings,
    ) -> Result<Self, AgentError> {
        let http = shared_client()?;
        let config =
            ProviderConfig::new(ProviderKind::OpenaiCompatible, url).with_model(SUMMARIZER_MODEL);
        let summarizer = Provider::new(config, http.clone());
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        let clock = Arc::new(AtomicI64::new(1_746_093_600_000));
        let mut runtime = Maintenance::new(journal, settings)
            .with_summarizer(Arc::new(summarizer))
            .with_clock(Arc::new(move || clock.fetch_add(1_000, Ordering::SeqCst)))
            .with_events(Arc::new(move |e| {
                sink.lock().unwrap_or_else(PoisonError::into_inner).push(e);
            }));
        runtime.set_model(PROVIDER, AGENT_MODEL, None);
        let live = runtime.context();
        Ok(Self {
            runtime,
            http,
            url: format!("{}/chat/completions", url.trim_end_matches('/')),
            live,
            model: AGENT_MODEL.to_owned(),
            events,
            steps: Vec::new(),
            log: Vec::new(),
        })
    }

    /// The runtime.
    pub fn runtime(&self) -> &Maintenance {
        &self.runtime
    }

    /// The larger-context models the agent may switch to (used with
    /// `contextPromotion.enabled`).
    pub fn offer_models(&mut self, targets: Vec<PromotionTarget>) {
        self.runtime.set_promotion_targets(targets);
    }

    /// Every runtime call so far.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// What happened, for people.
    pub fn log(&self) -> &[String] {
        &self.log
    }

    /// Appends earlier turns directly, as if they had happened before.
    pub fn seed(&mut self, turns: &[(&str, &str)], prompt_tokens: f64) -> Result<(), AgentError> {
        for (question, answer) in turns {
            self.append(AgentMessage::User(UserMessage {
                content: Content::text(*question),
                ..UserMessage::default()
            }))?;
            self.append(AgentMessage::Assistant(AssistantMessage {
                content: Content::text(*answer),
                stop_reason: Some(StopReason::Stop),
                usage: Some(Usage {
                    input: prompt_tokens,
                    output: 120.0,
                    total_tokens: prompt_tokens + 120.0,
                    ..Usage::default()
                }),
                ..assistant_of(&self.model, true, &json!({}))
            }))?;
        }
        Ok(())
    }

    fn append(&mut self, message: AgentMessage) -> Result<String, AgentError> {
        let id = self.runtime.append(EntryBody::Message(message))?;
        self.live = self.runtime.context();
        Ok(id.to_string())
    }

    /// Keeps a runtime call's decision and events; takes its context.
    fn record(&mut self, point: Point, decision: Decision) -> Decision {
        let events =
            std::mem::take(&mut *self.events.lock().unwrap_or_else(PoisonError::into_inner));
        for e in &events {
            self.log.push(format!("    event {}", describe_event(e)));
        }
        if decision.outcome != Outcome::Nothing {
            self.log
                .push(format!("  {}: {}", point.name(), describe(&decision)));
        }
        if let Some(context) = &decision.context {
            self.live.clone_from(context);
        }
        if let Some(target) = &decision.promotion {
            self.model.clone_from(&target.model_id);
            self.log.push(format!(
                "    switched to {} ({} tokens of context)",
                target.model_id, target.context_window
            ));
        }
        self.steps.push(Step {
            point,
            decision: decision.clone(),
            events,
        });
        decision
    }

    async fn request(&mut self) -> Result<AssistantMessage, AgentError> {
        let body = json!({
            "model": self.model,
            "messages": resolve_replays(&self.live, None)
                .into_iter()
                .map(wire)
                .collect::<Vec<_>>(),
        });
        let response = self.http.post(&self.url).json(&body).send().await?;
        let ok = response.status().is_success();
        let answer: Value = response.json().await?;
        Ok(assistant_of(&self.model, ok, &answer))
    }

    /// One user turn: requests until the model answers without tools, or a
    /// decision stops the turn.
    pub async fn user_turn(&mut self, text: &str) -> Result<(), AgentError> {
        self.log.push(format!("user: {}", short(text)));
        self.append(AgentMessage::User(UserMessage {
            content: Content::text(text),
            ..UserMessage::default()
        }))?;
        for _ in 0..MAX_REQUESTS {
            let d = self.runtime.before_request(None).await;
            self.record(Point::BeforeRequest, d);
            let message = self.request().await?;
            let said = if let Some(error) = &message.error_message {
                format!("model error: {}", short(error))
            } else {
                let calls: Vec<&str> = message.tool_calls().map(|c| c.name.as_str()).collect();
                let text = if calls.is_empty() {
                    short(&text_of(message.content.blocks()))
                } else {
                    format!("calls {}", calls.join(", "))
                };
                format!(
                    "model ({}, {} prompt tokens): {text}",
                    message.stop_reason.as_ref().map_or("?", StopReason::as_str),
                    message.usage.as_ref().map_or(0.0, |u| u.input),
                )
            };
            self.log.push(said);
            let calls: Vec<String> = message.tool_calls().map(|c| c.id.clone()).collect();
            let id = self.append(AgentMessage::Assistant(message))?;
            let d = self.runtime.after_assistant(Some(&id)).await?;
            let d = self.record(Point::AfterAssistant, d);
            if d.retry {
                continue;
            }
            if let Some(prompt) = d.continue_prompt {
                self.runtime
                    .append(EntryBody::CustomMessage(CustomMessageEntry {
                        custom_type: "auto-continue".to_owned(),
                        content: Content::text(prompt),
                        display: false,
                        details: None,
                        attribution: Some("agent".to_owned()),
                    }))?;
                self.live = self.runtime.context();
                self.log
                    .push("developer: (auto-continue prompt)".to_owned());
                continue;
            }
            if matches!(
                d.outcome,
                Outcome::Failed | Outcome::Warned | Outcome::Aborted
            ) || calls.is_empty()
            {
                return Ok(());
            }
            for call in calls {
                self.log.push(format!("tool read ({call})"));
                self.append(AgentMessage::ToolResult(ToolResultMessage {
                    tool_call_id: call,
                    tool_name: "read".to_owned(),
                    content: Content::text(
                        "pub fn parse(input: &str) -> Tree {\n    Tree::default()\n}\n",
                    ),
                    ..ToolResultMessage::default()
                }))?;
            }
        }
        Err(AgentError::TooManyRequests)
    }

    /// The agent waited `seconds` for the user.
    pub async fn idle(&mut self, seconds: u64) -> Decision {
        self.log.push(format!("idle for {seconds} s"));
        let d = self.runtime.idle(seconds).await;
        self.record(Point::Idle, d)
    }

    /// The user typed `/compact [instructions]`.
    pub async fn compact(&mut self, instructions: Option<&str>) -> Decision {
        self.log
            .push(format!("/compact {}", instructions.unwrap_or_default()));
        let d = self.runtime.compact(instructions.map(str::to_owned)).await;
        self.record(Point::Compact, d)
    }
}
