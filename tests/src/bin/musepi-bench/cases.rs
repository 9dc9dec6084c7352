//! The benchmark cases. Each is one function from the session file to a
//! JSON detail (counts that show the work was done); the first is the
//! baseline every other case is compared with.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;

use musepi_session_model::{Journal, SequentialIds};
use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::BoxError;

/// One case.
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) run: fn(&Path) -> Result<Value, BoxError>,
}

/// Every case, the baseline first.
pub(crate) const CASES: &[Case] = &[
    Case {
        name: "bare-parse",
        run: bare_parse,
    },
    Case {
        name: "open",
        run: open,
    },
    Case {
        name: "context",
        run: context,
    },
    Case {
        name: "plan",
        run: plan,
    },
    Case {
        name: "snap-render",
        run: crate::snap::render,
    },
    Case {
        name: "snap-text",
        run: crate::snap::compact_text,
    },
    Case {
        name: "snap-png",
        run: crate::snap::compact_png,
    },
];

/// The baseline: read the whole file and parse every line into a typed
/// struct of the full entry shape, strings borrowed from the buffer where
/// they have no escapes, opaque fields as raw JSON. The parsed entries are
/// kept until the end, as a loaded session would be.
fn bare_parse(path: &Path) -> Result<Value, BoxError> {
    let bytes = std::fs::read(path)?;
    let mut entries: Vec<BareEntry<'_>> = Vec::new();
    let mut malformed = 0usize;
    for line in bytes.split(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<BareEntry<'_>>(line) {
            Ok(e) => entries.push(e),
            Err(_) => malformed += 1,
        }
    }
    let messages = entries.iter().filter(|e| e.message.is_some()).count();
    let leaf = entries.last().and_then(|e| e.id.as_deref()).unwrap_or("");
    Ok(json!({"lines": entries.len(), "messages": messages, "malformed": malformed, "leaf": leaf}))
}

/// session-model: `Journal::open` (parse, index, tree links), then the
/// path from the root to the leaf.
fn open(path: &Path) -> Result<Value, BoxError> {
    let journal = Journal::open(path, &mut SequentialIds::new())?;
    let session = journal.session();
    let leaf = session.leaf_id().map(|l| l.as_str().to_owned());
    let path_len = session.branch(None)?.len();
    Ok(json!({
        "entries": session.len(),
        "problems": session.problems().len(),
        "leaf": leaf,
        "pathLength": path_len,
    }))
}

/// `open`, then the context at the leaf and its token count; the detail's
/// `stepSeconds` is the time after the session is open.
fn context(path: &Path) -> Result<Value, BoxError> {
    let journal = Journal::open(path, &mut SequentialIds::new())?;
    let session = journal.session();
    let start = std::time::Instant::now();
    let ctx = musepi_context_builder::build_context(session);
    let tokens = ctx.estimated_tokens();
    let estimate = musepi_context_builder::estimate_context_tokens(ctx.agent_messages());
    let step = start.elapsed().as_secs_f64();
    Ok(json!({
        "messages": ctx.messages.len(),
        "tokens": tokens,
        "contextTokens": estimate.tokens,
        "stepSeconds": step,
    }))
}

/// `open`, then a compaction plan at the leaf (prune plan, preparation
/// with the cut, regions and file lists); `stepSeconds` is the time after
/// the session is open.
fn plan(path: &Path) -> Result<Value, BoxError> {
    let journal = Journal::open(path, &mut SequentialIds::new())?;
    let session = journal.session();
    let start = std::time::Instant::now();
    let settings = musepi_compaction::CompactionSettings::default();
    let prune = musepi_compaction::plan_prune(
        session,
        session.leaf_index(),
        &musepi_compaction::PruneConfig::default(),
    );
    // The generated file ends on a compaction: plan at its parent, as a
    // session would be planned before compacting.
    let leaf = session
        .leaf_index()
        .and_then(|l| match session.entries()[l].body {
            musepi_session_model::EntryBody::Compaction(_) => session.parent_index(l),
            _ => Some(l),
        });
    let prep = musepi_compaction::prepare(session, leaf, &settings);
    let step = start.elapsed().as_secs_f64();
    let (summarize, kept) = prep.as_ref().map_or((0, 0), |p| {
        (p.messages_to_summarize.len(), p.recent_messages.len())
    });
    Ok(json!({
        "pruneCandidates": prune.candidates.len(),
        "prepared": prep.is_ok(),
        "summarize": summarize,
        "kept": kept,
        "stepSeconds": step,
    }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct BareEntry<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    parent_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<BareMessage<'a>>,
    #[serde(borrow)]
    thinking_level: Option<Cow<'a, str>>,
    #[serde(borrow)]
    provider: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    summary: Option<Cow<'a, str>>,
    #[serde(borrow)]
    first_kept_entry_id: Option<Cow<'a, str>>,
    tokens_before: Option<f64>,
    #[serde(borrow)]
    details: Option<&'a RawValue>,
    from_hook: Option<bool>,
    from_extension: Option<bool>,
    #[serde(borrow)]
    from_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    custom_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
    #[serde(borrow)]
    content: Option<BareContent<'a>>,
    display: Option<bool>,
    #[serde(borrow)]
    target_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    label: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    // Header fields.
    version: Option<f64>,
    #[serde(borrow)]
    cwd: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct BareMessage<'a> {
    #[serde(borrow)]
    role: Cow<'a, str>,
    #[serde(borrow)]
    content: Option<BareContent<'a>>,
    timestamp: Option<f64>,
    #[serde(borrow)]
    api: Option<Cow<'a, str>>,
    #[serde(borrow)]
    provider: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    usage: Option<BareUsage<'a>>,
    #[serde(borrow)]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(borrow)]
    error_message: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool_name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    details: Option<&'a RawValue>,
    is_error: Option<bool>,
    #[serde(borrow)]
    command: Option<Cow<'a, str>>,
    #[serde(borrow)]
    output: Option<Cow<'a, str>>,
    exit_code: Option<f64>,
    cancelled: Option<bool>,
    truncated: Option<bool>,
    #[serde(borrow)]
    custom_type: Option<Cow<'a, str>>,
    display: Option<bool>,
    #[serde(borrow)]
    summary: Option<Cow<'a, str>>,
    #[serde(borrow)]
    from_id: Option<Cow<'a, str>>,
    tokens_before: Option<f64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct BareUsage<'a> {
    input: Option<f64>,
    output: Option<f64>,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
    total_tokens: Option<f64>,
    #[serde(borrow)]
    cost: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct BareBlock<'a> {
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(rename = "thinkingSignature", borrow)]
    thinking_signature: Option<Cow<'a, str>>,
    #[serde(rename = "textSignature", borrow)]
    text_signature: Option<Cow<'a, str>>,
    #[serde(borrow)]
    data: Option<Cow<'a, str>>,
    #[serde(rename = "mimeType", borrow)]
    mime_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

/// A string or a list of blocks, without serde's buffering `untagged`.
#[allow(dead_code)]
enum BareContent<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<BareBlock<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for BareContent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = BareContent<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of blocks")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(BareContent::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(BareContent::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(BareContent::Text(Cow::Owned(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::new();
                while let Some(b) = seq.next_element()? {
                    blocks.push(b);
                }
                Ok(BareContent::Blocks(blocks))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}
