use serde_json::json;

use crate::{
    PruneConfig, PruneKind, USELESS_NOTICE, apply_prune, placeholder, plan_prune,
    plan_stale_results,
};
use musepi_test_support::EntryBuilder as Builder;

/// A read of `path` (call `id`, which the call says too) and its `output`.
fn read(b: &mut Builder, id: &str, path: &str, output: &str) {
    b.call(id, id, "read", json!({ "path": path }));
    b.result(id, "read", output);
}

/// A case musepi adds to pi's tests.
#[test]
fn old_results_behind_the_protected_window_are_pruned() {
    let mut b = Builder::new();
    let result = "r".repeat(40_000); // 10,000 tokens
    for i in 0..5 {
        b.user("go");
        b.call("run", &format!("old{i}"), "bash", json!({"command": "x"}));
        b.result(&format!("old{i}"), "bash", &result);
    }
    for i in 0..5 {
        b.call("run", &format!("new{i}"), "bash", json!({"command": "y"}));
        b.result(&format!("new{i}"), "bash", &"n".repeat(36_000)); // 9,000 tokens: 45,000 protected
    }
    let plan = plan_prune(&b.session, b.leaf(), &PruneConfig::default());
    assert_eq!(plan.candidates.len(), 5);
    // Each placeholder names its entry, whose original the write keeps.
    for c in &plan.candidates {
        let id = b.session.entries()[c.entry_index].id.as_str();
        assert_eq!(
            c.placeholder,
            format!("[Output truncated - 10000 tokens; original kept: recall entry {id}]")
        );
        assert_eq!(c.kind, PruneKind::Age);
    }
    assert_eq!(plan.tokens_saved, 5 * (10_000 - 18));
    let changes = apply_prune(&b.session, &plan, 1_800_000_000_000);
    assert_eq!(changes.len(), 5);
    let mut pruned = b.session.clone();
    for change in &changes {
        pruned.replace(change.clone());
        let line = &pruned.raw_line(change.index()).unwrap();
        let t = change.entry().message().unwrap().as_tool_result().unwrap();
        let expected = format!(
            "[Output truncated - 10000 tokens; original kept: recall entry {}]",
            change.entry().id
        );
        assert_eq!(t.pruned_at, Some(1_800_000_000_000.0));
        assert_eq!(t.content.joined_text(), expected);
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            v["message"]["content"],
            json!([{"type": "text", "text": expected}])
        );
        assert_eq!(v["message"]["prunedAt"], json!(1_800_000_000_000_i64));
        assert!(line.ends_with(r#","prunedAt":1800000000000}}"#), "{line}");
    }
}

#[test]
fn small_savings_change_nothing() {
    let mut b = Builder::new();
    b.call("run", "a", "bash", json!({}));
    b.result("a", "bash", &"r".repeat(16_000)); // 4,000 tokens
    b.call("run", "b", "bash", json!({}));
    b.result("b", "bash", &"n".repeat(164_000)); // 41,000 protected
    let plan = plan_prune(&b.session, b.leaf(), &PruneConfig::default());
    assert!(plan.is_empty());
}

#[test]
fn tiny_results_skill_results_and_the_window_are_never_age_pruned() {
    let mut b = Builder::new();
    b.call("s", "s", "skill", json!({}));
    b.result("s", "skill", &"s".repeat(200_000));
    b.call("t", "t", "bash", json!({}));
    b.result("t", "bash", &"t".repeat(160)); // 40 tokens
    read(&mut b, "r", "skill://guide", &"g".repeat(200_000));
    b.call("old", "o", "bash", json!({}));
    b.result("o", "bash", &"o".repeat(100_000));
    b.call("new", "n", "bash", json!({}));
    b.result("n", "bash", &"n".repeat(164_000));
    let plan = plan_prune(
        &b.session,
        b.leaf(),
        &PruneConfig {
            minimum_savings: 0,
            ..PruneConfig::default()
        },
    );
    let pruned: Vec<String> = plan
        .candidates
        .iter()
        .map(|c| b.session.entries()[c.entry_index].id.to_string())
        .collect();
    assert_eq!(pruned.len(), 1, "{pruned:?}");
    assert_eq!(
        b.session.entries()[plan.candidates[0].entry_index]
            .message()
            .unwrap()
            .as_tool_result()
            .unwrap()
            .tool_call_id,
        "o"
    );
}

#[test]
fn useless_results_are_elided_even_inside_the_window() {
    let mut b = Builder::new();
    b.call("grep", "g", "grep", json!({"q": "x"}));
    b.result_with("g", "grep", &"no matches ".repeat(20), false, Some(true));
    b.call("grep", "e", "grep", json!({"q": "y"}));
    b.result_with("e", "grep", &"error ".repeat(10), true, Some(true));
    let config = PruneConfig {
        minimum_savings: 0,
        ..PruneConfig::default()
    };
    let plan = plan_prune(&b.session, b.leaf(), &config);
    assert_eq!(plan.candidates.len(), 1);
    let id = b.session.entries()[plan.candidates[0].entry_index]
        .id
        .as_str();
    assert_eq!(
        plan.candidates[0].placeholder,
        placeholder(USELESS_NOTICE, id)
    );
    assert_eq!(plan.candidates[0].kind, PruneKind::Useless);
}

#[test]
fn older_reads_of_a_file_are_superseded() {
    let mut b = Builder::new();
    read(&mut b, "r1", "src/a.ts", &"v1 ".repeat(100));
    read(&mut b, "r2", "src/a.ts:10-20", &"part ".repeat(100));
    read(&mut b, "r3", "src/a.ts", &"v2 ".repeat(100));
    read(&mut b, "r4", "src/b.ts", &"b ".repeat(100));
    let plan = plan_stale_results(&b.session, b.leaf(), &PruneConfig::default(), 8_000, false);
    let ids: Vec<&str> = plan
        .candidates
        .iter()
        .map(|c| {
            b.session.entries()[c.entry_index]
                .message()
                .unwrap()
                .as_tool_result()
                .unwrap()
                .tool_call_id
                .as_str()
        })
        .collect();
    assert_eq!(ids, ["r2", "r1"]);
    assert!(
        plan.candidates
            .iter()
            .all(|c| c.kind == PruneKind::Superseded)
    );
}

#[test]
fn the_stale_pass_waits_for_a_small_suffix_unless_idle() {
    let mut b = Builder::new();
    read(&mut b, "r1", "a", &"v1 ".repeat(100));
    read(&mut b, "r2", "a", &"x".repeat(40_000)); // 10,000 tokens after r1
    assert!(
        plan_stale_results(&b.session, b.leaf(), &PruneConfig::default(), 8_000, false).is_empty()
    );
    assert_eq!(
        plan_stale_results(&b.session, b.leaf(), &PruneConfig::default(), 8_000, true)
            .candidates
            .len(),
        1
    );
}
