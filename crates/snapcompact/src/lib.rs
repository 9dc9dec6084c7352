//! Snapcompact: compaction without a model.
//!
//! This crate owns the deterministic archive that replaces old history
//! (SPEC §14, §15): the archive serialization with its budgets, text frames
//! for every model, PNG frames printed with bitmap fonts for vision models,
//! model-aware shapes and image pricing, and the persisted archive that the
//! next compaction re-renders.

mod data_url;
mod error;
mod files;
pub mod font;
pub mod history;
mod layout;
pub mod normalize;
pub mod png_archive;
pub mod pricing;
pub mod render;
pub mod serialize;
pub mod shape;
pub mod text_frames;
mod util;

pub use data_url::{DataUrlMode, elide_data_urls};
pub use error::SnapError;
pub use files::{FILE_LIST_LIMIT, FileLists, has_url_scheme};
pub use normalize::{NEWLINE_GLYPH, Renderability, normalize, scan_renderability};
