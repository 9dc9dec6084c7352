#!/usr/bin/env python3
"""A fake agent loop that keeps its context healthy through `musepi serve`.

No model is involved: the agent's answers are scripted assistant messages,
whose usage is what a provider would count for the context the agent sends
(plus a system prompt and tools) as it climbs past the compaction
threshold, and the server
compacts with its default strategy, snapcompact, which needs no model, key
or network. The script prints every event and decision and exits 1 if a
decision is not the one the protocol promises.

    python3 examples/serve-client.py [--musepi PATH] [--session FILE]

The musepi binary is --musepi PATH, else $MUSEPI, else `musepi` on the
PATH (`cargo install --path crates/cli` puts it there), else the build of
this repository (target/release/musepi, then target/debug/musepi, under
$CARGO_TARGET_DIR when it is set). docs/protocol.md describes every message.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

WINDOW = 16_000  # the agent model's context window: threshold 13,600 with a 2,000 reserve


class Musepi:
    """One `musepi serve` process: requests out, events and responses in."""

    def __init__(self, binary):
        self.proc = subprocess.Popen(
            [binary, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        request = {"id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("musepi serve stopped")
            message = json.loads(line)
            if "event" in message:
                show_event(message["event"])
            elif message.get("id") == self.next_id:
                if not message["ok"]:
                    raise SystemExit(f"{method} failed: {message['error']}")
                return message["result"]

    def close(self):
        self.proc.stdin.close()
        return self.proc.wait()


def show_event(event):
    kind = event["type"]
    if kind == "compaction_start":
        print(f"    event  compaction_start ({event['reason']})")
    elif kind == "compaction_end":
        result = event.get("result")
        what = (f"{result['strategy']}, {result['tokensBefore']:.0f} -> {result['tokensAfter']} tokens"
                if result else event.get("errorMessage") or ("aborted" if event["aborted"] else "nothing done"))
        print(f"    event  compaction_end ({event['reason']}, willRetry={event['willRetry']}): {what}")
    else:
        print(f"    event  {kind}")


failures = []


def expect(what, decision, action, **flags):
    """Prints a decision and checks it against what the protocol promises."""
    shown = [decision["action"]]
    if decision.get("reason"):
        shown.append(f"reason={decision['reason']}")
    for key in ("retry", "removeLastAssistant", "continue"):
        if decision.get(key):
            shown.append(key)
    if decision.get("continuePrompt"):
        shown.append("with the developer prompt")
    for key in ("warning", "error"):
        if decision.get(key):
            shown.append(f"{key}: {decision[key]}")
    print(f"  {what}: {', '.join(shown)}")
    if decision["action"] != action:
        failures.append(f"{what}: expected {action}, got {decision['action']}")
    for key, value in flags.items():
        if bool(decision.get(key)) != value:
            failures.append(f"{what}: expected {key}={value}, got {decision.get(key)!r}")


def text_of(sentence, tokens):
    """About `tokens` tokens of text (musepi estimates 4 characters a token)."""
    return (sentence * (tokens * 4 // len(sentence) + 1))[: tokens * 4]


def assistant(text, input_tokens, stop="stop", tool_call=None, error=None):
    """A scripted answer of the fake agent model."""
    content = [{"type": "text", "text": text}] if text else []
    if tool_call:
        content.append({"type": "toolCall", "id": tool_call, "name": "read",
                        "arguments": {"path": "src/parser.py"}})
    message = {"role": "assistant", "content": content, "provider": "fake", "model": "agent",
               "stopReason": stop,
               "usage": {"input": input_tokens, "output": 200, "cacheRead": 0, "cacheWrite": 0,
                         "totalTokens": input_tokens + 200}}
    if error:
        message["errorMessage"] = error
    return message


def user(text):
    return {"type": "message", "message": {"role": "user", "content": text}}


def tool_result(call_id, tokens):
    return {"type": "message", "message": {
        "role": "toolResult", "toolCallId": call_id, "toolName": "read",
        "content": [{"type": "text", "text": text_of("def parse(tokens):\n    return tree\n", tokens)}],
        "isError": False}}


class FakeModel:
    """The agent's model: it counts every request as a real provider would,
    from what the request holds (musepi's context, which is what the agent
    sends) plus its system prompt and tools, which are not messages."""

    RATIO = 1.2  # the provider's tokens per token musepi estimates
    SYSTEM_PROMPT_AND_TOOLS = 1_500

    def __init__(self, musepi):
        self.musepi = musepi

    def prompt_tokens(self):
        return round(self.RATIO * self.musepi.call("context")["tokens"]) + self.SYSTEM_PROMPT_AND_TOOLS

    def answer(self, text, stop="stop", tool_call=None):
        return assistant(text, self.prompt_tokens(), stop, tool_call)


def find_musepi(flag):
    """The binary to run: the flag, $MUSEPI, the PATH, then this repository's build."""
    if flag:
        return flag
    if os.environ.get("MUSEPI"):
        return os.environ["MUSEPI"]
    on_path = shutil.which("musepi")
    if on_path:
        return on_path
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(repo, "target")
    for profile in ("release", "debug"):
        built = os.path.join(target, profile, "musepi")
        if os.path.isfile(built) and os.access(built, os.X_OK):
            return built
    raise SystemExit(
        "serve-client: no musepi binary found (not on the PATH, not built in "
        f"{target}): build it with `cargo build --release -p musepi`, install it with "
        "`cargo install --path crates/cli`, or pass --musepi PATH (or set MUSEPI)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--musepi", help="the musepi binary (default: $MUSEPI, the PATH, then target/)")
    parser.add_argument("--session", help="the session file (default: a temporary one)")
    args = parser.parse_args()

    binary = find_musepi(args.musepi)
    print(f"musepi {binary}")
    session = args.session or os.path.join(tempfile.mkdtemp(prefix="musepi-serve-"), "agent.jsonl")
    musepi = Musepi(binary)
    opened = musepi.call(
        "open", path=session, create=True, contextWindow=WINDOW,
        model={"provider": "fake", "modelId": "agent"},
        settings={"compaction": {"reserveTokens": 2000, "keepRecentTokens": 3000,
                                 "idleEnabled": True, "idleThresholdTokens": 1000}})
    print(f"session {opened['path']}: strategy {opened['strategy']}, "
          f"threshold {opened['thresholdTokens']} of {opened['contextWindow']} tokens")

    model = FakeModel(musepi)
    threshold = opened["thresholdTokens"]

    print("turn 1: a short answer")
    musepi.call("append", entries=[user(text_of("Make the parser faster. ", 150))])
    expect("beforeRequest", musepi.call("beforeRequest"), "none")
    decision = musepi.call("afterAssistant", message=model.answer(text_of("I will profile it first. ", 300)))
    expect("afterAssistant", decision, "none")

    print("turn 2: a tool loop that crosses the threshold")
    musepi.call("append", entries=[user(text_of("Go ahead and read the parser. ", 150))])
    expect("beforeRequest", musepi.call("beforeRequest"), "none")
    decision = musepi.call("afterAssistant", message=model.answer("Reading.", "toolUse", "call-1"))
    expect("afterAssistant (tool call)", decision, "none")
    musepi.call("append", entries=[tool_result("call-1", 9_800)])
    expect("beforeRequest", musepi.call("beforeRequest"), "none")
    decision = musepi.call("afterAssistant", message=model.answer("Reading more.", "toolUse", "call-2"))
    expect("afterAssistant (tool call, over the threshold)", decision, "none")
    musepi.call("append", entries=[tool_result("call-2", 200)])
    decision = musepi.call("beforeRequest")
    # The loop owns the next request: no second continuation.
    expect("beforeRequest (mid-turn)", decision, "compacted", retry=False, **{"continue": False})
    decision = musepi.call("afterAssistant", message=model.answer("The lexer was slow; fixed."))
    expect("afterAssistant", decision, "none")

    print("turn 3: a finished turn over the threshold")
    musepi.call("append", entries=[user(text_of("Now make the emitter faster too. ", 150))])
    expect("beforeRequest", musepi.call("beforeRequest"), "none")
    decision = musepi.call("afterAssistant", message=model.answer("Profiling the emitter.", "toolUse", "call-3"))
    expect("afterAssistant (tool call)", decision, "none")
    # A profile just large enough that the final answer's request crosses
    # the threshold, while the check before that request does not yet.
    held = musepi.call("context")["tokens"]
    profile = round((threshold + 600 - FakeModel.SYSTEM_PROMPT_AND_TOOLS) / FakeModel.RATIO) - held
    musepi.call("append", entries=[tool_result("call-3", profile)])
    expect("beforeRequest", musepi.call("beforeRequest"), "none")
    decision = musepi.call("afterAssistant", message=model.answer(text_of("The emitter is faster. ", 300)))
    expect("afterAssistant (threshold)", decision, "compacted", **{"continue": True})
    if decision.get("continuePrompt"):
        # The agent continues with the developer prompt, as a custom message.
        musepi.call("append", entries=[{"type": "custom_message", "customType": "auto-continue",
                                        "content": decision["continuePrompt"], "display": False}])
        decision = musepi.call("afterAssistant", message=model.answer("Nothing left to do."))
        expect("afterAssistant (continued)", decision, "none")

    print("turn 4: an answer cut at the output limit")
    musepi.call("append", entries=[user("Explain the new design.")])
    decision = musepi.call("afterAssistant", message=model.answer("The design has three parts: first", "length"))
    expect("afterAssistant (length, below the threshold)", decision, "warn")

    print("turn 5: the provider rejects the context")
    musepi.call("append", entries=[user(text_of("Summarize every file of the repository. ", 3_500))])
    overflow = assistant("", 0, "error", error="prompt is too long: 213000 tokens > 200000 maximum")
    decision = musepi.call("afterAssistant", message=overflow)
    expect("afterAssistant (overflow)", decision, "compacted", retry=True, removeLastAssistant=True)
    decision = musepi.call("afterAssistant", message=model.answer(text_of("Here is the summary. ", 3_200)))
    expect("afterAssistant (retried)", decision, "none")

    print("the user walks away")
    expect("idle 60 s", musepi.call("idle", idleSeconds=60), "none")
    expect("idle 600 s", musepi.call("idle", idleSeconds=600), "compacted", **{"continue": False})

    print("the user comes back for two more turns, then types /compact")
    for n, question in enumerate(["Add benchmarks. ", "Run them in CI. "]):
        musepi.call("append", entries=[user(text_of(question, 150))])
        decision = musepi.call("afterAssistant", message=model.answer(text_of("Done as asked. ", 1_600)))
        expect(f"afterAssistant {n + 1}", decision, "none")
    decision = musepi.call("compact")
    # A manual compaction never starts a turn.
    expect("compact", decision, "compacted", **{"continue": False})

    context = musepi.call("context")
    print(f"the model now sees {len(context['messages'])} messages, {context['tokens']} tokens")
    musepi.call("close")
    status = musepi.close()
    if status != 0:
        failures.append(f"musepi serve exited with {status}")
    for failure in failures:
        print(f"unexpected: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
