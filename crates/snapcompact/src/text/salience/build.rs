//! Provider messages into blocks: each user message a ledger block, each
//! tool call a ledger line `name(args)` with the error lines and the last
//! line of its output, reasoning, replies and tool output conversation
//! blocks.

use std::collections::{BTreeSet, HashMap};

use musepi_context_builder::LlmMessage;
use musepi_session_model::{ContentBlock, ToolCall};

use super::blocks::{Block, Limits, Piece, Rank, Scope, tier, user_block};
use super::calls::Calls;
use super::marker;
use super::outputs::{Output, OutputCap, Outputs};
use super::text::shorten_head;
use crate::util::len16;

/// The score a command's last line needs for the ledger to promise it.
const RESULT_MIN_SCORE: i32 = 1;

/// One message with the session entry it came from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    pub message: &'a LlmMessage,
    pub id: Option<&'a str>,
}

/// Builds blocks in history order.
pub(crate) struct Builder<'a> {
    limits: &'a Limits,
    cap: OutputCap,
    useless: &'a BTreeSet<String>,
    pub(crate) blocks: Vec<Block>,
    pub(crate) turn: u32,
    /// Call id → its ledger block, and whether its command's output is
    /// reproducible ([`super::calls::reproducible`]).
    calls: HashMap<String, (usize, bool)>,
    /// Call ids whose useless result drops them both.
    dropped: BTreeSet<String>,
    /// Lines already lifted into the ledger: a repeat of one is optional.
    lifted: BTreeSet<String>,
    /// The forms of the error lines lifted so far.
    error_forms: BTreeSet<String>,
    /// What the ledger's calls have shown so far.
    shown: Calls,
    /// The last ledger block when it is a call with nothing under it, and
    /// that call's key: the same call next is counted on it.
    last_call: Option<(usize, String)>,
    /// The tool outputs read so far, shared with the builds at the other
    /// ledger levels, and how many this build has met.
    outputs: Outputs,
    seen: usize,
    /// Each output's stand-in: its index in `blocks` and the output's
    /// number.
    stand_ins: Vec<(usize, usize)>,
    /// Each reasoning's or reply's stand-in: its index in `blocks` and
    /// its number; and how many this build has met.
    prose_stand_ins: Vec<(usize, usize)>,
    prose_seen: usize,
}

impl<'a> Builder<'a> {
    pub(crate) fn new(
        limits: &'a Limits,
        useless: &'a BTreeSet<String>,
        turn: u32,
        cap: OutputCap,
        outputs: Outputs,
    ) -> Self {
        Self {
            limits,
            cap,
            useless,
            blocks: Vec::new(),
            turn,
            calls: HashMap::new(),
            dropped: BTreeSet::new(),
            lifted: BTreeSet::new(),
            error_forms: BTreeSet::new(),
            shown: Calls::default(),
            last_call: None,
            outputs,
            seen: 0,
            stand_ins: Vec::new(),
            prose_stand_ins: Vec::new(),
            prose_seen: 0,
        }
    }

    /// Adds messages, resolving provider histories into what they stand for.
    pub(crate) fn messages(&mut self, sources: &[Source<'_>]) {
        // A useless result that is not an error drops its call as well.
        for s in sources {
            if let LlmMessage::ToolResult {
                tool_call_id,
                is_error,
                ..
            } = s.message
                && !is_error
                && self.useless.contains(tool_call_id)
            {
                self.dropped.insert(tool_call_id.clone());
            }
        }
        for s in sources {
            self.message(s.message, s.id);
        }
    }

    fn message(&mut self, message: &LlmMessage, id: Option<&str>) {
        match message {
            LlmMessage::ProviderHistory(h) => {
                for m in h.fallback() {
                    self.message(m, id);
                }
            }
            LlmMessage::User { content } | LlmMessage::Developer { content } => {
                let text = joined_text(content);
                if text.trim().is_empty() {
                    return;
                }
                self.turn += 1;
                self.last_call = None;
                self.blocks
                    .push(user_block(text.trim(), self.turn, id, self.limits));
            }
            LlmMessage::Assistant { content, .. } => self.assistant(content, id),
            LlmMessage::ToolResult {
                tool_call_id,
                tool_name,
                content,
                is_error,
            } => {
                if self.dropped.contains(tool_call_id) {
                    return;
                }
                let text = joined_text(content);
                self.result(tool_call_id, tool_name, &text, *is_error, id);
            }
        }
    }

    fn assistant(&mut self, content: &[ContentBlock], id: Option<&str>) {
        let mut thinking: Vec<&str> = Vec::new();
        let mut text: Vec<&str> = Vec::new();
        for block in content {
            match block {
                ContentBlock::Text { text: t, .. } if !t.trim().is_empty() => text.push(t),
                ContentBlock::Thinking { thinking: t, .. } if !t.trim().is_empty() => {
                    thinking.push(t);
                }
                ContentBlock::ToolCall(call) => {
                    self.flush(&mut thinking, &mut text, id);
                    if !self.dropped.contains(&call.id) {
                        self.call(call, id);
                    }
                }
                _ => {}
            }
        }
        self.flush(&mut thinking, &mut text, id);
    }

    fn flush(&mut self, thinking: &mut Vec<&str>, text: &mut Vec<&str>, id: Option<&str>) {
        let joined = [
            (Scope::Think, thinking.join("\n")),
            (Scope::Ai, text.join("\n")),
        ];
        thinking.clear();
        text.clear();
        for (scope, joined) in joined {
            if joined.is_empty() {
                continue;
            }
            let seq = self.prose_seen;
            self.prose_seen += 1;
            let stand_in = self
                .outputs
                .prose_stand_in(seq, scope, joined.trim(), self.turn, id);
            self.prose_stand_ins.push((self.blocks.len(), seq));
            self.blocks.push(stand_in);
        }
    }

    fn call(&mut self, call: &ToolCall, id: Option<&str>) {
        let reproducible = super::calls::reproducible(call);
        let mut line = self.shown.line(call, self.limits, self.turn);
        let source = len16(&call.name) + 2 + call.arguments.js_len();
        let text = if line.shortened {
            let mark = marker(id);
            line.refs.whole = format!("{} {mark}", line.refs.whole);
            format!("{} {mark}", line.text)
        } else {
            line.text
        };
        // The same call again right after itself in the ledger: counted,
        // not repeated.
        if let Some((index, key)) = &self.last_call
            && *key == line.refs.key
        {
            let index = *index;
            let last = &mut self.blocks[index];
            last.repeat += 1;
            last.source_chars += source;
            self.calls.insert(call.id.clone(), (index, reproducible));
            return;
        }
        let mut block = Block::new(Scope::Call, self.turn, id);
        block.source_chars = source;
        block.shortened = line.shortened;
        self.last_call = Some((self.blocks.len(), line.refs.key.clone()));
        block.refs = Some(line.refs);
        block.pieces.push(Piece::new("", text, Rank::Must));
        self.calls
            .insert(call.id.clone(), (self.blocks.len(), reproducible));
        self.blocks.push(block);
    }

    /// A tool result: error lines and the last line a command printed go
    /// under its call in the ledger, the output itself into the
    /// conversation (as a stand-in until [`Builder::finish`]).
    fn result(&mut self, call_id: &str, tool: &str, text: &str, is_error: bool, id: Option<&str>) {
        let (index, reproducible) = if let Some(&found) = self.calls.get(call_id) {
            found
        } else {
            // Its call is not in this window: the output stands alone.
            let mut block = Block::new(Scope::Call, self.turn, id);
            block
                .pieces
                .push(Piece::new("", format!("{tool}(…)"), Rank::Must));
            self.last_call = None;
            self.blocks.push(block);
            (self.blocks.len() - 1, false)
        };
        if text.trim().is_empty() {
            return;
        }
        let seq = self.seen;
        self.seen += 1;
        let limits = *self.limits;
        let analysis = self.outputs.analysis(seq, tool, text, is_error);
        let errors = &analysis.errors;
        let mut pieces = Vec::new();
        // The guaranteed error lines are the most telling (compiler errors
        // outrank `exit code 1`) of different forms, printed in their
        // order; the rest compete for the budget, those of a form already
        // shown below the conversation.
        let mut order: Vec<usize> = (0..errors.len())
            .filter(|&i| !self.lifted.contains(&errors[i].text))
            .collect();
        order.sort_by_key(|&i| {
            (
                self.error_forms.contains(&errors[i].form),
                std::cmp::Reverse(errors[i].score),
                i,
            )
        });
        let mut best: Vec<usize> = Vec::new();
        for i in order {
            if best.len() < limits.error_lines
                && !best.iter().any(|&b| errors[b].form == errors[i].form)
            {
                best.push(i);
            }
        }
        let mut shown_forms: BTreeSet<&str> =
            best.iter().map(|&i| errors[i].form.as_str()).collect();
        for (i, line) in errors.iter().enumerate() {
            let (shown, _) = shorten_head(&line.text, limits.error_chars);
            let rank = if best.contains(&i) {
                Rank::Must
            } else {
                let repeat = self.lifted.contains(&line.text)
                    || self.error_forms.contains(&line.form)
                    || !shown_forms.insert(line.form.as_str());
                Rank::Optional {
                    tier: if repeat {
                        tier::OUTPUT_BEST
                    } else {
                        tier::ERRORS
                    },
                    score: line.score,
                }
            };
            let mut piece = Piece::new("\n  ! ", shown, rank);
            piece.silent = true;
            pieces.push(piece);
        }
        if analysis.lifts_last()
            && let Some((last, last_score)) = &analysis.last
        {
            let (shown, _) = shorten_head(last, limits.result_chars);
            // A command's last line is its result, which the ledger
            // promises, unless it repeats an earlier command's, holds
            // nothing specific, or is the last of the lines a search or
            // listing printed (one match or file name of several, which
            // running it again gives back) and states no fact. Those
            // compete for the budget with the rest of the output; a
            // search that printed one line keeps it: that is its answer.
            let reproduced = reproducible
                && text
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .nth(1)
                    .is_some()
                && !states_a_fact(last);
            let rank = if self.lifted.contains(last) || *last_score < RESULT_MIN_SCORE || reproduced
            {
                Rank::Optional {
                    tier: tier::OUTPUT_BEST,
                    score: *last_score,
                }
            } else {
                Rank::Must
            };
            let mut piece = Piece::new("\n  → ", shown, rank);
            piece.silent = true;
            pieces.push(piece);
        }
        self.error_forms
            .extend(errors.iter().map(|e| e.form.clone()));
        self.lifted
            .extend(analysis.lifted().into_iter().map(str::to_owned));
        let block = &mut self.blocks[index];
        if !pieces.is_empty() {
            // A call with lines under it no longer merges with the next.
            block.pieces.extend(pieces);
            if self.last_call.as_ref().is_some_and(|(i, _)| *i == index) {
                self.last_call = None;
            }
        }
        let turn = block.turn;
        let stand_in = self.outputs.stand_in(seq, tool, text, turn, id, self.cap);
        self.stand_ins.push((self.blocks.len(), seq));
        self.blocks.push(stand_in);
    }

    /// The blocks, each tool output's real block in place of its stand-in
    /// (`offset` blocks were put before the ones built here).
    pub(crate) fn finish(mut self, offset: usize) -> Vec<Block> {
        for (index, seq) in std::mem::take(&mut self.prose_stand_ins) {
            let index = index + offset;
            if let Some(block) = self.outputs.take_prose(seq, &self.blocks[index]) {
                self.blocks[index] = block;
            }
        }
        for (index, seq) in std::mem::take(&mut self.stand_ins) {
            let index = index + offset;
            if let Some(block) = self.outputs.take(seq, &self.blocks[index]) {
                self.blocks[index] = block;
            }
        }
        self.blocks
    }

    /// What a build at another ledger level can reuse.
    pub(crate) fn into_outputs(self) -> Outputs {
        self.outputs
    }
}

/// The tool outputs [`Builder::messages`] meets in `sources`, in the order
/// it meets them: the results that are not dropped with their useless
/// call and hold some text, in provider histories too.
pub(crate) fn outputs_in_order(sources: &[Source<'_>], useless: &BTreeSet<String>) -> Vec<Output> {
    fn walk(message: &LlmMessage, dropped: &BTreeSet<&str>, out: &mut Vec<Output>) {
        match message {
            LlmMessage::ProviderHistory(h) => {
                for m in h.fallback() {
                    walk(m, dropped, out);
                }
            }
            LlmMessage::ToolResult {
                tool_call_id,
                tool_name,
                content,
                is_error,
            } => {
                if dropped.contains(tool_call_id.as_str()) {
                    return;
                }
                let text = joined_text(content);
                if !text.trim().is_empty() {
                    out.push((tool_name.clone(), text, *is_error));
                }
            }
            _ => {}
        }
    }
    // As `messages` drops them: a useless result that is not an error
    // drops its call, and every result of that call.
    let dropped: BTreeSet<&str> = sources
        .iter()
        .filter_map(|s| match s.message {
            LlmMessage::ToolResult {
                tool_call_id,
                is_error: false,
                ..
            } if useless.contains(tool_call_id) => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for s in sources {
        walk(s.message, &dropped, &mut out);
    }
    out
}

/// The text blocks of `content`, concatenated.
pub(crate) fn joined_text(content: &[ContentBlock]) -> String {
    let mut out = String::new();
    for block in content {
        if let ContentBlock::Text { text, .. } = block {
            out.push_str(text);
        }
    }
    out
}

/// Whether a line of output states a fact worth promising: it reads as a
/// statement and holds a value or a decision, not only a name.
fn states_a_fact(line: &str) -> bool {
    super::score::reads_as_statement(line) && super::score::read(line).fact
}

#[cfg(test)]
mod tests {
    use musepi_session_model::{JsonValue, Text};
    use serde_json::{Value, json};

    use super::super::blocks::LEVELS;
    use super::super::outputs::Outputs;
    use super::*;

    fn assistant(calls: &[(&str, &str, Value)]) -> LlmMessage {
        LlmMessage::Assistant {
            content: calls
                .iter()
                .map(|(id, name, args)| {
                    ContentBlock::ToolCall(ToolCall {
                        id: (*id).into(),
                        name: Text::new(*name),
                        arguments: JsonValue::new(args.clone()),
                        intent: None,
                    })
                })
                .collect(),
            provider: None,
            model: None,
            stop_reason: None,
        }
    }

    fn result(id: &str, tool: &str, text: &str, is_error: bool) -> LlmMessage {
        LlmMessage::ToolResult {
            tool_call_id: id.into(),
            tool_name: tool.into(),
            content: vec![ContentBlock::text(text)],
            is_error,
        }
    }

    /// One assistant message calling `tool` once per `(arguments, output,
    /// is_error)`, with ids `c1`, `c2`, …, then each call's result in order.
    fn calls_and_results(tool: &str, calls: &[(Value, &str, bool)]) -> Vec<LlmMessage> {
        let ids: Vec<String> = (1..=calls.len()).map(|i| format!("c{i}")).collect();
        let asked: Vec<(&str, &str, Value)> = ids
            .iter()
            .zip(calls)
            .map(|(id, (args, _, _))| (id.as_str(), tool, args.clone()))
            .collect();
        let mut messages = vec![assistant(&asked)];
        for (id, (_, output, is_error)) in ids.iter().zip(calls) {
            messages.push(result(id, tool, output, *is_error));
        }
        messages
    }

    fn build(messages: &[LlmMessage]) -> Vec<Block> {
        let useless = BTreeSet::new();
        let mut b = Builder::new(&LEVELS[0], &useless, 0, OutputCap::NONE, Outputs::default());
        let sources: Vec<Source<'_>> = messages
            .iter()
            .map(|m| Source {
                message: m,
                id: Some("e1"),
            })
            .collect();
        b.messages(&sources);
        b.finish(0)
    }

    #[test]
    fn the_outputs_read_ahead_are_the_outputs_the_builder_meets() {
        let mut messages = calls_and_results(
            "bash",
            &[
                (json!({"command": "make"}), "error: boom\ndone", false),
                (json!({"command": "ls"}), "   ", false),
                (json!({"command": "cat a"}), "not needed", false),
                (json!({"command": "cat b"}), "failed", true),
                (json!({"command": "cat c"}), "the end", false),
            ],
        );
        // A result whose call is not in the window stands alone.
        messages.push(result("elsewhere", "bash", "late output", false));
        let useless: BTreeSet<String> = ["c3".to_owned(), "c4".to_owned()].into();
        let sources: Vec<Source<'_>> = messages
            .iter()
            .map(|m| Source {
                message: m,
                id: None,
            })
            .collect();
        let ahead = outputs_in_order(&sources, &useless);
        let texts: Vec<&str> = ahead.iter().map(|(_, t, _)| t.as_str()).collect();
        // The empty output and the useless one that did not fail are not
        // met; the useless failure is.
        assert_eq!(
            texts,
            ["error: boom\ndone", "failed", "the end", "late output"]
        );
        let outputs = Outputs::read_ahead(&ahead, OutputCap::NONE);
        let mut b = Builder::new(&LEVELS[0], &useless, 0, OutputCap::NONE, outputs);
        b.messages(&sources);
        assert_eq!(b.seen, 4);
        assert!(b.into_outputs().met_as_read());
    }

    #[test]
    fn results_lift_error_lines_and_the_last_line_into_the_ledger() {
        let blocks = build(&calls_and_results(
            "bash",
            &[(
                json!({"command": "make"}),
                "cc a.c\nerror: boom\nmake: *** [all] Error 2",
                false,
            )],
        ));
        let call = &blocks[0];
        let texts: Vec<(&str, &str)> = call
            .pieces
            .iter()
            .map(|p| (p.sep.as_str(), p.text.as_str()))
            .collect();
        assert_eq!(
            texts,
            [
                ("", "bash(make)"),
                ("\n  ! ", "error: boom"),
                ("\n  → ", "make: *** [all] Error 2"),
            ]
        );
        assert_eq!(blocks[1].scope, Scope::Out("bash".into()));
        assert_eq!(blocks[1].pieces.len(), 1);
        // The result is promised, like the most telling error.
        assert!(call.pieces.iter().all(|p| p.rank == Rank::Must));
    }

    #[test]
    fn the_last_of_several_lines_a_search_printed_is_promised_only_when_it_states_a_fact() {
        let blocks = build(&calls_and_results(
            "bash",
            &[
                (
                    json!({"command": "grep -rn chalk src"}),
                    "src/a.ts:3: import chalk from 'chalk';\nsrc/b.ts:9: return chalk.blue;",
                    false,
                ),
                (
                    json!({"command": "grep -r deploy_key ."}),
                    "infra/vault.tf: deploy_key = vault/prod/deploy",
                    false,
                ),
                (
                    json!({"command": "tail -3 bench.log"}),
                    "indexer started\nindexer done\npeak RSS: 62 MB",
                    false,
                ),
            ],
        ));
        let last_of = |call: usize| {
            blocks
                .iter()
                .filter(|b| b.scope == Scope::Call)
                .nth(call)
                .and_then(|b| b.pieces.iter().find(|p| p.sep == "\n  → "))
                .map(|p| (p.text.clone(), p.rank == Rank::Must))
                .unwrap()
        };
        // One match of several: running the search again gives it back.
        assert_eq!(last_of(0), ("src/b.ts:9: return chalk.blue;".into(), false));
        // A search that printed one line: that line is its answer.
        assert_eq!(
            last_of(1),
            (
                "infra/vault.tf: deploy_key = vault/prod/deploy".into(),
                true
            )
        );
        // A measured value stays promised, whatever printed it.
        assert_eq!(last_of(2), ("peak RSS: 62 MB".into(), true));
    }

    #[test]
    fn a_last_line_seen_before_or_saying_nothing_is_not_promised() {
        let blocks = build(&calls_and_results(
            "bash",
            &[
                (
                    json!({"command": "cargo test -p a"}),
                    "test result: ok. 60 passed",
                    false,
                ),
                (
                    json!({"command": "cargo test -p b"}),
                    "test result: ok. 60 passed",
                    false,
                ),
                (json!({"command": "true"}), "ok", false),
            ],
        ));
        let last = |b: &Block| b.pieces.last().map(|p| (p.text.clone(), p.rank));
        let calls: Vec<&Block> = blocks.iter().filter(|b| b.scope == Scope::Call).collect();
        assert_eq!(
            last(calls[0]),
            Some(("test result: ok. 60 passed".to_owned(), Rank::Must))
        );
        assert!(matches!(last(calls[1]), Some((_, Rank::Optional { .. }))));
        assert!(matches!(last(calls[2]), Some((_, Rank::Optional { .. }))));
    }

    #[test]
    fn error_lines_of_one_form_guarantee_one_and_rank_the_rest_low() {
        let output = "\
src/a.ts(1,2): error TS2307: Cannot find module './x.js'.
src/b.ts(3,4): error TS2307: Cannot find module './y.js'.
src/c.ts(5,6): error TS2307: Cannot find module './z.js'.
src/d.ts(7,8): error TS2339: Property 'open' does not exist on type 'Door'.
Command exited with code 2";
        let blocks = build(&calls_and_results(
            "bash",
            &[(json!({"command": "npm run check"}), output, false)],
        ));
        let ranks: Vec<(&str, Rank)> = blocks[0].pieces[1..]
            .iter()
            .map(|p| (p.text.as_str(), p.rank))
            .collect();
        let must: Vec<&str> = ranks
            .iter()
            .filter(|(_, r)| *r == Rank::Must)
            .map(|(t, _)| *t)
            .collect();
        // Two guaranteed, of two forms; the last line is an error line.
        assert_eq!(must.len(), 2, "{ranks:?}");
        assert!(must.iter().any(|t| t.contains("TS2307")), "{must:?}");
        assert!(must.iter().any(|t| t.contains("TS2339")), "{must:?}");
        for (text, rank) in &ranks {
            if text.contains("TS2307") && !must.contains(text) {
                assert!(
                    matches!(rank, Rank::Optional { tier, .. } if *tier == tier::OUTPUT_BEST),
                    "{text}: {rank:?}"
                );
            }
        }
    }

    #[test]
    fn reads_lift_nothing_unless_they_failed() {
        let blocks = build(&calls_and_results(
            "read",
            &[
                (json!({"path": "a.rs"}), "fn error() {}\n}", false),
                (json!({"path": "b.rs"}), "ENOENT: no such file", true),
            ],
        ));
        assert_eq!(blocks[0].pieces.len(), 1);
        assert_eq!(blocks[1].pieces.len(), 2);
        assert_eq!(blocks[1].pieces[1].text, "ENOENT: no such file");
    }

    #[test]
    fn the_same_call_in_a_row_is_counted() {
        let blocks = build(&[assistant(&[
            ("c1", "bash", json!({"command": "ls"})),
            ("c2", "bash", json!({"command": "ls"})),
        ])]);
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].repeat, 2);
    }

    #[test]
    fn user_messages_count_turns() {
        let blocks = build(&[
            LlmMessage::user_text("one"),
            LlmMessage::user_text("  "),
            LlmMessage::user_text("two"),
        ]);
        let turns: Vec<u32> = blocks.iter().map(|b| b.turn).collect();
        assert_eq!(turns, [1, 2]);
    }
}
