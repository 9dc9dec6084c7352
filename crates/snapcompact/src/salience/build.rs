//! Provider messages into blocks: each user message a ledger block, each
//! tool call a ledger line `name(args)` with the error lines and the last
//! line of its output, reasoning, replies and tool output conversation
//! blocks.

use std::collections::{BTreeSet, HashMap};

use musepi_context_builder::LlmMessage;
use musepi_session_model::json::{js_key_order, js_stringify};
use musepi_session_model::{ContentBlock, ToolCall};
use serde_json::Value;

use super::blocks::{
    Block, Limits, OutputCap, Piece, Rank, Scope, Section, output_block, prose_block, tier,
    user_block,
};
use super::marker;
use super::text::{is_error_line, score, shorten_head, split_lines};
use crate::util::{head_units, len16};

/// Argument keys that name a file or a folder: kept whole.
const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "file",
    "filename",
    "paths",
    "cwd",
    "dir",
    "directory",
    "url",
];
/// Argument keys that hold a command: their head is kept.
const COMMAND_KEYS: &[&str] = &["command", "cmd", "script"];
/// Tools that read files: their output is file content, not a report, so
/// its error-looking lines and its last line are not lifted into the
/// ledger (unless the read itself failed).
const READ_TOOLS: &[&str] = &["read", "read_file", "readfile", "view", "cat", "open_file"];
/// Tools that change files: their output only confirms the change.
const WRITE_TOOLS: &[&str] = &[
    "edit",
    "write",
    "multiedit",
    "multi_edit",
    "str_replace",
    "apply_patch",
    "write_file",
    "edit_file",
];

/// The error lines of one output that are looked at (a build can print
/// thousands).
const ERROR_CANDIDATES: usize = 200;

/// The score a command's last line needs to rank with the best of the
/// conversation, and what it gets on top: a command's last line is its
/// result.
const RESULT_MIN_SCORE: i32 = 2;
const RESULT_BONUS: i32 = 6;

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
    /// Call id → its ledger block and tool name.
    calls: HashMap<String, (usize, String)>,
    /// Call ids whose useless result drops them both.
    dropped: BTreeSet<String>,
    /// Lines already lifted into the ledger: a repeat of one is optional.
    lifted: BTreeSet<String>,
}

impl<'a> Builder<'a> {
    pub(crate) fn new(
        limits: &'a Limits,
        useless: &'a BTreeSet<String>,
        turn: u32,
        cap: OutputCap,
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
        if !thinking.is_empty() {
            let joined = thinking.join("\n");
            self.blocks
                .push(prose_block(Scope::Think, joined.trim(), self.turn, id));
            thinking.clear();
        }
        if !text.is_empty() {
            let joined = text.join("\n");
            self.blocks
                .push(prose_block(Scope::Ai, joined.trim(), self.turn, id));
            text.clear();
        }
    }

    fn call(&mut self, call: &ToolCall, id: Option<&str>) {
        let (line, shortened) = call_line(call, self.limits);
        let source = len16(&call.name) + 2 + call.arguments.js_len();
        let line = if shortened {
            format!("{line} {}", marker(id))
        } else {
            line
        };
        // The same call again right after itself in the ledger: counted,
        // not repeated.
        let last_ledger = self
            .blocks
            .iter()
            .rposition(|b| b.section == Section::Ledger);
        if let Some(index) = last_ledger {
            let last = &mut self.blocks[index];
            if last.scope == Scope::Call && last.pieces.len() == 1 && last.pieces[0].text == line {
                last.repeat += 1;
                last.source_chars += source;
                self.calls
                    .insert(call.id.clone(), (index, call.name.to_string()));
                return;
            }
        }
        let mut block = Block::new(Section::Ledger, Scope::Call, self.turn, id);
        block.source_chars = source;
        block.shortened = shortened;
        block.pieces.push(Piece::new("", line, Rank::Must));
        self.calls
            .insert(call.id.clone(), (self.blocks.len(), call.name.to_string()));
        self.blocks.push(block);
    }

    /// A tool result: error lines and the last line a command printed go
    /// under its call in the ledger, the output itself into the
    /// conversation.
    fn result(&mut self, call_id: &str, tool: &str, text: &str, is_error: bool, id: Option<&str>) {
        let index = if let Some((index, _)) = self.calls.get(call_id) {
            *index
        } else {
            // Its call is not in this window: the output stands alone.
            let mut block = Block::new(Section::Ledger, Scope::Call, self.turn, id);
            block
                .pieces
                .push(Piece::new("", format!("{tool}(…)"), Rank::Must));
            self.blocks.push(block);
            self.blocks.len() - 1
        };
        if text.trim().is_empty() {
            return;
        }
        let name = tool.to_ascii_lowercase();
        let reads = READ_TOOLS.contains(&name.as_str());
        let writes = WRITE_TOOLS.contains(&name.as_str());
        let limits = *self.limits;
        let lines: Vec<&str> = split_lines(text, usize::MAX)
            .into_iter()
            .map(|s| &text[s.text])
            .collect();
        let mut lifted: Vec<String> = Vec::new();
        let mut pieces = Vec::new();
        if is_error || !reads {
            // Lines that look like errors; a failed call with none shows
            // its last line as the error.
            let mut errors: Vec<&str> = Vec::new();
            for line in &lines {
                if is_error_line(line) && !errors.contains(line) {
                    errors.push(line);
                }
            }
            if errors.is_empty()
                && is_error
                && let Some(last) = lines.last()
            {
                errors.push(last);
            }
            // The guaranteed ones are the most telling (compiler errors
            // outrank `exit code 1`), printed in their order.
            let errors: Vec<&str> = errors.into_iter().take(ERROR_CANDIDATES).collect();
            let mut best: Vec<usize> = (0..errors.len())
                .filter(|&i| !self.lifted.contains(errors[i]))
                .collect();
            best.sort_by_key(|&i| (std::cmp::Reverse(score(errors[i])), i));
            best.truncate(limits.error_lines);
            for (i, line) in errors.iter().enumerate() {
                let (shown, _) = shorten_head(line, limits.error_chars);
                let repeat = self.lifted.contains(*line);
                let rank = if best.contains(&i) {
                    Rank::Must
                } else {
                    Rank::Optional {
                        tier: if repeat {
                            tier::OUTPUT_BEST
                        } else {
                            tier::ERRORS
                        },
                        score: score(line),
                    }
                };
                let mut piece = Piece::new("\n  ! ", shown, rank);
                piece.silent = true;
                pieces.push(piece);
                lifted.push((*line).to_owned());
            }
        }
        if !reads
            && !writes
            && let Some(last) = lines.last()
            && !lifted.iter().any(|l| l == last)
        {
            let (shown, _) = shorten_head(last, limits.result_chars);
            // The same last line as an earlier command's, or one that
            // holds nothing specific, says little more.
            let repeat = self.lifted.contains(*last) || score(last) < RESULT_MIN_SCORE;
            let mut piece = Piece::new(
                "\n  → ",
                shown,
                Rank::Optional {
                    tier: if repeat {
                        tier::OUTPUT_BEST
                    } else {
                        tier::CONVERSATION_BEST
                    },
                    score: score(last) + RESULT_BONUS,
                },
            );
            piece.silent = true;
            pieces.push(piece);
            lifted.push((*last).to_owned());
        }
        self.lifted.extend(lifted.iter().cloned());
        let block = &mut self.blocks[index];
        if !pieces.is_empty() {
            // A call with lines under it no longer merges with the next.
            block.pieces.extend(pieces);
        }
        let turn = block.turn;
        self.blocks
            .push(output_block(tool, text, turn, id, &lifted, self.cap));
    }
}

/// `name(key=value, …)//intent`: paths whole, the head of a command, short
/// values as they are and long ones as `…`; whether anything was cut.
pub(crate) fn call_line(call: &ToolCall, limits: &Limits) -> (String, bool) {
    let mut shortened = false;
    let mut args: Vec<String> = Vec::new();
    // A tool that changes files shows where: the content is in the file.
    let writes = WRITE_TOOLS.contains(&call.name.to_ascii_lowercase().as_str());
    if let Value::Object(map) = call.arguments.value() {
        for (key, value) in js_key_order(map) {
            if key == "intent" || (writes && !PATH_KEYS.contains(&key.as_str())) {
                continue;
            }
            let primary = PATH_KEYS.contains(&key.as_str()) || COMMAND_KEYS.contains(&key.as_str());
            let max = if PATH_KEYS.contains(&key.as_str()) {
                limits.path_chars
            } else if COMMAND_KEYS.contains(&key.as_str()) {
                limits.command_chars
            } else {
                limits.arg_chars
            };
            let raw = match value {
                Value::String(s) => s.clone(),
                other => js_stringify(other),
            };
            let shown = if max == limits.arg_chars && len16(&raw) > max {
                shortened = true;
                "…".to_owned()
            } else if COMMAND_KEYS.contains(&key.as_str()) && len16(&raw) > max {
                // A command keeps its head exactly as long as promised.
                shortened = true;
                format!("{}…", head_units(&raw, max))
            } else {
                let (head, cut) = shorten_head(&raw, max);
                shortened |= cut;
                head
            };
            // The path or command that comes first goes without its name.
            if primary && args.is_empty() {
                args.push(shown);
            } else {
                args.push(format!("{key}={shown}"));
            }
        }
    }
    let intent = call
        .intent
        .as_deref()
        .or_else(|| call.arguments.get("intent").and_then(Value::as_str))
        .map(|i| i.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let mut line = format!("{}({})", call.name, args.join(", "));
    if !intent.is_empty() {
        let (intent, cut) = shorten_head(&intent, limits.arg_chars * 2);
        shortened |= cut;
        line.push_str("//");
        line.push_str(&intent);
    }
    (line, shortened)
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

#[cfg(test)]
mod tests {
    use musepi_session_model::{JsonValue, Text};
    use serde_json::json;

    use super::super::blocks::LEVELS;
    use super::*;

    fn tool_call(name: &str, args: Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: Text::new(name),
            arguments: JsonValue::new(args),
            intent: None,
        }
    }

    #[test]
    fn calls_keep_paths_and_command_heads_and_drop_long_contents() {
        let limits = &LEVELS[0];
        let (line, cut) = call_line(
            &tool_call(
                "bash",
                json!({"command": "cargo test -p musepi \"x\"", "timeout": 60}),
            ),
            limits,
        );
        assert_eq!(line, "bash(cargo test -p musepi \"x\", timeout=60)");
        assert!(!cut);
        let (line, cut) = call_line(
            &tool_call(
                "edit",
                json!({"path": "src/a.rs", "oldText": "x".repeat(100), "newText": "y", "intent": " fix  it "}),
            ),
            limits,
        );
        assert_eq!(line, "edit(src/a.rs)//fix it");
        assert!(!cut);
        let (line, cut) = call_line(
            &tool_call("grep", json!({"pattern": "x".repeat(100), "path": "src"})),
            limits,
        );
        assert_eq!(line, "grep(pattern=…, path=src)");
        let (line, _) = call_line(
            &tool_call("read", json!({"path": "src/a.rs", "offset": 10})),
            limits,
        );
        assert_eq!(line, "read(src/a.rs, offset=10)");
        assert!(cut);
        let long = format!("cd /repo && {}", "echo hi && ".repeat(30));
        let (line, cut) = call_line(&tool_call("bash", json!({"command": long})), limits);
        assert!(cut && line.starts_with("bash(cd /repo && echo hi"));
        assert!(line.len() < 190, "{line}");
    }

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

    fn build(messages: &[LlmMessage]) -> Vec<Block> {
        let useless = BTreeSet::new();
        let mut b = Builder::new(&LEVELS[0], &useless, 0, OutputCap::NONE);
        let sources: Vec<Source<'_>> = messages
            .iter()
            .map(|m| Source {
                message: m,
                id: Some("e1"),
            })
            .collect();
        b.messages(&sources);
        b.blocks
    }

    #[test]
    fn results_lift_error_lines_and_the_last_line_into_the_ledger() {
        let blocks = build(&[
            assistant(&[("c1", "bash", json!({"command": "make"}))]),
            result(
                "c1",
                "bash",
                "cc a.c\nerror: boom\nmake: *** [all] Error 2",
                false,
            ),
        ]);
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
    }

    #[test]
    fn reads_lift_nothing_unless_they_failed() {
        let blocks = build(&[
            assistant(&[
                ("c1", "read", json!({"path": "a.rs"})),
                ("c2", "read", json!({"path": "b.rs"})),
            ]),
            result("c1", "read", "fn error() {}\n}", false),
            result("c2", "read", "ENOENT: no such file", true),
        ]);
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
