//! From the model's answer to the stored summary, where the leaf lands, and
//! writing both to the session (docs/design.md, "Branch summaries").

use musepi_context_builder::{
    SummaryResponse, Template, format_files_block, template, upsert_file_operations,
};
use musepi_session_model::{AgentMessage, EntryBody, EntryId, Session, Stamp, TreeEdit, Usage};
use serde_json::Value;

use crate::error::BranchError;
use crate::prepare::BranchPreparation;

/// The two lines that open every generated branch summary.
pub const PREAMBLE: Template = template!("branch-summary/branch-summary-preamble.md");

/// The summary when nothing fits the budget (no model is asked).
pub const NO_CONTENT: &str = "No content to summarize";
/// The summary when the model answered with no text.
pub const NO_SUMMARY: &str = "No summary generated";

/// What a `branch_summary` entry will hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The text, preamble and `<files>` block included.
    pub summary: String,
    /// `{readFiles, modifiedFiles}`, or what an extension supplied.
    pub details: Option<Value>,
    /// An extension wrote it (`session_before_tree`).
    pub from_extension: bool,
    /// Usage of the call that produced it.
    pub usage: Option<Usage>,
}

impl Summary {
    /// The summary when nothing fits the budget: [`NO_CONTENT`], with
    /// empty file lists, as the reference stores it.
    pub fn no_content() -> Self {
        Self {
            summary: NO_CONTENT.to_owned(),
            details: Some(empty_details()),
            from_extension: false,
            usage: None,
        }
    }
}

fn empty_details() -> Value {
    serde_json::json!({ "readFiles": [], "modifiedFiles": [] })
}

/// Turns the model's answer into the summary: the preamble, a blank line
/// and the text, with any file lists the model wrote replaced by the
/// `<files>` block of the preparation (`upsertFileOperations`). An answer
/// with no text reads [`NO_SUMMARY`] instead (the reference's fallback,
/// which its preamble makes unreachable).
pub fn finish(prep: &BranchPreparation<'_>, response: &SummaryResponse) -> Summary {
    let lists = prep.file_lists();
    let body = if response.text.trim().is_empty() {
        NO_SUMMARY.to_owned()
    } else {
        format!("{}\n\n{}", PREAMBLE.text(), response.text)
    };
    let block = format_files_block(&lists, &prep.file_ops.read);
    Summary {
        summary: upsert_file_operations(&body, &block),
        details: Some(lists.to_details()),
        from_extension: false,
        usage: response.usage.clone(),
    }
}

/// Where navigation puts the leaf.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Destination {
    /// The entry navigated to (`None`: before the first entry).
    pub target: Option<EntryId>,
    /// The new leaf (`None`: before the first entry).
    pub new_leaf: Option<EntryId>,
    /// Text to put back in the editor, for a user or custom message target.
    pub editor_text: Option<String>,
}

/// Where the leaf lands when navigating to `target` (docs/design.md, "Branch summaries"):
/// on a user message's parent, with its text returned for editing; on a
/// custom message's parent, with its text; otherwise on the target. A
/// parent that is missing from the session (an orphan) counts as none.
///
/// Navigating to the current leaf does nothing at all (docs/design.md, "Branch summaries");
/// callers check for it first, or a user-message leaf would move to its
/// parent.
pub fn destination(session: &Session, target: Option<&str>) -> Result<Destination, BranchError> {
    let Some(target) = target else {
        return Ok(Destination::default());
    };
    let i = session
        .index_of(target)
        .ok_or_else(|| BranchError::EntryNotFound {
            id: EntryId::new(target),
        })?;
    let entry = &session.entries()[i];
    let parent = || {
        session
            .parent_index(i)
            .map(|p| session.entries()[p].id.clone())
    };
    let (new_leaf, editor_text) = match &entry.body {
        EntryBody::Message(AgentMessage::User(u)) => (parent(), Some(u.content.joined_text())),
        EntryBody::CustomMessage(c) => (parent(), Some(c.content.joined_text())),
        _ => (Some(entry.id.clone()), None),
    };
    Ok(Destination {
        target: Some(entry.id.clone()),
        new_leaf,
        editor_text,
    })
}

/// Completes a navigation (docs/design.md, "Branch summaries"), on a
/// journal durably or on an in-memory session: with a summary, a
/// `branch_summary` entry under the new leaf (docs/design.md, "Where musepi
/// differs from pi"), labelled with `label`; without one, the leaf moves to
/// the new leaf (or is reset) and `label` goes on the target. Returns the
/// summary entry's id. A summary with empty text counts as none.
pub fn apply_navigation(
    tree: &mut impl TreeEdit,
    destination: &Destination,
    summary: Option<&Summary>,
    label: Option<&str>,
    stamp: &mut Stamp<'_>,
) -> Result<Option<EntryId>, BranchError> {
    let new_leaf = destination.new_leaf.as_ref().map(EntryId::as_str);
    let label = label.filter(|l| !l.is_empty());
    if let Some(s) = summary.filter(|s| !s.summary.is_empty()) {
        let id = tree.branch_with_summary(
            new_leaf,
            &s.summary,
            s.details.clone(),
            s.from_extension,
            s.usage.clone(),
            stamp,
        )?;
        if let Some(l) = label {
            tree.append_label(id.as_str(), Some(l), stamp)?;
        }
        return Ok(Some(id));
    }
    tree.move_leaf(new_leaf)?;
    if let (Some(l), Some(target)) = (label, &destination.target) {
        tree.append_label(target.as_str(), Some(l), stamp)?;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use musepi_context_builder::build_context;
    use musepi_session_model::{
        AssistantMessage, Content, Header, Journal, MadeBy, SequentialIds, UserMessage, load_file,
    };
    use serde_json::json;

    use super::*;

    /// Applies `summary` and `label` at `dest`, with ids after the session's.
    fn apply_at(
        session: &mut Session,
        dest: &Destination,
        summary: Option<&Summary>,
        label: Option<&str>,
    ) -> Result<Option<EntryId>, BranchError> {
        let mut ids = SequentialIds::after(session.entries().iter().map(|e| &e.id));
        let mut stamp = Stamp {
            ids: &mut ids,
            now: 0,
        };
        apply_navigation(session, dest, summary, label, &mut stamp)
    }
    use crate::collect::{collect_entries, collect_entries_by_id};
    use crate::prepare::{PrepareOptions, prepare_branch};
    use crate::request::{RequestOptions, summary_request};
    use crate::test_support::{
        assistant, branch_summary, call, custom_message, entry, session_from, user,
    };

    fn answer(text: &str) -> SummaryResponse {
        SummaryResponse {
            text: text.to_owned(),
            usage: None,
            truncated: false,
        }
    }

    /// `A → B → C → D (leaf)` and `A → E → F`, F an assistant message.
    fn picture() -> Session {
        session_from(vec![
            entry("A", None, user("start")),
            entry(
                "B",
                Some("A"),
                assistant(json!([call("1", "edit", json!({"path": "src/b.rs"}))])),
            ),
            entry("C", Some("B"), user("that broke it")),
            entry(
                "D",
                Some("C"),
                assistant(json!([call("2", "read", json!({"path": "src/b.rs"}))])),
            ),
            entry("E", Some("A"), user("other way")),
            entry(
                "F",
                Some("E"),
                assistant(json!([{"type": "text", "text": "ok"}])),
            ),
        ])
    }

    fn summary_of(session: &Session, old: &str, target: Option<&str>, text: &str) -> Summary {
        let collected = collect_entries_by_id(session, Some(old), target).unwrap();
        let prep =
            prepare_branch(session, &collected.entries, 0, &PrepareOptions::default()).unwrap();
        finish(&prep, &answer(text))
    }

    fn ids(session: &Session, positions: impl IntoIterator<Item = usize>) -> Vec<String> {
        positions
            .into_iter()
            .map(|i| session.entries()[i].id.to_string())
            .collect()
    }

    #[test]
    fn the_summary_is_the_preamble_the_text_and_the_files() {
        let s = summary_of(&picture(), "D", Some("F"), "## Goal\nFix b.");
        assert_eq!(
            s.summary,
            format!(
                "{}\n\n## Goal\nFix b.\n\n<files>\n# src/\nb.rs (RW)\n</files>",
                PREAMBLE.text()
            )
        );
        assert_eq!(
            s.details,
            Some(json!({"readFiles": [], "modifiedFiles": ["src/b.rs"]}))
        );
        assert!(!s.from_extension);
    }

    #[test]
    fn the_preamble_is_two_lines() {
        assert_eq!(PREAMBLE.text().lines().count(), 2);
        assert_eq!(PREAMBLE.placeholders().unwrap(), Vec::<&str>::new());
    }

    #[test]
    fn file_lists_the_model_wrote_are_replaced() {
        let s = summary_of(
            &picture(),
            "D",
            Some("F"),
            "Done.\n\n<read-files>\nwrong.rs\n</read-files>\n",
        );
        assert!(
            s.summary
                .ends_with("Done.\n\n<files>\n# src/\nb.rs (RW)\n</files>"),
            "{}",
            s.summary
        );
        assert!(!s.summary.contains("wrong.rs"));
    }

    #[test]
    fn an_answer_without_text_reads_no_summary_generated() {
        let s = summary_of(&picture(), "D", Some("F"), "  \n");
        assert_eq!(
            s.summary,
            format!("{NO_SUMMARY}\n\n<files>\n# src/\nb.rs (RW)\n</files>")
        );
    }

    #[test]
    fn usage_is_carried_over() {
        let session = picture();
        let prep = prepare_branch(&session, &[1], 0, &PrepareOptions::default()).unwrap();
        let usage = Usage {
            input: 10.0,
            output: 5.0,
            ..Usage::default()
        };
        let response = SummaryResponse {
            text: "t".into(),
            usage: Some(usage.clone()),
            truncated: false,
        };
        assert_eq!(finish(&prep, &response).usage, Some(usage));
    }

    #[test]
    fn no_messages_give_the_no_content_summary() {
        let session = picture();
        let collected = collect_entries_by_id(&session, Some("D"), Some("D")).unwrap();
        let prep =
            prepare_branch(&session, &collected.entries, 0, &PrepareOptions::default()).unwrap();
        assert!(summary_request(&prep, &RequestOptions::new("sys")).is_none());
        let s = Summary::no_content();
        assert_eq!(s.summary, "No content to summarize");
        assert_eq!(
            s.details,
            Some(json!({"readFiles": [], "modifiedFiles": []}))
        );
    }

    #[test]
    fn the_summary_hangs_under_the_navigation_target() {
        let mut session = picture();
        let summary = summary_of(&session, "D", Some("F"), "Tried editing b.");
        let dest = destination(&session, Some("F")).unwrap();
        assert_eq!(dest.new_leaf.as_ref().map(EntryId::as_str), Some("F"));
        assert_eq!(dest.editor_text, None);
        let before: Vec<_> = session
            .entries()
            .iter()
            .map(|e| e.parent_id.clone())
            .collect();
        let id = apply_at(&mut session, &dest, Some(&summary), None)
            .unwrap()
            .unwrap();
        let e = session.get(id.as_str()).unwrap();
        assert_eq!(e.parent_id.as_ref().map(EntryId::as_str), Some("F"));
        let EntryBody::BranchSummary(b) = &e.body else {
            panic!("{e:?}")
        };
        assert_eq!(b.from_id, "F");
        assert_eq!(b.summary.as_str(), summary.summary);
        assert_eq!(session.leaf_id(), Some(&id));
        let after: Vec<_> = session.entries()[..6]
            .iter()
            .map(|e| e.parent_id.clone())
            .collect();
        assert_eq!(before, after, "the abandoned branch is untouched");
        let context = build_context(&session);
        let seen = ids(&session, context.messages.iter().map(|m| m.entry_index));
        assert_eq!(seen, ["A", "E", "F", id.as_str()]);
    }

    #[test]
    fn a_user_message_target_puts_the_leaf_on_its_parent_and_returns_its_text() {
        let mut session = picture();
        let dest = destination(&session, Some("E")).unwrap();
        assert_eq!(dest.new_leaf.as_ref().map(EntryId::as_str), Some("A"));
        assert_eq!(dest.editor_text.as_deref(), Some("other way"));
        let summary = summary_of(&session, "D", Some("E"), "Tried editing b.");
        let id = apply_at(&mut session, &dest, Some(&summary), None)
            .unwrap()
            .unwrap();
        let e = session.get(id.as_str()).unwrap();
        assert_eq!(e.parent_id.as_ref().map(EntryId::as_str), Some("A"));
    }

    #[test]
    fn a_root_user_message_target_clears_the_leaf() {
        let mut session = picture();
        let dest = destination(&session, Some("A")).unwrap();
        assert_eq!(dest.new_leaf, None);
        assert_eq!(dest.editor_text.as_deref(), Some("start"));
        assert_eq!(apply_at(&mut session, &dest, None, None).unwrap(), None);
        assert_eq!(session.leaf_id(), None);
        let summary = summary_of(&session, "D", Some("A"), "x");
        let id = apply_at(&mut session, &dest, Some(&summary), None)
            .unwrap()
            .unwrap();
        let e = session.get(id.as_str()).unwrap();
        assert_eq!(e.parent_id, None);
        let EntryBody::BranchSummary(b) = &e.body else {
            panic!("{e:?}")
        };
        assert_eq!(b.from_id, "root");
    }

    #[test]
    fn a_custom_message_target_puts_the_leaf_on_its_parent_with_its_text() {
        let session = session_from(vec![
            entry("a", None, user("u")),
            entry("b", Some("a"), custom_message("remember this")),
        ]);
        let dest = destination(&session, Some("b")).unwrap();
        assert_eq!(dest.new_leaf.as_ref().map(EntryId::as_str), Some("a"));
        assert_eq!(dest.editor_text.as_deref(), Some("remember this"));
    }

    #[test]
    fn other_targets_become_the_leaf_and_root_means_no_leaf() {
        let session = session_from(vec![
            entry("a", None, user("u")),
            entry("b", Some("a"), branch_summary("s", json!(null), false)),
        ]);
        let dest = destination(&session, Some("b")).unwrap();
        assert_eq!(dest.new_leaf.as_ref().map(EntryId::as_str), Some("b"));
        assert_eq!(destination(&session, None).unwrap(), Destination::default());
        let err = destination(&session, Some("nonexistent")).unwrap_err();
        assert_eq!(err.to_string(), "Entry nonexistent not found");
    }

    #[test]
    fn without_a_summary_the_leaf_moves_and_new_entries_follow_it() {
        // From pi's tree-traversal tests: u1, a2, u3; back to a2; a new message
        // is a sibling of u3, and the context follows the new branch.
        let mut session = session_from(vec![
            entry("u1", None, user("msg1")),
            entry(
                "a2",
                Some("u1"),
                assistant(json!([{"type": "text", "text": "msg2"}])),
            ),
            entry("u3", Some("a2"), user("msg3")),
        ]);
        let dest = destination(&session, Some("a2")).unwrap();
        assert_eq!(apply_at(&mut session, &dest, None, None).unwrap(), None);
        assert_eq!(session.leaf_id().map(EntryId::as_str), Some("a2"));
        let body = EntryBody::Message(AgentMessage::User(UserMessage {
            content: Content::text("msg4-branch"),
            ..UserMessage::default()
        }));
        let mut ids = SequentialIds::new();
        let mut stamp = Stamp {
            ids: &mut ids,
            now: 0,
        };
        let id = session.append(body, &mut stamp);
        assert_eq!(
            session
                .get(id.as_str())
                .unwrap()
                .parent_id
                .as_ref()
                .map(EntryId::as_str),
            Some("a2")
        );
        let texts: Vec<String> = build_context(&session)
            .agent_messages()
            .map(|m| match m {
                AgentMessage::User(u) => u.content.joined_text(),
                AgentMessage::Assistant(a) => a.content.joined_text(),
                other => other.role().to_owned(),
            })
            .collect();
        assert_eq!(texts, ["msg1", "msg2", "msg4-branch"]);
    }

    #[test]
    fn an_unknown_new_leaf_is_refused_and_nothing_changes() {
        // From pi's tree-traversal tests: `branchWithSummary` to an unknown id throws.
        let mut session = picture();
        let dest = Destination {
            target: Some(EntryId::new("nonexistent")),
            new_leaf: Some(EntryId::new("nonexistent")),
            editor_text: None,
        };
        let summary = summary_of(&session, "D", Some("F"), "x");
        let err = apply_at(&mut session, &dest, Some(&summary), None).unwrap_err();
        assert_eq!(err.to_string(), "Entry nonexistent not found");
        assert_eq!(session.len(), 6);
        let err = apply_at(&mut session, &dest, None, None).unwrap_err();
        assert_eq!(err.to_string(), "Entry nonexistent not found");
    }

    #[test]
    fn a_label_goes_on_the_summary_or_else_on_the_target() {
        let mut session = picture();
        let dest = destination(&session, Some("E")).unwrap();
        apply_at(&mut session, &dest, None, Some("retry")).unwrap();
        assert_eq!(session.label("E"), Some("retry"));
        let summary = summary_of(&session, "D", Some("F"), "x");
        let dest = destination(&session, Some("F")).unwrap();
        let id = apply_at(&mut session, &dest, Some(&summary), Some("gave up"))
            .unwrap()
            .unwrap();
        assert_eq!(session.label(id.as_str()), Some("gave up"));
        assert_eq!(session.label("F"), None);
    }

    #[test]
    fn an_empty_summary_counts_as_none() {
        let mut session = picture();
        let dest = destination(&session, Some("F")).unwrap();
        let empty = Summary {
            summary: String::new(),
            details: None,
            from_extension: true,
            usage: None,
        };
        assert_eq!(
            apply_at(&mut session, &dest, Some(&empty), None).unwrap(),
            None
        );
        assert_eq!(session.len(), 6);
        assert_eq!(session.leaf_id().map(EntryId::as_str), Some("F"));
    }

    #[test]
    fn a_journal_keeps_the_summary_on_disk() {
        let path = std::env::temp_dir().join(format!(
            "musepi-branch-summary-{}-journal.jsonl",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        let mut ids_src = SequentialIds::new();
        let mut stamp = Stamp {
            ids: &mut ids_src,
            now: 1_700_000_000_000,
        };
        let mut journal =
            Journal::create(&path, Header::new("s", "2025-01-01T00:00:00.000Z", "/")).unwrap();
        let user_msg = |t: &str| {
            EntryBody::Message(AgentMessage::User(UserMessage {
                content: Content::text(t),
                ..UserMessage::default()
            }))
        };
        let u1 = journal.append(user_msg("first"), &mut stamp).unwrap();
        let a1 = journal
            .append(
                EntryBody::Message(AgentMessage::Assistant(AssistantMessage {
                    content: Content::text("answer"),
                    ..AssistantMessage::default()
                })),
                &mut stamp,
            )
            .unwrap();
        journal.append(user_msg("a detour"), &mut stamp).unwrap();
        let session = journal.session();
        let collected =
            collect_entries(session, session.leaf_index(), session.index_of(a1.as_str())).unwrap();
        let prep =
            prepare_branch(session, &collected.entries, 0, &PrepareOptions::default()).unwrap();
        let summary = finish(&prep, &answer("A detour."));
        let dest = destination(session, Some(a1.as_str())).unwrap();
        let id = apply_navigation(&mut journal, &dest, Some(&summary), None, &mut stamp)
            .unwrap()
            .unwrap();
        let (reread, _) = load_file(&path, &mut SequentialIds::new()).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(reread.leaf_id(), Some(&id));
        let e = reread.get(id.as_str()).unwrap();
        assert_eq!(e.parent_id.as_ref(), Some(&a1));
        assert_ne!(e.parent_id.as_ref(), Some(&u1));
        let EntryBody::BranchSummary(b) = &e.body else {
            panic!("{e:?}")
        };
        assert_eq!(b.summary.as_str(), summary.summary);
        assert_eq!(b.made_by, MadeBy::extension(false));
    }
}
