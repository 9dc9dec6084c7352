//! The baseline every case is compared with: the fastest plain typed parse
//! of the file.
//!
//! The file is read once into one buffer, and every line is parsed into a
//! typed struct of the full entry shape that borrows from that buffer and
//! owns nothing: names and ids as `&str` (a copy only in the rare case of an
//! escape sequence in one), every text field (message text, reasoning, tool
//! output, commands, summaries, images) as its JSON source text, validated
//! but not unescaped, and opaque fields (tool arguments, details, costs) as
//! raw JSON. The parsed entries are kept until the end, as a loaded session
//! would be. This is the least work that still reads every line into typed
//! data: anything that needs the text itself (unescaped, with its length)
//! costs more.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::BoxError;

/// The text of a string field as written in the file (quotes and escapes included).
type Raw<'a> = &'a RawValue;
/// A short string (a name or an id): borrowed unless it has an escape.
type Name<'a> = Cow<'a, str>;

/// Reads the file once and parses every line into [`FloorEntry`].
pub(crate) fn floor(path: &Path) -> Result<Value, BoxError> {
    let bytes = std::fs::read(path)?;
    let mut entries: Vec<FloorEntry<'_>> = Vec::new();
    let mut malformed = 0usize;
    for line in bytes.split(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<FloorEntry<'_>>(line) {
            Ok(e) => entries.push(e),
            Err(_) => malformed += 1,
        }
    }
    let messages = entries.iter().filter(|e| e.message.is_some()).count();
    let blocks: usize = entries
        .iter()
        .filter_map(|e| e.message.as_ref()?.content.as_ref())
        .map(|c| match c {
            FloorContent::Text(_) => 1,
            FloorContent::Blocks(b) => b.len(),
        })
        .sum();
    let leaf = entries.last().and_then(|e| e.id.as_deref()).unwrap_or("");
    Ok(json!({
        "lines": entries.len(),
        "messages": messages,
        "blocks": blocks,
        "malformed": malformed,
        "leaf": leaf,
    }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct FloorEntry<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Name<'a>>,
    #[serde(borrow)]
    id: Option<Name<'a>>,
    #[serde(borrow)]
    parent_id: Option<Name<'a>>,
    #[serde(borrow)]
    timestamp: Option<Name<'a>>,
    #[serde(borrow)]
    message: Option<FloorMessage<'a>>,
    #[serde(borrow)]
    thinking_level: Option<Name<'a>>,
    #[serde(borrow)]
    provider: Option<Name<'a>>,
    #[serde(borrow)]
    model_id: Option<Name<'a>>,
    #[serde(borrow)]
    summary: Option<Raw<'a>>,
    #[serde(borrow)]
    first_kept_entry_id: Option<Name<'a>>,
    tokens_before: Option<f64>,
    #[serde(borrow)]
    details: Option<Raw<'a>>,
    from_hook: Option<bool>,
    from_extension: Option<bool>,
    #[serde(borrow)]
    from_id: Option<Name<'a>>,
    #[serde(borrow)]
    custom_type: Option<Name<'a>>,
    #[serde(borrow)]
    data: Option<Raw<'a>>,
    #[serde(borrow)]
    content: Option<FloorContent<'a>>,
    display: Option<bool>,
    #[serde(borrow)]
    target_id: Option<Name<'a>>,
    #[serde(borrow)]
    label: Option<Name<'a>>,
    #[serde(borrow)]
    name: Option<Name<'a>>,
    // Header fields.
    version: Option<f64>,
    #[serde(borrow)]
    cwd: Option<Raw<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct FloorMessage<'a> {
    #[serde(borrow)]
    role: Name<'a>,
    #[serde(borrow)]
    content: Option<FloorContent<'a>>,
    timestamp: Option<f64>,
    #[serde(borrow)]
    api: Option<Name<'a>>,
    #[serde(borrow)]
    provider: Option<Name<'a>>,
    #[serde(borrow)]
    model: Option<Name<'a>>,
    usage: Option<FloorUsage<'a>>,
    #[serde(borrow)]
    stop_reason: Option<Name<'a>>,
    #[serde(borrow)]
    error_message: Option<Raw<'a>>,
    #[serde(borrow)]
    tool_call_id: Option<Name<'a>>,
    #[serde(borrow)]
    tool_name: Option<Name<'a>>,
    #[serde(borrow)]
    details: Option<Raw<'a>>,
    is_error: Option<bool>,
    #[serde(borrow)]
    command: Option<Raw<'a>>,
    #[serde(borrow)]
    output: Option<Raw<'a>>,
    exit_code: Option<f64>,
    cancelled: Option<bool>,
    truncated: Option<bool>,
    #[serde(borrow)]
    custom_type: Option<Name<'a>>,
    display: Option<bool>,
    #[serde(borrow)]
    summary: Option<Raw<'a>>,
    #[serde(borrow)]
    from_id: Option<Name<'a>>,
    tokens_before: Option<f64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct FloorUsage<'a> {
    input: Option<f64>,
    output: Option<f64>,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
    total_tokens: Option<f64>,
    #[serde(borrow)]
    cost: Option<Raw<'a>>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct FloorBlock<'a> {
    #[serde(rename = "type", borrow)]
    ty: Name<'a>,
    #[serde(borrow)]
    text: Option<Raw<'a>>,
    #[serde(borrow)]
    thinking: Option<Raw<'a>>,
    #[serde(rename = "thinkingSignature", borrow)]
    thinking_signature: Option<Raw<'a>>,
    #[serde(rename = "textSignature", borrow)]
    text_signature: Option<Raw<'a>>,
    #[serde(borrow)]
    data: Option<Raw<'a>>,
    #[serde(rename = "mimeType", borrow)]
    mime_type: Option<Name<'a>>,
    #[serde(borrow)]
    id: Option<Name<'a>>,
    #[serde(borrow)]
    name: Option<Name<'a>>,
    #[serde(borrow)]
    arguments: Option<Raw<'a>>,
}

/// A string or a list of blocks, without serde's buffering `untagged`.
///
/// A plain string content (user messages) is borrowed; it is copied only
/// when it has an escape sequence, the one place the floor owns text (the
/// string form does not say which it is before it is read).
#[allow(dead_code)]
enum FloorContent<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<FloorBlock<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for FloorContent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = FloorContent<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of blocks")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(FloorContent::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(FloorContent::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::new();
                while let Some(b) = seq.next_element()? {
                    blocks.push(b);
                }
                Ok(FloorContent::Blocks(blocks))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}
