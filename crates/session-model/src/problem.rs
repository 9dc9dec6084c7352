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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemKind {
    /// Not valid JSON; the line is skipped (and kept verbatim on rewrites).
    MalformedJson {
        /// The parser's message.
        error: String,
    },
    /// Valid JSON, but not an object; the line is skipped.
    NotAnObject,
    /// The last line has no newline and does not parse: a write was cut
    /// short. Only an explicit repair removes it.
    TornLine {
        /// Bytes in the torn fragment.
        bytes: u64,
    },
    /// A field the entry type needs is absent; a default was used.
    MissingField {
        /// The field name as written in the file.
        field: &'static str,
    },
    /// The entry's fields have the wrong types; it is kept in the tree as
    /// an unreadable entry and ignored by context building.
    InvalidEntry {
        /// What could not be read.
        error: String,
    },
    /// `parentId` names no entry: the entry starts an orphan chain.
    DanglingParent {
        /// The missing parent id.
        parent_id: EntryId,
    },
    /// Another entry has the same id; the later one wins lookups.
    DuplicateId {
        /// Line of the earlier entry with this id.
        first_line: u64,
    },
    /// Following `parentId` from this entry comes back to it; the link that
    /// closes the cycle is treated as a root.
    Cycle,
    /// A line before the header that is not the header.
    BeforeHeader,
}

impl ProblemKind {
    /// A stable kebab-case name, used in `--json` output.
    pub fn name(&self) -> &'static str {
        match self {
            Self::MalformedJson { .. } => "malformed-json",
            Self::NotAnObject => "not-an-object",
            Self::TornLine { .. } => "torn-line",
            Self::MissingField { .. } => "missing-field",
            Self::InvalidEntry { .. } => "invalid-entry",
            Self::DanglingParent { .. } => "dangling-parent",
            Self::DuplicateId { .. } => "duplicate-id",
            Self::Cycle => "cycle",
            Self::BeforeHeader => "before-header",
        }
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MalformedJson { error } => write!(f, "malformed JSON: {error}"),
            Self::NotAnObject => f.write_str("JSON value is not an object"),
            Self::TornLine { bytes } => {
                write!(
                    f,
                    "torn last line ({bytes} bytes without a newline): a write was cut short"
                )
            }
            Self::MissingField { field } => write!(f, "missing field `{field}`"),
            Self::InvalidEntry { error } => write!(f, "unreadable entry: {error}"),
            Self::DanglingParent { parent_id } => write!(f, "parent `{parent_id}` does not exist"),
            Self::DuplicateId { first_line } => {
                write!(f, "duplicate id (first used on line {first_line})")
            }
            Self::Cycle => f.write_str("parent links form a cycle"),
            Self::BeforeHeader => f.write_str("line before the session header"),
        }
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
