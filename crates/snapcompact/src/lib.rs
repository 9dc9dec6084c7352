//! Snapcompact: compaction without a model.
//!
//! This crate owns the deterministic archive that replaces old history:
//! the salience archive that every reader gets as text (a ledger of every
//! user message, tool call and error, then the conversation shortened by
//! salience), PNG frames of the whole transcript printed with bitmap fonts
//! for readers of images, model-aware shapes and image pricing, and the
//! persisted archive that the next compaction continues.
//!
//! Everything here is a pure, synchronous function of its input: no model,
//! no network, no clock, no randomness, and the same input always gives the
//! same text and the same PNG bytes. The engine takes provider messages
//! ([`musepi_context_builder::LlmMessage`]) and file lists; it does not
//! decide where the cut falls or when to compact.
//!
//! Entry points:
//!
//! - [`compact`]: the compaction pass. The summarized history
//!   ([`PassInput`]) and the reader ([`SnapTarget`]) in, the content of a
//!   compaction entry out ([`Pass`]): PNG frames for a reader that takes
//!   images (with the salience history in the summary too), the text
//!   archive for any other. Where the cut falls is the caller's business:
//!   this crate stands beside `musepi-compaction` and does not use it.
//! - [`SessionArchives`]: rebuilds the blocks of stored PNG archives when a
//!   session is converted for a model
//!   ([`musepi_context_builder::ArchiveBlocks`]); [`context_tokens`] and
//!   [`measured_tokens`] count what the model sees with them.
//! - [`prompts`]: the lead-ins and reading guides, one template each under
//!   `prompts/snapcompact/`.
//!
//! Two engines that meet only in the pass, each a module whose insides
//! are private:
//!
//! - [`text`]: the text archive. Its salience module builds the history
//!   within a budget (the ledger, the conversation kept by salience, the
//!   markers that name the entries where text was left out, the
//!   continuation of an earlier archive);
//!   [`text::snap_compact`] wraps it in the compaction's summary,
//!   [`text::TextPages`] pages it for display and
//!   [`text::SnapArchiveState`] is what an entry stores, with
//!   [`MarkedFiles`] rendering context-builder's file lists.
//! - [`png`]: the PNG printer. The transcript the frames print
//!   ([`png::serialize`] with a [`png::Flavor`], scope markers, merged tool
//!   results, head and tail truncation, [`elide_data_urls`]), reduced to
//!   what the bundled fonts print ([`normalize()`]), laid out on the shape
//!   chosen for the model ([`resolve_shape`], [`png::SHAPES`]) with
//!   foveation ([`png::plan_archive`]), printed as 1-bit PNGs
//!   ([`render()`]); [`png::PngArchive`] is what an entry stores and
//!   [`png::history_blocks`] rebuilds the context from it.
//!
//! Neither uses the other. What both use sits at the root: the
//! serialization options ([`SerializeOptions`]), the archive's size for a
//! budget ([`sizing`]), the file lists, and the prompts; so does what
//! needs both, the pass and [`summary_with_frames_history`].
//!
//! ```
//! use musepi_context_builder::LlmMessage;
//! use musepi_snapcompact::MarkedFiles;
//! use musepi_snapcompact::text::{SnapInput, snap_compact};
//!
//! let messages = [LlmMessage::user_text("Please port the parser to Rust.")];
//! let files = MarkedFiles::from_ops(["src/parser.ts"], [], ["src/parser.rs"]);
//! let result = snap_compact(&SnapInput::new(&messages, &files));
//! assert!(result.summary.starts_with("Resume the prior conversation"));
//! assert!(result.summary.contains("src/parser.rs (Write)"));
//! assert_eq!(
//!     result.archive.text,
//!     "=== LEDGER ===\n#1 ¶user:Please port the parser to Rust."
//! );
//! ```

mod archives;
mod error;
mod files;
mod options;
mod parallel;
mod pass;
pub mod png;
pub mod prompts;
pub mod sizing;
#[cfg(test)]
mod testkit;
pub mod text;
mod util;

pub use archives::{
    SessionArchives, context_tokens, is_legacy_crash_risk, measured_tokens,
    summary_with_frames_history,
};
pub use error::SnapError;
pub use files::MarkedFiles;
pub use musepi_context_builder::{FILE_LIST_LIMIT, has_url_scheme};
pub use options::SerializeOptions;
pub use pass::{Pass, PassInput, SnapSettings, SnapTarget, compact};
pub use png::{
    DIM_OFF, DIM_ON, DataUrlMode, Frame, Renderability, ResolvedShape, Shape, archive_tokens,
    base64_decode, base64_encode, elide_data_urls, low_companion, normalize, render, resolve_shape,
    scan_renderability,
};
