//! The crate's error type.

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum SnapError {
    /// A shape name that is not in the shape table (SPEC §14.3).
    #[error("unknown snapcompact shape `{0}`")]
    UnknownShape(String),
    /// The shape's glyphs are not bundled with this crate (the Silver
    /// TrueType font is not shipped).
    #[error("the font of snapcompact shape `{0}` is not bundled")]
    FontUnavailable(&'static str),
    /// A frame edge that cannot hold one cell, or the gutter of a
    /// two-column shape.
    #[error("frame size {size} px is too small for snapcompact shape `{shape}`")]
    FrameTooSmall {
        /// The shape.
        shape: &'static str,
        /// The requested frame edge in pixels.
        size: u32,
    },
    /// The bundled glyph table could not be read.
    #[error("bundled glyph table is malformed at line {line}: {reason}")]
    GlyphTable {
        /// 1-based line in `fonts/glyphs.txt`.
        line: usize,
        /// What was wrong.
        reason: &'static str,
    },
    /// The PNG encoder failed.
    #[error("png encoding of a snapcompact frame failed")]
    Png(#[from] png::EncodingError),
}
