"""Snapcompact's text normalization against oh-my-pi's on every code point (issue 33).

Normalization is a function of each character, the frame font and its fallback, so it is
checked completely rather than by the sessions at hand: every Unicode scalar value of planes
0-3 and 14 (the emoji, the CJK extensions, tags and variation selectors among them) and both
ends of every other plane, each alone and in runs of `RUN_LENGTH` consecutive code points
laid into templates of whitespace, line breaks, format characters and ANSI escape sequences
(`RUN_TEMPLATES`), go through the release's published normalizer (`normalize`,
`scanRenderability` of `@oh-my-pi/snapcompact` 18.2.3 on Bun, `conformance/driver/
omp-normalize.ts`, one process for the whole batch) and through ours
(`normalize_with_stats`), for each font our frames draw with (`FONTS`: misc-fixed 8x13 with
the Silver fallback, and Silver alone; the release's other bundled fonts, 5x8, 8x8 and 6x12,
belong to variants neither its automatic shape choice nor ours ever picks). Compared: the
output text, the graphic characters and `?` fallbacks that decide a font is safe, and each
code point's cell width (`wrap`, which counts cells with the renderer's width table).

The reference's answers are cached in `<cache root>/results/` like the other reference
documents, keyed by the probes' digest, the pins and the driver, so a warm run costs only
our side.

Command line (`conformance/run.py` forwards `unicode ...` here):

    python conformance/run.py unicode measure     # the rows, and how long each side took
    python conformance/run.py unicode tables      # rewrite the package data from the release
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .._atomic import write_bytes_atomic
from ..compaction._serialize import JS_WHITESPACE
from ..strategies.snapcompact._normalize import normalize_with_stats
from ..strategies.snapcompact._plan import char_cells
from ._reference import (
    DRIVERS,
    ReferenceRunError,
    _driver_env,
    _file_digest,
    _pins_digest,
    bun_binary,
    ensure_installed,
    reference,
    results_dir,
)
from ._rows import MeasureRow

FONTS: tuple[str, ...] = ("8x13", "silver")
"""The fonts compared: misc-fixed 8x13 (with the Silver fallback) and Silver."""

DRIVER = "omp-normalize.ts"
TABLES_DRIVER = "omp-tables.ts"

RUN_LENGTH = 32
"""Consecutive code points per run probe."""

RUN_TEMPLATES: Mapping[str, str] = {
    "spaces": "a{c} {c}\t{c}\u00a0{c}\u3000",
    "lines": "a{c}\n{c}\r\n {c}\u2028{c}\n\n",
    "format": "a{c}\ufeff{c}\u200b {c}\u00ad\n",
    "adjacent": "a{c}{c}",
    "sgr": "a\x1b[1;31m{c}\x1b[0m{c}",
    "esc": "a\x1b{c}b",
    "csi": "a\x1b[{c}b\x1b[1{c}m",
    "osc": "a\x1b]8;;{c}\x07{c}\x1b]8;;\x1b\\",
    "strings": "a\x1b_{c}\x07{c}\x1b\\\x90{c}\x9c",
    "c1": "a\x1b[m{c}\x9b{c}m\x9d{c}\x9c",
}
"""Each code point of a run, laid into the template (`{c}`); a run is the templates of its
code points one after another. Every template opens with a letter: the reference's counts
are recovered behind a prefix, which must not meet leading whitespace (see the driver)."""


def _measure(kind: str, font: str | None = None) -> str:
    return f"unicode/{kind}" + (f" {font}" if font else "")


MEASURES: tuple[str, ...] = (
    *(_measure(kind, font) for kind in ("text", "counts") for font in FONTS),
    _measure("cells"),
)
"""The rows `compare_unicode` returns, in order."""


def probe_code_points() -> tuple[int, ...]:
    """Planes 0-2 whole (the emoji among them); of plane 3 the CJK extensions G, H and J
    (U+30000-U+347FF); of plane 14 the tags and variation selectors (U+E0000-U+E01FF); and
    the first and last 256 code points of planes 3-16. No surrogates: they are not scalar
    values."""
    spans = [range(0x0, 0x30000), range(0x30000, 0x34800), range(0xE0000, 0xE0200)]
    for plane in range(3, 17):
        base = plane << 16
        spans += [range(base, base + 0x100), range(base + 0xFF00, base + 0x10000)]
    found = {cp for span in spans for cp in span if not 0xD800 <= cp <= 0xDFFF}
    return tuple(sorted(found))


@dataclass(frozen=True, slots=True)
class Probe:
    """One input: a code point alone (`kind` "alone") or a run in one template."""

    kind: str
    first: int
    last: int
    text: str

    def where(self) -> str:
        span = f"U+{self.first:04X}" + (f"..U+{self.last:04X}" if self.last != self.first else "")
        return f"{span} {self.kind}"


@cache
def unicode_probes() -> tuple[Probe, ...]:
    """For each run of `RUN_LENGTH` code points: each alone, then the run in every template
    (in this order, so each character's fold is computed once and then found in the cache)."""
    cps = probe_code_points()
    probes: list[Probe] = []
    for i in range(0, len(cps), RUN_LENGTH):
        run = cps[i : i + RUN_LENGTH]
        probes += [Probe("alone", cp, cp, chr(cp)) for cp in run]
        for name, template in RUN_TEMPLATES.items():
            text = "".join(template.replace("{c}", chr(cp)) for cp in run)
            probes.append(Probe(name, run[0], run[-1], text))
    return tuple(probes)


def _alone(probes: Sequence[Probe]) -> list[int]:
    return [p.first for p in probes if p.kind == "alone"]


def _probe_document(probes: Sequence[Probe]) -> bytes:
    cells = [chr(cp) for cp in _alone(probes)]
    document = {"fonts": list(FONTS), "probes": [p.text for p in probes], "cells": cells}
    return json.dumps(document, ensure_ascii=False).encode("utf-8")


def _run_driver(driver: str, argv: Sequence[str], timeout: float) -> None:
    """Run one Bun driver of ours beside the installed oh-my-pi packages."""
    target = ensure_installed("musepi")
    bun = bun_binary(target)
    (target / "driver").mkdir(exist_ok=True)
    script = target / "driver" / driver
    shutil.copyfile(DRIVERS / driver, script)
    proc = subprocess.run(
        [str(bun), str(script), *argv],
        cwd=target,
        env=_driver_env(target),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise ReferenceRunError(f"{driver} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")


def cached_unicode_reference(probes: Sequence[Probe] | None = None) -> dict[str, Any]:
    """The release's answers for the probes (default `unicode_probes()`), cached.

    Raises:
        ReferenceToolMissing: npm or bun is missing.
        ReferenceRunError: installing or running the driver failed.
    """
    chosen = unicode_probes() if probes is None else tuple(probes)
    payload = _probe_document(chosen)
    digest = hashlib.sha256()
    for part in (
        hashlib.sha256(payload).hexdigest(),
        _pins_digest(reference("musepi")),
        _file_digest(DRIVERS / DRIVER),
    ):
        digest.update(part.encode() + b"\0")
    target = results_dir() / f"unicode-{digest.hexdigest()[:32]}.json.gz"
    if target.is_file():
        try:
            cached: dict[str, Any] = json.loads(gzip.decompress(target.read_bytes()))
            return cached
        except (OSError, ValueError):
            target.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="musepi-unicode-") as scratch:
        probes_file, out = Path(scratch) / "probes.json", Path(scratch) / "out.json"
        probes_file.write_bytes(payload)
        _run_driver(DRIVER, ["--probes", str(probes_file), "--out", str(out)], timeout=900)
        text = out.read_bytes()
    target.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(target, gzip.compress(text, compresslevel=6, mtime=0), durable=False)
    document: dict[str, Any] = json.loads(text)
    return document


@dataclass
class _Tally:
    agreed: int = 0
    total: int = 0
    first_difference: str | None = None

    def add(self, same: bool, describe: Any) -> None:
        self.total += 1
        if same:
            self.agreed += 1
        elif self.first_difference is None:
            self.first_difference = describe()


def _expected_lines(cp: int) -> int:
    # What `wrap(c * 3, 5, true)` makes of a character with our width: no line for
    # whitespace (the split points), two for a wide character, one otherwise.
    ch = chr(cp)
    if ch in JS_WHITESPACE:
        return 0
    return 2 if char_cells(ch, True) == 2 else 1


def compare_unicode(
    document: Mapping[str, Any], probes: Sequence[Probe] | None = None
) -> list[MeasureRow]:
    """Agreement of our normalizer with the release's, one row per measure (`MEASURES`).

    Args:
        document: The driver's answers (`cached_unicode_reference`).
        probes: The probes it answered (default `unicode_probes()`).

    Returns:
        Rows for agent "musepi": per font the output texts (`unicode/text <font>`) and the
        (graphic characters, fallbacks) pairs (`unicode/counts <font>`), one case per probe;
        and the cell widths (`unicode/cells`), one case per code point probed alone.

    Raises:
        ValueError: The document answers other probes than these.
    """
    chosen = unicode_probes() if probes is None else tuple(probes)
    tallies = {m: _Tally() for m in MEASURES}
    for font in FONTS:
        theirs = document["fonts"][font]
        texts = theirs["texts"].split("\n")
        if len(texts) != len(chosen):
            raise ValueError(f"the reference answered {len(texts)} probes of {len(chosen)}")
        text_tally, count_tally = tallies[_measure("text", font)], tallies[_measure("counts", font)]
        for probe, text, total, fallback in zip(
            chosen, texts, theirs["total"], theirs["fallback"], strict=True
        ):
            ours = normalize_with_stats(probe.text, font=font)
            text_tally.add(
                ours.text == text,
                lambda p=probe, o=ours.text, t=text: f"{p.where()}: ours {o!r}, release {t!r}",
            )
            count_tally.add(
                (ours.graphics, ours.fallbacks) == (total, fallback),
                lambda p=probe, o=ours, t=(total, fallback): (
                    f"{p.where()}: ours {(o.graphics, o.fallbacks)} (graphic, fallback), "
                    f"release {t}"
                ),
            )
    cells = tallies[_measure("cells")]
    if len(document["cells"]) != len(_alone(chosen)):
        raise ValueError(f"the reference measured {len(document['cells'])} widths")
    for cp, lines in zip(_alone(chosen), document["cells"], strict=True):
        mine = _expected_lines(cp)
        cells.add(mine == lines, lambda c=cp, m=mine, t=lines: f"U+{c:04X}: ours {m}, release {t}")
    return [
        MeasureRow(m, "musepi", t.agreed, t.total, t.first_difference) for m, t in tallies.items()
    ]


@cache
def _unicode_rows() -> tuple[MeasureRow, ...]:
    return tuple(compare_unicode(cached_unicode_reference()))


def unicode_rows() -> list[MeasureRow]:
    """The measure's rows, the reference from its cache (run once when absent). Computed
    once per process (about 15 s): the normalizer does not change while it runs."""
    return list(_unicode_rows())


# -- the package data, regenerated from the release ------------------------------------------


def _runs(code_points: Iterable[int]) -> list[str]:
    spans: list[list[int]] = []
    for cp in sorted(code_points):
        if spans and spans[-1][1] == cp - 1:
            spans[-1][1] = cp
        else:
            spans.append([cp, cp])
    return [f"{lo:04X}" if lo == hi else f"{lo:04X}-{hi:04X}" for lo, hi in spans]


def table_texts(document: Mapping[str, Any]) -> dict[str, str]:
    """The two package data files' text from the tables driver's JSON."""
    supported = [f"{font} {span}" for font in FONTS for span in _runs(document["supported"][font])]
    properties = [
        f"{name} {span}" for name, cps in document["properties"].items() for span in _runs(cps)
    ]
    nfkd = sorted(document["nfkd"].items(), key=lambda item: int(item[0], 16))
    properties += [f"nfkd {code} " + " ".join(f"{p:04X}" for p in parts) for code, parts in nfkd]
    return {
        "supported-chars.txt.gz": "\n".join(supported) + "\n",
        "unicode-properties.txt.gz": "\n".join(properties) + "\n",
    }


TABLES_DIR = Path(__file__).resolve().parents[1] / "strategies" / "snapcompact" / "fonts"
"""Where the normalizer's package data lives."""


def release_tables() -> dict[str, str]:
    """The text of `fonts/supported-chars.txt.gz` and `fonts/unicode-properties.txt.gz` as
    the installed release reports it (`conformance/driver/omp-tables.ts`), by file name.

    Raises:
        ReferenceToolMissing: npm or bun is missing.
        ReferenceRunError: installing or running the driver failed.
    """
    with tempfile.TemporaryDirectory(prefix="musepi-tables-") as scratch:
        out = Path(scratch) / "tables.json"
        _run_driver(TABLES_DRIVER, ["--fonts", ",".join(FONTS), "--out", str(out)], timeout=600)
        document = json.loads(out.read_text(encoding="utf-8"))
    return table_texts(document)


def write_tables() -> list[Path]:
    """Rewrite the normalizer's package data from the installed release; returns the files."""
    written = []
    for name, text in release_tables().items():
        data = gzip.compress(text.encode("ascii"), compresslevel=9, mtime=0)
        written.append(write_bytes_atomic(TABLES_DIR / name, data))
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("measure", help="compare our normalizer with the release's on every code point")
    sub.add_parser("tables", help="rewrite the normalizer's package data from the release")
    args = parser.parse_args(argv)
    if args.command == "tables":
        for path in write_tables():
            print(path)
        return 0
    started = time.monotonic()
    document = cached_unicode_reference()
    loaded = time.monotonic()
    rows = compare_unicode(document)
    done = time.monotonic()
    for row in rows:
        print(f"{row.measure:<24} {row.agreed:>8}/{row.total:<8} {row.first_difference or ''}")
    print(
        f"{len(unicode_probes())} probes; reference {loaded - started:.1f} s "
        f"(cached: {document.get('timings_ms')}), ours {done - loaded:.1f} s"
    )
    return 0 if all(r.ok for r in rows) else 1
