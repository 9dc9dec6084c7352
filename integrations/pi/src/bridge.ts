/**
 * pi's model, lent to musepi for one run.
 *
 * musepi sends its summary requests to an OpenAI-compatible endpoint; this
 * is one, on 127.0.0.1, that answers each request by calling the model pi
 * is using, through pi's own client (`completeSimple`), with pi's key and
 * headers and the session's thinking level, as pi's own compaction calls
 * it. The key never leaves pi: musepi gets a one-run token for the bridge,
 * and the bridge closes when the run ends.
 *
 * Errors are answered with status 400 and the model's message, which
 * musepi does not retry (pi's client has retried already); a context
 * overflow keeps its wording, so musepi can split the history and try
 * again. When musepi gives up on a request (its deadline), the call to the
 * model is aborted.
 */

import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** The model call the bridge makes: pi's `completeSimple`, or a stand-in in tests. */
export type Complete = (request: ModelRequest, signal: AbortSignal) => Promise<ModelAnswer>;

/** One summary request, as musepi sent it. */
export interface ModelRequest {
	systemPrompt: string;
	/** The user messages, in order. */
	prompts: string[];
	maxTokens?: number;
}

/** What the model answered. */
export interface ModelAnswer {
	text: string;
	/** pi's stop reason: `stop`, `length`, `error`, `aborted`, … */
	stopReason: string;
	errorMessage?: string;
	usage?: { input: number; output: number; cacheRead: number; cacheWrite: number };
}

/** A running bridge. */
export interface Bridge {
	/** The base URL musepi is given (`…/v1`). */
	url: string;
	/** The bearer token musepi must send (as `MUSEPI_API_KEY`). */
	token: string;
	/** Requests answered or failed so far. */
	readonly calls: number;
	/** Whether a model call is running now. */
	readonly busy: boolean;
	close(): Promise<void>;
}

/** What the bridge reports while it works, so a deadline can leave model time out. */
export interface BridgeEvents {
	/** A model call started (`true`) or ended (`false`). */
	onBusy?: (busy: boolean) => void;
}

/** A request body is read up to this many bytes (a summary request of a very long history). */
const MAX_BODY = 256 * 1024 * 1024;

/** Starts a bridge on 127.0.0.1 that answers with `complete`. */
export async function startBridge(complete: Complete, events: BridgeEvents = {}): Promise<Bridge> {
	const token = randomBytes(32).toString("hex");
	let calls = 0;
	let running = 0;
	const busy = (delta: number) => {
		const before = running > 0;
		running += delta;
		if (before !== running > 0) events.onBusy?.(running > 0);
	};
	const server = createServer((req, res) => {
		handle(req, res).catch((e: unknown) => {
			send(res, 500, { error: { message: e instanceof Error ? e.message : String(e) } });
		});
	});
	async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
		if (req.headers.authorization !== `Bearer ${token}`) {
			send(res, 401, { error: { message: "not this bridge's token" } });
			return;
		}
		if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
			send(res, 404, { error: { message: `no ${req.method} ${req.url} here` } });
			return;
		}
		const body = await readBody(req);
		let parsed: unknown;
		try {
			parsed = JSON.parse(body);
		} catch {
			send(res, 400, { error: { message: "the request is not JSON" } });
			return;
		}
		const request = toModelRequest(parsed);
		if (typeof request === "string") {
			send(res, 400, { error: { message: request } });
			return;
		}
		// musepi hanging up (its deadline, or the user's abort) stops the call.
		const abort = new AbortController();
		res.on("close", () => {
			if (!res.writableEnded) abort.abort();
		});
		calls += 1;
		busy(1);
		let answer: ModelAnswer;
		try {
			answer = await complete(request, abort.signal);
		} catch (e) {
			answer = { text: "", stopReason: "error", errorMessage: e instanceof Error ? e.message : String(e) };
		} finally {
			busy(-1);
		}
		if (answer.stopReason === "error" || answer.stopReason === "aborted") {
			send(res, 400, { error: { message: answer.errorMessage || `the model's call ended: ${answer.stopReason}` } });
			return;
		}
		const u = answer.usage;
		const prompt = u ? u.input + u.cacheRead + u.cacheWrite : 0;
		send(res, 200, {
			id: `bridge-${calls}`,
			object: "chat.completion",
			choices: [
				{
					index: 0,
					message: { role: "assistant", content: answer.text },
					finish_reason: answer.stopReason === "length" ? "length" : "stop",
				},
			],
			usage: u ? { prompt_tokens: prompt, completion_tokens: u.output, total_tokens: prompt + u.output } : undefined,
		});
	}
	await new Promise<void>((resolve, reject) => {
		server.once("error", reject);
		server.listen(0, "127.0.0.1", () => resolve());
	});
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}/v1`,
		token,
		get calls() {
			return calls;
		},
		get busy() {
			return running > 0;
		},
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

/** The request musepi sent, or why it is not one. */
export function toModelRequest(body: unknown): ModelRequest | string {
	if (typeof body !== "object" || body === null) return "the request is not a JSON object";
	const { messages, max_tokens: maxTokens } = body as { messages?: unknown; max_tokens?: unknown };
	if (!Array.isArray(messages)) return "the request has no messages";
	const system: string[] = [];
	const prompts: string[] = [];
	for (const m of messages) {
		const { role, content } = (m ?? {}) as { role?: unknown; content?: unknown };
		const text = textOf(content);
		if (text === undefined) return "a message's content is not text";
		if (role === "system" || role === "developer") system.push(text);
		else if (role === "user") prompts.push(text);
		else return `a message has the role ${JSON.stringify(role)}`;
	}
	if (prompts.length === 0) return "the request has no user message";
	return {
		systemPrompt: system.join("\n\n"),
		prompts,
		maxTokens: typeof maxTokens === "number" && maxTokens > 0 ? maxTokens : undefined,
	};
}

/** A message's content as text: a string, or text parts. */
function textOf(content: unknown): string | undefined {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return undefined;
	const parts: string[] = [];
	for (const part of content) {
		const { type, text } = (part ?? {}) as { type?: unknown; text?: unknown };
		if (type !== "text" || typeof text !== "string") return undefined;
		parts.push(text);
	}
	return parts.join("");
}

function readBody(req: IncomingMessage): Promise<string> {
	return new Promise((resolve, reject) => {
		const chunks: Buffer[] = [];
		let size = 0;
		req.on("data", (chunk: Buffer) => {
			size += chunk.length;
			if (size > MAX_BODY) {
				reject(new Error(`the request is larger than ${MAX_BODY} bytes`));
				req.destroy();
				return;
			}
			chunks.push(chunk);
		});
		req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
		req.on("error", reject);
	});
}

function send(res: ServerResponse, status: number, body: unknown): void {
	if (res.headersSent || res.destroyed) return;
	const text = JSON.stringify(body);
	res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
	res.end(text);
}
