//! The settings the maintenance runtime reads (docs/design.md, "Settings").
//!
//! A plain struct with the design-era defaults, taken from the crates that
//! own each value (compaction's settings held as the pipeline reads them,
//! the archive's budgets, the branch summary's reserve), so every default
//! is written once; the `musepi` binary maps its settings files into it, an embedding
//! agent fills it from its own.

use musepi_compaction::{CompactionSettings, PruneConfig, TriggerContext};
use musepi_context_builder::ThresholdSettings;
use musepi_hooks::{CompactOptions, Hooks, SnapSettings};
use serde::{Deserialize, Serialize};

/// The context window assumed when nothing names the model's.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;

/// `compaction.strategy` (docs/design.md, "When to compact"): how automatic
/// maintenance compacts. Its settings value is the kebab-case name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MaintenanceStrategy {
    /// The local, model-free archive (docs/design.md, "Settings": the
    /// default). `shake` (mechanical elision of large tool results, which
    /// the design era does not describe) reads as this strategy.
    #[default]
    #[serde(alias = "shake")]
    Snapcompact,
    /// An LLM summary written as a compaction entry: `llm`, also read as
    /// `context-full`, its earlier name.
    #[serde(rename = "llm", alias = "context-full")]
    ContextFull,
    /// An LLM summary, by the provider's own compaction endpoint when the
    /// provider has one (the `/responses/compact` endpoint of `OpenAI`, or
    /// `compaction.remoteEndpoint`), whatever `compaction.remoteEnabled`
    /// says; else as `llm`.
    Remote,
    /// A handoff document that starts a new session (docs/design.md, "Handoff"); overflow
    /// and mid-turn maintenance use a context-full summary instead.
    Handoff,
    /// No automatic compaction (manual `/compact` still works).
    Off,
}

impl MaintenanceStrategy {
    /// Every strategy, in the order the docs list them.
    pub const ALL: [Self; 5] = [
        Self::Snapcompact,
        Self::ContextFull,
        Self::Remote,
        Self::Handoff,
        Self::Off,
    ];

    /// The setting's value: `snapcompact`, `llm`, `remote`, `handoff` or
    /// `off` (the names of `musepi compact --strategy` where both have one).
    pub fn name(self) -> &'static str {
        match self {
            Self::Snapcompact => "snapcompact",
            Self::ContextFull => "llm",
            Self::Remote => "remote",
            Self::Handoff => "handoff",
            Self::Off => "off",
        }
    }

    /// Parses a setting value (`context-full` is `llm`).
    pub fn parse(value: &str) -> Option<Self> {
        if value == "context-full" {
            return Some(Self::ContextFull);
        }
        Self::ALL.into_iter().find(|s| s.name() == value)
    }
}

/// What the runtime reads of `compaction.*` and `branchSummary.*`, plus the
/// current model's context window.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MaintenanceSettings {
    /// What the compaction pipeline reads, as it reads it:
    /// `compaction.enabled` (automatic maintenance; manual always works),
    /// `compaction.reserveTokens`, `compaction.keepRecentTokens`,
    /// `compaction.thresholdPercent` (≤ 0: unset),
    /// and `compaction.thresholdTokens` (≤ 0: unset; wins over the percent).
    pub compaction: CompactionSettings,
    /// `compaction.strategy`.
    pub strategy: MaintenanceStrategy,
    /// `compaction.autoContinue`: threshold maintenance after a turn asks the
    /// agent to continue with the auto-continue developer prompt.
    pub auto_continue: bool,
    /// `compaction.midTurnEnabled`.
    pub mid_turn_enabled: bool,
    /// `compaction.idleEnabled`.
    pub idle_enabled: bool,
    /// `compaction.idleThresholdTokens`.
    pub idle_threshold_tokens: u64,
    /// `compaction.idleTimeoutSeconds`.
    pub idle_timeout_seconds: u64,
    /// `compaction.dropUseless`: elide useless tool results before compacting.
    pub drop_useless: bool,
    /// `compaction.supersedeReads`: blank superseded file reads before compacting.
    pub supersede_reads: bool,
    /// `compaction.remoteEnabled`: context-full compaction tries the
    /// provider-native remote compaction first, when the runtime has one.
    pub remote_enabled: bool,
    /// `contextPromotion.enabled`: overflow, incomplete and threshold
    /// recovery first switch to a larger-context model the agent offers.
    pub context_promotion: bool,
    /// `branchSummary.enabled`: a navigation summarizes the abandoned
    /// branch unless the caller says otherwise (the default of
    /// `summarize` in `musepi serve`'s `navigate`).
    pub branch_summary_enabled: bool,
    /// `branchSummary.reserveTokens`.
    pub branch_summary_reserve_tokens: u64,
    /// The current model's context window.
    pub context_window: u64,
    /// `snapcompact.*` serialization budgets (its reserve follows
    /// `compaction.reserve_tokens`).
    pub snapcompact: SnapSettings,
    /// `snapcompact.shape` when not `auto`: the archive's forced shape.
    pub snapcompact_shape: Option<String>,
}

impl Default for MaintenanceSettings {
    fn default() -> Self {
        let prune = PruneConfig::default();
        let trigger = TriggerContext::default();
        Self {
            compaction: CompactionSettings::default(),
            strategy: MaintenanceStrategy::default(),
            auto_continue: trigger.auto_continue,
            mid_turn_enabled: trigger.mid_turn_enabled,
            idle_enabled: trigger.idle_enabled,
            idle_threshold_tokens: trigger.idle_threshold_tokens,
            idle_timeout_seconds: trigger.idle_timeout_seconds,
            drop_useless: prune.prune_useless,
            supersede_reads: prune.supersede_reads,
            remote_enabled: true,
            context_promotion: false,
            branch_summary_enabled: false,
            branch_summary_reserve_tokens: musepi_branch_summary::DEFAULT_RESERVE_TOKENS,
            context_window: DEFAULT_CONTEXT_WINDOW,
            snapcompact: SnapSettings::default(),
            snapcompact_shape: None,
        }
    }
}

impl MaintenanceSettings {
    /// The threshold view (`strategy: off` never compacts automatically).
    pub fn thresholds(&self) -> ThresholdSettings {
        self.compaction
            .thresholds(self.strategy == MaintenanceStrategy::Off)
    }

    /// The snapcompact budgets, with the reserve and the context window of
    /// these settings.
    pub fn snap_settings(&self) -> SnapSettings {
        let mut snap = self.snapcompact.clone();
        snap.reserve_tokens = self.compaction.reserve_tokens;
        snap.context_window = (self.context_window > 0).then_some(self.context_window);
        snap
    }

    /// Pruning before a compaction.
    pub fn prune(&self) -> PruneConfig {
        let mut prune = PruneConfig::default();
        prune.prune_useless = self.drop_useless;
        prune.supersede_reads = self.supersede_reads;
        prune
    }

    /// The options of a compaction run with these settings, built here for
    /// the runtime, `musepi compact` and the view alike: the budgets and
    /// the pruning that runs first. The caller adds the strategy, its
    /// summarizer and remote compactor, and any instructions.
    pub fn compact_options<'a>(&self, hooks: &'a Hooks, now: i64) -> CompactOptions<'a> {
        let mut options = CompactOptions::new(hooks, now);
        options.settings = self.compaction.clone();
        options.prune = Some(self.prune());
        options
    }

    /// The trigger inputs that come from settings; the runtime adds its state.
    pub fn trigger_context(&self) -> TriggerContext {
        let mut ctx = TriggerContext::default();
        ctx.context_window = self.context_window;
        ctx.thresholds = self.thresholds();
        ctx.mid_turn_enabled = self.mid_turn_enabled;
        ctx.auto_continue = self.auto_continue;
        ctx.idle_enabled = self.idle_enabled;
        ctx.idle_threshold_tokens = self.idle_threshold_tokens;
        ctx.idle_timeout_seconds = self.idle_timeout_seconds;
        ctx
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use musepi_context_builder::resolve_threshold_tokens;

    #[test]
    fn defaults_are_the_design_era_ones() {
        let s = MaintenanceSettings::default();
        assert_eq!(s.strategy, MaintenanceStrategy::Snapcompact);
        assert!(s.compaction.enabled && s.auto_continue && s.mid_turn_enabled && !s.idle_enabled);
        assert_eq!(
            (s.idle_threshold_tokens, s.idle_timeout_seconds),
            (200_000, 300)
        );
        assert_eq!(resolve_threshold_tokens(200_000, &s.thresholds()), 170_000);
    }

    #[test]
    fn strategy_off_never_compacts_automatically() {
        let s = MaintenanceSettings {
            strategy: MaintenanceStrategy::Off,
            ..MaintenanceSettings::default()
        };
        assert!(s.thresholds().strategy_off);
        assert!(!musepi_context_builder::should_compact(
            1_000_000_000,
            200_000,
            &s.thresholds()
        ));
    }

    #[test]
    fn names_round_trip() {
        for s in MaintenanceStrategy::ALL {
            assert_eq!(MaintenanceStrategy::parse(s.name()), Some(s));
        }
        assert_eq!(MaintenanceStrategy::parse("shake"), None);
    }

    #[test]
    fn the_settings_name_strategies_as_the_command_line_does() {
        let read = |name: &str| {
            serde_json::from_value::<MaintenanceStrategy>(serde_json::json!(name)).ok()
        };
        assert_eq!(read("llm"), Some(MaintenanceStrategy::ContextFull));
        assert_eq!(read("remote"), Some(MaintenanceStrategy::Remote));
        assert_eq!(read("snapcompact"), Some(MaintenanceStrategy::Snapcompact));
        assert_eq!(
            read("context-full"),
            Some(MaintenanceStrategy::ContextFull),
            "the earlier name"
        );
        assert_eq!(read("summarize"), None);
        assert_eq!(
            serde_json::to_value(MaintenanceStrategy::ContextFull).unwrap(),
            serde_json::json!("llm")
        );
        assert_eq!(
            MaintenanceStrategy::parse("context-full"),
            Some(MaintenanceStrategy::ContextFull)
        );
    }

    #[test]
    fn the_archive_is_sized_for_the_window_and_the_reserve_of_these_settings() {
        let mut s = MaintenanceSettings {
            context_window: 32_768,
            ..MaintenanceSettings::default()
        };
        s.compaction.reserve_tokens = 8_000;
        let snap = s.snap_settings();
        assert_eq!(
            (snap.context_window, snap.reserve_tokens),
            (Some(32_768), 8_000)
        );
        s.context_window = 0;
        assert_eq!(s.snap_settings().context_window, None);
    }
}
