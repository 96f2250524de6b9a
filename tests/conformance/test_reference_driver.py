"""The reference drivers (conformance/driver/*) on the pi corpus fixtures.

Each driver runs the published packages of one agent (pi 0.58.3 on node; oh-my-pi on Bun) and
reports what their compaction functions return. These tests check that report against facts
counted independently from the raw JSONL (entry counts and types, which entries carry a message,
text-only token estimates, cut indices in range, every message in exactly one region) and against
the values spec §9 gives for pi.

The packages install into the cache outside the repository on first use (about 10 s for pi,
20-30 s for oh-my-pi). Missing node or npm (or a failed Bun install) skips these tests, except
under CI=true, where it fails them: CI must not pass by skipping the only check against the real
agents.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from functools import cache
from typing import Any, NoReturn

import pytest
from _corpus import PI_FILES, corpus_file

pytestmark = pytest.mark.corpus

BUDGETS = (1000, 2000, 5000, 10000, 15000, 20000, 30000, 40000, 60000, 80000, 100000)
DEFAULT_KEEP = 20000
# Every pi-format corpus file, in the test-id order the reader tests use.
FILES = ["/".join(parts[1:]) for parts in PI_FILES]
# The two upstream fixtures large enough to compact, with the facts spec §9 and issue 11 give.
TOP_FIXTURES = ["large-session.jsonl", "before-compaction.jsonl"]


from musepi_lab.conformance import _reference as runner  # noqa: E402


def in_ci() -> bool:
    """True when the CI environment variable says so."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing(reason: str) -> NoReturn:
    """Skip, or fail under CI where a skip would hide that the reference never ran."""
    if in_ci():
        pytest.fail(f"CI=true but the reference driver cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


@cache
def _run(agent: str, name: str) -> dict[str, Any]:
    path = corpus_file("pi", *name.split("/"))
    # Cached per (file digest, pins and driver digest, options) outside the repository.
    return runner.cached_reference(
        agent,
        path,
        BUDGETS,
        snapcompact=True,
        snapcompact_budgets=[DEFAULT_KEEP],
        texts="digest",
    )


def reference(agent: str, name: str) -> dict[str, Any]:
    """The driver's report for one corpus file (each runs once per test session)."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            missing(f"{tool} not found on PATH")
    try:
        return _run(agent, name)
    except runner.ReferenceToolMissing as error:
        missing(str(error))


# --- independent facts from the raw JSONL ---------------------------------------------------


@cache
def raw_entries(name: str) -> tuple[dict[str, Any], ...]:
    """The file's entries after the header line, parsed with nothing but json."""
    path = corpus_file("pi", *name.split("/"))
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert lines[0]["type"] == "session"
    return tuple(lines[1:])


def carries_message(entry: dict[str, Any], agent: str) -> bool:
    """Whether an entry contributes a message to compaction (pi also maps compactions)."""
    kinds = {"message", "custom_message", "branch_summary"}
    if agent == "pi":
        kinds.add("compaction")
    return entry["type"] in kinds


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def text_only_estimate(message: dict[str, Any], agent: str) -> int | None:
    """The token estimate of a user or tool-result message whose content is text only, computed
    from the spec's rules (pi: ceil(UTF-16 units / 4); oh-my-pi: ceil(UTF-8 bytes / 4) per
    fragment); None for other messages."""
    if message.get("role") not in {"user", "toolResult"}:
        return None
    content = message.get("content")
    texts = [content] if isinstance(content, str) else None
    if isinstance(content, list) and all(block.get("type") == "text" for block in content):
        texts = [block["text"] for block in content]
    if texts is None:
        return None
    if agent == "pi":
        return math.ceil(sum(utf16_len(t) for t in texts) / 4)
    return sum((len(t.encode("utf-8")) + 3) >> 2 for t in texts)


def latest_compaction(entries: tuple[dict[str, Any], ...]) -> int:
    return max((i for i, e in enumerate(entries) if e["type"] == "compaction"), default=-1)


AGENTS = ["pi", "musepi"]


# --- the session and the context -------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("name", FILES)
def test_entries_and_estimates_match_the_raw_file(agent: str, name: str) -> None:
    report = reference(agent, name)
    raw = raw_entries(name)
    assert report["schema"] == "musepi-lab.conformance.reference/1"
    assert report["agent"] == agent
    session = report["session"]
    assert session["entry_count"] == len(raw)
    assert session["entry_types"] == [e["type"] for e in raw]
    assert len(set(session["entry_ids"])) == len(raw)
    # v1 files are linear: the leaf's path is every entry in file order.
    assert session["path_file_indices"] == list(range(len(raw)))
    assert session["leaf_file_index"] == len(raw) - 1
    assert session["latest_compaction_path_index"] == latest_compaction(raw)

    tokens = report["estimates"]["tokens"]
    assert len(tokens) == len(raw)
    for entry, estimate in zip(raw, tokens, strict=True):
        if entry["type"] in {"message", "custom_message", "branch_summary", "compaction"}:
            assert isinstance(estimate, int) and estimate >= 0
        else:
            assert estimate is None
    checked = 0
    for entry, estimate in zip(raw, tokens, strict=True):
        expected = text_only_estimate(entry.get("message", {}), agent)
        if entry["type"] == "message" and expected is not None:
            assert estimate == expected, entry["message"]["role"]
            checked += 1
    assert checked > 0


@pytest.mark.slow
@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("name", FILES)
def test_context_roles(agent: str, name: str) -> None:
    context = reference(agent, name)["context"]
    assert context["message_count"] == len(context["roles"])
    roles = set(context["roles"])
    assert roles <= {
        "user",
        "assistant",
        "toolResult",
        "bashExecution",
        "custom",
        "branchSummary",
        "compactionSummary",
    }
    raw = raw_entries(name)
    last = latest_compaction(raw)
    if last >= 0:
        assert context["roles"][0] == "compactionSummary"
    if agent == "pi":
        # pi: the summary, the kept entries before the compaction, then everything after it.
        if last < 0:
            expected = sum(1 for e in raw if e["type"] == "message")
        else:
            kept_from = raw[last]["firstKeptEntryIndex"] - 1  # v1 indices count the header line
            expected = 1 + sum(
                1 for e in raw[kept_from:last] + raw[last + 1 :] if e["type"] == "message"
            )
        assert context["message_count"] == expected


# --- cut point and preparation ---------------------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("name", FILES)
def test_cut_points_in_range(agent: str, name: str) -> None:
    report = reference(agent, name)
    raw = raw_entries(name)
    assert sorted(report["budgets"], key=int) == [str(b) for b in BUDGETS]
    previous_kept = len(raw)
    for budget in BUDGETS:
        cut = report["budgets"][str(budget)]["find_cut_point"]
        assert cut["startIndex"] == latest_compaction(raw) + 1
        assert cut["endIndex"] == len(raw)
        first, turn = cut["firstKeptEntryIndex"], cut["turnStartIndex"]
        assert cut["startIndex"] <= first < cut["endIndex"]
        assert cut["isSplitTurn"] == (turn != -1)
        if turn != -1:
            assert cut["startIndex"] <= turn <= first
            assert raw[turn]["message"]["role"] in {"user", "bashExecution"}
        kept = raw[first]
        assert not (kept["type"] == "message" and kept["message"]["role"] == "toolResult")
        assert cut["firstKeptEntryFileIndex"] == first
        # A bigger budget never keeps less.
        assert first <= previous_kept
        previous_kept = first


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("name", FILES)
def test_preparation_regions(agent: str, name: str) -> None:
    report = reference(agent, name)
    raw = raw_entries(name)
    last = latest_compaction(raw)
    for budget in BUDGETS:
        result = report["budgets"][str(budget)]
        prep = result["prepare_compaction"]
        if prep is None:
            # pi always prepares (it may summarize nothing); oh-my-pi refuses a no-op.
            assert agent == "musepi"
            continue
        first = prep["firstKeptEntryFileIndex"]
        assert 0 <= first < len(raw)
        assert report["session"]["entry_ids"][first] == prep["firstKeptEntryId"]
        regions = [prep["messagesToSummarize"], prep["turnPrefixMessages"]]
        if agent == "musepi":
            regions.append(prep["recentMessages"])
        indices = [m["entry_index"] for region in regions for m in region]
        assert None not in indices
        assert indices == sorted(indices) and len(set(indices)) == len(indices)
        for region in regions:
            for message in region:
                entry = raw[message["entry_index"]]
                if entry["type"] == "message":
                    assert entry["message"]["role"] == message["role"]
        assert all(i < first for i in indices[: len(regions[0]) + len(regions[1])])
        assert bool(prep["turnPrefixMessages"]) <= prep["isSplitTurn"]
        if agent == "pi":
            # pi summarizes every message-bearing entry from after the previous compaction up to
            # the turn start (split) or the cut, and the previous compaction's summary.
            cut = result["find_cut_point"]
            history_end = cut["turnStartIndex"] if cut["isSplitTurn"] else first
            expected = [i for i in range(last + 1, history_end) if carries_message(raw[i], agent)]
            assert [m["entry_index"] for m in prep["messagesToSummarize"]] == expected
            assert first == cut["firstKeptEntryIndex"]
            assert prep["previousSummary"] == (raw[last]["summary"] if last >= 0 else None)
        else:
            # oh-my-pi re-expands the region the previous compaction kept: every message-bearing
            # entry from its first kept entry on lands in exactly one region.
            start = raw[last]["firstKeptEntryIndex"] - 1 if last >= 0 else 0
            expected = [i for i in range(start, len(raw)) if carries_message(raw[i], agent)]
            assert indices == expected
        files = result["file_operations"]
        assert files["readFiles"] == sorted(files["readFiles"])
        assert files["modifiedFiles"] == sorted(files["modifiedFiles"])
        assert not set(files["readFiles"]) & set(files["modifiedFiles"])
        assert (files["readFiles"], files["modifiedFiles"]) == (
            prep["readFiles"],
            prep["modifiedFiles"],
        )
        if agent == "pi":
            assert ("<read-files>" in files["block"]) == bool(files["readFiles"])
            assert ("<modified-files>" in files["block"]) == bool(files["modifiedFiles"])
        else:
            assert ("<files>" in files["block"]) == bool(
                files["readFiles"] or files["modifiedFiles"]
            )


def test_pi_matches_spec_section_9() -> None:
    """Spec §9's pi values at the default keep (20,000), now produced by pi's own code."""
    large = reference("pi", "large-session.jsonl")
    assert large["context"]["message_count"] == 914
    cut = large["budgets"]["20000"]["find_cut_point"]
    assert (cut["firstKeptEntryIndex"], cut["turnStartIndex"], cut["isSplitTurn"]) == (
        837,
        834,
        True,
    )
    assert large["budgets"]["20000"]["prepare_compaction"]["tokensBefore"] == 177_657

    before = reference("pi", "before-compaction.jsonl")
    assert before["context"]["message_count"] == 446
    cut = before["budgets"]["20000"]["find_cut_point"]
    assert (cut["startIndex"], cut["endIndex"]) == (628, 1002)
    assert (cut["firstKeptEntryIndex"], cut["turnStartIndex"], cut["isSplitTurn"]) == (
        946,
        939,
        True,
    )
    assert before["budgets"]["20000"]["prepare_compaction"]["tokensBefore"] == 180_820
    assert before["settings"] == {
        "enabled": True,
        "reserveTokens": 16384,
        "keepRecentTokens": 20000,
    }


def test_musepi_release_facts_from_issue_11() -> None:
    """What issue 11 measured on the release: before-compaction at keep 20,000 keeps from 960."""
    before = reference("musepi", "before-compaction.jsonl")
    assert before["budgets"]["20000"]["prepare_compaction"]["firstKeptEntryFileIndex"] == 960
    assert (
        before["reference"]["packages"]["@oh-my-pi/pi-coding-agent"]
        == runner.reference("musepi").version
    )


# --- texts, pruning, snapcompact, branch summaries -------------------------------------------


@pytest.mark.parametrize("name", FILES)
def test_summarizer_input_per_dialect(name: str) -> None:
    report = reference("musepi", name)
    for budget in BUDGETS:
        result = report["budgets"][str(budget)]
        if result["prepare_compaction"] is None:
            continue
        texts = result["summarizer_input"]["messagesToSummarize"]
        assert set(texts) == {
            "none",
            "anthropic",
            "harmony",
            "xml",
            "glm",
            "hermes",
            "kimi",
            "deepseek",
            "qwen3",
            "gemini",
            "gemma",
            "minimax",
        }
        nonempty = bool(result["prepare_compaction"]["messagesToSummarize"])
        for digest in texts.values():
            assert (digest["length"] > 0) == nonempty


@pytest.mark.parametrize("name", TOP_FIXTURES)
def test_pi_summarizer_input_labels(name: str) -> None:
    result = reference("pi", name)["budgets"][str(DEFAULT_KEEP)]
    text = result["summarizer_input"]["messagesToSummarize"]
    assert text.startswith(("[User]: ", "[Assistant"))
    users = sum(
        1 for m in result["prepare_compaction"]["messagesToSummarize"] if m["role"] == "user"
    )
    assert 0 < text.count("[User]: ") and users > 0


@pytest.mark.parametrize("name", FILES)
def test_pruning(name: str) -> None:
    report = reference("musepi", name)
    raw = raw_entries(name)
    assert "pruning" in reference("pi", name)["unavailable"]
    pruning = report["pruning"]
    assert set(pruning) == {"maintenance_default", "library_default", "supersede_pass"}
    for variant in pruning.values():
        assert variant["prunedCount"] == len(variant["pruned"])
        assert variant["tokensSaved"] >= 0
        for pruned in variant["pruned"]:
            assert raw[pruned["file_index"]]["message"]["role"] == "toolResult"
            assert pruned["notice"]
    maintenance = pruning["maintenance_default"]["config"]
    assert maintenance["cacheWarmSuffixTokens"] == 8000
    assert maintenance["protectTokens"] == 40000 and maintenance["minimumSavings"] == 20000
    if name in TOP_FIXTURES:
        # Issue 11: with the defaults the agent really uses, the release prunes nothing here.
        assert pruning["maintenance_default"]["prunedCount"] == 0


@pytest.mark.parametrize("name", TOP_FIXTURES)
def test_snapcompact_frames_and_billing(name: str) -> None:
    report = reference("musepi", name)
    snap = report["budgets"][str(DEFAULT_KEEP)]["snapcompact"]
    assert set(snap) == {"anthropic", "anthropic-opus-4.7", "google", "openai"}
    for target in snap.values():
        frames = target["frames"]
        assert target["archive"]["frameCount"] == len(frames) > 0
        assert len(frames) <= target["options"]["maxFrames"]
        billing = target["billing"]
        assert billing["frameTokens"] == len(frames) * billing["frameTokenEstimate"]
        size = target["shape"]["frameSize"]
        for frame in frames:
            png = frame["png"]
            assert png["color_type"] == "palette"
            assert png["width"] == size and 0 < png["height"] <= size
            assert frame["chars"] <= frame["cols"] * frame["rows"]
        assert target["archive"]["totalChars"] >= sum(f["chars"] for f in frames)
    # Issue 11's example of a cropped high-resolution frame.
    opus = snap["anthropic-opus-4.7"]["frames"][0]["png"]
    assert (opus["width"], opus["height"]) == (1932, 1920)


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("name", FILES)
def test_branch_summary_collection_and_preparation(agent: str, name: str) -> None:
    branch = reference(agent, name)["branch_summary"]
    raw = raw_entries(name)
    target = len(raw) // 2
    assert branch["targetFileIndex"] == target
    assert branch["fromLeafFileIndex"] == len(raw) - 1
    # Linear session: the common ancestor is the target, and the abandoned entries follow it.
    assert branch["collect"]["commonAncestorFileIndex"] == target
    assert branch["collect"]["entryFileIndices"] == list(range(target + 1, len(raw)))
    unlimited = [m["entry_index"] for m in branch["prepare"]["0"]["messages"]]
    collected = range(target + 1, len(raw))
    if agent == "pi":
        # pi leaves tool results out of branch summaries.
        expected = [
            i
            for i in collected
            if carries_message(raw[i], agent)
            and not (raw[i]["type"] == "message" and raw[i]["message"]["role"] == "toolResult")
        ]
        assert unlimited == expected
    else:
        mapped = {"message", "custom_message", "branch_summary", "compaction"}
        assert set(unlimited) <= {i for i in collected if raw[i]["type"] in mapped}
    for budget in BUDGETS:
        prepared = [m["entry_index"] for m in branch["prepare"][str(budget)]["messages"]]
        # The budget keeps the newest messages.
        assert prepared == unlimited[len(unlimited) - len(prepared) :]
