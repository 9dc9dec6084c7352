//! The cut reads only the kept window and what borders it; on random paths
//! of every entry kind and every budget it must be the cut that collecting
//! every valid cut point of the whole range and searching them gives.

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

/// The cut over the whole range: every valid cut point of
/// `path[start..end]` collected first, then searched.
fn whole_range_cut(
    entries: &[Entry],
    path: &[usize],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
) -> CutPoint {
    let at = |p: usize| &entries[path[p]];
    let cuts: Vec<usize> = (start..end)
        .filter(|&p| is_valid_cut_point(at(p)))
        .collect();
    let Some(&first_cut) = cuts.first() else {
        return CutPoint {
            first_kept_index: start,
            turn_start_index: None,
            is_split_turn: false,
        };
    };
    let mut cut = first_cut;
    let mut acc = 0u64;
    for p in (start..end).rev() {
        let EntryBody::Message(m) = &at(p).body else {
            continue;
        };
        acc += estimate_tokens(m);
        if acc >= keep_recent_tokens {
            if let Some(&c) = cuts.iter().find(|&&c| c >= p) {
                cut = c;
            }
            break;
        }
    }
    while cut > start {
        let prev = at(cut - 1);
        if matches!(prev.body, EntryBody::Compaction(_) | EntryBody::Message(_)) {
            break;
        }
        cut -= 1;
    }
    let first_message = (cut..end).find(|&p| yields_message(at(p)));
    let starts_turn = first_message.is_none_or(|p| is_turn_start(at(p)));
    if starts_turn {
        return CutPoint {
            first_kept_index: cut,
            turn_start_index: None,
            is_split_turn: false,
        };
    }
    let turn_start = (start..=cut).rev().find(|&p| is_turn_start(at(p)));
    match turn_start {
        Some(ts) if (ts..cut).any(|p| yields_message(at(p))) => CutPoint {
            first_kept_index: cut,
            turn_start_index: Some(ts),
            is_split_turn: true,
        },
        _ => CutPoint {
            first_kept_index: cut,
            turn_start_index: None,
            is_split_turn: false,
        },
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
            b.assistant(&text, &[(&id, "bash", json!({"command": "ls"}))], None);
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
        for keep in budgets(entries, &path, start, end) {
            prop_assert_eq!(
                find_cut_point(entries, &path, start, end, keep),
                whole_range_cut(entries, &path, start, end, keep),
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
    b.assistant(&"a".repeat(4_000), &[("c1", "bash", json!({}))], None);
    b.result("c1", "bash", &"r".repeat(400));
    b.assistant(&"a".repeat(400), &[], None);
    let entries = b.session.entries();
    let path: Vec<usize> = (0..entries.len()).collect();
    let cut = find_cut_point(entries, &path, 0, path.len(), 500);
    assert_eq!(
        cut,
        CutPoint {
            first_kept_index: 2,
            turn_start_index: Some(1),
            is_split_turn: true,
        }
    );
}
