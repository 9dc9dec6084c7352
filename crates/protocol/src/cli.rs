//! The `--json` documents of the commands that plan and run a compaction,
//! undo its pruning, leave a branch or hand off (`musepi plan`, `compact`,
//! `prune`, `unprune`, `branch`, `handoff`), the one `musepi serve`'s
//! `plan` answers with too, their parts (what pruning blanks, the
//! threshold, a summary request), and the error document of every
//! command.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

pub use musepi_runtime::context::FileLists;

/// What pruning blanks, or would.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PruneDoc {
    /// The tokens the blanked results held, less their placeholders.
    pub tokens_saved: u64,
    /// The results blanked, oldest first.
    pub results: Vec<PrunedResultDoc>,
}

/// A tool result pruning blanks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrunedResultDoc {
    /// The tool result's entry.
    pub entry_id: String,
    /// Why: `age` (older than the protected window), `superseded` (a
    /// later read of the same file) or `useless` (a result that says
    /// nothing).
    pub kind: &'static str,
    /// Its tokens before.
    pub tokens: u64,
    /// The tokens blanking it saves.
    pub saved: u64,
    /// The text that takes its place.
    pub placeholder: String,
}

/// `musepi prune --json`: the prune plan and what was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PruneCommandDoc {
    /// The plan.
    #[serde(flatten)]
    pub prune: PruneDoc,
    /// A file was written.
    pub written: bool,
    /// The file written (the session, or `-o OUT`).
    pub output: Option<String>,
    /// Warnings about the session file.
    pub warnings: Vec<String>,
}

/// Whether an automatic compaction would run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThresholdDoc {
    /// The model's context window.
    pub context_window: u64,
    /// Where automatic compaction starts.
    pub threshold_tokens: i64,
    /// What the trigger compares: the last usage plus what followed it.
    pub measured_tokens: u64,
    /// The measured tokens are over the threshold.
    pub over_threshold: bool,
}

/// A request to the summarizing model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestDoc {
    /// `history`, `turnPrefix`, `shortSummary`, `branchSummary` or
    /// `handoff`.
    pub purpose: &'static str,
    /// The answer's token limit, when one is set.
    pub max_tokens: Option<u32>,
    /// The thinking level asked for, when one is.
    pub reasoning: Option<String>,
    /// The system prompt.
    pub system_prompt: String,
    /// The prompt, as the model reads it.
    pub prompt: String,
}

/// `musepi plan --json` (and `plan` of `musepi serve`): a compaction at
/// the leaf as it would run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanDoc {
    /// Always false here.
    pub nothing_to_compact: bool,
    /// The leaf planned at.
    pub leaf_id: Option<String>,
    /// The first entry kept verbatim.
    pub first_kept_entry_id: String,
    /// The cut splits a turn: its start is summarized apart.
    pub is_split_turn: bool,
    /// The split turn's first entry.
    pub turn_start_entry_id: Option<String>,
    /// pi's estimate of the context before, the entry's `tokensBefore`.
    pub tokens_before: u64,
    /// The context's tokens before.
    pub context_tokens_before: u64,
    /// The context's tokens after, as this strategy would leave them.
    pub estimated_tokens_after: u64,
    /// The strategy that would run.
    pub strategy: &'static str,
    /// The kept window used, after the provider-ratio adaptation.
    pub keep_recent_tokens: u64,
    /// The entries summarized.
    pub messages_to_summarize: Vec<String>,
    /// The start of a split turn, summarized apart.
    pub turn_prefix_messages: Vec<String>,
    /// The entries kept.
    pub kept_messages: Vec<String>,
    /// An earlier summary is folded in.
    pub previous_summary: bool,
    /// The files the summary covers.
    pub file_lists: FileLists,
    /// Whether an automatic compaction would run.
    pub threshold: ThresholdDoc,
    /// What pruning blanks first.
    pub prune: PruneDoc,
    /// With `--show-prompts`: the requests a model would be sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<Vec<RequestDoc>>,
    /// Warnings about the settings files (the command's and serve's own
    /// documents only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

/// `musepi plan --json` when there is nothing to compact at the leaf.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NothingToCompactDoc {
    /// Always true here.
    pub nothing_to_compact: bool,
    /// Why, for people.
    pub reason: String,
    /// pi's estimate of the context.
    pub tokens_before: u64,
    /// The context's tokens.
    pub context_tokens_before: u64,
    /// Whether an automatic compaction would run.
    pub threshold: ThresholdDoc,
    /// What pruning would still blank.
    pub prune: PruneDoc,
    /// The strategy that would run.
    pub strategy: &'static str,
    /// Warnings about the settings files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

/// Either answer of `musepi plan --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum PlanAnswer {
    /// A compaction would run.
    Plan(Box<PlanDoc>),
    /// Nothing to compact.
    Nothing(NothingToCompactDoc),
}

impl PlanAnswer {
    /// Sets the settings warnings the command and serve add.
    #[must_use]
    pub fn with_warnings(mut self, warnings: Vec<String>) -> Self {
        match &mut self {
            Self::Plan(p) => p.warnings = Some(warnings),
            Self::Nothing(n) => n.warnings = Some(warnings),
        }
        self
    }
}

/// What checking an LLM summary against the ledger of the summarized
/// history found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifiedDoc {
    /// Ledger items (user instructions and numbers, paths, commands,
    /// error lines).
    pub items: usize,
    /// Items the summary already held.
    pub in_summary: usize,
    /// Items appended verbatim under their own heading.
    pub appended: usize,
    /// Items left out for the bound.
    pub left_out: usize,
}

/// `musepi compact --json` after a compaction was written.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactedDoc {
    /// Always true here.
    pub compacted: bool,
    /// The file written.
    pub file: String,
    /// The strategy that ran.
    pub strategy: &'static str,
    /// The model, for a strategy that uses one.
    pub provider: Option<String>,
    /// The compaction entry.
    pub entry_id: String,
    /// The first entry kept verbatim.
    pub first_kept_entry_id: String,
    /// pi's estimate of the context before, the entry's `tokensBefore`.
    pub tokens_before: u64,
    /// The context's tokens before.
    pub context_tokens_before: u64,
    /// The context's tokens after.
    pub tokens_after: u64,
    /// The summary stored.
    pub summary: String,
    /// The one-line summary.
    pub short_summary: Option<String>,
    /// The entry's `details` (file lists, or an extension's data).
    pub details: Option<Value>,
    /// The usage of the model's calls.
    pub usage: Option<Value>,
    /// A hook supplied the compaction.
    pub from_extension: bool,
    /// The requests sent to the model, by purpose.
    pub requests: Vec<&'static str>,
    /// What pruning blanked first.
    pub prune: PruneDoc,
    /// For a model's summary: what checking it against the ledger found.
    pub verified: Option<VerifiedDoc>,
    /// Warnings (settings, fallbacks, the session file).
    pub warnings: Vec<String>,
}

/// `musepi compact --json` when there was nothing to compact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotCompactedDoc {
    /// Always false here.
    pub compacted: bool,
    /// Always true here.
    pub nothing_to_compact: bool,
    /// Why, for people.
    pub reason: String,
    /// The file written, when one was (a migration, `-o OUT`).
    pub output: Option<String>,
    /// Warnings about the session file.
    pub warnings: Vec<String>,
}

/// `musepi compact --dry-run --json`: what would run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DryRunDoc {
    /// Always true here.
    pub dry_run: bool,
    /// Nothing to compact at the leaf.
    pub nothing_to_compact: bool,
    /// Why there is nothing to compact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The strategy that would run.
    pub strategy: &'static str,
    /// The first entry kept verbatim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_kept_entry_id: Option<String>,
    /// pi's estimate of the context before.
    pub tokens_before: u64,
    /// The context's tokens before.
    pub context_tokens_before: u64,
    /// The context's tokens after, as this strategy would leave them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_tokens_after: Option<u64>,
    /// What pruning would blank first.
    pub prune: PruneDoc,
    /// The requests a model would be sent.
    pub requests: Vec<RequestDoc>,
    /// Warnings.
    pub warnings: Vec<String>,
}

/// What every command prints with `--json` when it fails (exit status 1
/// to 4): `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ErrorLine {
    /// What went wrong.
    pub error: CommandError,
}

/// A command's failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CommandError {
    /// A stable code (`usage`, `not-a-session`, `busy`, …; docs/cli.md
    /// lists them with their exit statuses).
    pub code: &'static str,
    /// What went wrong, for people, lowercase first.
    pub message: String,
    /// The session file's line the problem is on, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

/// `musepi branch --json`: the leaf moved, and the branch left summarized
/// when asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchDoc {
    /// The file written (the session, `-o OUT`, or `-` for standard
    /// output); null when nothing was.
    pub output: Option<String>,
    /// The target was already the leaf.
    pub no_op: bool,
    /// The leaf before.
    pub old_leaf_id: Option<String>,
    /// The target; null for before the first entry.
    pub target_id: Option<String>,
    /// The leaf now.
    pub new_leaf_id: Option<String>,
    /// The entries of the branch left, oldest first.
    pub abandoned: Vec<String>,
    /// The branch summary entry written.
    pub summary_entry_id: Option<String>,
    /// How it was made: `llm` or `snapcompact`.
    pub strategy: Option<&'static str>,
    /// The branch summary's text.
    pub summary: Option<String>,
    /// A hook supplied it.
    pub from_extension: Option<bool>,
    /// The text of a user message navigated to, for an editor.
    pub editor_text: Option<String>,
    /// The label entry written, if any.
    pub marker_entry_id: Option<String>,
    /// Warnings (settings, the session file, a hook).
    pub warnings: Vec<String>,
}

/// `musepi branch --dry-run --json`: what the branch left holds and what a
/// summary of it would be made of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchDryRunDoc {
    /// The leaf before.
    pub old_leaf_id: Option<String>,
    /// The target; null for before the first entry.
    pub target_id: Option<String>,
    /// The deepest entry both paths share.
    pub common_ancestor_id: Option<String>,
    /// The entries of the branch left, oldest first.
    pub entries: Vec<String>,
    /// The tokens a summary may be made of.
    pub token_budget: u64,
    /// The messages that fit the budget, by entry.
    pub messages: Vec<String>,
    /// Their tokens.
    pub total_tokens: u64,
    /// The files they read and modified.
    pub file_lists: FileLists,
    /// `--summarize` was given.
    pub summarize: bool,
    /// The strategy the summary would use.
    pub strategy: Option<&'static str>,
    /// The model's request, for an LLM summary.
    pub request: Option<RequestDoc>,
    /// The digest, for the archive's summary (made without a model).
    pub digest: Option<String>,
    /// Warnings.
    pub warnings: Vec<String>,
}

/// `musepi handoff --json`: the new session written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HandoffDoc {
    /// The new session file.
    pub file: String,
    /// Its id.
    pub session_id: String,
    /// The session it continues.
    pub parent_session: Option<String>,
    /// The handoff document it opens with.
    pub document: String,
    /// A hook supplied the document.
    pub from_extension: bool,
    /// Warnings.
    pub warnings: Vec<String>,
}

/// `musepi unprune --json`: the originals put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnpruneDoc {
    /// The entries whose originals were put back (or would be, in a dry run).
    pub restored: Vec<String>,
    /// Pruned results whose originals the store does not have.
    pub unrecoverable: Vec<String>,
    /// Whether a file was written.
    pub written: bool,
    /// The file written, or null.
    pub output: Option<String>,
    /// What the write and the store had to say.
    pub warnings: Vec<String>,
}
