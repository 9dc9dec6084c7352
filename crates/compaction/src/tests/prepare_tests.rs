use musepi_session_model::{Compaction, EntryBody, MadeBy, Text};
use serde_json::json;

use crate::{
    CompactionSettings, NO_PRIOR_HISTORY, NothingToCompact, RequestOptions, finish,
    history_request, merge_summaries, prepare, turn_prefix_request,
};
use musepi_test_support::EntryBuilder as Builder;

fn settings(keep: u64) -> CompactionSettings {
    CompactionSettings {
        keep_recent_tokens: keep,
        adapt_keep_recent: false,
        ..Default::default()
    }
}

fn ids(b: &Builder, msgs: &[musepi_context_builder::ContextMessage<'_>]) -> Vec<String> {
    msgs.iter()
        .map(|m| b.session.entries()[m.entry_index].id.to_string())
        .collect()
}

/// Appendix C: the end-to-end worked example, with adaptation.
#[test]
fn appendix_c_worked_example() {
    let mut b = Builder::new();
    let x = |n: usize| "x".repeat(n);
    b.user(&x(400));
    b.call(&x(200), "c1", "read", json!({"path": "src/a.ts"}));
    b.result("c1", "read", &x(40_000));
    b.user(&x(800));
    b.call(
        &x(400),
        "c2",
        "edit",
        json!({"path": "src/a.ts", "x": x(2_974)}),
    );
    b.result("c2", "edit", &x(200));
    b.push(musepi_session_model::EntryBody::ModelChange(
        musepi_session_model::ModelChange {
            provider: Some("anthropic".into()),
            model_id: Some("claude-sonnet-4-5".into()),
            ..Default::default()
        },
    ));
    let turn_start = b.user(&x(400));
    b.call(&x(1_200), "c3", "bash", json!({"command": "npm test"}));
    b.result("c3", "bash", &x(60_000));
    let last = b.assistant(&x(2_000), &[], Some((45_000.0, 500.0)));
    // One request measured, and nothing known of what it carried besides
    // its messages: the ratio cannot be told from the overhead, so the
    // window is not adapted.
    let s = CompactionSettings::default();
    let p = prepare(&b.session, b.leaf(), &s).unwrap();
    assert_eq!(p.keep_recent_tokens, 20_000);
    // Knowing the overhead (a 5,000-token system prompt and tools), the
    // ratio is the request's prompt over its messages and that overhead.
    let held: u64 = musepi_context_builder::build_context_at(&b.session, b.leaf())
        .agent_messages()
        .rev()
        .skip(1)
        .map(musepi_context_builder::estimate_tokens)
        .sum();
    let known = CompactionSettings {
        overhead_tokens: Some(5_000),
        ..CompactionSettings::default()
    };
    let ratio = 45_000.0 / (held + 5_000) as f64;
    let adapted = prepare(&b.session, b.leaf(), &known).unwrap();
    assert_eq!(
        adapted.keep_recent_tokens,
        (20_000.0 / ratio).floor() as u64
    );
    assert!(adapted.keep_recent_tokens < 20_000);
    let p = adapted;
    assert_eq!(p.first_kept_entry_id, last);
    assert!(p.cut.is_split_turn);
    assert_eq!(
        p.branch()[p.cut.turn_start_index.unwrap()],
        b.session.index_of(turn_start.as_str()).unwrap()
    );
    assert_eq!(p.messages_to_summarize.len(), 6);
    assert_eq!(p.turn_prefix_messages.len(), 3);
    assert_eq!(p.recent_messages.len(), 1);
    assert_eq!(p.tokens_before, 45_500);
    let lists = p.file_ops.lists();
    assert!(lists.read_files.is_empty());
    assert_eq!(lists.modified_files, ["src/a.ts"]);
    let prefix = turn_prefix_request(&p, &s).unwrap();
    assert_eq!(prefix.max_tokens, Some(8_192));
    assert!(
        prefix
            .prompt_text()
            .contains("[... 58000 more characters truncated]")
    );
    let history = history_request(&p, &s, &RequestOptions::default()).unwrap();
    assert_eq!(history.max_tokens, Some(13_107));
    let merged = merge_summaries("HISTORY", Some("PREFIX"));
    let result = finish(&p, &s, &merged, None, None, None);
    assert_eq!(
        result.summary,
        "HISTORY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX\n\n## Verbatim from the session (not in the summary above)\n- command: npm test\n- path: src/a.ts\n\n<files>\n# src/\na.ts (RW)\n</files>"
    );
    assert_eq!(
        result.details,
        Some(json!({"readFiles": [], "modifiedFiles": ["src/a.ts"]}))
    );
    // Without adaptation the cut is the user message at index 3: no split.
    let p = prepare(&b.session, b.leaf(), &settings(20_000)).unwrap();
    assert!(!p.cut.is_split_turn);
    assert_eq!(p.cut.first_kept_index, 3);
}

/// A cut on an assistant splits its turn; on a user it does not.
#[test]
fn worked_example_a_split_turn() {
    let mut b = Builder::new();
    let big = "y".repeat(4_000); // 1,000 tokens each
    b.user(&big);
    b.call(&big, "a", "read", json!({"path": "a"}));
    b.result("a", "read", &big);
    let u3 = b.user(&big);
    let a4 = b.call(&big, "b", "read", json!({"path": "b"}));
    b.result("b", "read", &big);
    b.result("b2", "read", &big);
    b.call(&big, "c", "read", json!({"path": "c"}));
    b.result("c", "read", &big);
    let p = prepare(&b.session, b.leaf(), &settings(5_000)).unwrap();
    assert_eq!(p.first_kept_entry_id, a4);
    assert!(p.cut.is_split_turn);
    assert_eq!(ids(&b, &p.turn_prefix_messages), [u3.to_string()]);
    assert_eq!(p.messages_to_summarize.len(), 3);
    let p = prepare(&b.session, b.leaf(), &settings(6_000)).unwrap();
    assert_eq!(p.first_kept_entry_id, u3);
    assert!(!p.cut.is_split_turn);
}

/// One huge turn: nothing before it, so the history is "No prior history.".
#[test]
fn worked_example_b_one_huge_turn() {
    let mut b = Builder::new();
    let big = "z".repeat(4_000);
    b.user(&big);
    b.call(&big, "a", "read", json!({"path": "a"}));
    b.result("a", "read", &big);
    let kept = b.call(&big, "b", "read", json!({"path": "b"}));
    b.result("b", "read", &big);
    let p = prepare(&b.session, b.leaf(), &settings(1_500)).unwrap();
    assert_eq!(p.first_kept_entry_id, kept);
    assert!(p.cut.is_split_turn && p.messages_to_summarize.is_empty());
    assert_eq!(p.turn_prefix_messages.len(), 3);
    assert!(history_request(&p, &settings(1_500), &RequestOptions::default()).is_none());
    assert_eq!(crate::history_without_call(&p), NO_PRIOR_HISTORY);
}

/// Metadata pulled in front of a user
/// message does not make a split turn.
#[test]
fn worked_example_c_metadata_before_a_turn_start() {
    let mut b = Builder::new();
    let big = "m".repeat(4_000);
    let u0 = b.user(&big);
    b.assistant(&big, &[], None);
    let mc = b.push(musepi_session_model::EntryBody::ThinkingLevelChange {
        thinking_level: Some("high".into()),
    });
    b.user(&big);
    b.assistant(&big, &[], None);
    let p = prepare(&b.session, b.leaf(), &settings(2_000)).unwrap();
    assert_eq!(p.first_kept_entry_id, mc);
    assert!(!p.cut.is_split_turn);
    assert!(p.turn_prefix_messages.is_empty());
    assert_eq!(ids(&b, &p.messages_to_summarize)[0], u0.to_string());
    assert_eq!(p.messages_to_summarize.len(), 2);
}

/// Everything fits the kept window (docs/design.md, "Cut points and regions").
#[test]
fn nothing_to_compact() {
    let mut b = Builder::new();
    let u = b.user("hi");
    b.assistant("hello", &[], None);
    assert_eq!(
        prepare(&b.session, b.leaf(), &settings(50_000)).unwrap_err(),
        NothingToCompact::TooSmall
    );
    b.compaction("S", &u, 10);
    assert_eq!(
        prepare(&b.session, b.leaf(), &settings(1)).unwrap_err(),
        NothingToCompact::AlreadyCompacted
    );
    assert_eq!(
        NothingToCompact::AlreadyCompacted.to_string(),
        "Already compacted"
    );
    assert_eq!(
        prepare(&b.session, None, &settings(1)).unwrap_err(),
        NothingToCompact::TooSmall
    );
}

/// From pi's compaction tests, as pi runs them since 0.63.1 (docs/design.md,
/// "Cut points and regions"): a repeated compaction's range starts at the
/// entry the previous one kept first, so what it kept is summarized again
/// or kept again, the cut may fall before the previous compaction entry,
/// that entry is in no region, and the previous summary is not summarized.
#[test]
fn a_repeated_compaction_starts_at_what_the_previous_one_kept() {
    let mut b = Builder::new();
    let rep = |s: &str, n: usize| s.repeat(n);
    b.user(&rep("user msg 1 ", 12));
    b.assistant(&rep("assistant 1 ", 12), &[], None);
    let u2 = b.user(&rep("user msg 2 - kept by compaction1 ", 12));
    let a2 = b.assistant(&rep("assistant 2 ", 12), &[], None);
    let u3 = b.user(&rep("user msg 3 - kept by compaction1 ", 12));
    let a3 = b.assistant(&rep("assistant 3 ", 12), &[], Some((5_000.0, 1_000.0)));
    b.compaction("First summary", &u2, 6_000);
    let u4 = b.user(&rep("user msg 4 ", 12));
    let a4 = b.assistant(&rep("assistant 4 ", 12), &[], Some((8_000.0, 2_000.0)));
    // Everything from the previous first kept entry on fits: the cut falls
    // on it again and nothing is summarized.
    assert_eq!(
        prepare(&b.session, b.leaf(), &settings(20_000)).unwrap_err(),
        NothingToCompact::TooSmall
    );
    // A window of 100 tokens reaches back past the compaction entry: the cut
    // lands on assistant 3, which the previous compaction kept, and splits
    // its turn.
    let p = prepare(&b.session, b.leaf(), &settings(100)).unwrap();
    assert_eq!(p.boundary_start, 2);
    assert_eq!(p.first_kept_entry_id.as_str(), a3.as_str());
    assert!(p.cut.is_split_turn);
    assert_eq!(
        ids(&b, &p.messages_to_summarize),
        [u2.to_string(), a2.to_string()]
    );
    assert_eq!(ids(&b, &p.turn_prefix_messages), [u3.to_string()]);
    assert_eq!(
        ids(&b, &p.recent_messages),
        [a3.to_string(), u4.to_string(), a4.to_string()],
        "the compaction entry is in no region"
    );
    let request = history_request(&p, &settings(100), &RequestOptions::default()).unwrap();
    let conversation = request.prompt_text();
    let conversation = &conversation[..conversation.find("</conversation>").unwrap()];
    assert!(conversation.contains("user msg 2 - kept by compaction1"));
    assert!(!conversation.contains("user msg 3 - kept by compaction1"));
    assert!(!conversation.contains("First summary"));
    assert_eq!(p.previous_summary.as_deref(), Some("First summary"));
    assert!(
        request
            .prompt_text()
            .contains("<previous-summary>\nFirst summary\n</previous-summary>")
    );
    assert!(
        request
            .prompt_text()
            .contains("Write an updated checkpoint")
    );
}

/// From pi's compaction tests.
#[test]
fn cut_point_cases_of_the_reference_suite() {
    let mut b = Builder::new();
    b.assistant("only", &[], None);
    let p = crate::find_cut_point(b.session.entries(), &b.session.path_indices(0), 0, 1, 1_000);
    assert_eq!(p.first_kept_index, 0);

    let mut b = Builder::new();
    b.user("Turn 1");
    b.assistant("A1", &[], None);
    let turn2 = b.user("Turn 2");
    b.assistant(&"A2-1 ".repeat(1_000), &[], None);
    b.assistant(&"A2-2 ".repeat(1_000), &[], None);
    b.assistant(&"A2-3 ".repeat(1_000), &[], None);
    let path = b.session.path_indices(b.leaf().unwrap());
    let cut = crate::find_cut_point(b.session.entries(), &path, 0, path.len(), 3_000);
    assert!(cut.is_split_turn);
    assert_eq!(
        b.session.entries()[path[cut.turn_start_index.unwrap()]].id,
        turn2
    );

    // Custom messages are cut points and turn starts; the reference's walk
    // counts only message entries and pulls a custom message in front of
    // the cut into the kept side, where it starts the turn (no split).
    let mut b = Builder::new();
    b.user("hi");
    b.assistant("hello", &[], None);
    b.push(musepi_session_model::EntryBody::CustomMessage(
        musepi_session_model::CustomMessageEntry {
            custom_type: "note".into(),
            content: musepi_session_model::Content::text("x".repeat(4_000)),
            display: true,
            ..Default::default()
        },
    ));
    let ok = b.assistant("ok", &[], None);
    let path = b.session.path_indices(b.leaf().unwrap());
    let cut = crate::find_cut_point(b.session.entries(), &path, 0, path.len(), 1);
    assert_eq!(cut.first_kept_index, 2);
    assert!(!cut.is_split_turn);
    // Budget 3 is reached at "hello", so its turn is split.
    let cut = crate::find_cut_point(b.session.entries(), &path, 0, path.len(), 3);
    assert_eq!(
        (
            cut.first_kept_index,
            cut.turn_start_index,
            cut.is_split_turn
        ),
        (1, Some(0), true)
    );
    assert_ne!(b.session.entries()[path[cut.first_kept_index]].id, ok);
}

/// A compaction an extension supplied keeps its file lists out of the next
/// one, unless it carries the `musepi` object of musepi's pi extension.
#[test]
fn file_lists_carry_over_from_musepi_compactions_pi_stored_as_extension_made() {
    for (details, carried) in [
        (
            json!({"readFiles": ["a.rs"], "modifiedFiles": ["b.rs"]}),
            false,
        ),
        (
            json!({"readFiles": ["a.rs"], "modifiedFiles": ["b.rs"], "musepi": {"strategy": "snapcompact"}}),
            true,
        ),
        (
            json!({"readFiles": ["a.rs"], "modifiedFiles": ["b.rs"], "musepi": true}),
            false,
        ),
    ] {
        let mut b = Builder::new();
        b.user(&"first question ".repeat(40));
        b.assistant(&"first answer ".repeat(40), &[], None);
        let kept = b.user(&"second question ".repeat(40));
        b.assistant(&"second answer ".repeat(40), &[], None);
        b.push(EntryBody::Compaction(Compaction {
            summary: Text::new("Earlier summary"),
            first_kept_entry_id: Some(kept),
            tokens_before: 1_000,
            details: Some(details.clone()),
            made_by: MadeBy {
                from_hook: Some(true),
                from_extension: None,
            },
            ..Default::default()
        }));
        b.user(&"third question ".repeat(40));
        b.assistant(&"third answer ".repeat(40), &[], None);
        b.user(&"fourth question ".repeat(40));
        let p = prepare(&b.session, b.leaf(), &settings(100)).unwrap();
        let read = p.file_ops.read.sorted();
        let edited = p.file_ops.edited.sorted();
        if carried {
            assert_eq!(read, ["a.rs"], "{details}");
            assert_eq!(edited, ["b.rs"], "{details}");
        } else {
            assert!(
                read.is_empty() && edited.is_empty(),
                "{details}: {read:?} {edited:?}"
            );
        }
    }
}

/// Every summary request of a compaction asks for the session's thinking
/// level at the leaf (pi 0.73.1), and for no reasoning when it is `off`: a
/// level set on another branch, or before a later change on the path, does
/// not count.
#[test]
fn summary_requests_carry_the_thinking_level_of_the_path() {
    let level = |l: &str| EntryBody::ThinkingLevelChange {
        thinking_level: Some(l.to_owned()),
    };
    let mut b = Builder::new();
    let root = b.push(level("high"));
    b.push(level("minimal"));
    b.session.set_leaf(root.as_str()).unwrap();
    b.push(level("xhigh"));
    b.filler("early", 400);
    b.push(level("medium"));
    b.user("one long turn");
    b.call("step", "c1", "read", json!({"path": "a.rs"}));
    b.result("c1", "read", &"r".repeat(4_000));
    b.call("step", "c2", "read", json!({"path": "b.rs"}));
    b.result("c2", "read", &"r".repeat(4_000));
    b.assistant(&"done ".repeat(240), &[], None);
    let s = settings(300);
    let p = prepare(&b.session, b.leaf(), &s).unwrap();
    assert!(p.cut.is_split_turn, "the test needs a turn prefix");
    assert_eq!(p.reasoning.as_deref(), Some("medium"));
    let plan = crate::SummaryPlan::new(&p, &s, &RequestOptions::default());
    let mut sent: Vec<Option<String>> = plan.requests().map(|r| r.reasoning.clone()).collect();
    sent.push(plan.short_request("MERGED").reasoning);
    sent.push(crate::short_summary_request(&p, "MERGED", &s, &RequestOptions::default()).reasoning);
    assert_eq!(sent.len(), 4);
    assert!(
        sent.iter().all(|r| r.as_deref() == Some("medium")),
        "{sent:?}"
    );

    b.push(level("off"));
    b.filler("after", 400);
    b.assistant(&"more ".repeat(240), &[], None);
    let p = prepare(&b.session, b.leaf(), &s).unwrap();
    let plan = crate::SummaryPlan::new(&p, &s, &RequestOptions::default());
    assert_eq!(p.reasoning, None);
    assert!(plan.requests().all(|r| r.reasoning.is_none()));
    assert_eq!(plan.short_request("MERGED").reasoning, None);
}
