// Chat-completions messages as node-llama-cpp chat history, for server.mjs
// (see docs/e2e.md). Our own code; no dependency, so `node --test` checks it
// without the model or node-llama-cpp installed (history.test.mjs).
//
// The roles an OpenAI-compatible server accepts: `system` and `developer`
// (system text), `user`, `assistant` (text, `tool_calls`, or both; content
// null when it only calls tools) and `tool` (the result of an earlier call,
// named by `tool_call_id`). A small chat model has no tool syntax of its
// own, so calls and results become text the model can read:
// `[tool call read({"path":"a.rs"})]` in the model's turn, and
// `[tool result of read]` followed by the result in the next input turn.
// Consecutive turns of the same kind are joined, so user and model turns
// alternate as chat templates expect.

/** A request the server refuses with 400. */
export class BadRequest extends Error {
  constructor(message, type = "invalid_request_error") {
    super(message);
    this.type = type;
  }
}

/** Message content (a string, parts with `text`, or null) as text. */
export function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && typeof part.text === "string" ? part.text : ""))
      .join("");
  }
  return "";
}

/** An assistant message's `tool_calls` as text lines; their names by id into `names`. */
function toolCallsText(calls, index, names) {
  if (calls === undefined || calls === null) return [];
  if (!Array.isArray(calls)) {
    throw new BadRequest(`messages[${index}].tool_calls must be an array`);
  }
  return calls.map((call, n) => {
    const fn = call?.function;
    if (typeof call?.id !== "string" || typeof fn?.name !== "string") {
      throw new BadRequest(`messages[${index}].tool_calls[${n}] needs an id and a function name`);
    }
    names.set(call.id, fn.name);
    const args = typeof fn.arguments === "string" ? fn.arguments : JSON.stringify(fn.arguments ?? {});
    return `[tool call ${fn.name}(${args})]`;
  });
}

/** OpenAI messages as node-llama-cpp chat history, ending with the empty model turn to fill. */
export function toHistory(messages) {
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new BadRequest("`messages` must be a non-empty array");
  }
  const history = [];
  const names = new Map(); // tool_call_id → tool name, from the calls seen so far
  const push = (type, text) => {
    const last = history[history.length - 1];
    if (last && last.type === type && type !== "model") {
      last.text = `${last.text}\n\n${text}`;
    } else if (last && last.type === "model" && type === "model") {
      last.response[0] = `${last.response[0]}\n\n${text}`;
    } else if (type === "model") {
      history.push({ type, response: [text] });
    } else {
      history.push({ type, text });
    }
  };
  messages.forEach((m, index) => {
    const text = contentText(m?.content);
    switch (m?.role) {
      case "system":
      case "developer":
        push("system", text);
        break;
      case "user":
        push("user", text);
        break;
      case "assistant": {
        const calls = toolCallsText(m.tool_calls, index, names);
        const parts = [text, ...calls].filter((p) => p.length > 0);
        push("model", parts.join("\n"));
        break;
      }
      case "tool": {
        const id = m.tool_call_id;
        if (typeof id !== "string" || !names.has(id)) {
          throw new BadRequest(
            `messages[${index}] with role "tool" must answer a tool call of an earlier assistant message (tool_call_id ${JSON.stringify(id)})`,
          );
        }
        push("user", `[tool result of ${names.get(id)}]\n${text}`);
        break;
      }
      default:
        throw new BadRequest(`unsupported message role ${JSON.stringify(m?.role)}`);
    }
  });
  history.push({ type: "model", response: [] });
  return history;
}
