//! The archive serialization of the PNG frames and its plain-text variant:
//! provider messages become one compact transcript with scope
//! markers, tool results merged into their calls, useless pairs dropped and
//! long texts cut in the middle.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};

use musepi_context_builder::{LlmMessage, resolve_replays};
use musepi_session_model::json::{js_key_order, js_stringify};
use musepi_session_model::{AgentMessage, ContentBlock, ToolCall};
use serde_json::Value;

use crate::SerializeOptions;
use crate::png::data_url::{DataUrlMode, elide_data_urls};
use crate::util::{head_units, js_round, len16, tail_units};

/// Starts a dim ink span (zero-width).
pub const DIM_ON: char = '\u{E}';
/// Ends a dim ink span (zero-width).
pub const DIM_OFF: char = '\u{F}';

/// Scope marker of a user turn.
pub(crate) const SCOPE_USER: &str = "¶user:";
/// Scope marker of assistant reasoning.
pub(crate) const SCOPE_THINK: &str = "¶think:";
/// Scope marker of an assistant reply.
pub(crate) const SCOPE_AI: &str = "¶ai:";
/// Scope marker of a tool call (and its merged result).
pub(crate) const SCOPE_CALL: &str = "¶call:";

/// The call ids whose tool result was flagged `useless`.
///
/// Provider messages do not carry the flag, so it is collected from the
/// session messages before conversion. Errors are never useless: the
/// serializers check `isError` on the result themselves.
pub fn useless_call_ids<'m>(
    messages: impl IntoIterator<Item = &'m AgentMessage>,
) -> BTreeSet<String> {
    messages
        .into_iter()
        .filter_map(AgentMessage::as_tool_result)
        .filter(|r| r.useless == Some(true))
        .map(|r| r.tool_call_id.clone())
        .collect()
}

/// Which transcript [`serialize`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// For the PNG-frame archive: dim tool output when asked, data URLs
    /// elided, existing ink toggles stripped.
    Archive,
    /// For the text-frame archive: like [`Flavor::Archive`] but without dim
    /// toggles, data-URL elision or any cleaning of the raw text, and with
    /// reasoning always included.
    Text,
}

/// Serializes `messages` as the `flavor` of transcript.
///
/// `useless` holds the call ids whose results were flagged useless
/// ([`useless_call_ids`]); a flagged result that is an error is kept.
pub fn serialize(
    flavor: Flavor,
    messages: &[LlmMessage],
    useless: &BTreeSet<String>,
    options: &SerializeOptions,
) -> String {
    let messages = resolve_replays(messages, None);
    Serializer::new(flavor, &messages, useless, options).run(&messages)
}

/// Head/tail truncation (`truncateForArchive`): a text longer
/// than `max` UTF-16 units keeps `round(max × ratio)` units of its head and
/// the rest of `max` from its tail, joined by ` […Nch elided…] ` where N is
/// the length beyond `max`. A surrogate pair at a cut is left out whole.
pub fn truncate_for_archive(text: &str, max: Option<usize>, ratio: f64) -> Cow<'_, str> {
    let Some(max) = max else {
        return Cow::Borrowed(text);
    };
    let len = len16(text);
    if len <= max {
        return Cow::Borrowed(text);
    }
    let ratio = if ratio.is_nan() {
        0.0
    } else {
        ratio.clamp(0.0, 1.0)
    };
    let head = (js_round(max as f64 * ratio) as usize).min(max);
    let tail = max - head;
    let mut out = String::with_capacity(text.len().min(max * 4) + 32);
    out.push_str(head_units(text, head));
    out.push_str(" […");
    out.push_str(&(len - max).to_string());
    out.push_str("ch elided…] ");
    if tail > 0 {
        out.push_str(tail_units(text, tail));
    }
    Cow::Owned(out)
}

/// Removes the ink toggles from raw text so it cannot forge dim spans.
pub(crate) fn strip_ink_toggles(text: &str) -> Cow<'_, str> {
    if text.contains([DIM_ON, DIM_OFF]) {
        Cow::Owned(
            text.chars()
                .filter(|&c| c != DIM_ON && c != DIM_OFF)
                .collect(),
        )
    } else {
        Cow::Borrowed(text)
    }
}

/// The transcript under construction: `(prefix, content)` parts.
#[derive(Default)]
struct Parts {
    parts: Vec<(&'static str, String)>,
}

impl Parts {
    /// Adds a part, appending to the previous one when the prefix repeats.
    fn push(&mut self, prefix: &'static str, content: &str) {
        if let Some((last_prefix, last)) = self.parts.last_mut()
            && *last_prefix == prefix
        {
            if !last.ends_with('\n') && !content.starts_with('\n') {
                last.push('\n');
            }
            last.push_str(content);
            return;
        }
        self.parts.push((prefix, content.to_owned()));
    }

    fn finish(self) -> String {
        let mut out = String::new();
        for (i, (prefix, content)) in self.parts.iter().enumerate() {
            if i > 0 {
                out.push_str("\n\n");
            }
            out.push_str(prefix);
            out.push_str(content);
        }
        out
    }
}

struct Serializer<'a> {
    flavor: Flavor,
    options: &'a SerializeOptions,
    /// Calls whose result is useless (and not an error): both are dropped.
    dropped: HashSet<&'a str>,
    /// Result text by call id.
    results: HashMap<&'a str, String>,
    /// Call ids of every tool call in the window.
    calls: HashSet<&'a str>,
    parts: Parts,
}

impl<'a> Serializer<'a> {
    fn new(
        flavor: Flavor,
        messages: &[&'a LlmMessage],
        useless: &BTreeSet<String>,
        options: &'a SerializeOptions,
    ) -> Self {
        let mut dropped = HashSet::new();
        let mut results = HashMap::new();
        let mut calls = HashSet::new();
        for &message in messages {
            match message {
                LlmMessage::ToolResult {
                    tool_call_id,
                    content,
                    is_error,
                    ..
                } => {
                    if useless.contains(tool_call_id) && !is_error {
                        dropped.insert(tool_call_id.as_str());
                        continue;
                    }
                    let text = ContentBlock::joined_text(content);
                    let index = match flavor {
                        Flavor::Archive => !text.is_empty(),
                        Flavor::Text => !tool_call_id.is_empty(),
                    };
                    if index {
                        results.insert(tool_call_id.as_str(), text);
                    }
                }
                LlmMessage::Assistant { content, .. } => {
                    for block in content {
                        if let ContentBlock::ToolCall(call) = block {
                            calls.insert(call.id.as_str());
                        }
                    }
                }
                LlmMessage::User { .. }
                | LlmMessage::Developer { .. }
                | LlmMessage::ProviderHistory(_) => {}
            }
        }
        Self {
            flavor,
            options,
            dropped,
            results,
            calls,
            parts: Parts::default(),
        }
    }

    fn run(mut self, messages: &[&'a LlmMessage]) -> String {
        for &message in messages {
            match message {
                // Developer (custom) messages are part of what the model saw:
                // archived as user-scope text, as the
                // summarizer serialization reads them. A provider history
                // was resolved into its summary and kept messages; one left
                // in place reads as its summary.
                LlmMessage::User { .. }
                | LlmMessage::Developer { .. }
                | LlmMessage::ProviderHistory(_) => {
                    let text = ContentBlock::joined_text(message.content());
                    if !text.is_empty() {
                        let text = self.clean(&text);
                        self.parts.push(SCOPE_USER, &text);
                    }
                }
                LlmMessage::Assistant { content, .. } => self.assistant(content),
                LlmMessage::ToolResult {
                    tool_call_id,
                    content,
                    ..
                } => {
                    let id = tool_call_id.as_str();
                    if self.dropped.contains(id) || self.calls.contains(id) {
                        // Merged into its call, or its call shows no output.
                        continue;
                    }
                    let block = self.result_block(&ContentBlock::joined_text(content));
                    self.parts.push(SCOPE_CALL, &format!("\n{block}"));
                }
            }
        }
        self.parts.finish()
    }

    fn assistant(&mut self, content: &'a [ContentBlock]) {
        let mut thinking: Vec<&str> = Vec::new();
        let mut text: Vec<&str> = Vec::new();
        for block in content {
            match block {
                ContentBlock::Text { text: t, .. } => {
                    if !t.trim().is_empty() {
                        text.push(t);
                    }
                }
                ContentBlock::Thinking { thinking: t, .. } => {
                    let keep = self.flavor == Flavor::Text || self.options.include_thinking;
                    if keep && !t.trim().is_empty() {
                        thinking.push(t);
                    }
                }
                ContentBlock::ToolCall(call) => {
                    self.flush(&mut thinking, &mut text);
                    if !self.dropped.contains(call.id.as_str()) {
                        let line = self.call_line(call);
                        self.parts.push(SCOPE_CALL, &line);
                    }
                }
                ContentBlock::RedactedThinking { .. }
                | ContentBlock::Image { .. }
                | ContentBlock::Other { .. } => {}
            }
        }
        self.flush(&mut thinking, &mut text);
    }

    fn flush(&mut self, thinking: &mut Vec<&str>, text: &mut Vec<&str>) {
        if !thinking.is_empty() {
            let joined = self.clean(&thinking.join("\n")).into_owned();
            self.parts.push(SCOPE_THINK, &joined);
            thinking.clear();
        }
        if !text.is_empty() {
            let joined = self.clean(&text.join("\n")).into_owned();
            self.parts.push(SCOPE_AI, &joined);
            text.clear();
        }
    }

    /// `name(args)//intent`, plus the merged result block on a second line.
    fn call_line(&self, call: &ToolCall) -> String {
        let ratio = self.options.truncate_head_ratio;
        let mut args = String::new();
        if let Value::Object(map) = call.arguments.value() {
            for (key, value) in js_key_order(map) {
                if key == "intent" {
                    continue;
                }
                if !args.is_empty() {
                    args.push_str(", ");
                }
                args.push_str(key);
                args.push('=');
                let json = js_stringify(value);
                args.push_str(&truncate_for_archive(
                    &json,
                    self.options.tool_arg_max_chars,
                    ratio,
                ));
            }
        }
        let args = truncate_for_archive(&args, self.options.tool_call_max_chars, ratio);
        let intent = call
            .intent
            .as_deref()
            .or_else(|| call.arguments.get("intent").and_then(Value::as_str))
            .map(collapse_whitespace)
            .unwrap_or_default();
        let mut line = String::new();
        line.push_str(&self.clean(&call.name));
        line.push('(');
        line.push_str(&args);
        line.push(')');
        if !intent.is_empty() {
            line.push_str("//");
            line.push_str(&self.clean(&intent));
        }
        if let Some(result) = self.results.get(call.id.as_str()) {
            line.push('\n');
            line.push_str(&self.result_block(result));
        }
        line
    }

    /// `<out>\n…\n</out>` around the cut (and, in the archive, dimmed) body.
    fn result_block(&self, text: &str) -> String {
        let max = self.options.tool_result_max_chars;
        let ratio = self.options.truncate_head_ratio;
        let body = match self.flavor {
            Flavor::Archive => {
                let clean = strip_ink_toggles(text);
                let elided = elide_data_urls(&clean, DataUrlMode::Fresh);
                truncate_for_archive(&elided, max, ratio).into_owned()
            }
            Flavor::Text => truncate_for_archive(text, max, ratio).into_owned(),
        };
        let dim = self.flavor == Flavor::Archive && self.options.dim_tool_results;
        let mut out = String::with_capacity(body.len() + 16);
        out.push_str("<out>\n");
        if dim {
            out.push(DIM_ON);
        }
        out.push_str(&body);
        if dim {
            out.push(DIM_OFF);
        }
        out.push_str("\n</out>");
        out
    }

    /// Raw text as the flavor wants it: toggles stripped in the archive.
    fn clean<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match self.flavor {
            Flavor::Archive => strip_ink_toggles(text),
            Flavor::Text => Cow::Borrowed(text),
        }
    }
}

/// Whitespace runs become single spaces; the ends are trimmed.
fn collapse_whitespace(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split(|c: char| c.is_whitespace() || c == '\u{FEFF}') {
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use musepi_session_model::Text;
    use serde_json::json;

    use super::*;
    use crate::testkit::{assistant, call, result};

    fn user(text: &str) -> LlmMessage {
        LlmMessage::user_text(text)
    }

    fn thinking(text: &str) -> ContentBlock {
        ContentBlock::Thinking {
            thinking: Text::new(text),
            thinking_signature: None,
            redacted: None,
        }
    }

    fn no_dim() -> SerializeOptions {
        SerializeOptions {
            dim_tool_results: false,
            ..SerializeOptions::default()
        }
    }

    fn archive(messages: &[LlmMessage]) -> String {
        serialize(Flavor::Archive, messages, &BTreeSet::new(), &no_dim())
    }

    fn text(messages: &[LlmMessage]) -> String {
        serialize(
            Flavor::Text,
            messages,
            &BTreeSet::new(),
            &SerializeOptions::default(),
        )
    }

    /// Asserts that the text port and the archive both print `messages` as `expected`.
    fn assert_both_serialize(messages: &[LlmMessage], expected: &str) {
        assert_eq!(text(messages), expected, "text");
        assert_eq!(archive(messages), expected, "archive");
    }

    #[test]
    fn tool_result_merges_into_its_call() {
        let messages = [
            assistant(vec![call("c1", "bash", json!({"command": "ls"}))]),
            result("c1", "file-a\nfile-b", false),
        ];
        let expected = "¶call:bash(command=\"ls\")\n<out>\nfile-a\nfile-b\n</out>";
        assert_both_serialize(&messages, expected);
    }

    #[test]
    fn developer_messages_are_archived_as_user_scope_text() {
        let messages = [
            user("fix the build"),
            LlmMessage::Developer {
                content: vec![ContentBlock::text("Reminder: run the tests.")],
            },
            assistant(vec![ContentBlock::text("On it.")]),
        ];
        let expected = "¶user:fix the build\nReminder: run the tests.\n\n¶ai:On it.";
        assert_both_serialize(&messages, expected);
    }

    #[test]
    fn dimmed_results_are_wrapped_in_ink_toggles() {
        let messages = [
            assistant(vec![call("c1", "bash", json!({"command": "ls"}))]),
            result("c1", "a\u{E}b\u{F}", false),
        ];
        let out = serialize(
            Flavor::Archive,
            &messages,
            &BTreeSet::new(),
            &SerializeOptions::default(),
        );
        assert_eq!(
            out,
            "¶call:bash(command=\"ls\")\n<out>\n\u{E}ab\u{F}\n</out>"
        );
    }

    #[test]
    fn useless_pair_is_dropped_and_a_useless_error_is_kept() {
        let messages = [
            assistant(vec![
                call("c1", "bash", json!({"command": "true"})),
                call("c2", "bash", json!({"command": "make"})),
            ]),
            result("c1", "", false),
            result("c2", "CC main.c\nerror: boom", true),
        ];
        let useless: BTreeSet<String> = ["c1".to_owned(), "c2".to_owned()].into();
        for out in [
            serialize(
                Flavor::Text,
                &messages,
                &useless,
                &SerializeOptions::default(),
            ),
            serialize(Flavor::Archive, &messages, &useless, &no_dim()),
        ] {
            assert!(!out.contains("\"true\""), "{out}");
            assert!(out.contains("error: boom"), "{out}");
            assert_eq!(
                out,
                "¶call:bash(command=\"make\")\n<out>\nCC main.c\nerror: boom\n</out>"
            );
        }
    }

    #[test]
    fn orphan_result_becomes_its_own_call_part() {
        let messages = [user("go"), result("gone", "orphan output", false)];
        assert_eq!(
            text(&messages),
            "¶user:go\n\n¶call:\n<out>\norphan output\n</out>"
        );
    }

    #[test]
    fn intent_is_appended_and_left_out_of_the_arguments() {
        let messages = [assistant(vec![call(
            "c1",
            "edit",
            json!({"path": "a.ts", "intent": "  fix   the\nbug ", "oldText": "x"}),
        )])];
        let out = text(&messages);
        assert_eq!(out, "¶call:edit(path=\"a.ts\", oldText=\"x\")//fix the bug");
        assert!(!out.contains("intent="));
        let mut block = call("c2", "edit", json!({"intent": "from args"}));
        if let ContentBlock::ToolCall(c) = &mut block {
            c.intent = Some("from block".into());
        }
        assert_eq!(text(&[assistant(vec![block])]), "¶call:edit()//from block");
    }

    #[test]
    fn head_biased_cap_keeps_the_failing_tail() {
        let body = format!("{}FATAL: assertion failed at end", "ok line\n".repeat(4000));
        let messages = [
            assistant(vec![call("c1", "bash", json!({"command": "npm test"}))]),
            result("c1", &body, true),
        ];
        let out = text(&messages);
        assert!(out.contains("[…"));
        assert!(out.contains("FATAL: assertion failed at end"));
        assert!(out.len() < body.len());
    }

    #[test]
    fn truncation_keeps_head_and_tail_around_the_marker() {
        let input = format!("{}{}", "a".repeat(100), "b".repeat(100));
        let out = truncate_for_archive(&input, Some(100), 0.6);
        assert_eq!(
            out,
            format!("{} […100ch elided…] {}", "a".repeat(60), "b".repeat(40))
        );
        assert_eq!(truncate_for_archive(&input, Some(200), 0.6), input);
        assert_eq!(truncate_for_archive(&input, None, 0.6), input);
        assert_eq!(
            truncate_for_archive(&input, Some(10), 1.5),
            format!("{} […190ch elided…] ", "a".repeat(10))
        );
    }

    #[test]
    fn truncation_never_splits_a_surrogate_pair() {
        // Units: a😀 = 3, cut at head 2 would split the pair: it is left out.
        let input = format!("a😀{}😀b", "x".repeat(20));
        let out = truncate_for_archive(&input, Some(4), 0.5);
        assert_eq!(out, "a […22ch elided…] b");
    }

    #[test]
    fn same_scope_parts_merge_and_thinking_flushes_before_text() {
        let messages = [
            user("first"),
            user("second"),
            assistant(vec![
                thinking("plan"),
                ContentBlock::text("answer"),
                ContentBlock::text("  "),
                call("c1", "read", json!({"path": "x"})),
                ContentBlock::text("after"),
            ]),
            result("c1", "\ncontent", false),
        ];
        assert_eq!(
            text(&messages),
            "¶user:first\nsecond\n\n¶think:plan\n\n¶ai:answer\n\n¶call:read(path=\"x\")\n<out>\n\ncontent\n</out>\n\n¶ai:after"
        );
    }

    #[test]
    fn thinking_is_skipped_when_excluded_but_the_text_port_keeps_it() {
        let messages = [assistant(vec![
            thinking("secret plan"),
            ContentBlock::text("hi"),
        ])];
        let options = SerializeOptions {
            include_thinking: false,
            ..no_dim()
        };
        assert_eq!(
            serialize(Flavor::Archive, &messages, &BTreeSet::new(), &options),
            "¶ai:hi"
        );
        assert_eq!(
            serialize(Flavor::Text, &messages, &BTreeSet::new(), &options),
            "¶think:secret plan\n\n¶ai:hi"
        );
    }

    #[test]
    fn archive_strips_forged_toggles_and_elides_data_urls_but_the_text_port_does_not() {
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ";
        let messages = [
            user("a\u{E}b"),
            assistant(vec![call("c1", "read", json!({"path": "p.png"}))]),
            result("c1", &format!("data:image/png;base64,{png}"), false),
        ];
        let out = archive(&messages);
        assert_eq!(
            out,
            format!(
                "¶user:ab\n\n¶call:read(path=\"p.png\")\n<out>\n[data URL omitted: image/png, {} base64 chars]\n</out>",
                png.len()
            )
        );
        let raw = text(&messages);
        assert!(raw.contains('\u{E}') && raw.contains(png));
    }

    #[test]
    fn long_arguments_are_cut_per_value_and_as_a_whole() {
        let big = "x".repeat(600);
        let messages = [assistant(vec![call(
            "c1",
            "write",
            json!({"content": big}),
        )])];
        let out = text(&messages);
        // JSON adds two quotes: 602 units, cut to 500 (300 head + 200 tail).
        let expected_arg = format!(
            "\"{} […102ch elided…] {}\"",
            "x".repeat(299),
            "x".repeat(199)
        );
        assert_eq!(out, format!("¶call:write(content={expected_arg})"));
        let options = SerializeOptions {
            tool_call_max_chars: Some(20),
            ..SerializeOptions::default()
        };
        let cut = serialize(Flavor::Text, &messages, &BTreeSet::new(), &options);
        assert_eq!(cut, "¶call:write(content=\"xxx […506ch elided…] xxxxxxx\")");
    }

    #[test]
    fn empty_results_merge_in_the_text_port_only() {
        let messages = [
            assistant(vec![call("c1", "bash", json!({"command": "true"}))]),
            result("c1", "", false),
        ];
        assert_eq!(
            text(&messages),
            "¶call:bash(command=\"true\")\n<out>\n\n</out>"
        );
        assert_eq!(archive(&messages), "¶call:bash(command=\"true\")");
    }

    #[test]
    fn useless_ids_come_from_the_session_messages() {
        use musepi_session_model::ToolResultMessage;
        let messages = [
            AgentMessage::ToolResult(ToolResultMessage {
                tool_call_id: "a".into(),
                useless: Some(true),
                ..ToolResultMessage::default()
            }),
            AgentMessage::ToolResult(ToolResultMessage {
                tool_call_id: "b".into(),
                ..ToolResultMessage::default()
            }),
        ];
        assert_eq!(
            useless_call_ids(&messages),
            BTreeSet::from(["a".to_owned()])
        );
    }
}
