//! The context's tokens kept as a session grows (docs/design.md, "The
//! context's tokens").
//!
//! [`ContextAccount`] follows the leaf of one session and answers, at every
//! point, what [`context_tokens`](crate::context_tokens) (heuristic counts)
//! and [`measured_tokens`](crate::measured_tokens) answer there, and
//! whether the last assistant's tool calls all have their results. It keeps
//! one record per message of the context, with the count of what the
//! conversion sends for it, and when entries are appended under the leaf
//! it counts only them and the earlier messages they change.
//!
//! Each count is the count of the conversion itself: the message converted
//! by [`convert_one`], with the calls that have no result removed as the
//! conversion removes them, counted by [`llm_message_tokens`]. The
//! conversion's fix-ups across messages are kept per tool call id: an
//! aborted or failed turn and the results of its calls are not sent (unless
//! the next message that is not a tool result is an `interrupted-thinking`
//! extension message), a call without a result is taken out of its turn
//! (and the turn's thinking signatures with it), a result without a call
//! before it is not sent. A message's count depends only on the messages
//! that name the same tool call ids, so a new message changes the counts of
//! those messages and no other.
//!
//! Anything else starts the account over from the context at the leaf: a
//! leaf that is not below the one it followed, a compaction among the new
//! entries, an entry changed in place or an append undone
//! ([`Session::edits`]), two entries sharing an id.

use std::collections::HashMap;

use musepi_session_model::{AgentMessage, EntryBody, Session};

use crate::context::{ContextMessage, SessionContext, build_context_at, entry_message};
use crate::convert::{
    ArchiveBlocks, ConvertOptions, convert_one, drop_unanswered_calls, is_failed_turn,
    keeps_failed_turn,
};
use crate::estimate::{ContextEstimate, anchoring_usage, calculate_context_tokens};
use crate::llm::LlmMessage;
use crate::tokenizer::Tokenizer;
use crate::tokens::llm_message_tokens;

/// The context's tokens at a session's leaf, kept as entries are appended.
///
/// ```
/// use musepi_context_builder::{ContextAccount, Tokenizer, context_tokens};
/// use musepi_session_model::{Header, Session};
///
/// let session = Session::new(Header::new("s", "2025-01-01T00:00:00.000Z", "/repo"));
/// let mut account = ContextAccount::default();
/// account.sync(&session, None);
/// assert_eq!(
///     account.context_tokens(),
///     context_tokens(&session, session.leaf_index(), None, Tokenizer::Heuristic)
/// );
/// ```
#[derive(Debug, Clone, Default)]
pub struct ContextAccount {
    /// Whether it describes a session yet.
    synced: bool,
    /// How many times it counted a context from its start.
    starts: u64,
    /// The leaf it describes.
    leaf: Option<usize>,
    /// The session's [`Session::edits`] when it started.
    edits: u64,
    /// One record per context message, in order.
    records: Vec<Record>,
    /// The records that name each tool call id (the assistants that call
    /// it, the results that answer it), in order.
    mentions: HashMap<Box<str>, Vec<usize>>,
    /// The last record that is not a tool result.
    last_turn: Option<usize>,
    /// The sum of the records' counts.
    total: u64,
    /// The last record after the compaction whose usage anchors the
    /// measured tokens, with that usage's context tokens.
    anchor: Option<(usize, f64)>,
    /// The sum of the counts after the anchor (all of them without one).
    trailing: u64,
    /// The calls of the last assistant that no result after it answers.
    open_calls: Vec<Box<str>>,
}

#[derive(Debug, Clone)]
struct Record {
    /// The source entry.
    entry: usize,
    kind: Kind,
    /// What it counts now.
    tokens: u64,
}

#[derive(Debug, Clone)]
enum Kind {
    /// An assistant: its call ids, whether its turn failed, and whether
    /// an `interrupted-thinking` message keeps it all the same.
    Assistant {
        calls: Vec<Box<str>>,
        failed: bool,
        kept: bool,
    },
    /// A tool result and its count when sent.
    Result { id: Box<str>, sent: u64 },
    /// Any other message and its count, which never changes.
    Other { sent: u64 },
}

impl ContextAccount {
    /// The account of the context at the session's leaf.
    pub fn at(session: &Session, archive: Option<&dyn ArchiveBlocks>) -> Self {
        let mut account = Self::default();
        account.sync(session, archive);
        account
    }

    /// Brings the account to the session's current leaf: the entries from
    /// the leaf it followed down to the new one are counted when the new
    /// leaf is below it, nothing has changed in place and none of them is
    /// a compaction; otherwise it starts over from the context at the leaf.
    /// `archive` supplies snapcompact archives, as for
    /// [`context_tokens`](crate::context_tokens).
    pub fn sync(&mut self, session: &Session, archive: Option<&dyn ArchiveBlocks>) {
        let leaf = session.leaf_index();
        let options = ConvertOptions {
            archive,
            ..ConvertOptions::default()
        };
        if self.synced && self.edits == session.edits() && !session.has_duplicate_ids() {
            if leaf == self.leaf {
                return;
            }
            if let Some(added) = self.added(session, leaf) {
                for i in added {
                    if let Some(message) = entry_message(&session.entries()[i]) {
                        let m = ContextMessage {
                            entry_index: i,
                            message,
                        };
                        self.push(session, &m, true, &options);
                    }
                }
                self.leaf = leaf;
                return;
            }
        }
        let context = build_context_at(session, leaf);
        *self = Self {
            synced: true,
            starts: self.starts + 1,
            leaf,
            edits: session.edits(),
            ..Self::default()
        };
        let compaction = context
            .compaction_index
            .map(|c| session.path_summary(c).depth);
        for m in &context.messages {
            let held = compaction.is_none_or(|d| session.path_summary(m.entry_index).depth > d);
            self.push(session, m, held, &options);
        }
    }

    /// The context's tokens at the leaf.
    pub fn context_tokens(&self) -> u64 {
        self.total
    }

    /// What the compaction trigger compares at the leaf
    /// ([`measured_tokens`](crate::measured_tokens)).
    pub fn measured(&self) -> ContextEstimate {
        match self.anchor {
            None => ContextEstimate {
                tokens: self.total as f64,
                usage_tokens: 0.0,
                trailing_tokens: self.total,
                last_usage_index: None,
            },
            Some((i, usage)) => ContextEstimate {
                tokens: usage + self.trailing as f64,
                usage_tokens: usage,
                trailing_tokens: self.trailing,
                last_usage_index: Some(i),
            },
        }
    }

    /// The entry of the message the measured tokens anchor on.
    pub fn anchor_entry(&self) -> Option<usize> {
        self.anchor.map(|(i, _)| self.records[i].entry)
    }

    /// Whether every tool call of the context's last assistant has its
    /// result after it ([`calls_answered`]).
    pub fn calls_answered(&self) -> bool {
        self.open_calls.is_empty()
    }

    /// How many times the account counted a context from its start (the
    /// first time, and after every change it does not follow).
    pub fn starts(&self) -> u64 {
        self.starts
    }

    /// The leaf the account describes.
    pub fn leaf(&self) -> Option<usize> {
        self.leaf
    }

    /// The entries from the followed leaf (exclusive) down to `leaf`,
    /// root first, when `leaf` is below it and none is a compaction.
    fn added(&self, session: &Session, leaf: Option<usize>) -> Option<Vec<usize>> {
        let depth = |i: usize| i64::from(session.path_summary(i).depth);
        let stop = self.leaf.map_or(-1, depth);
        let mut out = Vec::new();
        let mut cur = leaf;
        while let Some(c) = cur
            && depth(c) > stop
        {
            if matches!(session.entries()[c].body, EntryBody::Compaction(_)) {
                return None;
            }
            out.push(c);
            cur = session.parent_index(c);
        }
        (cur == self.leaf).then(|| {
            out.reverse();
            out
        })
    }

    /// Counts message `m` at the end of the context, and again the earlier
    /// messages it changes; `held`: it follows the compaction (its usage
    /// may anchor the measured tokens).
    fn push(
        &mut self,
        session: &Session,
        m: &ContextMessage<'_>,
        held: bool,
        options: &ConvertOptions<'_>,
    ) {
        let p = self.records.len();
        let mut dirty = vec![p];
        let kind = match m.message.as_ref() {
            AgentMessage::Assistant(a) => {
                let mut calls: Vec<Box<str>> = Vec::new();
                for c in a.tool_calls() {
                    if !calls.iter().any(|x| **x == *c.id) {
                        calls.push(c.id.as_str().into());
                    }
                }
                self.open_calls.clone_from(&calls);
                Kind::Assistant {
                    calls,
                    failed: is_failed_turn(a),
                    kept: false,
                }
            }
            AgentMessage::ToolResult(t) => {
                self.open_calls.retain(|c| **c != *t.tool_call_id);
                Kind::Result {
                    id: t.tool_call_id.as_str().into(),
                    sent: count(convert_one(m, options).as_ref()),
                }
            }
            other => {
                // The first message after a failed turn that is not a tool
                // result decides whether that turn is sent.
                if let Some(l) = self.last_turn
                    && keeps_failed_turn(other)
                    && let Kind::Assistant {
                        calls,
                        failed: true,
                        kept,
                    } = &mut self.records[l].kind
                {
                    *kept = true;
                    dirty.push(l);
                    for id in calls.iter() {
                        dirty.extend(self.mentions.get(id).into_iter().flatten());
                    }
                }
                Kind::Other {
                    sent: count(convert_one(m, options).as_ref()),
                }
            }
        };
        if !matches!(kind, Kind::Result { .. }) {
            self.last_turn = Some(p);
        }
        let ids: Vec<Box<str>> = match &kind {
            Kind::Assistant { calls, .. } => calls.clone(),
            Kind::Result { id, .. } => vec![id.clone()],
            Kind::Other { .. } => Vec::new(),
        };
        self.records.push(Record {
            entry: m.entry_index,
            kind,
            tokens: 0,
        });
        for id in ids {
            let named = self.mentions.entry(id).or_default();
            dirty.extend(named.iter().copied());
            named.push(p);
        }
        dirty.sort_unstable();
        dirty.dedup();
        for q in dirty {
            let tokens = self.count_now(session, q);
            self.set_tokens(q, tokens);
        }
        if held && let Some(usage) = anchoring_usage(&m.message) {
            self.anchor = Some((p, calculate_context_tokens(usage)));
            self.trailing = 0;
        }
    }

    fn set_tokens(&mut self, q: usize, tokens: u64) {
        let old = std::mem::replace(&mut self.records[q].tokens, tokens);
        self.total = self.total - old + tokens;
        if self.anchor.is_none_or(|(a, _)| q > a) {
            self.trailing = self.trailing - old + tokens;
        }
    }

    /// What record `q` counts now.
    fn count_now(&self, session: &Session, q: usize) -> u64 {
        let record = &self.records[q];
        match &record.kind {
            Kind::Other { sent } => *sent,
            Kind::Result { .. } => self.result_count(q),
            Kind::Assistant { failed, kept, .. } => {
                if *failed && !*kept {
                    return 0;
                }
                let Some(message) = entry_message(&session.entries()[record.entry]) else {
                    return 0;
                };
                let m = ContextMessage {
                    entry_index: record.entry,
                    message,
                };
                let mut sent = convert_one(&m, &ConvertOptions::default());
                if let Some(LlmMessage::Assistant { content, .. }) = &mut sent {
                    drop_unanswered_calls(content, |id| self.answered(id));
                }
                count(sent.as_ref())
            }
        }
    }

    /// A result is not sent after a failed turn that called it, nor
    /// without a call before it.
    fn result_count(&self, r: usize) -> u64 {
        let Kind::Result { id, sent } = &self.records[r].kind else {
            return 0;
        };
        let mut called = false;
        for &a in self.mentions.get(id).into_iter().flatten() {
            if a >= r {
                break;
            }
            match self.dead(a) {
                Some(true) => return 0,
                Some(false) => called = true,
                None => {}
            }
        }
        if called { *sent } else { 0 }
    }

    /// `Some(dead)` for an assistant record, `None` for any other.
    fn dead(&self, a: usize) -> Option<bool> {
        match &self.records[a].kind {
            Kind::Assistant { failed, kept, .. } => Some(*failed && !*kept),
            _ => None,
        }
    }

    /// Whether a result that is sent or an orphan answers `id` (the
    /// results after a failed turn that called it do not).
    fn answered(&self, id: &str) -> bool {
        let mut after_dead = false;
        for &q in self.mentions.get(id).into_iter().flatten() {
            match self.dead(q) {
                Some(true) => after_dead = true,
                Some(false) => {}
                None => {
                    if !after_dead {
                        return true;
                    }
                }
            }
        }
        false
    }
}

/// The heuristic count of one converted message (nothing for none).
fn count(message: Option<&LlmMessage>) -> u64 {
    message.map_or(0, |m| llm_message_tokens(m, Tokenizer::Heuristic))
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
