/**
 * The extension's own logic against stand-in `musepi` programs: what it
 * sends, what it takes from the answer, and that every failure (no binary,
 * a non-zero exit, a timeout, an abort, output that is not the expected
 * JSON) leaves the work to pi with one notice.
 */

import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import type { ExtensionContext, SessionBeforeCompactEvent, SessionBeforeTreeEvent } from "@mariozechner/pi-coding-agent";

import { onBeforeCompact, onBeforeTree, onSessionStart, showPlan, tellOnce } from "../src/index.js";
import {
	branchSummaryWithMusepi,
	checkMusepi,
	type Config,
	compactWithMusepi,
	configFrom,
	DEFAULT_MODEL_MS,
	DEFAULT_WORK_MS,
	EXTENSION_VERSION,
	type Line,
	MusepiFailure,
	piBudgets,
	runMusepi,
} from "../src/musepi.js";

/** The repository: `MUSEPI_REPO` (the e2e runs a copy of the package), else the checkout the tests were built in. */
const repo = process.env.MUSEPI_REPO || join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");

const dir = mkdtempSync(join(tmpdir(), "musepi-pi-test-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A stand-in musepi: a shell script that records its arguments and snapshot, then runs `body`. */
function fake(name: string, body: string): Config {
	const bin = join(dir, name);
	const record = join(dir, `${name}.args`);
	writeFileSync(
		bin,
		`#!/bin/sh\nprintf '%s\\n' "$@" > '${record}'\ncp "$2" '${record}.snapshot' 2>/dev/null\nstat -c %a "$2" > '${record}.mode' 2>/dev/null\n${body}\n`,
	);
	chmodSync(bin, 0o755);
	return { bin, timeoutMs: 10_000 };
}

function recorded(config: Config): string[] {
	return readFileSync(`${config.bin}.args`, "utf8").trimEnd().split("\n");
}

/** Prints `doc` as JSON. */
function printing(doc: unknown, code = 0): string {
	return `cat <<'EOF'\n${JSON.stringify(doc)}\nEOF\nexit ${code}`;
}

const header: Line = { type: "session", version: 3, id: "s1", timestamp: "2025-05-01T10:00:00.000Z", cwd: "/p" };
const entries: Line[] = [
	{ type: "message", id: "a1", parentId: null, timestamp: "2025-05-01T10:00:01.000Z", message: { role: "user", content: "hi" } },
	{
		type: "message",
		id: "a2",
		parentId: "a1",
		timestamp: "2025-05-01T10:00:02.000Z",
		message: { role: "assistant", content: [{ type: "text", text: "hello" }] },
	},
];
const budgets = { keepRecentTokens: 123, reserveTokens: 456 };
const compactInput = { header, branchEntries: entries, budgets, cwd: dir };

const good = {
	compacted: true,
	strategy: "snapcompact",
	firstKeptEntryId: "a2",
	tokensBefore: 42,
	tokensAfter: 7,
	summary: "Resume the prior conversation …",
	shortSummary: "archived 3 tokens verbatim",
	details: { readFiles: ["a.rs"], modifiedFiles: [], snapcompact: { text: "¶user: hi", truncatedChars: 0, version: 1 } },
	warnings: ["one warning"],
};

describe("compactWithMusepi", () => {
	test("sends pi's branch and budgets and returns musepi's compaction", async () => {
		const config = fake("good", printing(good));
		const made = await compactWithMusepi(config, { ...compactInput, customInstructions: "focus on tests" });
		assert.deepEqual(made?.compaction, {
			summary: good.summary,
			firstKeptEntryId: "a2",
			tokensBefore: 42,
			details: { ...good.details, musepi: { strategy: "snapcompact", shortSummary: good.shortSummary, tokensAfter: 7 } },
		});
		assert.deepEqual(made?.warnings, ["one warning"]);
		const args = recorded(config);
		assert.equal(args[0], "compact");
		assert.deepEqual(args.slice(2), [
			"--json",
			"--no-prune",
			"--no-short-summary",
			"--keep-recent",
			"123",
			"--reserve",
			"456",
			"--instructions",
			"focus on tests",
		]);
		// The snapshot is pi's header and entries as pi writes them, private, and gone afterwards.
		const snapshot = readFileSync(`${config.bin}.args.snapshot`, "utf8");
		assert.equal(snapshot, `${[header, ...entries].map((e) => JSON.stringify(e)).join("\n")}\n`);
		assert.equal(readFileSync(`${config.bin}.args.mode`, "utf8").trim(), "600");
		assert.equal(existsSync(args[1] ?? ""), false);
	});

	test("nothing to compact is no compaction", async () => {
		const config = fake("nothing", printing({ compacted: false, reason: "Nothing to compact" }));
		assert.equal(await compactWithMusepi(config, compactInput), undefined);
	});

	test("a missing binary says how to install musepi", async () => {
		await assert.rejects(
			compactWithMusepi({ bin: join(dir, "no-such-musepi"), timeoutMs: 1000 }, compactInput),
			(e: unknown) => e instanceof MusepiFailure && e.kind === "missing" && /MUSEPI_BIN/.test(e.message),
		);
	});

	test("a non-zero exit carries musepi's own message", async () => {
		const config = fake(
			"torn",
			printing({ error: { code: "torn-tail", message: "s.jsonl:3: the last line is torn", line: 3 } }, 2),
		);
		await assert.rejects(
			compactWithMusepi(config, compactInput),
			(e: unknown) =>
				e instanceof MusepiFailure &&
				e.kind === "exit" &&
				e.message === "musepi compact exited with status 2: s.jsonl:3: the last line is torn",
		);
		const crash = fake("crash", "echo 'musepi: error: something broke' >&2\nexit 1");
		await assert.rejects(compactWithMusepi(crash, compactInput), /status 1: musepi: error: something broke/);
	});

	test("output that is not the expected JSON is a failure", async () => {
		await assert.rejects(
			compactWithMusepi(fake("text", "echo 'tokens 42 -> 7'"), compactInput),
			(e: unknown) => e instanceof MusepiFailure && e.kind === "output" && /no JSON document/.test(e.message),
		);
		await assert.rejects(compactWithMusepi(fake("list", printing([1, 2])), compactInput), /not an object/);
		await assert.rejects(
			compactWithMusepi(fake("elsewhere", printing({ ...good, firstKeptEntryId: "zz" })), compactInput),
			/kept from "zz", which is not on pi's branch/,
		);
		await assert.rejects(compactWithMusepi(fake("empty", printing({ ...good, summary: " " })), compactInput), /no summary/);
		await assert.rejects(
			compactWithMusepi(fake("notokens", printing({ ...good, tokensBefore: "42" })), compactInput),
			/no tokensBefore/,
		);
	});

	test("a musepi that takes too long is stopped", async () => {
		const config = { ...fake("slow", "sleep 30"), timeoutMs: 300 };
		const started = Date.now();
		await assert.rejects(
			compactWithMusepi(config, compactInput),
			(e: unknown) => e instanceof MusepiFailure && e.kind === "timeout",
		);
		assert.ok(Date.now() - started < 5000, "the process was killed at the timeout");
	});

	test("pi's abort stops musepi", async () => {
		const config = fake("aborted", "sleep 30");
		const controller = new AbortController();
		setTimeout(() => controller.abort(), 200);
		await assert.rejects(
			compactWithMusepi(config, compactInput, controller.signal),
			(e: unknown) => e instanceof MusepiFailure && e.kind === "aborted",
		);
	});
});

describe("branchSummaryWithMusepi", () => {
	const summaryEntry = {
		type: "branch_summary",
		id: "b9",
		parentId: "a1",
		timestamp: "2025-05-01T10:00:03.000Z",
		fromId: "a2",
		summary: "The branch read a.rs.",
		details: { readFiles: ["a.rs"], modifiedFiles: [] },
	};
	const input = { header, entries, oldLeafId: "a2", targetId: "a1", contextWindow: 64000, cwd: dir };

	test("returns the summary and details of the entry musepi wrote", async () => {
		const config = fake(
			"branch",
			`printf '%s\\n' '${JSON.stringify(summaryEntry)}' >> "$2"\n${printing({ summaryEntryId: "b9", strategy: "snapcompact", warnings: [] })}`,
		);
		const made = await branchSummaryWithMusepi(config, {
			...input,
			customInstructions: "what was read",
			replaceInstructions: false,
		});
		assert.deepEqual(made?.summary, {
			summary: summaryEntry.summary,
			details: { ...summaryEntry.details, musepi: { strategy: "snapcompact" } },
		});
		assert.equal(made?.strategy, "snapcompact");
		assert.deepEqual(recorded(config).slice(2), [
			"--from",
			"a2",
			"--to",
			"a1",
			"--summarize",
			"--json",
			"--context-window",
			"64000",
			"--instructions",
			"what was read",
		]);
	});

	test("an answer without the entry is a failure", async () => {
		const config = fake("noentry", printing({ summaryEntryId: "b9" }));
		await assert.rejects(branchSummaryWithMusepi(config, input), /wrote no branch summary entry/);
	});
});

/** A pi context that records notices. */
function context(hasUI: boolean): { ctx: ExtensionContext; notices: [string, string][] } {
	const notices: [string, string][] = [];
	const ctx = {
		hasUI,
		cwd: dir,
		model: { contextWindow: 64000 },
		ui: { notify: (text: string, level: string) => notices.push([text, level]) },
		sessionManager: {
			getHeader: () => header,
			getSessionId: () => "s1",
			getEntries: () => entries,
			getBranch: () => entries,
		},
	} as unknown as ExtensionContext;
	return { ctx, notices };
}

function compactEvent(): SessionBeforeCompactEvent {
	return {
		type: "session_before_compact",
		preparation: { settings: { enabled: true, ...budgets } },
		branchEntries: entries,
		signal: new AbortController().signal,
	} as unknown as SessionBeforeCompactEvent;
}

describe("the handlers", () => {
	test("a compaction from musepi goes to pi, each warning told once", async () => {
		const { ctx, notices } = context(true);
		const answer = await onBeforeCompact(compactEvent(), ctx, fake("handler-good", printing(good)));
		assert.equal(answer?.compaction.summary, good.summary);
		assert.deepEqual(notices, [["musepi: one warning", "warning"]]);
		await onBeforeCompact(compactEvent(), ctx, fake("handler-good-again", printing(good)));
		assert.equal(notices.length, 1, "the same problem again is not told again");
		tellOnce(ctx, ["another warning", "another warning"]);
		assert.deepEqual(notices[1], ["musepi: another warning", "warning"]);
		assert.equal(notices.length, 2);
	});

	test("any failure leaves the compaction to pi, with one notice", async () => {
		for (const config of [
			{ bin: join(dir, "absent"), timeoutMs: 1000 },
			fake("handler-exit", "exit 2"),
			fake("handler-text", "echo hello"),
			{ ...fake("handler-slow", "sleep 30"), timeoutMs: 200 },
		]) {
			const { ctx, notices } = context(true);
			assert.equal(await onBeforeCompact(compactEvent(), ctx, config), undefined, config.bin);
			assert.equal(notices.length, 1, config.bin);
			assert.match(notices[0]?.[0] ?? "", /^musepi: .*; pi compacts the session itself$/);
			assert.equal(notices[0]?.[1], "warning");
		}
	});

	test("without a UI the notice goes to stderr", async () => {
		const { ctx, notices } = context(false);
		const written: string[] = [];
		const write = process.stderr.write;
		process.stderr.write = ((chunk: string) => written.push(chunk) > 0) as typeof process.stderr.write;
		try {
			await onBeforeCompact(compactEvent(), ctx, fake("stderr-exit", "exit 2"));
		} finally {
			process.stderr.write = write;
		}
		assert.equal(notices.length, 0);
		assert.match(written.join(""), /^musepi: musepi compact exited with status 2: .*pi compacts the session itself\n$/);
	});

	test("a navigation without a wanted summary never runs musepi", async () => {
		const { ctx, notices } = context(true);
		const event = {
			type: "session_before_tree",
			preparation: { targetId: "a1", oldLeafId: "a2", commonAncestorId: "a1", entriesToSummarize: entries, userWantsSummary: false },
			signal: new AbortController().signal,
		} as unknown as SessionBeforeTreeEvent;
		assert.equal(await onBeforeTree(event, ctx, { bin: join(dir, "absent"), timeoutMs: 1000 }), undefined);
		assert.deepEqual(notices, []);
		const wanted = { ...event, preparation: { ...event.preparation, userWantsSummary: true } };
		assert.equal(await onBeforeTree(wanted, ctx, { bin: join(dir, "absent"), timeoutMs: 1000 }), undefined);
		assert.match(notices[0]?.[0] ?? "", /; pi summarizes the branch itself$/);
	});

	test("/musepi shows the plan, or says why it cannot", async () => {
		const { ctx, notices } = context(true);
		await showPlan(ctx, fake("plan", "echo 'first kept entry    a2'"));
		assert.deepEqual(notices, [["musepi plan\nfirst kept entry    a2", "info"]]);
		const failed = context(true);
		await showPlan(failed.ctx, fake("plan-fail", "echo 'musepi: error: bad' >&2; exit 2"));
		assert.deepEqual(failed.notices, [["musepi: musepi plan exited with status 2: musepi: error: bad", "error"]]);
	});
});

describe("configuration", () => {
	test("MUSEPI_BIN, MUSEPI_TIMEOUT and MUSEPI_MODEL_TIMEOUT", () => {
		assert.deepEqual(configFrom({}), { bin: "musepi", timeoutMs: DEFAULT_WORK_MS, modelTimeoutMs: DEFAULT_MODEL_MS });
		assert.equal(DEFAULT_WORK_MS, 30_000, "seconds for musepi's own work, not minutes");
		assert.deepEqual(configFrom({ MUSEPI_BIN: "/opt/musepi", MUSEPI_TIMEOUT: "2.5", MUSEPI_MODEL_TIMEOUT: "60" }), {
			bin: "/opt/musepi",
			timeoutMs: 2500,
			modelTimeoutMs: 60_000,
		});
		assert.equal(configFrom({ MUSEPI_TIMEOUT: "soon" }).timeoutMs, DEFAULT_WORK_MS);
	});

	test("the extension's version is the package's and the musepi crate's", () => {
		const pkg = JSON.parse(readFileSync(join(repo, "integrations", "pi", "package.json"), "utf8")) as { version: string };
		assert.equal(EXTENSION_VERSION, pkg.version);
		// The workspace's version, which the musepi crate takes.
		const cargo = readFileSync(join(repo, "Cargo.toml"), "utf8");
		assert.equal(/^version = "([^"]+)"/m.exec(cargo)?.[1], EXTENSION_VERSION);
	});

	test("a session start checks that musepi runs and fits", async () => {
		assert.equal(await checkMusepi(fake("fits", "echo 'musepi 0.1.7 (abc1234 2026-12-05)'"), dir), undefined);
		assert.match((await checkMusepi(fake("old", "echo musepi 0.0.9"), dir)) ?? "", /musepi 0\.0\.9 does not fit this extension/);
		assert.match(
			(await checkMusepi({ bin: join(dir, "absent"), timeoutMs: 1000 }, dir)) ?? "",
			/not found .*MUSEPI_BIN.*; until it is, pi compacts and summarizes by itself/,
		);
		const { ctx, notices } = context(true);
		await onSessionStart(ctx, { bin: join(dir, "absent-too"), timeoutMs: 1000 });
		await onSessionStart(ctx, { bin: join(dir, "absent-too"), timeoutMs: 1000 });
		assert.equal(notices.length, 1, "told once");
	});

	test("pi's budgets come from its settings files, the project's over the global ones", async () => {
		const agent = join(dir, "agent");
		const cwd = join(dir, "project");
		for (const d of [agent, join(cwd, ".pi")]) {
			await import("node:fs/promises").then((fs) => fs.mkdir(d, { recursive: true }));
		}
		const env = { PI_CODING_AGENT_DIR: agent };
		assert.deepEqual(await piBudgets(cwd, env), { keepRecentTokens: 20000, reserveTokens: 16384 });
		writeFileSync(join(agent, "settings.json"), JSON.stringify({ compaction: { keepRecentTokens: 9000, reserveTokens: 1000 } }));
		writeFileSync(join(cwd, ".pi", "settings.json"), JSON.stringify({ compaction: { keepRecentTokens: 500 } }));
		assert.deepEqual(await piBudgets(cwd, env), { keepRecentTokens: 500, reserveTokens: 1000 });
	});

	test("runMusepi reports the exit code and both streams", async () => {
		const run = await runMusepi(fake("streams", "echo out; echo err >&2; exit 3"), ["x", "y"], dir);
		assert.deepEqual(run, { code: 3, stdout: "out\n", stderr: "err\n" });
		assert.ok(statSync(dir).isDirectory());
	});
});
