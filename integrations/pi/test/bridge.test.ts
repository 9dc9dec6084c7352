/**
 * pi's model lent to musepi: the bridge on its own (who may call it, what
 * it makes of a request, how failures come back), then the real `musepi`
 * binary (`MUSEPI_BIN`) compacting the example session through it, with
 * no musepi settings at all: the summary is the lent model's, the requests
 * are no more than pi's own compaction sends, a failing model leaves
 * musepi's archive, and the time the model takes is not musepi's.
 */

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { type ModelAnswer, type ModelRequest, startBridge, toModelRequest } from "../src/bridge.js";
import { compactWithMusepi, type Config, type LentModel, type Line } from "../src/musepi.js";

/** The repository: `MUSEPI_REPO` (the e2e runs a copy of the package), else the checkout the tests were built in. */
const repo = process.env.MUSEPI_REPO || join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");
const musepi = process.env.MUSEPI_BIN;
const dir = mkdtempSync(join(tmpdir(), "musepi-bridge-test-"));
after(() => rmSync(dir, { recursive: true, force: true }));

async function post(url: string, token: string | undefined, body: unknown, path = "/chat/completions") {
	const res = await fetch(`${url}${path}`, {
		method: "POST",
		headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
		body: JSON.stringify(body),
	});
	return { status: res.status, body: (await res.json()) as Record<string, any> };
}

const request = {
	model: "m",
	max_tokens: 300,
	messages: [
		{ role: "system", content: "You summarize." },
		{ role: "user", content: "<conversation>…</conversation>" },
	],
};

describe("the bridge", () => {
	test("answers musepi's request with the model's answer, for the holder of its token only", async () => {
		const seen: ModelRequest[] = [];
		const bridge = await startBridge(async (r) => {
			seen.push(r);
			return { text: "## Goal\n- done", stopReason: "length", usage: { input: 90, output: 10, cacheRead: 5, cacheWrite: 0 } };
		});
		try {
			assert.match(bridge.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
			assert.equal((await post(bridge.url, undefined, request)).status, 401);
			assert.equal((await post(bridge.url, "guess", request)).status, 401);
			assert.equal((await post(bridge.url, bridge.token, request, "/models")).status, 404);
			assert.equal(bridge.calls, 0, "no model call for a refused request");
			const ok = await post(bridge.url, bridge.token, request);
			assert.equal(ok.status, 200);
			assert.equal(ok.body.choices[0].message.content, "## Goal\n- done");
			assert.equal(ok.body.choices[0].finish_reason, "length");
			assert.deepEqual(ok.body.usage, { prompt_tokens: 95, completion_tokens: 10, total_tokens: 105 });
			assert.deepEqual(seen, [{ systemPrompt: "You summarize.", prompts: ["<conversation>…</conversation>"], maxTokens: 300 }]);
		} finally {
			await bridge.close();
		}
	});

	test("a failed call comes back as a 400 with the model's message, which musepi does not retry", async () => {
		const answers: ModelAnswer[] = [
			{ text: "", stopReason: "error", errorMessage: "prompt is too long: 40000 tokens > 32768 maximum" },
		];
		const bridge = await startBridge(async () => answers.shift() ?? Promise.reject(new Error("the network is down")));
		try {
			const overflow = await post(bridge.url, bridge.token, request);
			assert.equal(overflow.status, 400);
			assert.equal(overflow.body.error.message, "prompt is too long: 40000 tokens > 32768 maximum");
			const thrown = await post(bridge.url, bridge.token, request);
			assert.equal(thrown.status, 400);
			assert.equal(thrown.body.error.message, "the network is down");
		} finally {
			await bridge.close();
		}
	});

	test("a request musepi gives up on aborts the model's call", async () => {
		let aborted = false;
		const busy: boolean[] = [];
		const bridge = await startBridge(
			(_r, signal) =>
				new Promise<ModelAnswer>((resolve) => {
					signal.addEventListener("abort", () => {
						aborted = true;
						resolve({ text: "", stopReason: "aborted" });
					});
				}),
			{ onBusy: (b) => busy.push(b) },
		);
		try {
			const gone = new AbortController();
			const pending = fetch(`${bridge.url}/chat/completions`, {
				method: "POST",
				headers: { authorization: `Bearer ${bridge.token}` },
				body: JSON.stringify(request),
				signal: gone.signal,
			}).catch(() => undefined);
			while (!bridge.busy) await new Promise((r) => setTimeout(r, 10));
			gone.abort();
			await pending;
			while (bridge.busy) await new Promise((r) => setTimeout(r, 10));
			assert.equal(aborted, true);
			assert.deepEqual(busy, [true, false]);
		} finally {
			await bridge.close();
		}
	});

	test("only system and user messages of text are requests", () => {
		assert.deepEqual(toModelRequest({ messages: [{ role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] }] }), {
			systemPrompt: "",
			prompts: ["ab"],
			maxTokens: undefined,
		});
		assert.match(String(toModelRequest({ messages: [{ role: "tool", content: "x" }] })), /role "tool"/);
		assert.match(String(toModelRequest({ messages: [{ role: "system", content: "x" }] })), /no user message/);
		assert.match(String(toModelRequest({ messages: [{ role: "user", content: [{ type: "image_url" }] }] })), /not text/);
		assert.match(String(toModelRequest([])), /no messages/);
	});
});

/** The example session of the repository, as pi holds it: the header and the branch. */
function example(): { header: Line; branch: Line[] } {
	const lines = readFileSync(join(repo, "examples", "sessions", "todo-refactor.jsonl"), "utf8")
		.split("\n")
		.filter((l) => l.trim() !== "")
		.map((l) => JSON.parse(l) as Line);
	const [header, ...branch] = lines;
	if (!header) throw new Error("the example session is empty");
	return { header, branch };
}

/** A lent model that answers with `answer` after `delayMs`, recording each request. */
function lent(answer: (r: ModelRequest) => ModelAnswer, delayMs = 0): LentModel & { seen: ModelRequest[] } {
	const seen: ModelRequest[] = [];
	return {
		id: "pi-model",
		seen,
		complete: async (r) => {
			seen.push(r);
			if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
			return answer(r);
		},
	};
}

describe("musepi compacting with pi's model", { skip: musepi ? false : "MUSEPI_BIN is not set" }, () => {
	// musepi reads no settings of the person running the test.
	const home = join(dir, "home");
	const cwd = join(dir, "project");
	mkdirSync(home, { recursive: true });
	mkdirSync(cwd, { recursive: true });
	process.env.HOME = home;
	const config = (timeoutMs = 60_000): Config => ({ bin: musepi ?? "musepi", timeoutMs, modelTimeoutMs: 60_000 });
	const { header, branch } = example();
	const input = (model: LentModel) => ({
		header,
		branchEntries: branch,
		budgets: { keepRecentTokens: 4000, reserveTokens: 16384 },
		cwd,
		model,
		contextWindow: 200_000,
		overheadTokens: 2500,
		tokensBefore: 31_000,
	});

	test("the summary is pi's model's, in no more requests than pi sends, with no musepi settings", async () => {
		const model = lent((r) => ({
			text: r.prompts[0]?.includes("Original Request") ? "## Original Request\n- the prefix" : "## Goal\n- written by pi's model",
			stopReason: "stop",
			usage: { input: 1000, output: 50, cacheRead: 0, cacheWrite: 0 },
		}));
		const made = await compactWithMusepi(config(), input(model));
		assert.ok(made);
		assert.equal(made.strategy, "llm");
		assert.match(made.compaction.summary, /written by pi's model/);
		assert.equal(made.compaction.tokensBefore, 31_000, "what pi stores");
		// The cut splits a turn here: pi sends the history and the turn prefix.
		assert.equal(model.seen.length, 2);
		assert.equal(made.requests, 2);
		assert.deepEqual(made.warnings, []);
	});

	test("a model that fails leaves musepi's archive, with a warning", async () => {
		const model = lent(() => ({ text: "", stopReason: "error", errorMessage: "401 invalid x-api-key" }));
		const made = await compactWithMusepi(config(), input(model));
		assert.ok(made);
		assert.equal(made.strategy, "snapcompact");
		assert.match(made.warnings.join("\n"), /401 invalid x-api-key.*snapcompact archive was written instead/);
		assert.ok(model.seen.length >= 1);
	});

	test("the time pi's model takes is not musepi's", async () => {
		const model = lent(() => ({ text: "## Goal\n- slow but fine", stopReason: "stop" }), 2_500);
		// Two calls of 2.5 s each, in a run whose own work may take 2 s.
		const made = await compactWithMusepi(config(2_000), input(model));
		assert.match(made?.compaction.summary ?? "", /slow but fine/);
	});

	test("a user who chose the archive gets it, and pi's model is not called", async () => {
		mkdirSync(join(home, ".musepi"), { recursive: true });
		writeFileSync(join(home, ".musepi", "settings.json"), JSON.stringify({ compaction: { strategy: "snapcompact" } }));
		try {
			const model = lent(() => ({ text: "## never", stopReason: "stop" }));
			const made = await compactWithMusepi(config(), input(model));
			assert.equal(made?.strategy, "snapcompact");
			assert.equal(model.seen.length, 0);
		} finally {
			rmSync(join(home, ".musepi"), { recursive: true, force: true });
		}
	});
});
