/**
 * Running musepi for pi: the compaction of pi's preparation, the summary of
 * the branch pi leaves, and the plan, each computed by the `musepi` binary
 * on a private snapshot of pi's session.
 *
 * Nothing here writes pi's session file: pi stays its one writer. A
 * snapshot (the header and the entries pi holds in memory, one JSON line
 * each, as pi writes them) goes into a fresh folder only this user can
 * read, musepi works on that copy, and the folder is removed afterwards.
 * Every failure (no binary, a non-zero exit, a timeout, output that is not
 * the expected JSON) is a {@link MusepiFailure}, so the caller can let pi
 * do its own work instead.
 */

import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

import { type Complete, startBridge } from "./bridge.js";

/** One JSON object of a session file (the header or an entry). */
export type Line = { type: string; id?: string; [key: string]: unknown };

/** How to run musepi. */
export interface Config {
	/** The binary: `MUSEPI_BIN`, else `musepi` from the PATH. */
	bin: string;
	/**
	 * The most one musepi run may take of its own work, in milliseconds:
	 * time spent waiting for pi's model (through the bridge) does not count
	 * (`MUSEPI_TIMEOUT`, seconds; default {@link DEFAULT_WORK_MS}).
	 */
	timeoutMs: number;
	/**
	 * The most one call to pi's model may take, in milliseconds
	 * (`MUSEPI_MODEL_TIMEOUT`, seconds; default {@link DEFAULT_MODEL_MS}).
	 */
	modelTimeoutMs?: number;
}

/** musepi's own work (reading the session, cutting, the archive) takes a second or two. */
export const DEFAULT_WORK_MS = 30_000;
/** A model call gets what musepi's own providers get: 120 s. */
export const DEFAULT_MODEL_MS = 120_000;
/** @deprecated the name of {@link DEFAULT_WORK_MS} before model calls had their own deadline. */
export const DEFAULT_TIMEOUT_MS = DEFAULT_WORK_MS;

/** The configuration from the environment. */
export function configFrom(env: NodeJS.ProcessEnv): Config {
	const seconds = (name: string, fallback: number) => {
		const s = Number(env[name]);
		return Number.isFinite(s) && s > 0 ? s * 1000 : fallback;
	};
	return {
		bin: env.MUSEPI_BIN?.trim() || "musepi",
		timeoutMs: seconds("MUSEPI_TIMEOUT", DEFAULT_WORK_MS),
		modelTimeoutMs: seconds("MUSEPI_MODEL_TIMEOUT", DEFAULT_MODEL_MS),
	};
}

/** Why musepi gave no usable answer; the message says it in one line. */
export class MusepiFailure extends Error {
	constructor(
		message: string,
		/** `missing`, `exit`, `timeout`, `aborted`, `output`. */
		readonly kind: "missing" | "exit" | "timeout" | "aborted" | "output",
	) {
		super(message);
		this.name = "MusepiFailure";
	}
}

/** What a musepi run printed. */
export interface Run {
	code: number;
	stdout: string;
	stderr: string;
}

/** Standard output is read up to this many bytes (a text archive is about 40 kB). */
const MAX_STDOUT = 64 * 1024 * 1024;

/** What a run needs besides its arguments. */
export interface RunOptions {
	/** pi's abort. */
	signal?: AbortSignal;
	/** Variables added to musepi's environment. */
	env?: Record<string, string>;
	/**
	 * The bridge to pi's model, if the run has one: while a model call is
	 * running, the clock of musepi's own work stands still (the call has a
	 * deadline of its own).
	 */
	bridge?: { onBusy: (listener: (busy: boolean) => void) => void };
}

/**
 * Runs musepi with `args` in `cwd` (so its settings are the ones of pi's
 * working directory) and resolves with what it printed, whatever its exit
 * code. Rejects with a {@link MusepiFailure} when it cannot start, runs out
 * of time (`config.timeoutMs` of its own work, model calls left out),
 * prints too much, or the signal aborts it; the process is killed then.
 */
export function runMusepi(config: Config, args: string[], cwd: string, options: RunOptions | AbortSignal = {}): Promise<Run> {
	const { signal, env, bridge } = options instanceof AbortSignal ? { signal: options } : options;
	return new Promise((resolve, reject) => {
		if (signal?.aborted) {
			reject(new MusepiFailure("aborted", "aborted"));
			return;
		}
		// A process group of its own, so a timeout or an abort stops musepi
		// and whatever it started (hook programs) together.
		const child = spawn(config.bin, args, {
			cwd,
			stdio: ["ignore", "pipe", "pipe"],
			detached: true,
			env: env ? { ...process.env, ...env } : process.env,
		});
		const out: Buffer[] = [];
		const err: Buffer[] = [];
		let outBytes = 0;
		let errBytes = 0;
		let failure: MusepiFailure | undefined;
		const stop = (why: MusepiFailure) => {
			if (failure) return;
			failure = why;
			try {
				if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
			} catch {
				child.kill("SIGKILL");
			}
			// A grandchild may hold the pipes open: answer now, not at their close.
			done();
			reject(why);
		};
		// musepi's own work has `timeoutMs`; the clock stands still while
		// pi's model answers one of its requests.
		let timer: NodeJS.Timeout | undefined;
		let finished = false;
		let left = config.timeoutMs;
		let since = Date.now();
		const expire = () =>
			stop(
				new MusepiFailure(
					`musepi gave no answer within ${Math.round(config.timeoutMs / 1000)} s of its own work`,
					"timeout",
				),
			);
		const done = () => {
			finished = true;
			clearTimeout(timer);
			timer = undefined;
			signal?.removeEventListener("abort", onAbort);
		};
		timer = setTimeout(expire, left);
		bridge?.onBusy((busy) => {
			if (failure || finished) return;
			if (busy && timer !== undefined) {
				clearTimeout(timer);
				timer = undefined;
				left = Math.max(0, left - (Date.now() - since));
			} else if (!busy && timer === undefined) {
				since = Date.now();
				timer = setTimeout(expire, left);
			}
		});
		const onAbort = () => stop(new MusepiFailure("aborted", "aborted"));
		signal?.addEventListener("abort", onAbort, { once: true });
		child.stdout.on("data", (chunk: Buffer) => {
			outBytes += chunk.length;
			if (outBytes > MAX_STDOUT) {
				stop(new MusepiFailure(`musepi printed more than ${MAX_STDOUT} bytes`, "output"));
			} else {
				out.push(chunk);
			}
		});
		child.stderr.on("data", (chunk: Buffer) => {
			// Only the end matters: the error lines.
			errBytes += chunk.length;
			err.push(chunk);
			while (errBytes > 64 * 1024 && err.length > 1) {
				errBytes -= err.shift()?.length ?? 0;
			}
		});

		child.on("error", (e: NodeJS.ErrnoException) => {
			if (failure) return;
			done();
			if (e.code === "ENOENT") {
				reject(
					new MusepiFailure(
						`${config.bin} not found (install musepi on the PATH, or set MUSEPI_BIN to the binary)`,
						"missing",
					),
				);
			} else {
				reject(new MusepiFailure(`cannot run ${config.bin}: ${e.message}`, "missing"));
			}
		});
		child.on("close", (code, sig) => {
			if (failure) return;
			done();
			const stdout = Buffer.concat(out).toString("utf8");
			const stderr = Buffer.concat(err).toString("utf8");
			resolve({ code: code ?? (sig ? 128 : 1), stdout, stderr });
		});
	});
}

/** The one-line reason of a failed run: musepi's JSON error, else its last stderr line. */
export function failureOf(run: Run, what: string): MusepiFailure {
	let message: string | undefined;
	try {
		const doc = JSON.parse(run.stdout) as { error?: { message?: unknown } };
		if (typeof doc.error?.message === "string") message = doc.error.message;
	} catch {
		// Not JSON: the stderr line says it.
	}
	message ??=
		run.stderr
			.split("\n")
			.map((l) => l.trim())
			.filter((l) => l.length > 0)
			.pop() ?? "no message";
	return new MusepiFailure(`${what} exited with status ${run.code}: ${message}`, "exit");
}

/** The JSON document musepi printed, or a failure naming the command. */
export function parseJson(run: Run, what: string): Record<string, unknown> {
	if (run.code !== 0) throw failureOf(run, what);
	let doc: unknown;
	try {
		doc = JSON.parse(run.stdout);
	} catch {
		const head = run.stdout.trim().slice(0, 80);
		throw new MusepiFailure(`${what} printed no JSON document${head ? ` (it printed "${head}")` : ""}`, "output");
	}
	if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
		throw new MusepiFailure(`${what} printed JSON that is not an object`, "output");
	}
	return doc as Record<string, unknown>;
}

/** A snapshot of pi's session in a private folder; `remove` deletes it. */
export interface Snapshot {
	file: string;
	remove(): Promise<void>;
}

/**
 * Writes `header` and `entries` as a session file, one `JSON.stringify`
 * line each as pi writes them, into a new folder only this user can read
 * (the conversation is private).
 */
export async function writeSnapshot(header: Line, entries: readonly Line[]): Promise<Snapshot> {
	const dir = await mkdtemp(join(tmpdir(), "musepi-pi-"));
	const file = join(dir, "session.jsonl");
	const remove = () => rm(dir, { recursive: true, force: true });
	try {
		const lines = [header, ...entries].map((e) => JSON.stringify(e));
		await writeFile(file, `${lines.join("\n")}\n`, { mode: 0o600 });
		// musepi holds back from rewriting a file written in the last few
		// seconds (it may be a live agent's); this copy is ours alone.
		const aMinuteAgo = new Date(Date.now() - 60_000);
		await utimes(file, aMinuteAgo, aMinuteAgo);
	} catch (e) {
		await remove();
		throw e;
	}
	return { file, remove };
}

/** Runs `body` on a snapshot and removes it afterwards, whatever happens. */
export async function withSnapshot<T>(
	header: Line,
	entries: readonly Line[],
	body: (file: string) => Promise<T>,
): Promise<T> {
	const snap = await writeSnapshot(header, entries);
	try {
		return await body(snap.file);
	} finally {
		await snap.remove();
	}
}

/** pi's compaction budgets (its `compaction` settings). */
export interface Budgets {
	keepRecentTokens: number;
	reserveTokens: number;
}

/** What pi stores as the compaction (its `CompactionResult`). */
export interface Compaction {
	summary: string;
	firstKeptEntryId: string;
	tokensBefore: number;
	details: Record<string, unknown>;
}

/** pi's model, lent to musepi for a run (see `bridge.ts`). */
export interface LentModel {
	/** The model's id, sent as `--model`. */
	id: string;
	/** Calls the model. */
	complete: Complete;
}

/** What pi's `session_before_compact` hands over that musepi needs. */
export interface CompactInput {
	header: Line;
	/** The path from the root to pi's leaf. */
	branchEntries: readonly Line[];
	budgets: Budgets;
	customInstructions?: string;
	cwd: string;
	/** pi's model: the summary goes through it unless musepi's settings choose another strategy. */
	model?: LentModel;
	/** The model's context window. */
	contextWindow?: number;
	/** What every request carries besides its messages (system prompt, tools), estimated as messages are. */
	overheadTokens?: number;
	/** pi's own `tokensBefore` for this compaction: what the entry stores, as pi would store it. */
	tokensBefore?: number;
}

/**
 * The arguments and environment that lend pi's model to a musepi run
 * through a bridge, and the options of the run; the bridge is closed when
 * `body` ends.
 */
async function withModel<T>(
	config: Config,
	model: LentModel | undefined,
	signal: AbortSignal | undefined,
	body: (args: string[], options: RunOptions) => Promise<T>,
): Promise<T> {
	if (!model) return body([], { signal });
	const listeners: ((busy: boolean) => void)[] = [];
	const modelMs = config.modelTimeoutMs ?? DEFAULT_MODEL_MS;
	const bridge = await startBridge(
		(request, callSignal) => model.complete(request, AbortSignal.any([callSignal, AbortSignal.timeout(modelMs)])),
		{ onBusy: (busy) => listeners.forEach((l) => l(busy)) },
	);
	try {
		const args = [
			"--provider",
			"openai-compatible",
			"--base-url",
			bridge.url,
			"--model",
			model.id,
			// musepi waits as long as the call may take, and a little more.
			"--deadline",
			String(Math.ceil(modelMs / 1000) + 5),
		];
		return await body(args, {
			signal,
			env: { MUSEPI_API_KEY: bridge.token },
			bridge: { onBusy: (l) => listeners.push(l) },
		});
	} finally {
		await bridge.close();
	}
}

/** The strings of a JSON document's `warnings`. */
function warningsOf(doc: Record<string, unknown>): string[] {
	return Array.isArray(doc.warnings) ? doc.warnings.filter((w): w is string => typeof w === "string") : [];
}

/**
 * The compaction musepi makes of pi's branch, with pi's budgets, so the cut
 * is the one pi prepared. Pruning is left out: pi appends the compaction
 * entry and rewrites nothing, so the kept messages stay as they are.
 * The summary is written by pi's model when `input.model` lends it,
 * unless musepi's settings choose a strategy (`snapcompact`, `remote`);
 * when the model's call fails, musepi writes its archive instead (with a
 * warning). No more requests than pi's own compaction: no short summary.
 * `undefined` when musepi finds nothing to compact.
 */
export async function compactWithMusepi(
	config: Config,
	input: CompactInput,
	signal?: AbortSignal,
): Promise<{ compaction: Compaction; strategy: string; warnings: string[]; requests: number } | undefined> {
	const doc = await withSnapshot(input.header, input.branchEntries, (file) =>
		withModel(config, input.model, signal, async (modelArgs, options) => {
			const args = [
				"compact",
				file,
				"--json",
				"--no-prune",
				"--no-short-summary",
				"--keep-recent",
				String(input.budgets.keepRecentTokens),
				"--reserve",
				String(input.budgets.reserveTokens),
			];
			if (input.model) args.push("--default-strategy", "llm", "--archive-on-failure");
			if (input.contextWindow && input.contextWindow > 0) args.push("--context-window", String(input.contextWindow));
			if (input.overheadTokens !== undefined && input.overheadTokens >= 0) {
				args.push("--overhead-tokens", String(Math.round(input.overheadTokens)));
			}
			if (input.customInstructions?.trim()) args.push("--instructions", input.customInstructions);
			args.push(...modelArgs);
			return parseJson(await runMusepi(config, args, input.cwd, options), "musepi compact");
		}),
	);
	if (doc.compacted === false) return undefined;
	const { summary, firstKeptEntryId, tokensBefore, details } = doc;
	if (typeof summary !== "string" || summary.trim() === "") {
		throw new MusepiFailure("musepi compact returned no summary", "output");
	}
	if (typeof firstKeptEntryId !== "string" || !input.branchEntries.some((e) => e.id === firstKeptEntryId)) {
		throw new MusepiFailure(
			`musepi compact kept from ${JSON.stringify(firstKeptEntryId)}, which is not on pi's branch`,
			"output",
		);
	}
	if (typeof tokensBefore !== "number" || !Number.isFinite(tokensBefore)) {
		throw new MusepiFailure("musepi compact returned no tokensBefore", "output");
	}
	const strategy = typeof doc.strategy === "string" ? doc.strategy : "unknown";
	const musepi: Record<string, unknown> = { strategy };
	if (typeof doc.shortSummary === "string") musepi.shortSummary = doc.shortSummary;
	if (typeof doc.tokensAfter === "number") musepi.tokensAfter = doc.tokensAfter;
	const stored = typeof details === "object" && details !== null && !Array.isArray(details) ? details : {};
	return {
		compaction: {
			summary,
			firstKeptEntryId,
			// What pi stores for the same compaction (musepi computes the same figure).
			tokensBefore: input.tokensBefore ?? tokensBefore,
			details: { ...stored, musepi },
		},
		strategy,
		warnings: warningsOf(doc),
		requests: Array.isArray(doc.requests) ? doc.requests.length : 0,
	};
}

/** What pi's `session_before_tree` hands over that musepi needs. */
export interface BranchInput {
	header: Line;
	/** Every entry of the session, in file order. */
	entries: readonly Line[];
	oldLeafId: string;
	targetId: string;
	customInstructions?: string;
	replaceInstructions?: boolean;
	/** The model's context window, for the summary's budget. */
	contextWindow?: number;
	cwd: string;
	/** pi's model: the summary goes through it unless musepi's settings choose the digest. */
	model?: LentModel;
}

/** The branch summary pi stores (its `session_before_tree` answer). */
export interface BranchSummary {
	summary: string;
	details?: unknown;
}

/**
 * musepi's summary of the branch from `oldLeafId` back to where it meets
 * the path to `targetId`: the model-free digest, or an LLM summary when
 * musepi's settings select a provider.
 */
export async function branchSummaryWithMusepi(
	config: Config,
	input: BranchInput,
	signal?: AbortSignal,
): Promise<{ summary: BranchSummary; strategy: string; warnings: string[] } | undefined> {
	return withSnapshot(input.header, input.entries, async (file) => {
		const args = ["branch", file, "--from", input.oldLeafId, "--to", input.targetId, "--summarize", "--json"];
		if (input.contextWindow && input.contextWindow > 0) args.push("--context-window", String(input.contextWindow));
		if (input.customInstructions?.trim()) {
			args.push("--instructions", input.customInstructions);
			if (input.replaceInstructions) args.push("--replace-instructions");
		}
		if (input.model) args.push("--default-strategy", "llm");
		const doc = await withModel(config, input.model, signal, async (modelArgs, options) =>
			parseJson(await runMusepi(config, [...args, ...modelArgs], input.cwd, options), "musepi branch"),
		);
		if (doc.summaryEntryId === null || doc.summaryEntryId === undefined) return undefined;
		// The entry musepi appended to the snapshot carries the details too.
		const lines = (await readFile(file, "utf8")).split("\n").filter((l) => l.trim() !== "");
		let entry: Line | undefined;
		try {
			entry = JSON.parse(lines[lines.length - 1] ?? "") as Line;
		} catch {
			entry = undefined;
		}
		if (entry?.type !== "branch_summary" || entry.id !== doc.summaryEntryId) {
			throw new MusepiFailure("musepi branch wrote no branch summary entry", "output");
		}
		if (typeof entry.summary !== "string" || entry.summary.trim() === "") {
			throw new MusepiFailure("musepi branch returned an empty summary", "output");
		}
		const strategy = typeof doc.strategy === "string" ? doc.strategy : "unknown";
		// pi stores what an extension returns as extension-made; the `musepi`
		// object tells musepi that the file lists are its own, so they join
		// the next branch summary's (as for compactions).
		const stored =
			typeof entry.details === "object" && entry.details !== null && !Array.isArray(entry.details)
				? (entry.details as Record<string, unknown>)
				: {};
		const summary: BranchSummary = { summary: entry.summary, details: { ...stored, musepi: { strategy } } };
		return { summary, strategy, warnings: warningsOf(doc) };
	});
}

/** `musepi plan` of the branch, as text for people. */
export async function planWithMusepi(
	config: Config,
	input: {
		header: Line;
		branchEntries: readonly Line[];
		budgets: Budgets;
		contextWindow?: number;
		cwd: string;
		/** Whether pi's model would write the summary (the compaction's default). */
		withModel?: boolean;
		overheadTokens?: number;
	},
): Promise<string> {
	return withSnapshot(input.header, input.branchEntries, async (file) => {
		// The compaction the extension would run: no pruning, no short
		// summary, pi's model by default.
		const args = [
			"plan",
			file,
			"--no-prune",
			"--no-short-summary",
			"--keep-recent",
			String(input.budgets.keepRecentTokens),
			"--reserve",
			String(input.budgets.reserveTokens),
		];
		if (input.withModel) args.push("--default-strategy", "llm");
		if (input.overheadTokens !== undefined && input.overheadTokens >= 0) {
			args.push("--overhead-tokens", String(Math.round(input.overheadTokens)));
		}
		if (input.contextWindow && input.contextWindow > 0) args.push("--context-window", String(input.contextWindow));
		const run = await runMusepi(planConfig(config), args, input.cwd);
		if (run.code !== 0) throw failureOf(run, "musepi plan");
		return run.stdout.trimEnd();
	});
}

/** A plan answers in seconds; it never waits for a model. */
function planConfig(config: Config): Config {
	return { ...config, timeoutMs: Math.min(config.timeoutMs, 60_000) };
}

/**
 * pi's compaction settings for `cwd`: `compaction.keepRecentTokens` and
 * `compaction.reserveTokens` of `.pi/settings.json` over those of
 * `<agent dir>/settings.json` (`PI_CODING_AGENT_DIR`, else `~/.pi/agent`),
 * else pi's defaults (20000 and 16384).
 */
export async function piBudgets(cwd: string, env: NodeJS.ProcessEnv): Promise<Budgets> {
	const budgets: Budgets = { keepRecentTokens: 20_000, reserveTokens: 16_384 };
	const agentDir = expandHome(env.PI_CODING_AGENT_DIR || join(homedir(), ".pi", "agent"));
	for (const file of [join(agentDir, "settings.json"), join(cwd, ".pi", "settings.json")]) {
		let compaction: unknown;
		try {
			compaction = (JSON.parse(await readFile(file, "utf8")) as { compaction?: unknown }).compaction;
		} catch {
			continue;
		}
		if (typeof compaction !== "object" || compaction === null) continue;
		const c = compaction as Record<string, unknown>;
		if (typeof c.keepRecentTokens === "number") budgets.keepRecentTokens = c.keepRecentTokens;
		if (typeof c.reserveTokens === "number") budgets.reserveTokens = c.reserveTokens;
	}
	return budgets;
}

function expandHome(path: string): string {
	if (path === "~") return homedir();
	if (path.startsWith("~/")) return join(homedir(), path.slice(2));
	return path;
}

/** The version of this extension; musepi of the same major and minor version fits it. */
export const EXTENSION_VERSION = "0.1.0";

/** `major.minor` of a version string, or `undefined`. */
function majorMinor(version: string): string | undefined {
	return /^(\d+)\.(\d+)\.\d+/.exec(version)?.slice(1, 3).join(".");
}

/**
 * Whether musepi can run here and fits this extension: `undefined` when it
 * does, else the notice to show (pi then does the work itself whenever
 * musepi cannot).
 */
export async function checkMusepi(config: Config, cwd: string): Promise<string | undefined> {
	let run: Run;
	try {
		run = await runMusepi({ ...config, timeoutMs: Math.min(config.timeoutMs, 10_000) }, ["--version"], cwd);
	} catch (e) {
		const why = e instanceof Error ? e.message : String(e);
		return `${why}; until it is, pi compacts and summarizes by itself`;
	}
	const version = /^musepi (\S+)/.exec(run.stdout.trim())?.[1];
	if (run.code !== 0 || version === undefined) {
		return `${config.bin} --version did not say which musepi it is (exit ${run.code}); is MUSEPI_BIN a musepi binary?`;
	}
	if (majorMinor(version) !== majorMinor(EXTENSION_VERSION)) {
		return `musepi ${version} does not fit this extension (${EXTENSION_VERSION}): install the extension of the same release (\`musepi pi install\`) or a musepi ${majorMinor(EXTENSION_VERSION)}.x`;
	}
	return undefined;
}
