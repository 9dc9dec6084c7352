//! Snapcompact: compaction without a model.
//!
//! This crate owns the deterministic archive that replaces old history
//! (SPEC §14, §15): the archive serialization with its budgets, text frames
//! for every model, PNG frames printed with bitmap fonts for vision models,
//! model-aware shapes and image pricing, and the persisted archive that the
//! next compaction re-renders.
//!
//! Everything here is a pure, synchronous function of its input: no model,
//! no network, no clock, no randomness, and the same input always gives the
//! same text and the same PNG bytes. The engine takes provider messages
//! ([`musepi_context_builder::LlmMessage`]) and file lists; it does not
//! decide where the cut falls or when to compact.
//!
//! Entry points:
//!
//! - [`compact_preparation`]: the compaction pass. A prepared compaction
//!   ([`musepi_compaction::Preparation`]) and the reader ([`SnapTarget`])
//!   in, a [`musepi_compaction::CompactionResult`] out: PNG frames for a
//!   reader that takes images, text frames for any other.
//! - [`SessionArchives`]: rebuilds the blocks of stored PNG archives when a
//!   session is converted for a model
//!   ([`musepi_context_builder::ArchiveBlocks`]); [`context_tokens`] and
//!   [`measured_tokens`] count what the model sees with them.
//! - [`prompts`]: the lead-ins and reading rules, one template each under
//!   `prompts/snapcompact/`.
//!
//! The engine, by area:
//!
//! - [`serialize`]: the archive transcript of SPEC §14.1
//!   ([`serialize::serialize_archive`]) and its text-port variant of §15.3
//!   ([`serialize::serialize_text`]), with scope markers, merged tool
//!   results, useless pairs dropped and head/tail truncation
//!   ([`serialize::truncate_for_archive`]); [`elide_data_urls`].
//! - [`normalize()`]: §14.2, reducing text to what the bundled fonts print;
//!   [`scan_renderability`].
//! - [`text_frames`]: the text-frame archive of §15 for every model
//!   ([`text_frames::snap_compact`], [`text_frames::plan_archive`],
//!   the persisted [`text_frames::SnapArchiveState`]), with [`FileLists`]
//!   rendering context-builder's file lists.
//! - [`shape`] and [`pricing`]: the shape table, geometry, the shape for a
//!   model ([`shape::resolve_shape`]) and what frames cost (§14.3, §14.4).
//! - [`font`] and [`render`](mod@render): the bundled X.org glyphs and 1-bit PNG
//!   printing ([`render::render`]).
//! - [`png_archive`] and [`history`]: the PNG archive's layout with
//!   foveation ([`png_archive::plan_archive`]), its stored records
//!   ([`png_archive::PngArchive`]) and the blocks that rebuild the context
//!   from it ([`history::history_blocks`], §14.5-§14.8).
//!
//! ```
//! use musepi_context_builder::LlmMessage;
//! use musepi_snapcompact::FileLists;
//! use musepi_snapcompact::text_frames::{SnapInput, snap_compact};
//!
//! let messages = [LlmMessage::user_text("Please port the parser to Rust.")];
//! let files = FileLists::from_ops(["src/parser.ts"], [], ["src/parser.rs"]);
//! let result = snap_compact(&SnapInput::new(&messages, &files));
//! assert!(result.summary.starts_with("Resume the prior conversation"));
//! assert!(result.summary.contains("src/parser.rs (Write)"));
//! assert_eq!(result.archive.text, "¶user:Please port the parser to Rust.");
//! ```

mod archives;
mod compaction;
mod data_url;
mod error;
mod files;
pub mod font;
pub mod history;
mod layout;
pub mod normalize;
pub mod png_archive;
pub mod pricing;
pub mod prompts;
pub mod render;
pub mod serialize;
pub mod shape;
mod summary;
pub mod text_frames;
mod util;

pub use archives::{SessionArchives, context_tokens, is_legacy_crash_risk, measured_tokens};
pub use compaction::{SnapSettings, SnapTarget, compact_preparation};
pub use data_url::{DataUrlMode, elide_data_urls};
pub use error::SnapError;
pub use files::FileLists;
pub use musepi_context_builder::{FILE_LIST_LIMIT, has_url_scheme};
pub use normalize::{NEWLINE_GLYPH, Renderability, normalize, scan_renderability};
pub use png_archive::archive_tokens;
pub use render::{Frame, base64_decode, base64_encode, render};
pub use serialize::{DIM_OFF, DIM_ON, SerializeOptions};
pub use shape::{ResolvedShape, Shape, low_companion, resolve_shape};
