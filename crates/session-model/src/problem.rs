//! Problems found while loading: reported as data, per line, never a panic
//! and never a silent skip.

use std::fmt;

use crate::id::EntryId;

/// One problem with one line of a session file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line number in the file.
    pub line: u64,
    /// The entry on that line, when its id could be read.
    pub entry_id: Option<EntryId>,
    /// What is wrong.
    pub kind: ProblemKind,
}

/// What is wrong with a line.
///
/// [`ProblemKind::name`] is each variant's name in kebab case, and
/// [`strum::VariantNames`] lists them all.
#[derive(
    Debug, Clone, PartialEq, Eq, thiserror::Error, strum::IntoStaticStr, strum::VariantNames,
)]
#[strum(serialize_all = "kebab-case")]
pub enum ProblemKind {
    /// Not valid JSON; the line is skipped (and kept verbatim on rewrites).
    #[error("malformed JSON: {error}")]
    MalformedJson {
        /// The parser's message.
        error: String,
    },
    /// Valid JSON, but not an object; the line is skipped.
    #[error("JSON value is not an object")]
    NotAnObject,
    /// The last line has no newline and does not parse: a write was cut
    /// short. Only an explicit repair removes it.
    #[error("torn last line ({bytes} bytes without a newline): a write was cut short")]
    TornLine {
        /// Bytes in the torn fragment.
        bytes: u64,
    },
    /// A field the entry type needs is absent; a default was used.
    #[error("missing field `{field}`")]
    MissingField {
        /// The field name as written in the file.
        field: &'static str,
    },
    /// The entry's fields have the wrong types; it is kept in the tree as
    /// an unreadable entry and ignored by context building.
    #[error("unreadable entry: {error}")]
    InvalidEntry {
        /// What could not be read.
        error: String,
    },
    /// `parentId` names no entry: the entry starts an orphan chain.
    #[error("parent `{parent_id}` does not exist")]
    DanglingParent {
        /// The missing parent id.
        parent_id: EntryId,
    },
    /// Another entry has the same id; the later one wins lookups.
    #[error("duplicate id (first used on line {first_line})")]
    DuplicateId {
        /// Line of the earlier entry with this id.
        first_line: u64,
    },
    /// Following `parentId` from this entry comes back to it; the link that
    /// closes the cycle is treated as a root.
    #[error("parent links form a cycle")]
    Cycle,
    /// A line before the header that is not the header.
    #[error("line before the session header")]
    BeforeHeader,
    /// `parentId` is the entry's own id; it is read as a root.
    #[error("`parentId` is the entry's own id (read as a root)")]
    SelfParent,
    /// A message role this crate does not know; the entry is kept as it is
    /// and left out of the context.
    #[error(
        "unknown message role `{role}`: the entry is kept as it is and left out of the context"
    )]
    UnknownRole {
        /// The role as written.
        role: String,
    },
    /// A tool call whose `arguments` is not a JSON object (a string, for
    /// example); providers reject such a call.
    #[error("tool call `{call_id}` has `arguments` that are a {found}, not an object")]
    ToolCallArguments {
        /// The call's id.
        call_id: String,
        /// The JSON type found instead (`string`, `array`, …).
        found: &'static str,
    },
    /// A compaction whose `firstKeptEntryId` names no entry.
    #[error("compaction's `firstKeptEntryId` `{id}` names no entry")]
    FirstKeptMissing {
        /// The id as written.
        id: EntryId,
    },
    /// A compaction whose `firstKeptEntryId` is its own id.
    #[error("compaction's `firstKeptEntryId` is the compaction's own id")]
    FirstKeptSelf,
    /// A compaction whose `firstKeptEntryId` names an entry written after it.
    #[error("compaction's `firstKeptEntryId` `{id}` names a later entry (line {line})")]
    FirstKeptLater {
        /// The id as written.
        id: EntryId,
        /// The line of that entry.
        line: u64,
    },
    /// A compaction whose `firstKeptEntryId` names an entry that is not on
    /// the path from the root to the compaction, so its context keeps
    /// nothing but the summary.
    #[error(
        "compaction's `firstKeptEntryId` `{id}` is not on the path to the compaction, so its context would keep only the summary"
    )]
    FirstKeptOffPath {
        /// The id as written.
        id: EntryId,
    },
    /// A v1 compaction whose `firstKeptEntryIndex` cannot be resolved to an
    /// earlier entry; migration would drop it.
    #[error("v1 compaction's `firstKeptEntryIndex` {index} {reason}; migration would drop it")]
    FirstKeptIndex {
        /// The index as written.
        index: String,
        /// Why it does not resolve.
        reason: &'static str,
    },
    /// A branch summary whose `fromId` names no entry (and is not `root`).
    #[error("branch summary's `fromId` `{id}` names no entry")]
    DanglingFromId {
        /// The id as written.
        id: String,
    },
    /// A label whose `targetId` names no entry.
    #[error("label's `targetId` `{id}` names no entry")]
    DanglingLabelTarget {
        /// The id as written.
        id: EntryId,
    },
}

impl ProblemKind {
    /// A stable name, used in `--json` output: the variant's name in
    /// kebab case (`FirstKeptOffPath` is `first-kept-off-path`).
    pub fn name(&self) -> &'static str {
        self.into()
    }

    /// Whether the problem is about what the entry names (its parent, a
    /// compaction's first kept entry, a branch summary's `fromId`, a
    /// label's target) rather than about the entry itself, so it depends on
    /// the entries around it.
    pub fn is_about_links(&self) -> bool {
        matches!(
            self,
            Self::DanglingParent { .. }
                | Self::DuplicateId { .. }
                | Self::Cycle
                | Self::SelfParent
                | Self::FirstKeptMissing { .. }
                | Self::FirstKeptSelf
                | Self::FirstKeptLater { .. }
                | Self::FirstKeptOffPath { .. }
                | Self::DanglingFromId { .. }
                | Self::DanglingLabelTarget { .. }
        )
    }

    /// Whether a rewrite of the file would carry this problem into the new
    /// file wrongly, so writers refuse the file until it is fixed: a torn
    /// last line (a write would bury it) and a v1 compaction index that
    /// migration would drop.
    pub fn blocks_rewrite(&self) -> bool {
        matches!(self, Self::TornLine { .. } | Self::FirstKeptIndex { .. })
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: ", self.line)?;
        if let Some(id) = &self.entry_id {
            write!(f, "entry {id}: ")?;
        }
        write!(f, "{}", self.kind)
    }
}

#[cfg(test)]
mod tests {
    use strum::VariantNames;

    use super::*;

    /// Every name, in declaration order: `--json` readers match on them, so
    /// none may change.
    const NAMES: [&str; 19] = [
        "malformed-json",
        "not-an-object",
        "torn-line",
        "missing-field",
        "invalid-entry",
        "dangling-parent",
        "duplicate-id",
        "cycle",
        "before-header",
        "self-parent",
        "unknown-role",
        "tool-call-arguments",
        "first-kept-missing",
        "first-kept-self",
        "first-kept-later",
        "first-kept-off-path",
        "first-kept-index",
        "dangling-from-id",
        "dangling-label-target",
    ];

    #[test]
    fn every_kind_keeps_its_stable_name() {
        let id = || EntryId::from("e1");
        let kinds = [
            ProblemKind::MalformedJson {
                error: "expected value".into(),
            },
            ProblemKind::NotAnObject,
            ProblemKind::TornLine { bytes: 3 },
            ProblemKind::MissingField { field: "id" },
            ProblemKind::InvalidEntry {
                error: "bad".into(),
            },
            ProblemKind::DanglingParent { parent_id: id() },
            ProblemKind::DuplicateId { first_line: 2 },
            ProblemKind::Cycle,
            ProblemKind::BeforeHeader,
            ProblemKind::SelfParent,
            ProblemKind::UnknownRole {
                role: "robot".into(),
            },
            ProblemKind::ToolCallArguments {
                call_id: "c1".into(),
                found: "string",
            },
            ProblemKind::FirstKeptMissing { id: id() },
            ProblemKind::FirstKeptSelf,
            ProblemKind::FirstKeptLater { id: id(), line: 4 },
            ProblemKind::FirstKeptOffPath { id: id() },
            ProblemKind::FirstKeptIndex {
                index: "9".into(),
                reason: "is past the end",
            },
            ProblemKind::DanglingFromId { id: "x".into() },
            ProblemKind::DanglingLabelTarget { id: id() },
        ];
        assert_eq!(kinds.each_ref().map(ProblemKind::name), NAMES);
        // The list above is every variant: a new one needs its name here.
        assert_eq!(ProblemKind::VARIANTS, NAMES);
    }
}
