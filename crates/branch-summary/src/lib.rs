//! Summaries of abandoned branches.
//!
//! When the user navigates the session tree (`/tree`) away from the current
//! leaf, the entries left behind can be summarized so the conversation
//! remembers what was tried there (docs/design.md, "Branch summaries"). This crate owns that
//! pipeline, as pure synchronous steps:
//!
//! 1. [`collect_entries`]: the abandoned entries, from the old leaf up to
//!    the deepest entry the old leaf and the target share.
//! 2. [`prepare_branch`]: their messages, newest first, within a token
//!    budget ([`token_budget`]), with the files they read and changed
//!    (docs/design.md, "Summaries").
//! 3. [`summary_request`]: the plain-data [`SummaryRequest`] for a model,
//!    or none when nothing fits.
//! 4. [`finish`]: the model's answer becomes the stored [`Summary`]: the
//!    preamble, the text and the `<files>` block.
//! 5. [`destination`] and [`apply_navigation`]: where the leaf lands, and
//!    the `branch_summary` entry under it.
//!
//! It builds on `musepi-session-model` (the tree) and
//! `musepi-context-builder` (token estimates, the summarizer serialization,
//! file-operation tracking, templates). It must not know how requests are
//! sent, how hooks run, or anything of compaction: the summarizer system
//! prompt comes in as a parameter, and it never reads the clock or draws
//! ids (those come in through [`Stamp`](musepi_session_model::Stamp)).
//!
//! Tool results follow our decision by default ([`ToolResults::Truncated`]);
//! [`ToolResults::Skip`] reproduces the reference, which is what the
//! conformance answers record.
//!
//! ```
//! use musepi_branch_summary::{
//!     PrepareOptions, RequestOptions, collect_entries_by_id, prepare_branch,
//!     summary_request, token_budget,
//! };
//! use musepi_session_model::{load_bytes, SequentialIds};
//!
//! let jsonl = br#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}
//! {"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"try plan A","timestamp":1}}
//! {"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"plan A failed","timestamp":2}}
//! "#;
//! let session = load_bytes("s.jsonl".as_ref(), jsonl, &mut SequentialIds::new()).unwrap();
//! let collected = collect_entries_by_id(&session, Some("b"), Some("a")).unwrap();
//! let budget = token_budget(None, 16_384);
//! let prep = prepare_branch(&session, &collected.entries, budget, &PrepareOptions::default()).unwrap();
//! let request = summary_request(&prep, &RequestOptions::new("You summarize.")).unwrap();
//! assert!(request.prompt_text().starts_with("<conversation>\n[User]: plan A failed\n</conversation>"));
//! ```
//!
//! [`SummaryRequest`]: musepi_context_builder::SummaryRequest

mod collect;
mod error;
mod finish;
mod prepare;
mod request;
#[cfg(test)]
mod test_support;

pub use collect::{Collected, collect_entries, collect_entries_by_id};
pub use error::BranchError;
pub use finish::{
    Destination, NO_CONTENT, NO_SUMMARY, PREAMBLE, Summary, apply_navigation, destination, finish,
};
pub use prepare::{
    BranchItem, BranchPreparation, DEFAULT_RESERVE_TOKENS, FALLBACK_CONTEXT_WINDOW, PrepareOptions,
    ToolResults, prepare_branch, token_budget,
};
pub use request::{INSTRUCTIONS, MAX_TOKENS, RequestOptions, instructions, summary_request};
