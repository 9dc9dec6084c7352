//! The archive blocks of a session's compactions, for context conversion:
//! a stored PNG archive goes back into the context as text and images.

use musepi_context_builder::{ArchiveBlocks, ContextEstimate, Tokenizer};
use musepi_session_model::{ContentBlock, EntryBody, Session};

use crate::png::{
    FRAME_DATA_BYTES_BUDGET, HISTORY_MARK, PRESERVE_KEY, PngArchive, archive_plain_source,
    history_blocks,
};

/// Legacy archives with this many frames or more may be a crash risk.
const LEGACY_FRAMES: usize = 16;
/// … or with this many base64 bytes of frames.
const LEGACY_FRAME_BYTES: usize = 3_000_000;
/// … when they also dropped this many characters …
const LEGACY_TRUNCATED_CHARS: u64 = 1_000_000;
/// … or archived this many.
const LEGACY_ARCHIVE_CHARS: u64 = 250_000;

/// Rebuilds the context blocks of stored PNG archives: the compaction
/// entry at an index gets the [`history_blocks`] of its
/// `preserveData.snapcompact`, within a byte budget of frame data
/// ([`FRAME_DATA_BYTES_BUDGET`] by default).
///
/// ```
/// use musepi_context_builder::{ArchiveBlocks, ConvertOptions};
/// use musepi_session_model::{Header, Session};
/// use musepi_snapcompact::SessionArchives;
///
/// let session = Session::new(Header::new("s", "2025-01-01T00:00:00.000Z", "/repo"));
/// let archives = SessionArchives::new(&session);
/// assert!(archives.blocks(0).is_none());
/// let options = ConvertOptions { archive: Some(&archives), ..ConvertOptions::default() };
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SessionArchives<'s> {
    session: &'s Session,
    budget: usize,
}

impl<'s> SessionArchives<'s> {
    /// The archives of `session`, with the 3,000,000-byte frame budget.
    pub fn new(session: &'s Session) -> Self {
        Self {
            session,
            budget: FRAME_DATA_BYTES_BUDGET,
        }
    }

    /// The same archives with another budget of base64 frame bytes per
    /// rebuilt request.
    #[must_use]
    pub fn with_budget(mut self, bytes: usize) -> Self {
        self.budget = bytes;
        self
    }

    /// The valid PNG archive of the compaction entry at `entry_index`.
    pub fn archive(&self, entry_index: usize) -> Option<PngArchive> {
        let entry = self.session.entries().get(entry_index)?;
        let EntryBody::Compaction(compaction) = &entry.body else {
            return None;
        };
        let preserve = compaction.preserve_data.as_ref()?.to_value();
        PngArchive::from_value(preserve.get(PRESERVE_KEY)?)
    }
}

impl ArchiveBlocks for SessionArchives<'_> {
    fn blocks(&self, entry_index: usize) -> Option<Vec<ContentBlock>> {
        let archive = self.archive(entry_index)?;
        let budget = if is_legacy_crash_risk(&archive) {
            0
        } else {
            self.budget
        };
        Some(history_blocks(&archive, budget))
    }
}

/// The context's tokens at `leaf`, with the session's archives: the one
/// size of what the model sees that every command shows
/// ([`musepi_context_builder::context_tokens`]; docs/design.md, "The
/// context's tokens").
pub fn context_tokens(session: &Session, leaf: Option<usize>, tokenizer: Tokenizer) -> u64 {
    musepi_context_builder::context_tokens(
        session,
        leaf,
        Some(&SessionArchives::new(session)),
        tokenizer,
    )
}

/// What the compaction trigger compares at `leaf`, with the session's
/// archives ([`musepi_context_builder::measured_tokens`]).
pub fn measured_tokens(session: &Session, leaf: Option<usize>) -> ContextEstimate {
    musepi_context_builder::measured_tokens(session, leaf, Some(&SessionArchives::new(session)))
}

/// Whether a stored archive is one of the legacy archives that could crash
/// a request: its frames carry no shape metadata, it is large
/// (16 frames or more, or 3,000,000 base64 bytes or more), and it is long
/// (16 frames or more, 1,000,000 dropped characters or more, or 250,000
/// archived characters or more). Such an archive keeps its text but sends
/// no image.
pub fn is_legacy_crash_risk(archive: &PngArchive) -> bool {
    let frames = &archive.frames;
    let legacy = !frames.is_empty()
        && frames
            .iter()
            .all(|f| f.font.is_none() && f.variant.is_none() && f.shape.is_none());
    let bytes: usize = frames.iter().map(|f| f.data.len()).sum();
    let large = frames.len() >= LEGACY_FRAMES || bytes >= LEGACY_FRAME_BYTES;
    let long = frames.len() >= LEGACY_FRAMES
        || archive.truncated_chars >= LEGACY_TRUNCATED_CHARS
        || archive.total_chars >= LEGACY_ARCHIVE_CHARS;
    legacy && large && long
}

/// The previous summary an LLM summary that takes over from a compaction
/// should read: its `summary`, with the whole transcript of its PNG archive
/// (in `preserve_data`) after it when the frames carried the history
/// instead of the summary's text (an older PNG archive's summary holds a
/// salience history of its own); `None` when nothing needs adding.
pub fn summary_with_frames_history(
    summary: &str,
    preserve_data: &serde_json::Value,
) -> Option<String> {
    let png = preserve_data
        .get(PRESERVE_KEY)
        .and_then(PngArchive::from_value)?;
    if png.frames.is_empty() {
        return None;
    }
    let history = summary.split_once(HISTORY_MARK).map(|(_, h)| h);
    if history.is_some_and(crate::text::is_salience_text) {
        return None;
    }
    let text = archive_plain_source(&png);
    Some(if summary.trim().is_empty() {
        text
    } else {
        format!("{}\n\n{text}", summary.trim_end())
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::png::ArchiveFrame;

    fn frame(data: &str, shaped: bool) -> ArchiveFrame {
        let mut v =
            json!({"data": data, "mimeType": "image/png", "cols": 1, "rows": 1, "chars": 1});
        if shaped {
            v["font"] = json!("8x13");
            v["variant"] = json!("bw");
        }
        ArchiveFrame::from_value(&v).unwrap_or_else(|| panic!("{v}"))
    }

    fn archive(frames: Vec<ArchiveFrame>, truncated: u64, total: u64) -> PngArchive {
        PngArchive {
            frames,
            total_chars: total,
            truncated_chars: truncated,
            text_head: Some("head".into()),
            ..PngArchive::default()
        }
    }

    #[test]
    fn legacy_risk_needs_no_metadata_size_and_length() {
        let many = |shaped| (0..16).map(|_| frame("AAAA", shaped)).collect::<Vec<_>>();
        assert!(is_legacy_crash_risk(&archive(many(false), 0, 0)));
        assert!(!is_legacy_crash_risk(&archive(many(true), 0, 0)));
        let big = vec![frame(&"A".repeat(3_000_000), false)];
        assert!(!is_legacy_crash_risk(&archive(big.clone(), 0, 0)));
        assert!(is_legacy_crash_risk(&archive(big.clone(), 1_000_000, 0)));
        assert!(is_legacy_crash_risk(&archive(big.clone(), 0, 250_000)));
        assert!(!is_legacy_crash_risk(&archive(
            vec![frame("AAAA", false)],
            2_000_000,
            300_000
        )));
        assert!(!is_legacy_crash_risk(&archive(Vec::new(), 2_000_000, 0)));
    }
}
