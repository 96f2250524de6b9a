"""Our usage reports against ccusage (`ccusage` 20.0.24 for Claude Code, `@ccusage/codex` and
`@ccusage/pi` 18.0.11), run from the pinned npm packages on copies of every corpus folder
with recorded usage and of the hand-written Claude Code folders in tests/data/claude-code.

Three kinds of check, none of which takes its expected values from our code:

- ccusage's figures against an independent count of the raw JSONL that follows ccusage's own
  rules (read from its source: for ccusage 20 the Rust `adapters/claude` loader and its
  README, each rule also seen on the hand-written files): this pins down how ccusage counts;
- our figures against ccusage's wherever the two rules count the same thing, and every other
  difference explained by named causes whose sizes the raw files give (counted here again);
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

KINDS = ("input", "output", "cache_read", "cache_write")
AGREEMENT_FILE = REPO_ROOT / "test-output" / "ccusage-agreement.txt"
HANDWRITTEN = REPO_ROOT / "tests" / "data" / "claude-code" / "handwritten"


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
def _theirs(kind: str, files: tuple[Path, ...], report: str) -> dict[str, dict[str, float]]:
    return cc.their_figures(kind, report, cc.run_ccusage(kind, files, report))  # type: ignore[arg-type]


def theirs_of(kind: str, files: list[Path], report: str) -> dict[str, dict[str, float]]:
    _tools()
    try:
        return _theirs(kind, tuple(files), report)
    except runner.ReferenceToolMissing as error:
        missing(str(error))


def theirs(kind: str, folder: str, report: str) -> dict[str, dict[str, float]]:
    return theirs_of(kind, _files(kind, folder), report)


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


def _claude_counts(usage: dict[str, Any]) -> tuple[int, int, int, int]:
    return (
        usage.get("input_tokens", 0),
        usage.get("output_tokens", 0),
        usage.get("cache_read_input_tokens", 0),
        usage.get("cache_creation_input_tokens", 0),
    )


def claude_groups(main: Path) -> list[Path]:
    """A Claude Code main file and the subagent files ccusage counts toward its session."""
    folder = main.with_suffix("") / "subagents"
    return [main, *sorted(folder.rglob("agent-*.jsonl"))] if folder.is_dir() else [main]


def claude_entries(files: list[Path]) -> list[dict[str, Any]]:
    """ccusage 20's entries (`load_entries_inner`, `push_deduped_entry`): every line with
    `message.usage` and a timestamp; one per `message.id:requestId` over all files, the line
    with the most tokens kept (the first of equals); each with its session (the main file's
    stem), whether it is a sidechain line, and its usage."""
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    for main in files:
        for file in claude_groups(main):
            for record in jsonl_records(file):
                message = record.get("message")
                usage = message.get("usage") if isinstance(message, dict) else None
                if not isinstance(usage, dict) or "timestamp" not in record:
                    continue
                key = (message.get("id"), record.get("requestId"))
                entry = {
                    "session": main.stem,
                    "timestamp": record["timestamp"],
                    "sidechain": record.get("isSidechain") is True,
                    "id": message.get("id"),
                    "request": record.get("requestId"),
                    "counts": _claude_counts(usage),
                    "model": message.get("model"),
                    "usage": usage,
                }
                if key not in kept or sum(entry["counts"]) > sum(kept[key]["counts"]):
                    kept[key] = {**entry, "order": kept.get(key, {"order": len(kept)})["order"]}
    return sorted(kept.values(), key=lambda e: e["order"])


def claude_replays(entries: list[dict[str, Any]], *, same_time_only: bool) -> list[dict[str, Any]]:
    """Sidechain entries replaying a main entry's message.id under another requestId; with
    `same_time_only` only those at the main entry's timestamp (what the session and blocks
    reports drop: `loaded_entry_matches_sidechain_dedupe_key`), else all (the daily report)."""
    main = {(e["session"], e["id"]): e for e in entries if not e["sidechain"]}
    out = []
    for entry in entries:
        parent = main.get((entry["session"], entry["id"]))
        if not entry["sidechain"] or parent is None or parent["request"] == entry["request"]:
            continue
        if not same_time_only or _ms(parent["timestamp"]) == _ms(entry["timestamp"]):
            out.append(entry)
    return out


def _ms(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000


def claude_progress_only(files: list[Path]) -> list[dict[str, Any]]:
    """Replies only an `agent_progress` line carries (no transcript line has their
    message.id:requestId), the fullest line of each: what ccusage's daily report adds."""
    transcript = {(e["id"], e["request"]) for e in claude_entries(files)}
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for main in files:
        for file in claude_groups(main):
            for record in jsonl_records(file):
                outer = (record.get("data") or {}).get("message")
                inner = outer.get("message") if isinstance(outer, dict) else None
                if record.get("type") != "progress" or not isinstance(inner, dict):
                    continue
                if not isinstance(inner.get("usage"), dict):
                    continue
                key = (inner.get("id"), outer.get("requestId"))
                counts = _claude_counts(inner["usage"])
                if key in transcript or (key in found and sum(found[key]["counts"]) >= sum(counts)):
                    continue
                day = (outer.get("timestamp") or record["timestamp"])[:10]
                found[key] = {
                    "day": day,
                    "counts": counts,
                    "usage": inner["usage"],
                    "model": inner.get("model"),
                }
    return list(found.values())


def claude_ccusage(files: list[Path]) -> dict[str, dict[str, dict[str, int]]]:
    """ccusage 20's daily and session figures by the rules above."""
    entries = claude_entries(files)
    out: dict[str, dict[str, dict[str, int]]] = {"daily": {}, "session": {}}
    dropped_daily = {id(e) for e in claude_replays(entries, same_time_only=False)}
    dropped_session = {id(e) for e in claude_replays(entries, same_time_only=True)}
    for entry in entries:
        if id(entry) not in dropped_daily:
            _add(out["daily"], entry["timestamp"][:10], entry["counts"])
        if id(entry) not in dropped_session:
            _add(out["session"], entry["session"], entry["counts"])
    for reply in claude_progress_only(files):
        _add(out["daily"], reply["day"], reply["counts"])
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


def pi_session_id(file: Path) -> str:
    """@ccusage/pi's session name: the id after the last `_` of pi's `<time>_<id>.jsonl`."""
    return file.stem.rsplit("_", 1)[-1]


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
            _add(out["session"], pi_session_id(file), counts)  # type: ignore[arg-type]
    return out


ELITHRAR = "pi/elithrar-dotfiles"
FOLDERS = [("claude-code", "claude-code"), ("codex", "codex")] + [
    ("pi", f)
    for f in (
        "pi",
        "pi/earendil-works-pi",
        f"{ELITHRAR}/--Users-matt-repos-dotfiles--",
        f"{ELITHRAR}/--Users-matt-repos-minipro-tui--",
        "pi/oh-my-pi",
    )
]
RULES = {"claude-code": claude_ccusage, "codex": codex_every_event, "pi": pi_messages}


@needs_corpus
@pytest.mark.corpus
@pytest.mark.parametrize("report", ["daily", "session"])
@pytest.mark.parametrize(("kind", "folder"), FOLDERS)
def test_ccusage_counts_as_its_source_says(kind: str, folder: str, report: str) -> None:
    got = theirs(kind, folder, report)
    expected = RULES[kind](_files(kind, folder))[report]
    assert {k: {n: int(v[n]) for n in KINDS} for k, v in got.items()} == expected


def _vector(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Tokens and the list-price cost of Claude Code usage objects (1-hour writes at their
    own price), summed: a cause's size counted from the raw lines."""
    out = dict.fromkeys([*KINDS, "cost"], 0.0)
    for row in rows:
        counts = _claude_counts(row["usage"])
        for name, value in zip(KINDS, counts, strict=True):
            out[name] += value
        prices = known_prices(row["model"])
        if prices is None:
            continue
        split = row["usage"].get("cache_creation") or {}
        one_hour = split.get("ephemeral_1h_input_tokens", 0)
        out["cost"] += (
            counts[0] * prices["input"]
            + counts[1] * prices["output"]
            + counts[2] * prices["cache_read"]
            + (counts[3] - one_hour) * prices["cache_write"]
            + one_hour * prices["cache_write_1h"]
        ) / 1e6
    return out


@needs_corpus
@pytest.mark.corpus
@pytest.mark.parametrize(("kind", "folder"), FOLDERS)
def test_ours_against_ccusage_every_difference_has_its_cause(kind: str, folder: str) -> None:
    theirs(kind, folder, "daily")  # skips or fails first when the tools are missing
    files = _files(kind, folder)
    rows = cc.compare_usage(kind, folder, files)  # type: ignore[arg-type]
    assert rows and all(row.explained for row in rows), [r for r in rows if not r.explained]
    for row in rows:
        if kind == "pi":  # the same rule: every count equal
            assert row.tokens_equal, row
        if kind == "claude-code" and row.report != "daily":  # the same rule since ccusage 20
            assert row.tokens_equal and row.cost_equal, row
    if kind == "claude-code":  # the daily report adds the replies only progress lines carry
        progress: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for reply in claude_progress_only(files):
            progress[reply["day"]].append(reply)
        for row in (r for r in rows if r.report == "daily"):
            size = _vector(progress[row.key])
            for name in KINDS:
                assert row.theirs[name] - row.ours[name] == size[name], (row.key, name)
            assert row.theirs["cost"] - row.ours["cost"] == pytest.approx(
                size["cost"], rel=1e-9, abs=1e-12
            )
            if any(size[n] for n in KINDS):
                assert row.sizes["claude-progress-usage"]["input"] == size["input"]
    if kind == "codex":  # ours counts each request once: ccusage's sum minus the repeats
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
            if any(extra.values()):
                size = row.sizes["codex-repeated-token-count"]
                assert {n: size[n] for n in KINDS} == {n: float(extra[n]) for n in KINDS}


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


@needs_corpus
@pytest.mark.corpus
@pytest.mark.parametrize(("kind", "folder"), FOLDERS[:2])
def test_same_tokens_same_price(kind: str, folder: str) -> None:
    theirs(kind, folder, "session")
    rows = cc.price_rows(kind, _files(kind, folder))  # type: ignore[arg-type]
    assert rows and all(row.equal for row in rows), [r for r in rows if not r.equal]


@needs_corpus
@pytest.mark.corpus
def test_agreement_table_written_and_complete() -> None:
    """The whole comparison over the corpus: the table the README quotes."""
    theirs("pi", "pi", "daily")
    rows, prices = cc.compare_usage_corpus(CORPUS)
    table = cc.usage_agreement_table(rows, prices, cc.corpus_duplicates(CORPUS))
    AGREEMENT_FILE.parent.mkdir(exist_ok=True)
    AGREEMENT_FILE.write_text(
        f"{datetime.now().isoformat(timespec='seconds')}\n{table}\n", encoding="utf-8"
    )
    folders = {r.folder for r in rows}
    assert folders == {f for _, f in FOLDERS}
    assert all(r.explained for r in rows), [r for r in rows if not r.explained]
    assert "unexplained (" not in table and "price-table" not in table
    assert all(p.equal for p in prices)
    by_folder: dict[str, int] = defaultdict(int)
    for row in rows:
        by_folder[row.folder] += 1
    assert all(by_folder[f] >= 2 for f in folders)  # a day and a session at least


@needs_corpus
@pytest.mark.corpus
def test_streamed_claude_code_usage_only_grows() -> None:
    """Why ours (a reply's last line) and ccusage 20 (its fullest line) agree: on every reply
    of the corpus the lines' counts never shrink, input and cache counts never change, and
    the output grows on some."""
    grew = 0
    for main in _files("claude-code", "claude-code"):
        for file in claude_groups(main):
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


def _blocks(entries: list[tuple[datetime, tuple[int, int, int, int]]]) -> dict[str, list[int]]:
    """ccusage's blocks (`identifySessionBlocks`): sorted by time; a block starts at its
    first entry floored to the hour; an entry more than 5 h after the block's start or the
    previous entry starts the next. Per block: [entries, input, output, cache read, write]."""
    blocks: dict[str, list[int]] = {}
    start = last = None
    for when, counts in sorted(entries):
        span = 5 * 3600
        if (
            start is None
            or last is None
            or (when - start).total_seconds() > span
            or (when - last).total_seconds() > span
        ):
            start = when.replace(minute=0, second=0, microsecond=0)
        row = blocks.setdefault(start.strftime("%Y-%m-%dT%H:%M:%SZ"), [0, 0, 0, 0, 0])
        row[0] += 1
        for i, value in enumerate(counts, 1):
            row[i] += value
        last = when
    return blocks


def claude_block_entries(files: list[Path]) -> list[tuple[datetime, tuple[int, int, int, int]]]:
    entries = claude_entries(files)
    dropped = {id(e) for e in claude_replays(entries, same_time_only=True)}
    return [
        (datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")), e["counts"])
        for e in entries
        if id(e) not in dropped
    ]


def _their_blocks(got: dict[str, dict[str, float]]) -> dict[str, list[int]]:
    names = ("requests", *KINDS)
    return {k: [int(v[n]) for n in names] for k, v in got.items()}


@needs_corpus
@pytest.mark.corpus
def test_billing_blocks_are_ccusages() -> None:
    """ccusage's Claude Code blocks: the block rule restated over its own entries gives its
    blocks; ours start at the same hours with the same requests and counts."""
    files = _files("claude-code", "claude-code")
    got = theirs("claude-code", "claude-code", "blocks")
    blocks = _blocks(claude_block_entries(files))
    assert _their_blocks(got) == blocks
    rows = [
        r for r in cc.compare_usage("claude-code", "claude-code", files) if r.report == "blocks"
    ]
    assert {r.key for r in rows} == set(blocks)
    for row in rows:
        assert row.ours["requests"] == row.theirs["requests"], row.key
        assert row.tokens_equal, row.key


# -- the hand-written Claude Code folders (tests/data/claude-code/README.md) --------------------


def _handwritten(folder: str) -> list[Path]:
    return cc.claude_code_files(HANDWRITTEN / folder)


@pytest.mark.parametrize("report", ["daily", "session"])
@pytest.mark.parametrize("folder", ["btw-session", "resumed"])
def test_ccusage_counts_the_handwritten_folders_as_its_source_says(
    folder: str, report: str
) -> None:
    files = _handwritten(folder)
    got = theirs_of("claude-code", files, report)
    assert {k: {n: int(v[n]) for n in KINDS} for k, v in got.items()} == claude_ccusage(files)[
        report
    ]


def test_ccusage_blocks_of_the_side_questions_count_their_replays() -> None:
    files = _handwritten("btw-session")
    got = theirs_of("claude-code", files, "blocks")
    assert _their_blocks(got) == _blocks(claude_block_entries(files))


def _raw_lines(path: Path, uuids: set[str]) -> list[dict[str, Any]]:
    return [
        {"usage": r["message"]["usage"], "model": r["message"]["model"]}
        for r in jsonl_records(path)
        if r.get("uuid") in uuids
    ]


def test_side_question_replays_are_a_sized_cause_and_billed_once_by_ours() -> None:
    """The inline `/btw` replay (line q2 of the main file) and the aside_question file's
    (line x1) repeat replies a3 and a1 under new requestIds: ours bills each reply once,
    ccusage's session and blocks reports twice (their timestamps differ from the parents'),
    its daily report once; the cause's size is those two lines' usage."""
    files = _handwritten("btw-session")
    theirs_of("claude-code", files, "daily")
    main = files[0]
    aside = next((main.with_suffix("") / "subagents").glob("agent-aside_question-*.jsonl"))
    replays = _raw_lines(main, {"q2"}) + _raw_lines(aside, {"x1"})
    size = _vector(replays)
    rows = cc.compare_usage("claude-code", "btw-session", files)
    assert all(row.explained for row in rows)
    for row in rows:
        if row.report == "daily":
            assert row.tokens_equal and row.cost_equal
            continue
        assert row.causes == ("claude-sidechain-replay",)
        for name in KINDS:
            assert row.theirs[name] - row.ours[name] == size[name]
            assert row.sizes["claude-sidechain-replay"][name] == size[name]
        assert row.theirs["cost"] - row.ours["cost"] == pytest.approx(size["cost"], rel=1e-9)
    summary = cc.duplicates_of(files)
    assert set(summary) == {"sidechain-replay"}
    assert summary["sidechain-replay"]["requests"] == 2
    assert {n: summary["sidechain-replay"][n] for n in KINDS} == {n: size[n] for n in KINDS}


def test_a_resumed_file_repeating_requests_is_billed_once_by_both() -> None:
    files = _handwritten("resumed")
    theirs_of("claude-code", files, "daily")
    rows = cc.compare_usage("claude-code", "resumed", files)
    assert rows and all(r.tokens_equal and r.cost_equal and r.explained for r in rows)
    # The second file repeats the first's two replies (independent count of the raw pairs).
    first, second = files
    pairs = lambda f: {  # noqa: E731
        (r["message"]["id"], r["requestId"]) for r in jsonl_records(f) if "requestId" in r
    }
    repeated = pairs(first) & pairs(second)
    assert len(repeated) == 2
    summary = cc.duplicates_of(files)
    assert set(summary) == {"repeated-request"}
    assert summary["repeated-request"]["requests"] == len(repeated)
