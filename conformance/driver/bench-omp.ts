// Timing driver for the MusePi profile: times the published oh-my-pi packages' own functions
// (@oh-my-pi/pi-agent-core, @oh-my-pi/pi-coding-agent 18.2.3) under Bun on one session file and
// prints the medians as one JSON document on stdout.
//
// Run by perf/bench_peer.py with the Bun binary of the conformance install, from a copy placed
// beside the pinned node_modules (so the package specifiers resolve), as omp.ts is run. Nothing
// of the packages is copied here: every timed call is the packages' own function.
//
// Usage: bun bench-omp.ts --session FILE [--repeat N] [--warmup N] [--budgets 1000,2000,...]
//
// Figures (milliseconds, median of N runs after the warm-up runs):
//   load                  SessionManager.open over an in-memory storage holding the file text
//                         (parse, migrate, index)
//   buildSessionContext   session.buildSessionContext()
//   prepareCompaction     prepareCompaction(path, defaults, undefined, new Tokenizer()): a
//                         fresh tokenizer per call, so no count is reused
//   sweep                 prepareCompaction over every budget of --budgets, one shared tokenizer

import { readFileSync } from "node:fs";
import * as core from "@oh-my-pi/pi-agent-core";
import { SessionManager } from "@oh-my-pi/pi-coding-agent/session/session-manager";
import { MemorySessionStorage } from "@oh-my-pi/pi-coding-agent/session/session-storage";

import { parseArgs, timeMedian, timeMedianAsync } from "./bench-timing.mjs";

async function open(text: string): Promise<any> {
	const storage = new MemorySessionStorage();
	const virtual = "/musepi-bench/session.jsonl";
	storage.writeTextSync(virtual, text);
	return SessionManager.open(virtual, "/musepi-bench", storage, { initialCwd: "/", suppressBreadcrumb: true });
}

async function main(): Promise<void> {
	const args = parseArgs(process.argv.slice(2));
	const { repeat, warmup } = args;
	const file = args.session as string;
	const session = await open(readFileSync(file, "utf8"));
	const path: any[] = session.getBranch();
	const defaults = { ...core.DEFAULT_COMPACTION_SETTINGS };
	const sweepSettings = args.budgets.map(budget => ({ ...defaults, keepRecentTokens: budget }));
	const figures = {
		// The file is read inside the timed call, as pi's load and our read_session read it.
		load: await timeMedianAsync(() => open(readFileSync(file, "utf8")), repeat, warmup),
		buildSessionContext: timeMedian(() => session.buildSessionContext(), repeat, warmup),
		prepareCompaction: timeMedian(
			() => core.prepareCompaction(path, defaults, undefined, new core.Tokenizer()),
			repeat,
			warmup,
		),
		sweep: timeMedian(
			() => {
				const tokenizer = new core.Tokenizer();
				for (const settings of sweepSettings) core.prepareCompaction(path, settings, undefined, tokenizer);
			},
			repeat,
			warmup,
		),
	};
	const prep = core.prepareCompaction(path, defaults, undefined, new core.Tokenizer());
	const entries: any[] = session.getEntries();
	const out = {
		agent: "musepi",
		package: "@oh-my-pi/pi-agent-core@18.2.3",
		runtime: `bun ${Bun.version}`,
		session: file,
		entries: entries.length,
		path_length: path.length,
		repeat,
		warmup,
		budgets: args.budgets,
		// Where the timed call cut (index in file order after the header: version-1 files get
		// new ids at every load), so the Python side can check it cut at the same place.
		first_kept_file_index: prep ? entries.findIndex(entry => entry.id === prep.firstKeptEntryId) : null,
		tokens_before: prep?.tokensBefore ?? null,
		figures,
	};
	process.stdout.write(`${JSON.stringify(out)}\n`);
}

await main();
