//! Reading one line into a typed entry.
//!
//! Each line is parsed straight into a flat struct holding every field of
//! every entry type (serde's field matching is fast and buffers nothing),
//! then sorted into [`EntryBody`]. Unknown fields are skipped here; the
//! journal keeps the line's bytes, so nothing is lost on rewrites.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::content::Content;
use crate::entry::{
    BranchSummary, Compaction, CustomMessageEntry, Entry, EntryBody, Header, MadeBy, ModelChange,
};
use crate::id::EntryId;
use crate::json::whole_tokens;
use crate::message::{
    AgentMessage, AssistantMessage, BashExecutionMessage, BranchSummaryMessage,
    CompactionSummaryMessage, CustomMessage, StopReason, ToolResultMessage, Usage, UserMessage,
};
use crate::text::{RawJson, Text};

/// `Some(value)` when the key is present, even when the value is null.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// A field another writer may shape otherwise: its value when it has the
/// expected type, else none (the line itself stays as it was written).
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = Option::<serde_json::Value>::deserialize(d)?;
    Ok(value.and_then(|v| serde_json::from_value(v).ok()))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireEntry {
    #[serde(rename = "type")]
    ty: Option<String>,
    id: Option<String>,
    #[serde(default, deserialize_with = "present")]
    parent_id: Option<Option<String>>,
    timestamp: Option<String>,
    message: Option<WireMessage>,
    #[serde(default, deserialize_with = "present")]
    thinking_level: Option<Option<String>>,
    provider: Option<String>,
    model_id: Option<String>,
    model: Option<String>,
    role: Option<String>,
    summary: Option<Text>,
    first_kept_entry_id: Option<String>,
    first_kept_entry_index: Option<f64>,
    tokens_before: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    method: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    tokens_after: Option<f64>,
    details: Option<RawJson>,
    from_hook: Option<bool>,
    from_extension: Option<bool>,
    short_summary: Option<String>,
    preserve_data: Option<RawJson>,
    usage: Option<WireUsage>,
    from_id: Option<String>,
    custom_type: Option<String>,
    data: Option<RawJson>,
    content: Option<Content>,
    display: Option<bool>,
    attribution: Option<String>,
    target_id: Option<String>,
    #[serde(default, deserialize_with = "present")]
    label: Option<Option<String>>,
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireMessage {
    role: Option<String>,
    content: Option<Content>,
    timestamp: Option<f64>,
    attribution: Option<String>,
    api: Option<String>,
    provider: Option<String>,
    model: Option<String>,
    usage: Option<WireUsage>,
    stop_reason: Option<String>,
    error_message: Option<String>,
    tool_call_id: Option<String>,
    tool_name: Option<String>,
    details: Option<RawJson>,
    is_error: Option<bool>,
    useless: Option<bool>,
    pruned_at: Option<f64>,
    command: Option<Text>,
    output: Option<Text>,
    exit_code: Option<f64>,
    cancelled: Option<bool>,
    truncated: Option<bool>,
    full_output_path: Option<String>,
    exclude_from_context: Option<bool>,
    custom_type: Option<String>,
    display: Option<bool>,
    summary: Option<Text>,
    from_id: Option<String>,
    tokens_before: Option<f64>,
    short_summary: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    input: Option<f64>,
    output: Option<f64>,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
    total_tokens: Option<f64>,
    cost: Option<RawJson>,
    #[serde(rename = "cacheWrite1h")]
    cache_write_1h: Option<f64>,
    reasoning: Option<f64>,
    context_tokens: Option<f64>,
}

impl WireUsage {
    fn into_usage(self) -> Usage {
        Usage {
            input: self.input.unwrap_or(0.0),
            output: self.output.unwrap_or(0.0),
            cache_read: self.cache_read.unwrap_or(0.0),
            cache_write: self.cache_write.unwrap_or(0.0),
            total_tokens: self.total_tokens.unwrap_or(0.0),
            cost: self.cost,
            cache_write_1h: self.cache_write_1h,
            reasoning: self.reasoning,
            context_tokens: self.context_tokens,
        }
    }
}

/// What reading a line gave.
pub(crate) enum LineRead {
    /// An entry (possibly with defaulted fields).
    Entry(Box<ParsedEntry>),
    /// Valid JSON that is not an object.
    NotAnObject,
    /// Invalid JSON.
    Malformed(String),
}

/// An entry read from a line, with what was missing and the v1/v2 fields
/// that migration needs.
pub(crate) struct ParsedEntry {
    pub(crate) entry: Entry,
    pub(crate) has_id: bool,
    pub(crate) missing: Vec<&'static str>,
    pub(crate) invalid: Option<String>,
    pub(crate) first_kept_entry_index: Option<f64>,
    pub(crate) hook_message_role: bool,
}

/// Reads one line.
/// A string holding a lone UTF-16 surrogate escape (`"\ud83d"`), which
/// JavaScript reads and writes, is read with U+FFFD in its place
/// ([`crate::json::readable`]): same length, and the line stays as written.
pub(crate) fn read_entry(line: &[u8]) -> LineRead {
    match serde_json::from_slice::<WireEntry>(line) {
        Ok(w) => LineRead::Entry(Box::new(from_wire(w))),
        Err(e) if e.is_syntax() || e.is_eof() => match crate::json::readable(line) {
            std::borrow::Cow::Owned(fixed) => match read_entry(&fixed) {
                LineRead::Malformed(_) => LineRead::Malformed(malformed(line, &e)),
                read => read,
            },
            std::borrow::Cow::Borrowed(_) => LineRead::Malformed(malformed(line, &e)),
        },
        Err(typed_error) => fallback(line, &typed_error),
    }
}

/// The typed read failed on a well-formed line: wrong field types, or a
/// duplicate key (which JavaScript allows, last value wins).
fn fallback(line: &[u8], typed_error: &serde_json::Error) -> LineRead {
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => return LineRead::Malformed(malformed(line, &e)),
    };
    let Value::Object(map) = value else {
        return LineRead::NotAnObject;
    };
    if let Ok(w) = serde_json::from_value::<WireEntry>(Value::Object(map.clone())) {
        return LineRead::Entry(Box::new(from_wire(w)));
    }
    let text = |k: &str| map.get(k).and_then(Value::as_str).map(str::to_owned);
    let id = text("id");
    let entry = Entry {
        id: EntryId::from(id.clone().unwrap_or_default()),
        parent_id: text("parentId").map(EntryId::from),
        timestamp: text("timestamp").unwrap_or_default(),
        body: EntryBody::Other {
            type_name: text("type").unwrap_or_default(),
        },
    };
    LineRead::Entry(Box::new(ParsedEntry {
        entry,
        has_id: id.is_some(),
        missing: Vec::new(),
        invalid: Some(strip_position(&typed_error.to_string())),
        first_kept_entry_index: None,
        hook_message_role: false,
    }))
}

/// Why a line is not JSON, said about the line of the file: bytes that
/// are not UTF-8 are named with their column, as a header's are (the
/// parser calls them "invalid unicode code point"), and the parser's
/// position is a column alone, since the whole line is its "line 1".
fn malformed(line: &[u8], e: &serde_json::Error) -> String {
    if let Some(reason) = crate::fsutil::not_utf8(line) {
        return reason;
    }
    match e.line() {
        0 => e.to_string(),
        _ => format!(
            "{} at column {}",
            strip_position(&e.to_string()),
            e.column()
        ),
    }
}

fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
}

/// A required field's value, or its default with the field noted as
/// missing.
fn required<T: Default>(
    value: Option<T>,
    field: &'static str,
    missing: &mut Vec<&'static str>,
) -> T {
    value.unwrap_or_else(|| {
        missing.push(field);
        T::default()
    })
}

fn from_wire(w: WireEntry) -> ParsedEntry {
    let mut missing = Vec::new();
    let has_id = w.id.is_some();
    let ty = w.ty.unwrap_or_default();
    if ty.is_empty() {
        missing.push("type");
    }
    let timestamp = required(w.timestamp, "timestamp", &mut missing);
    let mut hook_message_role = false;
    let body = match ty.as_str() {
        "message" => {
            if let Some(m) = w.message {
                hook_message_role = m.role.as_deref() == Some("hookMessage");
                match message_from_wire(m, &mut missing) {
                    Some(msg) => EntryBody::Message(msg),
                    None => EntryBody::Other { type_name: ty },
                }
            } else {
                missing.push("message");
                EntryBody::Other { type_name: ty }
            }
        }
        "thinking_level_change" => EntryBody::ThinkingLevelChange {
            thinking_level: required(w.thinking_level, "thinkingLevel", &mut missing),
        },
        "model_change" => {
            if w.model.is_none() && (w.provider.is_none() || w.model_id.is_none()) {
                missing.push(if w.provider.is_none() {
                    "provider"
                } else {
                    "modelId"
                });
            }
            EntryBody::ModelChange(ModelChange {
                provider: w.provider,
                model_id: w.model_id,
                model: w.model,
                role: w.role,
            })
        }
        "compaction" => {
            let summary = required(w.summary, "summary", &mut missing);
            if w.first_kept_entry_id.is_none() && w.first_kept_entry_index.is_none() {
                missing.push("firstKeptEntryId");
            }
            let tokens_before =
                whole_tokens(required(w.tokens_before, "tokensBefore", &mut missing));
            EntryBody::Compaction(Compaction {
                summary,
                first_kept_entry_id: w.first_kept_entry_id.map(EntryId::from),
                tokens_before,
                details: w.details.map(|d| d.to_value()),
                made_by: MadeBy {
                    from_hook: w.from_hook,
                    from_extension: w.from_extension,
                },
                short_summary: w.short_summary,
                preserve_data: w.preserve_data,
                usage: w.usage.map(WireUsage::into_usage),
                method: w.method,
                tokens_after: w.tokens_after.map(whole_tokens),
            })
        }
        "branch_summary" => EntryBody::BranchSummary(BranchSummary {
            from_id: required(w.from_id, "fromId", &mut missing),
            summary: required(w.summary, "summary", &mut missing),
            details: w.details.map(|d| d.to_value()),
            made_by: MadeBy {
                from_hook: w.from_hook,
                from_extension: w.from_extension,
            },
            usage: w.usage.map(WireUsage::into_usage),
        }),
        "custom" => EntryBody::Custom {
            custom_type: required(w.custom_type, "customType", &mut missing),
            data: w.data,
        },
        "custom_message" => EntryBody::CustomMessage(CustomMessageEntry {
            custom_type: required(w.custom_type, "customType", &mut missing),
            content: required(w.content, "content", &mut missing),
            display: w.display.unwrap_or(false),
            details: w.details,
            attribution: w.attribution,
        }),
        "label" => EntryBody::Label {
            target_id: EntryId::from(required(w.target_id, "targetId", &mut missing)),
            label: w.label.flatten(),
        },
        "session_info" => EntryBody::SessionInfo { name: w.name },
        _ => EntryBody::Other { type_name: ty },
    };
    let parent_id = if let Some(p) = w.parent_id {
        p.map(EntryId::from)
    } else {
        // v1 entries have no tree fields; migration adds them.
        if has_id {
            missing.push("parentId");
        }
        None
    };
    ParsedEntry {
        entry: Entry {
            id: EntryId::from(w.id.unwrap_or_default()),
            parent_id,
            timestamp,
            body,
        },
        has_id,
        missing,
        invalid: None,
        first_kept_entry_index: w.first_kept_entry_index,
        hook_message_role,
    }
}

fn message_from_wire(m: WireMessage, missing: &mut Vec<&'static str>) -> Option<AgentMessage> {
    let Some(role) = m.role else {
        missing.push("message.role");
        return None;
    };
    let content = m.content.unwrap_or_default();
    Some(match role.as_str() {
        "user" => AgentMessage::User(UserMessage {
            content,
            timestamp: m.timestamp,
            attribution: m.attribution,
        }),
        "assistant" => AgentMessage::Assistant(AssistantMessage {
            content,
            api: m.api,
            provider: m.provider,
            model: m.model,
            usage: m.usage.map(WireUsage::into_usage),
            stop_reason: m.stop_reason.as_deref().map(StopReason::parse),
            error_message: m.error_message,
            timestamp: m.timestamp,
        }),
        "toolResult" => AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: required(m.tool_call_id, "message.toolCallId", missing),
            tool_name: m.tool_name.unwrap_or_default(),
            content,
            details: m.details,
            is_error: m.is_error.unwrap_or(false),
            timestamp: m.timestamp,
            useless: m.useless,
            pruned_at: m.pruned_at,
            usage: m.usage.map(WireUsage::into_usage),
        }),
        "bashExecution" => AgentMessage::BashExecution(BashExecutionMessage {
            command: m.command.unwrap_or_default(),
            output: m.output.unwrap_or_default(),
            exit_code: m.exit_code,
            cancelled: m.cancelled.unwrap_or(false),
            truncated: m.truncated.unwrap_or(false),
            full_output_path: m.full_output_path,
            exclude_from_context: m.exclude_from_context,
            timestamp: m.timestamp,
        }),
        "custom" | "hookMessage" => AgentMessage::Custom(CustomMessage {
            custom_type: m.custom_type.unwrap_or_default(),
            content,
            display: m.display.unwrap_or(false),
            details: m.details,
            timestamp: m.timestamp,
        }),
        "branchSummary" => AgentMessage::BranchSummary(BranchSummaryMessage {
            summary: m.summary.unwrap_or_default(),
            from_id: m.from_id.unwrap_or_default(),
            timestamp: m.timestamp,
        }),
        "compactionSummary" => AgentMessage::CompactionSummary(CompactionSummaryMessage {
            summary: m.summary.unwrap_or_default(),
            tokens_before: m.tokens_before.map_or(0, whole_tokens),
            timestamp: m.timestamp,
            short_summary: m.short_summary,
            first_kept_entry_id: None,
        }),
        _ => AgentMessage::Other {
            role,
            timestamp: m.timestamp,
        },
    })
}

/// What reading the header line gave.
pub(crate) enum HeaderRead {
    /// A valid header.
    Header(Header),
    /// Valid JSON that is not a session header.
    NotAHeader,
    /// A session header whose `version` is not 1, 2 or 3 (a number); the
    /// value as written.
    BadVersion(String),
    /// Invalid JSON.
    Malformed(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireHeader {
    #[serde(rename = "type")]
    ty: Option<Value>,
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    version: Option<Option<Value>>,
    timestamp: Option<Value>,
    cwd: Option<Value>,
    parent_session: Option<Value>,
}

pub(crate) fn read_header(line: &[u8]) -> HeaderRead {
    let w: WireHeader = match serde_json::from_slice(&crate::json::readable(line)) {
        Ok(w) => w,
        Err(e) if e.is_syntax() || e.is_eof() => return HeaderRead::Malformed(malformed(line, &e)),
        Err(_) => return HeaderRead::NotAHeader,
    };
    let (Some(Value::String(ty)), Some(Value::String(id))) = (&w.ty, &w.id) else {
        return HeaderRead::NotAHeader;
    };
    if ty != "session" {
        return HeaderRead::NotAHeader;
    }
    let string = |v: Option<Value>| match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    // Absent means 1; 1, 2 and 3 (JSON numbers, `3.0` included, as
    // JavaScript compares them) are known; anything else, a string "3"
    // included, is not a version this crate can read or migrate.
    let version = match &w.version {
        None => 1,
        Some(None) => return HeaderRead::BadVersion("null".to_owned()),
        Some(Some(Value::Number(n))) => match n.as_f64() {
            Some(v)
                if v.fract() == 0.0 && (1.0..=f64::from(crate::CURRENT_VERSION)).contains(&v) =>
            {
                v as u32
            }
            _ => return HeaderRead::BadVersion(n.to_string()),
        },
        Some(Some(other)) => return HeaderRead::BadVersion(other.to_string()),
    };
    HeaderRead::Header(Header {
        version,
        id: id.clone(),
        timestamp: string(w.timestamp),
        cwd: string(w.cwd),
        parent_session: string(w.parent_session),
    })
}
