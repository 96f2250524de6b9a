// Reference driver for snapcompact's text normalization: runs the published normalizer of
// @oh-my-pi/snapcompact (`normalize`, `scanRenderability`) and its word-wrapper (`wrap`, which
// counts cells with the renderer's width table) on a batch of probe strings, in one process,
// and writes what they return as one JSON document.
//
// Run by musepi_lab/conformance/_normalization.py with the Bun binary from @oven/bun-linux-x64,
// from a copy placed beside the pinned node_modules (so the package specifiers resolve).
// Nothing of the package is copied: every value comes from its exported functions.
//
// Usage: bun omp-normalize.ts --probes PROBES.json --out OUT.json
//
// PROBES.json: {"fonts": ["8x13", "silver"], "probes": [string, ...], "cells": [string, ...]}.
// OUT.json, per font: `texts` (each probe's `normalize(probe, {font})`, joined by "\n", which
// the normalizer never outputs), `total` and `fallback` (the graphic characters and the `?`
// fallbacks `scanRenderability` divides: exported only as their ratio, so they are recovered
// from the ratios of the probe behind a prefix of one and of two known characters, see
// `counts`); and `cells`: for each `cells` string (one code point) the lines `wrap` makes of
// it three times at width 5 with wide cells (1: narrow, 2: wide, 0: whitespace).

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as snap from "@oh-my-pi/snapcompact";

const SCHEMA = "musepi-lab.conformance.normalize/1";

// An unassigned code point (U+0378): no font draws it and no rule folds or drops it, so it
// is one graphic character and one fallback in every font (checked below).
const FALLBACK = "\u0378";

interface Args {
	probes: string;
	out: string;
}

function parseArgs(argv: string[]): Args {
	const args: Args = { probes: "", out: "" };
	for (let i = 0; i < argv.length; i++) {
		const flag = argv[i];
		const value = argv[++i];
		if (flag === "--probes") args.probes = value;
		else if (flag === "--out") args.out = value;
		else throw new Error(`unknown argument ${flag}`);
	}
	if (!args.probes || !args.out) throw new Error("--probes and --out are required");
	return args;
}

const ratio = (text: string, font: string) => snap.scanRenderability(text, { font: font as any }).unrenderableRatio;

// (graphic characters, fallbacks) of `probe`. The ratio is f/t; behind the prefix P it is
// (f+1)/(t+1), behind P + "a" (f+1)/(t+2), so 1/r3 - 1/r2 = 1/(f+1). A prefix changes what the
// probe counts only where the probe starts with whitespace or a newline glyph (they would no
// longer be trimmed), so the caller's probes start otherwise, or are one code point (whose
// leading edge is its trailing edge, trimmed either way). Each result is checked against the
// three ratios exactly; a mismatch stops the run rather than report a guess.
function counts(probe: string, font: string): [number, number] {
	const r1 = ratio(probe, font);
	const r2 = ratio(FALLBACK + probe, font);
	const r3 = ratio(`${FALLBACK}a${probe}`, font);
	const fallback = Math.round(1 / (1 / r3 - 1 / r2)) - 1;
	const total = Math.round((fallback + 1) / r2) - 1;
	const ok =
		(fallback + 1) / (total + 1) === r2 &&
		(fallback + 1) / (total + 2) === r3 &&
		(total > 0 ? fallback / total : 0) === r1;
	if (!ok) throw new Error(`counts of ${JSON.stringify(probe)} (${font}) are not consistent: ${r1} ${r2} ${r3}`);
	return [total, fallback];
}

function main() {
	const args = parseArgs(process.argv.slice(2));
	const input = JSON.parse(readFileSync(args.probes, "utf8")) as {
		fonts: string[];
		probes: string[];
		cells: string[];
	};
	const started = performance.now();
	const fonts: Record<string, { texts: string; total: number[]; fallback: number[] }> = {};
	for (const font of input.fonts) {
		if (snap.normalize(FALLBACK, { font: font as any }) !== "?" || ratio(FALLBACK, font) !== 1) {
			throw new Error(`U+0378 is not a plain fallback in font ${font}`);
		}
		const texts: string[] = [];
		const total: number[] = [];
		const fallback: number[] = [];
		for (const probe of input.probes) {
			const text = snap.normalize(probe, { font: font as any });
			if (text.includes("\n")) throw new Error(`normalize output holds a line feed: ${JSON.stringify(probe)}`);
			texts.push(text);
			const [t, f] = counts(probe, font);
			total.push(t);
			fallback.push(f);
		}
		fonts[font] = { texts: texts.join("\n"), total, fallback };
	}
	const cells = input.cells.map(ch => snap.wrap(ch + ch + ch, 5, true).length);
	const here = dirname(fileURLToPath(import.meta.url));
	const manifest = JSON.parse(
		readFileSync(join(here, "..", "node_modules", "@oh-my-pi", "snapcompact", "package.json"), "utf8"),
	);
	const document = {
		schema: SCHEMA,
		reference: {
			packages: { "@oh-my-pi/snapcompact": manifest.version },
			runtime: { bun: Bun.version },
		},
		probe_count: input.probes.length,
		fonts,
		cells,
		timings_ms: { total: Math.round(performance.now() - started) },
	};
	writeFileSync(args.out, JSON.stringify(document));
}

main();
