//! The preparation reads the path only from the previous compaction's
//! first kept entry on; after every operation of random sessions it must
//! give exactly the preparation that reads the whole path from the root.

use proptest::prelude::*;
use serde_json::json;

use super::prune_window_tests::{Op, apply, check_after_each, op};
use crate::adapt::{Measured, recent_slope};
use crate::cut::{find_cut_point, is_valid_cut_point};
use crate::prepare::{messages_in, summary_message};
use crate::{
    CompactionSettings, NothingToCompact, Preparation, adapted_keep_recent_tokens, prepare,
};
use musepi_context_builder::{
    FileOps, adapt_keep_recent_tokens, anchoring_usage, build_context_over_path,
    calculate_prompt_tokens, estimate_context_tokens, estimate_tokens,
};
use musepi_session_model::{
    BranchSummary, Compaction, CustomMessageEntry, EntryBody, MadeBy, Session, SummaryEntry, Text,
};
use musepi_test_support::{EntryBuilder as Builder, session_of};

/// Checks a preparation against the one the whole path from the root to
/// the leaf gives (empty without a leaf): the previous compaction searched
/// from the leaf back, its first kept entry searched from the root, every
/// region read from the whole path.
fn check_from_root(
    session: &Session,
    path: &[usize],
    settings: &CompactionSettings,
    prepared: &Result<Preparation<'_>, NothingToCompact>,
) -> Result<(), TestCaseError> {
    let refused = |want: NothingToCompact| {
        prop_assert_eq!(
            prepared.as_ref().map(|p| p.cut),
            Err(&want),
            "from the root: {}",
            want
        );
        Ok(())
    };
    if path.is_empty() {
        return refused(NothingToCompact::TooSmall);
    }
    let entries = session.entries();
    let end = path.len();
    let compaction = |p: usize| match &entries[path[p]].body {
        EntryBody::Compaction(c) => Some(c),
        _ => None,
    };
    if compaction(end - 1).is_some() {
        return refused(NothingToCompact::AlreadyCompacted);
    }
    let prev = (0..end).rev().find(|&p| compaction(p).is_some());
    let previous = prev.and_then(|p| compaction(p).map(|c| (p, c)));
    let previously_kept_start = previous.and_then(|(p, c)| {
        let id = c.first_kept_entry_id.as_ref()?;
        path[..p].iter().position(|&i| entries[i].id == *id)
    });
    let after_prev = prev.map_or(0, |p| p + 1);
    let start = previously_kept_start.unwrap_or(after_prev);
    // pi's estimate of the whole context at the leaf.
    let context = musepi_context_builder::build_context_over_path(session, path);
    let tokens_before = estimate_context_tokens(context.agent_messages()).tokens;
    let keep = keep_from_root(session, path, settings);
    let cut = find_cut_point(entries, path, start, end, keep);
    let first_kept = &entries[path[cut.first_kept_index.min(end - 1)]];
    if cut.first_kept_index >= end || first_kept.id.as_str().is_empty() {
        return refused(NothingToCompact::NoFirstKeptId);
    }
    let history_end = match cut.turn_start_index {
        Some(ts) if cut.is_split_turn => ts,
        _ => cut.first_kept_index,
    };
    let messages_to_summarize = messages_in(session, path, start, history_end);
    let turn_prefix_messages = match cut.turn_start_index {
        Some(ts) if cut.is_split_turn => messages_in(session, path, ts, cut.first_kept_index),
        _ => Vec::new(),
    };
    if messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        // The tool results after the last cut point fill the window alone,
        // or everything fits.
        let last_cut = (start..end)
            .rev()
            .find(|&p| is_valid_cut_point(&entries[path[p]]));
        let tail_tokens: u64 = last_cut.map_or(0, |c| {
            (c + 1..end)
                .filter_map(|p| match &entries[path[p]].body {
                    EntryBody::Message(m) => Some(estimate_tokens(m)),
                    _ => None,
                })
                .sum()
        });
        return refused(if tail_tokens > 0 && tail_tokens >= keep {
            NothingToCompact::ToolResultsFillWindow {
                tail_tokens,
                keep_recent_tokens: keep,
            }
        } else {
            NothingToCompact::TooSmall
        });
    }
    let mut file_ops = FileOps::default();
    if let Some(d) =
        previous.and_then(|(_, c)| c.details.as_ref().filter(|_| c.carries_file_lists()))
    {
        file_ops.add_details(d);
    }
    for m in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        file_ops.add_message(&m.message);
    }
    let got = match prepared {
        Ok(got) => got,
        Err(e) => {
            return Err(TestCaseError::fail(format!(
                "prepare refused ({e}), from the root it cuts at {cut:?}"
            )));
        }
    };
    prop_assert_eq!(&got.branch(), path);
    prop_assert_eq!(got.path_read(), &path[got.path_start()..]);
    if !session.has_duplicate_ids() {
        // Nothing before the previous compaction's first kept entry (or the
        // compaction, or the root) was read.
        let bound = got.previously_kept_start.or(got.previous_compaction);
        prop_assert_eq!(got.path_start(), bound.unwrap_or(0));
    }
    prop_assert_eq!(got.previous_compaction, prev);
    prop_assert_eq!(got.boundary_start, start);
    prop_assert_eq!(got.boundary_end, end);
    prop_assert_eq!(got.cut, cut);
    prop_assert_eq!(
        got.turn_start_entry(),
        cut.turn_start_index.map(|p| path[p])
    );
    prop_assert_eq!(&got.first_kept_entry_id, &first_kept.id);
    prop_assert_eq!(&got.messages_to_summarize, &messages_to_summarize);
    prop_assert_eq!(&got.turn_prefix_messages, &turn_prefix_messages);
    prop_assert_eq!(
        &got.recent_messages,
        &messages_in(session, path, cut.first_kept_index, end)
    );
    prop_assert_eq!(got.tokens_before, tokens_before);
    prop_assert_eq!(
        got.previous_summary.as_deref(),
        previous.map(|(_, c)| c.summary.as_str())
    );
    prop_assert_eq!(
        got.previous_preserve_data
            .as_ref()
            .map(musepi_session_model::RawJson::get),
        previous.and_then(|(_, c)| c
            .preserve_data
            .as_ref()
            .map(musepi_session_model::RawJson::get))
    );
    prop_assert_eq!(
        got.previous_details.as_ref(),
        previous.and_then(|(_, c)| c.details.as_ref())
    );
    prop_assert_eq!(got.previously_kept_start, previously_kept_start);
    prop_assert_eq!(&got.file_ops, &file_ops);
    prop_assert_eq!(got.keep_recent_tokens, keep);
    Ok(())
}

/// The kept window adapted from the whole path, by brute force: every
/// request measured since the latest compaction (or in the segment before
/// it when those cannot be measured) is compared with the estimate of the
/// context built at its parent from the root.
fn keep_from_root(session: &Session, path: &[usize], settings: &CompactionSettings) -> u64 {
    let keep = settings.keep_recent_tokens;
    if !settings.adapt_keep_recent {
        return keep;
    }
    let entries = session.entries();
    let is_compaction = |p: usize| matches!(entries[path[p]].body, EntryBody::Compaction(_));
    let measured_in = |from: usize, to: usize| -> Vec<Measured> {
        (from..to)
            .filter_map(|p| {
                let message = summary_message(session, path[p])?;
                let usage = anchoring_usage(&message)?;
                let held: u64 = build_context_over_path(session, &path[..p])
                    .agent_messages()
                    .map(estimate_tokens)
                    .sum();
                Some(Measured {
                    estimate: held as f64,
                    prompt: calculate_prompt_tokens(usage) as f64,
                })
            })
            .collect()
    };
    let end = path.len();
    let latest = (0..end).rev().find(|&p| is_compaction(p));
    let since = measured_in(latest.map_or(0, |c| c + 1), end);
    let before = || match latest {
        Some(c) => {
            let earlier = (0..c).rev().find(|&p| is_compaction(p));
            measured_in(earlier.map_or(0, |b| b + 1), c)
        }
        None => Vec::new(),
    };
    let ratio = match settings.overhead_tokens {
        Some(o) => since
            .last()
            .copied()
            .or_else(|| before().last().copied())
            .map_or(1.0, |m| {
                let estimated = m.estimate + o as f64;
                if estimated > 0.0 && m.prompt > 0.0 {
                    m.prompt / estimated
                } else {
                    1.0
                }
            }),
        None => recent_slope(&since, keep)
            .or_else(|| recent_slope(&before(), keep))
            .unwrap_or(1.0),
    };
    adapt_keep_recent_tokens(keep, ratio)
}

/// The settings compared: budgets from none to more than any session
/// here holds, without adaptation, and with it, measuring the overhead or
/// knowing it.
fn settings() -> Vec<CompactionSettings> {
    [0, 1, 100, 600, 2_000, 1_000_000]
        .into_iter()
        .flat_map(|keep| {
            [(false, None), (true, None), (true, Some(300))].map(
                |(adapt_keep_recent, overhead_tokens)| CompactionSettings {
                    keep_recent_tokens: keep,
                    adapt_keep_recent,
                    overhead_tokens,
                    ..CompactionSettings::default()
                },
            )
        })
        .collect()
}

fn check(session: &Session, leaf: Option<usize>) -> Result<(), TestCaseError> {
    let whole = leaf.map(|l| session.path_indices(l)).unwrap_or_default();
    for s in settings() {
        check_from_root(session, &whole, &s, &prepare(session, leaf, &s))?;
        let want = if leaf.is_some() {
            keep_from_root(session, &whole, &s)
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
                tokens_before: 10,
                details: Some(json!({"readFiles": ["src/a.rs"], "modifiedFiles": ["src/b.rs"]})),
                preserve_data: Some(musepi_session_model::RawJson::from_value(&json!({"k": 1}))),
                made_by: MadeBy::extension(false),
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
        check_after_each(&steps, take, |b| check(&b.session, b.leaf()))?;
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
    let got = prepare(&session, session.leaf_index(), &s);
    let whole = session.path_indices(session.leaf_index().unwrap());
    check_from_root(&session, &whole, &s, &got).unwrap();
    let got = got.unwrap();
    assert_eq!(got.path_start(), 0);
    assert!(got.previously_kept_start.is_some());
}
