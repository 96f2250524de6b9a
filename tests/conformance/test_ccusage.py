"""Our usage reports against ccusage 18.0.11 (`ccusage`, `@ccusage/codex`, `@ccusage/pi`), run
from the pinned npm packages on copies of every corpus folder with recorded usage.

Three kinds of check, none of which takes its expected values from our code:

- ccusage's figures against an independent count of the raw JSONL that follows ccusage's own
  rules (read from its installed source): this pins down how ccusage counts;
- our figures against an independent count that follows ours (in tests/test_usage.py) and,
  here, against ccusage's wherever the two rules count the same thing (input and cache counts
  of Claude Code, every pi count), and every other difference explained by a named cause
  whose size the raw files give;
- each model's tokens priced by ccusage and by our table.

The agreement table is written to test-output/ccusage-agreement.txt and printed in the test
summary (tests/conftest.py). Missing node or npm skips these tests, except under CI=true.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, NoReturn

import pytest
from _corpus import CORPUS, REPO_ROOT, needs_corpus
from _raw import jsonl_records

from musepi_lab.conformance import _ccusage as cc
from musepi_lab.conformance import _reference as runner
from musepi_lab.metrics import known_prices

pytestmark = [pytest.mark.corpus, needs_corpus]

KINDS = ("input", "output", "cache_read", "cache_write")
AGREEMENT_FILE = REPO_ROOT / "test-output" / "ccusage-agreement.txt"


def in_ci() -> bool:
    import os

    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing(reason: str) -> NoReturn:
    if in_ci():
        pytest.fail(f"CI=true but ccusage cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def _tools() -> None:
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            missing(f"{tool} not found on PATH")


@cache
def _theirs(kind: str, folder: str, report: str) -> dict[str, dict[str, float]]:
    files = _files(kind, folder)
    return cc.their_figures(kind, report, cc.run_ccusage(kind, files, report))  # type: ignore[arg-type]


def theirs(kind: str, folder: str, report: str) -> dict[str, dict[str, float]]:
    _tools()
    try:
        return _theirs(kind, folder, report)
    except runner.ReferenceToolMissing as error:
        missing(str(error))


def _files(kind: str, folder: str) -> list[Path]:
    for k, f, files in cc.corpus_usage_folders(CORPUS):
        if (k, f) == (kind, folder):
            return files
    pytest.skip(f"no {kind} folder {folder} in the corpus")


# -- independent counts following ccusage's rules -------------------------------------------


def _add(table: dict[str, dict[str, int]], key: str, counts: tuple[int, int, int, int]) -> None:
    row = table.setdefault(key, dict.fromkeys(KINDS, 0))
    for name, value in zip(KINDS, counts, strict=True):
        row[name] += value


def claude_first_line(files: list[Path]) -> dict[str, dict[str, dict[str, int]]]:
    """ccusage's rule (data-loader `createUniqueHash`): every line with `message.usage`,
    the first of each `message.id:requestId` kept, over all files of a folder."""
    seen: set[str] = set()
    out: dict[str, dict[str, dict[str, int]]] = {"daily": {}, "session": {}}
    for main in files:
        for file in [main, *sorted((main.with_suffix("") / "subagents").glob("*.jsonl"))]:
            for record in jsonl_records(file):
                message = record.get("message")
                usage = message.get("usage") if isinstance(message, dict) else None
                if not isinstance(usage, dict) or "timestamp" not in record:
                    continue
                if message.get("id") is not None and record.get("requestId") is not None:
                    key = f"{message['id']}:{record['requestId']}"
                    if key in seen:
                        continue
                    seen.add(key)
                counts = (
                    usage.get("input_tokens", 0),
                    usage.get("output_tokens", 0),
                    usage.get("cache_read_input_tokens", 0),
                    usage.get("cache_creation_input_tokens", 0),
                )
                _add(out["daily"], record["timestamp"][:10], counts)
                _add(out["session"], main.stem, counts)
    return out


def codex_every_event(files: list[Path]) -> dict[str, dict[str, dict[str, int]]]:
    """@ccusage/codex's rule (`loadTokenUsageEvents`): every token_count event's
    `last_token_usage`, all-zero ones skipped."""
    out: dict[str, dict[str, dict[str, int]]] = {"daily": {}, "session": {}}
    for file in files:
        for record in jsonl_records(file):
            payload = record.get("payload")
            if record.get("type") != "event_msg" or not isinstance(payload, dict):
                continue
            info = payload.get("info")
            last = info.get("last_token_usage") if isinstance(info, dict) else None
            if payload.get("type") != "token_count" or not isinstance(last, dict):
                continue
            inp, out_ = last.get("input_tokens", 0), last.get("output_tokens", 0)
            cached = min(last.get("cached_input_tokens", 0), inp)
            if not (inp or cached or out_ or last.get("reasoning_output_tokens", 0)):
                continue
            counts = (inp - cached, out_, cached, 0)
            _add(out["daily"], record["timestamp"][:10], counts)
            _add(out["session"], file.stem, counts)
    return out


def pi_messages(files: list[Path]) -> dict[str, dict[str, dict[str, int]]]:
    """@ccusage/pi's rule (`loadPiAgentData`): assistant messages with usage, one per
    (line timestamp, totalTokens)."""
    seen: set[str] = set()
    out: dict[str, dict[str, dict[str, int]]] = {"daily": {}, "session": {}}
    for file in files:
        for record in jsonl_records(file):
            message = record.get("message")
            if record.get("type", "message") != "message" or not isinstance(message, dict):
                continue
            usage = message.get("usage")
            if message.get("role") != "assistant" or not isinstance(usage, dict):
                continue
            counts = tuple(usage.get(k, 0) for k in ("input", "output", "cacheRead", "cacheWrite"))
            total = usage.get("totalTokens", sum(counts))
            key = f"{record['timestamp']}:{total}"
            if key in seen:
                continue
            seen.add(key)
            _add(out["daily"], record["timestamp"][:10], counts)  # type: ignore[arg-type]
            _add(out["session"], file.stem, counts)  # type: ignore[arg-type]
    return out


FOLDERS = [("claude-code", "claude-code"), ("codex", "codex")] + [
    ("pi", f) for f in ("pi", "pi/earendil-works-pi", "pi/oh-my-pi")
]
RULES = {"claude-code": claude_first_line, "codex": codex_every_event, "pi": pi_messages}


@pytest.mark.parametrize("report", ["daily", "session"])
@pytest.mark.parametrize(("kind", "folder"), FOLDERS)
def test_ccusage_counts_as_its_source_says(kind: str, folder: str, report: str) -> None:
    got = theirs(kind, folder, report)
    expected = RULES[kind](_files(kind, folder))[report]
    assert {k: {n: int(v[n]) for n in KINDS} for k, v in got.items()} == expected


@pytest.mark.parametrize(("kind", "folder"), FOLDERS)
def test_ours_against_ccusage_every_difference_has_its_cause(kind: str, folder: str) -> None:
    theirs(kind, folder, "daily")  # skips or fails first when the tools are missing
    rows = cc.compare_usage(kind, folder, _files(kind, folder))  # type: ignore[arg-type]
    assert rows and all(row.explained for row in rows), [r for r in rows if not r.explained]
    for row in rows:
        if kind == "pi":  # the same rule: every count equal
            assert row.tokens_equal, row
        if kind == "claude-code":  # only the streamed output count differs
            assert all(row.theirs[n] == row.ours[n] for n in ("input", "cache_read", "cache_write"))
    if kind == "codex":  # ours counts each request once: ccusage's sum minus the repeats
        files = _files(kind, folder)
        repeats = codex_repeated_events(files)
        for row in (r for r in rows if r.report == "session"):
            for name in KINDS:
                assert row.theirs[name] - row.ours[name] == repeats[row.key][name]
            # and the cost difference is those repeats at the model's list prices
            prices = known_prices(codex_model(CORPUS / "codex" / f"{row.key}.jsonl"))
            assert prices is not None
            extra = repeats[row.key]
            surplus = (
                extra["input"] * prices["input"]
                + extra["cache_read"] * prices["cache_read"]
                + extra["output"] * prices["output"]
            ) / 1e6
            assert row.theirs["cost"] - row.ours["cost"] == pytest.approx(surplus, rel=1e-9)


def codex_model(path: Path) -> str:
    """The model the rollout's first `turn_context` names."""
    for record in jsonl_records(path):
        payload = record.get("payload")
        if record.get("type") == "turn_context" and isinstance(payload, dict):
            return str(payload.get("model"))
    raise AssertionError(f"no turn_context in {path}")


def codex_repeated_events(files: list[Path]) -> dict[str, dict[str, int]]:
    """Per file, the `last_token_usage` of token_count events that repeat the previous
    cumulative total (or record no new request)."""
    every = codex_every_event(files)["session"]
    out: dict[str, dict[str, int]] = {}
    for file in files:
        new: dict[str, int] = dict.fromkeys(KINDS, 0)
        previous: Any = None
        for record in jsonl_records(file):
            payload = record.get("payload")
            info = payload.get("info") if isinstance(payload, dict) else None
            if record.get("type") != "event_msg" or not isinstance(info, dict):
                continue
            last, cumulative = info.get("last_token_usage"), info.get("total_token_usage")
            if payload.get("type") != "token_count" or not isinstance(last, dict):
                continue
            if cumulative is not None and cumulative == previous:
                continue
            previous = cumulative
            if not (last.get("input_tokens") or last.get("output_tokens")):
                continue
            cached = last.get("cached_input_tokens", 0)
            new["input"] += last.get("input_tokens", 0) - cached
            new["output"] += last.get("output_tokens", 0)
            new["cache_read"] += cached
        out[file.stem] = {n: every[file.stem][n] - new[n] for n in KINDS}
    return out


@pytest.mark.parametrize(("kind", "folder"), FOLDERS[:2])
def test_same_tokens_same_price(kind: str, folder: str) -> None:
    theirs(kind, folder, "session")
    rows = cc.price_rows(kind, _files(kind, folder))  # type: ignore[arg-type]
    assert rows and all(row.equal for row in rows), [r for r in rows if not r.equal]


def test_agreement_table_written_and_complete() -> None:
    """The whole comparison over the corpus: the table the README quotes."""
    theirs("pi", "pi", "daily")
    rows, prices = cc.compare_usage_corpus(CORPUS)
    table = cc.usage_agreement_table(rows, prices)
    AGREEMENT_FILE.parent.mkdir(exist_ok=True)
    AGREEMENT_FILE.write_text(
        f"{datetime.now().isoformat(timespec='seconds')}\n{table}\n", encoding="utf-8"
    )
    folders = {r.folder for r in rows}
    assert folders == {f for _, f in FOLDERS}
    assert all(r.explained for r in rows), [r for r in rows if not r.explained]
    assert all(p.equal for p in prices)
    by_folder: dict[str, int] = defaultdict(int)
    for row in rows:
        by_folder[row.folder] += 1
    assert all(by_folder[f] >= 2 for f in folders)  # a day and a session at least


def test_streamed_claude_code_usage_only_grows() -> None:
    """Why ours keeps a reply's last line: on every reply of the corpus the lines' counts
    never shrink, input and cache counts never change, and the output grows on some."""
    grew = 0
    for main in _files("claude-code", "claude-code"):
        for file in [main, *sorted((main.with_suffix("") / "subagents").glob("*.jsonl"))]:
            lines: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for record in jsonl_records(file):
                message = record.get("message")
                usage = message.get("usage") if isinstance(message, dict) else None
                if isinstance(usage, dict) and message.get("id") is not None:
                    lines[f"{message['id']}:{record.get('requestId')}"].append(usage)
            for usages in lines.values():
                outputs = [u.get("output_tokens", 0) for u in usages]
                assert outputs == sorted(outputs), (file.name, outputs)
                for name in (
                    "input_tokens",
                    "cache_read_input_tokens",
                    "cache_creation_input_tokens",
                ):
                    assert len({u.get(name, 0) for u in usages}) == 1, (file.name, name)
                grew += outputs[-1] > outputs[0]
    assert grew > 0


def test_claude_code_cost_differences_are_exactly_their_causes() -> None:
    """Per session, our cost minus ccusage's is the streamed output it missed plus the
    1-hour writes' surcharge, each priced at the table's list prices (which ccusage shares,
    `test_same_tokens_same_price`), counted from the raw lines."""
    theirs("claude-code", "claude-code", "session")  # skips or fails when the tools are missing
    files = _files("claude-code", "claude-code")
    rows = cc.compare_usage("claude-code", "claude-code", files)
    expected: dict[str, float] = defaultdict(float)
    for main in files:
        for file in [main, *sorted((main.with_suffix("") / "subagents").glob("*.jsonl"))]:
            replies: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
            for record in jsonl_records(file):
                message = record.get("message")
                usage = message.get("usage") if isinstance(message, dict) else None
                if isinstance(usage, dict) and message.get("id") is not None:
                    key = f"{message['id']}:{record.get('requestId')}"
                    replies[key].append((str(message.get("model")), usage))
            for lines in replies.values():
                model, first = lines[0]
                last = lines[-1][1]
                prices = known_prices(model)
                if prices is None:  # <synthetic>: no tokens
                    continue
                missed = last.get("output_tokens", 0) - first.get("output_tokens", 0)
                split = last.get("cache_creation") or {}
                one_hour = split.get("ephemeral_1h_input_tokens", 0)
                surcharge = one_hour * (prices["cache_write_1h"] - prices["cache_write"])
                expected[main.stem] += (missed * prices["output"] + surcharge) / 1e6
    sessions = [r for r in rows if r.report == "session"]
    assert sessions
    for row in sessions:
        assert row.ours["cost"] - row.theirs["cost"] == pytest.approx(
            expected[row.key], rel=1e-9, abs=1e-9
        ), row.key


def test_billing_blocks_are_ccusages() -> None:
    """ccusage's Claude Code blocks: the block rule restated over its own first-line entries
    gives its blocks; ours start at the same hours with the same requests, and only the
    streamed output differs."""
    got = theirs("claude-code", "claude-code", "blocks")
    entries: list[tuple[datetime, int, int]] = []  # (time, input, cache read) per entry
    seen: set[str] = set()
    for main in _files("claude-code", "claude-code"):
        for file in [main, *sorted((main.with_suffix("") / "subagents").glob("*.jsonl"))]:
            for record in jsonl_records(file):
                message = record.get("message")
                usage = message.get("usage") if isinstance(message, dict) else None
                if not isinstance(usage, dict):
                    continue
                key = f"{message.get('id')}:{record.get('requestId')}"
                if key in seen:
                    continue
                seen.add(key)
                when = datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00"))
                entries.append(
                    (when, usage.get("input_tokens", 0), usage.get("cache_read_input_tokens", 0))
                )
    entries.sort()
    blocks: dict[str, list[int]] = {}
    start = last = None
    for when, inp, read in entries:
        span = 5 * 3600
        if (
            start is None
            or (when - start).total_seconds() > span
            or (when - last).total_seconds() > span
        ):
            start = when.replace(minute=0, second=0, microsecond=0)
        row = blocks.setdefault(start.strftime("%Y-%m-%dT%H:%M:%SZ"), [0, 0, 0])
        row[0] += 1
        row[1] += inp
        row[2] += read
        last = when
    assert {
        k: [int(v["requests"]), int(v["input"]), int(v["cache_read"])] for k, v in got.items()
    } == blocks
    rows = [
        r
        for r in cc.compare_usage(
            "claude-code", "claude-code", _files("claude-code", "claude-code")
        )
        if r.report == "blocks"
    ]
    assert {r.key for r in rows} == set(blocks)
    for row in rows:
        assert row.ours["requests"] == row.theirs["requests"], row.key
        assert all(row.ours[n] == row.theirs[n] for n in ("input", "cache_read", "cache_write"))
