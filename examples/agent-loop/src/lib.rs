//! An example agent loop that keeps its context healthy with the musepi
//! maintenance runtime ([`musepi_runtime::Maintenance`]).
//!
//! The model is a scripted OpenAI-compatible server on 127.0.0.1
//! ([`model::ScriptedModel`]): it answers the agent's requests from a
//! script (answers, tool calls, truncated answers, context overflows) and
//! the summarizer's with a fixed summary. [`agent::Agent`] is the loop: it
//! calls `before_request` before each model request, `after_assistant`
//! after each answer, `idle` and `compact` when asked, and does what each
//! decision says (retry, drop the failed answer, continue with the
//! developer prompt, replace its live messages). [`scenarios`] makes each
//! of the six triggers fire; `cargo run -p musepi-agent-loop` prints them.
//!
//! It is an example, not a library to depend on: nothing here is published.

pub mod agent;
pub mod model;
pub mod scenarios;
