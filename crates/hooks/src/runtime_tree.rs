//! Tree navigation through the maintenance runtime (`navigateTree`;
//! docs/design.md, "Branch summaries"): the navigation pipeline with an optional branch summary,
//! reported as `tree_start` / `tree_end`, abortable like a compaction.

use musepi_branch_summary::ToolResults;
use musepi_compaction::prompts::SUMMARIZATION_SYSTEM;
use musepi_context_builder::LlmMessage;
use musepi_session_model::{EntryBody, EntryId, RawJson, Stamp};
use serde_json::json;

use crate::navigate::{BranchStrategy, NavigateError, NavigateOptions, navigate};
use crate::runtime::{Maintenance, MaintenanceError};
use crate::runtime_decision::MaintenanceEvent;
use crate::runtime_settings::MaintenanceStrategy;

/// The `customType` of the entry that records a navigation without a
/// summary or label: a file's leaf is its last line, so moving the leaf
/// durably takes one entry. It never reaches the model.
pub const NAVIGATE_MARKER: &str = "musepi.navigate";

/// A `/tree` navigation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeRequest {
    /// The entry to go to; `None` goes before the first entry (root).
    pub target_id: Option<String>,
    /// Summarize the branch being left.
    pub summarize: bool,
    /// Instructions for the summary.
    pub custom_instructions: Option<String>,
    /// Whether they replace the default prompt (otherwise they add a focus).
    pub replace_instructions: bool,
    /// A label for the new position.
    pub label: Option<String>,
}

/// What a navigation did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TreeOutcome {
    /// A hook cancelled it or the abort signal fired: the leaf did not move.
    pub cancelled: bool,
    /// The target was already the leaf.
    pub no_op: bool,
    /// The leaf before.
    pub old_leaf_id: Option<EntryId>,
    /// The leaf after.
    pub new_leaf_id: Option<EntryId>,
    /// The branch summary entry written.
    pub summary_entry_id: Option<EntryId>,
    /// Its text.
    pub summary: Option<String>,
    /// Text to put back in the editor (a user or custom message target).
    pub editor_text: Option<String>,
    /// The abandoned entries, oldest first.
    pub abandoned: Vec<EntryId>,
    /// The marker entry that made the new leaf durable.
    pub marker_entry_id: Option<EntryId>,
    /// The rebuilt provider messages: replace the live messages with them.
    pub context: Vec<LlmMessage>,
    /// Hook failures and other notices.
    pub notes: Vec<String>,
}

impl Maintenance {
    /// How a branch summary is written: by the model for the LLM
    /// strategies, as the model-free digest for snapcompact (unless
    /// instructions ask for a directed summary and a model is there).
    fn branch_strategy(&self, instructions: bool) -> BranchStrategy {
        match self.settings.strategy {
            MaintenanceStrategy::ContextFull | MaintenanceStrategy::Handoff => BranchStrategy::Llm,
            MaintenanceStrategy::Snapcompact | MaintenanceStrategy::Off
                if instructions && self.summarizer.is_some() =>
            {
                BranchStrategy::Llm
            }
            MaintenanceStrategy::Snapcompact | MaintenanceStrategy::Off => {
                BranchStrategy::Snapcompact
            }
        }
    }

    /// Navigates to `request.target_id`, optionally leaving a summary of
    /// the abandoned branch under the target (docs/design.md, "Branch summaries").
    pub async fn navigate_tree(
        &mut self,
        request: TreeRequest,
    ) -> Result<TreeOutcome, MaintenanceError> {
        self.emit(MaintenanceEvent::TreeStart {
            target_id: request.target_id.clone(),
            summarize: request.summarize,
        });
        let old_leaf_id = self.journal.session().leaf_id().cloned();
        let strategy = self.branch_strategy(request.custom_instructions.is_some());
        let options = NavigateOptions {
            target: request.target_id.clone(),
            from: None,
            summarize: request.summarize,
            custom_instructions: request.custom_instructions.clone(),
            replace_instructions: request.replace_instructions,
            label: request.label.clone(),
            strategy,
            summarizer: self.summarizer.as_deref(),
            context_window: Some(self.settings.context_window),
            reserve_tokens: self.settings.branch_summary_reserve_tokens,
            tool_results: ToolResults::Truncated,
            system_prompt: SUMMARIZATION_SYSTEM.text(),
            hooks: &self.hooks,
            now: (self.clock)(),
        };
        let cancel = self.abort.begin();
        let result = navigate(&mut self.journal, &options, self.ids.as_mut(), &cancel).await;
        self.abort.end();
        let out = match result {
            Ok(out) => out,
            Err(NavigateError::Aborted | NavigateError::CancelledByHook { .. }) => {
                self.emit(MaintenanceEvent::TreeEnd {
                    old_leaf_id: old_leaf_id.as_ref().map(ToString::to_string),
                    new_leaf_id: old_leaf_id.as_ref().map(ToString::to_string),
                    summary_entry_id: None,
                    aborted: true,
                    error_message: None,
                });
                return Ok(TreeOutcome {
                    cancelled: true,
                    old_leaf_id: old_leaf_id.clone(),
                    new_leaf_id: old_leaf_id,
                    context: self.context(),
                    ..TreeOutcome::default()
                });
            }
            Err(e) => {
                self.emit(MaintenanceEvent::TreeEnd {
                    old_leaf_id: old_leaf_id.as_ref().map(ToString::to_string),
                    new_leaf_id: old_leaf_id.as_ref().map(ToString::to_string),
                    summary_entry_id: None,
                    aborted: false,
                    error_message: Some(e.to_string()),
                });
                return Err(match e {
                    NavigateError::NotFound(id) => MaintenanceError::NotFound(id),
                    other => MaintenanceError::Navigate(other),
                });
            }
        };
        let mut marker_entry_id = None;
        if !out.no_op && out.summary_entry.is_none() && request.label.is_none() {
            let body = EntryBody::Custom {
                custom_type: NAVIGATE_MARKER.to_owned(),
                data: Some(RawJson::from_value(&json!({
                    "from": out.old_leaf.as_ref().map(ToString::to_string),
                    "to": request.target_id,
                }))),
            };
            let mut stamp = Stamp {
                ids: self.ids.as_mut(),
                now: (self.clock)(),
            };
            marker_entry_id = Some(self.journal.append(body, &mut stamp)?);
        }
        if !out.no_op {
            self.state.overflow_recovery_attempted = false;
            self.state.empty_incomplete_recoveries = 0;
        }
        let new_leaf_id = self.journal.session().leaf_id().cloned();
        self.emit(MaintenanceEvent::TreeEnd {
            old_leaf_id: out.old_leaf.as_ref().map(ToString::to_string),
            new_leaf_id: new_leaf_id.as_ref().map(ToString::to_string),
            summary_entry_id: out.summary_entry.as_ref().map(ToString::to_string),
            aborted: false,
            error_message: None,
        });
        Ok(TreeOutcome {
            cancelled: false,
            no_op: out.no_op,
            old_leaf_id: out.old_leaf,
            new_leaf_id,
            summary_entry_id: out.summary_entry,
            summary: out.summary.map(|s| s.summary),
            editor_text: out.editor_text,
            abandoned: out.abandoned,
            marker_entry_id,
            context: self.context(),
            notes: out.warnings,
        })
    }
}
