//! Replacing an entry already in the session: [`Replacement`], the entry
//! and the line it becomes, and [`Session::replace`], which makes the
//! change in memory (a journal stages the same value for its rewrite).

use crate::content::{Content, ContentBlock};
use crate::entry::{Entry, EntryBody};
use crate::message::AgentMessage;
use crate::migrate::{LineEdit, Pruned, print_edited};

use super::{LineSource, Session};

/// A change to an entry already in the session: the entry it becomes and
/// its new line, made by [`Session::replace`] or staged in a journal
/// ([`crate::Journal::stage_replacements`]). The entry keeps its id and
/// parent (pruning changes a message's content only).
#[derive(Debug, Clone, PartialEq)]
pub struct Replacement {
    index: usize,
    entry: Entry,
    line: NewLine,
}

/// The new line of a [`Replacement`].
#[derive(Debug, Clone, PartialEq)]
enum NewLine {
    /// This text.
    Text(String),
    /// The entry's line as it is, with pruning's change.
    Pruned(Pruned),
}

impl Replacement {
    /// Entry `index` becomes `entry`, which `line` writes.
    pub fn new(index: usize, entry: Entry, line: String) -> Self {
        Self {
            index,
            entry,
            line: NewLine::Text(line),
        }
    }

    /// The tool result at `index` of `session` pruned at `at` (epoch
    /// milliseconds): its content becomes the one text block `placeholder`.
    /// Its line is the entry's line with that change, printed when it is
    /// read or written, so nothing is read here. `None` when the entry is
    /// not a tool result.
    pub fn pruned(session: &Session, index: usize, placeholder: &str, at: i64) -> Option<Self> {
        let mut entry = session.entries.get(index)?.clone();
        let EntryBody::Message(AgentMessage::ToolResult(t)) = &mut entry.body else {
            return None;
        };
        t.content = Content::Blocks(vec![ContentBlock::text(placeholder)]);
        t.pruned_at = Some(at as f64);
        Some(Self {
            index,
            entry,
            line: NewLine::Pruned(Pruned {
                placeholder: placeholder.into(),
                at,
            }),
        })
    }

    /// The position of the entry it replaces.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The entry it puts there.
    pub fn entry(&self) -> &Entry {
        &self.entry
    }
}

impl Session {
    /// Makes `change` in memory and returns what it replaced; no file is
    /// touched. A pruned tool result's line stays where it is, with the
    /// edit that prints it when it is read or written (printed at once when
    /// the line is only in memory).
    pub fn replace(&mut self, change: Replacement) -> (Entry, LineSource) {
        let Replacement { index, entry, line } = change;
        let source = match line {
            NewLine::Text(text) => LineSource::Text(text.into_boxed_str()),
            NewLine::Pruned(pruned) => match &self.sources[index] {
                LineSource::File { offset, len } => LineSource::Edited {
                    offset: *offset,
                    len: *len,
                    edit: Box::new(LineEdit {
                        v1: None,
                        hook_role: false,
                        pruned: Some(pruned),
                    }),
                },
                LineSource::Edited { offset, len, edit } => LineSource::Edited {
                    offset: *offset,
                    len: *len,
                    edit: Box::new(LineEdit {
                        pruned: Some(pruned),
                        ..(**edit).clone()
                    }),
                },
                // A line that is not JSON stays as it is, and the checks of
                // the write refuse it.
                LineSource::Text(text) => LineSource::Text(
                    print_edited(text.as_bytes(), |m| pruned.apply(m))
                        .map_or_else(|_| text.clone(), String::into_boxed_str),
                ),
            },
        };
        self.put_entry(index, entry, source)
    }
}
