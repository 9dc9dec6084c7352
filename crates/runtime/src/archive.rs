//! The model-free archive (snapcompact) as a caller shows, renders and
//! prices it: the archives a session holds ([`SessionArchives`]), a PNG
//! archive's frames and their plan, the text archive's pages, the page
//! shapes, and the serialization options settings fill in.
//!
//! These are `musepi-snapcompact`'s items (and the frames-as-history
//! adapter of `musepi-hooks`), named here so that a program built on this
//! crate (the `musepi` command line) reaches the archive through one layer.

pub use musepi_hooks::with_frames_history;
pub use musepi_snapcompact::png::SHAPES;
pub use musepi_snapcompact::png::plain_text;
pub use musepi_snapcompact::png::{ArchiveFrame, PngArchive, plan_archive, render_frames};
pub use musepi_snapcompact::png::{MAX_FRAMES_DEFAULT, PRESERVE_KEY};
pub use musepi_snapcompact::text::{SnapArchiveState, TextPages};
pub use musepi_snapcompact::{
    SerializeOptions, SessionArchives, base64_decode, low_companion, normalize, resolve_shape,
};
