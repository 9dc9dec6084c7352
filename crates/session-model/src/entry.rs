//! Entries and the header (docs/design.md, "The session file and its tree").

use serde_json::{Map, Value};

use crate::content::Content;
use crate::id::EntryId;
use crate::message::{AgentMessage, Usage};
use crate::text::{RawJson, Text};

/// The first line of a session file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Format version; an absent `version` reads as 1.
    pub version: u32,
    /// Session id.
    pub id: String,
    /// Creation time (ISO-8601).
    pub timestamp: Option<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// The session this one was forked, branched or handed off from.
    pub parent_session: Option<String>,
}

impl Header {
    /// A v3 header.
    pub fn new(
        id: impl Into<String>,
        timestamp: impl Into<String>,
        cwd: impl Into<String>,
    ) -> Self {
        Self {
            version: crate::CURRENT_VERSION,
            id: id.into(),
            timestamp: Some(timestamp.into()),
            cwd: Some(cwd.into()),
            parent_session: None,
        }
    }

    /// The header as pi writes it: `type`, `version`, `id`, `timestamp`, `cwd`, `parentSession`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), "session".into());
        m.insert("version".into(), self.version.into());
        m.insert("id".into(), self.id.clone().into());
        if let Some(t) = &self.timestamp {
            m.insert("timestamp".into(), t.clone().into());
        }
        if let Some(c) = &self.cwd {
            m.insert("cwd".into(), c.clone().into());
        }
        if let Some(p) = &self.parent_session {
            m.insert("parentSession".into(), p.clone().into());
        }
        Value::Object(m)
    }
}

/// One entry of the session tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Its id.
    pub id: EntryId,
    /// Its parent, or `None` for a root.
    pub parent_id: Option<EntryId>,
    /// Creation time (ISO-8601).
    pub timestamp: String,
    /// What kind of entry it is, with its data.
    pub body: EntryBody,
}

impl Entry {
    /// The entry's `type`.
    pub fn type_name(&self) -> &str {
        self.body.type_name()
    }

    /// The message, for `message` entries.
    pub fn message(&self) -> Option<&AgentMessage> {
        match &self.body {
            EntryBody::Message(m) => Some(m),
            _ => None,
        }
    }

    /// `message:<role>` for messages, the entry type otherwise.
    pub fn kind_label(&self) -> String {
        match &self.body {
            EntryBody::Message(m) => format!("message:{}", m.role()),
            other => other.type_name().to_owned(),
        }
    }

    /// The entry timestamp in epoch milliseconds, when it parses.
    pub fn timestamp_ms(&self) -> Option<i64> {
        crate::time::parse_iso(&self.timestamp)
    }

    /// The entry as pi writes it: `type`, `id`, `parentId`, `timestamp`, then its fields.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), self.type_name().into());
        m.insert("id".into(), self.id.as_str().into());
        m.insert(
            "parentId".into(),
            self.parent_id
                .as_ref()
                .map_or(Value::Null, |p| p.as_str().into()),
        );
        m.insert("timestamp".into(), self.timestamp.clone().into());
        self.body.write_fields(&mut m);
        Value::Object(m)
    }
}

/// The kinds of entry, with their data.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryBody {
    /// `message`.
    Message(AgentMessage),
    /// `thinking_level_change`.
    ThinkingLevelChange {
        /// The new level (`off`, `low`, …); `None` when written as null.
        thinking_level: Option<String>,
    },
    /// `model_change`, in pi's shape (`provider`, `modelId`) or oh-my-pi's (`model`, `role`).
    ModelChange(ModelChange),
    /// `compaction`.
    Compaction(Compaction),
    /// `branch_summary`.
    BranchSummary(BranchSummary),
    /// `custom`: extension state, never in context.
    Custom {
        /// Extension-defined kind.
        custom_type: String,
        /// Extension data.
        data: Option<RawJson>,
    },
    /// `custom_message`: an extension-injected message, part of the context.
    CustomMessage(CustomMessageEntry),
    /// `label`.
    Label {
        /// The labelled entry.
        target_id: EntryId,
        /// The label; `None` or empty clears it.
        label: Option<String>,
    },
    /// `session_info`.
    SessionInfo {
        /// Display name.
        name: Option<String>,
    },
    /// Any other type (oh-my-pi's newer types, or unknown ones): indexed
    /// into the tree, ignored by context building.
    Other {
        /// The entry's `type`.
        type_name: String,
    },
}

impl EntryBody {
    /// The wire `type`.
    pub fn type_name(&self) -> &str {
        match self {
            Self::Message(_) => "message",
            Self::ThinkingLevelChange { .. } => "thinking_level_change",
            Self::ModelChange(_) => "model_change",
            Self::Compaction(_) => "compaction",
            Self::BranchSummary(_) => "branch_summary",
            Self::Custom { .. } => "custom",
            Self::CustomMessage(_) => "custom_message",
            Self::Label { .. } => "label",
            Self::SessionInfo { .. } => "session_info",
            Self::Other { type_name } => type_name,
        }
    }

    fn write_fields(&self, m: &mut Map<String, Value>) {
        match self {
            Self::Message(msg) => {
                m.insert("message".into(), to_value(msg));
            }
            Self::ThinkingLevelChange { thinking_level } => {
                m.insert(
                    "thinkingLevel".into(),
                    thinking_level.clone().map_or(Value::Null, Value::from),
                );
            }
            Self::ModelChange(mc) => {
                put_opt(m, "provider", mc.provider.as_deref());
                put_opt(m, "modelId", mc.model_id.as_deref());
                put_opt(m, "model", mc.model.as_deref());
                put_opt(m, "role", mc.role.as_deref());
            }
            Self::Compaction(c) => {
                m.insert("summary".into(), c.summary.as_str().into());
                if let Some(id) = &c.first_kept_entry_id {
                    m.insert("firstKeptEntryId".into(), id.as_str().into());
                }
                m.insert("tokensBefore".into(), c.tokens_before.into());
                if let Some(d) = &c.details {
                    m.insert("details".into(), d.clone());
                }
                c.made_by.put(m);
                put_opt(m, "shortSummary", c.short_summary.as_deref());
                if let Some(p) = &c.preserve_data {
                    m.insert("preserveData".into(), p.to_value());
                }
                if let Some(u) = &c.usage {
                    m.insert("usage".into(), to_value(u));
                }
                put_opt(m, "method", c.method.as_deref());
                if let Some(t) = c.tokens_after {
                    m.insert("tokensAfter".into(), t.into());
                }
            }
            Self::BranchSummary(b) => {
                m.insert("fromId".into(), b.from_id.as_str().into());
                m.insert("summary".into(), b.summary.as_str().into());
                if let Some(d) = &b.details {
                    m.insert("details".into(), d.clone());
                }
                b.made_by.put(m);
                if let Some(u) = &b.usage {
                    m.insert("usage".into(), to_value(u));
                }
            }
            Self::Custom { custom_type, data } => {
                m.insert("customType".into(), custom_type.as_str().into());
                if let Some(d) = data {
                    m.insert("data".into(), d.to_value());
                }
            }
            Self::CustomMessage(c) => {
                m.insert("customType".into(), c.custom_type.as_str().into());
                m.insert("content".into(), to_value(&c.content));
                m.insert("display".into(), c.display.into());
                if let Some(d) = &c.details {
                    m.insert("details".into(), d.to_value());
                }
                put_opt(m, "attribution", c.attribution.as_deref());
            }
            Self::Label { target_id, label } => {
                m.insert("targetId".into(), target_id.as_str().into());
                put_opt(m, "label", label.as_deref());
            }
            Self::SessionInfo { name } => put_opt(m, "name", name.as_deref()),
            Self::Other { .. } => {}
        }
    }
}

fn put_opt(m: &mut Map<String, Value>, key: &str, v: Option<&str>) {
    if let Some(v) = v {
        m.insert(key.into(), v.into());
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    // Serializing our own types into a `Value` cannot fail: they hold no
    // non-string map keys and no non-finite floats that serde would reject.
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// `model_change` in either shape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelChange {
    /// pi: provider name.
    pub provider: Option<String>,
    /// pi: model id.
    pub model_id: Option<String>,
    /// oh-my-pi: `provider/modelId`.
    pub model: Option<String>,
    /// oh-my-pi: model role (`default`, `smol`, …).
    pub role: Option<String>,
}

impl ModelChange {
    /// `(provider, modelId)` from either shape.
    pub fn provider_and_model(&self) -> Option<(String, String)> {
        match (&self.provider, &self.model_id, &self.model) {
            (Some(p), Some(m), _) => Some((p.clone(), m.clone())),
            (_, _, Some(pm)) => pm
                .split_once('/')
                .map(|(p, m)| (p.to_owned(), m.to_owned())),
            _ => None,
        }
    }
}

/// `compaction`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Compaction {
    /// The text that replaces the summarized history.
    pub summary: Text,
    /// The first entry kept verbatim.
    pub first_kept_entry_id: Option<EntryId>,
    /// Context size before the compaction (the file's number as a count,
    /// [`crate::json::whole_tokens`]).
    pub tokens_before: u64,
    /// `{readFiles, modifiedFiles}` by default; anything for extensions.
    pub details: Option<Value>,
    /// Whether an extension made it.
    pub made_by: MadeBy,
    /// One-line summary for UIs.
    pub short_summary: Option<String>,
    /// Data carried across compactions (hook data, snapcompact archive, remote replay).
    pub preserve_data: Option<RawJson>,
    /// Usage of the LLM calls that produced it.
    pub usage: Option<Usage>,
    /// How it was made (`snapcompact`, `llm`, `remote`, `handoff`), as
    /// oh-my-pi records it; any other value is kept as read.
    pub method: Option<String>,
    /// The context's tokens right after it, as oh-my-pi records it.
    pub tokens_after: Option<u64>,
}

/// What a compaction and a branch summary share: who made it, and the
/// `details` whose file lists may join a later summary's.
pub trait SummaryEntry {
    /// Who made it.
    fn made_by(&self) -> MadeBy;

    /// Its `details`.
    fn details(&self) -> Option<&Value>;

    /// Whether an extension made it (`fromHook` or `fromExtension`, docs/design.md, "The session file and its tree").
    fn is_from_extension(&self) -> bool {
        self.made_by().is_extension()
    }

    /// Whether its `details` file lists join the next compaction's or
    /// branch summary's: see [`MadeBy::carries_file_lists`].
    fn carries_file_lists(&self) -> bool {
        self.made_by().carries_file_lists(self.details())
    }
}

impl SummaryEntry for Compaction {
    fn made_by(&self) -> MadeBy {
        self.made_by
    }
    fn details(&self) -> Option<&Value> {
        self.details.as_ref()
    }
}

/// Who made a compaction or a branch summary, as the file says it: pi
/// writes `fromHook`, oh-my-pi and musepi `fromExtension`; either one
/// `true` means an extension made it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MadeBy {
    /// pi's name for "an extension made it".
    pub from_hook: Option<bool>,
    /// oh-my-pi's name for "an extension made it".
    pub from_extension: Option<bool>,
}

impl MadeBy {
    /// What musepi writes: `fromExtension` alone.
    pub fn extension(made_by_extension: bool) -> Self {
        Self {
            from_hook: None,
            from_extension: Some(made_by_extension),
        }
    }

    /// Whether an extension made it.
    pub fn is_extension(self) -> bool {
        self.from_hook == Some(true) || self.from_extension == Some(true)
    }

    /// Whether the entry's `details` file lists join a later compaction's
    /// or branch summary's: when musepi or pi made it, not another
    /// extension. musepi's pi extension hands pi entries that pi stores as
    /// extension-made; the `musepi` object it adds to `details` marks them
    /// as musepi's own.
    pub fn carries_file_lists(self, details: Option<&Value>) -> bool {
        !self.is_extension()
            || details
                .and_then(|d| d.get("musepi"))
                .is_some_and(Value::is_object)
    }

    fn put(self, m: &mut Map<String, Value>) {
        if let Some(f) = self.from_extension {
            m.insert("fromExtension".into(), f.into());
        }
        if let Some(f) = self.from_hook {
            m.insert("fromHook".into(), f.into());
        }
    }
}

/// `branch_summary`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BranchSummary {
    /// The navigation target the summary hangs under, or `root`.
    pub from_id: String,
    /// Summary text (with preamble and file list).
    pub summary: Text,
    /// `{readFiles, modifiedFiles}` by default.
    pub details: Option<Value>,
    /// Whether an extension made it.
    pub made_by: MadeBy,
    /// Usage of the LLM call that produced it.
    pub usage: Option<Usage>,
}

impl SummaryEntry for BranchSummary {
    fn made_by(&self) -> MadeBy {
        self.made_by
    }
    fn details(&self) -> Option<&Value> {
        self.details.as_ref()
    }
}

/// `custom_message`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CustomMessageEntry {
    /// Extension-defined kind.
    pub custom_type: String,
    /// What the model sees.
    pub content: Content,
    /// Whether the UI shows it.
    pub display: bool,
    /// Extension data, never sent to the model.
    pub details: Option<RawJson>,
    /// `user` or `agent` (oh-my-pi).
    pub attribution: Option<String>,
}
