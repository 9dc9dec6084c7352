//! The `--json` documents of the commands that read a session file as it
//! is: `musepi session stats`, `session tree`, `session check`,
//! `session migrate` and `musepi ls`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

/// A problem of a session file: what `session check` reports and every
/// command notes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProblemDoc {
    /// The line it is on (0 for the file as a whole).
    pub line: u64,
    /// A stable kind (`bad-json`, `dangling-parent`, `torn-line`, …).
    pub kind: &'static str,
    /// What is wrong, for people.
    pub message: String,
    /// The entry it is about, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry_id: Option<String>,
}

/// `musepi session stats --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatsDoc {
    /// The file read.
    pub file: String,
    /// The header's id.
    pub session_id: String,
    /// The version the file is written in.
    pub version: u32,
    /// Entries in the file.
    pub entry_count: usize,
    /// Entries by type.
    pub by_type: BTreeMap<String, usize>,
    /// Message entries by role.
    pub by_role: BTreeMap<String, usize>,
    /// The leaf.
    pub leaf_id: Option<String>,
    /// Entries from the root to the leaf.
    pub path_length: usize,
    /// The labels, by the entry they name.
    pub labels: Vec<LabelDoc>,
    /// The session's name, when one was set.
    pub session_name: Option<String>,
    /// The file's problems.
    pub problems: Vec<ProblemDoc>,
}

/// A label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelDoc {
    /// The entry it names.
    pub target_id: String,
    /// The label.
    pub label: String,
}

/// `musepi session tree --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionTreeDoc {
    /// The leaf.
    pub leaf_id: Option<String>,
    /// Entries without a parent.
    pub roots: usize,
    /// The entries in the order the tree prints them.
    pub nodes: Vec<TreeNodeDoc>,
}

/// An entry of the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TreeNodeDoc {
    /// Its id.
    pub id: String,
    /// Its parent.
    pub parent_id: Option<String>,
    /// Its depth from the root.
    pub depth: usize,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its message's role, for a message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// One line of what it holds.
    pub preview: String,
    /// Its label, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// How many children it has.
    pub children: usize,
    /// It is on the path from the root to the leaf.
    pub on_leaf_path: bool,
}

/// `musepi session check --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckDoc {
    /// The file checked.
    pub file: String,
    /// Entries read (0 when the file cannot be read as a session).
    pub entry_count: usize,
    /// The problems found.
    pub problems: Vec<ProblemDoc>,
    /// With `--repair`: what the repaired copy holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair: Option<RepairDoc>,
    /// With `--repair`: warnings (none: the copy is a new file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
}

/// What a repair wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RepairDoc {
    /// The repaired copy.
    pub output: String,
    /// Lines kept.
    pub kept_lines: u64,
    /// Lines left out, and why.
    pub dropped: Vec<LineNoteDoc>,
    /// Lines written with a change, and why.
    pub changed: Vec<LineNoteDoc>,
    /// Problems the copy still has.
    pub remaining: Vec<ProblemDoc>,
}

/// A line and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LineNoteDoc {
    /// The line in the input file.
    pub line: u64,
    /// Why.
    pub reason: String,
}

/// `musepi session migrate --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MigrateDoc {
    /// The file read.
    pub file: String,
    /// Its version.
    pub from_version: u32,
    /// The version written.
    pub to_version: u32,
    /// Anything changed (a v3 file is left alone).
    pub changed: bool,
    /// `--dry-run`: nothing was written.
    pub dry_run: bool,
    /// The file written, when one was.
    pub output: Option<String>,
    /// Entries.
    pub entry_count: usize,
    /// Ids given to v1 entries, which had none.
    pub ids_assigned: usize,
    /// The file's problems.
    pub problems: Vec<ProblemDoc>,
    /// Warnings about the session file.
    pub warnings: Vec<String>,
}

/// `musepi ls --json`: pi's sessions of a working directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LsDoc {
    /// The folder listed.
    pub dir: String,
    /// Where its name came from.
    pub source: String,
    /// The sessions, newest first.
    pub sessions: Vec<LsRowDoc>,
}

/// A session file of `musepi ls`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LsRowDoc {
    /// Its file name.
    pub file: Option<String>,
    /// Its path.
    pub path: String,
    /// When it was last written.
    pub modified: String,
    /// Its size in bytes.
    pub size: u64,
    /// What reading it found; absent when it could not be read.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub read: Option<LsReadDoc>,
    /// Why it could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What `musepi ls` read of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LsReadDoc {
    /// Entries.
    pub entries: usize,
    /// The context's tokens at the leaf.
    pub context_tokens: u64,
    /// The leaf.
    pub leaf_id: Option<String>,
    /// The session's name, when one was set.
    pub name: Option<String>,
    /// The first user message, cut to 200 characters.
    pub first_message: Option<String>,
    /// How many problems it has.
    pub problems: usize,
}
