//! The cut reads only the kept window and what borders it; on random paths
//! of every entry kind and every budget it must be the cut that its
//! definition gives, each step of it searched over the whole range.

use proptest::prelude::*;
use serde_json::json;

use crate::cut::{CutPoint, find_cut_point, is_turn_start, is_valid_cut_point, yields_message};
use musepi_context_builder::estimate_tokens;
use musepi_session_model::{
    AgentMessage, BashExecutionMessage, BranchSummary, BranchSummaryMessage, Compaction,
    CompactionSummaryMessage, Content, CustomMessage, CustomMessageEntry, Entry, EntryBody,
    ModelChange, Text,
};
use musepi_test_support::EntryBuilder as Builder;

/// The cut by its definition, each step a plain search of the whole range
/// (positions into it): the budget is reached at the last message from
/// which the messages to the end sum to `keep_recent_tokens`; the cut is
/// the first valid cut point at or after it (the first of the range when
/// none follows, no cut when there is none); every entry right before the
/// cut that is neither a message nor a compaction comes along; the turn is
/// split when the first kept message does not start a turn and a turn
/// starts before the cut.
fn cut_by_definition(range: &[&Entry], keep_recent_tokens: u64) -> CutPoint {
    let tokens = |e: &&Entry| match &e.body {
        EntryBody::Message(m) => Some(estimate_tokens(m)),
        _ => None,
    };
    let reached = (0..range.len())
        .filter(|&p| tokens(&range[p]).is_some())
        .filter(|&p| range[p..].iter().filter_map(tokens).sum::<u64>() >= keep_recent_tokens)
        .max();
    let valid: Vec<usize> = (0..range.len())
        .filter(|&p| is_valid_cut_point(range[p]))
        .collect();
    let after_reached = valid.iter().find(|&&c| reached.is_some_and(|r| c >= r));
    let Some(&chosen) = after_reached.or(valid.first()) else {
        return CutPoint::at(0);
    };
    let comes_along =
        |e: &&Entry| !matches!(e.body, EntryBody::Compaction(_) | EntryBody::Message(_));
    let cut = (0..chosen)
        .find(|&c| range[c..chosen].iter().all(comes_along))
        .unwrap_or(chosen);
    let first_kept_message = range[cut..].iter().find(|e| yields_message(e));
    let turn_before = range[..cut].iter().rposition(|e| is_turn_start(e));
    match (first_kept_message, turn_before) {
        (Some(m), Some(ts)) if !is_turn_start(m) => CutPoint::splitting(cut, ts),
        _ => CutPoint::at(cut),
    }
}

/// One entry of a generated path, with the size of its text.
#[derive(Debug, Clone, Copy)]
enum Kind {
    User,
    Assistant,
    AssistantCalling,
    ToolResult,
    BashExecution,
    CustomInMessage,
    BranchSummaryInMessage,
    CompactionSummaryInMessage,
    CustomMessageEntry,
    BranchSummaryEntry,
    Compaction,
    ThinkingLevelChange,
    ModelChange,
    Custom,
    Label,
    SessionInfo,
    Other,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        4 => Just(Kind::User),
        4 => Just(Kind::Assistant),
        5 => Just(Kind::AssistantCalling),
        8 => Just(Kind::ToolResult),
        1 => Just(Kind::BashExecution),
        1 => Just(Kind::CustomInMessage),
        1 => Just(Kind::BranchSummaryInMessage),
        1 => Just(Kind::CompactionSummaryInMessage),
        1 => Just(Kind::CustomMessageEntry),
        1 => Just(Kind::BranchSummaryEntry),
        1 => Just(Kind::Compaction),
        1 => Just(Kind::ThinkingLevelChange),
        1 => Just(Kind::ModelChange),
        1 => Just(Kind::Custom),
        1 => Just(Kind::Label),
        1 => Just(Kind::SessionInfo),
        1 => Just(Kind::Other),
    ]
}

fn push(b: &mut Builder, kind: Kind, n: usize, call: usize) {
    let text = "t".repeat(n);
    let body = match kind {
        Kind::User => {
            b.user(&text);
            return;
        }
        Kind::Assistant => {
            b.assistant(&text, &[], None);
            return;
        }
        Kind::AssistantCalling => {
            let id = format!("c{call}");
            b.call(&text, &id, "bash", json!({"command": "ls"}));
            return;
        }
        Kind::ToolResult => {
            b.result(&format!("c{call}"), "bash", &text);
            return;
        }
        Kind::BashExecution => {
            EntryBody::Message(AgentMessage::BashExecution(BashExecutionMessage {
                command: Text::new("make"),
                output: Text::new(text),
                ..Default::default()
            }))
        }
        Kind::CustomInMessage => EntryBody::Message(AgentMessage::Custom(CustomMessage {
            custom_type: "note".into(),
            content: Content::text(text),
            ..Default::default()
        })),
        Kind::BranchSummaryInMessage => {
            EntryBody::Message(AgentMessage::BranchSummary(BranchSummaryMessage {
                summary: Text::new(text),
                ..Default::default()
            }))
        }
        Kind::CompactionSummaryInMessage => {
            EntryBody::Message(AgentMessage::CompactionSummary(CompactionSummaryMessage {
                summary: Text::new(text),
                ..Default::default()
            }))
        }
        Kind::CustomMessageEntry => EntryBody::CustomMessage(CustomMessageEntry {
            custom_type: "note".into(),
            content: Content::text(text),
            ..Default::default()
        }),
        Kind::BranchSummaryEntry => EntryBody::BranchSummary(BranchSummary {
            summary: Text::new(text),
            ..Default::default()
        }),
        Kind::Compaction => EntryBody::Compaction(Compaction {
            summary: Text::new(text),
            ..Default::default()
        }),
        Kind::ThinkingLevelChange => EntryBody::ThinkingLevelChange {
            thinking_level: Some("high".into()),
        },
        Kind::ModelChange => EntryBody::ModelChange(ModelChange {
            model: Some("m".into()),
            ..Default::default()
        }),
        Kind::Custom => EntryBody::Custom {
            custom_type: "state".into(),
            data: None,
        },
        Kind::Label => EntryBody::Label {
            target_id: "00000001".into(),
            label: Some("here".into()),
        },
        Kind::SessionInfo => EntryBody::SessionInfo {
            name: Some("name".into()),
        },
        Kind::Other => EntryBody::Other {
            type_name: "future".into(),
        },
    };
    b.push(body);
}

/// Every budget that decides something on `path[start..end]`: none, each
/// sum of the messages from the end back (and one either side of it),
/// more than all of them.
fn budgets(entries: &[Entry], path: &[usize], start: usize, end: usize) -> Vec<u64> {
    let mut out = vec![0, 1, u64::MAX];
    let mut acc = 0u64;
    for p in (start..end).rev() {
        if let EntryBody::Message(m) = &entries[path[p]].body {
            acc += estimate_tokens(m);
            out.extend([acc.saturating_sub(1), acc, acc + 1]);
        }
    }
    out.push(acc + 1_000);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_cut_from_the_kept_window_is_the_cut_from_the_whole_range(
        path in prop::collection::vec((kind(), 0usize..900), 0..60),
        from in 0usize..100,
        to in 0usize..100,
    ) {
        let mut b = Builder::new();
        let mut call = 0;
        for &(k, n) in &path {
            if matches!(k, Kind::AssistantCalling) {
                call += 1;
            }
            push(&mut b, k, n, call);
        }
        let entries = b.session.entries();
        let path: Vec<usize> = (0..entries.len()).collect();
        let len = path.len();
        let (start, end) = {
            let (a, z) = (from * (len + 1) / 100, to * (len + 1) / 100);
            (a.min(z).min(len), a.max(z).min(len))
        };
        let range: Vec<&Entry> = path[start..end].iter().map(|&i| &entries[i]).collect();
        for keep in budgets(entries, &path, start, end) {
            prop_assert_eq!(
                find_cut_point(entries, &path, start, end, keep),
                cut_by_definition(&range, keep).shifted(start),
                "start {} end {} keep {}", start, end, keep
            );
        }
    }
}

/// A session whose kept window starts inside a turn: the cut is the turn's
/// assistant message and the turn's user message starts the prefix.
#[test]
fn a_window_inside_a_turn_splits_it_at_its_beginning() {
    let mut b = Builder::new();
    b.user(&"u".repeat(4_000));
    b.user("the turn");
    b.call(&"a".repeat(4_000), "c1", "bash", json!({}));
    b.result("c1", "bash", &"r".repeat(400));
    b.assistant(&"a".repeat(400), &[], None);
    let entries = b.session.entries();
    let path: Vec<usize> = (0..entries.len()).collect();
    let cut = find_cut_point(entries, &path, 0, path.len(), 500);
    assert_eq!(cut, CutPoint::splitting(2, 1));
}
