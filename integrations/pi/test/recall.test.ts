/**
 * The `recall` tool: what it asks musepi (a stand-in that records its
 * arguments), what the model reads of the answer, and, with the real
 * musepi (`MUSEPI_BIN`), an output pruning blanked and a fact a compaction
 * summarized away coming back from pi's session file and the prune store
 * beside it.
 */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";

import { type ExtensionContext, SessionManager } from "@mariozechner/pi-coding-agent";

import { recallTool } from "../src/index.js";
import { type Config, type Line, MusepiFailure } from "../src/musepi.js";
import { ENTRY_PAGE_BYTES, RECALL_TOOL, recallText, recallWithMusepi, withRecallNote } from "../src/recall.js";

const dir = mkdtempSync(join(tmpdir(), "musepi-pi-recall-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const musepi = process.env.MUSEPI_BIN;

/** A stand-in musepi that records its arguments and prints `doc`. */
function fake(name: string, doc: unknown, code = 0): Config {
	const bin = join(dir, name);
	writeFileSync(
		bin,
		`#!/bin/sh\nprintf '%s\\n' "$@" > '${bin}.args'\ncat <<'EOF'\n${JSON.stringify(doc)}\nEOF\nexit ${code}\n`,
	);
	chmodSync(bin, 0o755);
	return { bin, timeoutMs: 10_000 };
}

const header: Line = { type: "session", version: 3, id: "s1", timestamp: "2025-05-01T10:00:00.000Z", cwd: "/p" };
const input = { header, entries: [] as Line[], leafId: "0000000c", sessionFile: "/p/s.jsonl", cwd: dir };

describe("recallWithMusepi", () => {
	test("an entry is asked by id, a page at a time, at pi's leaf, with the store beside pi's file", async () => {
		const config = fake("entry", { entryId: "00000003", text: "x", next: null });
		await recallWithMusepi(config, input, { entry: "00000003", offset: 8000 });
		const args = readFileSync(`${config.bin}.args`, "utf8").trimEnd().split("\n");
		assert.equal(args[0], "recall");
		assert.deepEqual(args.slice(2), [
			"--json",
			"--entry",
			"00000003",
			"--limit",
			String(ENTRY_PAGE_BYTES),
			"--offset",
			"8000",
			"--leaf",
			"0000000c",
			"--store-of",
			"/p/s.jsonl",
		]);
	});

	test("a search sends its text as it is", async () => {
		const config = fake("grep", { query: "a b", matches: [], total: 0 });
		await recallWithMusepi(config, { ...input, sessionFile: undefined, leafId: null }, { grep: "--a b" });
		const args = readFileSync(`${config.bin}.args`, "utf8").trimEnd().split("\n");
		assert.deepEqual(args.slice(2), ["--json", "--grep", "--a b", "--limit", "20"]);
	});

	test("neither or both of entry and grep is refused before musepi runs", async () => {
		const config = fake("never", {});
		for (const params of [{}, { entry: "a", grep: "b" }, { grep: "  " }]) {
			await assert.rejects(recallWithMusepi(config, input, params), (e: unknown) => e instanceof MusepiFailure && /either/.test(e.message));
		}
	});

	test("musepi's refusal is the tool's error, in musepi's words", async () => {
		const config = fake("refuses", { error: { code: "unknown-entry", message: "entry zz is not in the session" } }, 2);
		await assert.rejects(recallWithMusepi(config, input, { entry: "zz" }), /exited with status 2: entry zz is not in the session/);
	});
});

describe("withRecallNote", () => {
	test("an LLM summary names the entries it replaced and the tool; the archive, whose guide does, is left as it is", () => {
		const s = withRecallNote("## Goal\nShip it.\n", "0000002a", "llm");
		assert.equal(
			s,
			"## Goal\nShip it.\n\n(The entries before 0000002a that this summary replaced are still in the session: the `recall` tool gives back an entry's original content by its id, or lists the entries that hold a text you search for.)",
		);
		assert.equal(withRecallNote(s, "0000002a", "llm"), s, "never twice");
		assert.equal(withRecallNote("archive", "0000002a", "snapcompact"), "archive");
	});
});

describe("recallText", () => {
	test("a search lists entry ids with their line, and how to page on", () => {
		const text = recallText({
			query: "port",
			total: 3,
			offset: 0,
			next: 2,
			matches: [
				{ entryId: "00000004", role: "toolResult", toolName: "bash", summarized: true, pruned: true, line: 2, text: "port 5432 refused" },
				{ entryId: "00000009", role: "user", toolName: null, summarized: true, pruned: false, line: 1, text: "use port 6543" },
			],
			warnings: [],
		});
		assert.match(text, /^3 matches \(1–2 shown\)/);
		assert.match(text, /00000004 \(toolResult bash; summarized, pruned\) line 2: port 5432 refused/);
		assert.match(text, /00000009 \(user; summarized\) line 1: use port 6543/);
		assert.match(text, new RegExp(`call ${RECALL_TOOL} with the same grep and offset 2`));
	});

	test("an entry is its text, with where the rest starts", () => {
		assert.equal(recallText({ entryId: "a", text: "whole", next: null, warnings: [] }), "whole");
		assert.match(recallText({ entryId: "a", text: "part", next: 4, length: 9 }), /^part\n\[9 bytes in all; the rest: call recall with entry a and offset 4\]$/);
		assert.match(recallText({ query: "q", total: 0, matches: [] }), /^No match for "q"/);
	});
});

/** A pi context over the session file `file`, as pi holds it. */
function piContext(file: string): ExtensionContext {
	const lines = readFileSync(file, "utf8")
		.split("\n")
		.filter((l) => l.trim() !== "")
		.map((l) => JSON.parse(l) as Line);
	const [head, ...entries] = lines;
	return {
		cwd: dir,
		sessionManager: {
			getHeader: () => head,
			getSessionId: () => String(head?.id),
			getEntries: () => entries,
			getLeafId: () => entries[entries.length - 1]?.id ?? null,
			getSessionFile: () => file,
		},
	} as unknown as ExtensionContext;
}

describe("the tool with musepi", { skip: musepi ? false : "MUSEPI_BIN is not set" }, () => {
	test("a pruned output comes back byte for byte, and a search finds a fact a compaction summarized away", async () => {
		const config: Config = { bin: musepi ?? "musepi", timeoutMs: 30_000 };
		const file = join(dir, "s.jsonl");
		const t = (n: number) => `2025-05-01T10:${String(n).padStart(2, "0")}:00.000Z`;
		const rows: Line[] = [{ type: "session", version: 3, id: "sess-recall", timestamp: t(0), cwd: dir }];
		const output = (n: number) => `line ${n}: ${"abcdefgh ".repeat(4500)}\nFACT-${n}: the cache key of run ${n} is K${n * 37}\n`;
		let parent: string | null = null;
		let id = 0;
		const add = (message: unknown) => {
			id += 1;
			const entryId = String(id).padStart(8, "0");
			rows.push({ type: "message", id: entryId, parentId: parent, timestamp: t(id), message });
			parent = entryId;
			return entryId;
		};
		const results: Record<string, string> = {};
		for (let n = 1; n <= 8; n++) {
			add({ role: "user", content: `step ${n}`, timestamp: n });
			add({
				role: "assistant",
				content: [{ type: "toolCall", id: `c${n}`, name: "bash", arguments: { command: `run ${n}` } }],
				provider: "p",
				model: "m",
				stopReason: "toolUse",
				timestamp: n,
			});
			results[add({ role: "toolResult", toolCallId: `c${n}`, toolName: "bash", content: [{ type: "text", text: output(n) }], isError: false, timestamp: n })] =
				output(n);
		}
		add({ role: "user", content: "is it done?", timestamp: 9 });
		add({ role: "assistant", content: [{ type: "text", text: "Yes." }], provider: "p", model: "m", stopReason: "stop", timestamp: 9 });
		writeFileSync(file, `${rows.map((r) => JSON.stringify(r)).join("\n")}\n`);
		const run = (args: string[]) => execFileSync(config.bin, args, { cwd: dir, env: { ...process.env, HOME: dir } });
		run(["prune", file, "--min-saving", "0", "--force", "--now", t(59)]);
		run(["compact", file, "--keep-recent", "3000", "--force", "--now", t(59)]);

		const pruned = readFileSync(file, "utf8")
			.split("\n")
			.filter((l) => l.includes('"prunedAt"'))
			.map((l) => JSON.parse(l) as { id: string; message: { content: { text: string }[] } });
		assert.ok(pruned.length >= 3, "pruning blanked several outputs");
		for (const p of pruned) {
			assert.match(p.message.content[0]?.text ?? "", new RegExp(`recall entry ${p.id}`));
			let text = "";
			let offset = 0;
			for (;;) {
				const answer = await recallTool(piContext(file), config, { entry: p.id, offset });
				const details = answer.details as { text: string; next: number | null };
				text += details.text;
				if (details.next === null) break;
				offset = details.next;
			}
			assert.equal(text, results[p.id], `${p.id} comes back byte for byte`);
		}

		// pi never sees the store: its session list holds the session alone, and
		// pi opens the pruned file as it opens any.
		assert.ok(existsSync(join(dir, ".s.jsonl.musepi-store", "index")), "the originals are kept beside the session");
		const listed = await SessionManager.list(dir, dir);
		assert.deepEqual(
			listed.map((s) => s.path),
			[file],
		);
		assert.equal(SessionManager.open(file, dir).getEntries().length, rows.length);

		const found = await recallTool(piContext(file), config, { grep: "cache key of run 2 " });
		const text = found.content[0]?.text ?? "";
		assert.match(text, /^1 match /);
		assert.match(text, /00000006 \(toolResult bash; summarized, pruned\) line 2: FACT-2: the cache key of run 2 is K74/);
		await assert.rejects(recallTool(piContext(file), config, { entry: "nope" }), /nope/);
	});
});
