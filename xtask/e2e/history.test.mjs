// `node --test xtask/e2e/history.test.mjs`: the e2e server reads what
// musepi sends. handoff-request.json is the body of `musepi handoff`
// (the cli's handoff test checks that it still is, byte for byte): a user
// question, a tool call, its result, an answer and the handoff prompt.
// The gate runs this through xtask's tests when Node.js is installed.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { BadRequest, toHistory } from "./history.mjs";

const handoff = JSON.parse(readFileSync(new URL("./handoff-request.json", import.meta.url), "utf8"));

test("a handoff with a tool call and its result becomes alternating chat history", () => {
  const history = toHistory(handoff.messages);
  assert.deepEqual(
    history.map((item) => item.type),
    ["system", "user", "model", "user", "model", "user", "model"],
  );
  assert.match(history[0].text, /context checkpoints/);
  assert.equal(history[1].text, "Fix the parser: it drops the last line.");
  // The call (content null) as text in the model's turn.
  assert.deepEqual(history[2].response, ['[tool call read({"path":"src/parse.rs"})]']);
  // The result, then the answer.
  assert.equal(history[3].text, "[tool result of read]\nfn lines() {}");
  assert.deepEqual(history[4], { type: "model", response: ["The caller slices one line short."] });
});

test("the handoff prompt comes last, before the turn the model fills", () => {
  const history = toHistory(handoff.messages);
  const items = history.slice(-2);
  assert.equal(items[0].type, "user");
  assert.match(items[0].text, /handoff document/);
  assert.deepEqual(items[1], { type: "model", response: [] });
});

test("consecutive turns of one kind are joined", () => {
  const history = toHistory([
    { role: "system", content: "a" },
    { role: "developer", content: "b" },
    { role: "user", content: [{ type: "text", text: "c" }, { type: "image_url", image_url: { url: "data:" } }] },
    { role: "user", content: "d" },
  ]);
  assert.deepEqual(history, [
    { type: "system", text: "a\n\nb" },
    { type: "user", text: "c\n\nd" },
    { type: "model", response: [] },
  ]);
});

test("what no OpenAI-compatible server accepts is refused", () => {
  assert.throws(() => toHistory([]), BadRequest);
  assert.throws(() => toHistory([{ role: "function", content: "x" }]), /unsupported message role "function"/);
  assert.throws(
    () => toHistory([{ role: "user", content: "q" }, { role: "tool", tool_call_id: "nope", content: "r" }]),
    /must answer a tool call of an earlier assistant message/,
  );
  assert.throws(
    () => toHistory([{ role: "assistant", content: null, tool_calls: [{ type: "function" }] }]),
    /needs an id and a function name/,
  );
});
