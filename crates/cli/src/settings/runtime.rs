//! The one mapping from the settings files to the maintenance runtime's
//! settings, which every command and `musepi serve` read: the pipelines'
//! budgets, pruning and the archive's budgets all come from
//! [`MaintenanceSettings`] ([`MaintenanceSettings::compaction`],
//! [`MaintenanceSettings::prune`], [`MaintenanceSettings::snap_settings`]).

use musepi_runtime::MaintenanceSettings;
use musepi_snapcompact::SerializeOptions;

use super::{Settings, SnapcompactSettings};

impl Settings {
    /// What the maintenance runtime reads of these settings, for a model
    /// with `context_window`.
    pub fn maintenance(&self, context_window: u64) -> MaintenanceSettings {
        let c = &self.compaction;
        let mut m = MaintenanceSettings::default();
        m.compaction.enabled = c.enabled;
        m.strategy = c.strategy;
        m.compaction.reserve_tokens = u64::from(c.reserve_tokens);
        m.compaction.keep_recent_tokens = u64::from(c.keep_recent_tokens);
        m.auto_continue = c.auto_continue;
        m.mid_turn_enabled = c.mid_turn_enabled;
        m.compaction.threshold_percent = c.threshold_percent;
        m.compaction.threshold_tokens = c.threshold_tokens as f64;
        m.idle_enabled = c.idle_enabled;
        m.idle_threshold_tokens = c.idle_threshold_tokens;
        m.idle_timeout_seconds = c.idle_timeout_seconds;
        m.drop_useless = c.drop_useless;
        m.supersede_reads = c.supersede_reads;
        m.remote_enabled = c.remote_enabled;
        m.branch_summary_reserve_tokens = u64::from(self.branch_summary.reserve_tokens);
        m.context_promotion = self.context_promotion.enabled;
        m.branch_summary_enabled = self.branch_summary.enabled;
        m.context_window = context_window;
        m.snapcompact.serialize = self.snapcompact.serialize_options();
        m.snapcompact.reserve_tokens = m.compaction.reserve_tokens;
        m.snapcompact_shape =
            (self.snapcompact.shape != "auto").then(|| self.snapcompact.shape.clone());
        m
    }
}

impl SnapcompactSettings {
    /// The archive's serialization budgets.
    pub fn serialize_options(&self) -> SerializeOptions {
        let mut options = SerializeOptions::default();
        options.tool_result_max_chars = self.tool_result_max_chars.chars();
        options.tool_arg_max_chars = self.tool_arg_max_chars.chars();
        options.tool_call_max_chars = self.tool_call_max_chars.chars();
        options.truncate_head_ratio = self.truncate_head_ratio;
        options.dim_tool_results = self.dim_tool_results;
        options
    }
}
