/**
 * The `recall` tool: the model asks for an entry's original content or
 * searches what compactions and pruning took out of its context, and
 * musepi answers (`musepi recall --json`) from a private snapshot of pi's
 * session and the prune store kept beside pi's session file.
 *
 * The archive's ledger, the summary's wrapper and every pruned result's
 * placeholder name this tool and the entry ids it takes, so the model
 * knows where to look.
 */

import { type Config, type Line, MusepiFailure, parseJson, runMusepi, withSnapshot } from "./musepi.js";

/** The tool's name, as the archive, the summary's wrapper and the placeholders name it. */
export const RECALL_TOOL = "recall";

/**
 * The line an LLM summary ends with in pi, which wraps it in its own words:
 * the entries it replaced and the tool that reads them back. (musepi's
 * archive says it in its reading guide, and musepi's own wrapper says it
 * where musepi builds the context.)
 */
export function recallNote(firstKeptEntryId: string): string {
	return `(The entries before ${firstKeptEntryId} that this summary replaced are still in the session: the \`${RECALL_TOOL}\` tool gives back an entry's original content by its id, or lists the entries that hold a text you search for.)`;
}

/** A compaction's summary with the {@link recallNote}, unless it is musepi's archive (whose guide names the tool). */
export function withRecallNote(summary: string, firstKeptEntryId: string, strategy: string): string {
	if (strategy === "snapcompact" || summary.includes(`\`${RECALL_TOOL}\` tool`)) return summary;
	return `${summary.trimEnd()}\n\n${recallNote(firstKeptEntryId)}`;
}

/** What the model asks: one of `entry` and `grep`, and where the page starts. */
export interface RecallParams {
	entry?: string;
	grep?: string;
	offset?: number;
}

/** What the tool needs of pi's session. */
export interface RecallInput {
	header: Line;
	/** Every entry of the session, in file order. */
	entries: readonly Line[];
	/** pi's leaf: whose context decides what was taken out of it. */
	leafId?: string | null;
	/** pi's session file, beside which the prune store is kept (none for an in-memory session). */
	sessionFile?: string;
	cwd: string;
}

/** One line a search found. */
interface Match {
	entryId: string;
	role: string;
	toolName?: string | null;
	summarized: boolean;
	pruned: boolean;
	line: number;
	text: string;
}

/** The most bytes of an entry one answer gives the model (about 2,000 tokens). */
export const ENTRY_PAGE_BYTES = 8_000;
/** The most matches one answer lists. */
export const SEARCH_PAGE_MATCHES = 20;

/**
 * Runs `musepi recall` for `params` and returns the JSON document it
 * printed (an entry's page or a search's page). Throws a
 * {@link MusepiFailure} with musepi's own message when musepi refuses (an
 * unknown entry, a pruned result whose original is gone).
 */
export async function recallWithMusepi(
	config: Config,
	input: RecallInput,
	params: RecallParams,
	signal?: AbortSignal,
): Promise<Record<string, unknown>> {
	const entry = params.entry?.trim();
	const grep = params.grep;
	if ((entry ? 1 : 0) + (grep?.trim() ? 1 : 0) !== 1) {
		throw new MusepiFailure("give either `entry` (an entry id) or `grep` (a text to search for), not both", "output");
	}
	return withSnapshot(input.header, input.entries, async (file) => {
		const args = ["recall", file, "--json"];
		if (entry) args.push("--entry", entry, "--limit", String(ENTRY_PAGE_BYTES));
		else args.push("--grep", grep ?? "", "--limit", String(SEARCH_PAGE_MATCHES));
		const offset = Math.max(0, Math.floor(params.offset ?? 0));
		if (offset > 0) args.push("--offset", String(offset));
		if (input.leafId) args.push("--leaf", input.leafId);
		if (input.sessionFile) args.push("--store-of", input.sessionFile);
		return parseJson(await runMusepi(config, args, input.cwd, { signal }), "musepi recall");
	});
}

/** What the model reads of an answer: the text, the matches, and how to get the next page. */
export function recallText(doc: Record<string, unknown>): string {
	const warnings = Array.isArray(doc.warnings) ? doc.warnings.filter((w): w is string => typeof w === "string") : [];
	const tail = warnings.map((w) => `\n(warning: ${w})`).join("");
	if (Array.isArray(doc.matches)) {
		const matches = doc.matches as Match[];
		const total = typeof doc.total === "number" ? doc.total : matches.length;
		const offset = typeof doc.offset === "number" ? doc.offset : 0;
		if (total === 0) {
			return `No match for ${JSON.stringify(doc.query)} in the history compactions and pruning took out of the context.${tail}`;
		}
		const lines = matches.map((m) => {
			const where = [m.summarized ? "summarized" : "", m.pruned ? "pruned" : ""].filter((w) => w).join(", ");
			const who = m.toolName ? `${m.role} ${m.toolName}` : m.role;
			return `${m.entryId} (${who}; ${where}) line ${m.line}: ${m.text}`;
		});
		const next =
			typeof doc.next === "number"
				? `\nMore matches: call ${RECALL_TOOL} with the same grep and offset ${doc.next}.`
				: "";
		return `${total} match${total === 1 ? "" : "es"} (${offset + 1}–${offset + matches.length} shown); call ${RECALL_TOOL} with an entry id for the whole entry.\n${lines.join("\n")}${next}${tail}`;
	}
	const text = typeof doc.text === "string" ? doc.text : "";
	const next =
		typeof doc.next === "number"
			? `\n[${typeof doc.length === "number" ? doc.length : "?"} bytes in all; the rest: call ${RECALL_TOOL} with entry ${String(doc.entryId)} and offset ${doc.next}]`
			: "";
	return `${text}${next}${tail}`;
}
