//! Which strategy a command that compacts runs (`musepi compact`, and
//! `:compact` in `musepi view`): `--strategy`, else the settings.

use musepi_runtime::compaction::Strategy;

use crate::cli::{BudgetArgs, StrategyArgs};
use crate::commands::runtime::{maintenance, snap_strategy, snap_target};
use crate::ctx::Ctx;
use crate::settings::Settings;
use musepi_runtime::{MaintenanceSettings, MaintenanceStrategy};

/// The settings a compaction by hand runs with (`settings`, the files', under
/// the budget flags, less the short summary with `--no-short-summary`) and
/// the strategy `how` picks over them, as `musepi compact` and `musepi
/// plan` both choose.
pub(crate) fn chosen(
    ctx: &Ctx,
    settings: &Settings,
    budget: &BudgetArgs,
    how: &StrategyArgs,
    instructions: bool,
    model: Option<&str>,
) -> (MaintenanceSettings, Strategy) {
    let mut m = maintenance(settings, budget);
    m.compaction.short_summary &= !how.no_short_summary;
    let strategy = pick_with_default(
        how.strategy,
        how.default_strategy
            .map(|d| (d, ctx.settings.strategy_named)),
        &m,
        instructions,
        model,
    );
    (m, strategy)
}

/// The strategy `musepi compact` runs: `--strategy`, else the settings,
/// where instructions ask for an LLM summary. `model` names who reads a
/// snapcompact archive, whose size follows the reserve of `settings` (the
/// settings files and `--reserve`); the archive needs no provider.
pub(crate) fn pick(
    flag: Option<MaintenanceStrategy>,
    settings: &MaintenanceSettings,
    instructions: bool,
    model: Option<&str>,
) -> Strategy {
    pick_with_default(flag, None, settings, instructions, model)
}

/// [`pick`], with `default` (`--default-strategy`) used when neither
/// `--strategy` nor a settings file names one (`settings.strategy` then
/// holds the built-in default): what an agent embedding musepi prefers,
/// which the user's own `compaction.strategy` still wins over.
pub(crate) fn pick_with_default(
    flag: Option<MaintenanceStrategy>,
    default: Option<(MaintenanceStrategy, bool)>,
    settings: &MaintenanceSettings,
    instructions: bool,
    model: Option<&str>,
) -> Strategy {
    let snapcompact = || snap_strategy(settings, snap_target(settings, model, None));
    // The flags take snapcompact, llm and remote only (clap checks them).
    let named = |strategy: MaintenanceStrategy| match strategy {
        MaintenanceStrategy::ContextFull => Strategy::Llm,
        MaintenanceStrategy::Remote => Strategy::Remote,
        _ => snapcompact(),
    };
    if let Some(strategy) = flag {
        return named(strategy);
    }
    if let Some((strategy, false)) = default {
        // Checked before instructions: they ask for a summary the model
        // writes, which the default may already be.
        return if instructions {
            Strategy::Llm
        } else {
            named(strategy)
        };
    }
    match settings.strategy {
        MaintenanceStrategy::ContextFull => Strategy::Llm,
        MaintenanceStrategy::Remote => Strategy::Remote,
        _ if instructions => Strategy::Llm,
        _ => snapcompact(),
    }
}

/// Whether `strategy` sends requests to a model (and so needs a provider).
pub(crate) fn uses_model(strategy: &Strategy) -> bool {
    !matches!(strategy, Strategy::Snapcompact(_))
}
