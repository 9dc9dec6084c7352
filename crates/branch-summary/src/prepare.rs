//! Fitting the abandoned entries into a token budget (docs/design.md,
//! "Branch summaries").

use std::borrow::Cow;
use std::collections::HashSet;

use musepi_context_builder::{
    ContextMessage, ConvertOptions, FileLists, FileOps, LlmMessage, TOOL_RESULT_MAX_CHARS,
    chars_to_tokens, convert_one, entry_message, entry_time, estimate_tokens,
    serialize_for_summary, truncate_for_summary,
};
use musepi_session_model::json::utf16_len;
use musepi_session_model::{
    AgentMessage, BranchSummaryMessage, CompactionSummaryMessage, Content, ContentBlock, EntryBody,
    Session, SummaryEntry,
};

use crate::error::BranchError;

/// The context window assumed when the model does not say (docs/design.md, "Branch summaries").
pub const FALLBACK_CONTEXT_WINDOW: u64 = 128_000;
/// The default `branchSummary.reserveTokens`.
pub const DEFAULT_RESERVE_TOKENS: u64 = 16_384;

/// The token budget of a branch summary's input (docs/design.md, "Branch summaries"):
/// `(context_window or 128000) - reserve_tokens`. A window of `None` or 0
/// means unknown. A reserve at least as large as the window gives 0, which
/// [`prepare_branch`] reads as "no limit", as the reference reads its
/// negative budget.
pub fn token_budget(context_window: Option<u64>, reserve_tokens: u64) -> u64 {
    context_window
        .filter(|&w| w > 0)
        .unwrap_or(FALLBACK_CONTEXT_WINDOW)
        .saturating_sub(reserve_tokens)
}

/// What happens to tool results in a branch summary's input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ToolResults {
    /// Leave every tool result out: what they did lives in the assistant's
    /// tool calls. The reference's behaviour (pi's code), which the
    /// conformance answers record.
    Skip,
    /// Keep them, counted as the summarizer will see them (cut at 2,000
    /// UTF-16 units; a result without text counts 0), and leave out useless
    /// results that are not errors, together with the calls that asked for
    /// them (docs/design.md, "Branch summaries" and "Pruning").
    #[default]
    Truncated,
}

/// How to prepare.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PrepareOptions {
    /// What happens to tool results.
    pub tool_results: ToolResults,
}

/// One message of a branch summary's input, with the tokens it was
/// budgeted at.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchItem<'a> {
    /// The message and the entry it came from.
    pub message: ContextMessage<'a>,
    /// Its estimate: [`estimate_tokens`], or for a kept tool result the
    /// estimate of its summarizer text.
    pub tokens: u64,
}

/// The input of a branch summary (`prepareBranchEntries`).
#[derive(Debug, Clone, PartialEq)]
pub struct BranchPreparation<'a> {
    /// The messages that fit, oldest first.
    pub items: Vec<BranchItem<'a>>,
    /// Files read and changed: the lists of earlier branch summaries made
    /// by pi or musepi, and the tool calls of every message the budget walk
    /// reached.
    pub file_ops: FileOps,
    /// The sum of the items' tokens; it can exceed the budget by one
    /// summary (see [`prepare_branch`]).
    pub total_tokens: u64,
    /// Ids of tool calls whose useless results were left out; the
    /// serialization leaves the calls out too.
    pub dropped_calls: Vec<String>,
}

impl<'a> BranchPreparation<'a> {
    /// Whether no message fits (the summary is then
    /// [`crate::NO_CONTENT`], without a model call).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The messages, oldest first.
    pub fn messages(&self) -> Vec<ContextMessage<'a>> {
        self.items.iter().map(|i| i.message.clone()).collect()
    }

    /// The persisted file lists: read-only files and modified files.
    pub fn file_lists(&self) -> FileLists {
        self.file_ops.lists()
    }

    /// The summarizer's view of the messages (docs/design.md, "Summaries").
    pub fn serialized(&self) -> String {
        let dropped: HashSet<&str> = self.dropped_calls.iter().map(String::as_str).collect();
        let messages: Vec<ContextMessage<'a>> = self
            .items
            .iter()
            .map(|i| without_calls(&i.message, &dropped))
            .collect();
        serialize_for_summary(&messages)
    }
}

/// The message an entry gives a branch summary (docs/design.md, "Branch summaries"): compactions as
/// their summary, every branch summary (even an empty one), custom
/// messages, and messages, with tool results as `tool_results` says.
/// Metadata gives none. The second value is the id of a tool call whose
/// useless result was left out.
fn branch_message(
    session: &Session,
    i: usize,
    tool_results: ToolResults,
) -> (Option<Cow<'_, AgentMessage>>, Option<String>) {
    let e = &session.entries()[i];
    let message = match &e.body {
        EntryBody::Compaction(c) => {
            Cow::Owned(AgentMessage::CompactionSummary(CompactionSummaryMessage {
                summary: c.summary.clone(),
                tokens_before: c.tokens_before,
                timestamp: entry_time(e),
                short_summary: c.short_summary.clone(),
                first_kept_entry_id: None,
            }))
        }
        EntryBody::BranchSummary(b) => {
            Cow::Owned(AgentMessage::BranchSummary(BranchSummaryMessage {
                summary: b.summary.clone(),
                from_id: b.from_id.clone(),
                timestamp: entry_time(e),
            }))
        }
        EntryBody::Message(m @ AgentMessage::ToolResult(t)) => match tool_results {
            ToolResults::Skip => return (None, None),
            ToolResults::Truncated if t.is_useless() => {
                return (None, Some(t.tool_call_id.clone()));
            }
            ToolResults::Truncated => Cow::Borrowed(m),
        },
        _ => match entry_message(e) {
            Some(m) => m,
            None => return (None, None),
        },
    };
    (Some(message), None)
}

/// The tokens a message is budgeted at.
fn budget_tokens(message: &ContextMessage<'_>, tool_results: ToolResults) -> u64 {
    match (message.message.as_ref(), tool_results) {
        (AgentMessage::ToolResult(_), ToolResults::Truncated) => {
            let text = match convert_one(message, &ConvertOptions::for_summary()) {
                Some(LlmMessage::ToolResult { content, .. }) => ContentBlock::joined_text(&content),
                _ => String::new(),
            };
            if text.is_empty() {
                0
            } else {
                chars_to_tokens(utf16_len(&truncate_for_summary(
                    &text,
                    TOOL_RESULT_MAX_CHARS,
                )))
            }
        }
        (m, _) => estimate_tokens(m),
    }
}

/// The message without the tool calls in `dropped`.
fn without_calls<'a>(m: &ContextMessage<'a>, dropped: &HashSet<&str>) -> ContextMessage<'a> {
    match m.message.as_ref() {
        AgentMessage::Assistant(a) if a.tool_calls().any(|c| dropped.contains(c.id.as_str())) => {
            let mut a = a.clone();
            if let Content::Blocks(blocks) = &mut a.content {
                blocks.retain(
                    |b| !matches!(b, ContentBlock::ToolCall(c) if dropped.contains(c.id.as_str())),
                );
            }
            ContextMessage {
                entry_index: m.entry_index,
                message: Cow::Owned(AgentMessage::Assistant(a)),
            }
        }
        _ => m.clone(),
    }
}

/// Fits the collected entries (positions, oldest first) into
/// `token_budget` (`prepareBranchEntries`, docs/design.md, "Branch summaries").
///
/// 1. The `details` lists of every collected `branch_summary` not made by
///    an extension (`fromHook`/`fromExtension`, docs/design.md, "The session file and its tree") join the
///    file operations, whatever the budget. Compaction details do not.
/// 2. Walking newest to oldest, each entry's message (see [`ToolResults`])
///    gives its file operations, fitting or not, and is taken while the
///    total stays within the budget. The first message that does not fit
///    ends the walk; if it is a compaction or branch summary and the total
///    is still below 90% of the budget, it is taken anyway.
///
/// A budget of 0 means no limit.
pub fn prepare_branch<'a>(
    session: &'a Session,
    entries: &[usize],
    token_budget: u64,
    options: &PrepareOptions,
) -> Result<BranchPreparation<'a>, BranchError> {
    let len = session.len();
    if let Some(&position) = entries.iter().find(|&&i| i >= len) {
        return Err(BranchError::PositionOutOfRange { position, len });
    }
    let all = session.entries();
    let mut file_ops = FileOps::default();
    for &i in entries {
        if let EntryBody::BranchSummary(b) = &all[i].body
            && b.carries_file_lists()
            && let Some(details) = &b.details
        {
            file_ops.add_details(details);
        }
    }

    let mut items = Vec::new();
    let mut total = 0u64;
    let mut dropped_calls = Vec::new();
    for &i in entries.iter().rev() {
        let (message, dropped) = branch_message(session, i, options.tool_results);
        dropped_calls.extend(dropped);
        let Some(message) = message else { continue };
        file_ops.add_message(&message);
        let message = ContextMessage {
            entry_index: i,
            message,
        };
        let tokens = budget_tokens(&message, options.tool_results);
        if token_budget > 0 && total + tokens > token_budget {
            let summary = matches!(
                all[i].body,
                EntryBody::Compaction(_) | EntryBody::BranchSummary(_)
            );
            if summary && (total as f64) < token_budget as f64 * 0.9 {
                items.push(BranchItem { message, tokens });
                total += tokens;
            }
            break;
        }
        items.push(BranchItem { message, tokens });
        total += tokens;
    }
    items.reverse();
    Ok(BranchPreparation {
        items,
        file_ops,
        total_tokens: total,
        dropped_calls,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::test_support::{
        assistant, branch_summary, call, compaction, custom_message, entry, result, session_from,
        thinking, user,
    };

    type Item = (String, String, u64);

    /// `(items, total, file ops, serialized)` of a chain of entries
    /// `e0 → e1 → …`, prepared whole.
    fn prepared(
        bodies: Vec<Value>,
        budget: u64,
        tool_results: ToolResults,
    ) -> (Vec<Item>, u64, FileOps, String) {
        let names: Vec<String> = (0..bodies.len()).map(|i| format!("e{i}")).collect();
        let session = session_from(
            bodies
                .into_iter()
                .enumerate()
                .map(|(i, b)| entry(&names[i], i.checked_sub(1).map(|p| names[p].as_str()), b))
                .collect(),
        );
        let all: Vec<usize> = (0..session.len()).collect();
        let prep =
            prepare_branch(&session, &all, budget, &PrepareOptions { tool_results }).unwrap();
        let items = prep
            .items
            .iter()
            .map(|i| {
                (
                    session.entries()[i.message.entry_index].id.to_string(),
                    i.message.message.role().to_owned(),
                    i.tokens,
                )
            })
            .collect();
        let serialized = prep.serialized();
        let (total, ops) = (prep.total_tokens, prep.file_ops.clone());
        (items, total, ops, serialized)
    }

    fn item(id: &str, role: &str, tokens: u64) -> Item {
        (id.to_owned(), role.to_owned(), tokens)
    }

    fn text(chars: usize) -> String {
        "x".repeat(chars)
    }

    #[test]
    fn an_unknown_window_gives_a_budget_of_111616() {
        assert_eq!(token_budget(Some(0), DEFAULT_RESERVE_TOKENS), 111_616);
        assert_eq!(token_budget(None, 16_384), 111_616);
        assert_eq!(token_budget(Some(200_000), 16_384), 183_616);
        assert_eq!(
            token_budget(Some(10_000), 16_384),
            0,
            "no limit, as a negative budget is"
        );
    }

    #[test]
    fn a_compaction_that_does_not_fit_is_still_taken_below_ninety_percent() {
        let bodies = vec![
            user(&text(40)),
            compaction(&text(400), json!(null)),
            user(&text(40)),
        ];
        let (items, total, _, _) = prepared(bodies, 50, ToolResults::Skip);
        assert_eq!(
            items,
            [item("e1", "compactionSummary", 100), item("e2", "user", 10)]
        );
        assert_eq!(total, 110, "the total may exceed the budget by one summary");
    }

    #[test]
    fn a_branch_summary_that_does_not_fit_is_dropped_at_ninety_percent() {
        let bodies = vec![
            branch_summary(&text(400), json!(null), false),
            user(&text(180)),
        ];
        let (items, total, _, _) = prepared(bodies, 50, ToolResults::Skip);
        assert_eq!(items, [item("e1", "user", 45)]);
        assert_eq!(total, 45);
    }

    #[test]
    fn a_message_that_does_not_fit_ends_the_walk_but_its_files_count() {
        let bodies = vec![
            user(&text(8)),
            assistant(json!([call(
                "c1",
                "write",
                json!({"path": "big.rs", "content": text(400)})
            )])),
            user(&text(40)),
        ];
        let (items, total, ops, _) = prepared(bodies, 50, ToolResults::Skip);
        assert_eq!(items, [item("e2", "user", 10)]);
        assert_eq!(total, 10);
        assert_eq!(ops.written.sorted(), ["big.rs"]);
    }

    #[test]
    fn a_budget_of_zero_takes_everything() {
        let bodies = vec![user(&text(4000)), user(&text(4000))];
        let (items, total, _, _) = prepared(bodies, 0, ToolResults::Skip);
        assert_eq!(items.len(), 2);
        assert_eq!(total, 2000);
    }

    #[test]
    fn entries_become_the_messages_a_branch_summary_reads() {
        let bodies = vec![
            compaction(
                "old work",
                json!({"readFiles": ["c.rs"], "modifiedFiles": []}),
            ),
            branch_summary("", json!(null), false),
            custom_message("note!"),
            thinking("high"),
            user("hi"),
        ];
        let (items, _, ops, serialized) = prepared(bodies, 0, ToolResults::Skip);
        assert_eq!(
            items,
            [
                item("e0", "compactionSummary", 2),
                item("e1", "branchSummary", 0),
                item("e2", "custom", 2),
                item("e4", "user", 1),
            ]
        );
        assert!(ops.read.is_empty(), "compaction details are not harvested");
        assert!(
            serialized.contains("<summary>\nold work\n</summary>"),
            "{serialized}"
        );
        assert!(
            serialized.contains("<summary>\n</summary>"),
            "an empty branch summary is still wrapped"
        );
        assert!(
            serialized.ends_with("[User]: note!\n\n[User]: hi"),
            "{serialized}"
        );
    }

    #[test]
    fn earlier_branch_summaries_give_their_files_whatever_the_budget() {
        let bodies = vec![
            branch_summary(
                "s",
                json!({"readFiles": ["r.rs", "both.rs"], "modifiedFiles": ["m.rs"]}),
                false,
            ),
            branch_summary(
                "s",
                json!({"readFiles": ["hook.rs"], "modifiedFiles": ["hook2.rs"]}),
                true,
            ),
            user(&text(400)),
        ];
        let (items, _, ops, _) = prepared(bodies, 100, ToolResults::Skip);
        assert_eq!(items, [item("e2", "user", 100)]);
        assert_eq!(ops.read.sorted(), ["both.rs", "r.rs"]);
        assert_eq!(ops.edited.sorted(), ["m.rs"]);
    }

    #[test]
    fn branch_summaries_musepi_handed_pi_give_their_files_though_pi_marks_them_from_an_extension() {
        let bodies = vec![
            branch_summary(
                "s",
                json!({"readFiles": ["pi.rs"], "modifiedFiles": ["made.rs"], "musepi": {"strategy": "digest"}}),
                true,
            ),
            branch_summary(
                "s",
                json!({"readFiles": ["other.rs"], "modifiedFiles": [], "musepi": "not an object"}),
                true,
            ),
            user(&text(400)),
        ];
        let (_, _, ops, _) = prepared(bodies, 100, ToolResults::Skip);
        assert_eq!(ops.read.sorted(), ["pi.rs"]);
        assert_eq!(ops.edited.sorted(), ["made.rs"]);
    }

    #[test]
    fn skipped_tool_results_leave_their_calls() {
        let bodies = vec![
            assistant(json!([call("c1", "read", json!({"path": "a.rs"}))])),
            result("c1", "fn main() {}", false, false),
        ];
        let (items, _, ops, serialized) = prepared(bodies, 0, ToolResults::Skip);
        assert_eq!(items, [item("e0", "assistant", 5)]);
        assert_eq!(ops.read.sorted(), ["a.rs"]);
        assert_eq!(serialized, "[Assistant tool calls]: read(path=\"a.rs\")");
    }

    #[test]
    fn kept_tool_results_count_as_their_truncated_text() {
        let marker = "\n\n[... 3000 more characters truncated]";
        let bodies = vec![
            assistant(json!([
                call("c1", "read", json!({"path": "a.rs"})),
                call("c2", "read", json!({"path": "b.rs"}))
            ])),
            result("c1", &text(5000), false, false),
            result("c2", "", false, false),
        ];
        let (items, total, _, serialized) = prepared(bodies, 0, ToolResults::Truncated);
        let truncated = chars_to_tokens(2000 + marker.len());
        assert_eq!(
            items,
            [
                item("e0", "assistant", 10),
                item("e1", "toolResult", truncated),
                item("e2", "toolResult", 0),
            ]
        );
        assert_eq!(total, 10 + truncated);
        assert!(serialized.ends_with(&format!("[Tool result]: {}{marker}", text(2000))));
    }

    #[test]
    fn useless_results_and_their_calls_are_left_out_unless_they_failed() {
        let bodies = vec![
            assistant(json!([
                call("u", "grep", json!({"q": "none"})),
                call("e", "grep", json!({"q": "bad"})),
            ])),
            result("u", "no matches", true, false),
            result("e", "error: bad pattern", true, true),
        ];
        let (items, _, _, serialized) = prepared(bodies, 0, ToolResults::Truncated);
        let ids: Vec<&str> = items.iter().map(|i| i.0.as_str()).collect();
        assert_eq!(ids, ["e0", "e2"]);
        assert_eq!(
            serialized,
            "[Assistant tool calls]: grep(q=\"bad\")\n\n[Tool result]: error: bad pattern"
        );
    }

    #[test]
    fn positions_beyond_the_session_are_errors() {
        let session = session_from(vec![entry("a", None, user("x"))]);
        let err = prepare_branch(&session, &[0, 5], 0, &PrepareOptions::default()).unwrap_err();
        assert!(matches!(
            err,
            BranchError::PositionOutOfRange {
                position: 5,
                len: 1
            }
        ));
    }
}
