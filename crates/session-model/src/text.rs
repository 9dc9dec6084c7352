//! Strings that know their UTF-16 length, and JSON values that know their
//! `JSON.stringify` length.
//!
//! Token estimates, truncation points and budgets all count UTF-16 code
//! units (docs/design.md, "The session file and its tree"). Both lengths are computed once, when the text is read,
//! so estimating a 200 MB session never rescans its text.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::json::{js_stringify_len, utf16_len};

/// A string with its UTF-16 length.
///
/// The text is shared, not copied, when a `Text` is cloned: contexts,
/// provider messages and summarizer inputs are built from the session's
/// texts many times over (every turn of a live session), and a clone costs
/// a reference count, whatever the size of the tool output it holds.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Text {
    s: Arc<str>,
    utf16: usize,
}

impl Default for Text {
    fn default() -> Self {
        Self::from_str_ref("")
    }
}

impl Text {
    /// Wraps `s`, counting its UTF-16 units.
    pub fn new(s: impl Into<String>) -> Self {
        Self::from_str_ref(&s.into())
    }

    /// Copies `s` into a new text, counting its UTF-16 units.
    fn from_str_ref(s: &str) -> Self {
        Self {
            utf16: utf16_len(s),
            s: Arc::from(s),
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.s
    }

    /// Length in UTF-16 code units (JavaScript's `.length`).
    pub fn utf16_len(&self) -> usize {
        self.utf16
    }

    /// The text as an owned string.
    pub fn into_string(self) -> String {
        self.s.to_string()
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.s
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        &self.s
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.s, f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.s)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Self::new(s)
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        &*self.s == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        &*self.s == *other
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.s)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl serde::de::Visitor<'_> for TextVisitor {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            // One copy, from the parser's buffer into the text.
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Text, E> {
                Ok(Text::from_str_ref(v))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// A JSON value with the length of its `JSON.stringify` form.
///
/// The default is an absent value (`null` with length 0): a tool call
/// written without arguments counts nothing for them.
#[derive(Clone, Default, PartialEq)]
pub struct JsonValue {
    value: Value,
    js_len: usize,
}

impl JsonValue {
    /// Wraps `value`, measuring its `JSON.stringify` length.
    pub fn new(value: Value) -> Self {
        let js_len = js_stringify_len(&value);
        Self { value, js_len }
    }

    /// The value.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// `JSON.stringify(value).length` in UTF-16 units.
    pub fn js_len(&self) -> usize {
        self.js_len
    }

    /// Unwraps the value.
    pub fn into_value(self) -> Value {
        self.value
    }
}

impl Deref for JsonValue {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.value
    }
}

impl fmt::Debug for JsonValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.value, f)
    }
}

impl From<Value> for JsonValue {
    fn from(value: Value) -> Self {
        Self::new(value)
    }
}

impl Serialize for JsonValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JsonValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::new)
    }
}

/// A JSON value kept as the text it was written as.
#[derive(Debug, Clone)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// Wraps raw JSON text.
    pub fn new(raw: Box<RawValue>) -> Self {
        Self(raw)
    }

    /// Prints `value` as JavaScript would and keeps that text.
    pub fn from_value(value: &Value) -> Self {
        let text = crate::json::js_stringify(value);
        // `js_stringify` always produces valid JSON.
        Self(RawValue::from_string(text).unwrap_or_else(|_| null_raw()))
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// Parses the text into a value.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }
}

fn null_raw() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).unwrap_or_else(|_| unreachable!("null is valid JSON"))
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(Self)
    }
}
