//! The text-frame archive (SPEC §15): the archived history stays text, cut
//! into fixed-size pages between two verbatim edges, with the oldest middle
//! dropped first when the budget runs out. It works with every model.

use std::collections::BTreeSet;
use std::ops::Range;

use musepi_context_builder::LlmMessage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::files::FileLists;
use crate::serialize::{SerializeOptions, serialize_text};
use crate::util::{ceil_div4, head_units, js_round, len16, tail_units, thousands};

/// Characters per text frame (about 1,500 tokens).
pub const FRAME_CHAR_CAPACITY: usize = 6000;
/// Default total archive budget: edges plus middle.
pub const DEFAULT_ARCHIVE_MAX_CHARS: usize = 40_000;
/// Version of the persisted [`SnapArchiveState`].
pub const SNAP_ARCHIVE_VERSION: u32 = 1;
/// Share of the reserve that the host gives the archive.
pub const ARCHIVE_BUDGET_RATIO: f64 = 0.6;
/// The smallest archive budget the host asks for.
pub const MIN_HOST_ARCHIVE_CHARS: usize = 8000;

/// `ceil(chars / 4)`: the token estimate of the text port.
pub fn estimate_tokens_from_chars(chars: usize) -> usize {
    ceil_div4(chars)
}

/// The host's archive budget for a reserve (SPEC §15.6):
/// `max(8000, round(reserve_tokens × 4 × 0.6))`.
pub fn archive_max_chars_for_reserve(reserve_tokens: u64) -> usize {
    let chars = js_round(reserve_tokens as f64 * 4.0 * ARCHIVE_BUDGET_RATIO) as usize;
    chars.max(MIN_HOST_ARCHIVE_CHARS)
}

/// One page of the archived middle (metadata only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SnapFrame {
    /// Position, from 0, oldest first.
    pub index: usize,
    /// UTF-16 units on the page.
    pub chars: usize,
}

/// Where the text of an archive goes (SPEC §15.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextLayout {
    /// The oldest edge, verbatim.
    pub text_head: String,
    /// The newest edge, verbatim.
    pub text_tail: String,
    /// The kept middle, paged into [`TextLayout::frames`].
    pub middle: String,
    /// The pages of the middle.
    pub frames: Vec<SnapFrame>,
    /// UTF-16 units dropped from the oldest end of the middle.
    pub truncated_chars: usize,
    /// `text_head + middle + text_tail`: the next archive's source.
    pub kept_text: String,
    pages: Vec<Range<usize>>,
}

impl TextLayout {
    /// The text of page `index` of the middle.
    pub fn page(&self, index: usize) -> Option<&str> {
        self.pages
            .get(index)
            .and_then(|r| self.middle.get(r.clone()))
    }
}

/// Splits `text` into verbatim edges and a paged, budgeted middle
/// (`planArchive`, SPEC §15.4). Lengths are UTF-16 units; a cut never
/// splits a surrogate pair (a pair at the drop point is dropped whole).
pub fn plan_archive(text: &str, archive_max_chars: usize) -> TextLayout {
    let budget = archive_max_chars.max(2 * FRAME_CHAR_CAPACITY);
    let edge = FRAME_CHAR_CAPACITY.min(budget / 4);
    if len16(text) <= 2 * edge {
        return TextLayout {
            text_head: text.to_owned(),
            text_tail: String::new(),
            middle: String::new(),
            frames: Vec::new(),
            truncated_chars: 0,
            kept_text: text.to_owned(),
            pages: Vec::new(),
        };
    }
    let head = head_units(text, edge);
    let tail = tail_units(text, edge);
    let full_middle = &text[head.len()..text.len() - tail.len()];
    let middle_budget = budget - 2 * edge;
    let middle = tail_units(full_middle, middle_budget);
    let truncated_chars = len16(full_middle) - len16(middle);
    let mut pages = Vec::new();
    let mut frames = Vec::new();
    let mut at = 0;
    while at < middle.len() {
        let page = head_units(&middle[at..], FRAME_CHAR_CAPACITY);
        // A page always holds at least one character (capacity ≥ 2 units).
        let page_len = page
            .len()
            .max(middle[at..].chars().next().map_or(1, char::len_utf8));
        frames.push(SnapFrame {
            index: frames.len(),
            chars: len16(&middle[at..at + page_len]),
        });
        pages.push(at..at + page_len);
        at += page_len;
    }
    TextLayout {
        text_head: head.to_owned(),
        text_tail: tail.to_owned(),
        middle: middle.to_owned(),
        frames,
        truncated_chars,
        kept_text: format!("{head}{middle}{tail}"),
        pages,
    }
}

/// The persisted text archive (`details.snapcompact`, SPEC §15.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapArchiveState {
    /// The kept archive source, oldest first.
    pub text: String,
    /// UTF-16 units dropped so far, over every compaction.
    pub truncated_chars: u64,
    /// [`SNAP_ARCHIVE_VERSION`].
    pub version: u32,
}

impl SnapArchiveState {
    /// Reads a stored archive the way `findPreviousArchive` accepts it: a
    /// string `text` and a numeric `truncatedChars`; otherwise none.
    pub fn from_value(value: &Value) -> Option<Self> {
        let text = value.get("text")?.as_str()?.to_owned();
        let truncated = value.get("truncatedChars")?.as_f64()?;
        let version = value
            .get("version")
            .and_then(Value::as_f64)
            .map_or(SNAP_ARCHIVE_VERSION, |v| v.max(0.0) as u32);
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
}

/// What [`snap_compact`] archives.
#[derive(Debug, Clone)]
pub struct SnapInput<'a> {
    /// The messages leaving the context, converted for a provider.
    pub messages: &'a [LlmMessage],
    /// Call ids whose results were flagged useless (see
    /// [`crate::serialize::useless_call_ids`]).
    pub useless: &'a BTreeSet<String>,
    /// The previous compaction's summary, when it was an LLM summary.
    pub previous_summary: Option<&'a str>,
    /// The previous compaction's text archive, when there is one.
    pub previous_archive: Option<&'a SnapArchiveState>,
    /// Files read and modified.
    pub files: &'a FileLists,
    /// Total archive budget in UTF-16 units (default 40,000).
    pub archive_max_chars: usize,
    /// Serialization budgets.
    pub serialize: SerializeOptions,
    /// The context's tokens before the compaction, which the lead-in names
    /// (a compaction passes its `tokensBefore`); `None` names the
    /// estimate of the archived history instead.
    pub tokens_before: Option<u64>,
}

static NO_IDS: BTreeSet<String> = BTreeSet::new();

impl<'a> SnapInput<'a> {
    /// An input with no previous summary or archive, no useless results and
    /// the default budgets.
    pub fn new(messages: &'a [LlmMessage], files: &'a FileLists) -> Self {
        Self {
            messages,
            useless: &NO_IDS,
            previous_summary: None,
            previous_archive: None,
            files,
            archive_max_chars: DEFAULT_ARCHIVE_MAX_CHARS,
            serialize: SerializeOptions::default(),
            tokens_before: None,
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
    /// The pages of the archived middle.
    pub frames: Vec<SnapFrame>,
    /// UTF-16 length of the archive region of the summary.
    pub archive_chars: usize,
    /// Files read and not modified (for `details.readFiles`).
    pub read_files: Vec<String>,
    /// Files modified (for `details.modifiedFiles`).
    pub modified_files: Vec<String>,
}

/// The text-frame compaction (`snapCompact`, SPEC §15.5): a pure function
/// of its input.
pub fn snap_compact(input: &SnapInput<'_>) -> SnapResult {
    let serialized = serialize_text(input.messages, input.useless, &input.serialize);
    let previous_text = match (input.previous_archive, input.previous_summary) {
        (Some(archive), _) => archive.text.as_str(),
        (None, Some(summary)) => summary,
        (None, None) => "",
    };
    let source = if previous_text.is_empty() {
        serialized
    } else {
        format!("{previous_text}\n\n{serialized}")
    };
    let layout = plan_archive(&source, input.archive_max_chars);
    let truncated_chars = input
        .previous_archive
        .map_or(0, |a| a.truncated_chars)
        .saturating_add(layout.truncated_chars as u64);
    let region = archive_region(&layout, truncated_chars);
    let archive_chars = len16(&region);
    let lead_in = crate::prompts::render(
        &crate::prompts::TEXT_LEAD_IN,
        &[
            (
                "tokens_before",
                &thousands(
                    input
                        .tokens_before
                        .unwrap_or(estimate_tokens_from_chars(len16(&source)) as u64),
                ),
            ),
            (
                "tokens_kept",
                &thousands(estimate_tokens_from_chars(archive_chars) as u64),
            ),
        ],
    );
    let files = input.files.section();
    let summary = [
        lead_in.as_str(),
        crate::prompts::TEXT_READING_GUIDE.text(),
        region.as_str(),
        files.as_str(),
    ]
    .into_iter()
    .filter(|s| !s.is_empty())
    .collect::<Vec<_>>()
    .join("\n\n");
    let short_summary = if layout.frames.is_empty() {
        format!(
            "archived {} tokens verbatim (no paging needed)",
            estimate_tokens_from_chars(len16(&source))
        )
    } else if truncated_chars > 0 {
        format!(
            "archived history into {} text frames, elided {truncated_chars} oldest chars",
            layout.frames.len()
        )
    } else {
        format!("archived history into {} text frames", layout.frames.len())
    };
    SnapResult {
        summary,
        short_summary,
        archive: SnapArchiveState {
            text: layout.kept_text.clone(),
            truncated_chars,
            version: SNAP_ARCHIVE_VERSION,
        },
        frames: layout.frames.clone(),
        archive_chars,
        read_files: input.files.read_files().to_vec(),
        modified_files: input.files.modified_files().to_vec(),
    }
}

/// The archive region of the summary (SPEC §15.5 step 6).
fn archive_region(layout: &TextLayout, truncated_chars: u64) -> String {
    if layout.frames.is_empty() {
        return layout.kept_text.clone();
    }
    let mut parts: Vec<String> = vec![layout.text_head.clone()];
    if truncated_chars > 0 {
        parts.push(format!(
            "-------------- […{} chars of oldest history elided…] --------------",
            thousands(truncated_chars)
        ));
    }
    let total = layout.frames.len();
    for frame in &layout.frames {
        let page = layout.page(frame.index).unwrap_or_default();
        parts.push(format!(
            "-------------- [archive {}/{total}] --------------\n{page}",
            frame.index + 1
        ));
    }
    parts.push(layout.text_tail.clone());
    parts.retain(|p| !p.is_empty());
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use musepi_session_model::{ContentBlock, JsonValue, Text, ToolCall};
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn assistant(content: Vec<ContentBlock>) -> LlmMessage {
        LlmMessage::Assistant {
            content,
            provider: None,
            model: None,
            stop_reason: None,
        }
    }

    fn call(id: &str, name: &str, args: Value) -> ContentBlock {
        ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: Text::new(name),
            arguments: JsonValue::new(args),
            intent: None,
        })
    }

    fn result(id: &str, text: &str, is_error: bool) -> LlmMessage {
        LlmMessage::ToolResult {
            tool_call_id: id.into(),
            tool_name: "tool".into(),
            content: vec![ContentBlock::text(text)],
            is_error,
        }
    }

    fn compact(messages: &[LlmMessage], budget: usize) -> SnapResult {
        let files = FileLists::default();
        let mut input = SnapInput::new(messages, &files);
        input.archive_max_chars = budget;
        snap_compact(&input)
    }

    #[test]
    fn nothing_to_archive_still_gives_the_lead_in_and_guide() {
        let out = compact(&[], DEFAULT_ARCHIVE_MAX_CHARS);
        assert!(out.summary.starts_with("Resume the prior conversation"));
        assert!(
            out.summary
                .ends_with(crate::prompts::TEXT_READING_GUIDE.text())
        );
        assert_eq!(
            out.short_summary,
            "archived 0 tokens verbatim (no paging needed)"
        );
        assert_eq!((out.archive.text.as_str(), out.archive_chars), ("", 0));
    }

    #[test]
    fn token_estimate_rounds_up() {
        assert_eq!(estimate_tokens_from_chars(100), 25);
        assert_eq!(estimate_tokens_from_chars(101), 26);
        assert_eq!(estimate_tokens_from_chars(0), 0);
    }

    #[test]
    fn host_budget_follows_the_reserve() {
        assert_eq!(archive_max_chars_for_reserve(16_384), 39_322);
        assert_eq!(archive_max_chars_for_reserve(16_000), 38_400);
        assert_eq!(archive_max_chars_for_reserve(100), 8000);
    }

    #[test]
    fn short_history_needs_no_pages() {
        let layout = plan_archive("short history", DEFAULT_ARCHIVE_MAX_CHARS);
        assert_eq!(layout.text_head, "short history");
        assert_eq!(layout.middle, "");
        assert!(layout.frames.is_empty());
        assert_eq!(layout.truncated_chars, 0);
        assert_eq!(layout.kept_text, "short history");
    }

    #[test]
    fn middle_is_paged_between_verbatim_edges() {
        let text = format!(
            "{}{}{}",
            "H".repeat(100),
            "M".repeat(18_000),
            "T".repeat(100)
        );
        let layout = plan_archive(&text, 24_000);
        assert_eq!(
            layout.text_head,
            format!("{}{}", "H".repeat(100), "M".repeat(5900))
        );
        assert!(layout.text_tail.ends_with(&"T".repeat(100)));
        assert_eq!(layout.text_tail.len(), 6000);
        assert_eq!(layout.middle.len(), 6200);
        assert_eq!(
            layout.frames,
            [
                SnapFrame {
                    index: 0,
                    chars: 6000
                },
                SnapFrame {
                    index: 1,
                    chars: 200
                }
            ]
        );
        assert_eq!(layout.truncated_chars, 0);
        assert_eq!(layout.kept_text, text);
    }

    #[test]
    fn oldest_middle_is_dropped_over_budget() {
        let text = format!("OLDEST_PART{}", "x".repeat(60_000));
        let layout = plan_archive(&text, 24_000);
        assert_eq!(layout.kept_text.len(), 24_000);
        assert_eq!(layout.truncated_chars, 36_011);
        assert!(layout.kept_text.starts_with("OLDEST_PART"));
        assert!(layout.kept_text.ends_with('x'));
        assert_eq!(layout.frames.len(), 2);
    }

    #[test]
    fn fidelity_keeps_the_path_the_failure_and_the_open_task() {
        let path = "packages/musepi/core/src/snapcompact/engine.ts";
        let failing = format!(
            "{}FAIL test/snapcompact.test.ts\nError: expected 3 frames, got 2",
            "pass\n".repeat(5000)
        );
        let messages = [
            LlmMessage::user_text(format!("Please fix the frame count in {path}.")),
            assistant(vec![
                ContentBlock::text("Running the tests first."),
                call("c1", "bash", json!({"command": "npm test"})),
            ]),
            result("c1", &failing, true),
            LlmMessage::user_text("The migration task is still unfinished."),
        ];
        let out = compact(&messages, 12_000);
        assert!(out.summary.contains(path));
        assert!(out.summary.contains("Error: expected 3 frames, got 2"));
        assert!(
            out.summary
                .contains("The migration task is still unfinished.")
        );
        assert!(out.summary.contains("Reading guide"));
        assert!(out.summary.contains("Resume the prior conversation"));
        assert_eq!(out.archive.truncated_chars, 0);
        assert_eq!(out.archive.version, 1);
        assert!(
            out.short_summary.starts_with("archived ")
                && out
                    .short_summary
                    .ends_with(" tokens verbatim (no paging needed)")
        );
    }

    #[test]
    fn files_section_and_lists_come_from_the_file_ops() {
        let files = FileLists::from_ops(
            ["src/a.ts", "src/b.ts", "https://example.com/doc"],
            ["src/b.ts"],
            ["src/c.ts"],
        );
        let messages = [LlmMessage::user_text("edit some files")];
        let out = snap_compact(&SnapInput::new(&messages, &files));
        assert!(
            out.summary
                .ends_with("<files>\nsrc/a.ts (Read)\nsrc/b.ts (RW)\nsrc/c.ts (Write)\n</files>")
        );
        assert!(!out.summary.contains("example.com"));
        assert_eq!(out.read_files, ["src/a.ts"]);
        assert_eq!(out.modified_files, ["src/b.ts", "src/c.ts"]);
    }

    #[test]
    fn previous_llm_summary_is_folded_in_at_the_head() {
        let files = FileLists::default();
        let messages = [LlmMessage::user_text("recent work")];
        let mut input = SnapInput::new(&messages, &files);
        input.previous_summary = Some("Earlier we built the LSP module.");
        let out = snap_compact(&input);
        let earlier = out
            .summary
            .find("Earlier we built the LSP module.")
            .unwrap_or(usize::MAX);
        let recent = out.summary.find("recent work").unwrap_or(0);
        assert!(earlier < recent, "{}", out.summary);
        assert_eq!(
            out.archive.text,
            "Earlier we built the LSP module.\n\n¶user:recent work"
        );
    }

    #[test]
    fn recompaction_accumulates_and_stays_in_budget() {
        let first_messages = [LlmMessage::user_text(format!(
            "phase one: {}",
            "x".repeat(30_000)
        ))];
        let first = compact(&first_messages, 24_000);
        let files = FileLists::default();
        let second_messages = [LlmMessage::user_text("phase two")];
        let mut input = SnapInput::new(&second_messages, &files);
        input.archive_max_chars = 24_000;
        input.previous_archive = Some(&first.archive);
        let second = snap_compact(&input);
        assert!(second.summary.contains("phase two"));
        assert!(second.archive.truncated_chars >= first.archive.truncated_chars);
        assert!(second.archive.text.matches("phase one").count() <= 1);
        assert!(len16(&second.archive.text) <= 24_000);
        assert!(second.archive.text.starts_with(&first.archive.text[..60]));
        assert!(
            second
                .summary
                .contains("chars of oldest history elided…] --------------")
        );
        assert!(
            second
                .summary
                .contains("-------------- [archive 1/2] --------------\n")
        );
        assert_eq!(
            second.short_summary,
            format!(
                "archived history into 2 text frames, elided {} oldest chars",
                second.archive.truncated_chars
            )
        );
    }

    #[test]
    fn previous_archive_wins_over_a_previous_summary() {
        let files = FileLists::default();
        let messages = [LlmMessage::user_text("new")];
        let archive = SnapArchiveState {
            text: "ARCHIVED".into(),
            truncated_chars: 42,
            version: 1,
        };
        let mut input = SnapInput::new(&messages, &files);
        input.previous_summary = Some("LLM SUMMARY");
        input.previous_archive = Some(&archive);
        let out = snap_compact(&input);
        assert_eq!(out.archive.text, "ARCHIVED\n\n¶user:new");
        assert_eq!(out.archive.truncated_chars, 42);
        assert!(!out.summary.contains("LLM SUMMARY"));
    }

    #[test]
    fn the_same_input_gives_the_same_summary() {
        let messages = [LlmMessage::user_text("abc ".repeat(20_000))];
        assert_eq!(compact(&messages, 24_000), compact(&messages, 24_000));
    }

    #[test]
    fn stored_state_round_trips_and_is_validated_on_read() {
        let state = SnapArchiveState {
            text: "ARCHIVED SOURCE".into(),
            truncated_chars: 42,
            version: 1,
        };
        let value = serde_json::to_value(&state).unwrap_or_default();
        assert_eq!(
            value,
            json!({"text": "ARCHIVED SOURCE", "truncatedChars": 42, "version": 1})
        );
        assert_eq!(SnapArchiveState::from_value(&value), Some(state));
        assert_eq!(
            SnapArchiveState::from_value(&json!({"text": 1, "truncatedChars": 0})),
            None
        );
        assert_eq!(SnapArchiveState::from_value(&json!({"text": "t"})), None);
        assert_eq!(
            SnapArchiveState::from_value(&json!({"text": "t", "truncatedChars": 7.0})),
            Some(SnapArchiveState {
                text: "t".into(),
                truncated_chars: 7,
                version: 1
            })
        );
    }

    fn history() -> impl Strategy<Value = String> {
        ("[a-z😀é\n ]{1,30}", 0usize..4000, ".{0,20}")
            .prop_map(|(unit, times, suffix)| format!("{}{suffix}", unit.repeat(times)))
    }

    proptest! {
        #[test]
        fn text_archive_stays_in_budget_and_keeps_its_edges(text in history(), max in 0usize..60_000) {
            let layout = plan_archive(&text, max);
            let budget = max.max(2 * FRAME_CHAR_CAPACITY);
            prop_assert!(len16(&layout.kept_text) <= budget);
            prop_assert!(text.starts_with(&layout.text_head));
            prop_assert!(text.ends_with(&layout.text_tail));
            prop_assert!(layout.kept_text.starts_with(&layout.text_head));
            prop_assert!(layout.kept_text.ends_with(&layout.text_tail));
            prop_assert_eq!(layout.truncated_chars + len16(&layout.kept_text), len16(&text));
            let pages: String = (0..layout.frames.len()).filter_map(|i| layout.page(i)).collect();
            prop_assert_eq!(&pages, &layout.middle);
            prop_assert!(layout.frames.iter().all(|f| f.chars <= FRAME_CHAR_CAPACITY && f.chars > 0));
            let edge = FRAME_CHAR_CAPACITY.min(budget / 4);
            if len16(&text) > 2 * edge {
                // An edge is exactly `edge` units, or one less when a surrogate pair sits at the cut.
                prop_assert!(edge - len16(&layout.text_head) <= 1);
                prop_assert!(edge - len16(&layout.text_tail) <= 1);
            } else {
                prop_assert_eq!(&layout.kept_text, &text);
            }
        }
    }

    proptest! {
        #[test]
        fn snap_compact_archives_stay_in_budget_and_keep_the_newest_text(text in history(), max in 0usize..50_000) {
            let source = if text.is_empty() { String::new() } else { format!("¶user:{text}") };
            let out = compact(&[LlmMessage::user_text(text)], max);
            prop_assert!(len16(&out.archive.text) <= max.max(2 * FRAME_CHAR_CAPACITY));
            let edge = FRAME_CHAR_CAPACITY.min(max.max(2 * FRAME_CHAR_CAPACITY) / 4);
            let newest = tail_units(&source, edge.min(len16(&source)));
            prop_assert!(out.archive.text.ends_with(newest));
            prop_assert!(out.summary.contains(newest));
            prop_assert_eq!(out.archive.truncated_chars as usize + len16(&out.archive.text), len16(&source));
        }
    }
}
