//! Leaving a branch by hand rather than through
//! [`Maintenance::navigate_tree`](crate::Maintenance::navigate_tree): what
//! a branch summary would cover ([`collect_entries`], [`prepare_branch`]),
//! its request and budget, the navigation pipeline with hooks
//! ([`navigate()`]), and the digest of a branch.
//!
//! These are `musepi-branch-summary`'s and `musepi-hooks`' items, named
//! here so that a program built on this crate (the `musepi` command line)
//! reaches navigation through one layer.

pub use musepi_branch_summary::{
    BranchError, PrepareOptions, RequestOptions, ToolResults, collect_entries, prepare_branch,
    summary_request, token_budget,
};
pub use musepi_hooks::{
    BranchStrategy, NavigateError, NavigateOptions, NavigateOutcome, TreeRequest, branch_digest,
    navigate,
};
