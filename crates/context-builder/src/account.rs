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
//! When the leaf moves to another point after the compaction that opens
//! the context (back to an earlier entry, or to another branch that forks
//! after it), the records below the fork are taken back, each restoring
//! the account as it was before it came, and the new branch's entries are
//! counted. Anything else starts the account over from the context at the
//! leaf: a fork before that compaction, a compaction among the new entries,
//! an entry changed in place or an append undone ([`Session::edits`]), two
//! entries sharing an id.

use std::collections::HashMap;

use musepi_session_model::{AgentMessage, EntryBody, Session};

use crate::context::{ContextMessage, build_context_at, entry_message};
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
    /// The depth of the compaction that opens the context.
    compaction_depth: Option<u32>,
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
    anchor: Option<(usize, u64)>,
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
    /// The account as it was before this record came, to take it back.
    before: Before,
}

#[derive(Debug, Clone)]
struct Before {
    total: u64,
    trailing: u64,
    anchor: Option<(usize, u64)>,
    last_turn: Option<usize>,
    open_calls: Vec<Box<str>>,
    /// The failed turn this record kept (an `interrupted-thinking` message).
    kept: Option<usize>,
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

impl Kind {
    /// The tool call ids the message names.
    fn ids(&self) -> impl Iterator<Item = &Box<str>> {
        let ids: &[Box<str>] = match self {
            Kind::Assistant { calls, .. } => calls,
            Kind::Result { id, .. } => std::slice::from_ref(id),
            Kind::Other { .. } => &[],
        };
        ids.iter()
    }
}

impl ContextAccount {
    /// The account of the context at the session's leaf.
    pub fn at(session: &Session, archive: Option<&dyn ArchiveBlocks>) -> Self {
        let mut account = Self::default();
        account.sync(session, archive);
        account
    }

    /// Brings the account to the session's current leaf: when the path to
    /// it forks from the followed one after the compaction that opens the
    /// context, nothing has changed in place and no new entry is a
    /// compaction, the records below the fork are taken back and the
    /// entries from the fork down to the new leaf counted; otherwise it
    /// starts over from the context at the leaf.
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
            if let Some((fork, added)) = self.route(session, leaf) {
                while let Some(last) = self.records.last()
                    && i64::from(session.path_summary(last.entry).depth) > fork
                {
                    self.pop(session);
                }
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
        self.compaction_depth = compaction;
        for m in &context.messages {
            let held = compaction.is_none_or(|d| session.path_summary(m.entry_index).depth > d);
            self.push(session, m, held, &options);
        }
    }

    /// Tells the account that every entry of `session` is again exactly
    /// what it was when the account was last brought to it (replacements
    /// were staged and undone since, as a plan that prunes does), so that
    /// those changes in place do not make the next [`ContextAccount::sync`]
    /// count the context from its start. The caller answers for the claim.
    pub fn restored(&mut self, session: &Session) {
        if self.synced {
            self.edits = session.edits();
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
                tokens: self.total,
                usage_tokens: 0,
                trailing_tokens: self.total,
                last_usage_index: None,
            },
            Some((i, usage)) => ContextEstimate {
                tokens: usage.saturating_add(self.trailing),
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
    /// result after it ([`calls_answered`](crate::calls_answered)).
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

    /// Where the path to `leaf` leaves the followed one (the depth of the
    /// last entry both share, -1 for none) and the entries below it down to
    /// `leaf`, root first; `None` when that fork lies before the compaction
    /// that opens the context, or a compaction is among the new entries.
    fn route(&self, session: &Session, leaf: Option<usize>) -> Option<(i64, Vec<usize>)> {
        let depth = |i: Option<usize>| i.map_or(-1, |i| i64::from(session.path_summary(i).depth));
        let floor = self.compaction_depth.map_or(-1, i64::from);
        let (mut old, mut new) = (self.leaf, leaf);
        let mut added = Vec::new();
        while old != new {
            if depth(new) >= depth(old) {
                let c = new?;
                if matches!(session.entries()[c].body, EntryBody::Compaction(_)) {
                    return None;
                }
                added.push(c);
                new = session.parent_index(c);
            } else {
                old = old.and_then(|o| session.parent_index(o));
                if depth(old) < floor {
                    return None;
                }
            }
        }
        if depth(old) < floor {
            return None;
        }
        added.reverse();
        Some((depth(old), added))
    }

    /// Takes back the last record: the account becomes what it was before
    /// that record came.
    fn pop(&mut self, session: &Session) {
        let Some(record) = self.records.pop() else {
            return;
        };
        let p = self.records.len();
        let mut dirty = Vec::new();
        for id in record.kind.ids() {
            if let Some(named) = self.mentions.get_mut(id) {
                named.retain(|&q| q != p);
                dirty.extend(named.iter().copied());
                if named.is_empty() {
                    self.mentions.remove(id);
                }
            }
        }
        if let Some(l) = record.before.kept
            && let Kind::Assistant { calls, kept, .. } = &mut self.records[l].kind
        {
            *kept = false;
            dirty.push(l);
            for id in calls.iter() {
                dirty.extend(self.mentions.get(id).into_iter().flatten());
            }
        }
        dirty.sort_unstable();
        dirty.dedup();
        for q in dirty {
            self.records[q].tokens = self.count_now(session, q);
        }
        let before = record.before;
        self.total = before.total;
        self.trailing = before.trailing;
        self.anchor = before.anchor;
        self.last_turn = before.last_turn;
        self.open_calls = before.open_calls;
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
        let mut before = Before {
            total: self.total,
            trailing: self.trailing,
            anchor: self.anchor,
            last_turn: self.last_turn,
            open_calls: self.open_calls.clone(),
            kept: None,
        };
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
                    before.kept = Some(l);
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
        let ids: Vec<Box<str>> = kind.ids().cloned().collect();
        self.records.push(Record {
            entry: m.entry_index,
            kind,
            tokens: 0,
            before,
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
