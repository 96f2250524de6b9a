"""Benchmark: snapcompact time per MB of history, on the largest pi fixture and 5 MB synthetics.

For each history the script prepares the compaction once (not timed in the target), then
times, median of N interleaved repetitions:

- `run`: the whole strategy (`Snapcompact().run(ctx)`): serialize and normalize the
  discarded history, plan the archive, render every frame to PNG, write the summary;
- `serialize`: serializing and normalizing the discarded history alone (the baseline: the
  least an archive of this history can cost);
- `normalize`: `normalize_archive_text` alone, on the same history serialized raw;
- `render`: planning the archive and rendering its frames alone;
- `deflate`: only the compression (zlib-ng) inside those frames' PNGs (at
  `PNG_DEFLATE_LEVEL`): the part of `render` no faster layout can remove;
- `compact`: `compact(session, "snapcompact")` end to end (preparation included).

One-time costs of a process (the format-character table, the glyph atlas) are paid before
the timings by a warm-up run and printed separately.

Times are given per MB of raw session bytes (the JSONL as stored) and per MB of archive
source (UTF-8 bytes of the normalized archive text before the frame cap). Histories: the
largest pi corpus fixture (`pi/before-compaction.jsonl`), a synthetic 5 MB coding session
from the dataset generator (tool loops whose long outputs the serializer truncates), and a
synthetic 5 MB conversation of long plain-text turns (nothing truncated: the worst case for
the serializer, and the archive hits the 80-frame cap).

    python perf/bench_snapcompact.py [--quick] [--check] [--repeat N]

Target (issue 4): under 1 s per MB of history, per raw session MB and per archive source
MB. `--check` exits 1 only when either is missed by a wide margin (over 1.5 s per MB).
"""

from __future__ import annotations

import random
import sys
import time
import zlib
from dataclasses import dataclass

from _harness import CORPUS, bench_parser, median_seconds, repetitions

from musepi_lab._prompts import PromptSet
from musepi_lab.compaction._prepare import prepare_compaction
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.context._llm import convert_to_llm
from musepi_lab.datasets._generator import GeneratorConfig, generate_session
from musepi_lab.formats._records import assistant_message, message_record, user_message
from musepi_lab.formats._registry import read_session
from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session
from musepi_lab.strategies._base import CompactionContext, compact
from musepi_lab.strategies.snapcompact._archive import serialize_scoped
from musepi_lab.strategies.snapcompact._normalize import normalize_archive_text
from musepi_lab.strategies.snapcompact._plan import (
    SHAPE_NAMES,
    ArchivePlan,
    frame_shape,
    plan_archive,
)
from musepi_lab.strategies.snapcompact._render import PNG_DEFLATE_LEVEL, deflate, render_frame
from musepi_lab.strategies.snapcompact._strategy import (
    Snapcompact,
    archive_text,
    previous_archive_text,
    render_frames,
    resolve_shape,
    serialize_history,
    session_model_id,
)
from musepi_lab.tokens._counter import TokenCounter

TARGET_S_PER_MB = 1.0
WIDE_MARGIN = 1.5
SYNTHETIC_BYTES = 5_000_000
MB = 1_000_000


@dataclass(frozen=True)
class History:
    """One benchmarked history: its session and its size as stored."""

    name: str
    session: Session
    raw_bytes: int


def coding_session(target_bytes: int) -> Session:
    """A generated coding session (tool loops, file reads) of about `target_bytes`."""
    probe = generate_session(
        GeneratorConfig(seed=41, tasks=20, with_branch=False, with_compaction=False)
    )[0]
    per_task = len(probe.to_jsonl()) / 20
    tasks = max(1, round(target_bytes / per_task))
    config = GeneratorConfig(seed=41, tasks=tasks, with_branch=False, with_compaction=False)
    return generate_session(config)[0]


def prose_session(target_bytes: int, turn_chars: int = 4000, seed: int = 5) -> Session:
    """Alternating user/assistant plain-text turns of `turn_chars` until `target_bytes`."""
    rng = random.Random(seed)
    words = (
        "the ledger rounds each refund to the nearest cent before the batch is exported "
        "so a retry never writes half a record and the cache stays consistent"
    ).split()
    records: list[dict] = []
    parent: str | None = None
    size = 0
    while size < target_bytes:
        index = len(records)
        text = " ".join(rng.choice(words) for _ in range(turn_chars // 6))
        if index % 2 == 0:
            message = user_message(text, 1_700_000_000_000 + index)
        else:
            message = assistant_message(
                [{"type": "text", "text": text}],
                1_700_000_000_000 + index,
                model="claude-sonnet-4-5",
                provider="anthropic",
            )
        entry_id = f"{index:08x}"
        records.append(message_record(entry_id, parent, None, message))
        parent = entry_id
        size += len(text) + 200
    header = {"type": "session", "version": 3, "id": "prose", "cwd": "/tmp"}
    return Session(header, [Entry.from_record(r) for r in records])


def histories(quick: bool) -> list[History]:
    """The histories to measure (the synthetic ones smaller with `--quick`)."""
    out: list[History] = []
    fixture = CORPUS / "pi" / "before-compaction.jsonl"
    if fixture.is_file():
        out.append(History(fixture.name, read_session(fixture), fixture.stat().st_size))
    else:
        print(f"corpus fixture not found at {fixture}; measuring synthetic histories only")
    target = SYNTHETIC_BYTES // 5 if quick else SYNTHETIC_BYTES
    for name, session in (
        (f"synthetic coding {target / MB:.0f} MB", coding_session(target)),
        (f"synthetic prose {target / MB:.0f} MB", prose_session(target)),
    ):
        out.append(History(name, session, len(session.to_jsonl())))
    return out


def context_for(session: Session, counter: TokenCounter) -> CompactionContext:
    """The strategy's input, prepared once."""
    settings = CompactionSettings.musepi()
    preparation = prepare_compaction(session, settings, counter)
    if preparation is None:
        raise SystemExit(f"nothing to compact in {session.id}")
    return CompactionContext(
        session=session,
        preparation=preparation,
        settings=settings,
        counter=counter,
        summarizer=None,
        prompts=PromptSet.default(),
        leaf_id=preparation.leaf_id,
    )


def one_time_setup_seconds() -> float:
    """Build the tables the first archive of a process pays for, and time that."""
    start = time.perf_counter()
    normalize_archive_text("caf\u00e9 \u2192 done")  # format-character table
    for name in SHAPE_NAMES:
        render_frame("x", frame_shape(name))  # glyph atlas and cell tables
    return time.perf_counter() - start


def frame_scanlines(plan: ArchivePlan) -> list[bytes]:
    """The uncompressed PNG scanlines of every frame of a plan (each PNG has one IDAT)."""
    out: list[bytes] = []
    for page in plan.pages:
        png = render_frame(page.text, page.shape)
        start = png.index(b"IDAT") + 4
        length = int.from_bytes(png[start - 8 : start - 4], "big")
        out.append(zlib.decompress(png[start : start + length]))
    return out


def deflate_seconds(scanlines: list[bytes], repeat: int) -> float:
    """Median time to compress the frames' scanlines as `render_frame` does."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for raw in scanlines:
            deflate(raw, PNG_DEFLATE_LEVEL)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    args = parser.parse_args(argv)
    repeat = repetitions(args, quick=1, full=5)
    strategy = Snapcompact()

    print(f"snapcompact per MB of history, median of {repeat}")
    print(f"one-time setup per process: {one_time_setup_seconds():.2f} s\n")
    header = (
        f"{'history':<26} {'raw MB':>6} {'src MB':>6} {'frames':>6} {'cut':>5} "
        f"{'serialize':>9} {'normalize':>9} {'render':>7} {'deflate':>7} {'run':>6} "
        f"{'compact':>7} {'run s/raw MB':>12} {'run s/src MB':>12}"
    )
    print(header)
    print("-" * len(header))
    worst_raw = worst_src = 0.0
    for history in histories(args.quick):
        counter = TokenCounter("musepi")
        ctx = context_for(history.session, counter)
        prep = ctx.preparation
        assert prep is not None
        model = session_model_id(ctx, prep.leaf_id)
        shape = resolve_shape(model)
        messages = [*prep.messages_to_summarize, *prep.turn_prefix_messages]
        source, _ = archive_text(
            serialize_history(messages, include_thinking=False),
            previous_text=previous_archive_text(prep.previous_preserve_data),
            previous_summary=prep.previous_summary,
        )
        plan = plan_archive(source, shape)
        raw_history = serialize_scoped(
            convert_to_llm(messages, profile="musepi"),
            include_thinking=False,
            dim_tool_results=False,
        )
        strategy.run(ctx)  # warm-up: per-shape tables, caches
        times = median_seconds(
            {
                "run": lambda c=ctx: strategy.run(c),
                "serialize": lambda m=messages: serialize_history(m, include_thinking=False),
                "normalize": lambda t=raw_history: normalize_archive_text(t),
                "render": lambda s=source, sh=shape: render_frames(plan_archive(s, sh)),
                "compact": lambda s=history.session: compact(s, strategy),
            },
            repeat,
        )
        deflate = deflate_seconds(frame_scanlines(plan), repeat)
        raw_mb = history.raw_bytes / MB
        src_mb = len(source.encode("utf-8")) / MB
        per_raw, per_src = times["run"] / raw_mb, times["run"] / src_mb
        worst_raw, worst_src = max(worst_raw, per_raw), max(worst_src, per_src)
        print(
            f"{history.name[:26]:<26} {raw_mb:>6.2f} {src_mb:>6.2f} {plan.frames:>6} "
            f"{plan.truncated_chars / MB:>4.1f}M "
            f"{times['serialize']:>8.2f}s {times['normalize']:>8.2f}s {times['render']:>6.2f}s "
            f"{deflate:>6.2f}s {times['run']:>5.2f}s {times['compact']:>6.2f}s "
            f"{per_raw:>11.2f}s {per_src:>11.2f}s"
        )
    print(
        "\ncut: archive source dropped by the 80-frame cap (million chars). "
        "src MB: normalized archive text before the cap."
    )
    print(
        f"worst run time: {worst_raw:.2f} s per raw MB, {worst_src:.2f} s per src MB "
        f"(target < {TARGET_S_PER_MB:.0f} s per MB)"
    )
    limit = TARGET_S_PER_MB * WIDE_MARGIN
    if args.check and max(worst_raw, worst_src) > limit:
        print(f"FAIL: {max(worst_raw, worst_src):.2f} s per MB is far above the target")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
