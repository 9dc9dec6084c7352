/**
 * The extension as a pi user runs it: the real pi (`pi --mode rpc`, the
 * version the lockfile pins) talking to a model on 127.0.0.1 with a small
 * window, through enough turns for several automatic compactions, side by
 * side with plain pi on the same script.
 *
 * The model is a loopback server of this test: it answers each turn with
 * a scripted reply, counts 1.3 tokens for each 4 characters of what a
 * request holds (the messages, the system prompt and the tools), and
 * answers a summary request with every planted fact it can read in it, as
 * a model that keeps what matters would. What it saw, and what pi wrote,
 * decide:
 *
 * - with no musepi settings at all, musepi's summaries come from pi's model
 *   (musepi's own prompts arrive at the loopback model), in no more
 *   requests than pi sends (the history, and a split turn's prefix);
 * - the kept window stays within 15% of `keepRecentTokens` in the model's
 *   tokens, after every compaction;
 * - a settings problem reaches the user as a notice, once;
 * - a musepi that hangs costs its deadline, then pi compacts, with a notice;
 * - a fact the summary dropped comes back when the model calls the
 *   extension's `recall` tool (the loopback model calls it, as a model
 *   asked about that fact would).
 *
 * `MUSEPI_E2E_REPORT` names a file for the side-by-side figures
 * (integrations/pi/README.md has a table from one run).
 */

import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const extension = join(here, "..", "..", "src", "index.ts");
/** pi's command line, beside its package entry (`dist/index.js`). */
const piCli = join(dirname(fileURLToPath(import.meta.resolve("@mariozechner/pi-coding-agent"))), "cli.js");
const musepi = process.env.MUSEPI_BIN;

const root = mkdtempSync(join(tmpdir(), "musepi-pi-rpc-"));
after(() => rmSync(root, { recursive: true, force: true }));

const CONTEXT_WINDOW = 16_000;
const RESERVE = 4_000;
const KEEP_RECENT = 4_000;
/** The loopback model's tokens per 4 characters. */
const RATIO = 1.3;
/** Facts planted in the first turns, one per turn. */
const FACTS = 6;
const MODEL = "loop-model";

/** The loopback model's count of `chars` characters. */
function tokensOf(chars: number): number {
	return Math.ceil((RATIO * chars) / 4);
}

/** The text of a message's content, as pi or an OpenAI-style request holds it. */
function textOf(content: unknown): string {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.map((p: { type?: string; text?: string; thinking?: string; name?: string; arguments?: unknown }) =>
			p.type === "text" ? (p.text ?? "") : p.type === "thinking" ? (p.thinking ?? "") : JSON.stringify(p.arguments ?? ""),
		)
		.join("");
}

/** The loopback model's count of one message: its text, and 4 tokens of framing. */
function messageTokens(content: unknown): number {
	return tokensOf(textOf(content).length) + 4;
}

interface Seen {
	kind: "turn" | "summary";
	/** musepi's summary prompts, or pi's own. */
	by: "musepi" | "pi" | "agent";
	purpose: "history" | "turnPrefix" | "short" | "turn";
	promptTokens: number;
}

/** How the loopback model behaves besides its scripted turns. */
interface ModelOptions {
	/** Its summaries keep none of the planted facts (a summary that dropped them). */
	forget?: boolean;
	/**
	 * It states the facts itself, one in each of its first replies (a
	 * decision the model made), where musepi's verified summary, which
	 * appends what the user stated, does not look.
	 */
	states?: boolean;
}

/** The question that makes the loopback model call the `recall` tool for FACT-1. */
const RECALL_QUESTION = "RECALL-QUESTION: what was the batch size of module1?";

/** The loopback model of one run. */
async function startModel(options: ModelOptions = {}): Promise<{ url: string; seen: Seen[]; toolResults: string[]; close(): Promise<void> }> {
	const seen: Seen[] = [];
	/** The tool results the model was sent, in order. */
	const toolResults: string[] = [];
	let turn = 0;
	const server = createServer((req: IncomingMessage, res: ServerResponse) => {
		const chunks: Buffer[] = [];
		req.on("data", (c: Buffer) => chunks.push(c));
		req.on("end", () => {
			const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
				messages: { role: string; content: unknown }[];
				tools?: unknown;
				stream?: boolean;
			};
			const system = body.messages.filter((m) => m.role === "system" || m.role === "developer").map((m) => textOf(m.content));
			const rest = body.messages.filter((m) => m.role !== "system" && m.role !== "developer");
			const promptTokens =
				tokensOf(system.join("").length + JSON.stringify(body.tools ?? []).length) +
				rest.reduce((n, m) => n + messageTokens(m.content), 0);
			const last = textOf(rest[rest.length - 1]?.content);
			const summary = last.includes("<conversation>") || system.join("").includes("summar") || system.join("").includes("checkpoint");
			let text: string;
			if (summary) {
				const by = system.join("").includes("You write context checkpoints") ? "musepi" : "pi";
				const purpose = /Original Request|turn prefix|TURN PREFIX|prefix of a turn/i.test(last)
					? "turnPrefix"
					: /one line|short summary/i.test(last)
						? "short"
						: "history";
				seen.push({ kind: "summary", by, purpose, promptTokens });
				const facts = options.forget ? [] : [...new Set(JSON.stringify(body.messages).match(/FACT-\d+ [a-z0-9 ]+? is \d+/g) ?? [])];
				text = `## Goal\nMake the parser fast.\n\n## Critical Context\n${facts.map((f) => `- ${f}`).join("\n")}\n`;
			} else if (rest[rest.length - 1]?.role === "tool") {
				// The tool's answer: say what it gave back.
				const result = textOf(rest[rest.length - 1]?.content);
				toolResults.push(result);
				seen.push({ kind: "turn", by: "agent", purpose: "turn", promptTokens });
				text = `Recalled: ${result.match(/FACT-1 [a-z0-9 ]+? is \d+/)?.[0] ?? "nothing"}`;
			} else if (last.includes(RECALL_QUESTION)) {
				// Asked about a fact the summary dropped: call the recall tool.
				seen.push({ kind: "turn", by: "agent", purpose: "turn", promptTokens });
				const call = {
					index: 0,
					id: "call-recall-1",
					type: "function",
					function: { name: "recall", arguments: JSON.stringify({ grep: "FACT-1 batch size" }) },
				};
				const usage = { prompt_tokens: promptTokens, completion_tokens: 20, total_tokens: promptTokens + 20 };
				res.writeHead(200, { "content-type": "text/event-stream" });
				const data = (choices: unknown[], extra = {}) =>
					`data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: MODEL, choices, ...extra })}\n\n`;
				res.write(data([{ index: 0, delta: { role: "assistant", tool_calls: [call] }, finish_reason: null }]));
				res.write(data([{ index: 0, delta: {}, finish_reason: "tool_calls" }]));
				res.write(data([], { usage }));
				res.end("data: [DONE]\n\n");
				return;
			} else {
				turn += 1;
				seen.push({ kind: "turn", by: "agent", purpose: "turn", promptTokens });
				const noted = options.states && turn <= FACTS ? `Noted: ${fact(turn)}. ` : "";
				text = `Turn ${turn} done. ${noted}${"The tokenizer now borrows its input and the parser allocates less. ".repeat(28)}`;
			}
			const usage = { prompt_tokens: promptTokens, completion_tokens: 200, total_tokens: promptTokens + 200 };
			const chunk = (delta: unknown, finish: string | null, withUsage = false) =>
				`data: ${JSON.stringify({
					id: "c",
					object: "chat.completion.chunk",
					created: 0,
					model: MODEL,
					choices: delta === null ? [] : [{ index: 0, delta, finish_reason: finish }],
					...(withUsage ? { usage } : {}),
				})}\n\n`;
			if (body.stream === false) {
				res.writeHead(200, { "content-type": "application/json" });
				res.end(
					JSON.stringify({
						id: "c",
						object: "chat.completion",
						model: MODEL,
						choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
						usage,
					}),
				);
				return;
			}
			res.writeHead(200, { "content-type": "text/event-stream" });
			res.write(chunk({ role: "assistant", content: text }, null));
			res.write(chunk({}, "stop"));
			res.write(chunk(null, null, true));
			res.end("data: [DONE]\n\n");
		});
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}/v1`,
		seen,
		toolResults,
		close: () => new Promise<void>((resolve) => server.close(() => resolve())),
	};
}

type Json = Record<string, any>;

/** One `pi --mode rpc` process: commands in, responses and events out. */
class Pi {
	private buffer = "";
	readonly events: Json[] = [];
	private waiters: { until: (e: Json) => boolean; resolve: (e: Json) => void }[] = [];
	private next = 0;
	readonly stderr: string[] = [];

	constructor(private proc: ChildProcess) {
		proc.stdout?.on("data", (chunk: Buffer) => {
			this.buffer += chunk.toString("utf8");
			let nl = this.buffer.indexOf("\n");
			while (nl >= 0) {
				const line = this.buffer.slice(0, nl).replace(/\r$/, "");
				this.buffer = this.buffer.slice(nl + 1);
				if (line.trim()) this.take(JSON.parse(line) as Json);
				nl = this.buffer.indexOf("\n");
			}
		});
		proc.stderr?.on("data", (chunk: Buffer) => this.stderr.push(chunk.toString("utf8")));
	}

	private take(e: Json): void {
		e.receivedAt = Date.now();
		this.events.push(e);
		this.waiters = this.waiters.filter((w) => {
			if (!w.until(e)) return true;
			w.resolve(e);
			return false;
		});
	}

	/** The next event that satisfies `until` (from now on). */
	wait(until: (e: Json) => boolean, what: string, ms = 60_000): Promise<Json> {
		return new Promise((resolve, reject) => {
			const timer = setTimeout(
				() => reject(new Error(`pi: no ${what} within ${ms} ms; stderr: ${this.stderr.join("").slice(-2000)}`)),
				ms,
			);
			this.waiters.push({
				until,
				resolve: (e) => {
					clearTimeout(timer);
					resolve(e);
				},
			});
		});
	}

	async command(cmd: Json): Promise<Json> {
		const id = `c${++this.next}`;
		const answer = this.wait((e) => e.type === "response" && e.id === id, `answer to ${cmd.type}`);
		this.proc.stdin?.write(`${JSON.stringify({ ...cmd, id })}\n`);
		const r = await answer;
		assert.equal(r.success, true, `${cmd.type}: ${JSON.stringify(r)}`);
		return r;
	}

	/** Sends a prompt and waits until pi is idle again, compactions included. */
	async turn(message: string): Promise<void> {
		const ended = this.wait((e) => e.type === "agent_end", "agent_end");
		await this.command({ type: "prompt", message });
		await ended;
		await this.idle();
	}

	async idle(): Promise<void> {
		// Idle three times in a row: a compaction after the turn has started by then.
		for (let calm = 0; calm < 3; ) {
			const state = (await this.command({ type: "get_state" })).data as Json;
			calm = state.isStreaming || state.isCompacting ? 0 : calm + 1;
			await new Promise((r) => setTimeout(r, 40));
		}
	}

	notices(): string[] {
		return this.events.filter((e) => e.type === "extension_ui_request" && e.method === "notify").map((e) => String(e.message));
	}

	async stop(): Promise<void> {
		this.proc.stdin?.end();
		await new Promise((resolve) => {
			this.proc.once("exit", resolve);
			setTimeout(() => this.proc.kill("SIGKILL"), 5000);
		});
	}
}

interface Run {
	name: string;
	model: Awaited<ReturnType<typeof startModel>>;
	pi: Pi;
	dir: string;
}

/**
 * Starts pi in a folder of its own: without the extension, with it from
 * this package's sources (`-e`), or as `musepi pi install` installs it.
 */
async function startPi(
	name: string,
	options: { extension: boolean | "installed"; env?: Record<string, string>; musepiSettings?: unknown; model?: ModelOptions },
): Promise<Run> {
	const dir = join(root, name);
	const agentDir = join(dir, "agent");
	const home = join(dir, "home");
	const cwd = join(dir, "project");
	for (const d of [agentDir, home, cwd]) mkdirSync(d, { recursive: true });
	const model = await startModel(options.model);
	writeFileSync(
		join(agentDir, "models.json"),
		JSON.stringify({
			providers: {
				loop: {
					baseUrl: model.url,
					api: "openai-completions",
					apiKey: "loopback-key",
					compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
					models: [{ id: MODEL, contextWindow: CONTEXT_WINDOW, maxTokens: 2_000, reasoning: false }],
				},
			},
		}),
	);
	writeFileSync(
		join(agentDir, "settings.json"),
		JSON.stringify({ compaction: { enabled: true, reserveTokens: RESERVE, keepRecentTokens: KEEP_RECENT } }),
	);
	if (options.musepiSettings !== undefined) {
		mkdirSync(join(home, ".musepi"), { recursive: true });
		writeFileSync(join(home, ".musepi", "settings.json"), JSON.stringify(options.musepiSettings));
	}
	const args = [piCli, "--mode", "rpc", "--provider", "loop", "--model", MODEL, "--session-dir", join(dir, "sessions")];
	if (options.extension === "installed") {
		execFileSync(musepi ?? "musepi", ["pi", "install"], { env: { ...process.env, HOME: home, PI_CODING_AGENT_DIR: agentDir } });
	} else if (options.extension) {
		args.push("-e", extension);
	}
	const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, PI_CODING_AGENT_DIR: agentDir, ...options.env };
	for (const key of ["MUSEPI_TIMEOUT", "MUSEPI_SESSION_DIR", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MUSEPI_API_KEY"]) {
		if (!options.env || !(key in options.env)) delete env[key];
	}
	const proc = spawn(process.execPath, args, { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
	return { name, model, pi: new Pi(proc), dir };
}

/** The planted fact of turn `n`. */
function fact(n: number): string {
	return `FACT-${n} batch size of module${n} is ${20 + n * 7}`;
}

/** The user's messages: a planted fact in each of the first turns (unless the model states them), then filler. */
function prompt(n: number, plant = true): string {
	const planted = plant && n <= FACTS ? `Remember: ${fact(n)}. ` : "";
	return `Step ${n}: ${planted}${"Keep the parser fast and the public API unchanged. ".repeat(6)}`;
}

/** Runs turns until `compactions` compactions are in the session, and a turn more. */
async function drive(run: Run, compactions: number, plant = true): Promise<void> {
	for (let n = 1; n <= 80; n++) {
		await run.pi.turn(prompt(n, plant));
		if (run.pi.events.filter((e) => e.type === "compaction_end").length >= compactions) {
			await run.pi.turn(prompt(n + 1, plant));
			return;
		}
	}
	throw new Error(`${run.name}: fewer than ${compactions} compactions in 80 turns`);
}

/** The session file of a run, as entries. */
function entries(run: Run): Json[] {
	const folder = join(run.dir, "sessions");
	const file = readdirSync(folder).find((f) => f.endsWith(".jsonl"));
	assert.ok(file, `${run.name}: no session file`);
	return readFileSync(join(folder, file), "utf8")
		.split("\n")
		.filter((l) => l.trim() !== "")
		.map((l) => JSON.parse(l) as Json)
		.slice(1);
}

interface CompactionFigures {
	tokensBefore: number;
	/** The kept messages, in the loopback model's tokens. */
	keptTokens: number;
	keptMessages: number;
	/** The next request's prompt tokens: what the model received after it. */
	tokensAfter: number;
	summaryRequests: number;
	ms: number;
	fromExtension: boolean;
}

/** What each compaction of a run did, from the session file, the events and the model's log. */
function figures(run: Run): CompactionFigures[] {
	const all = entries(run);
	const byId = new Map(all.map((e) => [e.id as string, e]));
	const compactions = all.filter((e) => e.type === "compaction");
	const starts = run.pi.events.filter((e) => e.type === "compaction_start");
	const ends = run.pi.events.filter((e) => e.type === "compaction_end");
	// The model's log in order: each compaction's summary requests come
	// between two agent turns.
	const perCompaction: number[] = [];
	let current = -1;
	let inSummary = false;
	for (const s of run.model.seen) {
		if (s.kind === "summary") {
			if (!inSummary) {
				current += 1;
				perCompaction[current] = 0;
				inSummary = true;
			}
			perCompaction[current] = (perCompaction[current] ?? 0) + 1;
		} else {
			inSummary = false;
		}
	}
	return compactions.map((c, i) => {
		// The kept messages: from the first kept entry to the compaction, on its path.
		const path: Json[] = [];
		for (let e = byId.get(c.parentId); e; e = byId.get(e.parentId)) {
			path.unshift(e);
			if (e.id === c.firstKeptEntryId) break;
		}
		const kept = path.filter((e) => e.type === "message");
		const at = all.indexOf(c);
		const afterTurn = run.model.seen.filter((s) => s.kind === "turn");
		const turnsBefore = all.slice(0, at).filter((e) => e.type === "message" && e.message.role === "assistant").length;
		return {
			tokensBefore: c.tokensBefore as number,
			keptTokens: kept.reduce((n, e) => n + messageTokens(e.message.content), 0),
			keptMessages: kept.length,
			tokensAfter: afterTurn[turnsBefore]?.promptTokens ?? Number.NaN,
			summaryRequests: perCompaction[i] ?? 0,
			ms: (ends[i]?.receivedAt ?? 0) - (starts[i]?.receivedAt ?? 0),
			fromExtension: c.fromHook === true,
		};
	});
}

/** Planted facts in what the model receives at the end of a run. */
async function factsKept(run: Run): Promise<number> {
	const messages = ((await run.pi.command({ type: "get_messages" })).data as Json).messages as Json[];
	const text = JSON.stringify(messages);
	let kept = 0;
	for (let n = 1; n <= FACTS; n++) if (text.includes(`FACT-${n} batch size of module${n} is ${20 + n * 7}`)) kept += 1;
	return kept;
}

const skip = musepi ? false : "MUSEPI_BIN is not set";

test("a pi user's compactions: musepi beside plain pi", { skip, timeout: 600_000 }, async () => {
	const plain = await startPi("pi", { extension: false });
	// As a user installs it: `musepi pi install`, then pi finds it by itself.
	const withMusepi = await startPi("musepi", { extension: "installed", env: { MUSEPI_BIN: musepi ?? "" } });
	const archive = await startPi("musepi-archive", {
		extension: true,
		env: { MUSEPI_BIN: musepi ?? "" },
		musepiSettings: { compaction: { strategy: "snapcompact" } },
	});
	const runs = [plain, withMusepi, archive];
	try {
		for (const run of runs) await drive(run, 3);
		const report: Record<string, unknown> = {};
		for (const run of runs) report[run.name] = { compactions: figures(run), factsKept: await factsKept(run), notices: run.pi.notices() };
		if (process.env.MUSEPI_E2E_REPORT) writeFileSync(process.env.MUSEPI_E2E_REPORT, `${JSON.stringify(report, null, 2)}\n`);

		// Plain pi compacts by itself; musepi's compactions are extension-made.
		assert.ok(figures(plain).every((c) => !c.fromExtension));
		const musepiFigures = figures(withMusepi);
		assert.ok(musepiFigures.length >= 3, `${musepiFigures.length} compactions`);
		assert.ok(musepiFigures.every((c) => c.fromExtension), JSON.stringify(musepiFigures));
		assert.deepEqual(withMusepi.pi.notices(), [], "nothing went wrong (musepi fits the installed extension), so nothing to tell");

		// pi's model wrote musepi's summaries, with no musepi settings at all.
		const summaries = withMusepi.model.seen.filter((s) => s.kind === "summary");
		assert.ok(summaries.length >= 3);
		assert.ok(summaries.every((s) => s.by === "musepi"), JSON.stringify(summaries));
		// No more requests than pi sends: the history, and a split turn's prefix.
		assert.ok(summaries.every((s) => s.purpose !== "short"), JSON.stringify(summaries));
		for (const c of musepiFigures) assert.ok(c.summaryRequests >= 1 && c.summaryRequests <= 2, JSON.stringify(c));

		// The kept window is keepRecentTokens of the model's tokens, within 15%, every time.
		for (const [i, c] of musepiFigures.entries()) {
			const off = Math.abs(c.keptTokens - KEEP_RECENT) / KEEP_RECENT;
			assert.ok(off <= 0.15, `compaction ${i + 1} kept ${c.keptTokens} tokens (${Math.round(off * 100)}% off): ${JSON.stringify(musepiFigures)}`);
		}
		// The archive needs no model.
		assert.equal(archive.model.seen.filter((s) => s.kind === "summary").length, 0);
		assert.ok(figures(archive).length >= 3);
	} finally {
		for (const run of runs) {
			await run.pi.stop();
			await run.model.close();
		}
	}
});

test("a settings problem is a pi notice, told once", { skip, timeout: 300_000 }, async () => {
	const run = await startPi("warned", {
		extension: true,
		env: { MUSEPI_BIN: musepi ?? "" },
		musepiSettings: { compaction: { strategy: "summarize" } },
	});
	try {
		await drive(run, 2);
		const told = run.pi.notices().filter((n) => n.includes("compaction.strategy"));
		assert.equal(told.length, 1, JSON.stringify(run.pi.notices()));
		// The bad value is dropped: pi's model writes the summaries.
		assert.ok(run.model.seen.some((s) => s.kind === "summary" && s.by === "musepi"));
	} finally {
		await run.pi.stop();
		await run.model.close();
	}
});

test("a musepi that hangs costs its deadline, then pi compacts, with a notice", { skip, timeout: 300_000 }, async () => {
	const hang = join(root, "hanging-musepi");
	writeFileSync(hang, "#!/bin/sh\nsleep 300\n");
	chmodSync(hang, 0o755);
	const run = await startPi("hung", { extension: true, env: { MUSEPI_BIN: hang, MUSEPI_TIMEOUT: "2" } });
	try {
		await drive(run, 1);
		const compaction = entries(run).find((e) => e.type === "compaction");
		assert.ok(compaction, "pi compacted");
		assert.notEqual(compaction.fromHook, true, "pi's own compaction");
		assert.ok(
			run.pi.notices().some((n) => /gave no answer within 2 s.*pi compacts the session itself/.test(n)),
			JSON.stringify(run.pi.notices()),
		);
		const start = run.pi.events.findIndex((e) => e.type === "compaction_start");
		const end = run.pi.events.findIndex((e) => e.type === "compaction_end");
		assert.ok(start >= 0 && end > start);
	} finally {
		await run.pi.stop();
		await run.model.close();
	}
});

test("a fact the summary dropped comes back through the recall tool", { skip, timeout: 300_000 }, async () => {
	// The model stated the fact in its first reply: musepi's verified summary
	// appends what the user stated, so a fact the user stated would not be
	// dropped.
	const run = await startPi("recall", { extension: true, env: { MUSEPI_BIN: musepi ?? "" }, model: { forget: true, states: true } });
	try {
		await drive(run, 1, false);
		assert.ok(figures(run).every((c) => c.fromExtension), "musepi compacted");
		const planted = fact(1);
		const messages = ((await run.pi.command({ type: "get_messages" })).data as Json).messages as Json[];
		assert.ok(!JSON.stringify(messages).includes(planted), "the summary dropped the fact, and its turn is not kept");
		// musepi's summary names the tool, so the model knows where to look.
		assert.ok(JSON.stringify(messages).includes("recall"), "the summary names the recall tool");

		await run.pi.turn(RECALL_QUESTION);
		assert.equal(run.model.toolResults.length, 1, "the model called recall once and got its answer");
		assert.match(run.model.toolResults[0] ?? "", /FACT-1 batch size of module1 is 27/);
		const all = entries(run);
		const result = all.find((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolName === "recall");
		assert.ok(result, "pi stored the tool's result");
		assert.equal(result.message.isError, false, JSON.stringify(result));
		const answer = all.filter((e) => e.type === "message" && e.message.role === "assistant").pop();
		assert.match(textOf(answer?.message.content), new RegExp(`Recalled: ${planted}`));
	} finally {
		await run.pi.stop();
		await run.model.close();
	}
});
