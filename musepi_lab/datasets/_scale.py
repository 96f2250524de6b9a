"""Datasets at scale: N generated sessions with the corpus's mix of shapes and formats.

Each session is drawn from the seed and its index alone (`draw_shape`), so any one can be
rebuilt without the others and a folder is the same bytes however many processes wrote it.
The mix was measured on `/work/shared/corpus` (23 sessions, five agents): entry counts run
from 6 to 2,721 with a median of 103 (skewed: half the sessions under 105, a few over
1,000), the sessions' median tool outputs run from 14 to 1,650 characters (most near 200)
and the longest is near 51 KB, a quarter of the sessions hold a compaction, a sixth branch
(all Claude Code), one in twenty holds an image. The draw keeps that shape, smaller, so
the benchmark grid runs on two cores (10,000 sessions × 4 strategies × 3 budgets):

- tasks per session: log-normal, median 4, clipped to 2..60: entries have a median of 55,
  a mean near 72, a 90th percentile near 130 and a tail to about 750 (300 draws: 30..570),
  so the grid's cells stay short and a few sessions are long;
- lines per file read: log-normal, median 120, clipped to 20..1,500: tool outputs have a
  median near 600 characters, a 99th percentile near 16 KB and a longest near 65 KB;
- compaction drawn at 25% for sessions of 4 tasks or more (about 16% of all), a branch at
  20% for 3 tasks or more outside Codex, which is linear (about 13%), an image at 5%;
- formats: pi/MusePi JSONL 50%, Claude Code 35%, Codex rollout 15% (`_scale_formats`).

Every session has its planted facts in `<name>.facts.json` beside it, moved to the entries
the format's reader makes, and the folder has a `manifest.json` (seed, N, counts per format
and shape, sha256 per file) written last, atomically.
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
import random
import struct
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from .._atomic import write_bytes_atomic
from ..formats._registry import read_session
from ..session._session import Session
from ._generator import facts_json, generate_session
from ._scale_formats import stable_uuid, to_claude_code, to_codex
from ._tasks import GeneratorConfig, PlantedFact

SCALE_FORMATS: tuple[tuple[str, float], ...] = (
    ("pi", 0.50),
    ("claude-code", 0.35),
    ("codex", 0.15),
)
"""The formats of a generated dataset and the share of sessions written in each."""

SCALE_MANIFEST = "manifest.json"
"""The name of a generated dataset's manifest, written last in its folder."""

Progress = Callable[[int], None]


@dataclass(frozen=True)
class ScaleShape:
    """The shape of one session of a generated dataset, drawn from the seed and its index.

    Attributes:
        index: Position in the dataset (0-based).
        format: `pi`, `claude-code` or `codex`.
        config: The generator configuration of the pi session it is made from.
        with_image: A screenshot is attached to the first user request.
    """

    index: int
    format: str
    config: GeneratorConfig
    with_image: bool

    @property
    def name(self) -> str:
        """The file's path inside the dataset folder."""
        sid = self.config.session_id
        if self.format == "pi":
            return f"pi/{sid}.jsonl"
        if self.format == "claude-code":
            return f"claude-code/{sid}.jsonl"
        return f"codex/rollout-2026-03-02T09-00-00-{sid}.jsonl"


def _lognormal_int(rng: random.Random, median: float, sigma: float, low: int, high: int) -> int:
    return max(low, min(high, round(rng.lognormvariate(math.log(median), sigma))))


def draw_shape(seed: int, index: int) -> ScaleShape:
    """The shape of session `index` of the dataset made from `seed` (pure)."""
    rng = random.Random(f"musepi-lab-scale:{seed}:{index}")
    pick, fmt = rng.random(), SCALE_FORMATS[-1][0]
    for name, share in SCALE_FORMATS:
        if pick < share:
            fmt = name
            break
        pick -= share
    tasks = _lognormal_int(rng, 4, 0.75, 2, 60)
    read_lines = _lognormal_int(rng, 120, 0.9, 20, 1500)
    compaction = rng.random() < 0.25 and tasks >= 4
    branch = rng.random() < 0.20 and tasks >= 3 and fmt != "codex"
    image = rng.random() < 0.05
    session_seed = rng.getrandbits(31)
    sid = f"scale-{seed}-{index:06d}" if fmt == "pi" else stable_uuid("scale", seed, index)
    cfg = GeneratorConfig(
        seed=session_seed,
        tasks=tasks,
        read_lines=read_lines,
        with_branch=branch,
        with_compaction=compaction,
        session_id=sid,
        start_day=index % 365,
    )
    return ScaleShape(index, fmt, cfg, image)


def _png(rng: random.Random, size: int = 8) -> bytes:
    """A small valid PNG of seeded colours (stands in for a screenshot)."""
    rows = b"".join(
        b"\x00" + bytes(rng.randrange(256) for _ in range(size * 3)) for _ in range(size)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _attach_image(records: list[dict[str, Any]], seed: int) -> None:
    for rec in records[1:]:
        message = rec.get("message")
        if isinstance(message, dict) and message.get("role") == "user":
            data = base64.b64encode(_png(random.Random(seed))).decode()
            message["content"].append({"type": "image", "data": data, "mimeType": "image/png"})
            return


def remap_facts(
    facts: tuple[PlantedFact, ...],
    records: list[dict[str, Any]],
    first_line: Mapping[str, int],
    session: Session,
) -> tuple[PlantedFact, ...]:
    """The facts of a pi session moved to the entries another format's reader made.

    Each pi entry became the lines from its first line to the next entry's; a fact now
    names the first entry read from those lines whose record holds the fact's string.
    """
    by_line = {e.line: (i, e) for i, e in enumerate(session.entries) if e.line is not None}
    starts = sorted(first_line.values())
    next_start = dict(zip(starts, [*starts[1:], 1 << 62], strict=True))
    pi_ids = [r["id"] for r in records[1:]]
    out = []
    for fact in facts:
        start = first_line[pi_ids[fact.index]]
        group = [by_line[n] for n in range(start, next_start[start]) if n in by_line]
        needle = orjson.dumps(fact.fact)[1:-1]
        held = (ie for ie in group if needle in orjson.dumps(dict(ie[1].record)))
        index, entry = next(held, group[0])
        needed = fact.needed_index
        if needed is not None:
            needed = by_line[first_line[pi_ids[needed]]][0]
        out.append(replace(fact, entry_id=str(entry.id), index=index, needed_index=needed))
    return tuple(out)


def _build(
    shape: ScaleShape,
) -> tuple[bytes, tuple[PlantedFact, ...], list[dict[str, Any]], dict[str, int]]:
    session, facts = generate_session(shape.config)
    records = [orjson.loads(line) for line in session.to_jsonl().splitlines()]
    if shape.with_image:
        _attach_image(records, shape.config.seed)
    if shape.format == "pi":
        return b"".join(orjson.dumps(r) + b"\n" for r in records), facts, records, {}
    writer = to_claude_code if shape.format == "claude-code" else to_codex
    data, first_line = writer(records, str(shape.config.session_id))
    return data, facts, records, first_line


def _facts_of(
    shape: ScaleShape,
    built: tuple[bytes, tuple[PlantedFact, ...], list[dict[str, Any]], dict[str, int]],
    written: Path,
) -> bytes:
    _, facts, records, first_line = built
    if shape.format != "pi":
        facts = remap_facts(facts, records, first_line, read_session(written))
    return facts_json(facts)


def generate_scale_file(shape: ScaleShape) -> tuple[bytes, bytes]:
    """One session of a generated dataset: the file's bytes and its `facts.json` bytes."""
    built = _build(shape)
    with tempfile.TemporaryDirectory(prefix="musepi-scale-") as tmp:
        path = Path(tmp) / Path(shape.name).name
        path.write_bytes(built[0])
        return built[0], _facts_of(shape, built, path)


def _write_one(args: tuple[str, int, int]) -> tuple[str, dict[str, Any]]:
    out, seed, index = args
    shape = draw_shape(seed, index)
    built = _build(shape)
    data = built[0]
    target = Path(out) / shape.name
    write_bytes_atomic(target, data, durable=False)
    facts = _facts_of(shape, built, target)
    facts_target = target.with_name(target.name.removesuffix(".jsonl") + ".facts.json")
    write_bytes_atomic(facts_target, facts, durable=False)
    info = {
        "format": shape.format,
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "facts_sha256": hashlib.sha256(facts).hexdigest(),
        "tasks": shape.config.tasks,
        "read_lines": shape.config.read_lines,
        "branch": shape.config.with_branch,
        "compaction": shape.config.with_compaction,
        "image": shape.with_image,
    }
    return shape.name, info


def _shape_counts(files: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    tasks = sorted(int(f["tasks"]) for f in files.values())
    return {
        "formats": dict(sorted(Counter(str(f["format"]) for f in files.values()).items())),
        "branch": sum(bool(f["branch"]) for f in files.values()),
        "compaction": sum(bool(f["compaction"]) for f in files.values()),
        "image": sum(bool(f["image"]) for f in files.values()),
        "tasks_median": tasks[len(tasks) // 2] if tasks else 0,
        "tasks_max": tasks[-1] if tasks else 0,
        "bytes": sum(int(f["bytes"]) for f in files.values()),
    }


def _results(out: Path, n: int, seed: int, workers: int) -> Iterator[tuple[str, dict[str, Any]]]:
    jobs = [(os.fspath(out), seed, i) for i in range(n)]
    if workers <= 1:
        yield from map(_write_one, jobs)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(_write_one, jobs, chunksize=16)


def write_scale_dataset(
    out: str | os.PathLike[str],
    n: int,
    *,
    seed: int = 0,
    workers: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Generate a dataset of `n` sessions into the folder `out` and return its manifest.

    Args:
        out: The folder (created; files of the same names are replaced).
        n: How many sessions.
        seed: The dataset seed: the same seed and `n` give the same bytes.
        workers: Processes that write files (default: the CPU count; 1 writes in this
            process).
        progress: Show a progress bar (tqdm, notebook-aware).

    Returns:
        The manifest, also written to `out/manifest.json` (atomically, after every file):
        the seed, `n`, the generator's shares, counts per format and shape, and per file
        its format, shape and sha256.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    folder = Path(out)
    for fmt, _ in SCALE_FORMATS:
        (folder / fmt).mkdir(parents=True, exist_ok=True)
    from tqdm.auto import tqdm

    workers = workers or os.cpu_count() or 1
    files: dict[str, dict[str, Any]] = {}
    bar = tqdm(total=n, disable=not progress, desc="generating", unit="session")
    with bar:
        for name, info in _results(folder, n, seed, workers):
            files[name] = info
            bar.update(1)
    manifest = {
        "generator": "musepi_lab.datasets.write_scale_dataset",
        "seed": seed,
        "n": n,
        "shares": dict(SCALE_FORMATS),
        "counts": _shape_counts(files),
        "files": dict(sorted(files.items())),
    }
    data = orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    write_bytes_atomic(folder / SCALE_MANIFEST, data)
    return manifest
