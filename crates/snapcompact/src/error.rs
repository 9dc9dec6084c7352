//! The crate's error type.

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapError {
    /// A shape name that is not in the shape table.
    #[error("unknown snapcompact shape `{name}`: expected auto or one of {expected}")]
    UnknownShape {
        /// The name asked for.
        name: String,
        /// The shape table's names, as the message lists them.
        expected: String,
    },
    /// The shape's glyphs are not bundled with this crate (the Silver
    /// TrueType font is not shipped).
    #[error("the font of snapcompact shape `{0}` is not bundled")]
    FontUnavailable(&'static str),
    /// A frame edge that cannot hold a row of text (or the gutter of a
    /// two-column shape), or one larger than the largest frame a shape allows
    /// (`MAX_FRAME_SIZE` of the shape table).
    #[error("frame size {size} px is out of range for snapcompact shape `{shape}`")]
    FrameSize {
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
    /// The preparation's first kept entry has no id (an unmigrated v1
    /// session).
    #[error("first kept entry has no id: the session may need migration")]
    NoFirstKeptId,
    /// The PNG encoder failed.
    #[error("png encoding of a snapcompact frame failed")]
    Png(#[from] png::EncodingError),
}
