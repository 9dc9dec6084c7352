//! From pi's tree-traversal tests (`tree-traversal.test.ts`): appends, the leaf, branches,
//! `getTree`, `branch`, `branchWithSummary` and `createBranchedSession`.

mod common;

use common::{Clock, asst, body, conversation, created, header, ids, text_of, usage_json, user};
use musepi_session_model::{
    EntryBody, Header, Journal, SequentialIds, Session, Tree, TreeEdit, load_file,
};
use serde_json::json;

fn children_ids(s: &Session, tree: &Tree, id: &str) -> Vec<String> {
    let i = s.index_of(id).expect("known id");
    let mut c: Vec<String> = tree
        .children(i)
        .iter()
        .map(|&c| s.entries()[c].id.to_string())
        .collect();
    c.sort();
    c
}

#[test]
fn appends_chain_each_entry_to_the_previous_one() {
    let (s, _, [a, b, d]) = conversation(["first", "second", "third"]);
    let e = s.entries();
    assert_eq!(e.len(), 3);
    assert_eq!(e[0].parent_id, None);
    assert_eq!(e[1].parent_id.as_ref(), Some(&a));
    assert_eq!(e[2].parent_id.as_ref(), Some(&b));
    assert!(e.iter().all(|e| e.type_name() == "message"));
    assert_eq!([&e[0].id, &e[1].id, &e[2].id], [&a, &b, &d]);
}

#[test]
fn thinking_and_model_changes_sit_in_the_chain() {
    let (mut s, mut c) = (Session::new(header()), Clock::default());
    let u = s.append(user("hi"), &mut c.stamp());
    let t = s.append(
        body(json!({"type": "thinking_level_change", "thinkingLevel": "high"})),
        &mut c.stamp(),
    );
    let m = s.append(
        body(json!({"type": "model_change", "provider": "openai", "modelId": "gpt-4"})),
        &mut c.stamp(),
    );
    let a = s.append(asst("ok"), &mut c.stamp());
    assert_eq!(s.get(t.as_str()).unwrap().parent_id.as_ref(), Some(&u));
    assert_eq!(s.get(m.as_str()).unwrap().parent_id.as_ref(), Some(&t));
    assert_eq!(s.get(a.as_str()).unwrap().parent_id.as_ref(), Some(&m));
    let EntryBody::ModelChange(mc) = &s.get(m.as_str()).unwrap().body else {
        panic!("not a model change")
    };
    assert_eq!(
        mc.provider_and_model(),
        Some(("openai".into(), "gpt-4".into()))
    );
}

#[test]
fn compaction_and_custom_entries_store_their_fields_and_chain() {
    let (mut s, mut c, [id1, id2]) = conversation(["u", "a"]);
    let comp = s.append(
        body(
            json!({"type": "compaction", "summary": "summary", "firstKeptEntryId": id1.as_str(),
                    "tokensBefore": 1000, "usage": usage_json(10, 20, 30, 40)}),
        ),
        &mut c.stamp(),
    );
    let e = s.get(comp.as_str()).unwrap();
    assert_eq!(e.parent_id.as_ref(), Some(&id2));
    let EntryBody::Compaction(cp) = &e.body else {
        panic!()
    };
    assert_eq!(cp.summary.as_str(), "summary");
    assert_eq!(cp.first_kept_entry_id.as_ref(), Some(&id1));
    assert_eq!(cp.tokens_before, 1000);
    assert!((cp.usage.as_ref().unwrap().total_tokens - 100.0).abs() < f64::EPSILON);
    let custom = s.append(
        body(json!({"type": "custom", "customType": "my_data", "data": {"key": "value"}})),
        &mut c.stamp(),
    );
    let EntryBody::Custom { custom_type, data } = &s.get(custom.as_str()).unwrap().body else {
        panic!()
    };
    assert_eq!(custom_type, "my_data");
    assert_eq!(data.as_ref().unwrap().to_value(), json!({"key": "value"}));
    let next = s.append(user("after"), &mut c.stamp());
    assert_eq!(
        s.get(next.as_str()).unwrap().parent_id.as_ref(),
        Some(&custom)
    );
}

#[test]
fn the_leaf_follows_every_append() {
    let (mut s, mut c) = (Session::new(header()), Clock::default());
    assert_eq!(s.leaf_id(), None);
    assert!(s.leaf_entry().is_none());
    let a = s.append(user("u"), &mut c.stamp());
    assert_eq!(s.leaf_id(), Some(&a));
    let t = s.append(
        body(json!({"type": "thinking_level_change", "thinkingLevel": "low"})),
        &mut c.stamp(),
    );
    assert_eq!(s.leaf_id(), Some(&t));
    assert_eq!(s.leaf_entry().unwrap().id, t);
}

#[test]
fn a_named_leaf_is_the_current_one_the_empty_path_or_an_entry() {
    let (mut s, mut c) = (Session::new(header()), Clock::default());
    let a = s.append(user("u"), &mut c.stamp());
    let b = s.append(user("v"), &mut c.stamp());
    assert_eq!(s.leaf_named(None), Ok(s.index_of(b.as_str())));
    assert_eq!(s.leaf_named(Some("null")), Ok(None));
    assert_eq!(s.leaf_named(Some(a.as_str())), Ok(s.index_of(a.as_str())));
    assert_eq!(s.leaf_named(Some("nope")), Err("nope"));
}

#[test]
fn get_branch_walks_from_the_root() {
    let (mut s, mut c) = (Session::new(header()), Clock::default());
    assert!(s.branch(None).unwrap().is_empty());
    let a = s.append(user("1"), &mut c.stamp());
    assert_eq!(ids(&s.branch(None).unwrap()), [a.to_string()]);
    let b = s.append(asst("2"), &mut c.stamp());
    let t = s.append(
        body(json!({"type": "thinking_level_change", "thinkingLevel": "high"})),
        &mut c.stamp(),
    );
    let d = s.append(user("4"), &mut c.stamp());
    assert_eq!(
        ids(&s.branch(None).unwrap()),
        [&a, &b, &t, &d].map(ToString::to_string)
    );
    assert_eq!(
        ids(&s.branch(Some(b.as_str())).unwrap()),
        [&a, &b].map(ToString::to_string)
    );
}

#[test]
fn get_tree_of_a_linear_session_is_one_chain() {
    let (mut s, mut c) = (Session::new(header()), Clock::default());
    assert!(Tree::new(&s).roots().is_empty());
    for t in ["1", "2", "3"] {
        s.append(user(t), &mut c.stamp());
    }
    let tree = Tree::new(&s);
    assert_eq!(tree.roots(), [0]);
    assert_eq!(tree.children(0), [1]);
    assert_eq!(tree.children(1), [2]);
    assert!(tree.children(2).is_empty());
}

#[test]
fn branching_gives_a_node_several_children() {
    let (mut s, mut c, [id1, id2, id3]) = conversation(["1", "2", "3"]);
    s.set_leaf(id2.as_str()).unwrap();
    let id4 = s.append(user("4-branch"), &mut c.stamp());
    let tree = Tree::new(&s);
    assert_eq!(tree.roots(), [s.index_of(id1.as_str()).unwrap()]);
    assert_eq!(children_ids(&s, &tree, id1.as_str()), [id2.to_string()]);
    let mut expected = vec![id3.to_string(), id4.to_string()];
    expected.sort();
    assert_eq!(children_ids(&s, &tree, id2.as_str()), expected);
    s.set_leaf(id2.as_str()).unwrap();
    s.append(user("5-branch"), &mut c.stamp());
    assert_eq!(
        Tree::new(&s)
            .children(s.index_of(id2.as_str()).unwrap())
            .len(),
        3
    );
}

#[test]
fn deep_branching_keeps_every_fork() {
    let (mut s, mut c) = (Session::new(header()), Clock::default());
    let n: Vec<_> = (1..=4)
        .map(|i| s.append(user(&i.to_string()), &mut c.stamp()))
        .collect();
    s.set_leaf(n[1].as_str()).unwrap();
    let n5 = s.append(user("5"), &mut c.stamp());
    let n6 = s.append(user("6"), &mut c.stamp());
    s.set_leaf(n5.as_str()).unwrap();
    let n7 = s.append(user("7"), &mut c.stamp());
    let tree = Tree::new(&s);
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(
        children_ids(&s, &tree, n[1].as_str()),
        sorted(vec![n[2].to_string(), n5.to_string()])
    );
    assert_eq!(
        children_ids(&s, &tree, n5.as_str()),
        sorted(vec![n6.to_string(), n7.to_string()])
    );
    assert_eq!(children_ids(&s, &tree, n[2].as_str()), [n[3].to_string()]);
}

#[test]
fn branch_moves_the_leaf_and_refuses_unknown_ids() {
    let (mut s, mut c, [id1, id2]) = conversation(["1", "2"]);
    s.set_leaf(id1.as_str()).unwrap();
    assert_eq!(s.leaf_id(), Some(&id1));
    let err = s.set_leaf("nonexistent").unwrap_err();
    assert_eq!(err.to_string(), "Entry nonexistent not found");
    let id3 = s.append(user("3"), &mut c.stamp());
    assert_eq!(s.get(id3.as_str()).unwrap().parent_id.as_ref(), Some(&id1));
    assert_ne!(id3, id2);
}

#[test]
fn branch_with_summary_hangs_the_summary_under_the_target() {
    let (mut s, mut c, [id1, _]) = conversation(["1", "2"]);
    let sum = s
        .branch_with_summary(
            Some(id1.as_str()),
            "Summary of abandoned work",
            None,
            false,
            None,
            &mut c.stamp(),
        )
        .unwrap();
    assert_eq!(s.leaf_id(), Some(&sum));
    let e = s.get(sum.as_str()).unwrap();
    assert_eq!(e.parent_id.as_ref(), Some(&id1));
    let EntryBody::BranchSummary(b) = &e.body else {
        panic!()
    };
    assert_eq!(b.summary.as_str(), "Summary of abandoned work");
    assert_eq!(b.from_id, id1.as_str());
    let err = s
        .branch_with_summary(Some("nonexistent"), "x", None, false, None, &mut c.stamp())
        .unwrap_err();
    assert_eq!(err.to_string(), "Entry nonexistent not found");
}

#[test]
fn leaf_entry_and_get_return_stored_entries() {
    let (mut s, mut c) = (Session::new(header()), Clock::default());
    assert!(s.leaf_entry().is_none());
    let u = s.append(user("hello"), &mut c.stamp());
    let a = s.append(asst("hi there"), &mut c.stamp());
    assert!(s.get("nonexistent").is_none());
    assert_eq!(text_of(s.get(u.as_str()).unwrap()), "hello");
    assert_eq!(text_of(s.get(a.as_str()).unwrap()), "hi there");
    assert_eq!(s.leaf_entry().unwrap().id, a);
}

#[test]
fn the_path_follows_the_branch() {
    let (mut s, mut c, [_, id2, _]) = conversation(["msg1", "msg2", "msg3"]);
    s.set_leaf(id2.as_str()).unwrap();
    s.append(asst("msg4-branch"), &mut c.stamp());
    let texts: Vec<String> = s.branch(None).unwrap().iter().map(|e| text_of(e)).collect();
    assert_eq!(texts, ["msg1", "msg2", "msg4-branch"]);
}

#[test]
fn the_path_from_a_depth_on_is_the_end_of_the_path_from_the_root() {
    let (mut s, mut c, [root, abandoned]) = conversation(["root", "abandoned"]);
    s.set_leaf(root.as_str()).unwrap();
    for text in ["kept 1", "kept 2", "kept 3"] {
        s.append(asst(text), &mut c.stamp());
    }
    let leaf = s.leaf_index().unwrap();
    let whole = s.path_indices(leaf);
    assert_eq!(whole, [0, 2, 3, 4]);
    for depth in 0..whole.len() {
        assert_eq!(
            s.path_indices_from(leaf, depth),
            whole[depth..],
            "from depth {depth}"
        );
    }
    assert_eq!(s.path_indices_from(leaf, 9), [leaf]);
    let off_path = s.index_of(abandoned.as_str()).unwrap();
    assert_eq!(s.path_indices_from(off_path, 0), [0, off_path]);
}

fn branched_header() -> Header {
    Header::new("branched", "2025-01-02T00:00:00.000Z", "/work")
}

#[test]
fn create_branched_session_keeps_only_the_path() {
    let (mut s, mut c) = (Session::new(header()), Clock::default());
    let err = s
        .branched("nonexistent", branched_header(), &mut c.stamp())
        .unwrap_err();
    assert_eq!(err.to_string(), "Entry nonexistent not found");
    let n: Vec<_> = (1..=4)
        .map(|i| s.append(user(&i.to_string()), &mut c.stamp()))
        .collect();
    s.set_leaf(n[2].as_str()).unwrap();
    s.append(user("5"), &mut c.stamp());
    let b = s
        .branched(n[1].as_str(), branched_header(), &mut c.stamp())
        .unwrap();
    assert_eq!(
        ids(&b.entries().iter().collect::<Vec<_>>()),
        [n[0].to_string(), n[1].to_string()]
    );

    let (mut s, mut c, [id1, id2, _]) = conversation(["1", "2", "3"]);
    s.set_leaf(id2.as_str()).unwrap();
    let id4 = s.append(user("4"), &mut c.stamp());
    let id5 = s.append(asst("5"), &mut c.stamp());
    let b = s
        .branched(id5.as_str(), branched_header(), &mut c.stamp())
        .unwrap();
    assert_eq!(
        ids(&b.entries().iter().collect::<Vec<_>>()),
        [&id1, &id2, &id4, &id5].map(ToString::to_string)
    );
}

fn header_lines(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path)
        .expect("readable")
        .lines()
        .filter(|l| l.contains(r#""type":"session""#))
        .count()
}

#[test]
fn a_persisted_branch_without_an_assistant_waits_for_one() {
    let dir = tempfile::tempdir().unwrap();
    let (s, mut c, [first, _, _, _]) = conversation(["1", "2", "3", "4"]);
    let branched = s
        .branched(first.as_str(), branched_header(), &mut c.stamp())
        .unwrap();
    let path = dir.path().join("branched.jsonl");
    let mut j = Journal::with_session(&path, branched).unwrap();
    assert!(
        !path.exists(),
        "nothing is written before an assistant message"
    );
    j.append(
        body(json!({"type": "custom", "customType": "note"})),
        &mut c.stamp(),
    )
    .unwrap();
    assert!(!path.exists());
    j.append(asst("reply"), &mut c.stamp()).unwrap();
    assert!(path.exists());
    assert_eq!(header_lines(&path), 1);
    let (loaded, _) = load_file(&path, &mut SequentialIds::new()).unwrap();
    let mut all: Vec<&str> = loaded.entries().iter().map(|e| e.id.as_str()).collect();
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "ids are unique");
    assert_eq!(n, 3);
}

#[test]
fn a_persisted_branch_with_an_assistant_is_written_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (s, mut c, [_, id2, _]) = conversation(["1", "2", "3"]);
    let branched = s
        .branched(id2.as_str(), branched_header(), &mut c.stamp())
        .unwrap();
    let path = dir.path().join("b.jsonl");
    Journal::with_session(&path, branched).unwrap();
    assert!(path.exists());
    assert_eq!(header_lines(&path), 1);
}

#[test]
fn usage_survives_a_reopen() {
    let (_dir, path, mut c, mut j) = created("usage.jsonl");
    let u = usage_json(10, 20, 30, 40);
    let id1 = j.append(user("u"), &mut c.stamp()).unwrap();
    j.append(asst("a"), &mut c.stamp()).unwrap();
    let tr = j
        .append(
            body(
                json!({"type": "message", "message": {"role": "toolResult", "toolCallId": "c1",
            "toolName": "read", "content": [{"type": "text", "text": "x"}], "isError": false,
            "usage": u, "timestamp": 3}}),
            ),
            &mut c.stamp(),
        )
        .unwrap();
    let comp = j
        .append(
            body(
                json!({"type": "compaction", "summary": "s", "firstKeptEntryId": id1.as_str(),
            "tokensBefore": 5, "usage": u}),
            ),
            &mut c.stamp(),
        )
        .unwrap();
    let usage = match &j.session().get(comp.as_str()).unwrap().body {
        EntryBody::Compaction(cp) => cp.usage.clone(),
        _ => None,
    };
    let bs = j
        .branch_with_summary(
            Some(id1.as_str()),
            "branch",
            None,
            false,
            usage.clone(),
            &mut c.stamp(),
        )
        .unwrap();
    let reopened = Journal::open(&path, &mut SequentialIds::new()).unwrap();
    let s = reopened.session();
    let EntryBody::Compaction(cp) = &s.get(comp.as_str()).unwrap().body else {
        panic!()
    };
    assert_eq!(cp.usage, usage);
    let EntryBody::BranchSummary(b) = &s.get(bs.as_str()).unwrap().body else {
        panic!()
    };
    assert_eq!(b.usage, usage);
    let tool = s
        .get(tr.as_str())
        .unwrap()
        .message()
        .unwrap()
        .as_tool_result()
        .unwrap();
    assert_eq!(tool.tool_call_id, "c1");
    let raw = s.raw_line(s.index_of(tr.as_str()).unwrap()).unwrap();
    assert!(
        raw.contains(
            r#""usage":{"input":10,"output":20,"cacheRead":30,"cacheWrite":40,"totalTokens":100"#
        ),
        "{raw}"
    );
    assert!((usage.unwrap().total_tokens - 100.0).abs() < f64::EPSILON);
}
