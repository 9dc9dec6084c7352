//! Tree navigation through the maintenance runtime (`navigateTree`;
//! docs/design.md, "Branch summaries"): the navigation pipeline with an optional branch summary,
//! reported as `tree_start` / `tree_end`, abortable like a compaction.

use musepi_context_builder::LlmMessage;
use musepi_hooks::{
    BranchStrategy, Hooks, NavigateOptions, NavigateOutcome, Summarizer, TreeRequest,
};
use musepi_session_model::{EntryBody, EntryId, RawJson};
use serde_json::json;

use crate::decision::MaintenanceEvent;
use crate::settings::MaintenanceSettings;

/// The `customType` of the entry that records a navigation without a
/// summary or label: a file's leaf is its last line, so moving the leaf
/// durably takes one entry. It never reaches the model.
pub const NAVIGATE_MARKER: &str = "musepi.navigate";

/// What a navigation did.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct TreeOutcome {
    /// A hook cancelled it or the abort signal fired: the leaf did not move.
    pub cancelled: bool,
    /// What the navigation pipeline did. Its `new_leaf` is the leaf after
    /// (the marker entry, when one was written) and its `warnings` hold
    /// hook failures and other notices; when cancelled, both leaves are the
    /// leaf before and nothing else is set.
    pub navigation: NavigateOutcome,
    /// The marker entry that made the new leaf durable.
    pub marker_entry_id: Option<EntryId>,
    /// The rebuilt provider messages: replace the live messages with them.
    pub context: Vec<LlmMessage>,
}

/// The entry that makes a navigation from `from` to `to` durable (a
/// [`NAVIGATE_MARKER`] custom entry): a navigation without a summary or a
/// label moves the leaf in memory only, and a file records its leaf as its
/// last line.
pub fn marker(from: Option<&EntryId>, to: Option<&str>) -> EntryBody {
    EntryBody::Custom {
        custom_type: NAVIGATE_MARKER.to_owned(),
        data: Some(RawJson::from_value(&json!({
            "from": from.map(ToString::to_string),
            "to": to,
        }))),
    }
}

/// The `tree_end` of a navigation that left the leaf at `leaf`: cancelled
/// (`aborted`), or failed with `error`.
pub(crate) fn unmoved(
    leaf: Option<&EntryId>,
    aborted: bool,
    error: Option<String>,
) -> MaintenanceEvent {
    MaintenanceEvent::TreeEnd {
        old_leaf_id: leaf.map(ToString::to_string),
        new_leaf_id: leaf.map(ToString::to_string),
        summary_entry_id: None,
        aborted,
        error_message: error,
    }
}

/// The navigation pipeline's options for `request`.
pub(crate) fn options<'a>(
    request: &TreeRequest,
    strategy: BranchStrategy,
    summarizer: Option<&'a dyn Summarizer>,
    settings: &MaintenanceSettings,
    hooks: &'a Hooks,
    now: i64,
) -> NavigateOptions<'a> {
    let mut options = NavigateOptions::new(request.clone(), hooks, now);
    options.strategy = strategy;
    options.summarizer = summarizer;
    options.context_window = Some(settings.context_window);
    options.reserve_tokens = settings.branch_summary_reserve_tokens;
    options
}
