"""Benchmark: snapcompact time per MB of history, on the largest pi fixture and 5 MB synthetics.

For each history the script prepares the compaction once (not timed in the target), then
times, median of N interleaved repetitions:

- `run`: the whole strategy (`Snapcompact().run(ctx)`): serialize and normalize the
  discarded history, plan the archive, render every frame to PNG, write the summary;
- `serialize`: serializing and normalizing the discarded history alone (the baseline: the
  least an archive of this history can cost);
- `render`: planning the archive and rendering its frames alone;
- `compact`: `compact(session, "snapcompact")` end to end (preparation included).

Times are given per MB of raw session bytes (the JSONL as stored) and per MB of archive
source (UTF-8 bytes of the normalized archive text before the frame cap). Histories: the
largest pi corpus fixture (`pi/before-compaction.jsonl`), a synthetic 5 MB coding session
from the dataset generator (tool loops whose long outputs the serializer truncates), and a
synthetic 5 MB conversation of long plain-text turns (nothing truncated: the worst case for
the serializer, and the archive hits the 80-frame cap).

    python benchmarks/bench_snapcompact.py [--quick] [--check] [--repeat N]

Target (issue): under 1 s per MB of history, read as raw session MB. `--check` exits 1
only when it is missed by a wide margin (over 1.5 s per MB).
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass

from bench_read import CORPUS, median_seconds

from musepi_lab._prompts import PromptSet
from musepi_lab.compaction._prepare import prepare_compaction
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.datasets._generator import GeneratorConfig, generate_session
from musepi_lab.session._importing import assistant_message, message_record, user_message
from musepi_lab.session._model import Entry
from musepi_lab.session._read import read_session
from musepi_lab.session._session import Session
from musepi_lab.strategies._base import CompactionContext, compact
from musepi_lab.strategies._frames import plan_archive
from musepi_lab.strategies._snapcompact import (
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fast smoke run (CI)")
    parser.add_argument("--check", action="store_true", help="exit 1 on a wide miss")
    parser.add_argument("--repeat", type=int, default=None, help="repetitions (median)")
    args = parser.parse_args(argv)
    repeat = args.repeat or (1 if args.quick else 5)
    strategy = Snapcompact()

    print(f"snapcompact per MB of history, median of {repeat}\n")
    header = (
        f"{'history':<28} {'raw MB':>7} {'src MB':>7} {'frames':>6} {'cut':>5} "
        f"{'serialize':>9} {'render':>8} {'run':>7} {'compact':>8} "
        f"{'run s/raw MB':>12} {'run s/src MB':>12}"
    )
    print(header)
    print("-" * len(header))
    worst = 0.0
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
        times = median_seconds(
            {
                "run": lambda c=ctx: strategy.run(c),
                "serialize": lambda m=messages: serialize_history(m, include_thinking=False),
                "render": lambda s=source, sh=shape: render_frames(plan_archive(s, sh)),
                "compact": lambda s=history.session: compact(s, strategy),
            },
            repeat,
        )
        raw_mb = history.raw_bytes / MB
        src_mb = len(source.encode("utf-8")) / MB
        per_raw = times["run"] / raw_mb
        worst = max(worst, per_raw)
        print(
            f"{history.name[:28]:<28} {raw_mb:>7.2f} {src_mb:>7.2f} {plan.frames:>6} "
            f"{plan.truncated_chars / MB:>4.1f}M "
            f"{times['serialize']:>8.2f}s {times['render']:>7.2f}s {times['run']:>6.2f}s "
            f"{times['compact']:>7.2f}s {per_raw:>11.2f}s {times['run'] / src_mb:>11.2f}s"
        )
    print(
        "\ncut: archive source dropped by the 80-frame cap (million chars). "
        "src MB: normalized archive text before the cap."
    )
    print(f"worst run time per raw MB: {worst:.2f} s (target < {TARGET_S_PER_MB:.0f} s per MB)")
    if args.check and worst > TARGET_S_PER_MB * WIDE_MARGIN:
        print(f"FAIL: {worst:.2f} s per MB is far above the {TARGET_S_PER_MB:.0f} s target")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
