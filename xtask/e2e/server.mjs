// A minimal OpenAI-compatible chat-completions server over node-llama-cpp,
// for `cargo xtask e2e` (see docs/e2e.md). Our own code; loopback only.
//
//   node server.mjs --model FILE.gguf [--port 0] [--max-tokens 256]
//                   [--context-size N] [--threads 2] [--name smollm2]
//                   [--exit-with-stdin]
//
// Serves `POST /v1/chat/completions` (non-streaming; every chat-completions
// role, tool calls and results included, see history.mjs), `GET /v1/models` and
// `GET /health` on 127.0.0.1. Once the model is loaded it prints one JSON
// line to stdout, `{"ready":true,"port":N,...}`; everything else goes to
// stderr. Requests run one at a time at temperature 0 (repeatable answers);
// `max_tokens` is honoured but capped at --max-tokens, so a tiny CPU model
// answers in seconds. A prompt that does not fit the context is refused
// with 400 `exceed_context_size_error`, as llama.cpp's own server does.
// The server exits on SIGINT or SIGTERM; with --exit-with-stdin also when
// its standard input closes, so it never outlives the driver that started it.

import http from "node:http";
import { parseArgs } from "node:util";
import { getLlama, LlamaChat, LlamaLogLevel } from "node-llama-cpp";
import { BadRequest, toHistory } from "./history.mjs";

const { values: args } = parseArgs({
  options: {
    model: { type: "string" },
    port: { type: "string", default: "0" },
    "max-tokens": { type: "string", default: "256" },
    "context-size": { type: "string" },
    threads: { type: "string", default: "2" },
    name: { type: "string", default: "smollm2" },
    "exit-with-stdin": { type: "boolean", default: false },
  },
});
if (!args.model) {
  fail("usage: node server.mjs --model FILE.gguf [--port 0] [--max-tokens 256]");
}
const maxTokensCap = positive("--max-tokens", args["max-tokens"]);
const threads = positive("--threads", args.threads);

function positive(flag, text) {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) fail(`${flag} must be a positive integer, got ${text}`);
  return n;
}

function fail(message) {
  process.stderr.write(`server: ${message}\n`);
  process.exit(1);
}

function log(message) {
  process.stderr.write(`server: ${message}\n`);
}

// The prebuilt CPU binary only: nothing is built or downloaded at run time.
// llama.cpp's own messages go to stderr: stdout carries only the ready line.
const llama = await getLlama({
  gpu: false,
  build: "never",
  logLevel: LlamaLogLevel.warn,
  logger: (level, message) => process.stderr.write(`llama.cpp ${level}: ${message.trimEnd()}\n`),
});
const loadStart = Date.now();
const model = await llama.loadModel({ modelPath: args.model });
const contextSize = args["context-size"]
  ? positive("--context-size", args["context-size"])
  : model.trainContextSize;
// threads: 2 (not the default): with the default, requests hang on the
// 2-core machines this runs on.
const context = await model.createContext({ contextSize, threads, sequences: 1 });
const chat = new LlamaChat({ contextSequence: context.getSequence() });
log(
  `loaded ${args.model} in ${Date.now() - loadStart} ms ` +
    `(context ${context.contextSize} tokens, ${threads} threads, replies capped at ${maxTokensCap} tokens)`,
);

function promptTokens(history) {
  const { contextText } = chat.chatWrapper.generateContextState({ chatHistory: history });
  return contextText.tokenize(model.tokenizer).length;
}

async function complete(body) {
  if (body.stream === true) throw new BadRequest("streaming is not supported by this server");
  const history = toHistory(body.messages);
  const requested = body.max_completion_tokens ?? body.max_tokens;
  const maxTokens = Number.isInteger(requested) && requested > 0
    ? Math.min(requested, maxTokensCap)
    : maxTokensCap;
  const prompt = promptTokens(history);
  if (prompt + maxTokens > context.contextSize) {
    throw new BadRequest(
      `the request exceeds the available context size: ${prompt} prompt tokens + ` +
        `${maxTokens} reply tokens > ${context.contextSize}`,
      "exceed_context_size_error",
    );
  }
  const start = Date.now();
  const result = await chat.generateResponse(history, { maxTokens, temperature: 0 });
  const text = result.response;
  const completion = text.length === 0 ? 0 : model.tokenize(text).length;
  const finish = result.metadata.stopReason === "maxTokens" ? "length" : "stop";
  log(
    `reply: ${prompt} prompt tokens, ${completion} reply tokens (cap ${maxTokens}), ` +
      `${finish}, ${Date.now() - start} ms`,
  );
  return {
    id: `chatcmpl-${Date.now().toString(36)}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: typeof body.model === "string" ? body.model : args.name,
    choices: [
      { index: 0, message: { role: "assistant", content: text }, finish_reason: finish },
    ],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  };
}

// One request at a time: the context has a single sequence.
let queue = Promise.resolve();
function serialized(task) {
  const run = queue.then(task, task);
  queue = run.catch(() => {});
  return run;
}

function send(res, status, value) {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function sendError(res, status, message, type) {
  send(res, status, { error: { message, type, code: status } });
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://localhost");
  const path = url.pathname.replace(/\/+$/, "");
  if (req.method === "GET" && (path === "/health" || path === "/v1/health")) {
    return send(res, 200, { status: "ok" });
  }
  if (req.method === "GET" && path === "/v1/models") {
    return send(res, 200, {
      object: "list",
      data: [{ id: args.name, object: "model", owned_by: "local", context_length: context.contextSize }],
    });
  }
  if (path !== "/v1/chat/completions" && path !== "/chat/completions") {
    return sendError(res, 404, `no route ${req.method} ${url.pathname}`, "not_found_error");
  }
  if (req.method !== "POST") {
    return sendError(res, 405, "use POST", "invalid_request_error");
  }
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch (e) {
      return sendError(res, 400, `the body is not JSON: ${e.message}`, "invalid_request_error");
    }
    serialized(() => complete(body)).then(
      (answer) => send(res, 200, answer),
      (e) => {
        if (e instanceof BadRequest) {
          log(`refused: ${e.message}`);
          sendError(res, 400, e.message, e.type);
        } else {
          log(`failed: ${e?.stack ?? e}`);
          sendError(res, 500, String(e?.message ?? e), "server_error");
        }
      },
    );
  });
});

server.on("error", (e) => fail(`cannot listen on 127.0.0.1:${args.port}: ${e.message}`));
server.listen(Number(args.port), "127.0.0.1", () => {
  const { port } = server.address();
  process.stdout.write(
    JSON.stringify({ ready: true, port, model: args.name, contextSize: context.contextSize, maxTokens: maxTokensCap }) + "\n",
  );
});

// Exiting frees the model; an answer in progress is dropped with the connection.
function stop(why) {
  log(`stopping (${why})`);
  process.exit(0);
}
process.on("SIGINT", () => stop("SIGINT"));
process.on("SIGTERM", () => stop("SIGTERM"));
if (args["exit-with-stdin"]) {
  process.stdin.on("end", () => stop("standard input closed"));
  process.stdin.on("error", () => stop("standard input failed"));
  process.stdin.resume();
}
