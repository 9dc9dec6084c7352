//! The session journal against the reference answers: migration bytes,
//! entries, tree, labels, name, leaf and path.

#![allow(clippy::unwrap_used)]

use musepi_session_model::{Journal, SequentialIds, Session, Tree, write_session};
use musepi_tests::{AnswerRecord, answer_index, sha256_hex};
use serde_json::{Value, json};

fn open(record: &AnswerRecord) -> Journal {
    Journal::open(record.session_path(), &mut SequentialIds::new()).unwrap()
}

fn entries_json(session: &Session) -> Vec<Value> {
    session
        .entries()
        .iter()
        .map(|e| {
            let mut v = json!({"id": e.id.as_str(), "parentId": e.parent_id.as_ref().map(musepi_session_model::EntryId::as_str), "type": e.type_name()});
            if let Some(m) = e.message() {
                v["role"] = m.role().into();
            }
            v
        })
        .collect()
}

#[test]
fn migration_rewrites_byte_for_byte_as_the_reference_does() {
    for record in answer_index().iter().filter(|r| r.leaf.is_none()) {
        let answer = record.read_answer();
        let journal = open(record);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.jsonl");
        write_session(&out, journal.session()).unwrap();
        let bytes = std::fs::read(&out).unwrap();
        let m = &answer["migration"];
        assert_eq!(
            journal.migration_pending(),
            m["fileRewritten"].as_bool().unwrap(),
            "{}",
            record.session
        );
        assert_eq!(
            sha256_hex(&bytes),
            m["rewrittenSha256"].as_str().unwrap(),
            "{}",
            record.session
        );
        assert_eq!(
            bytes.len() as u64,
            m["rewrittenBytes"].as_u64().unwrap(),
            "{}",
            record.session
        );
        if let Some(migrated) = record.record["migrated"].as_str() {
            let expected = std::fs::read(record.answer_file(migrated)).unwrap();
            assert_eq!(
                String::from_utf8(bytes).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
    }
}

#[test]
fn entries_tree_labels_name_and_path_match_the_reference() {
    for record in answer_index() {
        let answer = record.read_answer();
        let mut journal = open(&record);
        let name = &record.answer;
        let s = journal.session();
        let h = s.header();
        assert_eq!(answer["header"]["id"], json!(h.id), "{name}");
        assert_eq!(answer["header"]["version"], json!(h.version), "{name}");
        assert_eq!(answer["entryCount"], json!(s.len()), "{name}");
        assert_eq!(answer["entries"], Value::Array(entries_json(s)), "{name}");
        assert_eq!(
            answer["fileLeafId"],
            json!(s.leaf_id().map(musepi_session_model::EntryId::as_str)),
            "{name}"
        );
        let labels: Vec<Value> = s
            .labels()
            .iter()
            .map(|(k, v)| json!({"targetId": k.as_str(), "label": v}))
            .collect();
        assert_eq!(answer["labels"], Value::Array(labels), "{name}");
        assert_eq!(answer["sessionName"], json!(s.session_name()), "{name}");
        let tree = Tree::new(s);
        assert_eq!(answer["tree"]["roots"], json!(tree.roots().len()), "{name}");
        let nodes: Vec<Value> = tree
            .walk()
            .iter()
            .map(|n| json!({"id": s.entries()[n.index].id.as_str(), "depth": n.depth, "children": n.children}))
            .collect();
        assert_eq!(answer["tree"]["nodes"], Value::Array(nodes), "{name}");
        if let Some(leaf) = &record.leaf {
            journal.set_leaf(leaf).unwrap();
        }
        let s = journal.session();
        assert_eq!(
            answer["leafId"],
            json!(s.leaf_id().map(musepi_session_model::EntryId::as_str)),
            "{name}"
        );
        let branch: Vec<&str> = s
            .branch(None)
            .unwrap()
            .iter()
            .map(|e| e.id.as_str())
            .collect();
        assert_eq!(answer["branch"], json!(branch), "{name}");
    }
}
