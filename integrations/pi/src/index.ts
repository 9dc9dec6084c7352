/**
 * musepi inside pi: pi's compactions and branch summaries come from musepi,
 * and `/musepi` shows musepi's plan for the session.
 *
 * - `session_before_compact`: musepi compacts pi's branch with pi's budgets
 *   (so the cut is the one pi prepared) and the strategy and provider of
 *   musepi's settings (snapcompact, with no model and no key, by default);
 *   pi writes the entry it gets back, so pi stays the one writer.
 * - `session_before_tree`: when the user asks for a summary of the branch
 *   being left, musepi writes it (the model-free digest by default, an LLM
 *   summary when musepi's settings select a provider).
 * - `/musepi`: `musepi plan` of the current session: what a compaction
 *   would summarize, keep and prune.
 *
 * When musepi fails (no binary, a non-zero exit, a timeout, output that is
 * not the expected JSON), the handler says so in one notice and returns
 * nothing, so pi does its own compaction or summary: nothing is lost.
 */

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
	compactWithMusepi,
	configFrom,
	type Line,
	MusepiFailure,
	piBudgets,
	planWithMusepi,
} from "./musepi.js";

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
			},
			event.signal,
		);
		if (!made) {
			tell(ctx, "musepi: nothing to compact by musepi's cut; pi compacts the session itself", "warning");
			return undefined;
		}
		for (const w of made.warnings) tell(ctx, `musepi: ${w}`, "warning");
		return { compaction: made.compaction };
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
			},
			event.signal,
		);
		if (!made) {
			tell(ctx, "musepi: no branch summary; pi summarizes the branch itself", "warning");
			return undefined;
		}
		for (const w of made.warnings) tell(ctx, `musepi: ${w}`, "warning");
		return { summary: made.summary };
	} catch (e) {
		if (e instanceof MusepiFailure && e.kind === "aborted") return undefined;
		tell(ctx, `musepi: ${reason(e)}; pi summarizes the branch itself`, "warning");
		return undefined;
	}
}

/** `/musepi`: the plan of the current branch. */
export async function showPlan(ctx: ExtensionContext, config: Config): Promise<void> {
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

/** The extension: pi calls this once per session runtime. */
export default function musepi(pi: ExtensionAPI): void {
	const config = () => configFrom(process.env);
	pi.on("session_before_compact", (event, ctx) => onBeforeCompact(event, ctx, config()));
	pi.on("session_before_tree", (event, ctx) => onBeforeTree(event, ctx, config()));
	pi.registerCommand("musepi", {
		description: "Show musepi's compaction plan for this session (what would be summarized, kept, pruned)",
		handler: async (_args, ctx) => showPlan(ctx, config()),
	});
}
