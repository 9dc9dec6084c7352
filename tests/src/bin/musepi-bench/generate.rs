//! Deterministic synthetic sessions: one long tool-heavy path of user
//! prompts, assistant turns with thinking, text and read/edit/bash tool
//! calls, large tool results, a compaction every few megabytes, and a few
//! abandoned branches with branch summaries. The text is generated filler.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use musepi_session_model::time::format_iso;
use serde_json::{Value, json};

use crate::BoxError;
use crate::rng::Rng;

/// Bumped whenever the output changes, so cached files are regenerated.
pub(crate) const VERSION: &str = "1";

const WORDS: &[&str] = &[
    "the",
    "session",
    "parser",
    "returns",
    "a",
    "value",
    "when",
    "token",
    "budget",
    "is",
    "exceeded",
    "and",
    "then",
    "we",
    "compact",
    "context",
    "into",
    "summary",
    "file",
    "path",
    "build",
    "test",
    "fails",
    "because",
    "config",
    "option",
    "missing",
    "update",
    "handler",
    "request",
    "response",
    "stream",
    "error",
    "retry",
    "cache",
    "entry",
    "index",
    "tree",
    "branch",
    "leaf",
    "message",
    "tool",
    "result",
    "call",
    "read",
    "write",
    "edit",
    "bash",
    "function",
    "struct",
    "module",
    "crate",
    "import",
    "export",
    "async",
    "await",
    "promise",
    "vector",
    "map",
    "string",
    "number",
    "field",
    "check",
    "fix",
    "refactor",
    "rename",
    "Größe",
    "naïve",
    "日本語",
    "données",
    "😀",
    "ok",
    "so",
    "now",
    "next",
    "also",
    "it",
];

const IDENTS: &[&str] = &[
    "session",
    "entry",
    "parent_id",
    "leaf",
    "tokens",
    "budget",
    "summary",
    "config",
    "path",
    "buffer",
    "reader",
    "writer",
    "index",
    "cursor",
    "result",
    "value",
    "node",
    "children",
];

const DIRS: &[&str] = &[
    "src",
    "src/core",
    "src/session",
    "packages/agent/src",
    "crates/cli/src",
    "tests",
    "app/components",
    "lib/util",
];

const COMMANDS: &[&str] = &[
    "cargo test --workspace",
    "npm run build",
    "git status --short",
    "rg -n \"fn compact\" src",
    "ls -la src/core",
    "cargo clippy -- -D warnings",
];

/// Writes the session to `out`; returns a one-line summary.
pub(crate) fn generate(out: &Path, target_bytes: u64, seed: u64) -> Result<String, BoxError> {
    generate_with(out, target_bytes, seed, true)
}

/// [`generate`], with the compaction entries left out when `compactions`
/// is false: one history with nothing compacted yet, as the scaling case
/// compacts it.
pub(crate) fn generate_with(
    out: &Path,
    target_bytes: u64,
    seed: u64,
    compactions: bool,
) -> Result<String, BoxError> {
    let mut g = Gen {
        rng: Rng::new(seed),
        out: BufWriter::with_capacity(1 << 20, File::create(out)?),
        bytes: 0,
        lines: 0,
        now: 1_748_736_000_000, // 2025-06-01T00:00:00.000Z
        taken: HashSet::new(),
        path: Vec::new(),
        files: Vec::new(),
        call: 0,
    };
    g.header()?;
    g.entry(
        "model_change",
        json!({"provider": "anthropic", "modelId": "claude-sonnet-4-5"}),
    )?;
    g.entry("thinking_level_change", json!({"thinkingLevel": "medium"}))?;
    let compaction_every = 8_000_000u64.min(target_bytes / 3).max(1);
    let branch_every = (target_bytes / 4).max(1);
    let mut next_compaction = compaction_every;
    let mut next_branch = branch_every / 2;
    while g.bytes < target_bytes {
        g.turn()?;
        if compactions && g.bytes >= next_compaction {
            g.compaction()?;
            next_compaction += compaction_every;
        }
        if g.bytes >= next_branch {
            g.branch_summary()?;
            next_branch += branch_every;
        }
    }
    g.out.flush()?;
    Ok(format!(
        "{{\"bytes\":{},\"lines\":{},\"pathLength\":{}}}",
        g.bytes,
        g.lines,
        g.path.len()
    ))
}

struct Gen {
    rng: Rng,
    out: BufWriter<File>,
    bytes: u64,
    lines: u64,
    now: i64,
    taken: HashSet<String>,
    /// Ids on the current path, root first.
    path: Vec<String>,
    files: Vec<String>,
    call: u64,
}

impl Gen {
    fn write_line(&mut self, v: &Value) -> Result<(), BoxError> {
        let text = serde_json::to_string(v)?;
        self.out.write_all(text.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.bytes += text.len() as u64 + 1;
        self.lines += 1;
        Ok(())
    }

    fn header(&mut self) -> Result<(), BoxError> {
        let v = json!({
            "type": "session", "version": 3,
            "id": "0bench00-0000-4000-8000-000000000001",
            "timestamp": format_iso(self.now), "cwd": "/home/dev/project",
        });
        self.write_line(&v)
    }

    fn fresh_id(&mut self) -> String {
        loop {
            let id = format!("{:08x}", self.rng.next_u64() as u32);
            if self.taken.insert(id.clone()) {
                return id;
            }
        }
    }

    /// Writes an entry under the current leaf; returns its id.
    fn entry(&mut self, ty: &str, fields: Value) -> Result<String, BoxError> {
        self.now += self.rng.range(50, 4000) as i64;
        let id = self.fresh_id();
        let mut v = json!({
            "type": ty, "id": id, "parentId": self.path.last(),
            "timestamp": format_iso(self.now),
        });
        if let (Value::Object(m), Value::Object(f)) = (&mut v, fields) {
            m.extend(f);
        }
        self.write_line(&v)?;
        self.path.push(id.clone());
        Ok(id)
    }

    fn message(&mut self, message: Value) -> Result<String, BoxError> {
        let mut fields = serde_json::Map::new();
        fields.insert("message".into(), message);
        self.entry("message", Value::Object(fields))
    }

    fn words(&mut self, lo: u64, hi: u64) -> String {
        let n = self.rng.range(lo, hi);
        let mut s = String::new();
        for i in 0..n {
            if i > 0 {
                s.push(if self.rng.chance(4) { '\n' } else { ' ' });
            }
            let word: &&str = self.rng.pick(WORDS);
            s.push_str(word);
        }
        s
    }

    fn code(&mut self, bytes: u64) -> String {
        let mut s = String::with_capacity(bytes as usize + 80);
        while (s.len() as u64) < bytes {
            let indent = "    ".repeat(self.rng.range(0, 3) as usize);
            let a = self.rng.pick(IDENTS);
            let b = self.rng.pick(IDENTS);
            let line = match self.rng.range(0, 5) {
                0 => format!("{indent}let {a} = {b}.get(\"{a}\")?;\n"),
                1 => format!("{indent}if {a}.len() > {} {{\n", self.rng.range(1, 5000)),
                2 => format!("{indent}}}\n"),
                3 => format!("{indent}// {}\n", self.words(3, 12)),
                4 => format!("{indent}fn {a}_{b}(&self, {b}: &str) -> Result<(), Error> {{\n"),
                _ => format!("{indent}\t{a}.push({b}); // tab\\escaped \"quote\"\n"),
            };
            s.push_str(&line);
        }
        s
    }

    fn file_path(&mut self) -> String {
        if !self.files.is_empty() && self.rng.chance(60) {
            return self.rng.pick(&self.files).clone();
        }
        let dir = self.rng.pick(DIRS);
        let name = self.rng.pick(IDENTS);
        let path = format!("{dir}/{name}_{}.rs", self.rng.range(1, 99));
        self.files.push(path.clone());
        path
    }

    fn usage(&mut self) -> Value {
        let input = self.rng.range(1_000, 150_000);
        let output = self.rng.range(20, 4_000);
        let cache_read = self.rng.range(0, 100_000);
        json!({
            "input": input, "output": output, "cacheRead": cache_read, "cacheWrite": 0,
            "totalTokens": input + output + cache_read,
            "cost": {"input": input as f64 * 3e-6, "output": output as f64 * 1.5e-5,
                     "cacheRead": cache_read as f64 * 3e-7, "cacheWrite": 0,
                     "total": input as f64 * 3e-6 + output as f64 * 1.5e-5},
        })
    }

    fn assistant(&mut self, content: &[Value], stop: &str) -> Result<String, BoxError> {
        let usage = self.usage();
        let now = self.now;
        self.message(json!({
            "role": "assistant", "content": content, "api": "anthropic-messages",
            "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": usage,
            "stopReason": stop, "timestamp": now,
        }))
    }

    /// One user prompt, several tool rounds, a final answer.
    fn turn(&mut self) -> Result<(), BoxError> {
        let prompt = self.words(10, 80);
        let now = self.now;
        self.message(json!({"role": "user", "content": prompt, "timestamp": now}))?;
        for _ in 0..self.rng.range(2, 8) {
            let mut content = vec![
                json!({"type": "thinking", "thinking": self.words(20, 150), "thinkingSignature": "sig"}),
            ];
            content.push(json!({"type": "text", "text": self.words(5, 40)}));
            let calls: Vec<(String, String, Value)> = (0..self.rng.range(1, 2))
                .map(|_| self.tool_call())
                .collect();
            for (id, name, args) in &calls {
                content
                    .push(json!({"type": "toolCall", "id": id, "name": name, "arguments": args}));
            }
            self.assistant(&content, "toolUse")?;
            for (id, name, args) in calls {
                self.tool_result(&id, &name, &args)?;
            }
        }
        if self.rng.chance(5) {
            let level = *self.rng.pick(&["low", "medium", "high"]);
            self.entry("thinking_level_change", json!({"thinkingLevel": level}))?;
        }
        let text = self.words(30, 200);
        self.assistant(&[json!({"type": "text", "text": text})], "stop")?;
        Ok(())
    }

    fn tool_call(&mut self) -> (String, String, Value) {
        self.call += 1;
        let id = format!("toolu_{:016x}", self.rng.next_u64());
        let path = self.file_path();
        match self.rng.range(0, 9) {
            0..=3 => (id, "read".into(), json!({"path": path})),
            4..=6 => {
                let (old_len, new_len) = (self.rng.range(40, 600), self.rng.range(40, 600));
                let old = self.code(old_len);
                let new = self.code(new_len);
                (
                    id,
                    "edit".into(),
                    json!({"path": path, "oldText": old, "newText": new}),
                )
            }
            _ => {
                let cmd = *self.rng.pick(COMMANDS);
                (id, "bash".into(), json!({"command": cmd, "timeout": 120}))
            }
        }
    }

    fn tool_result(&mut self, id: &str, name: &str, args: &Value) -> Result<(), BoxError> {
        let (text, is_error) = match name {
            "read" => (
                {
                    let n = self.rng.range(2_000, 40_000);
                    self.code(n)
                },
                false,
            ),
            "edit" => (
                format!(
                    "Successfully replaced text in {}.",
                    args["path"].as_str().unwrap_or("")
                ),
                self.rng.chance(3),
            ),
            _ => (
                {
                    let n = self.rng.range(200, 20_000);
                    self.code(n)
                },
                self.rng.chance(10),
            ),
        };
        let now = self.now;
        let details = if name == "edit" {
            {
                let n = self.rng.range(100, 800);
                json!({"diff": self.code(n)})
            }
        } else {
            Value::Null
        };
        let mut msg = json!({
            "role": "toolResult", "toolCallId": id, "toolName": name,
            "content": [{"type": "text", "text": text}], "isError": is_error, "timestamp": now,
        });
        if !details.is_null() {
            msg["details"] = details;
        }
        self.message(msg)?;
        Ok(())
    }

    fn compaction(&mut self) -> Result<(), BoxError> {
        let keep = self
            .path
            .len()
            .saturating_sub(self.rng.range(10, 40) as usize);
        let first_kept = self.path[keep.max(1)].clone();
        let mut read: Vec<String> = (0..5).map(|_| self.file_path()).collect();
        read.sort();
        read.dedup();
        let summary = format!(
            "## Goal\n{}\n\n## Progress\n### Done\n- {}\n\n## Next Steps\n1. {}",
            self.words(20, 60),
            self.words(100, 400),
            self.words(20, 80)
        );
        let tokens_before = self.rng.range(100_000, 190_000);
        self.entry(
            "compaction",
            json!({
                "summary": summary, "firstKeptEntryId": first_kept, "tokensBefore": tokens_before,
                "details": {"readFiles": read, "modifiedFiles": []}, "fromExtension": false,
            }),
        )?;
        Ok(())
    }

    /// Abandons the last few entries: goes back to an earlier entry and
    /// appends a branch summary there; the path continues after it.
    fn branch_summary(&mut self) -> Result<(), BoxError> {
        let back = self.rng.range(4, 12) as usize;
        let target = self.path.len().saturating_sub(back + 1);
        self.path.truncate(target + 1);
        let from = self.path[target].clone();
        let summary = format!(
            "The user explored a different direction.\n\n## Goal\n{}",
            self.words(40, 120)
        );
        self.entry(
            "branch_summary",
            json!({"fromId": from, "summary": summary,
                   "details": {"readFiles": [], "modifiedFiles": []}, "fromExtension": false}),
        )?;
        Ok(())
    }
}
