/**
 * musepi inside pi: pi's compactions and branch summaries come from musepi,
 * and `/musepi` shows musepi's plan for the session.
 *
 * - `session_before_compact`: musepi compacts pi's branch with pi's budgets
 *   (so the cut is the one pi prepared); the summary is written by the
 *   model pi is using, lent to musepi through a loopback bridge, unless
 *   musepi's settings choose a strategy (`snapcompact`: the archive, no
 *   model); when the model fails, musepi writes the archive. pi writes the
 *   entry it gets back, so pi stays the one writer.
 * - `session_before_tree`: when the user asks for a summary of the branch
 *   being left, musepi writes it with pi's model (the model-free digest
 *   when musepi's settings choose snapcompact, or pi has no model).
 * - `session_start`: a notice when musepi is missing or does not fit the
 *   extension's version.
 * - `/musepi`: `musepi plan` of the current session: what a compaction
 *   would summarize, keep and prune.
 * - the `recall` tool: the model gets back an entry's original content, or
 *   searches what compactions and pruning took out of its context
 *   (`musepi recall`, see `recall.ts`).
 *
 * When musepi fails (no binary, a non-zero exit, a timeout, output that is
 * not the expected JSON), the handler says so in one notice and returns
 * nothing, so pi does its own compaction or summary: nothing is lost.
 */

import { completeSimple, Type } from "@mariozechner/pi-ai";
import type {
	CompactionResult,
	ExtensionAPI,
	ExtensionContext,
	SessionBeforeCompactEvent,
	SessionBeforeTreeEvent,
} from "@mariozechner/pi-coding-agent";
import {
	type BranchSummary,
	branchSummaryWithMusepi,
	type Config,
	checkMusepi,
	compactWithMusepi,
	configFrom,
	type LentModel,
	type Line,
	MusepiFailure,
	piBudgets,
	planWithMusepi,
} from "./musepi.js";
import { RECALL_TOOL, type RecallParams, recallText, recallWithMusepi, withRecallNote } from "./recall.js";

/** What a `session_before_compact` handler may answer (pi does not export the type). */
export interface CompactAnswer {
	compaction: CompactionResult;
}

/** What a `session_before_tree` handler may answer. */
export interface TreeAnswer {
	summary: BranchSummary;
}

/** Says `text` to the user: a notice in pi's UI, else a line on stderr. */
export function tell(ctx: ExtensionContext, text: string, level: "info" | "warning" | "error"): void {
	if (ctx.hasUI) {
		ctx.ui.notify(text, level);
	} else {
		process.stderr.write(`${text}\n`);
	}
}

/** Warnings already told in this pi process: each problem is told once. */
const told = new Set<string>();

/** Tells each of musepi's `warnings` once per pi process. */
export function tellOnce(ctx: ExtensionContext, warnings: readonly string[]): void {
	for (const w of warnings) {
		if (told.has(w)) continue;
		told.add(w);
		tell(ctx, `musepi: ${w}`, "warning");
	}
}

/** What the extension asks of pi besides the event: its model and the size of what every request carries. */
export interface Host {
	/** pi's model, lent to musepi for a run; `undefined` without a model or its key. */
	lendModel(ctx: ExtensionContext): Promise<LentModel | undefined>;
	/** The system prompt and the active tools' definitions, in tokens at 4 characters a token. */
	overheadTokens(ctx: ExtensionContext): number | undefined;
}

/** The estimate of `text`: 4 UTF-16 units a token, rounded up, as pi and musepi estimate. */
export function estimateTextTokens(text: string): number {
	return Math.ceil(text.length / 4);
}

/** The host of a running pi: its model through `completeSimple`, with the session's thinking level. */
export function piHost(pi: ExtensionAPI): Host {
	return {
		async lendModel(ctx) {
			const model = ctx.model;
			if (!model) return undefined;
			const auth = await ctx.modelRegistry.getApiKeyAndHeaders(model);
			if (!auth.ok) {
				tellOnce(ctx, [`pi's model ${model.provider}/${model.id} has no key (${auth.error}); musepi writes its archive instead`]);
				return undefined;
			}
			const thinking = pi.getThinkingLevel();
			return {
				id: model.id,
				async complete(request, signal) {
					const answer = await completeSimple(
						model,
						{
							systemPrompt: request.systemPrompt,
							messages: request.prompts.map((text) => ({
								role: "user" as const,
								content: [{ type: "text" as const, text }],
								timestamp: Date.now(),
							})),
						},
						{
							apiKey: auth.apiKey,
							headers: auth.headers,
							signal,
							maxTokens: request.maxTokens,
							// As pi's own compaction: the session's thinking level, for a model that reasons.
							...(model.reasoning && thinking !== "off" ? { reasoning: thinking } : {}),
						},
					);
					return {
						text: answer.content
							.filter((c): c is { type: "text"; text: string } => c.type === "text")
							.map((c) => c.text)
							.join(""),
						stopReason: answer.stopReason,
						errorMessage: answer.errorMessage,
						usage: answer.usage,
					};
				},
			};
		},
		overheadTokens(ctx) {
			try {
				const active = new Set(pi.getActiveTools());
				const tools = pi
					.getAllTools()
					.filter((t) => active.has(t.name))
					.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
				return estimateTextTokens(ctx.getSystemPrompt()) + estimateTextTokens(JSON.stringify(tools));
			} catch {
				// musepi measures it from the session's usage instead.
				return undefined;
			}
		},
	};
}

/** A host that lends nothing: musepi's own settings decide, and musepi measures the overhead. */
export const NO_HOST: Host = {
	lendModel: async () => undefined,
	overheadTokens: () => undefined,
};

/** The session header pi holds (a v3 header when pi has none in memory). */
function headerOf(ctx: ExtensionContext): Line {
	const header = ctx.sessionManager.getHeader();
	if (header) return header as unknown as Line;
	return {
		type: "session",
		version: 3,
		id: ctx.sessionManager.getSessionId(),
		timestamp: new Date().toISOString(),
		cwd: ctx.cwd,
	};
}

function reason(e: unknown): string {
	return e instanceof Error ? e.message : String(e);
}

/** The compaction handler: musepi's compaction, or nothing (pi compacts) with a notice. */
export async function onBeforeCompact(
	event: SessionBeforeCompactEvent,
	ctx: ExtensionContext,
	config: Config,
	host: Host = NO_HOST,
): Promise<CompactAnswer | undefined> {
	try {
		const made = await compactWithMusepi(
			config,
			{
				header: headerOf(ctx),
				branchEntries: event.branchEntries as unknown as Line[],
				budgets: {
					keepRecentTokens: event.preparation.settings.keepRecentTokens,
					reserveTokens: event.preparation.settings.reserveTokens,
				},
				customInstructions: event.customInstructions,
				cwd: ctx.cwd,
				model: await host.lendModel(ctx),
				contextWindow: ctx.model?.contextWindow,
				overheadTokens: host.overheadTokens(ctx),
				tokensBefore: event.preparation.tokensBefore,
			},
			event.signal,
		);
		if (!made) {
			tell(ctx, "musepi: nothing to compact by musepi's cut; pi compacts the session itself", "warning");
			return undefined;
		}
		tellOnce(ctx, made.warnings);
		const c = made.compaction;
		return { compaction: { ...c, summary: withRecallNote(c.summary, c.firstKeptEntryId, made.strategy) } };
	} catch (e) {
		// pi's own abort: pi cancels the compaction itself.
		if (e instanceof MusepiFailure && e.kind === "aborted") return undefined;
		tell(ctx, `musepi: ${reason(e)}; pi compacts the session itself`, "warning");
		return undefined;
	}
}

/** The tree handler: musepi's branch summary when one is wanted, or nothing (pi summarizes). */
export async function onBeforeTree(
	event: SessionBeforeTreeEvent,
	ctx: ExtensionContext,
	config: Config,
	host: Host = NO_HOST,
): Promise<TreeAnswer | undefined> {
	const p = event.preparation;
	if (!p.userWantsSummary || p.entriesToSummarize.length === 0 || p.oldLeafId === null) return undefined;
	try {
		const made = await branchSummaryWithMusepi(
			config,
			{
				header: headerOf(ctx),
				entries: ctx.sessionManager.getEntries() as unknown as Line[],
				oldLeafId: p.oldLeafId,
				targetId: p.targetId,
				customInstructions: p.customInstructions,
				replaceInstructions: p.replaceInstructions,
				contextWindow: ctx.model?.contextWindow,
				cwd: ctx.cwd,
				model: await host.lendModel(ctx),
			},
			event.signal,
		);
		if (!made) {
			tell(ctx, "musepi: no branch summary; pi summarizes the branch itself", "warning");
			return undefined;
		}
		tellOnce(ctx, made.warnings);
		return { summary: made.summary };
	} catch (e) {
		if (e instanceof MusepiFailure && e.kind === "aborted") return undefined;
		tell(ctx, `musepi: ${reason(e)}; pi summarizes the branch itself`, "warning");
		return undefined;
	}
}

/** `/musepi`: the plan of the current branch. */
export async function showPlan(ctx: ExtensionContext, config: Config, host: Host = NO_HOST): Promise<void> {
	const branch = ctx.sessionManager.getBranch() as unknown as Line[];
	if (branch.length === 0) {
		tell(ctx, "musepi: the session is empty; there is nothing to plan", "info");
		return;
	}
	try {
		const text = await planWithMusepi(config, {
			header: headerOf(ctx),
			branchEntries: branch,
			budgets: await piBudgets(ctx.cwd, process.env),
			contextWindow: ctx.model?.contextWindow,
			cwd: ctx.cwd,
			withModel: ctx.model !== undefined,
			overheadTokens: host.overheadTokens(ctx),
		});
		if (ctx.hasUI) {
			ctx.ui.notify(`musepi plan\n${text}`, "info");
		} else {
			process.stdout.write(`${text}\n`);
		}
	} catch (e) {
		tell(ctx, `musepi: ${reason(e)}`, "error");
	}
}

/** At the start of a session: whether musepi can run and fits this extension, with a notice when not. */
export async function onSessionStart(ctx: ExtensionContext, config: Config): Promise<void> {
	const problem = await checkMusepi(config, ctx.cwd);
	if (problem) tellOnce(ctx, [problem]);
}

/**
 * The `recall` tool's answer: musepi's page as text for the model. A
 * refusal (an unknown entry, a pruned result whose original is gone, no
 * musepi) is thrown, so pi hands the model an error result with the reason.
 */
export async function recallTool(
	ctx: ExtensionContext,
	config: Config,
	params: RecallParams,
	signal?: AbortSignal,
): Promise<{ content: { type: "text"; text: string }[]; details: Record<string, unknown> }> {
	const doc = await recallWithMusepi(
		config,
		{
			header: headerOf(ctx),
			entries: ctx.sessionManager.getEntries() as unknown as Line[],
			leafId: ctx.sessionManager.getLeafId(),
			sessionFile: ctx.sessionManager.getSessionFile(),
			cwd: ctx.cwd,
		},
		params,
		signal,
	);
	return { content: [{ type: "text", text: recallText(doc) }], details: doc };
}

/** The `recall` tool's definition (its parameters in pi's schema). */
export const RECALL_PARAMETERS = Type.Object({
	entry: Type.Optional(
		Type.String({ description: "An entry id (as the archive, a summary or a pruned placeholder names it): its whole original content" }),
	),
	grep: Type.Optional(
		Type.String({ description: "A text to search for, literally and in any case, in what compactions and pruning took out of the context" }),
	),
	offset: Type.Optional(Type.Number({ description: "Where the page starts: the `offset` the previous answer gave for the next page" })),
});

/** The extension: pi calls this once per session runtime. */
export default function musepi(pi: ExtensionAPI): void {
	const config = () => configFrom(process.env);
	const host = piHost(pi);
	pi.on("session_start", (_event, ctx) => onSessionStart(ctx, config()));
	pi.on("session_before_compact", (event, ctx) => onBeforeCompact(event, ctx, config(), host));
	pi.on("session_before_tree", (event, ctx) => onBeforeTree(event, ctx, config(), host));
	pi.registerCommand("musepi", {
		description: "Show musepi's compaction plan for this session (what would be summarized, kept, pruned)",
		handler: async (_args, ctx) => showPlan(ctx, config(), host),
	});
	pi.registerTool({
		name: RECALL_TOOL,
		label: "Recall",
		description:
			"Get back what compactions and pruning took out of your context: with `entry`, an entry's original content (a tool output that was truncated or superseded, a message a summary replaced), by the entry id the summary, the archive or the placeholder names; with `grep`, a search of that history that lists entry ids with the matching line. Give one of the two.",
		promptSnippet: "Get back an entry's original content by its id, or search the history compaction took out of the context",
		parameters: RECALL_PARAMETERS,
		execute: async (_id, params, signal, _onUpdate, ctx) => recallTool(ctx, config(), params, signal),
	});
}
