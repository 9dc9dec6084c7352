//! The pipelines and their extension points.
//!
//! This crate will own the async pipelines that run compaction and tree
//! navigation end to end (prune, prepare, summarize, commit), the five hook
//! points of SPEC §16 for Rust handlers and for hook processes with
//! timeouts, and the maintenance runtime that a live agent loop calls.
//! It is the first crate that uses tokio; it never talks to a provider
//! itself (the caller passes a summarizer).
