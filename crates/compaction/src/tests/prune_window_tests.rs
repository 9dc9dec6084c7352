//! The prune passes read the path only from the latest compaction's first
//! kept entry on; after every operation of random sessions they must give
//! exactly what reading the whole path from the root gives, and look for
//! the calls of their results before the window no further back than the
//! oldest entry that names one. The preparation finds the previous compaction's first kept entry by its
//! depth; it must be the position a search of the path from the root finds.

use proptest::prelude::*;
use serde_json::json;

use crate::prune::{Reach, Stale, plan_prune_reaching, plan_stale_reaching, walked_before_window};
use crate::{CompactionSettings, Protected, PruneConfig, PrunePlan, apply_prune, prepare};
use musepi_session_model::{
    AgentMessage, Compaction, EntryBody, EntryId, Session, Text, ToolResultMessage,
};
use musepi_test_support::EntryBuilder as Builder;

/// Read paths: plain, with line ranges and modes, a URL, a skill, the
/// protected plan file.
const PATHS: [&str; 8] = [
    "src/a.rs",
    "src/a.rs:10-20",
    "src/a.rs:raw",
    "src/b.rs",
    "src/b.rs:1-5",
    "https://example.com/x",
    "skill://style",
    "PLAN.md",
];

#[derive(Debug, Clone)]
pub(super) enum Op {
    User(u16),
    /// Calls: (id from a small pool, tool: read or not, path).
    Assistant(Vec<(u8, bool, u8)>),
    /// Call id, tool (read, bash, skill), size, error, useless.
    Result(u8, u8, u16, bool, Option<bool>),
    /// Keep from an earlier entry (`None`: no first kept entry), or from
    /// an id that is in no entry.
    Compaction(Option<u16>, bool),
    /// Move the leaf to an earlier entry.
    Move(u16),
    /// Apply a prune plan at the leaf, in memory.
    Prune,
}

pub(super) fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1u16..600).prop_map(Op::User),
        5 => prop::collection::vec((0u8..6, proptest::bool::weighted(0.8), 0u8..8), 0..3).prop_map(Op::Assistant),
        7 => (0u8..6, 0u8..3, 1u16..1_200, proptest::bool::weighted(0.15), proptest::option::of(proptest::bool::weighted(0.3)))
            .prop_map(|(c, t, n, e, u)| Op::Result(c, t, n, e, u)),
        1 => (proptest::option::weighted(0.85, any::<u16>()), proptest::bool::weighted(0.1)).prop_map(|(k, m)| Op::Compaction(k, m)),
        1 => any::<u16>().prop_map(Op::Move),
        1 => Just(Op::Prune),
    ]
}

const TOOLS: [&str; 3] = ["read", "bash", "skill"];

/// Builds a session step by step with `take`, checking it with `check`
/// after every step.
pub(super) fn check_after_each<S>(
    steps: &[S],
    take: impl Fn(&mut Builder, &S),
    check: impl Fn(&Builder) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    let mut b = Builder::new();
    for step in steps {
        take(&mut b, step);
        check(&b)?;
    }
    Ok(())
}

pub(super) fn apply(b: &mut Builder, op: &Op) {
    let len = b.session.len();
    match op {
        Op::User(n) => {
            b.user(&"u".repeat(*n as usize));
        }
        Op::Assistant(calls) => {
            let calls: Vec<(String, &str, serde_json::Value)> = calls
                .iter()
                .map(|&(id, read, path)| {
                    let name = if read { "read" } else { "bash" };
                    (
                        format!("c{id}"),
                        name,
                        json!({"path": PATHS[path as usize]}),
                    )
                })
                .collect();
            let calls: Vec<(&str, &str, serde_json::Value)> = calls
                .iter()
                .map(|(id, name, args)| (id.as_str(), *name, args.clone()))
                .collect();
            b.assistant("working", &calls, None);
        }
        Op::Result(id, tool, n, error, useless) => {
            let tool = TOOLS[*tool as usize];
            let text = "r".repeat(*n as usize);
            b.result_with(&format!("c{id}"), tool, &text, *error, *useless);
        }
        Op::Compaction(keep, missing) => {
            let first_kept = match keep {
                _ if *missing => Some(EntryId::new("nowhere")),
                Some(k) if len > 0 => Some(b.session.entries()[*k as usize % len].id.clone()),
                _ => None,
            };
            b.push(EntryBody::Compaction(Compaction {
                summary: Text::new("so far"),
                first_kept_entry_id: first_kept,
                tokens_before: 10,
                ..Default::default()
            }));
        }
        Op::Move(at) if len > 0 => {
            let id = b.session.entries()[*at as usize % len].id.to_string();
            b.session.set_leaf(&id).unwrap();
        }
        Op::Prune => {
            let config = PruneConfig {
                minimum_savings: 0,
                protect_tokens: 200,
                ..PruneConfig::default()
            };
            let plan = plan_prune_reaching(&b.session, b.leaf(), &config, Reach::WholePath);
            for change in apply_prune(&b.session, &plan, 5) {
                b.session.replace(change);
            }
        }
        Op::Move(_) => {}
    }
}

/// The configurations compared: the defaults, and ones where every rule
/// has something to do in small sessions.
fn configs() -> Vec<PruneConfig> {
    let small = PruneConfig {
        minimum_savings: 0,
        protect_tokens: 150,
        min_prune_tokens: 20,
        protected: Protected {
            paths: vec!["PLAN.md".into()],
            ..Protected::default()
        },
        ..PruneConfig::default()
    };
    vec![
        PruneConfig::default(),
        small.clone(),
        PruneConfig {
            supersede_reads: false,
            prune_useless: false,
            ..small.clone()
        },
        PruneConfig {
            minimum_savings: 300,
            ..small
        },
    ]
}

/// The most entries before the window the scan may read to find the calls
/// of its results: back to the oldest entry before the window, on any
/// branch, that calls the id of a `read` result in the window; none when
/// no entry does or the whole path is read. Found by reading every entry.
fn walk_bound(b: &Builder) -> usize {
    let s = &b.session;
    let Some(leaf) = b.leaf() else { return 0 };
    let path = s.path_indices(leaf);
    let latest_first_kept = path.iter().rev().find_map(|&i| match &s.entries()[i].body {
        EntryBody::Compaction(c) => Some(c.first_kept_entry_id.clone()),
        _ => None,
    });
    let Some(start) = latest_first_kept
        .flatten()
        .and_then(|fk| path.iter().position(|&i| s.entries()[i].id == fk))
    else {
        return 0;
    };
    let ids: Vec<&str> = path[start..]
        .iter()
        .filter_map(|&i| match s.entries()[i].message() {
            Some(AgentMessage::ToolResult(t)) if t.tool_name == "read" => {
                Some(t.tool_call_id.as_str())
            }
            _ => None,
        })
        .collect();
    let oldest = (0..s.len())
        .filter(|&i| match s.entries()[i].message() {
            Some(AgentMessage::Assistant(a)) => {
                a.tool_calls().any(|c| ids.contains(&c.id.as_str()))
            }
            _ => false,
        })
        .map(|i| s.path_summary(i).depth as usize)
        .filter(|&d| d < start)
        .min();
    oldest.map_or(0, |d| start - d)
}

fn check(b: &Builder) -> Result<(), TestCaseError> {
    let s = &b.session;
    let leaf = b.leaf();
    if let Some(l) = leaf {
        prop_assert!(walked_before_window(s, l) <= walk_bound(b));
    }
    for config in configs() {
        prop_assert_eq!(
            plan_prune_reaching(s, leaf, &config, Reach::Window),
            plan_prune_reaching(s, leaf, &config, Reach::WholePath)
        );
        for (suffix_token_limit, idle) in [(0, false), (300, false), (2_000, false), (0, true)] {
            let stale = Stale {
                suffix_token_limit,
                idle,
            };
            prop_assert_eq!(
                plan_stale_reaching(s, leaf, &config, stale, Reach::Window),
                plan_stale_reaching(s, leaf, &config, stale, Reach::WholePath)
            );
        }
    }
    Ok(())
}

/// The position on the path, searched from the root, of the entry the
/// previous compaction of a preparation keeps first.
fn searched_kept_start(b: &Builder) -> Result<(), TestCaseError> {
    let s = &b.session;
    let settings = CompactionSettings {
        keep_recent_tokens: 100,
        ..CompactionSettings::default()
    };
    if let Ok(p) = prepare(s, b.leaf(), &settings) {
        let path = p.branch();
        let expected = p
            .previous_compaction
            .and_then(|c| match &s.entries()[path[c]].body {
                EntryBody::Compaction(cm) => cm
                    .first_kept_entry_id
                    .as_ref()
                    .and_then(|fk| path[..c].iter().position(|&i| s.entries()[i].id == *fk)),
                _ => None,
            });
        prop_assert_eq!(p.previously_kept_start, expected);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn the_previous_first_kept_entry_is_found_where_a_search_from_the_root_finds_it(
        ops in prop::collection::vec(op(), 1..70),
    ) {
        check_after_each(&ops, apply, searched_kept_start)?;
    }

    #[test]
    fn the_window_gives_what_the_whole_path_gives_and_walks_back_no_further_than_the_oldest_call(
        ops in prop::collection::vec(op(), 1..70),
    ) {
        check_after_each(&ops, apply, check)?;
    }
}

/// A read result after the boundary whose call lies before it is still
/// superseded by a newer read of the same file: the call is found walking
/// back from the window.
#[test]
fn a_result_whose_call_precedes_the_boundary_keeps_its_read_path() {
    let mut b = Builder::new();
    b.user("start");
    b.call("reading", "old", "read", json!({"path": "src/a.rs"}));
    let kept = b.user("an interjection between the call and its result");
    b.result("old", "read", &"x".repeat(800));
    b.compaction("so far", &kept, 10);
    b.call("again", "new", "read", json!({"path": "src/a.rs"}));
    b.result("new", "read", &"y".repeat(800));
    let plan = window_plan_as_whole_path(&b.session, b.leaf());
    let old = b.session.index_of("00000004").unwrap();
    assert!(
        matches!(&b.session.entries()[old].body, EntryBody::Message(AgentMessage::ToolResult(ToolResultMessage { tool_call_id, .. })) if tool_call_id.as_str() == "old")
    );
    assert_eq!(
        plan.candidates
            .iter()
            .map(|c| c.entry_index)
            .collect::<Vec<_>>(),
        vec![old]
    );
}

/// The prune plan of the window at `leaf`, with no minimum savings,
/// asserted to be the plan the whole path gives.
fn window_plan_as_whole_path(session: &Session, leaf: Option<usize>) -> PrunePlan {
    let config = PruneConfig {
        minimum_savings: 0,
        ..PruneConfig::default()
    };
    let plan = plan_prune_reaching(session, leaf, &config, Reach::Window);
    assert_eq!(
        plan,
        plan_prune_reaching(session, leaf, &config, Reach::WholePath)
    );
    plan
}

/// Entries before a window that starts at depth 200, the latest one at
/// `call_at` calling `old` with a read of `src/a.rs` (none when `None`),
/// then the window: a read result for `old`; and the session's leaf.
fn far_window(call_at: Option<usize>) -> (Builder, usize) {
    let mut b = Builder::new();
    for i in 0..200 {
        if Some(i) == call_at {
            b.call("reading", "old", "read", json!({"path": "src/a.rs"}));
        } else {
            b.user("a long history");
        }
    }
    let kept = b.user("kept from here");
    b.result("old", "read", &"x".repeat(800));
    b.compaction("so far", &kept, 10);
    let leaf = b.leaf().unwrap();
    (b, leaf)
}

/// A result whose call no entry names needs no walk: the walk used to read
/// every entry back to the root looking for it.
#[test]
fn a_result_whose_call_is_in_no_entry_reads_nothing_before_the_window() {
    let (b, leaf) = far_window(None);
    assert_eq!(walked_before_window(&b.session, leaf), 0);
    window_plan_as_whole_path(&b.session, Some(leaf));
}

/// A call before the window is looked for back to its own depth, no
/// further; a call of the id on another branch only, back to that call's
/// depth, not to the root.
#[test]
fn a_result_whose_call_precedes_the_window_reads_back_to_the_oldest_call_only() {
    let (b, leaf) = far_window(Some(150));
    assert_eq!(walked_before_window(&b.session, leaf), 200 - 150);
    let (mut b, leaf) = far_window(None);
    let fork = b.session.entries()[98].id.to_string();
    b.session.set_leaf(&fork).unwrap();
    b.call("elsewhere", "old", "read", json!({"path": "src/b.rs"}));
    let leaf_id = b.session.entries()[leaf].id.to_string();
    b.session.set_leaf(&leaf_id).unwrap();
    assert_eq!(walked_before_window(&b.session, leaf), 200 - 99);
    window_plan_as_whole_path(&b.session, Some(leaf));
}
