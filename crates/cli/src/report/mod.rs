//! The JSON and text views that more than one command shows, and that
//! `musepi serve` answers with: each is built here once.
//!
//! - [`context`]: what the model sees at a leaf, and the context's tokens;
//! - [`plan`]: a compaction's plan, its prune plan and its requests;
//! - [`entries`]: one-line previews of entries and messages;
//! - [`recall`]: an entry's original content, and searches of what
//!   compactions and pruning took out of the context.

pub mod context;
pub mod entries;
pub mod plan;
pub mod recall;
