//! Tool calls as ledger lines, `name(args)`, written densely: a path
//! already shown whole is shown again by its shortest tail that no other
//! path shown so far ends with (`…/lib.rs`), and a command already run in
//! an earlier turn is a reference to that turn (`bash(=#12)`, with the
//! head of its arguments when that turn made several such calls). A call
//! that names a file keeps naming it: the file's name says more than a
//! reference. Each line says which paths it shows whole, which it names by
//! their tails and which turn it refers to, so that the archive can write
//! it out whole where what it refers to is not shown.

use std::collections::{HashMap, HashSet};

use musepi_session_model::ToolCall;
use musepi_session_model::json::{js_key_order, js_stringify};
use serde_json::Value;

use super::blocks::{CallNames, CallRefs, Limits};
use super::text::shorten_head;
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
pub(crate) const READ_TOOLS: &[&str] =
    &["read", "read_file", "readfile", "view", "cat", "open_file"];
/// Tools that change files: their output only confirms the change.
pub(crate) const WRITE_TOOLS: &[&str] = &[
    "edit",
    "write",
    "multiedit",
    "multi_edit",
    "str_replace",
    "apply_patch",
    "write_file",
    "edit_file",
];

/// What a shortened form must save to be used instead of the whole text:
/// below this, the whole text reads better.
const MIN_SAVING: usize = 8;

/// A call as the ledger prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallLine {
    /// The line printed.
    pub text: String,
    /// Whether an argument was cut (the reading guide counts it).
    pub shortened: bool,
    /// What it shows and refers to; written out, it is its key.
    pub refs: CallRefs,
}

/// The calls and paths the ledger has shown so far.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    /// Paths shown whole, by their last component.
    paths: HashMap<String, Vec<String>>,
    shown: HashSet<String>,
    /// The key of each call shown in full, and the turn it was shown in.
    first: HashMap<String, u32>,
    /// The calls shown in full in a turn: tool name, key and arguments
    /// as shown.
    in_turn: HashMap<u32, Vec<(String, String, String)>>,
}

impl Calls {
    /// The ledger line of `call` in user turn `turn`, remembering what it
    /// shows for the calls after it.
    pub(crate) fn line(&mut self, call: &ToolCall, limits: &Limits, turn: u32) -> CallLine {
        let (key, _, shortened) = format_call(call, limits, &mut |_| None);
        let mut names_path = false;
        let (mut shows, mut tails) = (Vec::new(), Vec::new());
        let (text, args, _) = format_call(call, limits, &mut |path| {
            names_path = true;
            let tail = self.tail(path);
            match tail {
                Some(_) => tails.push(path.to_owned()),
                None => shows.push(path.to_owned()),
            }
            tail
        });
        for path in &shows {
            self.remember_path(path.clone());
        }
        let refers = !names_path || has_command(call);
        if let Some((reference, first)) = refers
            .then(|| self.reference(&call.name, &key, turn))
            .flatten()
        {
            return CallLine {
                text: reference,
                shortened,
                refs: CallRefs {
                    tool: call.name.to_string(),
                    whole: key.clone(),
                    key,
                    names: CallNames::Reference(first),
                },
            };
        }
        if !self.first.contains_key(&key) {
            self.first.insert(key.clone(), turn);
            self.in_turn
                .entry(turn)
                .or_default()
                .push((call.name.to_string(), key.clone(), args));
        }
        CallLine {
            text,
            shortened,
            refs: CallRefs {
                tool: call.name.to_string(),
                whole: key.clone(),
                key,
                names: CallNames::Paths { shows, tails },
            },
        }
    }

    fn remember_path(&mut self, path: String) {
        if self.shown.insert(path.clone()) {
            let name = last_component(&path).to_owned();
            self.paths.entry(name).or_default().push(path);
        }
    }

    /// `…/tail` for a path shown whole before: the fewest trailing
    /// components that no other path shown so far ends with.
    fn tail(&self, path: &str) -> Option<String> {
        if !self.shown.contains(path) || path.contains("://") {
            return None;
        }
        let same_name = self.paths.get(last_component(path))?;
        let cuts = path
            .char_indices()
            .rev()
            .filter(|&(i, c)| c == '/' && i + 1 < path.len())
            .map(|(i, _)| i + 1);
        for cut in cuts {
            let tail = &path[cut..];
            let clash = same_name
                .iter()
                .any(|p| p != path && (p == tail || p.ends_with(&format!("/{tail}"))));
            if !clash {
                let short = format!("…/{tail}");
                return (len16(&short) + MIN_SAVING <= len16(path)).then_some(short);
            }
        }
        None
    }

    /// `name(=#N)` for a call shown in full in an earlier turn N, or
    /// `name(HEAD… =#N)` when turn N showed several calls of that tool
    /// (HEAD the shortest head of its arguments no other has); with N.
    fn reference(&self, name: &str, key: &str, turn: u32) -> Option<(String, u32)> {
        let &first = self.first.get(key)?;
        if first == 0 || first == turn {
            return None;
        }
        let calls = self.in_turn.get(&first)?;
        let (_, _, args) = calls.iter().find(|(_, k, _)| k == key)?;
        let others: Vec<&str> = calls
            .iter()
            .filter(|(tool, k, _)| tool == name && k != key)
            .map(|(_, _, a)| a.as_str())
            .collect();
        let text = if others.is_empty() {
            format!("{name}(=#{first})")
        } else {
            let head = distinct_head(args, &others)?;
            format!("{name}({head}… =#{first})")
        };
        (len16(&text) + MIN_SAVING <= len16(key)).then_some((text, first))
    }
}

/// The shortest head of `args`, ending at whitespace, that none of
/// `others` starts with; `None` when only the whole of it would do.
fn distinct_head<'a>(args: &'a str, others: &[&str]) -> Option<&'a str> {
    let ends = args
        .char_indices()
        .filter(|&(_, c)| c.is_whitespace())
        .map(|(i, _)| i);
    for end in ends {
        let head = args[..end].trim_end();
        if head.is_empty() {
            continue;
        }
        if !others.iter().any(|o| o.starts_with(head)) {
            return Some(head);
        }
    }
    None
}

/// Programs whose output running them again on the same files gives
/// back: searches, listings, views and counts.
const REPRODUCIBLE: &[&str] = &[
    "grep", "rg", "ag", "find", "fd", "ls", "tree", "cat", "head", "tail", "wc", "sed", "awk",
    "stat", "file", "du", "pwd", "which", "echo",
];
/// `git` subcommands that only read.
const GIT_READS: &[&str] = &["log", "show", "diff", "status", "grep", "blame", "branch"];

/// Whether `call` runs a command whose output is reproducible: a search,
/// listing or view of files (`grep`, `find`, `ls`, `sed -n`, `git log`, …),
/// after any `cd DIR &&`, whatever it is piped into. Its last line is the
/// ledger's only when the budget has room: running it again gives it back.
pub(crate) fn reproducible(call: &ToolCall) -> bool {
    let Some(command) = COMMAND_KEYS
        .iter()
        .find_map(|k| call.arguments.get(k).and_then(Value::as_str))
    else {
        return false;
    };
    let mut rest = command.trim();
    // `cd DIR && …`, `cd DIR; …`: the program is what follows.
    while let Some(after) = rest.strip_prefix("cd ") {
        let Some(at) = after.find("&&").or_else(|| after.find(';')) else {
            return false;
        };
        rest = after[at..].trim_start_matches(['&', ';']).trim_start();
    }
    let first = rest
        .split(['|', ';', '&', '>', '\n'])
        .next()
        .unwrap_or_default();
    let mut words = first.split_whitespace();
    match words.next() {
        Some("git") => {
            // The subcommand, after options (`-C DIR` and `-c KEY=V` take a value).
            while let Some(w) = words.next() {
                if w == "-C" || w == "-c" {
                    words.next();
                } else if !w.starts_with('-') {
                    return GIT_READS.contains(&w);
                }
            }
            false
        }
        Some("sed") => !first.split_whitespace().any(|w| w.starts_with("-i")),
        Some(program) => REPRODUCIBLE.contains(&program) && !first.contains(" -delete"),
        None => false,
    }
}

fn has_command(call: &ToolCall) -> bool {
    COMMAND_KEYS
        .iter()
        .any(|k| call.arguments.get(k).is_some_and(Value::is_string))
}

fn last_component(path: &str) -> &str {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(path)
}

/// `name(key=value, …)//intent`: paths whole (or as `tail` gives them),
/// the head of a command, short values as they are and long ones as `…`;
/// the line, its argument list, and whether anything was cut.
fn format_call(
    call: &ToolCall,
    limits: &Limits,
    tail: &mut dyn FnMut(&str) -> Option<String>,
) -> (String, String, bool) {
    let mut shortened = false;
    let mut args: Vec<String> = Vec::new();
    // A tool that changes files shows where: the content is in the file.
    let writes = WRITE_TOOLS.contains(&call.name.to_ascii_lowercase().as_str());
    if let Value::Object(map) = call.arguments.value() {
        for (key, value) in js_key_order(map) {
            let path_key = PATH_KEYS.contains(&key.as_str());
            let command_key = COMMAND_KEYS.contains(&key.as_str());
            if key == "intent" || (writes && !path_key) {
                continue;
            }
            let max = if path_key {
                limits.path_chars
            } else if command_key {
                limits.command_chars
            } else {
                limits.arg_chars
            };
            let raw = match value {
                Value::String(s) => s.clone(),
                other => js_stringify(other),
            };
            let shown = if !path_key && !command_key && len16(&raw) > max {
                shortened = true;
                "…".to_owned()
            } else if command_key && len16(&raw) > max {
                // A command keeps its head exactly as long as promised.
                shortened = true;
                format!("{}…", head_units(&raw, max))
            } else {
                let (head, cut) = shorten_head(&raw, max);
                shortened |= cut;
                match value {
                    Value::String(s) if path_key && !cut => tail(s).unwrap_or(head),
                    _ => head,
                }
            };
            // The path or command that comes first goes without its name.
            if (path_key || command_key) && args.is_empty() {
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
    let args = args.join(", ");
    let mut line = format!("{}({args})", call.name);
    if !intent.is_empty() {
        let (intent, cut) = shorten_head(&intent, limits.arg_chars * 2);
        shortened |= cut;
        line.push_str("//");
        line.push_str(&intent);
    }
    (line, args, shortened)
}

/// The line of `call` on its own, every path whole (for tests).
#[cfg(test)]
pub(crate) fn call_line(call: &ToolCall, limits: &Limits) -> (String, bool) {
    let (line, _, cut) = format_call(call, limits, &mut |_| None);
    (line, cut)
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
    fn searches_listings_and_views_are_reproducible_and_changes_are_not() {
        let bash = |command: &str| reproducible(&tool_call("bash", json!({"command": command})));
        for command in [
            "grep -rn borderColor packages/tui/src",
            "cd packages/coding-agent && find src -name '*.ts' | head -20",
            "ls -la crates",
            "sed -n 10,20p src/lib.rs",
            "git log --oneline -5",
            "git -C repo status",
            "wc -l src/*.rs",
        ] {
            assert!(bash(command), "{command}");
        }
        for command in [
            "cargo test -p journal",
            "sed -i 's/a/b/' src/lib.rs",
            "find . -name '*.tmp' -delete",
            "git commit -m wip",
            "cd packages",
            "npm run build",
        ] {
            assert!(!bash(command), "{command}");
        }
        assert!(!reproducible(&tool_call("read", json!({"path": "a.rs"}))));
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

    fn lines(calls: &[(&str, Value, u32)]) -> Vec<String> {
        let mut memory = Calls::default();
        calls
            .iter()
            .map(|(name, args, turn)| {
                memory
                    .line(&tool_call(name, args.clone()), &LEVELS[0], *turn)
                    .text
            })
            .collect()
    }

    #[test]
    fn a_path_shown_before_is_shown_by_the_tail_that_tells_it_apart() {
        let texts = lines(&[
            (
                "read",
                json!({"path": "packages/agent/src/theme/theme.ts"}),
                1,
            ),
            (
                "edit",
                json!({"path": "packages/agent/src/theme/theme.ts"}),
                1,
            ),
            ("read", json!({"path": "packages/tui/src/theme.ts"}), 1),
            (
                "edit",
                json!({"path": "packages/agent/src/theme/theme.ts"}),
                1,
            ),
            (
                "read",
                json!({"path": "packages/tui/src/theme.ts", "offset": 5}),
                1,
            ),
            ("read", json!({"path": "src/a.rs"}), 1),
            ("read", json!({"path": "src/a.rs", "offset": 5}), 1),
        ]);
        assert_eq!(
            texts,
            [
                "read(packages/agent/src/theme/theme.ts)",
                "edit(…/theme.ts)",
                "read(packages/tui/src/theme.ts)",
                "edit(…/theme/theme.ts)",
                "read(…/src/theme.ts, offset=5)",
                // Too short to gain from a tail.
                "read(src/a.rs)",
                "read(src/a.rs, offset=5)",
            ]
        );
    }

    #[test]
    fn a_call_of_an_earlier_turn_refers_to_it() {
        let build = json!({"command": "cd packages/agent && npm run build 2>&1 | tail -3"});
        let check = json!({"command": "cd packages/agent && npm run check 2>&1 | tail -3"});
        let texts = lines(&[
            ("bash", build.clone(), 2),
            ("bash", build.clone(), 2),
            ("bash", build.clone(), 3),
            ("bash", check.clone(), 4),
            ("bash", build.clone(), 4),
            ("bash", build.clone(), 5),
            ("bash", check.clone(), 6),
            ("bash", json!({"command": "ls"}), 6),
            ("bash", json!({"command": "ls"}), 7),
            (
                "edit",
                json!({"path": "packages/agent/src/theme/theme.ts"}),
                8,
            ),
            (
                "edit",
                json!({"path": "packages/agent/src/theme/theme.ts"}),
                9,
            ),
        ]);
        assert_eq!(
            texts,
            [
                "bash(cd packages/agent && npm run build 2>&1 | tail -3)",
                // The same turn: printed again (a repeat in a row is
                // counted where the ledger is built).
                "bash(cd packages/agent && npm run build 2>&1 | tail -3)",
                "bash(=#2)",
                "bash(cd packages/agent && npm run check 2>&1 | tail -3)",
                "bash(=#2)",
                "bash(=#2)",
                "bash(=#4)",
                "bash(ls)",
                // Too short to gain from a reference.
                "bash(ls)",
                "edit(packages/agent/src/theme/theme.ts)",
                // A file is named, not referred to.
                "edit(…/theme.ts)",
            ]
        );
        let texts = lines(&[
            ("bash", build.clone(), 1),
            ("bash", check.clone(), 1),
            ("bash", check, 2),
            ("bash", build, 2),
        ]);
        assert_eq!(
            texts[2..],
            [
                "bash(cd packages/agent && npm run check… =#1)",
                "bash(cd packages/agent && npm run build… =#1)"
            ]
        );
    }
}
