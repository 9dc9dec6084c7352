//! `musepi view`: the interactive transcript and tree (docs/design.md, "What the model sees" and "Branch summaries").
//!
//! The whole scrollback of the leaf's path, each compaction inline where it
//! fired as the slim divider `── 📷 compacted · ctrl+o ──` that expands into
//! its summary (and the frames or pages of a snapcompact archive); tool
//! calls, results and thinking folded; search; a tree pane to navigate
//! with an optional branch summary, filtered to user messages or labels;
//! `:compact` on demand, after a question; the context's tokens against
//! the window in the title.
//!
//! The parts, from data to screen:
//! - [`model`]: the display transcript as owned blocks and parts
//!   ([`Transcript::from_session`]), with [`archive`] for stored archives;
//! - [`lines`]: the blocks laid out in rows at a width, folds open or closed;
//! - [`app`] and [`keys`]: the state and [`keys::update`], a pure function
//!   of the state and an input that returns the [`Effect`] to run;
//! - [`render`] and [`tree_pane`]: drawing, at any size down to 0×0;
//! - [`terminal`] and [`event_loop`]: raw mode and the alternate screen
//!   with a guard and a panic hook, and the loop that runs jobs through a
//!   [`Worker`] (the command supplies one that runs the `branch` and
//!   `compact` pipelines).

pub mod app;
pub mod archive;
pub mod event_loop;
pub mod keys;
pub mod lines;
pub mod model;
pub mod render;
mod search;
pub mod terminal;
pub mod text;
pub mod tree_pane;

pub use app::{App, Done, Effect, Input, Job, Mode, Strategies};
pub use event_loop::Worker;
pub use model::Transcript;
pub use tree_pane::TreeModel;

use musepi_session_model::Session;

/// The transcript and the tree of `session`, as the view shows them.
pub fn snapshot(session: &Session) -> (Transcript, TreeModel) {
    (
        Transcript::from_session(session),
        TreeModel::from_session(session),
    )
}
