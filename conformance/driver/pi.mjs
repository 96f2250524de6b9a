// Reference driver for the pi profile: runs the published @mariozechner/pi-coding-agent on one
// session file and writes what its compaction functions report, as one JSON document.
//
// Run by conformance/run.py with node, from a copy placed beside the pinned node_modules in the
// cache (so the package specifiers resolve). Nothing of the package is copied here: every measure
// comes from calling the package's own functions. The package root exports most of them; a few
// (prepareCompaction, computeFileLists, formatFileOperations, estimateContextTokens, the message
// constructors) are exported by the package's modules but left out of its `exports` map, so they
// are imported from the module files themselves and named under `sources` in the output.
//
// Usage: node pi.mjs --session FILE --budgets 1000,20000 --out OUT.json
//        [--branch-target-index N | --branch-target-id ID]

import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const PACKAGE = "@mariozechner/pi-coding-agent";
const SCHEMA = "musepi-lab.conformance.reference/1";

function parseArgs(argv) {
	const args = { budgets: [], branchTargetIndex: null, branchTargetId: null };
	for (let i = 0; i < argv.length; i++) {
		const flag = argv[i];
		const value = argv[++i];
		if (flag === "--session") args.session = value;
		else if (flag === "--budgets") args.budgets = value.split(",").filter(Boolean).map(Number);
		else if (flag === "--out") args.out = value;
		else if (flag === "--branch-target-index") args.branchTargetIndex = Number(value);
		else if (flag === "--branch-target-id") args.branchTargetId = value;
		else throw new Error(`unknown argument ${flag}`);
	}
	if (!args.session || !args.out) throw new Error("--session and --out are required");
	return args;
}

// The package root, found from this file's location (the copy sits in <cache>/driver/).
const here = dirname(fileURLToPath(import.meta.url));
const packageRoot = join(here, "..", "node_modules", ...PACKAGE.split("/"));
const moduleUrl = rel => pathToFileURL(join(packageRoot, rel)).href;
const packageJson = JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8"));

const pi = await import(PACKAGE);
const compactionModule = await import(moduleUrl("dist/core/compaction/compaction.js"));
const utilsModule = await import(moduleUrl("dist/core/compaction/utils.js"));
const messagesModule = await import(moduleUrl("dist/core/messages.js"));

const sources = {
	"package root": [
		"SessionManager",
		"buildSessionContext",
		"estimateTokens",
		"findCutPoint",
		"serializeConversation",
		"convertToLlm",
		"collectEntriesForBranchSummary",
		"prepareBranchEntries",
		"DEFAULT_COMPACTION_SETTINGS",
	],
	"dist/core/compaction/compaction.js (module export, not in the package exports map)": [
		"prepareCompaction",
		"estimateContextTokens",
	],
	"dist/core/compaction/utils.js (module export, not in the package exports map)": [
		"computeFileLists",
		"formatFileOperations",
	],
	"dist/core/messages.js (module export, not in the package exports map)": [
		"createCompactionSummaryMessage",
		"createBranchSummaryMessage",
		"createCustomMessage",
	],
};

const { prepareCompaction } = compactionModule;
const { computeFileLists, formatFileOperations } = utilsModule;
const { createCompactionSummaryMessage, createBranchSummaryMessage, createCustomMessage } = messagesModule;

// The message each entry contributes, built with the package's constructors exactly as its
// compaction code maps entries (message, custom_message, branch_summary, compaction); other entry
// types contribute none.
function entryMessage(entry) {
	switch (entry.type) {
		case "message":
			return entry.message;
		case "custom_message":
			return createCustomMessage(entry.customType, entry.content, entry.display, entry.details, entry.timestamp);
		case "branch_summary":
			return createBranchSummaryMessage(entry.summary, entry.fromId, entry.timestamp);
		case "compaction":
			return createCompactionSummaryMessage(entry.summary, entry.tokensBefore, entry.timestamp);
		default:
			return undefined;
	}
}

function timed(timings, name, fn) {
	const t0 = performance.now();
	try {
		return fn();
	} finally {
		timings[name] = Math.round((performance.now() - t0) * 10) / 10;
	}
}

function main() {
	const args = parseArgs(process.argv.slice(2));
	const timings = {};
	const unavailable = {
		pruning: "pi 0.58.3 has no tool-output pruning (no pruneToolOutputs in the package)",
		snapcompact: "pi 0.58.3 has no snapcompact (an oh-my-pi package)",
		"summarizer_input.dialects": "pi 0.58.3 has one serializer (serializeConversation), no model dialects",
	};

	// SessionManager.open migrates v1/v2 files and rewrites them in place, so it opens a copy.
	const scratch = mkdtempSync(join(tmpdir(), "musepi-conformance-pi-"));
	let session;
	try {
		const copy = join(scratch, basename(args.session));
		copyFileSync(args.session, copy);
		session = timed(timings, "open", () => pi.SessionManager.open(copy, scratch));
	} catch (error) {
		rmSync(scratch, { recursive: true, force: true });
		throw error;
	}

	const entries = session.getEntries();
	const fileIndex = new Map(entries.map((entry, index) => [entry.id, index]));
	const path = session.getBranch();
	const pathIndices = path.map(entry => fileIndex.get(entry.id));
	const header = session.getHeader();

	// Messages built from entries are new objects; identity finds `message` entries and the
	// (role, timestamp) key finds the constructed ones.
	const byMessage = new Map();
	const byRoleTime = new Map();
	for (const [index, entry] of entries.entries()) {
		if (entry.type === "message") byMessage.set(entry.message, index);
		const message = entry.type === "message" ? undefined : entryMessage(entry);
		if (message) byRoleTime.set(`${message.role}|${message.timestamp}`, index);
	}
	const describe = message => {
		let index = byMessage.get(message);
		if (index === undefined) index = byRoleTime.get(`${message.role}|${message.timestamp}`);
		return { entry_index: index ?? null, id: index === undefined ? null : entries[index].id, role: message.role };
	};
	const serialize = messages => pi.serializeConversation(pi.convertToLlm(messages));

	const context = timed(timings, "buildSessionContext", () => pi.buildSessionContext(entries, session.getLeafId()));
	const estimates = timed(timings, "estimateTokens", () =>
		entries.map(entry => {
			const message = entryMessage(entry);
			return message === undefined ? null : pi.estimateTokens(message);
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

	const budgets = {};
	const t0 = performance.now();
	for (const budget of args.budgets) {
		const settings = { ...pi.DEFAULT_COMPACTION_SETTINGS, keepRecentTokens: budget };
		const cut = pi.findCutPoint(path, boundaryStart, path.length, budget);
		const result = {
			settings,
			find_cut_point: {
				startIndex: boundaryStart,
				endIndex: path.length,
				...cut,
				firstKeptEntryId: path[cut.firstKeptEntryIndex]?.id ?? null,
				firstKeptEntryFileIndex: pathIndices[cut.firstKeptEntryIndex] ?? null,
			},
		};
		const prep = prepareCompaction(path, settings);
		if (prep === undefined) {
			result.prepare_compaction = null;
			result.prepare_compaction_reason = "prepareCompaction returned undefined";
		} else {
			const { readFiles, modifiedFiles } = computeFileLists(prep.fileOps);
			result.prepare_compaction = {
				firstKeptEntryId: prep.firstKeptEntryId,
				firstKeptEntryFileIndex: fileIndex.get(prep.firstKeptEntryId) ?? null,
				tokensBefore: prep.tokensBefore,
				isSplitTurn: prep.isSplitTurn,
				previousSummary: prep.previousSummary ?? null,
				messagesToSummarize: prep.messagesToSummarize.map(describe),
				turnPrefixMessages: prep.turnPrefixMessages.map(describe),
				readFiles,
				modifiedFiles,
			};
			result.file_operations = {
				readFiles,
				modifiedFiles,
				block: formatFileOperations(readFiles, modifiedFiles),
			};
			result.summarizer_input = {
				serializer: "serializeConversation(convertToLlm(messages))",
				messagesToSummarize: serialize(prep.messagesToSummarize),
				turnPrefixMessages: serialize(prep.turnPrefixMessages),
			};
		}
		budgets[String(budget)] = result;
	}
	timings.budgets = Math.round(performance.now() - t0);

	// Branch summary: navigate from the leaf to a target on the path (default: the middle entry).
	const leafId = session.getLeafId();
	const targetFileIndex =
		(args.branchTargetId !== null ? (fileIndex.get(args.branchTargetId) ?? -1) : null) ??
		args.branchTargetIndex ?? (pathIndices.length > 0 ? pathIndices[Math.floor(pathIndices.length / 2)] : null);
	let branch_summary = null;
	if (targetFileIndex !== null && targetFileIndex < 0) {
		throw new Error(`--branch-target-id ${args.branchTargetId} is not an entry of the session`);
	}
	if (targetFileIndex !== null && entries[targetFileIndex]) {
		const targetId = entries[targetFileIndex].id;
		const collected = pi.collectEntriesForBranchSummary(session, leafId, targetId);
		const tokenBudgets = [0, ...args.budgets];
		const prepared = {};
		for (const tokenBudget of tokenBudgets) {
			const prep = pi.prepareBranchEntries(collected.entries, tokenBudget);
			const { readFiles, modifiedFiles } = computeFileLists(prep.fileOps);
			prepared[String(tokenBudget)] = {
				messages: prep.messages.map(describe),
				totalTokens: prep.totalTokens,
				readFiles,
				modifiedFiles,
				file_operations_block: formatFileOperations(readFiles, modifiedFiles),
				summarizer_input: serialize(prep.messages),
			};
		}
		branch_summary = {
			fromLeafId: leafId,
			fromLeafFileIndex: fileIndex.get(leafId) ?? null,
			targetId,
			targetFileIndex,
			collect: {
				commonAncestorId: collected.commonAncestorId,
				commonAncestorFileIndex: collected.commonAncestorId
					? (fileIndex.get(collected.commonAncestorId) ?? null)
					: null,
				entryFileIndices: collected.entries.map(entry => fileIndex.get(entry.id)),
			},
			prepare: prepared,
		};
	}

	const output = {
		schema: SCHEMA,
		agent: "pi",
		reference: {
			packages: { [PACKAGE]: packageJson.version },
			runtime: `node ${process.version}`,
			sources,
		},
		session_file: args.session,
		settings: { ...pi.DEFAULT_COMPACTION_SETTINGS },
		session: {
			version: header?.version ?? null,
			entry_count: entries.length,
			entry_ids: entries.map(entry => entry.id),
			entry_types: entries.map(entry => entry.type),
			leaf_id: leafId,
			leaf_file_index: fileIndex.get(leafId) ?? null,
			path_file_indices: pathIndices,
			latest_compaction_path_index: latestCompaction,
		},
		context: {
			message_count: context.messages.length,
			roles: context.messages.map(message => message.role),
			thinkingLevel: context.thinkingLevel ?? null,
			model: context.model ?? null,
		},
		estimates: {
			function: "estimateTokens",
			tokens: estimates,
		},
		budgets,
		branch_summary,
		unavailable,
		timings_ms: timings,
	};
	writeFileSync(args.out, JSON.stringify(output));
	rmSync(scratch, { recursive: true, force: true });
}

main();
