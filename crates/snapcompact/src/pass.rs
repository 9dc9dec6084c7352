//! The compaction pass: the summarized history in, the content of a
//! compaction entry out, without a model.
//!
//! It knows nothing of how the history was chosen: the caller cuts the
//! session (for example with `musepi-compaction`'s preparation) and hands
//! over the messages to archive, their entries, the file lists and what
//! the previous compaction stored ([`PassInput`]).
//!
//! A reader that takes images (`vision`) gets the PNG-frame archive,
//! stored in `preserveData.snapcompact`; every other reader gets the text
//! archive, stored in `details.snapcompact`. Either one
//! continues the other: a later compaction re-archives from the previous
//! archive's text, whichever kind it was, and never carries old frames
//! forward.
//!
//! The entry is written with `fromExtension: false`. `MusePi` delivered its
//! text archive through a `session_before_compact` hook, so pi stored it as
//! extension-made and the next compaction ignored its file lists; we do
//! not reproduce that, so cumulative file tracking
//! keeps working across snapcompact compactions.

use std::collections::BTreeSet;

use musepi_context_builder::{ContextMessage, ConvertOptions, LlmMessage, convert_with_sources};
use musepi_session_model::Session;
use musepi_session_model::json::{js_delete, js_set};
use serde_json::{Map, Value};

use crate::SerializeOptions;
use crate::error::SnapError;
use crate::files::MarkedFiles;
use crate::png::archive_plain_source;
use crate::png::normalize;
use crate::png::{Flavor, serialize};
use crate::png::{HISTORY_MARK, frames_short_summary, frames_summary};
use crate::png::{MAX_FRAMES_DEFAULT, PRESERVE_KEY, archive_frame_cap};
use crate::png::{PngArchive, archive_record, compose_archive_source, plan_archive, render_frames};
use crate::png::{low_companion, resolve_shape};
use crate::sizing::{Sizing, history_tokens};
use crate::text::is_salience_text;
use crate::text::{SNAP_ARCHIVE_VERSION, SnapArchiveState, SnapInput, snap_compact};
use crate::util::len16;

/// The `preserveData` key of a provider-native remote compaction, which a
/// snapcompact compaction does not carry forward.
const REMOTE_KEY: &str = "openaiRemoteCompaction";

/// Who will read the archive.
///
/// [`SnapTarget::default`] is a reader nobody named (it gets the text
/// archive); [`SnapTarget::model`] names a model that reads text,
/// [`SnapTarget::images`] one that reads images; the public fields say the
/// rest (a shape, a frame cap):
///
/// ```
/// use musepi_snapcompact::SnapTarget;
///
/// let mut claude = SnapTarget::images("claude-sonnet-4-5", "anthropic-messages", "anthropic");
/// claude.max_frames = Some(3);
/// assert!(claude.wants_frames());
/// assert!(!SnapTarget::model("gpt-4o-mini").wants_frames());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SnapTarget {
    /// The wire API that carries the request (`anthropic-messages`, …): it
    /// decides how frames are billed.
    pub api: Option<String>,
    /// The model id: it picks the measured shape.
    pub model_id: Option<String>,
    /// The provider (`anthropic`, `openai`, …): it caps the frames by its
    /// image budget. With none, only the 80-frame cap applies.
    pub provider: Option<String>,
    /// Whether the model reads images. With `false`, or with no model id,
    /// the archive is text.
    pub vision: bool,
    /// A shape forced by the `snapcompact.shape` setting (`auto` is none).
    pub forced_shape: Option<String>,
    /// At most this many frames (never more than 80). By default the cap
    /// that keeps one request's frames within the 3,000,000-byte budget
    /// (17 frames), so every frame reaches the model.
    pub max_frames: Option<usize>,
}

impl SnapTarget {
    /// The model `model_id`, as a reader of text.
    pub fn model(model_id: impl Into<String>) -> Self {
        Self {
            model_id: Some(model_id.into()),
            ..Self::default()
        }
    }

    /// The model `model_id` of `provider`, over the wire API `api`, as a
    /// reader of images (PNG frames).
    pub fn images(model_id: &str, api: &str, provider: &str) -> Self {
        Self {
            api: Some(api.to_owned()),
            provider: Some(provider.to_owned()),
            vision: true,
            ..Self::model(model_id)
        }
    }

    /// Whether this reader gets PNG frames: it takes images and is named.
    pub fn wants_frames(&self) -> bool {
        self.vision && self.model_id.is_some()
    }
}

/// Budgets.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SnapSettings {
    /// Serialization budgets.
    pub serialize: SerializeOptions,
    /// `compaction.reserveTokens`: the summary takes at most what an LLM
    /// summary may ([`crate::sizing`]).
    pub reserve_tokens: u64,
    /// The reader's context window, when known: the summary takes at most
    /// an eighth of what the reserve leaves of it.
    pub context_window: Option<u64>,
}

impl Default for SnapSettings {
    fn default() -> Self {
        Self {
            serialize: SerializeOptions::default(),
            reserve_tokens: 16_384,
            context_window: None,
        }
    }
}

/// What the pass archives: the summarized (and turn-prefix) history and
/// what the previous compaction on the path stored.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PassInput<'a> {
    /// The messages to archive, converted as the summarizer converts them.
    pub messages: Vec<LlmMessage>,
    /// The session entry of each message (the markers name them).
    pub entry_ids: Vec<String>,
    /// Call ids whose results were flagged useless.
    pub useless: BTreeSet<String>,
    /// The files read and modified.
    pub files: MarkedFiles,
    /// The context's tokens before the compaction.
    pub tokens_before: u64,
    /// The previous compaction's `preserveData`.
    pub previous_preserve: Option<Value>,
    /// The previous compaction's `details`.
    pub previous_details: Option<Value>,
    /// The previous compaction's summary.
    pub previous_summary: Option<&'a str>,
}

impl PassInput<'_> {
    /// The input for `messages` and their `entry_ids`, with no file lists,
    /// no useless results and no previous compaction.
    pub fn new(messages: Vec<LlmMessage>, entry_ids: Vec<String>) -> Self {
        Self {
            messages,
            entry_ids,
            useless: BTreeSet::new(),
            files: MarkedFiles::default(),
            tokens_before: 0,
            previous_preserve: None,
            previous_details: None,
            previous_summary: None,
        }
    }

    /// The input for the context messages `context` of `session` (what a
    /// compaction summarizes, its turn prefix included): converted as the
    /// summarizer converts them, each named by its entry's id, with the
    /// results flagged useless collected before conversion drops the flag,
    /// and the file lists `files`. No previous compaction is set.
    pub fn from_context(
        context: &[ContextMessage<'_>],
        session: &Session,
        files: MarkedFiles,
    ) -> Self {
        let converted = convert_with_sources(context, &ConvertOptions::for_summary());
        let entries = session.entries();
        let entry_ids = converted
            .iter()
            .map(|c| {
                entries
                    .get(c.entry_index)
                    .map_or_else(String::new, |e| e.id.to_string())
            })
            .collect();
        let messages = converted.into_iter().map(|c| c.message).collect();
        let mut input = Self::new(messages, entry_ids);
        input.useless = crate::png::useless_call_ids(context.iter().map(|m| m.message.as_ref()));
        input.files = files;
        input
    }
}

/// The content of a compaction entry that the pass made.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Pass {
    /// The summary.
    pub summary: String,
    /// The short, UI-facing summary.
    pub short_summary: String,
    /// `details`: the file lists, and the text archive for a text reader.
    pub details: Value,
    /// `preserveData`: the PNG archive for an image reader, and what the
    /// previous compaction preserved that is carried forward.
    pub preserve_data: Option<Value>,
}

/// Archives `input` for `target`: the PNG-frame archive when the reader
/// takes images, the text-frame archive otherwise.
///
/// A pure function: the same input, target and settings always give the
/// same result, to the byte.
pub fn compact(
    input: &PassInput<'_>,
    target: &SnapTarget,
    settings: &SnapSettings,
) -> Result<Pass, SnapError> {
    let archived = Archived::new(input);
    if target.wants_frames() {
        png_compaction(&archived, target, settings)
    } else {
        Ok(text_compaction(&archived, settings))
    }
}

/// What both archives take from the input.
struct Archived<'p> {
    input: &'p PassInput<'p>,
    /// The previous compaction's `preserveData`, as an object.
    previous_preserve: Map<String, Value>,
    /// Its PNG archive, when valid.
    previous_png: Option<PngArchive>,
    /// Its text archive (`details.snapcompact`), when valid.
    previous_text: Option<SnapArchiveState>,
}

impl<'p> Archived<'p> {
    fn new(input: &'p PassInput<'p>) -> Self {
        let previous_preserve = match &input.previous_preserve {
            Some(Value::Object(map)) => map.clone(),
            _ => Map::new(),
        };
        let previous_png = previous_preserve
            .get(PRESERVE_KEY)
            .and_then(PngArchive::from_value);
        let previous_text = input
            .previous_details
            .as_ref()
            .and_then(|d| d.get(PRESERVE_KEY))
            .and_then(SnapArchiveState::from_value);
        Self {
            input,
            previous_preserve,
            previous_png,
            previous_text,
        }
    }

    /// `{readFiles, modifiedFiles}`.
    fn details(&self) -> Map<String, Value> {
        match self.input.files.lists.to_details() {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    /// The earlier archive a new one continues, as text: a text archive;
    /// else a PNG archive's salience history (under HISTORY in its
    /// summary), or, for an older PNG archive without one, its transcript.
    fn continued_archive(&self) -> Option<SnapArchiveState> {
        self.previous_text.clone().or_else(|| {
            self.previous_png.as_ref().map(|png| {
                let history = self
                    .input
                    .previous_summary
                    .and_then(|s| s.split_once(HISTORY_MARK))
                    .map(|(_, h)| h)
                    .filter(|h| is_salience_text(h));
                SnapArchiveState {
                    text: history.map_or_else(|| archive_plain_source(png), ToOwned::to_owned),
                    truncated_chars: png.truncated_chars,
                    version: if history.is_some() {
                        SNAP_ARCHIVE_VERSION
                    } else {
                        1
                    },
                }
            })
        })
    }

    fn snap_input<'s>(
        &'s self,
        continued: Option<&'s SnapArchiveState>,
        settings: &SnapSettings,
    ) -> SnapInput<'s> {
        let input = self.input;
        let summary = self.sizing(settings).summary_chars();
        SnapInput {
            messages: &input.messages,
            entry_ids: &input.entry_ids,
            useless: &input.useless,
            previous_summary: input.previous_summary,
            previous_archive: continued,
            files: &input.files,
            archive_max_chars: summary,
            summary_max_chars: Some(summary),
            serialize: settings.serialize.clone(),
            tokens_before: Some(input.tokens_before),
            branch: false,
        }
    }

    /// What the summary's size depends on: the reserve, the window, and
    /// the history it replaces (the messages, and what the previous
    /// compaction holds: its archive's text, or its summary).
    fn sizing(&self, settings: &SnapSettings) -> Sizing {
        let previous = self
            .continued_archive()
            .map(|a| len16(&a.text))
            .or_else(|| self.input.previous_summary.map(len16))
            .map_or(0, |chars| chars.div_ceil(4) as u64);
        Sizing {
            reserve_tokens: settings.reserve_tokens,
            context_window: settings.context_window,
            history_tokens: history_tokens(&self.input.messages) + previous,
        }
    }

    /// The previous `preserveData` without the remote replay and without
    /// `drop` keys.
    fn carried_preserve(&self, drop: &[&str]) -> Map<String, Value> {
        let mut map = self.previous_preserve.clone();
        js_delete(&mut map, REMOTE_KEY);
        for key in drop {
            js_delete(&mut map, key);
        }
        map
    }
}

/// The text-frame archive.
fn text_compaction(input: &Archived<'_>, settings: &SnapSettings) -> Pass {
    text_archive(input, settings).0
}

/// The text-frame archive, and the facts it shows.
fn text_archive(input: &Archived<'_>, settings: &SnapSettings) -> (Pass, Vec<String>) {
    let continued = input.continued_archive();
    let snap = input.snap_input(continued.as_ref(), settings);
    let out = snap_compact(&snap);
    let mut details = input.details();
    let archive = serde_json::to_value(&out.archive).unwrap_or(Value::Null);
    js_set(&mut details, PRESERVE_KEY, archive);
    let preserve = input.carried_preserve(&[PRESERVE_KEY]);
    let pass = Pass {
        summary: out.summary,
        short_summary: out.short_summary,
        details: Value::Object(details),
        preserve_data: (!preserve.is_empty()).then_some(Value::Object(preserve)),
    };
    (pass, out.facts)
}

/// `text`, a text archive written for a reader of images, with what the
/// frames would have cost and whether they would have kept all the text
/// archive keeps (`details.snapcompact.framesConsidered`:
/// `{frames, tokens, keepsAll}`).
fn with_frames_considered(mut text: Pass, tokens: u64, frames: usize, keeps_all: bool) -> Pass {
    if let Some(archive) = text
        .details
        .get_mut(PRESERVE_KEY)
        .and_then(Value::as_object_mut)
    {
        js_set(
            archive,
            "framesConsidered",
            serde_json::json!({"frames": frames, "tokens": tokens, "keepsAll": keeps_all}),
        );
    }
    text
}

/// The PNG-frame archive.
fn png_compaction(
    input: &Archived<'_>,
    target: &SnapTarget,
    settings: &SnapSettings,
) -> Result<Pass, SnapError> {
    let resolved = resolve_shape(
        target.api.as_deref().unwrap_or_default(),
        target.model_id.as_deref().unwrap_or_default(),
        target.forced_shape.as_deref(),
    )?;
    let high = resolved.shape;
    let low = low_companion(&high);
    let provider_cap = target
        .provider
        .as_deref()
        .map_or(MAX_FRAMES_DEFAULT, archive_frame_cap);
    let max_frames = target
        .max_frames
        .unwrap_or(crate::png::max_frames_for_data_budget())
        .min(MAX_FRAMES_DEFAULT)
        .min(provider_cap)
        .max(1);

    let serialized = normalize(&serialize(
        Flavor::Archive,
        &input.input.messages,
        &input.input.useless,
        &settings.serialize,
    ));
    // A PNG archive wins; else a text archive continues as normalized
    // source, with its dropped count; else the previous LLM summary is
    // folded in as a digest.
    let previous = input.previous_png.clone().or_else(|| {
        input.previous_text.as_ref().map(|text| PngArchive {
            text: Some(normalize(&text.text)).filter(|t| !t.is_empty()),
            truncated_chars: text.truncated_chars,
            ..PngArchive::default()
        })
    });
    let source = compose_archive_source(
        &serialized,
        previous.as_ref(),
        input.input.previous_summary,
        settings.serialize.include_thinking,
    );
    let layout = plan_archive(&source.text, &high, low.as_ref(), max_frames)?;
    // The frames carry the history instead of the text, so they are
    // written only when they keep at least what the text archive keeps
    // (every page shown, since a transcript with its oldest pages dropped
    // keeps less, and every fact the text archive shows printed in it: the
    // transcript cuts long tool output) for fewer tokens than the text
    // archive costs; otherwise, and always when the history fits the two
    // edges, the reader gets the text archive.
    let (text, facts) = text_archive(input, settings);
    if layout.pages.is_empty() {
        return Ok(text);
    }
    let keeps_all = layout.truncated_chars == 0
        && facts
            .iter()
            .all(|f| layout.kept_text.contains(normalize(f).as_str()));
    let previous_truncated = previous.as_ref().map_or(0, |p| p.truncated_chars);
    let unprinted = archive_record(&layout, Vec::new(), previous_truncated);
    let summary = frames_summary(
        &layout,
        &unprinted,
        &input.input.files,
        source.included_previous_summary,
    );
    let family = crate::png::reader_billing_family(
        target.api.as_deref(),
        target.model_id.as_deref().unwrap_or_default(),
    );
    let frame_tokens: u64 = layout
        .pages
        .iter()
        .map(|p| u64::from(family.frame_tokens(p.shape.frame_size)))
        .sum();
    let png_tokens = (len16(&summary) + len16(&layout.text_head) + len16(&layout.text_tail))
        .div_ceil(4) as u64
        + frame_tokens;
    let text_tokens = len16(&text.summary).div_ceil(4) as u64;
    if !keeps_all || png_tokens >= text_tokens {
        return Ok(with_frames_considered(
            text,
            png_tokens,
            layout.pages.len(),
            keeps_all,
        ));
    }
    let frames = render_frames(&layout, resolved.detail)?;
    let archive = archive_record(&layout, frames, previous_truncated);
    let short_summary = frames_short_summary(&layout, &archive);
    let mut preserve = input.carried_preserve(&[]);
    js_set(
        &mut preserve,
        PRESERVE_KEY,
        serde_json::to_value(&archive).unwrap_or(Value::Null),
    );
    Ok(Pass {
        summary,
        short_summary,
        details: Value::Object(input.details()),
        preserve_data: Some(Value::Object(preserve)),
    })
}
