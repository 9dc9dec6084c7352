//! How a compaction runs, for `plan`, `compact` and the view: its budgets
//! and its strategy, whose flags parse into the settings' own types.

use clap::Args;
use musepi_runtime::MaintenanceStrategy;
use musepi_runtime::branch::BranchStrategy;

use super::window_size;

/// Budget flags shared by `plan` and `compact`.
#[derive(Debug, Clone, Default, Args)]
pub struct BudgetArgs {
    /// Tokens of recent history to keep verbatim (default: settings, 20000).
    #[arg(long, value_name = "N")]
    pub keep_recent: Option<u64>,
    /// Reserve tokens: the summarizer output limits follow from it (default: settings, 16384).
    #[arg(long, value_name = "N")]
    pub reserve: Option<u64>,
    /// The model's context window, for the threshold (default: settings or 200000).
    #[arg(long, value_name = "N", value_parser = window_size)]
    pub context_window: Option<u64>,
    /// What every request to the agent's model carries besides its messages (system prompt, tool
    /// definitions), in tokens at 4 characters a token: the kept window's adaptation to the
    /// provider's usage leaves it out (default: measured from the session's usage).
    #[arg(long, value_name = "N")]
    pub overhead_tokens: Option<u64>,
}

/// The values of a compaction's `--strategy`: the names `compaction.strategy`
/// takes for them (`context-full`, the earlier name of `llm`, accepted and
/// not listed), parsed into the settings' own type.
pub(super) fn compaction_strategy()
-> impl clap::builder::TypedValueParser<Value = MaintenanceStrategy> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
    PossibleValuesParser::new([
        PossibleValue::new("snapcompact"),
        PossibleValue::new("llm"),
        PossibleValue::new("remote"),
        PossibleValue::new("context-full").hide(true),
    ])
    // Every value the parser lets through is a name the settings know.
    .map(|name| MaintenanceStrategy::parse(&name).unwrap_or_default())
}

/// The values of a summary's `--strategy`: `llm` or `snapcompact` (the
/// digest, no model).
pub(super) fn summary_strategy() -> impl clap::builder::TypedValueParser<Value = BranchStrategy> {
    use clap::builder::{PossibleValuesParser, TypedValueParser as _};
    PossibleValuesParser::new(["llm", "snapcompact"]).map(|name| {
        if name == "llm" {
            BranchStrategy::Llm
        } else {
            BranchStrategy::Snapcompact
        }
    })
}

/// Which strategy a compaction runs, and its requests: the same flags for
/// `plan` and `compact`.
#[derive(Debug, Args, Default)]
pub struct StrategyArgs {
    /// How: `snapcompact` (the default: a deterministic archive, no model), `llm`, or `remote`
    /// (the provider's native compaction, falling back to an LLM summary).
    #[arg(long, value_name = "snapcompact|llm|remote", value_parser = compaction_strategy())]
    pub strategy: Option<MaintenanceStrategy>,
    /// The strategy when neither `--strategy` nor the settings name one (instead of
    /// `snapcompact`): an agent's own default, which a user's `compaction.strategy` still wins
    /// over.
    #[arg(long, value_name = "snapcompact|llm|remote", value_parser = compaction_strategy())]
    pub default_strategy: Option<MaintenanceStrategy>,
    /// After an LLM summary, do not ask the model for the one-line short summary: no more
    /// requests than pi sends (the history, and the turn prefix of a split turn).
    #[arg(long)]
    pub no_short_summary: bool,
}
