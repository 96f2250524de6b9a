"""Benchmark: `prepare_compaction` cost, budget sweeps and growth with session length.

Three measurements, for the `pi` profile (pi estimator) and the `musepi` profile (MusePi
estimator):

1. Sweep: on the largest pi corpus file (`before-compaction.jsonl`), 20 calls over
   keep-recent budgets 1k…39k sharing one counter, against one call with a fresh counter.
   Target (issue): sweep ≤ 1.5x the single call (token counts and every other
   budget-independent part are reused, not recomputed).
2. A synthetic 10,000-entry session prepared with a fresh counter. Target: well under 1 s.
3. Growth: synthetic sessions of 1k, 10k and 100k entries (`--quick`: 1k and 10k);
   time per entry should stay flat (linear growth), i.e. each 10x step costs about 10x.

Synthetic sessions come from a small deterministic generator in this script: user turns,
assistant tool loops (read/edit/bash calls with results), thinking changes, extension
messages, usage on every assistant, and one earlier compaction halfway.

    python perf/bench_compaction.py [--quick] [--check] [--repeat N]

Medians of N interleaved repetitions. `--check` exits 1 only on a wide miss (sweep ratio
> 1.5 × target, 10k prepare > 1 s, or a 10x size step costing > 20x).
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path
from typing import Any

from _harness import bench_parser, median_seconds, repetitions

from musepi_lab.compaction._prepare import prepare_compaction
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.formats._registry import read_session
from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session
from musepi_lab.tokens._counter import TokenCounter

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("MUSEPI_LAB_CORPUS", REPO.parent / "shared" / "corpus"))
SESSION_FILE = CORPUS / "pi" / "before-compaction.jsonl"
SWEEP_BUDGETS = tuple(range(1000, 40001, 2000))
SWEEP_TARGET = 1.5
TEN_K_TARGET_S = 1.0
WIDE_MARGIN = 1.5

_WORDS = (
    "parse the config then validate each field and return a typed error when the value "
    "is missing or malformed so that the caller can retry with defaults applied"
).split()


# -- synthetic sessions ----------------------------------------------------------------
def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def _usage(context: int) -> dict[str, Any]:
    return {
        "input": 40,
        "output": 120,
        "cacheRead": context,
        "cacheWrite": 0,
        "totalTokens": context + 160,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def synthetic_session(n_entries: int, seed: int = 7) -> Session:
    """A linear session of exactly `n_entries` entries, the same for the same arguments."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    context = 3000
    compacted = False

    def add(kind: str, **fields: Any) -> str:
        index = len(records)
        entry_id = f"{index:08x}"
        records.append(
            {
                "type": kind,
                "id": entry_id,
                "parentId": records[-1]["id"] if records else None,
                "timestamp": f"2026-01-01T00:00:{index % 60:02d}.000Z",
                **fields,
            }
        )
        return entry_id

    def message(msg: dict[str, Any]) -> str:
        nonlocal context
        context += len(str(msg.get("content", ""))) // 4
        return add("message", message=msg)

    turn_ids: list[str] = []
    while len(records) < n_entries:
        if rng.random() < 0.1:
            add("thinking_level_change", thinkingLevel=rng.choice(["low", "high"]))
        if rng.random() < 0.05:
            add("custom_message", customType="note", content=_text(rng, 30), display=True)
        turn_ids.append(
            message({"role": "user", "content": _text(rng, rng.randint(10, 60)), "timestamp": 0})
        )
        for step in range(rng.randint(1, 5)):
            calls = []
            for k in range(rng.randint(1, 2)):
                name = rng.choice(["read", "edit", "bash"])
                args = (
                    {"command": "pytest -q"}
                    if name == "bash"
                    else {"path": f"src/mod{rng.randint(0, 40)}.py"}
                )
                calls.append(
                    {
                        "type": "toolCall",
                        "id": f"c{len(records)}_{step}_{k}",
                        "name": name,
                        "arguments": args,
                    }
                )
            message(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": _text(rng, 20)}, *calls],
                    "usage": _usage(context),
                    "stopReason": "toolUse",
                    "timestamp": 0,
                }
            )
            for call in calls:
                message(
                    {
                        "role": "toolResult",
                        "toolCallId": call["id"],
                        "toolName": call["name"],
                        "content": [{"type": "text", "text": _text(rng, rng.randint(20, 150))}],
                        "isError": False,
                        "timestamp": 0,
                    }
                )
        message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": _text(rng, 40)}],
                "usage": _usage(context),
                "stopReason": "stop",
                "timestamp": 0,
            }
        )
        if not compacted and len(records) >= n_entries // 2 and len(turn_ids) > 2:
            add(
                "compaction",
                summary=_text(rng, 200),
                firstKeptEntryId=turn_ids[-2],
                tokensBefore=context,
            )
            context = 8000
            compacted = True
    del records[n_entries:]
    while records[-1]["type"] == "compaction":
        records.pop()
    return Session(
        {"type": "session", "version": 3, "id": f"synthetic-{n_entries}"},
        [Entry.from_record(r) for r in records],
    )


def uncounted(session: Session) -> Session:
    """The session with new entries over the same records: nothing counted or planned yet
    (counts live on the entries, plans with the session). Its cost is timed on its own
    ("copy") and taken off the figures below."""
    return Session(session.header, [Entry.from_record(e.record) for e in session.entries])


def single(session: Session, profile: str) -> None:
    """One preparation with a fresh counter on uncounted entries (counted from scratch)."""
    prepare_compaction(
        uncounted(session), CompactionSettings.for_profile(profile), TokenCounter(profile)
    )


def sweep(session: Session, profile: str) -> None:
    """20 preparations over keep budgets on uncounted entries, sharing one fresh counter."""
    fresh = uncounted(session)
    counter = TokenCounter(profile)
    base = CompactionSettings.for_profile(profile)
    for keep in SWEEP_BUDGETS:
        prepare_compaction(fresh, base.copy_with(keep_recent_tokens=keep), counter)


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__)
    args = parser.parse_args(argv)
    repeat = repetitions(args, quick=3, full=9)
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    failed = False
    # Load lazily imported modules before timing anything.
    single(synthetic_session(200), "pi")
    single(synthetic_session(200), "musepi")

    print("1. sweep of 20 keep budgets vs one call (fresh counters)")
    if SESSION_FILE.exists():
        corpus = read_session(SESSION_FILE)
        print(f"   {SESSION_FILE.name}: {len(corpus.entries)} entries")
        for profile in ("pi", "musepi"):
            t = median_seconds(
                {
                    "copy": lambda: uncounted(corpus),
                    "single": lambda p=profile: single(corpus, p),
                    "sweep": lambda p=profile: sweep(corpus, p),
                },
                repeat,
            )
            t = {"single": t["single"] - t["copy"], "sweep": t["sweep"] - t["copy"]}
            ratio = t["sweep"] / t["single"]
            print(
                f"   {profile:7s} single {t['single'] * 1e3:7.2f} ms   sweep {t['sweep'] * 1e3:7.2f} ms"
                f"   ratio {ratio:4.2f} (target ≤ {SWEEP_TARGET})"
            )
            failed |= ratio > SWEEP_TARGET * WIDE_MARGIN
    else:
        print(f"   skipped: {SESSION_FILE} not found")

    print("2./3. fresh-counter preparation by session length")
    sessions = {n: synthetic_session(n) for n in sizes}
    for profile in ("pi", "musepi"):
        times = median_seconds(
            {
                **{str(n): lambda s=s, p=profile: single(s, p) for n, s in sessions.items()},
                **{f"copy {n}": lambda s=s: uncounted(s) for n, s in sessions.items()},
            },
            max(1, repeat // 3) if not args.quick else repeat,
        )
        previous: float | None = None
        for n in sizes:
            seconds = times[str(n)] - times[f"copy {n}"]
            step = f"   x{seconds / previous:5.1f} for 10x" if previous else ""
            print(
                f"   {profile:7s} {n:>7,d} entries {seconds * 1e3:9.2f} ms  {seconds / n * 1e6:6.2f} µs/entry{step}"
            )
            if n == 10_000:
                failed |= seconds > TEN_K_TARGET_S
            if previous is not None:
                failed |= seconds / previous > 20
            previous = seconds
    if args.check and failed:
        print("FAILED: a target was missed by a wide margin")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
