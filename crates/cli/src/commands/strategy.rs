//! Which strategy a command that compacts runs (`musepi compact`, and
//! `:compact` in `musepi view`): `--strategy`, else the settings.

use musepi_hooks::Strategy;

use crate::commands::runtime::{snap_strategy, snap_target};
use crate::ctx::Failure;
use musepi_runtime::{MaintenanceSettings, MaintenanceStrategy};

/// The strategy `musepi compact` runs: `--strategy`, else the settings,
/// where instructions ask for an LLM summary. `model` names who reads a
/// snapcompact archive, whose size follows the reserve of `settings` (the
/// settings files and `--reserve`); the archive needs no provider.
pub(crate) fn pick(
    flag: Option<&str>,
    settings: &MaintenanceSettings,
    instructions: bool,
    model: Option<&str>,
) -> Result<Strategy, Failure> {
    let snapcompact = || snap_strategy(settings, snap_target(settings, model, None));
    Ok(match flag {
        Some("snapcompact") => snapcompact(),
        Some("llm" | "context-full") => Strategy::Llm,
        Some("remote") => Strategy::Remote,
        Some(other) => {
            return Err(Failure::usage(anyhow::anyhow!(
                "--strategy {other}: expected snapcompact, llm or remote"
            )));
        }
        None => match settings.strategy {
            MaintenanceStrategy::ContextFull => Strategy::Llm,
            _ if instructions => Strategy::Llm,
            _ => snapcompact(),
        },
    })
}

/// Whether `strategy` sends requests to a model (and so needs a provider).
pub(crate) fn uses_model(strategy: &Strategy) -> bool {
    !matches!(strategy, Strategy::Snapcompact(_))
}
