//! Migrating a v1 or v2 file's lines in memory as they are taken: a v1
//! entry's id, parent and first kept entry, and where each changed line's
//! text lives.

use serde_json::Value;

use super::Loader;
use crate::entry::EntryBody;
use crate::error::SessionError;
use crate::id::{IdSource, fresh_id};
use crate::migrate::{LineEdit, V1Fields, print_edited};
use crate::problem::ProblemKind;
use crate::session::LineSource;
use crate::wire::ParsedEntry;

impl Loader<'_> {
    /// v1 → v3 for one entry: a fresh id, the previous entry as parent,
    /// `firstKeptEntryIndex` resolved to an id, `hookMessage` renamed.
    pub(super) fn migrate_v1(
        &mut self,
        parsed: &mut ParsedEntry,
        offset: u64,
        line: &[u8],
        ids: &mut dyn IdSource,
    ) -> Result<LineSource, SessionError> {
        let taken = &self.v1_taken;
        let id = fresh_id(ids, &|c| taken.contains(c));
        self.v1_taken.insert(id.clone());
        let parent = self.v1_ids.iter().rev().find_map(Clone::clone);
        self.v1_ids.push(Some(id.clone()));
        parsed.entry.id = id.clone();
        parsed.entry.parent_id.clone_from(&parent);
        parsed.has_id = true;
        let is_compaction = matches!(parsed.entry.body, EntryBody::Compaction(_));
        let first_kept = parsed.first_kept_entry_index.and_then(|index| {
            let resolved = if index.fract() != 0.0 {
                Err("is not a whole number")
            } else if index < 0.0 {
                Err("is negative")
            } else if index == 0.0 {
                Err("names the header")
            } else {
                self.v1_ids
                    .get(index as usize)
                    .cloned()
                    .flatten()
                    .ok_or("names no earlier entry")
            };
            match resolved {
                Ok(id) => Some(id),
                Err(reason) => {
                    if is_compaction {
                        self.v1_problems.push(ProblemKind::FirstKeptIndex {
                            index: {
                                let mut text = String::new();
                                crate::json::push_js_number(&mut text, index);
                                text
                            },
                            reason,
                        });
                    }
                    None
                }
            }
        });
        let is_compaction_with_index = parsed.first_kept_entry_index.is_some();
        if let EntryBody::Compaction(c) = &mut parsed.entry.body
            && is_compaction_with_index
        {
            c.first_kept_entry_id.clone_from(&first_kept);
        }
        let edit = LineEdit {
            v1: Some(V1Fields {
                id,
                parent,
                is_compaction,
                first_kept,
            }),
            hook_role: parsed.hook_message_role,
            pruned: None,
        };
        self.migrated(offset, line, edit)
    }

    /// Where a line that migration changes lives: in memory, printed at
    /// once, when the session has no file to read it back from; otherwise
    /// in the file, with the edit that prints it when it is read.
    pub(super) fn migrated(
        &self,
        offset: u64,
        line: &[u8],
        edit: LineEdit,
    ) -> Result<LineSource, SessionError> {
        if self.keep_text {
            let text = edit.print(line).map_err(|e| self.invalid_data(e))?;
            return Ok(LineSource::Text(text.into_boxed_str()));
        }
        Ok(LineSource::Edited {
            offset,
            len: line.len() as u64,
            edit: Box::new(edit),
        })
    }

    pub(super) fn invalid_data(&self, e: serde_json::Error) -> SessionError {
        SessionError::Io {
            path: self.path.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        }
    }

    /// The line re-printed by `JSON.stringify` after `edit`.
    pub(super) fn rewrite(
        &self,
        line: &[u8],
        edit: impl FnOnce(&mut serde_json::Map<String, Value>),
    ) -> Result<LineSource, SessionError> {
        let text = print_edited(line, edit).map_err(|e| self.invalid_data(e))?;
        Ok(LineSource::Text(text.into_boxed_str()))
    }
}
