//! The generated sessions of the retention case: the benchmark's synthetic
//! agent session at a size whose summarized history is a few hundred
//! thousand tokens, a session of many short turns, and, for compacting
//! again and again, two sessions that say the same sentences in every
//! turn.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::BoxError;

/// Size and seed of the synthetic agent session.
const AGENT_BYTES: u64 = 2_000_000;
const AGENT_SEED: u64 = 7;
/// Turns of the short-turn session.
const TURNS: usize = 400;

/// Writes both sessions into `work`; returns their names and files.
pub(crate) fn generated(work: &Path) -> Result<Vec<(String, PathBuf)>, BoxError> {
    let agent = work.join("generated-agent.jsonl");
    crate::generate::generate(&agent, AGENT_BYTES, AGENT_SEED)?;
    end_on_a_message(&agent)?;
    let turns = work.join("generated-turns.jsonl");
    std::fs::write(&turns, short_turns())?;
    Ok(vec![
        ("generated agent".to_owned(), agent),
        ("generated turns".to_owned(), turns),
    ])
}

/// The synthetic session ends with a compaction when its size is a
/// multiple of the compaction spacing: that entry goes, so there is
/// history to compact at the leaf.
fn end_on_a_message(file: &Path) -> Result<(), BoxError> {
    let text = std::fs::read_to_string(file)?;
    let mut lines: Vec<&str> = text.lines().collect();
    while let Some(last) = lines.last() {
        let v: Value = serde_json::from_str(last)?;
        if v["type"] == "message" {
            break;
        }
        lines.pop();
    }
    let mut out = lines.join("\n");
    out.push('\n');
    std::fs::write(file, out)?;
    Ok(())
}

/// Turns of the filler sessions: enough for six compactions in a 64k
/// window.
const FILLER_TURNS: usize = 320;

/// Writes the two filler sessions into `work`; returns their names and
/// files.
pub(crate) fn filler(work: &Path) -> Result<Vec<(String, PathBuf)>, BoxError> {
    let chat = work.join("filler-chat.jsonl");
    std::fs::write(&chat, filler_chat(FILLER_TURNS))?;
    let agent = work.join("filler-agent.jsonl");
    std::fs::write(&agent, filler_agent(FILLER_TURNS))?;
    Ok(vec![
        ("filler chat".to_owned(), chat),
        ("filler agent".to_owned(), agent),
    ])
}

/// A session of `id` built by `turns`, which appends messages with the
/// function it is given.
fn session(id: &str, turns: impl FnOnce(&mut dyn FnMut(Value))) -> String {
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": id, "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/repo"}),
    ];
    let mut parent = Value::Null;
    turns(&mut |message: Value| {
        let id = format!("{:08x}", lines.len());
        lines.push(json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z", "message": message}));
        parent = Value::String(id);
    });
    let mut text = String::new();
    for line in &lines {
        let _ = writeln!(text, "{line}");
    }
    text
}

/// The pi user of the end-to-end test (`integrations/pi`): each request
/// says one sentence six times, each answer another 28 times.
fn filler_chat(turns: usize) -> String {
    session("retention-filler-chat", |push| {
        for n in 1..=turns {
            push(
                json!({"role": "user", "content": format!("Step {n}: {}", "Keep the parser fast and the public API unchanged. ".repeat(6)), "timestamp": 1}),
            );
            push(
                json!({"role": "assistant", "content": [{"type": "text", "text": format!("Turn {n} done. {}", "The tokenizer now borrows its input and the parser allocates less. ".repeat(28))}], "stopReason": "stop", "timestamp": 1}),
            );
        }
    })
}

/// An agent that does the same thing every turn: the same request, the
/// same reasoning, the same test run with the same output, the same
/// answer.
fn filler_agent(turns: usize) -> String {
    session("retention-filler-agent", |push| {
        let mut output = String::new();
        for i in 0..40 {
            let _ = writeln!(output, "test parser::tests::case_{i} ... ok");
        }
        output.push_str("test result: ok. 40 passed; 0 failed");
        for n in 1..=turns {
            push(
                json!({"role": "user", "content": format!("Step {n}: {}", "Run the parser tests again and tell me if anything changed. Do not touch the public API. ".repeat(3)), "timestamp": 1}),
            );
            let call = format!("c{n}");
            push(json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "The user wants the parser tests run again. Nothing changed since the last run, so they should pass. ".repeat(3)},
                {"type": "text", "text": "Running the parser tests again."},
                {"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": "cargo test -p parser"}}
            ], "stopReason": "toolUse", "timestamp": 1}));
            push(
                json!({"role": "toolResult", "toolCallId": call, "toolName": "bash", "content": [{"type": "text", "text": output}], "isError": false, "timestamp": 1}),
            );
            push(
                json!({"role": "assistant", "content": [{"type": "text", "text": format!("All 40 parser tests pass again. {}", "Nothing changed in the parser or its public API. ".repeat(4))}], "stopReason": "stop", "timestamp": 1}),
            );
        }
    })
}

/// Many short turns: a request, a test run with a long passing output and
/// an answer each.
fn short_turns() -> String {
    const MODULES: [&str; 5] = ["planner", "lexer", "store", "render", "queue"];
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": "retention-turns", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/repo"}),
    ];
    let mut parent = Value::Null;
    let mut push = |lines: &mut Vec<Value>, message: Value| {
        let id = format!("{:08x}", lines.len());
        lines.push(json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z", "message": message}));
        parent = Value::String(id);
    };
    for turn in 0..TURNS {
        let module = MODULES[turn % MODULES.len()];
        push(
            &mut lines,
            json!({"role": "user", "content": format!("Step {turn}: refactor src/{module}.rs and run its tests again."), "timestamp": 1}),
        );
        let call = format!("c{turn}");
        push(
            &mut lines,
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": format!("Step {turn} touches the {module} module; run its tests after the edit.")},
                {"type": "text", "text": format!("Running the tests for step {turn}.")},
                {"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": format!("cargo test -p {module} -- --test-threads {}", turn % 4 + 1)}}
            ], "stopReason": "toolUse", "timestamp": 1}),
        );
        let mut output = String::new();
        for i in 0..60 {
            let _ = writeln!(output, "test {module}::case_{turn}_{i} ... ok");
        }
        let _ = write!(output, "test result: ok. 60 passed; 0 failed");
        push(
            &mut lines,
            json!({"role": "toolResult", "toolCallId": call, "toolName": "bash",
            "content": [{"type": "text", "text": output}], "isError": false, "timestamp": 1}),
        );
        push(
            &mut lines,
            json!({"role": "assistant", "content": [{"type": "text", "text": format!("Step {turn} is done; the {module} tests pass.")}], "stopReason": "stop", "timestamp": 1}),
        );
    }
    let mut text = String::new();
    for line in &lines {
        let _ = writeln!(text, "{line}");
    }
    text
}
