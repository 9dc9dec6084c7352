//! The checks every entry passes: loading reports them as [`Problem`]s
//! (what `session check` prints), and the journal refuses to write a new
//! entry that fails them, so no caller can store an entry that the next
//! check would flag.
//!
//! [`Problem`]: crate::Problem

use serde_json::Value;

use crate::content::ContentBlock;
use crate::entry::{Entry, EntryBody};
use crate::error::SessionError;
use crate::message::AgentMessage;
use crate::problem::{Problem, ProblemKind};
use crate::session::{LineSource, Session};
use crate::wire::{LineRead, read_entry};

/// Roles of newer agents that are legitimate though this crate does not
/// model them; they survive rewrites and are left out of the context.
const OTHER_KNOWN_ROLES: &[&str] = &["fileMention", "pythonExecution", "developer"];

/// Problems an entry has on its own, whatever surrounds it.
pub(crate) fn entry_problems(entry: &Entry, out: &mut Vec<ProblemKind>) {
    let Some(message) = entry.message() else {
        return;
    };
    match message {
        AgentMessage::Other { role, .. } if !OTHER_KNOWN_ROLES.contains(&role.as_str()) => {
            out.push(ProblemKind::UnknownRole { role: role.clone() });
        }
        AgentMessage::Assistant(a) => {
            for block in a.content.blocks() {
                if let ContentBlock::ToolCall(call) = block
                    && let Some(found) = not_an_object(call.arguments.value())
                {
                    out.push(ProblemKind::ToolCallArguments {
                        call_id: call.id.clone(),
                        found,
                    });
                }
            }
        }
        _ => {}
    }
}

/// The JSON type of `v` when it is present but not an object.
fn not_an_object(v: &Value) -> Option<&'static str> {
    match v {
        Value::Object(_) | Value::Null => None,
        Value::String(_) => Some("string"),
        Value::Array(_) => Some("list"),
        Value::Number(_) => Some("number"),
        Value::Bool(_) => Some("boolean"),
    }
}

/// Problems of entry `i` with the entries it names: its parent, a
/// compaction's first kept entry, a branch summary's `fromId`, a label's
/// target. Parent links must be resolved.
pub(crate) fn link_problems(session: &Session, i: usize, out: &mut Vec<ProblemKind>) {
    let entry = &session.entries[i];
    if entry.parent_id.as_ref() == Some(&entry.id) && !entry.id.as_str().is_empty() {
        out.push(ProblemKind::SelfParent);
    }
    match &entry.body {
        EntryBody::Compaction(c) => {
            let Some(id) = &c.first_kept_entry_id else {
                return;
            };
            if *id == entry.id {
                out.push(ProblemKind::FirstKeptSelf);
                return;
            }
            match session.index_of(id.as_str()) {
                None => out.push(ProblemKind::FirstKeptMissing { id: id.clone() }),
                Some(j) if j > i => out.push(ProblemKind::FirstKeptLater {
                    id: id.clone(),
                    line: session.line_of(j),
                }),
                Some(j) if !is_ancestor(session, j, i) => {
                    out.push(ProblemKind::FirstKeptOffPath { id: id.clone() });
                }
                Some(_) => {}
            }
        }
        EntryBody::BranchSummary(b)
            if !b.from_id.is_empty()
                && b.from_id != "root"
                && session.index_of(&b.from_id).is_none() =>
        {
            out.push(ProblemKind::DanglingFromId {
                id: b.from_id.clone(),
            });
        }
        EntryBody::Label { target_id, .. }
            if !target_id.as_str().is_empty() && session.index_of(target_id.as_str()).is_none() =>
        {
            out.push(ProblemKind::DanglingLabelTarget {
                id: target_id.clone(),
            });
        }
        _ => {}
    }
}

/// [`link_problems`] of every entry, with their lines.
pub(crate) fn every_link_problem(session: &Session, problems: &mut Vec<Problem>) {
    let mut kinds = Vec::new();
    for i in 0..session.len() {
        link_problems(session, i, &mut kinds);
        for kind in kinds.drain(..) {
            problems.push(Problem {
                line: session.line_of(i),
                entry_id: Some(session.entries[i].id.clone()),
                kind,
            });
        }
    }
}

/// Whether entry `a` is on the path from the root to entry `b`.
fn is_ancestor(session: &Session, a: usize, b: usize) -> bool {
    let mut cur = session.parent_index(b);
    while let Some(c) = cur {
        if c == a {
            return true;
        }
        cur = session.parent_index(c);
    }
    false
}

/// Checks the new entry `i` (held in memory, not yet written): its line
/// must read back with no problem, and what it names must exist where it
/// should. This is what [`crate::Journal`] runs before every write.
pub(crate) fn check_new(session: &Session, i: usize) -> Result<(), SessionError> {
    let entry = &session.entries[i];
    let invalid = |problem: String| SessionError::InvalidEntry {
        kind: entry.kind_label(),
        problem,
    };
    let LineSource::Text(text) = &session.sources[i] else {
        return Ok(());
    };
    let mut problems = Vec::new();
    match read_entry(text.as_bytes()) {
        LineRead::Entry(parsed) => {
            if let Some(field) = parsed.missing.first() {
                problems.push(ProblemKind::MissingField { field });
            }
            if let Some(error) = parsed.invalid {
                problems.push(ProblemKind::InvalidEntry { error });
            }
            entry_problems(&parsed.entry, &mut problems);
        }
        LineRead::NotAnObject => problems.push(ProblemKind::NotAnObject),
        LineRead::Malformed(error) => problems.push(ProblemKind::MalformedJson { error }),
    }
    link_problems(session, i, &mut problems);
    if let Some(parent) = &entry.parent_id
        && session.index_of(parent.as_str()).is_none()
    {
        problems.push(ProblemKind::DanglingParent {
            parent_id: parent.clone(),
        });
    }
    match problems.into_iter().next() {
        Some(p) => Err(invalid(p.to_string())),
        None => Ok(()),
    }
}
