"""Writes todo-refactor.jsonl: a made-up pi session (v3) of an agent
refactoring a small Rust command line, used by the README's example run.

The text is ours; the run is seeded, so the file is the same every time:
    python3 examples/sessions/generate.py
"""
import datetime
import json
import random
from pathlib import Path

ROUNDS = 14
random.seed(7)
T0 = 1767261600000  # 2026-01-01T10:00:00Z
lines = []
state = {"n": 0, "now": T0, "parent": None, "calls": 0, "input": 2000}


def iso(ms):
    t = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def entry(typ, **kw):
    state["n"] += 1
    state["now"] += random.randint(800, 9000)
    e = {"type": typ, "id": f"{state['n']:08x}", "parentId": state["parent"], "timestamp": iso(state["now"])}
    e.update(kw)
    state["parent"] = e["id"]
    lines.append(e)
    return e


def msg(m):
    m["timestamp"] = state["now"] + 500
    return entry("message", message=m)


def asst(blocks, stop="toolUse"):
    state["input"] += sum(len(json.dumps(b)) for b in blocks) // 3 + 900
    u = {"input": state["input"], "output": random.randint(80, 600), "cacheRead": 0, "cacheWrite": 0}
    u["totalTokens"] = u["input"] + u["output"]
    cost_in, cost_out = round(u["input"] * 3e-6, 6), round(u["output"] * 15e-6, 6)
    u["cost"] = {"input": cost_in, "output": cost_out, "cacheRead": 0, "cacheWrite": 0, "total": round(cost_in + cost_out, 6)}
    return msg({"role": "assistant", "content": blocks, "api": "anthropic-messages", "provider": "anthropic",
                "model": "claude-sonnet-4-5", "usage": u, "stopReason": stop})


def call(name, args):
    state["calls"] += 1
    return {"type": "toolCall", "id": f"toolu_{state['calls']:04d}", "name": name, "arguments": args}


def result(c, text, err=False):
    return msg({"role": "toolResult", "toolCallId": c["id"], "toolName": c["name"],
                "content": [{"type": "text", "text": text}], "isError": err})


def rust_file(name, fns):
    out = [f"//! {name}: part of the todo command line.", "", "use std::collections::BTreeMap;", ""]
    for i, f in enumerate(fns):
        out += [f"/// {f.replace('_', ' ').capitalize()}.",
                f"pub fn {f}(store: &mut Store, args: &[String]) -> Result<(), TodoError> {{",
                f"    let id = args.get({i % 2}).ok_or(TodoError::MissingArgument(\"id\"))?;",
                "    let item = store.items.get_mut(id).ok_or_else(|| TodoError::UnknownItem(id.clone()))?;",
                "    item.touched = store.clock.now();",
                f"    store.log.push(format!(\"{f} {{id}}\"));",
                "    store.save()", "}", ""]
    return "\n".join(out)


FNS = {
    "src/main.rs": ["run", "parse_args", "dispatch"],
    "src/store.rs": ["load", "save", "compact_log", "replay"],
    "src/commands/add.rs": ["add", "add_many", "validate_title"],
    "src/commands/done.rs": ["done", "undo", "done_all"],
    "src/commands/list.rs": ["list", "list_tags", "format_row"],
    "src/commands/edit.rs": ["edit", "rename", "retag"],
    "src/error.rs": ["describe", "exit_code"],
    "tests/cli.rs": ["adds_an_item", "lists_items", "marks_done", "edits_titles"],
}
FILES = list(FNS)

lines.append({"type": "session", "version": 3, "id": "6a1f0c2e-3b7d-4e59-9c21-8d4f5a6b7c80",
              "timestamp": iso(T0), "cwd": "/home/dev/todo-cli"})
entry("model_change", provider="anthropic", modelId="claude-sonnet-4-5")
entry("thinking_level_change", thinkingLevel="medium")
msg({"role": "user", "content": "The todo CLI stores items in a JSON file and every command reloads and rewrites it. "
     "I want a `Store` type with an append-only log instead, without breaking the existing commands. "
     "Keep the public command names; tests live in tests/cli.rs."})
for _ in range(ROUNDS):
    f1, f2 = random.sample(FILES, 2)
    c1, c2 = call("read", {"path": f1}), call("read", {"path": f2})
    asst([{"type": "thinking", "thinking": f"I should look at {f1} and {f2} before changing how items are stored."},
          {"type": "text", "text": f"Reading {f1} and {f2}."}, c1, c2])
    result(c1, rust_file(f1, FNS[f1]) * 3)
    result(c2, rust_file(f2, FNS[f2]) * 3)
    target = random.choice(FILES[1:7])
    ce = call("edit", {"path": target, "oldText": "    store.save()",
                       "newText": "    store.append(Event::Touched { id: id.clone() })"})
    asst([{"type": "text", "text": f"Switching {target} from rewriting the file to appending an event."}, ce])
    result(ce, f"Edited {target}: 1 replacement.")
    cb = call("bash", {"command": "cargo test --quiet 2>&1 | tail -40"})
    asst([{"type": "text", "text": "Running the tests."}, cb])
    fails = random.randint(0, 3)
    out = "\n".join(f"test {t} ... ok" for t in FNS["tests/cli.rs"])
    if fails:
        out += ("\n\nfailures:\n\n---- marks_done stdout ----\nthread 'marks_done' panicked at tests/cli.rs:41:5:\n"
                "assertion `left == right` failed\n  left: \"[ ] buy milk\"\n right: \"[x] buy milk\"\n\n"
                "test result: FAILED. 3 passed; 1 failed")
        msg_text = random.choice(["The done test still fails; the log replay must apply Done after Added.",
                                  "Don't change the test, fix replay ordering.",
                                  "Why is the order different? Events must replay in file order."])
    else:
        out += "\n\ntest result: ok. 4 passed; 0 failed"
        msg_text = random.choice(["Good. Next, make `list` read from the replayed store.",
                                  "Keep going with the edit command.",
                                  "Now the error type: add a variant for a corrupt log line with its line number."])
    result(cb, out * 4, err=bool(fails))
    msg({"role": "user", "content": msg_text})
asst([{"type": "text", "text": "Replay now applies events in file order, `done` and `undo` append `Done`/`Undone` events, "
       "and all four CLI tests pass. The store compacts its log when it grows past 1,000 events."}], stop="stop")

out = Path(__file__).with_name("todo-refactor.jsonl")
with out.open("w", encoding="utf-8") as f:
    for line in lines:
        f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
