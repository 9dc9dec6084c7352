//! The text archive for every model: the archived history as a salience
//! archive ([`crate::text::salience`]) in the summary, after a lead-in and a
//! reading guide that says what was shortened and where to find it, and
//! before the list of every file read or changed.

use std::collections::BTreeSet;
use std::ops::Range;

use musepi_context_builder::{FileLists, LlmMessage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::SerializeOptions;
use crate::files::MarkedFiles;
use crate::text::salience::{Earlier, History, HistoryInput, Shortened, build_history};
use crate::util::{ceil_div4, head_units, len16, thousands};

/// Characters per page when the archive is shown page by page (about
/// 1,500 tokens).
pub(crate) const FRAME_CHAR_CAPACITY: usize = 6000;
/// Default archive budget (the file list comes on top, at most a quarter
/// of it).
pub(crate) const DEFAULT_ARCHIVE_MAX_CHARS: usize = 40_000;
/// The smallest archive budget.
pub(crate) const MIN_ARCHIVE_CHARS: usize = 2 * FRAME_CHAR_CAPACITY;
/// Version of the persisted [`SnapArchiveState`]: 2 is the salience
/// archive; 1 was a verbatim transcript cut between two edges.
pub const SNAP_ARCHIVE_VERSION: u32 = 2;
/// `ceil(chars / 4)`: the token estimate of the text archive.
pub(crate) fn estimate_tokens_from_chars(chars: usize) -> usize {
    ceil_div4(chars)
}

/// One page of an archive (metadata only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SnapFrame {
    /// Position, from 0, oldest first.
    pub index: usize,
    /// UTF-16 units on the page.
    pub chars: usize,
}

/// An archive text cut into pages of at most 6,000
/// units, each ending at a line end (or, for a longer line, at
/// whitespace), so no page break splits a line that fits on a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPages {
    /// The pages.
    pub frames: Vec<SnapFrame>,
    text: String,
    ranges: Vec<Range<usize>>,
}

impl TextPages {
    /// Pages `text`.
    pub fn new(text: &str) -> Self {
        let mut ranges = Vec::new();
        let mut start = 0usize;
        while start < text.len() {
            let rest = &text[start..];
            let head = head_units(rest, FRAME_CHAR_CAPACITY);
            let end = if head.len() == rest.len() {
                rest.len()
            } else if let Some(nl) = head.rfind('\n') {
                nl + 1
            } else if let Some(ws) = head.rfind(char::is_whitespace).filter(|&w| w > 0) {
                ws + 1
            } else {
                head.len()
                    .max(rest.chars().next().map_or(1, char::len_utf8))
            };
            ranges.push(start..start + end);
            start += end;
        }
        let frames = ranges
            .iter()
            .enumerate()
            .map(|(index, r)| SnapFrame {
                index,
                chars: len16(&text[r.clone()]),
            })
            .collect();
        Self {
            frames,
            text: text.to_owned(),
            ranges,
        }
    }

    /// The text of page `index`.
    pub fn page(&self, index: usize) -> Option<&str> {
        self.ranges
            .get(index)
            .and_then(|r| self.text.get(r.clone()))
    }
}

/// The persisted text archive (`details.snapcompact`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapArchiveState {
    /// The archive text: the salience archive (version 2), or the kept
    /// transcript (version 1).
    pub text: String,
    /// UTF-16 units of history not shown, over every compaction.
    pub truncated_chars: u64,
    /// [`SNAP_ARCHIVE_VERSION`] when written here.
    pub version: u32,
}

impl SnapArchiveState {
    /// Reads a stored archive: a string `text` and a numeric
    /// `truncatedChars`; otherwise none. A missing version is 1.
    pub fn from_value(value: &Value) -> Option<Self> {
        let text = value.get("text")?.as_str()?.to_owned();
        let truncated = value.get("truncatedChars")?.as_f64()?;
        let version = value
            .get("version")
            .and_then(Value::as_f64)
            .map_or(1, |v| v.max(0.0) as u32);
        Some(Self {
            text,
            truncated_chars: if truncated.is_finite() {
                truncated.max(0.0) as u64
            } else {
                0
            },
            version,
        })
    }

    /// The earlier history this archive holds, for the next compaction.
    pub fn earlier(&self) -> Earlier<'_> {
        Earlier::archived(&self.text)
    }
}

/// What [`snap_compact`] archives.
#[derive(Debug, Clone)]
pub struct SnapInput<'a> {
    /// The messages leaving the context, converted for a provider.
    pub messages: &'a [LlmMessage],
    /// The session entry of each message, for the markers that say where
    /// shortened text can be read in full (empty when unknown).
    pub entry_ids: &'a [String],
    /// Call ids whose results were flagged useless (see
    /// [`crate::png::useless_call_ids`]).
    pub useless: &'a BTreeSet<String>,
    /// The previous compaction's summary, when it was an LLM summary.
    pub previous_summary: Option<&'a str>,
    /// The previous compaction's text archive, when there is one.
    pub previous_archive: Option<&'a SnapArchiveState>,
    /// Files read and modified.
    pub files: &'a MarkedFiles,
    /// The archive's budget in UTF-16 units (default 40,000; at least
    /// 12,000), with the file list on top of it (at most a
    /// quarter of it again), when `summary_max_chars` is `None`.
    pub archive_max_chars: usize,
    /// The whole summary's budget in UTF-16 units (lead-in, reading guide,
    /// archive and file list, the file list at most a fifth of it), when
    /// given: it replaces `archive_max_chars` (see [`crate::sizing`]).
    pub summary_max_chars: Option<usize>,
    /// Budgets: the archive shows at most `tool_result_max_chars` of one
    /// tool output (its head and tail, split by `truncate_head_ratio`).
    pub serialize: SerializeOptions,
    /// The context's tokens before the compaction, which the lead-in names
    /// (a compaction passes its `tokensBefore`); `None` names the
    /// estimate of the archived history instead.
    pub tokens_before: Option<u64>,
    /// The archive is a branch digest: the history of a branch the user
    /// left, introduced as that, not as history to carry on from.
    pub branch: bool,
}

static NO_IDS: BTreeSet<String> = BTreeSet::new();

impl<'a> SnapInput<'a> {
    /// An input with no previous summary or archive, no entry ids, no
    /// useless results and the default budgets.
    pub fn new(messages: &'a [LlmMessage], files: &'a MarkedFiles) -> Self {
        Self {
            messages,
            entry_ids: &[],
            useless: &NO_IDS,
            previous_summary: None,
            previous_archive: None,
            files,
            archive_max_chars: DEFAULT_ARCHIVE_MAX_CHARS,
            summary_max_chars: None,
            serialize: SerializeOptions::default(),
            tokens_before: None,
            branch: false,
        }
    }
}

/// What [`snap_compact`] produced.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapResult {
    /// The compaction summary: lead-in, reading guide, archive, files.
    pub summary: String,
    /// One line for UIs.
    pub short_summary: String,
    /// The state to persist for the next compaction.
    pub archive: SnapArchiveState,
    /// The archive's pages, for showing it page by page.
    pub frames: Vec<SnapFrame>,
    /// UTF-16 length of the archive text.
    pub archive_chars: usize,
    /// Files read and not modified, and files modified (for
    /// `details.readFiles` and `details.modifiedFiles`).
    pub files: FileLists,
    /// The facts the archive shows: the sentences and output lines it
    /// ranked as facts and kept, as they read in the history.
    pub facts: Vec<String>,
}

/// The earlier history of an input: a previous archive wins over a
/// previous LLM summary.
fn earlier<'a>(input: &SnapInput<'a>) -> Earlier<'a> {
    match (input.previous_archive, input.previous_summary) {
        (Some(archive), _) => archive.earlier(),
        (None, Some(summary)) if !summary.trim().is_empty() => Earlier::Summary(summary),
        _ => Earlier::None,
    }
}

/// The history of `input` within `budget` UTF-16 units.
pub(crate) fn history_within(input: &SnapInput<'_>, budget: usize) -> History {
    build_history(&HistoryInput {
        messages: input.messages,
        entry_ids: input.entry_ids,
        useless: input.useless,
        earlier: earlier(input),
        budget,
        output_max_chars: input.serialize.tool_result_max_chars,
        output_head_ratio: input.serialize.truncate_head_ratio,
    })
}

/// What the lead-in and the reading guide are given before the archive is
/// built, when the whole summary has a budget; a guide that takes more
/// (large counts) has the archive built again that much smaller.
const GUIDE_ALLOWANCE: usize = 2_400;

/// The text compaction: a pure function of its input.
pub fn snap_compact(input: &SnapInput<'_>) -> SnapResult {
    let Some(total) = input.summary_max_chars else {
        let budget = input.archive_max_chars.max(MIN_ARCHIVE_CHARS);
        // The history gets the budget; the file list beside it shows every
        // file when it takes at most a quarter of that again.
        let (files, listed) = input.files.section_within(budget / 4);
        return text_summary(input, history_within(input, budget), &files, listed);
    };
    let (files, listed) = input.files.section_within(total / 5);
    let mut budget = history_budget(input);
    loop {
        let out = text_summary(input, history_within(input, budget), &files, listed);
        let over = len16(&out.summary).saturating_sub(total);
        if over == 0 || budget == 0 {
            return out;
        }
        // The guide's counts change with the archive, so the next build
        // may overshoot by a few characters again: a margin makes it fit
        // at the second build instead of after several, each of which
        // reads the whole history again.
        budget = budget.saturating_sub(over + RETRY_MARGIN);
    }
}

/// What a rebuilt archive gives up beyond the overshoot of the one before,
/// in UTF-16 units: about 64 tokens, so that the second build fits.
const RETRY_MARGIN: usize = 256;

/// The archive's budget: `archive_max_chars` (at least
/// [`MIN_ARCHIVE_CHARS`]), or, when the whole summary has one, what it
/// leaves beside the file list and the guide.
pub(crate) fn history_budget(input: &SnapInput<'_>) -> usize {
    match input.summary_max_chars {
        None => input.archive_max_chars.max(MIN_ARCHIVE_CHARS),
        Some(total) => {
            let (files, _) = input.files.section_within(total / 5);
            total.saturating_sub(len16(&files) + GUIDE_ALLOWANCE)
        }
    }
}

/// The summary of `history` with the file list `files` (`listed` of the
/// input's files).
fn text_summary(input: &SnapInput<'_>, history: History, files: &str, listed: usize) -> SnapResult {
    let source_chars = history.source_chars;
    let region = history.text;
    let archive_chars = len16(&region);
    let truncated_chars = input
        .previous_archive
        .map_or(0, |a| a.truncated_chars)
        .saturating_add(source_chars.saturating_sub(archive_chars) as u64);
    let lead_in = crate::prompts::render(
        if input.branch {
            &crate::prompts::TEXT_LEAD_IN_BRANCH
        } else {
            &crate::prompts::TEXT_LEAD_IN
        },
        &[
            (
                "tokens_before",
                &thousands(
                    input
                        .tokens_before
                        .unwrap_or(estimate_tokens_from_chars(source_chars) as u64),
                ),
            ),
            (
                "tokens_kept",
                &thousands(estimate_tokens_from_chars(archive_chars) as u64),
            ),
        ],
    );
    let guide = reading_guide(
        &history.shortened,
        source_chars,
        archive_chars,
        (listed, input.files.len()),
        &archived_span(input),
    );
    let summary = [lead_in.as_str(), guide.as_str(), region.as_str(), files]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    let short_summary = short_summary(&history.shortened, source_chars, archive_chars);
    SnapResult {
        summary,
        short_summary,
        frames: TextPages::new(&region).frames,
        archive: SnapArchiveState {
            text: region,
            truncated_chars,
            version: SNAP_ARCHIVE_VERSION,
        },
        archive_chars,
        files: input.files.lists.clone(),
        facts: history.facts,
    }
}

/// `archived N tokens verbatim`, or what the archive kept of how much.
fn short_summary(shortened: &Shortened, source_chars: usize, kept_chars: usize) -> String {
    let before = estimate_tokens_from_chars(source_chars);
    if shortened.is_nothing() {
        return format!("archived {before} tokens verbatim");
    }
    let kinds = shortened.counts();
    let total: usize = kinds.iter().map(|c| c.total).sum();
    let cut: usize = kinds.iter().map(|c| c.shortened + c.omitted).sum();
    format!(
        "archived {before} tokens into {} by salience ({cut} of {total} entries shortened or left out)",
        estimate_tokens_from_chars(kept_chars)
    )
}

/// Which entries the archive holds, for the reading guide: ` (entries A
/// to B)`, or ` (entries up to B)` when it continues an earlier archive or
/// summary, whose first entries this pass does not know; empty without ids.
fn archived_span(input: &SnapInput<'_>) -> String {
    let (Some(first), Some(last)) = (input.entry_ids.first(), input.entry_ids.last()) else {
        return String::new();
    };
    if input.previous_archive.is_some() || input.previous_summary.is_some() {
        format!(" (entries up to {last})")
    } else if first == last {
        format!(" (entry {last})")
    } else {
        format!(" (entries {first} to {last})")
    }
}

/// The reading guide: how to read the archive, exactly what was shortened,
/// and how to read it in full.
pub(crate) fn reading_guide(
    shortened: &Shortened,
    source_chars: usize,
    kept_chars: usize,
    (listed, all_files): (usize, usize),
    span: &str,
) -> String {
    use crate::prompts::{TEXT_GUIDE_COMPLETE, TEXT_GUIDE_SHORTENED, TEXT_READING_GUIDE, render};
    let n = |v: usize| thousands(v as u64);
    let what = if shortened.is_nothing() {
        render(&TEXT_GUIDE_COMPLETE, &[])
    } else {
        let s = shortened;
        // Each kind fills three placeholders: `KIND` (shortened),
        // `KIND_omitted` and `KIND_total`.
        let kinds = [
            ("users", s.user_messages),
            ("calls", s.calls),
            ("replies", s.replies),
            ("outputs", s.outputs),
        ];
        let mut values: Vec<(String, String)> = kinds
            .iter()
            .flat_map(|(kind, c)| {
                [
                    ((*kind).to_owned(), n(c.shortened)),
                    (format!("{kind}_omitted"), n(c.omitted)),
                    (format!("{kind}_total"), n(c.total)),
                ]
            })
            .collect();
        values.push((
            "left_out".to_owned(),
            n(source_chars.saturating_sub(kept_chars)),
        ));
        values.push(("total".to_owned(), n(source_chars)));
        let values: Vec<(&str, &str)> = values
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        render(&TEXT_GUIDE_SHORTENED, &values)
    };
    let files_note = if all_files > 0 && listed < all_files {
        format!(
            "\n{}",
            render(
                &crate::prompts::TEXT_GUIDE_FILES,
                &[("shown", &n(listed)), ("total", &n(all_files))]
            )
        )
    } else {
        String::new()
    };
    render(
        &TEXT_READING_GUIDE,
        &[("shortened", &what), ("files", &files_note), ("span", span)],
    )
}

#[cfg(test)]
mod tests;
