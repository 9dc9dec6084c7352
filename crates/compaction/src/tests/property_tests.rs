//! Properties over generated sessions.

use proptest::prelude::*;
use serde_json::json;

use crate::{CompactionSettings, PruneConfig, merge_summaries, plan_prune, prepare};
use musepi_test_support::EntryBuilder as Builder;

#[derive(Debug, Clone)]
enum Step {
    User(usize),
    Turn { text: usize, calls: Vec<usize> },
    Compact,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        4 => (1usize..3_000).prop_map(Step::User),
        6 => ((0usize..2_000), prop::collection::vec(1usize..20_000, 0..4)).prop_map(|(text, calls)| Step::Turn { text, calls }),
        1 => Just(Step::Compact),
    ];
    prop::collection::vec(step, 1..40)
}

/// Builds a session; compactions are real (summaries made of the ids they replace).
fn build(steps: &[Step]) -> Builder {
    let mut b = Builder::new();
    let mut call = 0;
    for s in steps {
        match s {
            Step::User(n) => {
                b.user(&"u".repeat(*n));
            }
            Step::Turn { text, calls } => {
                let names: Vec<(String, usize)> = calls
                    .iter()
                    .map(|&n| {
                        call += 1;
                        (format!("c{call}"), n)
                    })
                    .collect();
                let args: Vec<(&str, &str, serde_json::Value)> = names
                    .iter()
                    .map(|(id, _)| (id.as_str(), "bash", json!({"command": id})))
                    .collect();
                b.assistant(&"a".repeat(*text), &args, Some((1_000.0, 10.0)));
                for (id, n) in &names {
                    b.result(id, "bash", &"r".repeat(*n));
                }
            }
            Step::Compact => {
                let s = CompactionSettings {
                    keep_recent_tokens: 2_000,
                    adapt_keep_recent: false,
                    ..Default::default()
                };
                if let Ok(p) = prepare(&b.session, b.leaf(), &s) {
                    // The summary carries the previous one forward, as the update prompt asks.
                    let prev = p.previous_summary.clone().unwrap_or_default();
                    let summary =
                        merge_summaries(&format!("{prev}|{}", p.messages_to_summarize.len()), None);
                    let id = p.first_kept_entry_id.clone();
                    let tb = p.tokens_before;
                    b.compaction(&summary, &id, tb);
                }
            }
        }
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn a_cut_never_separates_a_call_from_its_result(steps in steps(), keep in 1u64..30_000) {
        let b = build(&steps);
        let s = CompactionSettings { keep_recent_tokens: keep, adapt_keep_recent: false, ..Default::default() };
        if let Ok(p) = prepare(&b.session, b.leaf(), &s) {
            let first = &b.session.entries()[p.branch()[p.cut.first_kept_index]];
            prop_assert!(first.message().and_then(|m| m.as_tool_result()).is_none());
            // Every kept result has its call on the kept side.
            let mut calls = std::collections::HashSet::new();
            for m in &p.recent_messages {
                if let Some(a) = m.message.as_assistant() {
                    for c in a.tool_calls() { calls.insert(c.id.clone()); }
                }
                if let Some(t) = m.message.as_tool_result() {
                    prop_assert!(calls.contains(&t.tool_call_id), "result {} kept without its call", t.tool_call_id);
                }
            }
        }
    }

    #[test]
    fn every_message_since_the_boundary_lands_in_exactly_one_region(steps in steps(), keep in 1u64..30_000) {
        let b = build(&steps);
        let s = CompactionSettings { keep_recent_tokens: keep, adapt_keep_recent: false, ..Default::default() };
        if let Ok(p) = prepare(&b.session, b.leaf(), &s) {
            let start = p.previously_kept_start.unwrap_or(p.boundary_start);
            let expected: Vec<usize> = p.branch()[start..]
                .iter()
                .copied()
                .filter(|&i| crate::yields_message(&b.session.entries()[i]))
                .collect();
            let mut got: Vec<usize> = p.messages_to_summarize.iter()
                .chain(&p.turn_prefix_messages)
                .chain(&p.recent_messages)
                .map(|m| m.entry_index)
                .collect();
            prop_assert_eq!(got.clone(), expected);
            got.sort_unstable();
            got.dedup();
            prop_assert_eq!(got.len(), p.messages_to_summarize.len() + p.turn_prefix_messages.len() + p.recent_messages.len());
        }
    }

    #[test]
    fn compacting_again_never_loses_the_previous_summary(steps in steps()) {
        let b = build(&steps);
        let s = CompactionSettings { keep_recent_tokens: 2_000, adapt_keep_recent: false, ..Default::default() };
        if let Ok(p) = prepare(&b.session, b.leaf(), &s)
            && let Some(prev) = &p.previous_summary {
                let request = crate::history_request(&p, &s, &crate::RequestOptions::default());
                let text = request.map_or_else(|| crate::history_without_call(&p), |r| r.prompt_text());
                prop_assert!(text.contains(prev.as_str()));
            }
    }

    #[test]
    fn pruning_never_touches_protected_results_or_the_protected_window(steps in steps()) {
        let mut b = build(&steps);
        b.call("skill", "sk", "skill", json!({}));
        b.result("sk", "skill", &"s".repeat(50_000));
        let config = PruneConfig { minimum_savings: 0, ..PruneConfig::default() };
        let plan = plan_prune(&b.session, b.leaf(), &config);
        let path = b.session.path_indices(b.leaf().unwrap());
        for c in &plan.candidates {
            let t = b.session.entries()[c.entry_index].message().unwrap().as_tool_result().unwrap();
            prop_assert!(t.tool_name != "skill");
            // The results after it hold at least the protected window.
            let pos = path.iter().position(|&i| i == c.entry_index).unwrap();
            let newer: u64 = path[pos + 1..]
                .iter()
                .filter_map(|&i| b.session.entries()[i].message())
                .filter(|m| m.as_tool_result().is_some())
                .map(musepi_context_builder::estimate_tokens)
                .sum();
            prop_assert!(newer >= config.protect_tokens);
        }
    }
}
