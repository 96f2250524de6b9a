// Reference driver for the MusePi profile: runs the published oh-my-pi packages (@oh-my-pi/*) on
// one session file and writes what their compaction functions report, as one JSON document.
//
// Run by conformance/run.py with the Bun binary from the npm package @oven/bun-linux-x64, from a
// copy placed beside the pinned node_modules in the cache (so the package specifiers resolve).
// Nothing of the packages is copied here: every measure comes from calling their exported
// functions (the packages export their `src/*.ts` modules through `./*` in their exports maps).
// Where the agent's own behaviour depends on module-private constants, they are read from the
// installed source text and named under `reference.private_constants`.
//
// Usage: bun omp.ts --session FILE --budgets 1000,20000 --out OUT.json
//        [--branch-target-index N | --branch-target-id ID] [--frames-dir DIR] [--no-snapcompact]
//        [--snapcompact-budgets 20000] [--texts full|digest]

import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as core from "@oh-my-pi/pi-agent-core";
import { FALLBACK_DIALECT, preferredDialect } from "@oh-my-pi/pi-catalog/identity";
import { getDefault } from "@oh-my-pi/pi-coding-agent/config/settings-schema";
import { convertToLlm } from "@oh-my-pi/pi-coding-agent/session/messages";
import { getLatestCompactionEntry } from "@oh-my-pi/pi-coding-agent/session/session-context";
import { SessionManager } from "@oh-my-pi/pi-coding-agent/session/session-manager";
import { MemorySessionStorage } from "@oh-my-pi/pi-coding-agent/session/session-storage";
import * as snap from "@oh-my-pi/snapcompact";

const SCHEMA = "musepi-lab.conformance.reference/1";
const PACKAGES = [
	"@oh-my-pi/pi-agent-core",
	"@oh-my-pi/snapcompact",
	"@oh-my-pi/pi-catalog",
	"@oh-my-pi/pi-coding-agent",
	"@oven/bun-linux-x64",
];

// Every dialect of the release's `Dialect` type (pi-catalog identity/dialect.ts), plus the legacy
// serializer used when no dialect is given ("none").
const DIALECTS = [
	"none",
	"anthropic",
	"harmony",
	"xml",
	"glm",
	"hermes",
	"kimi",
	"deepseek",
	"qwen3",
	"gemini",
	"gemma",
	"minimax",
] as const;

// Readers whose model id and wire API choose the snapcompact shape and its billing.
const SNAPCOMPACT_TARGETS: Record<string, { provider: string; api: string; id: string }> = {
	anthropic: { provider: "anthropic", api: "anthropic-messages", id: "claude-sonnet-4-5" },
	"anthropic-opus-4.7": { provider: "anthropic", api: "anthropic-messages", id: "claude-opus-4-7" },
	google: { provider: "google", api: "google-generative-ai", id: "gemini-2.5-pro" },
	openai: { provider: "openai", api: "openai-responses", id: "gpt-5" },
};

interface Args {
	session: string;
	out: string;
	budgets: number[];
	branchTargetIndex: number | null;
	branchTargetId: string | null;
	framesDir: string | null;
	snapcompact: boolean;
	snapcompactBudgets: number[] | null;
	texts: "full" | "digest";
}

function parseArgs(argv: string[]): Args {
	const args: Args = {
		session: "",
		out: "",
		budgets: [],
		branchTargetIndex: null,
		branchTargetId: null,
		framesDir: null,
		snapcompact: true,
		snapcompactBudgets: null,
		texts: "full",
	};
	for (let i = 0; i < argv.length; i++) {
		const flag = argv[i];
		if (flag === "--no-snapcompact") {
			args.snapcompact = false;
			continue;
		}
		const value = argv[++i];
		if (flag === "--session") args.session = value;
		else if (flag === "--out") args.out = value;
		else if (flag === "--budgets") args.budgets = value.split(",").filter(Boolean).map(Number);
		else if (flag === "--branch-target-index") args.branchTargetIndex = Number(value);
		else if (flag === "--branch-target-id") args.branchTargetId = value;
		else if (flag === "--frames-dir") args.framesDir = value;
		else if (flag === "--snapcompact-budgets")
			args.snapcompactBudgets = value.split(",").filter(Boolean).map(Number);
		else if (flag === "--texts") args.texts = value === "digest" ? "digest" : "full";
		else throw new Error(`unknown argument ${flag}`);
	}
	if (!args.session || !args.out) throw new Error("--session and --out are required");
	return args;
}

const here = dirname(fileURLToPath(import.meta.url));
const nodeModules = join(here, "..", "node_modules");
const packageVersion = (name: string) =>
	JSON.parse(readFileSync(join(nodeModules, ...name.split("/"), "package.json"), "utf8")).version as string;

// A module-private numeric constant, read from the installed source (never copied by hand).
function privateConstant(pkg: string, file: string, name: string): { value: number | null; source: string } {
	const source = `${pkg}/${file}`;
	const text = readFileSync(join(nodeModules, ...pkg.split("/"), file), "utf8");
	const match = new RegExp(`const\\s+${name}\\s*=\\s*([^;]+);`).exec(text);
	if (!match) return { value: null, source };
	// Forms like `8_000` and `90 * 60_000`.
	const expr = match[1].replaceAll("_", "").trim();
	if (!/^[\d\s*+]+$/.test(expr)) return { value: null, source };
	const value = expr.split("*").reduce((product, factor) => product * Number(factor.trim()), 1);
	return { value, source };
}

function sha256(data: string | Uint8Array): string {
	return createHash("sha256").update(data).digest("hex");
}

function timed<T>(timings: Record<string, number>, name: string, fn: () => T): T {
	const t0 = performance.now();
	try {
		return fn();
	} finally {
		timings[name] = Math.round((performance.now() - t0) * 10) / 10;
	}
}

async function timedAsync<T>(timings: Record<string, number>, name: string, fn: () => Promise<T>): Promise<T> {
	const t0 = performance.now();
	try {
		return await fn();
	} finally {
		timings[name] = (timings[name] ?? 0) + Math.round((performance.now() - t0) * 10) / 10;
	}
}

// The message each entry contributes, built with the package's exported constructors the way its
// compaction code maps entries (getMessageFromEntry: message, custom_message, branch_summary) and
// its context builder maps a compaction entry (a compactionSummary message); other types: none.
function entryMessage(entry: any): any {
	switch (entry.type) {
		case "message":
			return entry.message;
		case "custom_message":
			return core.createCustomMessage(
				entry.customType,
				entry.content,
				entry.display,
				entry.details,
				entry.timestamp,
				entry.attribution,
			);
		case "branch_summary":
			return core.createBranchSummaryMessage(entry.summary, entry.fromId, entry.timestamp);
		case "compaction":
			return core.createCompactionSummaryMessage(entry.summary, entry.tokensBefore, entry.timestamp, {
				shortSummary: entry.shortSummary,
			});
		default:
			return undefined;
	}
}

// PNG geometry from the IHDR chunk.
function pngInfo(bytes: Uint8Array) {
	const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
	const colorTypes: Record<number, string> = { 0: "gray", 2: "rgb", 3: "palette", 4: "gray-alpha", 6: "rgba" };
	return {
		width: view.getUint32(16),
		height: view.getUint32(20),
		bit_depth: bytes[24],
		color_type: colorTypes[bytes[25]] ?? String(bytes[25]),
	};
}

async function main() {
	const args = parseArgs(process.argv.slice(2));
	if (args.framesDir) mkdirSync(args.framesDir, { recursive: true });
	const timings: Record<string, number> = {};
	const text = (value: string) =>
		args.texts === "full" ? value : { length: value.length, sha256: sha256(value) };

	const pruneCacheWarm = privateConstant(
		"@oh-my-pi/pi-coding-agent",
		"src/session/session-maintenance.ts",
		"PRUNE_CACHE_WARM_SUFFIX_TOKENS",
	);
	const pruneIdleFlush = privateConstant(
		"@oh-my-pi/pi-coding-agent",
		"src/session/session-maintenance.ts",
		"PRUNE_IDLE_FLUSH_MS",
	);

	// The session manager reads (and migrates) the file inside an in-memory storage, so nothing
	// is written anywhere.
	const storage = new MemorySessionStorage();
	const virtual = "/musepi-conformance/session.jsonl";
	storage.writeTextSync(virtual, readFileSync(args.session, "utf8"));
	const session = await timedAsync(timings, "open", () =>
		SessionManager.open(virtual, "/musepi-conformance", storage, { initialCwd: "/", suppressBreadcrumb: true }),
	);

	const entries: any[] = session.getEntries();
	const fileIndex = new Map<string, number>(entries.map((entry, index) => [entry.id, index]));
	const path: any[] = session.getBranch();
	const pathIndices = path.map(entry => fileIndex.get(entry.id));
	const leafId = session.getLeafId();
	const tokenizer = new core.Tokenizer();

	const byMessage = new Map<any, number>();
	const byRoleTime = new Map<string, number>();
	for (const [index, entry] of entries.entries()) {
		if (entry.type === "message") byMessage.set(entry.message, index);
		const message = entry.type === "message" ? undefined : entryMessage(entry);
		if (message) byRoleTime.set(`${message.role}|${message.timestamp}`, index);
	}
	const describe = (message: any) => {
		let index = byMessage.get(message);
		if (index === undefined) index = byRoleTime.get(`${message.role}|${message.timestamp}`);
		return { entry_index: index ?? null, id: index === undefined ? null : entries[index].id, role: message.role };
	};
	const serializeAll = (messages: any[]) => {
		const llm = convertToLlm(messages);
		const out: Record<string, unknown> = {};
		for (const dialect of DIALECTS) {
			out[dialect] = text(core.serializeConversationForSummary(llm, dialect === "none" ? undefined : (dialect as any)));
		}
		return out;
	};

	const context = timed(timings, "buildSessionContext", () => session.buildSessionContext());
	const estimates = timed(timings, "countMessage", () =>
		entries.map(entry => {
			const message = entryMessage(entry);
			return message === undefined ? null : tokenizer.countMessage(message);
		}),
	);

	let latestCompaction = -1;
	for (let i = path.length - 1; i >= 0; i--) {
		if (path[i].type === "compaction") {
			latestCompaction = i;
			break;
		}
	}
	const boundaryStart = latestCompaction + 1;

	const unavailable: Record<string, string> = {
		"snapcompact.plan":
			"planArchive is module-private in @oh-my-pi/snapcompact; the plan is reported as the archive compact() returns (frame shapes, text head/tail, truncated chars)",
		"prepare_compaction.turnStartIndex":
			"prepareCompaction returns no turn-start index; the first turn-prefix message stands for it",
	};

	const budgets: Record<string, any> = {};
	const preparations = new Map<number, any>();
	let t0 = performance.now();
	for (const budget of args.budgets) {
		const settings = { ...core.DEFAULT_COMPACTION_SETTINGS, keepRecentTokens: budget };
		const cut = core.findCutPoint(path, tokenizer, boundaryStart, path.length, budget);
		const result: Record<string, any> = {
			settings,
			find_cut_point: {
				startIndex: boundaryStart,
				endIndex: path.length,
				...cut,
				firstKeptEntryId: path[cut.firstKeptEntryIndex]?.id ?? null,
				firstKeptEntryFileIndex: pathIndices[cut.firstKeptEntryIndex] ?? null,
			},
		};
		const prep = core.prepareCompaction(path, settings, undefined, tokenizer);
		if (prep === undefined) {
			result.prepare_compaction = null;
			result.prepare_compaction_reason = "prepareCompaction returned undefined (nothing to summarize)";
		} else {
			preparations.set(budget, prep);
			const { readFiles, modifiedFiles } = core.computeFileLists(prep.fileOps);
			result.prepare_compaction = {
				firstKeptEntryId: prep.firstKeptEntryId,
				firstKeptEntryFileIndex: fileIndex.get(prep.firstKeptEntryId) ?? null,
				tokensBefore: prep.tokensBefore,
				isSplitTurn: prep.isSplitTurn,
				previousSummary: prep.previousSummary ?? null,
				previousSummaryTimestamp: prep.previousSummaryTimestamp ?? null,
				messagesToSummarize: prep.messagesToSummarize.map(describe),
				turnPrefixMessages: prep.turnPrefixMessages.map(describe),
				recentMessages: prep.recentMessages.map(describe),
				readFiles,
				modifiedFiles,
			};
			result.file_operations = {
				readFiles,
				modifiedFiles,
				block: core.formatFileOperations(readFiles, modifiedFiles, prep.fileOps.read),
			};
			result.summarizer_input = {
				serializer:
					"serializeConversationForSummary(convertToLlm(messages), dialect); 'none' is the legacy serializer",
				preferred_dialect_for_session_model: context.models?.default
					? preferredDialect(String(context.models.default))
					: null,
				fallback_dialect: FALLBACK_DIALECT,
				messagesToSummarize: serializeAll(prep.messagesToSummarize),
				turnPrefixMessages: serializeAll(prep.turnPrefixMessages),
			};
		}
		budgets[String(budget)] = result;
	}
	timings.budgets = Math.round(performance.now() - t0);

	// Tool-output pruning, each on a clone of the path (the functions rewrite entries in place).
	const prunedReport = (clone: any[], result: any) => {
		const pruned = [];
		for (let i = 0; i < clone.length; i++) {
			const message = clone[i].type === "message" ? clone[i].message : undefined;
			if (message?.prunedAt !== undefined && path[i].message?.prunedAt === undefined) {
				const notice = message.content?.[0]?.text ?? null;
				pruned.push({ file_index: pathIndices[i], id: clone[i].id, notice });
			}
		}
		return { prunedCount: result.prunedCount, tokensSaved: result.tokensSaved, pruned };
	};
	const keepBoundaryId = getLatestCompactionEntry(path)?.firstKeptEntryId;
	const describeConfig = (config: Record<string, unknown>) =>
		Object.fromEntries(
			Object.entries(config).map(([key, value]) => [
				key,
				key === "protectedTools"
					? (value as unknown[]).map(matcher => (typeof matcher === "string" ? matcher : `<function ${(matcher as any).name}>`))
					: typeof value === "function"
						? `<function ${(value as any).name}>`
						: (value ?? null),
			]),
		);
	const pruning: Record<string, any> = {};
	t0 = performance.now();
	{
		// What the agent's maintenance passes before a threshold compaction (session-maintenance
		// #pruneToolOutputs): the library defaults, the dropUseless setting, the latest compaction's
		// keep boundary and the warm-cache suffix guard. (The active plan file's protection is
		// omitted: a recorded session has no live plan.)
		const config: any = {
			...core.DEFAULT_PRUNE_CONFIG,
			pruneUseless: getDefault("compaction.dropUseless"),
			keepBoundaryId,
			cacheWarmSuffixTokens: pruneCacheWarm.value ?? undefined,
		};
		const clone = structuredClone(path);
		pruning.maintenance_default = {
			config: describeConfig(config),
			...prunedReport(clone, core.pruneToolOutputs(clone, new core.Tokenizer(), config)),
		};
	}
	{
		const clone = structuredClone(path);
		pruning.library_default = {
			config: describeConfig(core.DEFAULT_PRUNE_CONFIG as any),
			...prunedReport(clone, core.pruneToolOutputs(clone, new core.Tokenizer())),
		};
	}
	{
		// The per-turn stale-result pass with the settings' defaults (supersedeReads, dropUseless).
		const config: any = {
			supersedeKey: getDefault("compaction.supersedeReads") ? core.readToolSupersedeKey : undefined,
			pruneUseless: getDefault("compaction.dropUseless"),
			protectedTools: [...core.DEFAULT_PRUNE_CONFIG.protectedTools],
			keepBoundaryId,
			idleFlushMs: pruneIdleFlush.value ?? undefined,
		};
		// Recorded sessions are long idle: the clock is set one day after the last entry so the
		// result does not depend on when the driver runs.
		const last = path.length > 0 ? Date.parse(path[path.length - 1].timestamp) : 0;
		config.now = (Number.isFinite(last) ? last : 0) + 24 * 3600 * 1000;
		const clone = structuredClone(path);
		pruning.supersede_pass = {
			config: describeConfig(config),
			...prunedReport(clone, core.pruneSupersededToolResults(clone, new core.Tokenizer(), config)),
		};
	}
	timings.pruning = Math.round(performance.now() - t0);

	// Snapcompact: the archive compact() builds from each preparation, per reader.
	t0 = performance.now();
	if (args.snapcompact) {
		const wanted = args.snapcompactBudgets ?? args.budgets;
		for (const budget of wanted) {
			const prep = preparations.get(budget);
			if (!budgets[String(budget)]) continue;
			if (!prep) {
				budgets[String(budget)].snapcompact = { unavailable: "no preparation at this budget" };
				continue;
			}
			const perTarget: Record<string, any> = {};
			for (const [name, target] of Object.entries(SNAPCOMPACT_TARGETS)) {
				// The cap the maintenance computes when the model's context window is unknown.
				const maxFrames = Math.min(
					snap.MAX_FRAMES_DEFAULT,
					snap.maxFramesForDataBudget(),
					snap.providerFrameBudget(target.provider),
				);
				const includeThinking = preferredDialect(target.id) !== "anthropic";
				const result = await snap.compact(prep, {
					convertToLlm,
					model: target as any,
					maxFrames,
					includeThinking,
				});
				const archive = snap.getPreservedArchive(result.preserveData);
				const shape = snap.resolveShape(target as any);
				const frames = (archive?.frames ?? []).map((frame, k) => {
					const bytes = Buffer.from(frame.data, "base64");
					let file: string | null = null;
					if (args.framesDir) {
						file = join(args.framesDir, `${budget}-${name}-${String(k).padStart(3, "0")}.png`);
						writeFileSync(file, bytes);
					}
					return {
						cols: frame.cols,
						rows: frame.rows,
						chars: frame.chars,
						font: frame.font ?? null,
						variant: frame.variant ?? null,
						lineRepeat: frame.lineRepeat ?? null,
						columns: frame.columns ?? null,
						stopwordDim: frame.stopwordDim ?? null,
						detail: frame.detail ?? null,
						mimeType: frame.mimeType,
						png: { ...pngInfo(bytes), bytes: bytes.length, sha256: sha256(bytes), file },
					};
				});
				perTarget[name] = {
					target,
					options: { maxFrames, includeThinking },
					shape: { ...shape },
					geometry: snap.geometry(shape),
					billing: {
						frameTokenEstimate: shape.frameTokenEstimate,
						imageDetail: shape.imageDetail ?? null,
						providerImageBudget: snap.providerImageBudget(target.provider),
						providerFrameBudget: snap.providerFrameBudget(target.provider),
						frames: frames.length,
						frameTokens: frames.length * shape.frameTokenEstimate,
					},
					archive: {
						frameCount: frames.length,
						totalChars: archive?.totalChars ?? null,
						truncatedChars: archive?.truncatedChars ?? null,
						text: archive?.text === undefined ? null : text(archive.text),
						textHead: archive?.textHead === undefined ? null : text(archive.textHead),
						textTail: archive?.textTail === undefined ? null : text(archive.textTail),
					},
					frames,
					summary: text(result.summary),
					shortSummary: result.shortSummary ?? null,
					details: result.details ?? null,
				};
			}
			budgets[String(budget)].snapcompact = perTarget;
		}
	} else {
		unavailable.snapcompact = "not run (--no-snapcompact)";
	}
	timings.snapcompact = Math.round(performance.now() - t0);

	// Branch summary: navigate from the leaf to a target on the path (default: the middle entry).
	const targetFileIndex =
		(args.branchTargetId !== null ? (fileIndex.get(args.branchTargetId) ?? -1) : null) ??
		args.branchTargetIndex ?? (pathIndices.length > 0 ? (pathIndices[Math.floor(pathIndices.length / 2)] ?? null) : null);
	let branch_summary: any = null;
	if (targetFileIndex !== null && targetFileIndex < 0) {
		throw new Error(`--branch-target-id ${args.branchTargetId} is not an entry of the session`);
	}
	if (targetFileIndex !== null && entries[targetFileIndex]) {
		const targetId = entries[targetFileIndex].id;
		const collected = core.collectEntriesForBranchSummary(session as any, leafId, targetId);
		const prepared: Record<string, any> = {};
		for (const tokenBudget of [0, ...args.budgets]) {
			const prep = core.prepareBranchEntries(collected.entries, new core.Tokenizer(), tokenBudget);
			const { readFiles, modifiedFiles } = core.computeFileLists(prep.fileOps);
			prepared[String(tokenBudget)] = {
				messages: prep.messages.map(describe),
				totalTokens: prep.totalTokens,
				readFiles,
				modifiedFiles,
				file_operations_block: core.formatFileOperations(readFiles, modifiedFiles, prep.fileOps.read),
				summarizer_input: serializeAll(prep.messages),
			};
		}
		branch_summary = {
			fromLeafId: leafId,
			fromLeafFileIndex: leafId ? (fileIndex.get(leafId) ?? null) : null,
			targetId,
			targetFileIndex,
			collect: {
				commonAncestorId: collected.commonAncestorId,
				commonAncestorFileIndex: collected.commonAncestorId
					? (fileIndex.get(collected.commonAncestorId) ?? null)
					: null,
				entryFileIndices: collected.entries.map((entry: any) => fileIndex.get(entry.id)),
			},
			prepare: prepared,
		};
	}

	const header = session.getHeader() as any;
	const output = {
		schema: SCHEMA,
		agent: "musepi",
		reference: {
			packages: Object.fromEntries(PACKAGES.map(name => [name, packageVersion(name)])),
			runtime: `bun ${Bun.version}`,
			tokenizer: "new Tokenizer() without a model: UTF-8 bytes/4 per fragment (the default for models without a known tokenizer family)",
			private_constants: {
				PRUNE_CACHE_WARM_SUFFIX_TOKENS: pruneCacheWarm,
				PRUNE_IDLE_FLUSH_MS: pruneIdleFlush,
			},
		},
		session_file: args.session,
		settings: {
			engine: { ...core.DEFAULT_COMPACTION_SETTINGS },
			agent: {
				"compaction.keepRecentTokens": getDefault("compaction.keepRecentTokens"),
				"compaction.reserveTokens": getDefault("compaction.reserveTokens") ?? null,
				"compaction.supersedeReads": getDefault("compaction.supersedeReads"),
				"compaction.dropUseless": getDefault("compaction.dropUseless"),
			},
		},
		session: {
			version: header?.version ?? null,
			entry_count: entries.length,
			entry_ids: entries.map(entry => entry.id),
			entry_types: entries.map(entry => entry.type),
			leaf_id: leafId,
			leaf_file_index: leafId ? (fileIndex.get(leafId) ?? null) : null,
			path_file_indices: pathIndices,
			latest_compaction_path_index: latestCompaction,
		},
		context: {
			message_count: context.messages.length,
			roles: context.messages.map((message: any) => message.role),
			thinkingLevel: context.thinkingLevel ?? null,
			models: context.models ?? null,
		},
		estimates: {
			function: "Tokenizer.countMessage",
			tokens: estimates,
		},
		budgets,
		pruning,
		branch_summary,
		unavailable,
		timings_ms: timings,
	};
	writeFileSync(args.out, JSON.stringify(output));
}

await main();
