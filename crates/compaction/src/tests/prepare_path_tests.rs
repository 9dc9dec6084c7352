//! The preparation reads the path only from the previous compaction's
//! first kept entry on; after every operation of random sessions it must
//! give exactly the preparation that reads the whole path from the root.

use std::borrow::Cow;

use proptest::prelude::*;
use serde_json::json;

use super::prune_window_tests::{Op, apply, op};
use crate::cut::{CutPoint, find_cut_point};
use crate::prepare::{adapt_over, messages_in};
use crate::{
    CompactionSettings, NothingToCompact, Preparation, adapted_keep_recent_tokens, prepare,
    summary_message,
};
use musepi_context_builder::{ContextMessage, FileOps, estimate_context_tokens};
use musepi_session_model::{
    AgentMessage, BranchSummary, Compaction, CustomMessageEntry, EntryBody, EntryId, Session, Text,
};
use musepi_test_support::{EntryBuilder as Builder, session_of};

/// A preparation as the whole path from the root gives it.
struct FromRoot<'a> {
    path: Vec<usize>,
    previous_compaction: Option<usize>,
    boundary_start: usize,
    boundary_end: usize,
    cut: CutPoint,
    first_kept_entry_id: EntryId,
    messages_to_summarize: Vec<ContextMessage<'a>>,
    turn_prefix_messages: Vec<ContextMessage<'a>>,
    recent_messages: Vec<ContextMessage<'a>>,
    tokens_before: f64,
    previous_summary: Option<String>,
    previous_preserve_data: Option<String>,
    previous_details: Option<serde_json::Value>,
    previously_kept_start: Option<usize>,
    file_ops: FileOps,
    keep_recent_tokens: u64,
}

/// The preparation over the path from the root: the previous compaction
/// searched from the leaf back, its first kept entry searched from the root.
fn prepare_from_root<'a>(
    session: &'a Session,
    leaf: Option<usize>,
    settings: &CompactionSettings,
) -> Result<FromRoot<'a>, NothingToCompact> {
    let Some(leaf) = leaf else {
        return Err(NothingToCompact::TooSmall);
    };
    let entries = session.entries();
    let path = session.path_indices(leaf);
    let end = path.len();
    let compaction = |p: usize| match &entries[path[p]].body {
        EntryBody::Compaction(c) => Some(c),
        _ => None,
    };
    if compaction(end - 1).is_some() {
        return Err(NothingToCompact::AlreadyCompacted);
    }
    let prev = (0..end).rev().find(|&p| compaction(p).is_some());
    let start = prev.map_or(0, |p| p + 1);
    let usage: Vec<Cow<'_, AgentMessage>> = path[prev.unwrap_or(0)..]
        .iter()
        .filter_map(|&i| summary_message(session, i))
        .collect();
    let tokens_before = estimate_context_tokens(usage.iter().map(AsRef::as_ref)).tokens;
    let keep = if settings.adapt_keep_recent {
        adapt_over(session, &path[start..], settings.keep_recent_tokens)
    } else {
        settings.keep_recent_tokens
    };
    let cut = find_cut_point(entries, &path, start, end, keep);
    let first_kept = &entries[path[cut.first_kept_index.min(end - 1)]];
    if cut.first_kept_index >= end || first_kept.id.as_str().is_empty() {
        return Err(NothingToCompact::NoFirstKeptId);
    }
    let previous = prev.and_then(|p| compaction(p).map(|c| (p, c)));
    let previously_kept_start = previous.and_then(|(p, c)| {
        let id = c.first_kept_entry_id.as_ref()?;
        path[..p].iter().position(|&i| entries[i].id == *id)
    });
    let history_end = match cut.turn_start_index {
        Some(ts) if cut.is_split_turn => ts,
        _ => cut.first_kept_index,
    };
    let mut messages_to_summarize = match (prev, previously_kept_start) {
        (Some(p), Some(k)) => messages_in(session, &path, k, p),
        _ => Vec::new(),
    };
    messages_to_summarize.extend(messages_in(session, &path, start, history_end));
    let turn_prefix_messages = match cut.turn_start_index {
        Some(ts) if cut.is_split_turn => messages_in(session, &path, ts, cut.first_kept_index),
        _ => Vec::new(),
    };
    if messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        return Err(NothingToCompact::TooSmall);
    }
    let recent_messages = messages_in(session, &path, cut.first_kept_index, end);
    let mut file_ops = FileOps::default();
    if let Some(d) =
        previous.and_then(|(_, c)| c.details.as_ref().filter(|_| c.carries_file_lists()))
    {
        file_ops.add_details(d);
    }
    for m in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        file_ops.add_message(&m.message);
    }
    Ok(FromRoot {
        first_kept_entry_id: first_kept.id.clone(),
        path,
        previous_compaction: prev,
        boundary_start: start,
        boundary_end: end,
        cut,
        messages_to_summarize,
        turn_prefix_messages,
        recent_messages,
        tokens_before,
        previous_summary: previous.map(|(_, c)| c.summary.as_str().to_owned()),
        previous_preserve_data: previous
            .and_then(|(_, c)| c.preserve_data.as_ref().map(|r| r.get().to_owned())),
        previous_details: previous.and_then(|(_, c)| c.details.clone()),
        previously_kept_start,
        file_ops,
        keep_recent_tokens: keep,
    })
}

fn same(
    session: &Session,
    got: &Preparation<'_>,
    want: &FromRoot<'_>,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(&got.branch(), &want.path);
    prop_assert_eq!(got.path_read(), &want.path[got.path_start()..]);
    if !session.has_duplicate_ids() {
        // Nothing before the previous compaction's first kept entry (or the
        // compaction, or the root) was read.
        let bound = got.previously_kept_start.or(got.previous_compaction);
        prop_assert_eq!(got.path_start(), bound.unwrap_or(0));
    }
    prop_assert_eq!(got.previous_compaction, want.previous_compaction);
    prop_assert_eq!(got.boundary_start, want.boundary_start);
    prop_assert_eq!(got.boundary_end, want.boundary_end);
    prop_assert_eq!(got.cut, want.cut);
    prop_assert_eq!(
        got.turn_start_entry(),
        want.cut.turn_start_index.map(|p| want.path[p])
    );
    prop_assert_eq!(&got.first_kept_entry_id, &want.first_kept_entry_id);
    prop_assert_eq!(&got.messages_to_summarize, &want.messages_to_summarize);
    prop_assert_eq!(&got.turn_prefix_messages, &want.turn_prefix_messages);
    prop_assert_eq!(&got.recent_messages, &want.recent_messages);
    prop_assert_eq!(got.tokens_before.to_bits(), want.tokens_before.to_bits());
    prop_assert_eq!(&got.previous_summary, &want.previous_summary);
    prop_assert_eq!(
        &got.previous_preserve_data
            .as_ref()
            .map(|r| r.get().to_owned()),
        &want.previous_preserve_data
    );
    prop_assert_eq!(&got.previous_details, &want.previous_details);
    prop_assert_eq!(got.previously_kept_start, want.previously_kept_start);
    prop_assert_eq!(&got.file_ops, &want.file_ops);
    prop_assert_eq!(got.keep_recent_tokens, want.keep_recent_tokens);
    Ok(())
}

/// The settings compared: budgets from none to more than any session
/// here holds, with and without adaptation.
fn settings() -> Vec<CompactionSettings> {
    [0, 1, 100, 600, 2_000, 1_000_000]
        .into_iter()
        .flat_map(|keep| {
            [false, true].map(|adapt_keep_recent| CompactionSettings {
                keep_recent_tokens: keep,
                adapt_keep_recent,
                ..CompactionSettings::default()
            })
        })
        .collect()
}

fn check(session: &Session, leaf: Option<usize>) -> Result<(), TestCaseError> {
    for s in settings() {
        match (
            prepare(session, leaf, &s),
            prepare_from_root(session, leaf, &s),
        ) {
            (Ok(got), Ok(want)) => same(session, &got, &want)?,
            (Err(got), Err(want)) => prop_assert_eq!(got, want),
            (got, want) => prop_assert!(
                false,
                "prepare {:?}, from the root {:?}",
                got.map(|p| p.cut),
                want.map(|p| p.cut)
            ),
        }
        let whole = leaf.map(|l| session.path_indices(l));
        let since = whole.as_ref().map_or(&[][..], |path| {
            let c = path
                .iter()
                .rposition(|&i| matches!(session.entries()[i].body, EntryBody::Compaction(_)));
            &path[c.map_or(0, |c| c + 1)..]
        });
        let want = if s.adapt_keep_recent && leaf.is_some() {
            adapt_over(session, since, s.keep_recent_tokens)
        } else {
            s.keep_recent_tokens
        };
        prop_assert_eq!(adapted_keep_recent_tokens(session, leaf, &s), want);
    }
    Ok(())
}

/// The prune sessions' operations, and the entries they leave out: branch
/// summaries and custom messages (both start a turn), assistant messages
/// with usage (what adaptation reads), a compaction that carries file
/// lists and data to preserve.
#[derive(Debug, Clone)]
enum Step {
    Base(Op),
    BranchSummary(u16),
    CustomMessage(u16),
    Usage(u16, u32),
    Carrying(u16),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        16 => op().prop_map(Step::Base),
        1 => (1u16..400).prop_map(Step::BranchSummary),
        1 => (1u16..400).prop_map(Step::CustomMessage),
        2 => ((1u16..800), (1u32..4_000)).prop_map(|(n, u)| Step::Usage(n, u)),
        1 => any::<u16>().prop_map(Step::Carrying),
    ]
}

fn take(b: &mut Builder, step: &Step) {
    let text = |n: &u16| Text::new("s".repeat(usize::from(*n)));
    match step {
        Step::Base(op) => apply(b, op),
        Step::BranchSummary(n) => {
            b.push(EntryBody::BranchSummary(BranchSummary {
                from_id: "00000001".into(),
                summary: text(n),
                ..Default::default()
            }));
        }
        Step::CustomMessage(n) => {
            b.push(EntryBody::CustomMessage(CustomMessageEntry {
                custom_type: "note".into(),
                content: musepi_session_model::Content::Text(text(n)),
                ..Default::default()
            }));
        }
        Step::Usage(n, input) => {
            b.assistant(
                &"a".repeat(usize::from(*n)),
                &[],
                Some((f64::from(*input), 10.0)),
            );
        }
        Step::Carrying(k) => {
            let len = b.session.len();
            let first_kept =
                (len > 0).then(|| b.session.entries()[usize::from(*k) % len].id.clone());
            b.push(EntryBody::Compaction(Compaction {
                summary: Text::new("carried"),
                first_kept_entry_id: first_kept,
                tokens_before: 10.0,
                details: Some(json!({"readFiles": ["src/a.rs"], "modifiedFiles": ["src/b.rs"]})),
                preserve_data: Some(musepi_session_model::RawJson::from_value(&json!({"k": 1}))),
                from_extension: Some(false),
                ..Default::default()
            }));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_preparation_from_the_kept_entry_on_is_the_preparation_from_the_root(
        steps in prop::collection::vec(step(), 1..70),
    ) {
        let mut b = Builder::new();
        for step in &steps {
            take(&mut b, step);
            check(&b.session, b.leaf())?;
        }
    }
}

/// With ids the file repeats, the first kept entry is the first entry on
/// the path with its id, as the search from the root finds it.
#[test]
fn repeated_ids_prepare_as_the_search_from_the_root_does() {
    let user = |t: &str| json!({"type": "message", "message": {"role": "user", "content": t, "timestamp": 1}});
    let long = "x".repeat(4_000);
    let session = session_of(&[
        ("a", None, user(&long)),
        ("b", Some("a"), user(&long)),
        ("b", Some("b"), user(&long)),
        (
            "c",
            Some("b"),
            json!({"type": "compaction", "summary": "so far", "firstKeptEntryId": "b", "tokensBefore": 10}),
        ),
        ("d", Some("c"), user(&long)),
        ("e", Some("d"), user(&long)),
    ]);
    assert!(session.has_duplicate_ids());
    let s = CompactionSettings {
        keep_recent_tokens: 100,
        adapt_keep_recent: false,
        ..CompactionSettings::default()
    };
    let got = prepare(&session, session.leaf_index(), &s).unwrap();
    let want = prepare_from_root(&session, session.leaf_index(), &s).unwrap();
    same(&session, &got, &want).unwrap();
    assert_eq!(got.path_start(), 0);
    assert!(got.previously_kept_start.is_some());
}
