//! The PNG printer: the archive for a reader of images.
//!
//! The whole summarized transcript ([`serialize()`], within the limits of
//! [`SerializeOptions`](crate::SerializeOptions)) is
//! reduced to what the bundled bitmap fonts print ([`normalize()`]), laid
//! out on pages of a shape chosen for the model ([`resolve_shape`]),
//! foveated so the newest text is largest, and printed as 1-bit PNG frames
//! ([`render()`]); [`plan_archive`] and [`render_frames`] do it for a
//! compaction, [`PngArchive`] is what a compaction entry stores, and
//! [`history_blocks`] rebuilds the context from it (the frames between the
//! text edges). [`archive_tokens`] and the pricing constants say what the
//! frames cost.
//!
//! Its insides are private: the compaction pass and the crate's root
//! reach it through the items named here only, and it uses nothing of the
//! text archive ([`crate::text`]).

mod data_url;
mod font;
mod history;
mod layout;
mod normalize;
mod png_archive;
mod pricing;
mod render;
mod serialize;
mod shape;
mod summary;

pub use data_url::{DataUrlMode, elide_data_urls};
pub use history::{archive_plain_source, history_blocks, plain_text};
pub use normalize::{NEWLINE_GLYPH, Renderability, normalize, scan_renderability};
pub use png_archive::{
    ArchiveFrame, EDGE_CHARS, PngArchive, PngLayout, archive_tokens, plan_archive, render_frames,
    render_frames_on,
};
pub use pricing::{
    FRAME_DATA_BYTES_BUDGET, FRAME_DATA_BYTES_ESTIMATE, MAX_FRAMES_DEFAULT, PRESERVE_KEY,
};
pub use render::{Frame, base64_decode, base64_encode, render};
pub use serialize::{DIM_OFF, DIM_ON, Flavor, serialize, truncate_for_archive, useless_call_ids};
pub use shape::{ResolvedShape, SHAPES, Shape, low_companion, resolve_shape};

// What only the compaction pass uses: the archive's stored record and its
// source, the frame budget, and the summary around the frames.
pub(crate) use png_archive::{archive_record, compose_archive_source};
pub(crate) use pricing::{archive_frame_cap, max_frames_for_data_budget, reader_billing_family};
pub(crate) use summary::{HISTORY_MARK, frames_short_summary, frames_summary};
