// Dumps, for every Unicode scalar value, what snapcompact's normalizer (oh-my-pi 18.2.3,
// @oh-my-pi/snapcompact `normalize`) asks of its runtime and of the native renderer, so
// musepi-lab's normalizer reads the same facts instead of its Python's Unicode database:
//
// - `supported`: per font, the code points `snapcompactSupportedChars(font, chars)` of
//   @oh-my-pi/pi-natives says the renderer draws;
// - `properties`: the code points each of the normalizer's regular expressions matches on this
//   Bun (JavaScriptCore's own Unicode tables; lone surrogates included, which `Bun.stripANSI`
//   can leave behind): `format` /\p{Cf}/u (collapsed with whitespace),
//   `unrenderable` /[\p{Cc}\p{Mn}\p{Me}\p{Cs}]/u (skipped), `mark` /\p{M}/u (dropped from a
//   decomposition), `pictographic` /\p{Extended_Pictographic}/u (emoji, dropped), `space` /\s/;
// - `nfkd`: every code point whose `String.prototype.normalize("NFKD")` (ICU) differs from it.
//
// Run by `python conformance/run.py unicode tables`, which writes the package data.
// Usage: bun omp-tables.ts --fonts 8x13,silver --out OUT.json

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { snapcompactSupportedChars } from "@oh-my-pi/pi-natives";

const PROPERTIES: Record<string, RegExp> = {
	format: /^\p{Cf}$/u,
	unrenderable: /^[\p{Cc}\p{Mn}\p{Me}\p{Cs}]$/u,
	mark: /^\p{M}$/u,
	pictographic: /^\p{Extended_Pictographic}$/u,
	space: /^\s$/u,
};

// Code points are asked in batches (one native call each); the answer is a string of them.
const BATCH = 4096;

function scalarValues(): number[] {
	const out: number[] = [];
	for (let cp = 0; cp <= 0x10ffff; cp++) if (cp < 0xd800 || cp > 0xdfff) out.push(cp);
	return out;
}

function main() {
	const argv = process.argv.slice(2);
	let fonts: string[] = [];
	let out = "";
	for (let i = 0; i < argv.length; i += 2) {
		if (argv[i] === "--fonts") fonts = argv[i + 1].split(",").filter(Boolean);
		else if (argv[i] === "--out") out = argv[i + 1];
		else throw new Error(`unknown argument ${argv[i]}`);
	}
	if (!out || fonts.length === 0) throw new Error("--fonts and --out are required");
	const cps = scalarValues();
	const supported: Record<string, number[]> = {};
	for (const font of fonts) {
		const found: number[] = [];
		for (let i = 0; i < cps.length; i += BATCH) {
			const chars = String.fromCodePoint(...cps.slice(i, i + BATCH));
			for (const ch of snapcompactSupportedChars(font, chars)) found.push(ch.codePointAt(0) as number);
		}
		supported[font] = [...new Set(found)].sort((a, b) => a - b);
	}
	const properties: Record<string, number[]> = {};
	for (const name in PROPERTIES) properties[name] = [];
	for (let cp = 0; cp <= 0x10ffff; cp++) {
		const ch = String.fromCodePoint(cp);
		for (const name in PROPERTIES) if (PROPERTIES[name].test(ch)) properties[name].push(cp);
	}
	const nfkd: Record<string, number[]> = {};
	for (const cp of cps) {
		const ch = String.fromCodePoint(cp);
		const decomposed = ch.normalize("NFKD");
		if (decomposed !== ch) nfkd[cp.toString(16).toUpperCase()] = [...decomposed].map(c => c.codePointAt(0) as number);
	}
	const here = dirname(fileURLToPath(import.meta.url));
	const version = (name: string) =>
		JSON.parse(readFileSync(join(here, "..", "node_modules", ...name.split("/"), "package.json"), "utf8")).version;
	const document = {
		reference: {
			packages: { "@oh-my-pi/snapcompact": version("@oh-my-pi/snapcompact"), "@oh-my-pi/pi-natives": version("@oh-my-pi/pi-natives") },
			runtime: { bun: Bun.version, icu: process.versions.icu, icu_unicode: process.versions.unicode },
		},
		supported,
		properties,
		nfkd,
	};
	writeFileSync(out, JSON.stringify(document));
}

main();
