//! Summaries of abandoned branches.
//!
//! This crate will own what happens when the user leaves a branch of the
//! session tree (SPEC §13): collecting the abandoned entries, fitting them
//! into a token budget, the summary request, and the `branch_summary` entry
//! under the navigation target.
