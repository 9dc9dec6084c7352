//! One scenario per trigger: a scripted model, a session with some
//! history, and the turns that make the trigger fire.

use musepi_runtime::{MaintenanceSettings, MaintenanceStrategy, PromotionTarget};
use musepi_session_model::{Header, Journal};

use crate::agent::{Agent, AgentError, PROVIDER, Step};
use crate::model::{Reply, ScriptedModel};

/// The agent model's window; with a 2,000 reserve the threshold is 13,600.
pub const WINDOW: u64 = 16_000;
/// A context above the threshold.
pub const HIGH: u64 = 14_500;
/// A context well below it.
pub const LOW: u64 = 3_000;
/// The larger model context promotion switches to.
pub const LARGE_MODEL: &str = "agent-model-64k";
/// Its window.
pub const LARGE_WINDOW: u64 = 64_000;

/// The scenarios, one per trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// The provider rejects the context: compact, then retry.
    Overflow,
    /// The same, with context promotion on: switch to the larger model, retry.
    Promotion,
    /// An answer cut at the output limit below the threshold: keep it, warn.
    TruncatedBelowThreshold,
    /// An answer cut at the output limit above the threshold: compact, retry.
    TruncatedAboveThreshold,
    /// Empty truncated answers: three retries, then the failure message.
    EmptyRecoveries,
    /// A finished turn over the threshold: compact, continue with the developer prompt.
    Threshold,
    /// A tool loop crosses the threshold: compact before the next request.
    MidTurn,
    /// The user walks away: compact, never continue.
    Idle,
    /// `/compact` while idle: compact, never start a turn.
    Manual,
}

impl Scenario {
    /// Every scenario, in the order the example runs them.
    pub const ALL: [Self; 9] = [
        Self::Overflow,
        Self::Promotion,
        Self::TruncatedBelowThreshold,
        Self::TruncatedAboveThreshold,
        Self::EmptyRecoveries,
        Self::Threshold,
        Self::MidTurn,
        Self::Idle,
        Self::Manual,
    ];

    /// A title for people.
    pub fn title(self) -> &'static str {
        match self {
            Self::Overflow => "overflow: the provider rejects the context",
            Self::Promotion => "overflow with context promotion: a larger model takes over",
            Self::TruncatedBelowThreshold => {
                "incomplete: cut at the output limit, below the threshold"
            }
            Self::TruncatedAboveThreshold => {
                "incomplete: cut at the output limit, above the threshold"
            }
            Self::EmptyRecoveries => "incomplete: empty answers, again and again",
            Self::Threshold => "threshold: a finished turn over the threshold",
            Self::MidTurn => "mid-turn: a tool loop crosses the threshold",
            Self::Idle => "idle: the user walks away",
            Self::Manual => "manual: /compact while idle",
        }
    }

    fn replies(self) -> Vec<Reply> {
        match self {
            Self::Overflow | Self::Promotion => vec![
                Reply::Overflow,
                Reply::text("Here is the summary of every file.", LOW),
            ],
            Self::TruncatedBelowThreshold => {
                vec![Reply::truncated(
                    "The design has three parts: first, the",
                    LOW,
                )]
            }
            Self::TruncatedAboveThreshold => vec![
                Reply::truncated("The design has three parts: first, the", HIGH),
                Reply::text("The design has three parts: lexer, parser, emitter.", LOW),
            ],
            Self::EmptyRecoveries => vec![Reply::truncated("", LOW); 4],
            Self::Threshold => vec![
                Reply::text("The emitter is twice as fast now.", 15_000),
                Reply::text("Nothing is left to do.", LOW),
            ],
            Self::MidTurn => vec![
                Reply::tool_call("call-1", 9_000),
                Reply::tool_call("call-2", HIGH),
                Reply::text("The lexer was the slow part; it is fixed.", LOW),
            ],
            Self::Idle => vec![Reply::text("Done; waiting for you.", LOW)],
            Self::Manual => Vec::new(),
        }
    }
}

/// What a scenario did.
#[derive(Debug)]
pub struct Run {
    /// Which.
    pub scenario: Scenario,
    /// Every runtime call.
    pub steps: Vec<Step>,
    /// What happened, for people.
    pub log: Vec<String>,
    /// Requests the agent sent.
    pub agent_requests: usize,
    /// The model each of them named.
    pub agent_models: Vec<String>,
    /// Requests the summarizer sent.
    pub summary_requests: usize,
    /// Scripted replies left over.
    pub unused_replies: usize,
    /// The session file at the end.
    pub file: String,
}

impl Run {
    /// The steps where something happened.
    pub fn acted(&self) -> Vec<&Step> {
        self.steps
            .iter()
            .filter(|s| s.decision.outcome != musepi_runtime::Outcome::Nothing)
            .collect()
    }

    /// How many compaction entries the file holds.
    pub fn compactions_in_file(&self) -> usize {
        self.file.matches(r#""type":"compaction""#).count()
    }
}

/// The settings every scenario uses.
pub fn settings() -> MaintenanceSettings {
    let mut settings = MaintenanceSettings::default();
    settings.strategy = MaintenanceStrategy::ContextFull;
    settings.context_window = WINDOW;
    settings.compaction.reserve_tokens = 2_000;
    settings.compaction.keep_recent_tokens = 200;
    settings.idle_enabled = true;
    settings.idle_threshold_tokens = 1_000;
    settings
}

const HISTORY: [(&str, &str); 4] = [
    (
        "Make the parser faster; the benchmarks are in benches/parse.rs and they take far too long on big inputs.",
        "I profiled the parser on the big benchmark input. Most of the time goes into the lexer, which copies every token into a fresh string, and into the error recovery path, which re-scans the input from the start of the line after each error. I will fix the lexer first.",
    ),
    (
        "Start with the lexer, and keep the public API unchanged, other crates depend on it.",
        "The lexer now borrows tokens from the input instead of copying them, and the public API is unchanged: Token keeps its fields, only their lifetimes changed inside the crate. The benchmark went from 412 ms to 230 ms on the big input; the small inputs did not change.",
    ),
    (
        "Good. Now the error recovery path, and add a benchmark for inputs full of errors.",
        "Error recovery now resumes at the next statement boundary instead of re-scanning the line, and benches/parse.rs has a new case with an error on every tenth line. That case went from 2.1 s to 180 ms. All parser tests pass, including the recovery snapshots.",
    ),
    (
        "Write down what changed in CHANGELOG.md under Unreleased.",
        "CHANGELOG.md has two new lines under Unreleased: the lexer borrows tokens (about 45 % faster on large inputs) and error recovery resumes at statement boundaries (an order of magnitude faster on inputs with many errors).",
    ),
];

/// Runs one scenario in `dir`.
pub async fn run(scenario: Scenario, dir: &std::path::Path) -> Result<Run, AgentError> {
    let model = ScriptedModel::start(scenario.replies()).await?;
    let path = dir.join(format!("{scenario:?}.jsonl"));
    let journal = Journal::create(
        &path,
        Header::new(format!("{scenario:?}"), "2025-05-01T10:00:00.000Z", "/repo"),
    )?;
    let mut settings = settings();
    settings.context_promotion = scenario == Scenario::Promotion;
    let mut agent = Agent::new(journal, model.url(), settings)?;
    agent.offer_models(vec![PromotionTarget::new(
        PROVIDER,
        LARGE_MODEL,
        LARGE_WINDOW,
    )]);
    agent.seed(&HISTORY, 2_500.0)?;
    match scenario {
        Scenario::Overflow | Scenario::Promotion => {
            agent
                .user_turn("Summarize every file of the repository in one answer.")
                .await?;
        }
        Scenario::TruncatedBelowThreshold
        | Scenario::TruncatedAboveThreshold
        | Scenario::EmptyRecoveries => {
            agent.user_turn("Explain the new design in detail.").await?;
        }
        Scenario::Threshold => {
            agent.user_turn("Now make the emitter faster too.").await?;
        }
        Scenario::MidTurn => {
            agent
                .user_turn("Read the parser again and find what is still slow.")
                .await?;
        }
        Scenario::Idle => {
            agent.user_turn("Run the benchmarks once more.").await?;
            agent.idle(60).await;
            agent.idle(600).await;
        }
        Scenario::Manual => {
            agent.compact(Some("keep the benchmark numbers")).await;
        }
    }
    let file = std::fs::read_to_string(agent.runtime().journal().path())?;
    Ok(Run {
        scenario,
        steps: agent.steps().to_vec(),
        log: agent.log().to_vec(),
        agent_requests: model.agent_requests(),
        agent_models: model.agent_models(),
        summary_requests: model.summary_requests(),
        unused_replies: model.unused_replies(),
        file,
    })
}
