/**
 * The extension inside the real pi (`@mariozechner/pi-coding-agent`, the
 * version the lockfile pins), with pi's faux model: no network, no key.
 *
 * pi loads `src/index.ts` the way it loads any extension, runs a short
 * conversation into a session file, compacts it and navigates its tree;
 * then the stored entries are checked against what the `musepi` binary
 * (`MUSEPI_BIN`) makes of the same file, and pi's context, read back from
 * the file by a fresh SessionManager, against `musepi context --json`.
 * Last, with no musepi to run, pi compacts by itself after one notice.
 */

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, test } from "node:test";

import { fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider } from "@mariozechner/pi-ai";
import {
	type AgentSession,
	AuthStorage,
	createAgentSession,
	DefaultResourceLoader,
	estimateTokens,
	type ExtensionUIContext,
	ModelRegistry,
	SessionManager,
	SettingsManager,
} from "@mariozechner/pi-coding-agent";

/** The extension as pi loads it: the TypeScript source, through pi's own loader. */
const here = dirname(fileURLToPath(import.meta.url));
const extension = join(here, "..", "..", "src", "index.ts");
const musepi = process.env.MUSEPI_BIN || "musepi";

const root = mkdtempSync(join(tmpdir(), "musepi-pi-e2e-"));
after(() => rmSync(root, { recursive: true, force: true }));
const home = join(root, "home");
const agentDir = join(root, "agent");
const cwd = join(root, "project");
for (const d of [home, agentDir, cwd]) mkdirSync(d, { recursive: true });
// musepi reads no settings of the person running the test.
process.env.HOME = home;
// This test checks what pi stores of musepi's work against what the musepi
// binary makes of the same file, so musepi runs its model-free archive, as
// a user who chose it in musepi's settings gets (pi's model writes the
// summary otherwise; test/bridge.test.ts and the RPC test cover that).
mkdirSync(join(home, ".musepi"), { recursive: true });
writeFileSync(join(home, ".musepi", "settings.json"), JSON.stringify({ compaction: { strategy: "snapcompact" } }));
delete process.env.MUSEPI_SESSION_DIR;

const KEEP_RECENT = 400;
const RESERVE = 2000;
const CONTEXT_WINDOW = 32_000;
writeFileSync(
	join(agentDir, "settings.json"),
	JSON.stringify({ compaction: { enabled: false, keepRecentTokens: KEEP_RECENT, reserveTokens: RESERVE } }),
);
writeFileSync(join(cwd, "notes.md"), `# Notes\n\n${"The parser keeps a byte offset per token. ".repeat(40)}\n`);

function run(args: string[]): string {
	return execFileSync(musepi, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

function musepiJson(args: string[]): Record<string, unknown> {
	return JSON.parse(run([...args, "--json"])) as Record<string, unknown>;
}

function lastLine(file: string): Record<string, unknown> {
	const lines = readFileSync(file, "utf8").trimEnd().split("\n");
	return JSON.parse(lines[lines.length - 1] ?? "") as Record<string, unknown>;
}

type Row = { entryId: string; role: string; tokens: number };

/**
 * pi's context read back from the file by a fresh SessionManager, as rows:
 * the entry each message came from, its role, its token estimate.
 */
function piContext(file: string): Row[] {
	const sm = SessionManager.open(file);
	const branch = sm.getBranch();
	return sm.buildSessionContext().messages.map((m) => {
		const entry = branch.find(
			(e) =>
				(e.type === "message" && e.message === m) ||
				(m.role === "compactionSummary" && e.type === "compaction" && e.summary === m.summary) ||
				(m.role === "branchSummary" && e.type === "branch_summary" && e.summary === m.summary) ||
				(m.role === "custom" && e.type === "custom_message" && e.content === m.content),
		);
		assert.ok(entry, `no entry for a ${m.role} message`);
		return { entryId: entry.id, role: m.role, tokens: estimateTokens(m) };
	});
}

function musepiContext(file: string): Row[] {
	const doc = musepiJson(["context", file]) as { messages: Row[]; messageTokens: number };
	const rows = doc.messages.map(({ entryId, role, tokens }) => ({ entryId, role, tokens }));
	// Each row counts the stored message as pi's estimate does; `tokens` at
	// the top also counts the wrappers the summaries are sent in.
	assert.equal(doc.messageTokens, rows.reduce((n, r) => n + r.tokens, 0));
	return rows;
}

/** The notices the extension gives, through pi's UI (a UI that only records them). */
const notices: [string, string][] = [];
const recordingUi = new Proxy(
	{},
	{
		get: (_target, key) =>
			key === "notify" ? (text: string, level: string) => notices.push([text, level]) : () => undefined,
	},
) as ExtensionUIContext;

const faux = registerFauxProvider({
	provider: "stub",
	models: [{ id: "stub-model", contextWindow: CONTEXT_WINDOW, maxTokens: 4096 }],
});
after(() => faux.unregister());

/** The cut pi prepared for each compaction. */
const prepared: string[] = [];

async function openSession(): Promise<AgentSession> {
	const authStorage = AuthStorage.inMemory();
	// The faux model sends nothing anywhere; pi only wants some key for its provider.
	authStorage.setRuntimeApiKey("stub", "no-key-needed");
	const settingsManager = SettingsManager.create(cwd, agentDir);
	const resourceLoader = new DefaultResourceLoader({
		cwd,
		agentDir,
		settingsManager,
		additionalExtensionPaths: [extension],
		// Records pi's own preparation; answers nothing, so musepi's compaction stands.
		extensionFactories: [
			(pi) => {
				pi.on("session_before_compact", (event) => {
					prepared.push(event.preparation.firstKeptEntryId);
				});
			},
		],
		noSkills: true,
		noPromptTemplates: true,
		noThemes: true,
		noContextFiles: true,
	});
	await resourceLoader.reload();
	const { session, extensionsResult } = await createAgentSession({
		cwd,
		agentDir,
		authStorage,
		modelRegistry: ModelRegistry.inMemory(authStorage),
		model: faux.getModel(),
		thinkingLevel: "off",
		sessionManager: SessionManager.create(cwd, join(agentDir, "sessions")),
		settingsManager,
		resourceLoader,
	});
	assert.deepEqual(
		extensionsResult.errors.map((e) => e.error),
		[],
		"pi loaded the extension without errors",
	);
	assert.ok(
		extensionsResult.extensions.some((e) => e.path === extension || e.resolvedPath === extension),
		"pi loaded the extension from src/index.ts",
	);
	await session.bindExtensions({ uiContext: recordingUi });
	notices.length = 0;
	return session;
}

const long = (topic: string) => `${topic}: ${"We looked at how the tokenizer walks the input and where it allocates. ".repeat(12)}`;

test("pi stores musepi's compaction and branch summary, and reads them back as musepi does", async () => {
	const session = await openSession();
	faux.setResponses([
		fauxAssistantMessage([fauxText("Reading the notes first."), fauxToolCall("read", { path: "notes.md" })], {
			stopReason: "toolUse",
		}),
		fauxAssistantMessage(long("The notes")),
		fauxAssistantMessage([fauxToolCall("write", { path: "plan.md", content: "1. measure\n2. cut allocations\n" })], {
			stopReason: "toolUse",
		}),
		fauxAssistantMessage(long("The plan")),
		fauxAssistantMessage(long("Measurements")),
		fauxAssistantMessage(long("The fix")),
	]);
	await session.prompt("Read notes.md and tell me what the parser does.");
	await session.prompt("Write a plan to plan.md.");
	await session.prompt("Measure the allocations.");
	await session.prompt("Now fix the hot loop.");
	const file = session.sessionFile;
	assert.ok(file, "the session is written to a file");

	// What musepi makes of the same file, with pi's budgets, before pi compacts.
	const before = join(root, "before-compact.jsonl");
	copyFileSync(file, before);
	const expected = musepiJson([
		"compact",
		before,
		// Our own copy, just written: not a live session.
		"--force",
		"--no-prune",
		"--keep-recent",
		String(KEEP_RECENT),
		"--reserve",
		String(RESERVE),
	]);
	assert.equal(expected.compacted, true);

	const result = await session.compact();
	const stored = lastLine(file);
	assert.equal(stored.type, "compaction");
	assert.equal(stored.fromHook, true, "pi marks the entry as made by an extension");
	assert.equal(stored.summary, expected.summary);
	assert.equal(stored.firstKeptEntryId, expected.firstKeptEntryId);
	// musepi starts from pi's budget and shrinks it when the measured usage
	// says the estimate is low (here the faux usage is about 2.7 times the
	// estimate), so it keeps from pi's cut or later, never earlier.
	const position = (id: unknown) => session.sessionManager.getBranch().findIndex((e) => e.id === id);
	assert.equal(prepared.length, 1);
	assert.ok(position(prepared[0]) >= 0 && position(stored.firstKeptEntryId) >= position(prepared[0]), JSON.stringify(prepared));
	assert.equal(stored.tokensBefore, expected.tokensBefore);
	assert.equal(result.summary, expected.summary);
	assert.match(String(stored.summary), /Resume the prior conversation/);
	const details = stored.details as Record<string, unknown>;
	const musepiDetails = expected.details as Record<string, unknown>;
	assert.deepEqual(details.readFiles, musepiDetails.readFiles);
	assert.deepEqual(details.modifiedFiles, musepiDetails.modifiedFiles);
	assert.deepEqual(details.snapcompact, musepiDetails.snapcompact);
	assert.ok((details.readFiles as string[]).includes("notes.md"), JSON.stringify(details));
	assert.ok((details.modifiedFiles as string[]).includes("plan.md"), JSON.stringify(details));
	assert.equal((details.musepi as { strategy: string }).strategy, "snapcompact");

	assert.deepEqual(notices, [], "musepi compacted without a notice");

	// pi's context, read back from the file, is musepi's context of that file.
	const afterCompact = piContext(file);
	assert.deepEqual(afterCompact, musepiContext(file));
	assert.equal(afterCompact[0]?.role, "compactionSummary");
	assert.equal(afterCompact[0]?.entryId, stored.id);
	// And the live session holds the same messages.
	assert.deepEqual(
		session.messages.map((m) => [m.role, estimateTokens(m)]),
		afterCompact.map((r) => [r.role, r.tokens]),
	);

	// /musepi shows musepi's plan of the same session with pi's budgets.
	await session.prompt("/musepi");
	const plan = run([
		"plan",
		file,
		"--keep-recent",
		String(KEEP_RECENT),
		"--reserve",
		String(RESERVE),
		"--context-window",
		String(CONTEXT_WINDOW),
	]);
	assert.deepEqual(notices, [[`musepi plan\n${plan.trimEnd()}`, "info"]]);

	// Back to the first assistant answer, summarizing the branch left behind.
	const firstAnswer = session.sessionManager
		.getBranch()
		.find((e) => e.type === "message" && e.message.role === "assistant");
	assert.ok(firstAnswer);
	const oldLeaf = session.sessionManager.getLeafId();
	assert.ok(oldLeaf);
	const beforeTree = join(root, "before-tree.jsonl");
	copyFileSync(file, beforeTree);
	notices.length = 0;
	const nav = await session.navigateTree(firstAnswer.id, { summarize: true });
	assert.deepEqual(notices, [], "musepi summarized without a notice");
	assert.equal(nav.cancelled, false);
	const summaryEntry = lastLine(file);
	assert.equal(summaryEntry.type, "branch_summary");
	assert.equal(summaryEntry.fromHook, true);
	// pi records the navigation target as `fromId` (its branchWithSummary does).
	assert.equal(summaryEntry.fromId, firstAnswer.id);
	assert.equal(summaryEntry.parentId, firstAnswer.id);
	musepiJson([
		"branch",
		beforeTree,
		"--force",
		"--from",
		oldLeaf,
		"--to",
		firstAnswer.id,
		"--summarize",
		"--context-window",
		String(CONTEXT_WINDOW),
	]);
	const musepiSummary = lastLine(beforeTree);
	assert.equal(musepiSummary.type, "branch_summary");
	assert.equal(summaryEntry.summary, musepiSummary.summary);
	assert.deepEqual(summaryEntry.details, {
		...(musepiSummary.details as Record<string, unknown>),
		musepi: { strategy: "snapcompact" },
	});

	const afterTree = piContext(file);
	assert.deepEqual(afterTree, musepiContext(file));
	assert.equal(afterTree[afterTree.length - 1]?.role, "branchSummary");
	session.dispose();
});

test("without musepi, pi compacts by itself after one notice", async () => {
	const session = await openSession();
	faux.setResponses([
		fauxAssistantMessage(long("First")),
		fauxAssistantMessage(long("Second")),
		fauxAssistantMessage(long("Third")),
		// pi's own summarizer asks the model: the history, then possibly a turn prefix.
		fauxAssistantMessage("## Goal\npi's own summary"),
		fauxAssistantMessage("## Goal\npi's own summary"),
	]);
	await session.prompt("One.");
	await session.prompt("Two.");
	await session.prompt("Three.");
	const saved = process.env.MUSEPI_BIN;
	process.env.MUSEPI_BIN = join(root, "no-musepi-here");
	let result: Awaited<ReturnType<AgentSession["compact"]>> | undefined;
	try {
		result = await session.compact();
		assert.equal(notices.length, 1, JSON.stringify(notices));
		assert.match(notices[0]?.[0] ?? "", /^musepi: .*no-musepi-here not found .*; pi compacts the session itself$/);
		assert.equal(notices[0]?.[1], "warning");
	} finally {
		process.env.MUSEPI_BIN = saved;
	}
	const file = session.sessionFile;
	assert.ok(file && result);
	const stored = lastLine(file);
	assert.equal(stored.type, "compaction");
	assert.notEqual(stored.fromHook, true);
	assert.match(String(stored.summary), /pi's own summary/);
	assert.deepEqual(piContext(file), musepiContext(file));
	session.dispose();
});
