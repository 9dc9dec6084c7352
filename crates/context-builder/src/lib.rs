//! What the model sees of a session.
//!
//! This crate owns: the LLM context at any leaf (SPEC §2.1) with the
//! safety refinements of §2.4, the display transcript (§2.2), conversion to
//! provider messages (§2.3, [`LlmMessage`]), token counting (the chars/4
//! estimate of §3.1, provider-usage estimates of §3.2, thresholds of §3.3,
//! the `keepRecentTokens` adaptation of §3.4, and exact BPE counts), the
//! summarizer serialization (§8.2), file-operation tracking (§11), prompt
//! template rendering for every crate, and the plain-data
//! [`SummaryRequest`] that every summarizer takes.
//!
//! It builds on `musepi-session-model` and knows nothing of when to compact.

mod llm;

pub use llm::{LlmMessage, RequestPurpose, SummaryRequest, SummaryResponse};
