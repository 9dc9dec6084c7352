//! The session as data: pi's JSONL session journal read into typed entries,
//! the tree over them, migration from older formats, and the journal file
//! that writes them back durably.
//!
//! This crate owns the session format (docs/design.md, "The session file
//! and its tree"): every entry type, message role and content block ([`Entry`], [`EntryBody`], [`AgentMessage`],
//! [`ContentBlock`]); loading with per-line [`Problem`]s ([`load_file`],
//! [`load_bytes`]); the tree ([`Session`]: index, path, children, labels,
//! leaf, [`Session::branched`]); migration from v1 and v2 with
//! JavaScript-identical rewritten lines; and [`Journal`], the file-backed
//! session with durable appends, the deferred first flush and atomic
//! rewrites.
//!
//! It does not know what a model sees, how tokens are counted or when to
//! compact: those live in the crates above it. It never reads the clock or
//! draws random numbers: "now" and new ids come in through [`Stamp`].
//! It touches the file system only for the journal file.
//!
//! Lengths are UTF-16 code units throughout ([`Text::utf16_len`],
//! [`JsonValue::js_len`]), because the reference implementation is
//! JavaScript and estimates must match it exactly.
//!
//! ```
//! use musepi_session_model::{load_bytes, SequentialIds};
//! let jsonl = br#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}
//! {"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}
//! "#;
//! let session = load_bytes("example.jsonl".as_ref(), jsonl, &mut SequentialIds::new()).unwrap();
//! assert_eq!(session.leaf_id().unwrap().as_str(), "a1");
//! assert!(session.problems().is_empty());
//! ```

mod content;
mod edit;
mod entry;
mod error;
mod fsutil;
mod id;
mod journal;
pub mod json;
mod load;
mod message;
mod migrate;
mod pathinfo;
mod problem;
mod session;
mod store;
mod text;
pub mod time;
mod tree;
mod validate;
mod wire;

pub use content::{Content, ContentBlock, ToolCall};
pub use edit::TreeEdit;
pub use entry::{
    BranchSummary, Compaction, CustomMessageEntry, Entry, EntryBody, Header, MadeBy, ModelChange,
    SummaryEntry,
};
pub use error::{LiveSign, SessionError};
pub use fsutil::{MAX_LINE_BYTES, refuse_special_file, same_file};
pub use id::{EntryId, IdSource, SequentialIds, uuid_hyphenated, uuid_v7};
pub use journal::{
    Journal, LIVE_WINDOW_MS, Replace, WriteWarning, check_not_live, write_file, write_new,
    write_session, write_session_file, write_session_to,
};
pub use load::{FileTail, load_bytes, load_file, read_header_of};
pub use message::{
    AgentMessage, AssistantMessage, BashExecutionMessage, BranchSummaryMessage,
    CompactionSummaryMessage, CustomMessage, StopReason, ToolResultMessage, Usage, UserMessage,
};
pub use migrate::{LineEdit, without_first_kept_index};
pub use pathinfo::{PathModel, PathSummary};
pub use problem::{Problem, ProblemKind};
pub use session::{LineSource, Replacement, Session, Stamp};
pub use store::{Original, PruneStore, StoreWarning, store_dir};
pub use text::{JsonValue, RawJson, Text};
pub use tree::{Tree, TreeNode};

/// The session format version this crate writes.
pub const CURRENT_VERSION: u32 = 3;
