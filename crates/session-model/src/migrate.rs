//! What migration changes in one line of a v1 or v2 file, and what pruning
//! changes in a tool result's line.
//!
//! Loading migrates in memory: the typed entry gets its new id, parent and
//! first kept entry at once, but the line's migrated text (the line parsed,
//! edited and printed again as `JSON.stringify` prints it) is needed only
//! when the session is written or a line is shown. So the loader records
//! the edit ([`LineEdit`]) next to the line's place in the file, and the
//! text is printed from the file's bytes when it is read: memory holds no
//! second copy of the file, and loading does not parse every line twice.
//! Pruning a tool result records its edit the same way
//! ([`crate::Replacement::pruned`]): deciding what to prune reads no line,
//! and a line is printed only when it is written.

use serde_json::{Map, Value, json};

use crate::id::EntryId;
use crate::json::{js_delete, js_set, js_stringify};

/// What migration or pruning changes in one entry line; see
/// [`crate::LineSource::Edited`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineEdit {
    pub(crate) v1: Option<V1Fields>,
    /// A v1 or v2 `hookMessage` role, renamed `custom`.
    pub(crate) hook_role: bool,
    /// The tool result's content blanked by pruning.
    pub(crate) pruned: Option<Pruned>,
}

/// What pruning writes into a tool result's message: its content becomes
/// one text block, the placeholder, and `prunedAt` the time it was pruned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pruned {
    pub(crate) placeholder: Box<str>,
    /// Epoch milliseconds.
    pub(crate) at: i64,
}

impl Pruned {
    /// Applies the change to the line's object.
    pub(crate) fn apply(&self, map: &mut Map<String, Value>) {
        if let Some(Value::Object(m)) = map.get_mut("message") {
            js_set(
                m,
                "content",
                json!([{"type": "text", "text": &*self.placeholder}]),
            );
            js_set(m, "prunedAt", json!(self.at));
        }
    }
}

/// The fields a v1 entry gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct V1Fields {
    pub(crate) id: EntryId,
    pub(crate) parent: Option<EntryId>,
    pub(crate) is_compaction: bool,
    /// `firstKeptEntryIndex` resolved (a compaction only).
    pub(crate) first_kept: Option<EntryId>,
}

impl LineEdit {
    /// Applies the edit to the line's object.
    pub(crate) fn apply(&self, map: &mut Map<String, Value>) {
        if let Some(v1) = &self.v1 {
            js_set(map, "id", v1.id.as_str().into());
            js_set(
                map,
                "parentId",
                v1.parent
                    .as_ref()
                    .map_or(Value::Null, |p| p.as_str().into()),
            );
            if v1.is_compaction && matches!(map.get("firstKeptEntryIndex"), Some(Value::Number(_)))
            {
                js_delete(map, "firstKeptEntryIndex");
                if let Some(fk) = &v1.first_kept {
                    js_set(map, "firstKeptEntryId", fk.as_str().into());
                }
            }
        }
        if self.hook_role
            && let Some(Value::Object(m)) = map.get_mut("message")
        {
            js_set(m, "role", "custom".into());
        }
        if let Some(p) = &self.pruned {
            p.apply(map);
        }
    }

    /// The migrated text of `line`, the line as it was read from the file.
    pub(crate) fn print(&self, line: &[u8]) -> Result<String, serde_json::Error> {
        print_edited(line, |map| self.apply(map))
    }
}

/// `line`, a v1 compaction, without its `firstKeptEntryIndex`, printed again
/// as `JSON.stringify` prints it (the other keys in their order): what pi's
/// migration leaves of an index that names no earlier entry, and what
/// `musepi session check --repair` writes for one, so that the file can be
/// migrated.
pub fn without_first_kept_index(line: &[u8]) -> Result<String, serde_json::Error> {
    print_edited(line, |map| js_delete(map, "firstKeptEntryIndex"))
}

/// `line` parsed, edited by `edit` and printed again by `JSON.stringify`.
pub(crate) fn print_edited(
    line: &[u8],
    edit: impl FnOnce(&mut Map<String, Value>),
) -> Result<String, serde_json::Error> {
    let (mut value, lone) = crate::json::Edited::parse(line)?;
    if let Value::Object(map) = &mut value {
        edit(map);
    }
    Ok(lone.restore(js_stringify(&value)))
}
