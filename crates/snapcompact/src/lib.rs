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
//! The engine, by area:
//!
//! - [`salience`]: the salience archive ([`salience::build_history`]):
//!   the ledger, the conversation kept by salience within a budget, the
//!   markers that name the entries where text was left out, and the
//!   continuation of an earlier archive.
//! - [`text_frames`]: the text archive's summary around it
//!   ([`text_frames::snap_compact`]), its pages
//!   ([`text_frames::TextPages`]) and the persisted
//!   [`text_frames::SnapArchiveState`], with [`MarkedFiles`] rendering
//!   context-builder's file lists.
//! - [`serialize`]: the transcript the PNG frames print and its plain
//!   variant ([`serialize::serialize`] with a [`serialize::Flavor`]), with scope markers, merged tool
//!   results, useless pairs dropped and head/tail truncation
//!   ([`serialize::truncate_for_archive`]); [`elide_data_urls`].
//! - [`normalize()`]: reducing text to what the bundled fonts print;
//!   [`scan_renderability`].
//! - [`shape`] and [`pricing`]: the shape table, geometry, the shape for a
//!   model ([`shape::resolve_shape`]) and what frames cost.
//! - [`font`] and [`render`](mod@render): the bundled X.org glyphs and 1-bit PNG
//!   printing ([`render::render`]).
//! - [`png_archive`] and [`history`]: the PNG archive's layout with
//!   foveation and pages that end at a line end or a space
//!   ([`png_archive::plan_archive`]), its stored records
//!   ([`png_archive::PngArchive`]) and the blocks that rebuild the context
//!   from it ([`history::history_blocks`]).
//!
//! ```
//! use musepi_context_builder::LlmMessage;
//! use musepi_snapcompact::MarkedFiles;
//! use musepi_snapcompact::text_frames::{SnapInput, snap_compact};
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
mod data_url;
mod error;
mod files;
pub mod font;
pub mod history;
mod layout;
pub mod normalize;
mod parallel;
mod pass;
pub mod png_archive;
pub mod pricing;
pub mod prompts;
pub mod render;
pub mod salience;
pub mod serialize;
pub mod shape;
pub mod sizing;
mod summary;
#[cfg(test)]
mod testkit;
pub mod text_frames;
mod util;

pub use archives::{SessionArchives, context_tokens, is_legacy_crash_risk, measured_tokens};
pub use data_url::{DataUrlMode, elide_data_urls};
pub use error::SnapError;
pub use files::MarkedFiles;
pub use musepi_context_builder::{FILE_LIST_LIMIT, has_url_scheme};
pub use normalize::{NEWLINE_GLYPH, Renderability, normalize, scan_renderability};
pub use pass::{Pass, PassInput, SnapSettings, SnapTarget, compact};
pub use png_archive::archive_tokens;
pub use render::{Frame, base64_decode, base64_encode, render};
pub use serialize::{DIM_OFF, DIM_ON, SerializeOptions};
pub use shape::{ResolvedShape, Shape, low_companion, resolve_shape};
