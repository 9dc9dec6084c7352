//! Message content (docs/design.md, "The session file and its tree"): a
//! plain string or a list of blocks (text, thinking, images, tool calls),
//! and how it is read from and written to a line. A block type this crate
//! does not know is kept by its type name; the journal keeps the whole line.

use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::text::{JsonValue, Text};

/// Message content: a plain string, or a list of blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A plain string.
    Text(Text),
    /// A list of blocks.
    Blocks(Vec<ContentBlock>),
}

impl Default for Content {
    fn default() -> Self {
        Self::Blocks(Vec::new())
    }
}

impl Content {
    /// One text block.
    pub fn text(s: impl Into<String>) -> Self {
        Self::Blocks(vec![ContentBlock::text(s)])
    }

    /// The blocks; a plain string reads as no blocks (use [`Content::as_text`]).
    pub fn blocks(&self) -> &[ContentBlock] {
        match self {
            Self::Text(_) => &[],
            Self::Blocks(b) => b,
        }
    }

    /// The plain string, when the content is one.
    pub fn as_text(&self) -> Option<&Text> {
        match self {
            Self::Text(t) => Some(t),
            Self::Blocks(_) => None,
        }
    }

    /// The string content, or the text blocks concatenated with no separator.
    pub fn joined_text(&self) -> String {
        match self {
            Self::Text(t) => t.as_str().to_owned(),
            Self::Blocks(blocks) => ContentBlock::joined_text(blocks),
        }
    }

    /// Whether there is no block and no text at all.
    pub fn is_empty(&self) -> bool {
        match self {
            Self::Text(t) => t.is_empty(),
            Self::Blocks(b) => b.is_empty(),
        }
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(t) => t.serialize(serializer),
            Self::Blocks(blocks) => {
                let mut seq = serializer.serialize_seq(Some(blocks.len()))?;
                for b in blocks {
                    seq.serialize_element(b)?;
                }
                seq.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content::Text(Text::new(v)))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content::Text(Text::new(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::Blocks(Vec::new()))
            }
            fn visit_none<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::Blocks(Vec::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(wire) = seq.next_element::<WireBlock>()? {
                    blocks.push(wire.into_block());
                }
                Ok(Content::Blocks(blocks))
            }
        }
        deserializer.deserialize_any(ContentVisitor)
    }
}

/// One content block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    /// Text.
    #[serde(rename = "text")]
    Text {
        /// The text.
        text: Text,
        /// Provider signature, when the provider gave one.
        #[serde(rename = "textSignature", skip_serializing_if = "Option::is_none")]
        text_signature: Option<String>,
    },
    /// Reasoning.
    #[serde(rename = "thinking")]
    Thinking {
        /// The reasoning text.
        thinking: Text,
        /// Provider signature, when the provider gave one.
        #[serde(rename = "thinkingSignature", skip_serializing_if = "Option::is_none")]
        thinking_signature: Option<String>,
        /// Whether the provider redacted it.
        #[serde(skip_serializing_if = "Option::is_none")]
        redacted: Option<bool>,
    },
    /// Redacted reasoning carried as opaque data.
    #[serde(rename = "redactedThinking")]
    RedactedThinking {
        /// Opaque provider data.
        data: String,
    },
    /// An image.
    #[serde(rename = "image")]
    Image {
        /// Base64 payload.
        data: String,
        /// MIME type, e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Provider detail hint (`original` for snapcompact frames).
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// A tool call.
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
    /// A block type this crate does not know; only its type is kept here
    /// (the journal keeps the whole line).
    #[serde(skip)]
    Other {
        /// The block's `type`.
        type_name: String,
    },
}

impl ContentBlock {
    /// The text blocks of `blocks`, concatenated with no separator.
    pub fn joined_text(blocks: &[Self]) -> String {
        let mut out = String::new();
        for b in blocks {
            if let Self::Text { text, .. } = b {
                out.push_str(text);
            }
        }
        out
    }

    /// A text block.
    pub fn text(s: impl Into<String>) -> Self {
        Self::Text {
            text: Text::new(s),
            text_signature: None,
        }
    }
}

/// A tool call inside an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// Call id, matched by the tool result's `toolCallId`.
    pub id: String,
    /// Tool name.
    pub name: Text,
    /// Arguments object, in the key order it was written.
    pub arguments: JsonValue,
    /// One-line intent (oh-my-pi).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
}

impl ToolCall {
    /// A call of tool `name` with `arguments` and no intent.
    pub fn new(id: impl Into<String>, name: &str, arguments: serde_json::Value) -> Self {
        Self {
            id: id.into(),
            name: Text::new(name),
            arguments: JsonValue::new(arguments),
            intent: None,
        }
    }
}

/// A content block as written: every field of every block type, optional.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireBlock {
    #[serde(rename = "type")]
    ty: Option<String>,
    text: Option<Text>,
    thinking: Option<Text>,
    text_signature: Option<String>,
    thinking_signature: Option<String>,
    redacted: Option<bool>,
    data: Option<String>,
    mime_type: Option<String>,
    detail: Option<String>,
    id: Option<String>,
    name: Option<Text>,
    arguments: Option<JsonValue>,
    intent: Option<serde_json::Value>,
}

impl WireBlock {
    fn into_block(self) -> ContentBlock {
        match self.ty.as_deref() {
            Some("text") => ContentBlock::Text {
                text: self.text.unwrap_or_default(),
                text_signature: self.text_signature,
            },
            Some("thinking") => ContentBlock::Thinking {
                thinking: self.thinking.unwrap_or_default(),
                thinking_signature: self.thinking_signature,
                redacted: self.redacted,
            },
            Some("redactedThinking") => ContentBlock::RedactedThinking {
                data: self.data.unwrap_or_default(),
            },
            Some("image") => ContentBlock::Image {
                data: self.data.unwrap_or_default(),
                mime_type: self.mime_type.unwrap_or_default(),
                detail: self.detail,
            },
            Some("toolCall") => ContentBlock::ToolCall(ToolCall {
                id: self.id.unwrap_or_default(),
                name: self.name.unwrap_or_default(),
                arguments: self.arguments.unwrap_or_default(),
                intent: match self.intent {
                    Some(serde_json::Value::String(s)) => Some(s),
                    _ => None,
                },
            }),
            other => ContentBlock::Other {
                type_name: other.unwrap_or_default().to_owned(),
            },
        }
    }
}
