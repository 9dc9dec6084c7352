//! Which strategy a command that compacts runs (`musepi compact`, and
//! `:compact` in `musepi view`): `--strategy`, else the settings.

use musepi_hooks::Strategy;

use crate::commands::runtime::{snap_strategy, snap_target};
use crate::ctx::Failure;
use musepi_runtime::{MaintenanceSettings, MaintenanceStrategy};

/// Which strategy runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chosen {
    /// The deterministic archive (no model).
    Snapcompact,
    /// An LLM summary.
    Llm,
    /// The provider-native remote compaction, then an LLM summary.
    Remote,
}

impl Chosen {
    /// The name users see and pass to `--strategy`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Snapcompact => "snapcompact",
            Self::Llm => "llm",
            Self::Remote => "remote",
        }
    }

    /// The strategy `musepi compact` runs: `--strategy`, else the
    /// settings, where instructions ask for an LLM summary.
    pub(crate) fn pick(
        flag: Option<&str>,
        settings: &MaintenanceSettings,
        instructions: bool,
    ) -> Result<Self, Failure> {
        Ok(match flag {
            Some("snapcompact") => Self::Snapcompact,
            Some("llm" | "context-full") => Self::Llm,
            Some("remote") => Self::Remote,
            Some(other) => {
                return Err(Failure::usage(anyhow::anyhow!(
                    "--strategy {other}: expected snapcompact, llm or remote"
                )));
            }
            None => match settings.strategy {
                MaintenanceStrategy::ContextFull => Self::Llm,
                _ if instructions => Self::Llm,
                _ => Self::Snapcompact,
            },
        })
    }

    /// The pipeline's strategy; `model` names who reads a snapcompact
    /// archive, whose size follows the reserve of `settings` (the settings
    /// files and `--reserve`).
    pub(crate) fn strategy(
        self,
        settings: &MaintenanceSettings,
        model: Option<&str>,
        llm: Option<&musepi_providers::Provider>,
    ) -> Strategy {
        match self {
            Self::Snapcompact => snap_strategy(settings, snap_target(settings, model, llm)),
            Self::Llm => Strategy::Llm,
            Self::Remote => Strategy::Remote,
        }
    }
}
