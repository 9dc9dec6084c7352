//! Tree navigation with an optional branch summary (docs/design.md, "Branch summaries"), through
//! the `session_before_tree` and `session_tree` hooks.
//!
//! A cancellation, a hook veto or a failed summary leaves the session (and
//! its file) as it was: the leaf does not move.

use musepi_branch_summary::{
    Destination, PrepareOptions, RequestOptions, Summary, ToolResults, apply_navigation,
    collect_entries, destination, finish, prepare_branch, summary_request, token_budget,
};
use musepi_context_builder::{context_thinking_level, summary_reasoning};
use musepi_session_model::{EntryId, IdSource, Journal, SessionError, Stamp};
use tokio_util::sync::CancellationToken;

use crate::events::{
    BeforeTreeEvent, TreeEvent, TreePreparation, TreeRequest, entry_json, names, session_file,
};
use crate::runner::{HookCancel, HookWarning, Hooks, warning_lines};
use crate::summarizer::{SummarizeError, Summarizer, truncation_warning};

/// How a branch summary is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchStrategy {
    /// By a model.
    Llm,
    /// A deterministic digest of the abandoned branch (no model needed).
    Snapcompact,
}

/// What a navigation needs besides the journal.
///
/// Start from [`NavigateOptions::new`] and set what differs: fields are
/// added as the pipeline grows.
#[non_exhaustive]
pub struct NavigateOptions<'a> {
    /// Where to go and what the user asked for on the way.
    pub request: TreeRequest,
    /// Where navigation starts (default: the leaf).
    pub from: Option<String>,
    /// How the summary is written.
    pub strategy: BranchStrategy,
    /// The summarizing model.
    pub summarizer: Option<&'a dyn Summarizer>,
    /// The summarizing model's context window (`None`: 128,000).
    pub context_window: Option<u64>,
    /// `branchSummary.reserveTokens`.
    pub reserve_tokens: u64,
    /// Tool results in the summary input.
    pub tool_results: ToolResults,
    /// The summarizer system prompt.
    pub system_prompt: &'a str,
    /// Extension handlers.
    pub hooks: &'a Hooks,
    /// "Now", in epoch milliseconds.
    pub now: i64,
}

impl<'a> NavigateOptions<'a> {
    /// The navigation `request` asks for, from the leaf at `now`, without a
    /// model: the branch strategy is the snapcompact digest, the reserve
    /// `branchSummary.reserveTokens`' default, tool results as the design
    /// era keeps them, the summarizer system prompt of compaction.
    pub fn new(request: TreeRequest, hooks: &'a Hooks, now: i64) -> Self {
        Self {
            request,
            from: None,
            strategy: BranchStrategy::Snapcompact,
            summarizer: None,
            context_window: None,
            reserve_tokens: musepi_branch_summary::DEFAULT_RESERVE_TOKENS,
            tool_results: ToolResults::Truncated,
            system_prompt: musepi_compaction::prompts::SUMMARIZATION_SYSTEM.text(),
            hooks,
            now,
        }
    }
}

/// What a navigation did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NavigateOutcome {
    /// The leaf before.
    pub old_leaf: Option<EntryId>,
    /// The leaf after (the summary entry when one was written).
    pub new_leaf: Option<EntryId>,
    /// Where the navigation landed.
    pub destination: Destination,
    /// The abandoned entries, oldest first.
    pub abandoned: Vec<EntryId>,
    /// The summary entry written, if any (only ever with a `summary`).
    pub summary_entry: Option<EntryId>,
    /// The summary made, if any: written as `summary_entry`, except an
    /// extension's empty summary, which is kept here and not written.
    pub summary: Option<Summary>,
    /// Navigating to where the leaf already is does nothing.
    pub no_op: bool,
    /// Hook failures and other things to tell the user.
    pub warnings: Vec<String>,
}

impl NavigateOutcome {
    /// Text to put back in the editor (the target user or custom message):
    /// the destination's.
    pub fn editor_text(&self) -> Option<&str> {
        self.destination.editor_text.as_deref()
    }
}

/// Why a navigation did not happen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NavigateError {
    /// The target (or `from`) does not exist.
    #[error("Entry {0} not found")]
    NotFound(String),
    /// A summary was asked for and there is no model.
    #[error(
        "No model available for summarization: configure a provider (--provider) or use --strategy snapcompact"
    )]
    NoModel,
    /// A hook cancelled it.
    #[error("Navigation cancelled")]
    CancelledByHook {
        /// Hooks that failed before it.
        warnings: Vec<HookWarning>,
        /// Which hook cancelled, and why.
        by: Option<HookCancel>,
    },
    /// The abort signal fired.
    #[error("Navigation cancelled")]
    Aborted,
    /// The summarizer failed.
    #[error("Branch summarization failed: {0}")]
    Summarize(SummarizeError),
    /// The branch could not be read or written.
    #[error(transparent)]
    Branch(#[from] musepi_branch_summary::BranchError),
    /// The journal could not be written.
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// Navigates `journal` to `options.request.target_id` (docs/design.md, "Branch summaries").
pub async fn navigate(
    journal: &mut Journal,
    options: &NavigateOptions<'_>,
    ids: &mut dyn IdSource,
    cancel: &CancellationToken,
) -> Result<NavigateOutcome, NavigateError> {
    let request = &options.request;
    let session = journal.session();
    let old_leaf = match &options.from {
        Some(id) => Some(
            session
                .index_of(id)
                .ok_or_else(|| NavigateError::NotFound(id.clone()))?,
        ),
        None => session.leaf_index(),
    };
    let old_leaf_id = old_leaf.map(|i| session.entries()[i].id.clone());
    if request.target_id.as_deref() == old_leaf_id.as_ref().map(EntryId::as_str)
        && request.target_id.is_some()
    {
        return Ok(NavigateOutcome {
            old_leaf: old_leaf_id.clone(),
            new_leaf: old_leaf_id,
            no_op: true,
            ..Default::default()
        });
    }
    let target = match &request.target_id {
        Some(id) => Some(
            session
                .index_of(id)
                .ok_or_else(|| NavigateError::NotFound(id.clone()))?,
        ),
        None => None,
    };
    // A branch summary over a path cut by an unreadable line would leave
    // out what is above it: refuse, naming the line.
    if request.summarize
        && let Some(leaf) = old_leaf
    {
        session.check_path_readable(leaf, journal.path())?;
    }
    let collected = collect_entries(session, old_leaf, target)?;
    let abandoned: Vec<EntryId> = collected.ids(session).into_iter().cloned().collect();
    let mut warnings = Vec::new();
    let mut custom = request.custom_instructions.clone();
    let mut replace = request.replace_instructions;
    let mut label = request.label.clone();
    let mut hook_summary = None;
    if options.hooks.has(names::BEFORE_TREE) {
        let event = BeforeTreeEvent {
            kind: names::BEFORE_TREE,
            session_file: session_file(session),
            preparation: TreePreparation {
                request: request.clone(),
                old_leaf_id: old_leaf_id.as_ref().map(ToString::to_string),
                common_ancestor_id: collected
                    .common_ancestor
                    .map(|i| session.entries()[i].id.to_string()),
                entries_to_summarize: abandoned.iter().map(ToString::to_string).collect(),
            },
        };
        let d = options.hooks.before_tree(&event, cancel).await;
        warnings.extend(warning_lines(&d.warnings));
        if d.failed_closed || d.result.as_ref().is_some_and(|r| r.cancel) {
            return Err(NavigateError::CancelledByHook {
                warnings: d.warnings,
                by: d.cancelled_by,
            });
        }
        if let Some(r) = d.result {
            custom = r.custom_instructions.or(custom);
            replace = r.replace_instructions.unwrap_or(replace);
            label = r.label.or(label);
            hook_summary = r.summary;
        }
    }
    let summary = if !request.summarize {
        None
    } else if let Some(s) = hook_summary {
        Some(Summary {
            summary: s.summary,
            details: s.details,
            from_extension: true,
            usage: None,
        })
    } else if collected.is_empty() {
        None
    } else {
        let budget = token_budget(options.context_window, options.reserve_tokens);
        let prep = prepare_branch(
            session,
            &collected.entries,
            budget,
            &PrepareOptions {
                tool_results: options.tool_results,
            },
        )?;
        match options.strategy {
            BranchStrategy::Snapcompact => Some(crate::digest::branch_digest(&prep)),
            BranchStrategy::Llm => {
                // The session's thinking level where the navigation starts,
                // as every summary request carries it.
                let reasoning = summary_reasoning(&context_thinking_level(session, old_leaf));
                let request_options = RequestOptions {
                    custom_instructions: custom.as_deref(),
                    replace_instructions: replace,
                    reasoning: reasoning.as_deref(),
                    ..RequestOptions::new(options.system_prompt)
                };
                match summary_request(&prep, &request_options) {
                    None => Some(Summary::no_content()),
                    Some(request) => {
                        let summarizer = options.summarizer.ok_or(NavigateError::NoModel)?;
                        let response = match summarizer.summarize(&request, cancel.clone()).await {
                            Ok(r) => r,
                            Err(SummarizeError::Cancelled) => return Err(NavigateError::Aborted),
                            Err(e) => return Err(NavigateError::Summarize(e)),
                        };
                        if response.truncated {
                            warnings.push(truncation_warning(request.purpose, summarizer));
                        }
                        Some(finish(&prep, &response))
                    }
                }
            }
        }
    };
    if cancel.is_cancelled() {
        return Err(NavigateError::Aborted);
    }
    let dest = destination(session, request.target_id.as_deref())?;
    let mut stamp = Stamp {
        ids,
        now: options.now,
    };
    let summary_entry = apply_navigation(
        journal,
        &dest,
        summary.as_ref(),
        label.as_deref(),
        &mut stamp,
    )?;
    let session = journal.session();
    let new_leaf = session.leaf_id().cloned();
    let event = TreeEvent {
        kind: names::TREE,
        session_file: session_file(session),
        new_leaf_id: new_leaf.as_ref().map(ToString::to_string),
        old_leaf_id: old_leaf_id.as_ref().map(ToString::to_string),
        summary_entry: summary_entry
            .as_ref()
            .and_then(|id| session.index_of(id.as_str()))
            .and_then(|i| entry_json(session, i)),
        from_extension: summary_entry
            .as_ref()
            .and(summary.as_ref())
            .map(|s| s.from_extension),
    };
    warnings.extend(warning_lines(&options.hooks.tree(&event, cancel).await));
    Ok(NavigateOutcome {
        old_leaf: old_leaf_id,
        new_leaf,
        destination: dest,
        abandoned,
        summary_entry,
        summary,
        no_op: false,
        warnings,
    })
}
