// What both timing drivers (bench-pi.mjs on node, bench-omp.ts under Bun) share: their
// arguments and how a figure is timed. Copied beside them by perf/bench_peer.py.

export function parseArgs(argv) {
	const args = { repeat: 30, warmup: 5, budgets: [1000, 2000, 5000, 10000, 20000, 40000] };
	for (let i = 0; i < argv.length; i++) {
		const flag = argv[i];
		const value = argv[++i];
		if (flag === "--session") args.session = value;
		else if (flag === "--repeat") args.repeat = Number(value);
		else if (flag === "--warmup") args.warmup = Number(value);
		else if (flag === "--budgets") args.budgets = value.split(",").filter(Boolean).map(Number);
		else throw new Error(`unknown argument ${flag}`);
	}
	if (!args.session) throw new Error("--session is required");
	return args;
}

function median(values) {
	const sorted = [...values].sort((a, b) => a - b);
	const mid = sorted.length >> 1;
	return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function summarize(times) {
	return { median_ms: median(times), min_ms: Math.min(...times), max_ms: Math.max(...times) };
}

// Milliseconds of `repeat` calls after `warmup` untimed ones (the JIT is warm), each call
// right after the one before.
export function timeMedian(fn, repeat, warmup) {
	for (let i = 0; i < warmup; i++) fn();
	const times = [];
	for (let i = 0; i < repeat; i++) {
		const t0 = performance.now();
		fn();
		times.push(performance.now() - t0);
	}
	return summarize(times);
}

export async function timeMedianAsync(fn, repeat, warmup) {
	for (let i = 0; i < warmup; i++) await fn();
	const times = [];
	for (let i = 0; i < repeat; i++) {
		const t0 = performance.now();
		await fn();
		times.push(performance.now() - t0);
	}
	return summarize(times);
}
