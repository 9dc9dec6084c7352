//! What the model sees at a leaf as rows and as JSON (`musepi context`,
//! and the `context` method of `musepi serve`), and the context's tokens
//! every command reports.

use musepi_protocol::context::{ContextDoc, ContextRowDoc, EstimateDoc, ModelDoc, PayloadCountDoc};
use musepi_runtime::context::{
    ContextEstimate, LlmMessage, ProviderHistory, SessionContext, Tokenizer, TranscriptOptions,
    build_context_at, build_transcript, llm_message_tokens, provider_messages,
};
use musepi_session_model::{AgentMessage, ContentBlock, EntryBody, Session};
use serde_json::Value;

use crate::output::Preview;
use crate::report::entries::message_preview;
use musepi_protocol::runtime::LlmMessageDoc;

/// Characters in a message preview.
const PREVIEW: usize = 72;

/// The context's tokens at `leaf` (`None`: the empty context), counted by
/// the heuristic: what every command shows as the size of what the model
/// sees ([`musepi_runtime::context::context_tokens`]; docs/design.md). The
/// view's header and the chart show it.
pub fn context_tokens(session: &Session, leaf: Option<usize>) -> u64 {
    musepi_runtime::context::context_tokens(session, leaf, Tokenizer::Heuristic)
}

/// What the rows are built for: the text lines show a preview of each
/// message, the JSON document has none, so its rows are built without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// The aligned lines people read: every row has its preview.
    Text,
    /// The `--json` document: no row has a preview.
    Json,
}

/// Which messages `musepi context` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum View {
    /// The agent messages of the context (the default).
    Context,
    /// The provider messages (`--llm`).
    Llm,
    /// Every entry of the path, compacted away or not (`--transcript`).
    Transcript,
}

pub(crate) fn rows(
    session: &Session,
    context: &SessionContext<'_>,
    leaf: Option<usize>,
    view: View,
    tokenizer: Tokenizer,
    full: bool,
    output: Output,
) -> Vec<Row> {
    let shape = Shape {
        tokenizer,
        full,
        output,
    };
    match view {
        View::Context => context_rows(session, context, shape),
        View::Llm => llm_rows(session, leaf, shape),
        View::Transcript => transcript_rows(session, leaf, shape),
    }
}

/// How each row is built: counted by `tokenizer`, with the message when
/// `full`, with a preview for [`Output::Text`].
#[derive(Debug, Clone, Copy)]
struct Shape {
    tokenizer: Tokenizer,
    full: bool,
    output: Output,
}

impl Shape {
    /// The preview `make` builds, when the output shows it.
    fn preview(self, make: impl FnOnce() -> String) -> Option<String> {
        (self.output == Output::Text).then(make)
    }

    /// The row of the agent message of the entry at `entry_index`, neither
    /// superseded nor compacted away.
    fn message_row(self, session: &Session, entry_index: usize, message: &AgentMessage) -> Row {
        Row {
            entry_id: session.entries()[entry_index].id.to_string(),
            role: message.role().to_owned(),
            tokens: self.tokenizer.count_message(message),
            preview: self.preview(|| message_preview(message, PREVIEW)),
            message: self
                .full
                .then(|| message_json(session, entry_index, message)),
            superseded: false,
            compacted_away: false,
            payload: None,
        }
    }
}

/// The `--json` document of `musepi context`: `tokens` is the context's
/// tokens, `messageTokens` the sum of the rows' own counts, and
/// `contextEstimate` what the compaction trigger compares.
pub(crate) fn document(
    session: &Session,
    context: &SessionContext<'_>,
    leaf: Option<usize>,
    rows: &[Row],
    tokenizer: Tokenizer,
    known: Option<Known>,
) -> ContextDoc {
    let (tokens, estimate) = match known.filter(|_| tokenizer == Tokenizer::Heuristic) {
        Some(k) => (k.context_tokens, k.measured),
        None => (
            musepi_runtime::context::context_tokens(session, leaf, tokenizer),
            musepi_runtime::context::measured_tokens(session, leaf),
        ),
    };
    ContextDoc {
        leaf_id: leaf.map(|i| session.entries()[i].id.to_string()),
        model: context.model.as_ref().map(|m| ModelDoc {
            provider: m.provider.clone(),
            model_id: m.model_id.clone(),
        }),
        thinking_level: context.thinking_level.clone(),
        tokenizer: tokenizer.name(),
        tokens,
        message_tokens: rows.iter().map(|r| r.tokens).sum::<u64>(),
        context_estimate: EstimateDoc {
            tokens: estimate.tokens,
            usage_tokens: estimate.usage_tokens,
            trailing_tokens: estimate.trailing_tokens,
            last_usage_index: estimate.last_usage_index,
        },
        messages: rows.iter().map(Row::doc).collect(),
    }
}

/// The two sizes of the context at a leaf, known already (the runtime of
/// `musepi serve` keeps them as entries are appended): the context's tokens
/// and what the trigger compares, both by the heuristic.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Known {
    pub context_tokens: u64,
    pub measured: ContextEstimate,
}

/// `musepi context --json` at `leaf` (`None`: the explicit null leaf) with
/// the heuristic tokenizer, as `musepi serve`'s `context` answers; `known`
/// are the sizes at that leaf when they are known already.
pub(crate) fn context_json(
    session: &Session,
    leaf: Option<usize>,
    view: View,
    full: bool,
    known: Option<Known>,
) -> ContextDoc {
    let context = build_context_at(session, leaf);
    let tokenizer = Tokenizer::Heuristic;
    let rows = rows(session, &context, leaf, view, tokenizer, full, Output::Json);
    document(session, &context, leaf, &rows, tokenizer, known)
}

/// One output line; in `--json`, one of `messages` ([`ContextRowDoc`]).
pub(crate) struct Row {
    pub entry_id: String,
    pub role: String,
    pub tokens: u64,
    /// The one line the text output shows of the message; `None` in the
    /// rows built for [`Output::Json`].
    pub preview: Option<String>,
    pub message: Option<Value>,
    pub superseded: bool,
    pub compacted_away: bool,
    /// The remote replay payload a provider message carries, counted.
    pub payload: Option<PayloadCountDoc>,
}

impl Row {
    /// The row as its document.
    fn doc(&self) -> ContextRowDoc {
        ContextRowDoc {
            entry_id: self.entry_id.clone(),
            role: self.role.clone(),
            tokens: self.tokens,
            message: self.message.clone(),
            superseded: self.superseded,
            compacted_away: self.compacted_away,
            provider_payload: self.payload.clone(),
        }
    }
}

/// The message as JSON: the stored one (unknown fields and all) for
/// message entries, the built one for compactions and summaries.
fn message_json(session: &Session, entry_index: usize, message: &AgentMessage) -> Value {
    if session.entries()[entry_index].message().is_some()
        && let Ok(line) = session.raw_line(entry_index)
        && let Ok(Value::Object(mut m)) = musepi_session_model::json::parse_js(line.as_bytes())
        && let Some(msg) = m.remove("message")
    {
        return msg;
    }
    serde_json::to_value(message).unwrap_or(Value::Null)
}

fn context_rows(session: &Session, context: &SessionContext<'_>, shape: Shape) -> Vec<Row> {
    context
        .messages
        .iter()
        .map(|m| shape.message_row(session, m.entry_index, &m.message))
        .collect()
}

fn transcript_rows(session: &Session, leaf: Option<usize>, shape: Shape) -> Vec<Row> {
    build_transcript(session, leaf, TranscriptOptions::default())
        .iter()
        .map(|t| {
            let mut row = Row {
                superseded: t.superseded,
                compacted_away: t.compacted_away,
                ..shape.message_row(session, t.entry_index, &t.message)
            };
            // A compaction's divider: how it was made and the context
            // before and after it, when its entry records them.
            if let (Some(preview), EntryBody::Compaction(c)) =
                (row.preview.as_mut(), &session.entries()[t.entry_index].body)
                && let Some(head) = divider(c)
            {
                *preview = format!("{head} {preview}");
            }
            row
        })
        .collect()
}

/// `── 📷 snapcompact · 31,315 → 24,005 ──` for a compaction whose entry
/// records how it was made or the context after it.
fn divider(c: &musepi_session_model::Compaction) -> Option<String> {
    if c.method.is_none() && c.tokens_after.is_none() {
        return None;
    }
    let method = c.method.as_deref().unwrap_or("compacted");
    let n = musepi_session_model::json::thousands;
    Some(match c.tokens_after {
        Some(after) => format!("── 📷 {method} · {} → {} ──", n(c.tokens_before), n(after)),
        None => format!("── 📷 {method} ──"),
    })
}

/// The provider messages, each counted as the context's tokens count it, so
/// that the rows add up to the total.
fn llm_rows(session: &Session, leaf: Option<usize>, shape: Shape) -> Vec<Row> {
    let archives = musepi_runtime::archive::SessionArchives::new(session);
    provider_messages(session, leaf, Some(&archives))
        .into_iter()
        .map(|c| {
            let tokens = llm_message_tokens(&c.message, shape.tokenizer);
            Row {
                entry_id: session.entries()[c.entry_index].id.to_string(),
                role: c.message.role().to_owned(),
                tokens,
                preview: shape.preview(|| llm_preview(&c.message, PREVIEW)),
                message: shape
                    .full
                    .then(|| musepi_protocol::value(&LlmMessageDoc::from(&c.message))),
                superseded: false,
                compacted_away: false,
                payload: payload_summary(&c.message),
            }
        })
        .collect()
}

/// The preview of what a provider message carries: its texts, thinking,
/// and tool calls as `name(args)`, one after another (each on a line of
/// its own, as whitespace between them), read only until the preview is full.
fn llm_preview(m: &LlmMessage, max: usize) -> String {
    let mut p = Preview::new(max);
    for b in m.content() {
        if p.is_full() {
            break;
        }
        match b {
            ContentBlock::Text { text, .. } => {
                p.push("\n");
                p.push(text.as_str());
            }
            ContentBlock::Thinking { thinking, .. } => {
                p.push("\n");
                p.push(thinking.as_str());
            }
            ContentBlock::ToolCall(c) => {
                p.push("\n");
                p.push(c.name.as_str());
                p.push("(");
                p.push(&musepi_session_model::json::js_stringify(
                    c.arguments.value(),
                ));
                p.push(")");
            }
            _ => {}
        }
    }
    p.finish()
}

/// The remote replay payload of a provider message, counted:
/// `{type, provider, items: N, keptMessages: M}` (docs/design.md, "What the model sees").
fn payload_summary(m: &LlmMessage) -> Option<PayloadCountDoc> {
    let h = m.provider_history()?;
    Some(PayloadCountDoc {
        kind: ProviderHistory::TYPE,
        provider: h.provider.clone(),
        items: h.items.len(),
        kept_messages: h.kept.len(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::output::tests::cut_whole;
    use crate::report::entries::tests::{assistant, call, many_blocks, session_of_messages};

    /// The text of a provider message as the preview was made of it before
    /// it was read in pieces: every part joined with line breaks.
    fn llm_text(m: &LlmMessage) -> String {
        let mut parts = Vec::new();
        for b in m.content() {
            match b {
                ContentBlock::Text { text, .. } => parts.push(text.as_str().to_owned()),
                ContentBlock::Thinking { thinking, .. } => parts.push(thinking.as_str().to_owned()),
                ContentBlock::ToolCall(c) => parts.push(format!(
                    "{}({})",
                    c.name.as_str(),
                    musepi_session_model::json::js_stringify(c.arguments.value())
                )),
                _ => {}
            }
        }
        parts.join("\n")
    }

    #[test]
    fn a_provider_message_preview_is_its_whole_text_joined_and_cut() {
        let blocks = many_blocks(10_000);
        let mut with_calls = blocks.clone();
        with_calls.extend([call("read"), call("edit")]);
        let session = session_of_messages(&[
            json!({"role": "user", "content": blocks, "timestamp": 1}),
            assistant(json!(with_calls), None),
            json!({"role": "toolResult", "toolCallId": "call-read", "toolName": "read",
                "content": blocks, "isError": false, "timestamp": 1}),
            json!({"role": "toolResult", "toolCallId": "call-edit", "toolName": "edit",
                "content": [{"type": "text", "text": "ok"}], "isError": false, "timestamp": 1}),
            assistant(json!([call("bash")]), None),
            json!({"role": "toolResult", "toolCallId": "call-bash", "toolName": "bash",
                "content": "  ", "isError": false, "timestamp": 1}),
            assistant(
                json!([{"type": "thinking", "thinking": "  "}, {"type": "text", "text": ""}]),
                None,
            ),
        ]);
        let messages = provider_messages(&session, session.leaf_index(), None);
        assert_eq!(messages.len(), 7);
        let mut cut = 0;
        for c in &messages {
            for max in [0, 1, 7, 72, 300] {
                let read = llm_preview(&c.message, max);
                assert_eq!(
                    read,
                    cut_whole(&llm_text(&c.message), max),
                    "{}",
                    c.entry_index
                );
                cut += usize::from(read.ends_with('…'));
            }
        }
        assert!(cut > 20, "{cut}");
    }

    #[test]
    fn json_rows_are_built_without_previews_and_text_rows_with_them() {
        let session = session_of_messages(&[
            json!({"role": "user", "content": "first question", "timestamp": 1}),
            assistant(
                json!([{"type": "text", "text": "an answer"}, call("read")]),
                None,
            ),
            json!({"role": "toolResult", "toolCallId": "call-read", "toolName": "read",
                "content": "file text", "isError": false, "timestamp": 1}),
        ]);
        let leaf = session.leaf_index();
        let context = build_context_at(&session, leaf);
        for view in [View::Context, View::Llm, View::Transcript] {
            for full in [false, true] {
                let built = |output| {
                    rows(
                        &session,
                        &context,
                        leaf,
                        view,
                        Tokenizer::Heuristic,
                        full,
                        output,
                    )
                };
                let (json_rows, text_rows) = (built(Output::Json), built(Output::Text));
                assert_eq!(json_rows.len(), 3, "{view:?}");
                assert_eq!(text_rows.len(), 3, "{view:?}");
                for (j, t) in json_rows.iter().zip(&text_rows) {
                    assert_eq!(j.preview, None, "{view:?} {}", j.entry_id);
                    let shown = t.preview.as_deref().unwrap_or_default();
                    assert!(!shown.is_empty(), "{view:?} {}", t.entry_id);
                    // Everything else the rows hold is the same.
                    assert_eq!(j.doc(), t.doc(), "{view:?} {}", j.entry_id);
                }
            }
        }
    }
}
