//! Verified LLM summaries: what a model's summary leaves out of the
//! history's ledger is appended to it verbatim.
//!
//! An LLM summary keeps what the model chose to keep. The ledger of the
//! summarized history is what must not depend on that choice: every user
//! sentence that states a constraint (must, never, always, don't, do
//! not, should, only, avoid, required) or holds a number of two digits or
//! more (a number after step, turn or line counts nothing), every path a
//! tool call names, every command it ran (its first line, a long one by
//! its head of [`COMMAND_HEAD`] characters) and every line of tool output
//! that reads as an error (at most [`ERRORS_PER_OUTPUT`] of each output,
//! each by its head of [`LINE_HEAD`] characters); and, when the history
//! continues an earlier summary, the items that summary had appended the
//! same way. After the summary is written, the items it does not contain
//! (its file list included) are appended under [`HEADING`], one line
//! each, in that order of kinds and in history order, within a bound of
//! [`Ledger::bound_chars`]: a quarter of the history summary's output
//! limit, four characters to a token (3,276 tokens at the default reserve
//! of 16,384). What the bound leaves out is counted on the last line.

use std::collections::HashSet;
use std::fmt::Write as _;

use musepi_context_builder::{ContextMessage, ConvertOptions, LlmMessage, convert_to_llm};
use musepi_session_model::ContentBlock;
use serde_json::Value;

/// The heading of the items a summary did not contain.
pub const HEADING: &str = "## Verbatim from the session (not in the summary above)";
/// The head of a command kept, in characters.
pub const COMMAND_HEAD: usize = 200;
/// The head of an error line kept, in characters.
pub const LINE_HEAD: usize = 200;
/// Error lines taken from one tool output at most.
pub const ERRORS_PER_OUTPUT: usize = 3;
/// The longest user sentence taken whole (a longer one is left to the
/// summary: it could only be appended cut, not verbatim).
const SENTENCE_MAX: usize = 600;

/// Argument keys that name a file.
const PATH_KEYS: [&str; 4] = ["path", "file_path", "filePath", "file"];
/// Words that make a user sentence a constraint (whole words, lowercase).
const CONSTRAINT_WORDS: [&str; 8] = [
    "must", "never", "always", "don't", "should", "only", "avoid", "required",
];
/// Words after which a number counts steps, not a value.
const COUNTERS: [&str; 8] = [
    "step", "turn", "line", "lines", "page", "part", "phase", "round",
];
/// Words that mark an error line (lowercase, at a word start).
const ERROR_WORDS: [&str; 8] = [
    "error",
    "panic",
    "failed",
    "failure",
    "fatal",
    "exception",
    "traceback",
    "abort",
];

/// The kinds of ledger item, in the order they are appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Carried from an earlier summary's appended items.
    Earlier,
    /// A user sentence with a constraint or a number.
    User,
    /// A command a tool call ran.
    Command,
    /// A path a tool call names.
    Path,
    /// A line of tool output that reads as an error.
    Error,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Self::Earlier => "",
            Self::User => "user: ",
            Self::Command => "command: ",
            Self::Path => "path: ",
            Self::Error => "error: ",
        }
    }
}

/// One item of the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// What it is.
    pub kind: Kind,
    /// Its text, verbatim (whitespace folded in user sentences).
    pub text: String,
}

/// The ledger of a summarized history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ledger {
    items: Vec<Item>,
}

impl Ledger {
    /// The ledger of the messages of `parts` (the summarized messages and
    /// a split turn's prefix), continuing `previous` (an earlier summary,
    /// whose appended items are carried).
    pub fn of(parts: &[&[ContextMessage<'_>]], previous: Option<&str>) -> Self {
        let mut items = Vec::new();
        if let Some(previous) = previous {
            items.extend(carried(previous));
        }
        for messages in parts {
            for message in &convert_to_llm(messages, &ConvertOptions::for_summary()) {
                read(message, &mut items);
            }
        }
        // An item once, the first time (an earlier summary's first).
        let mut seen = HashSet::new();
        items.retain(|item: &Item| seen.insert(item.text.clone()));
        items.sort_by_key(|item| item.kind);
        Self { items }
    }

    /// The items, in the order they would be appended.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// The bound on what is appended, in characters: a quarter of the
    /// history summary's output limit of `max_tokens`, four characters to
    /// a token.
    pub fn bound_chars(max_tokens: u32) -> usize {
        max_tokens as usize
    }

    /// `summary` with the items it does not contain verbatim appended under
    /// [`HEADING`], within `bound` characters; `summary` itself when it
    /// contains them all. (The `<files>` list that follows a summary
    /// groups paths by folder, so a path is appended unless the summary
    /// itself names it.)
    pub fn complete(&self, summary: &str, bound: usize) -> String {
        self.complete_counted(summary, bound).0
    }

    /// [`Ledger::complete`], with how many items the summary held and how
    /// many were appended.
    pub fn complete_counted(&self, summary: &str, bound: usize) -> (String, Verified) {
        let summary = without_appended(summary);
        let summary = summary.as_str();
        let missing: Vec<&Item> = self
            .items
            .iter()
            .filter(|item| !summary.contains(&item.text))
            .collect();
        let mut verified = Verified {
            items: self.items.len(),
            in_summary: self.items.len() - missing.len(),
            appended: 0,
            left_out: 0,
        };
        if missing.is_empty() {
            return (summary.to_owned(), verified);
        }
        let mut out = format!("{}\n\n{HEADING}\n", summary.trim_end());
        let mut used = 0usize;
        let mut shown = 0usize;
        for item in &missing {
            let line = format!("- {}{}\n", item.kind.label(), item.text);
            let len = line.chars().count();
            if used + len > bound {
                break;
            }
            out.push_str(&line);
            used += len;
            shown += 1;
        }
        if shown < missing.len() {
            let _ = writeln!(
                out,
                "- […{} more not shown: the session file holds them…]",
                missing.len() - shown
            );
        }
        out.truncate(out.trim_end().len());
        verified.appended = shown;
        verified.left_out = missing.len() - shown;
        (out, verified)
    }
}

/// What verifying a summary found: of the ledger's items, how many the
/// model's summary held verbatim, how many were appended, and how many
/// the bound left out (counted on the appended section's last line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Verified {
    /// Items in the ledger of the summarized history.
    pub items: usize,
    /// Items the model's summary held verbatim.
    pub in_summary: usize,
    /// Items appended under [`HEADING`].
    pub appended: usize,
    /// Items the bound left out.
    pub left_out: usize,
}

/// `summary` without a section under [`HEADING`] (its heading and the
/// `- ` lines after it) that a model copied from the previous summary:
/// the items are appended again, as they are now.
fn without_appended(summary: &str) -> String {
    let Some(at) = summary.find(HEADING) else {
        return summary.to_owned();
    };
    let mut end = at + HEADING.len();
    if summary[end..].starts_with('\n') {
        end += 1;
    }
    while summary[end..].starts_with("- ") {
        end += summary[end..]
            .find('\n')
            .map_or(summary.len() - end, |n| n + 1);
    }
    let (before, after) = (summary[..at].trim_end(), summary[end..].trim());
    if after.is_empty() {
        before.to_owned()
    } else {
        format!("{before}\n\n{after}")
    }
}

/// The items an earlier summary appended under [`HEADING`].
fn carried(previous: &str) -> Vec<Item> {
    let Some(at) = previous.find(&format!("{HEADING}\n")) else {
        return Vec::new();
    };
    previous[at + HEADING.len() + 1..]
        .lines()
        .take_while(|l| l.starts_with("- "))
        .map(|l| &l[2..])
        .filter(|l| !l.starts_with("[…"))
        .map(|l| {
            let text = [Kind::User, Kind::Command, Kind::Path, Kind::Error]
                .iter()
                .find_map(|k| l.strip_prefix(k.label()))
                .unwrap_or(l);
            Item {
                kind: Kind::Earlier,
                text: text.to_owned(),
            }
        })
        .collect()
}

fn read(message: &LlmMessage, items: &mut Vec<Item>) {
    match message {
        LlmMessage::ProviderHistory(h) => {
            for m in h.fallback() {
                read(m, items);
            }
        }
        LlmMessage::User { content } => {
            let text = ContentBlock::joined_text(content);
            for sentence in sentences(&text) {
                if sentence.chars().count() <= SENTENCE_MAX
                    && (states_constraint(&sentence) || holds_value(&sentence))
                {
                    items.push(Item {
                        kind: Kind::User,
                        text: sentence,
                    });
                }
            }
        }
        LlmMessage::Developer { .. } => {}
        LlmMessage::Assistant { content, .. } => {
            for block in content {
                let ContentBlock::ToolCall(call) = block else {
                    continue;
                };
                let args = call.arguments.value();
                for key in PATH_KEYS {
                    if let Some(path) = args.get(key).and_then(Value::as_str)
                        && !path.trim().is_empty()
                    {
                        items.push(Item {
                            kind: Kind::Path,
                            text: path.to_owned(),
                        });
                    }
                }
                if let Some(command) = args.get("command").and_then(Value::as_str) {
                    let first = command.lines().next().unwrap_or_default().trim();
                    if !first.is_empty() {
                        items.push(Item {
                            kind: Kind::Command,
                            text: head(first, COMMAND_HEAD).to_owned(),
                        });
                    }
                }
            }
        }
        LlmMessage::ToolResult {
            content, is_error, ..
        } => {
            let text = ContentBlock::joined_text(content);
            let mut taken = 0usize;
            for line in text.lines().map(str::trim) {
                if taken == ERRORS_PER_OUTPUT {
                    break;
                }
                let first_of_failure = *is_error && taken == 0 && !line.is_empty();
                if first_of_failure || is_error_line(line) {
                    items.push(Item {
                        kind: Kind::Error,
                        text: head(line, LINE_HEAD).to_owned(),
                    });
                    taken += 1;
                }
            }
        }
    }
}

/// The longest head of `text` of at most `max` characters.
fn head(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// The sentences and lines of `text`, whitespace folded.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut start = 0usize;
        let bytes = line.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            let ends = matches!(b, b'.' | b'!' | b'?')
                && bytes.get(i + 1).is_some_and(u8::is_ascii_whitespace);
            if ends {
                out.push(fold(&line[start..=i]));
                start = i + 1;
            }
        }
        out.push(fold(&line[start..]));
    }
    out.retain(|s| !s.is_empty());
    out
}

fn fold(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '.'))
        .map(|w| {
            w.trim_matches(|c: char| c == '\'' || c == '.')
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

fn states_constraint(sentence: &str) -> bool {
    let words = words(sentence);
    words.iter().any(|w| CONSTRAINT_WORDS.contains(&w.as_str()))
        || words.windows(2).any(|p| p[0] == "do" && p[1] == "not")
}

fn holds_value(sentence: &str) -> bool {
    let words = words(sentence);
    words.iter().enumerate().any(|(i, w)| {
        let digits = w.bytes().filter(u8::is_ascii_digit).count();
        let number = w.bytes().all(|b| b.is_ascii_digit() || b == b'.');
        let counted = i > 0 && COUNTERS.contains(&words[i - 1].as_str());
        number && digits >= 2 && !counted
    })
}

fn is_error_line(line: &str) -> bool {
    if line.is_empty() || line.chars().count() > 2 * LINE_HEAD {
        return false;
    }
    let lower = line.to_lowercase();
    lower
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| ERROR_WORDS.iter().any(|e| w.starts_with(e)))
        && !lower.contains("0 failed")
        && !lower.contains("no error")
}

#[cfg(test)]
mod tests {
    use musepi_session_model::{JsonValue, Text, ToolCall};
    use serde_json::json;

    use super::*;

    fn items_of(messages: &[LlmMessage]) -> Vec<(Kind, String)> {
        let mut items = Vec::new();
        for m in messages {
            read(m, &mut items);
        }
        items.into_iter().map(|i| (i.kind, i.text)).collect()
    }

    fn call(name: &str, args: Value) -> LlmMessage {
        LlmMessage::Assistant {
            content: vec![ContentBlock::ToolCall(ToolCall {
                id: "c1".into(),
                name: Text::new(name),
                arguments: JsonValue::new(args),
                intent: None,
            })],
            provider: None,
            model: None,
            stop_reason: None,
        }
    }

    fn output(text: &str, is_error: bool) -> LlmMessage {
        LlmMessage::ToolResult {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            content: vec![ContentBlock::text(text)],
            is_error,
        }
    }

    #[test]
    fn the_ledger_holds_user_rules_and_values_paths_commands_and_errors() {
        let items = items_of(&[
            LlmMessage::user_text(
                "Step 12: look around.  Never   touch vendor/. The pool holds 64 workers. Thanks!",
            ),
            call("read", json!({"path": "src/pool.rs"})),
            call("bash", json!({"command": "cargo test -p pool\necho done"})),
            output(
                "running 3 tests\nerror[E0502]: cannot borrow `x`\ntest result: ok. 3 passed; 0 failed",
                false,
            ),
            output("permission denied", true),
        ]);
        assert_eq!(
            items,
            [
                (Kind::User, "Never touch vendor/.".to_owned()),
                (Kind::User, "The pool holds 64 workers.".to_owned()),
                (Kind::Path, "src/pool.rs".to_owned()),
                (Kind::Command, "cargo test -p pool".to_owned()),
                (Kind::Error, "error[E0502]: cannot borrow `x`".to_owned()),
                (Kind::Error, "permission denied".to_owned()),
            ]
        );
    }

    fn ledger(items: &[(Kind, &str)]) -> Ledger {
        Ledger {
            items: items
                .iter()
                .map(|(kind, text)| Item {
                    kind: *kind,
                    text: (*text).to_owned(),
                })
                .collect(),
        }
    }

    #[test]
    fn only_what_the_summary_misses_is_appended_under_the_heading() {
        let l = ledger(&[
            (Kind::User, "Never touch vendor/."),
            (Kind::Path, "src/pool.rs"),
            (Kind::Command, "cargo test -p pool"),
        ]);
        let summary = "## Goal\nFix the pool in src/pool.rs.";
        assert_eq!(
            l.complete(summary, 10_000),
            format!(
                "{summary}\n\n{HEADING}\n- user: Never touch vendor/.\n- command: cargo test -p pool"
            )
        );
        let whole = "Never touch vendor/. Ran cargo test -p pool on src/pool.rs.";
        assert_eq!(l.complete(whole, 10_000), whole);
        // What was found is counted.
        let count = |summary, bound| l.complete_counted(summary, bound).1;
        let found = |items, in_summary, appended, left_out| Verified {
            items,
            in_summary,
            appended,
            left_out,
        };
        assert_eq!(count(summary, 10_000), found(3, 1, 2, 0));
        assert_eq!(count(whole, 10_000), found(3, 3, 0, 0));
        assert_eq!(
            count(summary, 30),
            found(3, 1, 1, 1),
            "the bound left one out"
        );
    }

    #[test]
    fn the_bound_holds_and_counts_what_it_left_out() {
        let texts: Vec<String> = (0..50).map(|i| format!("crates/c{i}/src/lib.rs")).collect();
        let items: Vec<(Kind, &str)> = texts.iter().map(|t| (Kind::Path, t.as_str())).collect();
        let out = ledger(&items).complete("S", 200);
        let appended = &out[out.find(HEADING).map_or(0, |a| a + HEADING.len() + 1)..];
        let shown = appended
            .lines()
            .filter(|l| l.starts_with("- path: "))
            .count();
        assert!(shown > 0 && shown < 50, "{out}");
        let listed: usize = appended
            .lines()
            .filter(|l| l.starts_with("- path: "))
            .map(|l| l.chars().count() + 1)
            .sum();
        assert!(listed <= 200, "{listed}");
        assert!(out.ends_with(&format!(
            "- […{} more not shown: the session file holds them…]",
            50 - shown
        )));
    }

    #[test]
    fn an_earlier_summary_s_items_are_carried_and_a_copied_section_replaced() {
        let previous =
            format!("## Goal\nG\n\n{HEADING}\n- user: Never touch vendor/.\n- path: a.rs");
        let carried = carried(&previous);
        assert_eq!(
            carried.iter().map(|i| i.text.as_str()).collect::<Vec<_>>(),
            ["Never touch vendor/.", "a.rs"]
        );
        // A model that copies the section gets it once, as it is now.
        let l = ledger(&[(Kind::Earlier, "a.rs"), (Kind::Path, "b.rs")]);
        let copied = format!("## Goal\nG\n\n{HEADING}\n- path: a.rs\n\n## Next\nN");
        assert_eq!(
            l.complete(&copied, 1_000),
            format!("## Goal\nG\n\n## Next\nN\n\n{HEADING}\n- a.rs\n- path: b.rs")
        );
    }
}
