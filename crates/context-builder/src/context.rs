//! The LLM context at a leaf (docs/design.md, "What the model sees").

use std::borrow::Cow;

use musepi_session_model::{
    AgentMessage, AssistantMessage, BranchSummaryMessage, Compaction, CompactionSummaryMessage,
    CustomMessage, Entry, EntryBody, Session,
};

use crate::estimate::estimate_tokens;

/// The model a context was last driven by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model_id: String,
}

/// One message of the context, with the entry it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextMessage<'a> {
    /// Position of the source entry in [`Session::entries`].
    pub entry_index: usize,
    /// The runtime message: borrowed for `message` entries, built for
    /// compactions, branch summaries and custom messages.
    pub message: Cow<'a, AgentMessage>,
}

impl ContextMessage<'_> {
    /// The chars/4 estimate of the message.
    pub fn tokens(&self) -> u64 {
        estimate_tokens(&self.message)
    }
}

/// What the model sees at a leaf: messages, thinking level and model.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionContext<'a> {
    /// The messages, oldest first.
    pub messages: Vec<ContextMessage<'a>>,
    /// The thinking level in effect (`off` by default).
    pub thinking_level: String,
    /// The model in effect, if any.
    pub model: Option<ModelRef>,
    /// Position of the compaction whose summary opens the context, if any.
    pub compaction_index: Option<usize>,
}

impl SessionContext<'_> {
    fn empty() -> Self {
        Self {
            messages: Vec::new(),
            thinking_level: "off".into(),
            model: None,
            compaction_index: None,
        }
    }

    /// The sum of the message estimates.
    pub fn estimated_tokens(&self) -> u64 {
        self.messages.iter().map(ContextMessage::tokens).sum()
    }

    /// The bare messages, for estimators and converters.
    pub fn agent_messages(
        &self,
    ) -> impl DoubleEndedIterator<Item = &AgentMessage> + ExactSizeIterator {
        self.messages.iter().map(|m| m.message.as_ref())
    }
}

/// The context at the session's current leaf (empty when the leaf was reset).
pub fn build_context(session: &Session) -> SessionContext<'_> {
    build_context_at(session, session.leaf_index())
}

/// The context at entry `leaf` (`None`: the explicit null leaf, an empty
/// context).
pub fn build_context_at(session: &Session, leaf: Option<usize>) -> SessionContext<'_> {
    let Some(leaf) = leaf else {
        return SessionContext::empty();
    };
    if session.has_duplicate_ids() {
        // Which of two entries with one id a compaction keeps from is
        // decided over the whole path.
        let path = session.path_indices(leaf);
        return build_context_over_path(session, &path);
    }
    build_context_from_summary(session, leaf)
}

/// The model of the context at `leaf` ([`SessionContext::model`]) without
/// building its messages: read from the path's record, in constant time
/// (over the whole path when two entries share an id).
pub fn context_model(session: &Session, leaf: Option<usize>) -> Option<ModelRef> {
    let leaf = leaf?;
    if session.has_duplicate_ids() {
        return build_context_at(session, Some(leaf)).model;
    }
    model_from_summary(session, leaf)
}

/// The thinking level of the context at `leaf` ([`SessionContext::thinking_level`])
/// without building its messages: the latest `thinking_level_change` on the
/// path, read from the path's record in constant time; `off` when the path
/// has none, when that entry sets none, and for the null leaf.
pub fn context_thinking_level(session: &Session, leaf: Option<usize>) -> String {
    let level = leaf
        .and_then(|leaf| session.path_summary(leaf).thinking_level_change)
        .and_then(|i| match &session.entries()[i as usize].body {
            EntryBody::ThinkingLevelChange { thinking_level } => thinking_level.clone(),
            _ => None,
        });
    level.unwrap_or_else(|| "off".into())
}

/// The model the path's record at `leaf` names: its latest assistant that
/// names one, or else its latest main-model change.
fn model_from_summary(session: &Session, leaf: usize) -> Option<ModelRef> {
    let entries = session.entries();
    let summary = session.path_summary(leaf);
    let at = |i: Option<u32>| i.map(|i| i as usize);
    if let Some(i) = at(summary.model.assistant)
        && let Some(AgentMessage::Assistant(a)) = entries[i].message()
    {
        Some(ModelRef {
            provider: a.provider.clone().unwrap_or_default(),
            model_id: a.model.clone().unwrap_or_default(),
        })
    } else if let Some(i) = at(summary.model.change)
        && let EntryBody::ModelChange(mc) = &entries[i].body
        && let Some((provider, model_id)) = mc.provider_and_model()
    {
        Some(ModelRef { provider, model_id })
    } else {
        None
    }
}

/// [`build_context_over_path`] over the path to `leaf`, from the path's
/// record ([`Session::path_summary`]): the thinking level, model and latest
/// compaction are known at the leaf, so only the entries the context holds
/// (from the first kept entry on) are visited, however long the path.
fn build_context_from_summary(session: &Session, leaf: usize) -> SessionContext<'_> {
    let entries = session.entries();
    let summary = session.path_summary(leaf);
    let at = |i: Option<u32>| i.map(|i| i as usize);
    let mut ctx = SessionContext::empty();
    if let Some(i) = at(summary.thinking_level_change)
        && let EntryBody::ThinkingLevelChange { thinking_level } = &entries[i].body
    {
        ctx.thinking_level = thinking_level.clone().unwrap_or_else(|| "off".into());
    }
    ctx.model = model_from_summary(session, leaf);
    // The entries the context holds, newest first: back to the latest
    // compaction, then (if it keeps some) back to its first kept entry.
    let mut held = Vec::new();
    let mut cur = Some(leaf);
    let compaction = at(summary.compaction);
    while let Some(c) = cur
        && Some(c) != compaction
    {
        held.push(c);
        cur = session.parent_index(c);
    }
    let mut out = Vec::new();
    if let Some(ci) = compaction {
        let EntryBody::Compaction(c) = &entries[ci].body else {
            unreachable!("the path record names a compaction")
        };
        ctx.compaction_index = Some(ci);
        out.push(compaction_message(entries, ci, c));
        if let Some(first_kept) = &c.first_kept_entry_id {
            if first_kept.as_str().is_empty() {
                // Entries without an id all match it: the first on the path counts.
                return build_context_over_path(session, &session.path_indices(leaf));
            }
            let mut kept = Vec::new();
            let mut cur = session.parent_index(ci);
            while let Some(k) = cur {
                kept.push(k);
                if entries[k].id == *first_kept {
                    break;
                }
                cur = session.parent_index(k);
            }
            // Kept only when the first kept entry is on the path.
            if cur.is_some() {
                for &i in kept.iter().rev() {
                    push_entry(&mut out, entries, i);
                }
            }
        }
    }
    for &i in held.iter().rev() {
        push_entry(&mut out, entries, i);
    }
    ctx.messages = out;
    ctx
}

/// The context over an explicit root-first path of entry positions.
pub fn build_context_over_path<'a>(session: &'a Session, path: &[usize]) -> SessionContext<'a> {
    let entries = session.entries();
    let mut ctx = SessionContext::empty();
    let mut compaction_pos = None;
    // oh-my-pi's `model_change` with `role: "default"` sets an explicit
    // default that later assistant messages no longer override (pi's design);
    // other roles (`smol`, `slow`, …) do not change the main model, and
    // pi's role-less shape is overridden by the next assistant (pi's code).
    let mut explicit_default = false;
    // The assistant that named the model last, when one did: its names are
    // copied once, at the end, not for every assistant on the path.
    let mut model_of_assistant: Option<&AssistantMessage> = None;
    for (pos, &i) in path.iter().enumerate() {
        let e = &entries[i];
        match &e.body {
            EntryBody::ThinkingLevelChange { thinking_level } => {
                ctx.thinking_level = thinking_level.clone().unwrap_or_else(|| "off".into());
            }
            EntryBody::ModelChange(mc) => {
                let role = mc.role.as_deref();
                if matches!(role, None | Some("default"))
                    && let Some((provider, model_id)) = mc.provider_and_model()
                {
                    ctx.model = Some(ModelRef { provider, model_id });
                    model_of_assistant = None;
                    explicit_default = role.is_some();
                }
            }
            EntryBody::Message(AgentMessage::Assistant(a)) if !explicit_default => {
                model_of_assistant = Some(a);
            }
            EntryBody::Compaction(_) => compaction_pos = Some(pos),
            _ => {}
        }
    }
    if let Some(a) = model_of_assistant {
        ctx.model = Some(ModelRef {
            provider: a.provider.clone().unwrap_or_default(),
            model_id: a.model.clone().unwrap_or_default(),
        });
    }
    let mut out = Vec::with_capacity(path.len());
    match compaction_pos {
        Some(cpos) => {
            let ci = path[cpos];
            let EntryBody::Compaction(c) = &entries[ci].body else {
                unreachable!("found above")
            };
            ctx.compaction_index = Some(ci);
            out.push(compaction_message(entries, ci, c));
            if let Some(first_kept) = &c.first_kept_entry_id
                && let Some(start) = path[..cpos]
                    .iter()
                    .position(|&i| entries[i].id == *first_kept)
            {
                for &i in &path[start..cpos] {
                    push_entry(&mut out, entries, i);
                }
            }
            for &i in &path[cpos + 1..] {
                push_entry(&mut out, entries, i);
            }
        }
        None => {
            for &i in path {
                push_entry(&mut out, entries, i);
            }
        }
    }
    ctx.messages = out;
    ctx
}

/// The message an entry contributes to a context, if any (docs/design.md, "What the model sees";
/// compactions are handled by the caller).
pub fn entry_message(entry: &Entry) -> Option<Cow<'_, AgentMessage>> {
    match &entry.body {
        EntryBody::Message(m) => Some(Cow::Borrowed(m)),
        EntryBody::CustomMessage(c) => Some(Cow::Owned(AgentMessage::Custom(CustomMessage {
            custom_type: c.custom_type.clone(),
            content: c.content.clone(),
            display: c.display,
            details: c.details.clone(),
            timestamp: entry_time(entry),
        }))),
        EntryBody::BranchSummary(b) if !b.summary.is_empty() => Some(Cow::Owned(
            AgentMessage::BranchSummary(BranchSummaryMessage {
                summary: b.summary.clone(),
                from_id: b.from_id.clone(),
                timestamp: entry_time(entry),
            }),
        )),
        _ => None,
    }
}

/// The summary message the compaction `c` (entry `ci`) opens a context with.
fn compaction_message<'a>(entries: &[Entry], ci: usize, c: &Compaction) -> ContextMessage<'a> {
    ContextMessage {
        entry_index: ci,
        message: Cow::Owned(AgentMessage::CompactionSummary(CompactionSummaryMessage {
            summary: c.summary.clone(),
            tokens_before: c.tokens_before,
            timestamp: entry_time(&entries[ci]),
            short_summary: None,
            first_kept_entry_id: c.first_kept_entry_id.clone(),
        })),
    }
}

fn push_entry<'a>(out: &mut Vec<ContextMessage<'a>>, entries: &'a [Entry], i: usize) {
    if let Some(message) = entry_message(&entries[i]) {
        out.push(ContextMessage {
            entry_index: i,
            message,
        });
    }
}

/// The entry's ISO timestamp in epoch milliseconds.
pub fn entry_time(entry: &Entry) -> Option<f64> {
    entry.timestamp_ms().map(|ms| ms as f64)
}

/// Whether every tool call of the context's last assistant has a result
/// after it (a safe point to compact inside a tool loop).
pub fn calls_answered(context: &SessionContext<'_>) -> bool {
    let messages = &context.messages;
    let Some(pos) = messages
        .iter()
        .rposition(|m| m.message.as_assistant().is_some())
    else {
        return true;
    };
    let Some(assistant) = messages[pos].message.as_assistant() else {
        return true;
    };
    assistant.tool_calls().all(|c| {
        messages[pos + 1..]
            .iter()
            .filter_map(|m| m.message.as_tool_result())
            .any(|r| r.tool_call_id == c.id)
    })
}
