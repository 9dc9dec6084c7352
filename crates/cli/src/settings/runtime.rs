//! The one mapping from the settings files to the maintenance runtime's
//! settings, which every command and `musepi serve` read: the pipelines'
//! budgets, pruning and the archive's budgets all come from
//! [`MaintenanceSettings`] ([`MaintenanceSettings::compaction`],
//! [`MaintenanceSettings::prune`], [`MaintenanceSettings::snap_settings`]).

use musepi_runtime::MaintenanceSettings;
use musepi_runtime::archive::SerializeOptions;

use super::{Settings, SnapcompactSettings};

impl Settings {
    /// What the maintenance runtime reads of these settings, for a model
    /// with `context_window`.
    pub fn maintenance(&self, context_window: u64) -> MaintenanceSettings {
        let c = &self.compaction;
        let mut m = MaintenanceSettings::default();
        set(&mut m.compaction.enabled, c.enabled);
        set(&mut m.strategy, c.strategy);
        set(&mut m.compaction.reserve_tokens, c.reserve_tokens);
        set(&mut m.compaction.keep_recent_tokens, c.keep_recent_tokens);
        set(&mut m.auto_continue, c.auto_continue);
        set(&mut m.mid_turn_enabled, c.mid_turn_enabled);
        set(&mut m.compaction.threshold_percent, c.threshold_percent);
        set(&mut m.compaction.threshold_tokens, c.threshold_tokens);
        set(&mut m.idle_enabled, c.idle_enabled);
        set(&mut m.idle_threshold_tokens, c.idle_threshold_tokens);
        set(&mut m.idle_timeout_seconds, c.idle_timeout_seconds);
        set(&mut m.drop_useless, c.drop_useless);
        set(&mut m.supersede_reads, c.supersede_reads);
        set(&mut m.remote_enabled, c.remote_enabled);
        let b = &self.branch_summary;
        set(&mut m.branch_summary_reserve_tokens, b.reserve_tokens);
        set(&mut m.branch_summary_enabled, b.enabled);
        set(&mut m.context_promotion, self.context_promotion.enabled);
        m.context_window = context_window;
        m.snapcompact.serialize = self.snapcompact.serialize_options();
        m.snapcompact.reserve_tokens = m.compaction.reserve_tokens;
        m.snapcompact_shape = self
            .snapcompact
            .shape
            .clone()
            .filter(|shape| shape != "auto");
        m
    }
}

/// `slot` takes `value` when a file set it, and keeps its default else.
fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *slot = value;
    }
}

impl SnapcompactSettings {
    /// The archive's serialization budgets.
    pub fn serialize_options(&self) -> SerializeOptions {
        let mut options = SerializeOptions::default();
        if let Some(cap) = self.tool_result_max_chars {
            options.tool_result_max_chars = cap.chars();
        }
        if let Some(cap) = self.tool_arg_max_chars {
            options.tool_arg_max_chars = cap.chars();
        }
        if let Some(cap) = self.tool_call_max_chars {
            options.tool_call_max_chars = cap.chars();
        }
        if let Some(ratio) = self.truncate_head_ratio {
            options.truncate_head_ratio = ratio;
        }
        if let Some(dim) = self.dim_tool_results {
            options.dim_tool_results = dim;
        }
        options
    }
}
