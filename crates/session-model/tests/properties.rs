//! Properties of the journal file: any sequence of appends, branches and
//! labels round-trips through the file, and a file cut at any byte loses at
//! most its torn last line.

mod common;

use common::{asst, body, created, user};
use musepi_session_model::{
    Journal, ProblemKind, SequentialIds, SessionError, TreeEdit, load_bytes,
};
use proptest::prelude::*;
use serde_json::json;

#[derive(Debug, Clone)]
enum Op {
    User(String),
    Assistant(String),
    Custom(String),
    /// Move the leaf to the entry at this position (modulo the count).
    Branch(usize),
    ResetLeaf,
    /// Label the entry at this position; `None` clears.
    Label(usize, Option<String>),
    BranchSummary(usize, String),
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,20}",
        "\\PC{0,12}",
        Just("quote \" back\\slash \n newline \t tab \u{1} ctrl 😀 é".to_owned()),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => text().prop_map(Op::User),
        4 => text().prop_map(Op::Assistant),
        1 => text().prop_map(Op::Custom),
        2 => any::<usize>().prop_map(Op::Branch),
        1 => Just(Op::ResetLeaf),
        2 => (any::<usize>(), proptest::option::of("[a-z]{0,6}")).prop_map(|(i, l)| Op::Label(i, l)),
        1 => (any::<usize>(), text()).prop_map(|(i, s)| Op::BranchSummary(i, s)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_sequence_of_operations_round_trips(ops in proptest::collection::vec(op(), 1..40)) {
        let (_dir, path, mut c, mut j) = created("prop.jsonl");
        // The first flush needs an assistant message.
        let mut last_append = Some(j.append(asst("start"), &mut c.stamp()).unwrap());
        for op in ops {
            let n = j.session().len();
            let id_at = |i: usize| j.session().entries()[i % n].id.to_string();
            let appended = match op {
                Op::User(t) => Some(j.append(user(&t), &mut c.stamp()).unwrap()),
                Op::Assistant(t) => Some(j.append(asst(&t), &mut c.stamp()).unwrap()),
                Op::Custom(t) => Some(j.append(body(json!({"type": "custom", "customType": t, "data": {"t": t}})), &mut c.stamp()).unwrap()),
                Op::Branch(i) => {
                    let id = id_at(i);
                    j.set_leaf(&id).unwrap();
                    None
                }
                Op::ResetLeaf => {
                    j.reset_leaf();
                    None
                }
                Op::Label(i, label) => {
                    let id = id_at(i);
                    Some(j.append_label(&id, label.as_deref(), &mut c.stamp()).unwrap())
                }
                Op::BranchSummary(i, s) => {
                    let id = id_at(i);
                    Some(j.branch_with_summary(Some(&id), &s, None, false, None, &mut c.stamp()).unwrap())
                }
            };
            if appended.is_some() {
                last_append = appended;
            }
        }
        let reopened = Journal::open(&path, &mut SequentialIds::new()).unwrap();
        let (a, b) = (j.session(), reopened.session());
        prop_assert!(b.problems().is_empty(), "{:?}", b.problems());
        prop_assert_eq!(a.entries(), b.entries());
        prop_assert_eq!(a.labels(), b.labels());
        prop_assert_eq!(b.leaf_id(), last_append.as_ref(), "the leaf is the last line");
        for i in 0..a.len() {
            prop_assert_eq!(a.parent_index(i), b.parent_index(i));
            prop_assert_eq!(a.raw_line(i).unwrap(), b.raw_line(i).unwrap());
        }
    }
}

fn sample_file() -> String {
    let (_dir, path, mut c, mut j) = created("sample.jsonl");
    j.append(user("héllo \"world\"\n"), &mut c.stamp())
        .expect("sample");
    j.append(asst("answer 😀"), &mut c.stamp()).expect("sample");
    let first = j.session().entries()[0].id.to_string();
    j.append_label(&first, Some("start"), &mut c.stamp())
        .expect("sample");
    j.append(user("second"), &mut c.stamp()).expect("sample");
    j.append(body(json!({"type": "compaction", "summary": "s", "firstKeptEntryId": first, "tokensBefore": 12})), &mut c.stamp()).expect("sample");
    j.append(asst("last"), &mut c.stamp()).expect("sample");
    std::fs::read_to_string(&path).expect("sample")
}

#[test]
fn a_file_cut_at_any_byte_loses_at_most_its_torn_last_line() {
    let text = sample_file();
    let bytes = text.as_bytes();
    let full = load_bytes("full".as_ref(), bytes, &mut SequentialIds::new()).unwrap();
    let header_end = text.find('\n').unwrap();
    for cut in 0..=bytes.len() {
        let part = &bytes[..cut];
        match load_bytes("cut".as_ref(), part, &mut SequentialIds::new()) {
            Err(SessionError::Empty { .. } | SessionError::NotASession { .. }) => {
                assert!(cut <= header_end, "cut {cut}: only a cut header fails");
            }
            Err(e) => panic!("cut {cut}: {e}"),
            Ok(s) => {
                // Lines complete up to the cut (a line missing only its newline is complete).
                let newlines = part.split(|&b| b == b'\n').count() - 1;
                let complete = newlines.saturating_sub(1);
                let whole_last = cut > 0 && bytes.get(cut) == Some(&b'\n');
                let expected = complete + usize::from(whole_last && cut > header_end);
                assert_eq!(s.len(), expected.min(full.len()), "cut {cut}");
                assert_eq!(s.entries(), &full.entries()[..s.len()], "cut {cut}");
                let torn = s
                    .problems()
                    .iter()
                    .filter(|p| matches!(p.kind, ProblemKind::TornLine { .. }))
                    .count();
                assert_eq!(s.problems().len(), torn, "cut {cut}: {:?}", s.problems());
                assert!(torn <= 1);
            }
        }
    }
}
