//! The one mapping from the settings files to the maintenance runtime's
//! settings, which every command and `musepi serve` read: the pipelines'
//! budgets, pruning and the archive's budgets all come from
//! [`MaintenanceSettings`] ([`MaintenanceSettings::compaction`],
//! [`MaintenanceSettings::prune`], [`MaintenanceSettings::snap_settings`]).

use musepi_hooks::SnapSettings;
use musepi_runtime::MaintenanceSettings;
use musepi_snapcompact::SerializeOptions;

use super::{Settings, SnapcompactSettings};

impl Settings {
    /// What the maintenance runtime reads of these settings, for a model
    /// with `context_window`.
    pub fn maintenance(&self, context_window: u64) -> MaintenanceSettings {
        let c = &self.compaction;
        let reserve_tokens = u64::from(c.reserve_tokens);
        MaintenanceSettings {
            enabled: c.enabled,
            strategy: c.strategy,
            reserve_tokens,
            keep_recent_tokens: u64::from(c.keep_recent_tokens),
            auto_continue: c.auto_continue,
            mid_turn_enabled: c.mid_turn_enabled,
            threshold_percent: c.threshold_percent,
            threshold_tokens: c.threshold_tokens as f64,
            idle_enabled: c.idle_enabled,
            idle_threshold_tokens: c.idle_threshold_tokens,
            idle_timeout_seconds: c.idle_timeout_seconds,
            drop_useless: c.drop_useless,
            supersede_reads: c.supersede_reads,
            remote_enabled: c.remote_enabled,
            branch_summary_reserve_tokens: u64::from(self.branch_summary.reserve_tokens),
            context_promotion: self.context_promotion.enabled,
            branch_summary_enabled: self.branch_summary.enabled,
            context_window,
            snapcompact: SnapSettings {
                serialize: self.snapcompact.serialize_options(),
                reserve_tokens,
            },
            snapcompact_shape: (self.snapcompact.shape != "auto")
                .then(|| self.snapcompact.shape.clone()),
            ..MaintenanceSettings::default()
        }
    }
}

impl SnapcompactSettings {
    /// The archive's serialization budgets.
    pub fn serialize_options(&self) -> SerializeOptions {
        let cap = |c: Option<u32>| c.map(|v| v as usize);
        SerializeOptions {
            tool_result_max_chars: cap(self.tool_result_max_chars),
            tool_arg_max_chars: cap(self.tool_arg_max_chars),
            tool_call_max_chars: cap(self.tool_call_max_chars),
            truncate_head_ratio: self.truncate_head_ratio,
            dim_tool_results: self.dim_tool_results,
            ..SerializeOptions::default()
        }
    }
}
