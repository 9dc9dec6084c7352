//! The text archive: what every reader gets, and all a reader of text
//! gets.
//!
//! The salience module builds the archive's history within a budget: a
//! ledger of every user message, tool call and error line, then the
//! conversation kept by salience, with markers naming the entries where
//! text was left out, continuing an earlier archive without growing. The
//! frames module wraps it in the compaction's summary ([`snap_compact`]),
//! pages it for display ([`TextPages`]) and stores it
//! ([`SnapArchiveState`]).
//!
//! Its insides are private. It uses nothing of the PNG printer
//! ([`crate::png`]) and the printer nothing of it: they share the
//! serialization options ([`SerializeOptions`](crate::SerializeOptions)),
//! and meet in the compaction pass, which picks between them, and in the
//! crate's root, which asks whether a summary's history is a salience
//! archive ([`is_salience_text`]).

mod salience;
mod text_frames;

pub use salience::is_salience_text;

pub use text_frames::{
    SNAP_ARCHIVE_VERSION, SnapArchiveState, SnapInput, SnapResult, TextPages, snap_compact,
};
