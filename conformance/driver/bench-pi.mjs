// Timing driver for the pi profile: times the published @mariozechner/pi-coding-agent's own
// functions on one session file and prints the medians as one JSON document on stdout.
//
// Run by perf/bench_peer.py with node, from a copy placed beside the pinned node_modules in the
// conformance cache (so the package specifiers resolve), as conformance/run.py runs pi.mjs.
// Nothing of the package is copied here: every timed call is the package's own function.
//
// Usage: node bench-pi.mjs --session FILE [--repeat N] [--warmup N] [--budgets 1000,2000,...]
//
// Figures (milliseconds, median of N runs after the warm-up runs; the JIT is warm):
//   load                  loadEntriesFromFile + migrateSessionEntries (read, parse, migrate)
//   buildSessionContext   buildSessionContext(entries, leafId)
//   prepareCompaction     prepareCompaction(path, defaults): pi keeps no counts between calls,
//                         so every call is as cold as the first
//   sweep                 prepareCompaction over every budget of --budgets, one after another

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { parseArgs, timeMedian } from "./bench-timing.mjs";

const PACKAGE = "@mariozechner/pi-coding-agent";

const here = dirname(fileURLToPath(import.meta.url));
const packageRoot = join(here, "..", "node_modules", ...PACKAGE.split("/"));
const moduleUrl = rel => pathToFileURL(join(packageRoot, rel)).href;
const packageJson = JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8"));

const pi = await import(PACKAGE);
// Module exports left out of the package's `exports` map (as in pi.mjs).
const { prepareCompaction } = await import(moduleUrl("dist/core/compaction/compaction.js"));
const { loadEntriesFromFile } = await import(moduleUrl("dist/core/session-manager.js"));

// The root→leaf path, as SessionManager.getBranch walks it (parent links from the leaf).
function branch(entries, leafId) {
	const byId = new Map(entries.map(entry => [entry.id, entry]));
	const path = [];
	for (let entry = byId.get(leafId); entry; entry = byId.get(entry.parentId)) path.push(entry);
	return path.reverse();
}

function load(file) {
	const entries = loadEntriesFromFile(file);
	pi.migrateSessionEntries(entries);
	return entries;
}

function main() {
	const args = parseArgs(process.argv.slice(2));
	const { repeat, warmup } = args;
	const entries = load(args.session);
	const body = entries.filter(entry => entry.type !== "session");
	const leafId = body.length ? body[body.length - 1].id : null;
	const path = branch(body, leafId);
	const defaults = { ...pi.DEFAULT_COMPACTION_SETTINGS };
	const sweepSettings = args.budgets.map(budget => ({ ...defaults, keepRecentTokens: budget }));
	const figures = {
		load: timeMedian(() => load(args.session), repeat, warmup),
		buildSessionContext: timeMedian(() => pi.buildSessionContext(body, leafId), repeat, warmup),
		prepareCompaction: timeMedian(() => prepareCompaction(path, defaults), repeat, warmup),
		sweep: timeMedian(() => sweepSettings.forEach(s => prepareCompaction(path, s)), repeat, warmup),
	};
	const prep = prepareCompaction(path, defaults);
	const out = {
		agent: "pi",
		package: `${PACKAGE}@${packageJson.version}`,
		runtime: `node ${process.version}`,
		session: args.session,
		entries: body.length,
		path_length: path.length,
		repeat,
		warmup,
		budgets: args.budgets,
		// Where the timed call cut (index in file order after the header: version-1 files get
		// new ids at every load), so the Python side can check it cut at the same place.
		first_kept_file_index: prep ? body.findIndex(entry => entry.id === prep.firstKeptEntryId) : null,
		tokens_before: prep?.tokensBefore ?? null,
		figures,
	};
	process.stdout.write(`${JSON.stringify(out)}\n`);
}

main();
