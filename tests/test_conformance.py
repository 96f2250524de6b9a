"""Conformance with the agents' published packages: our profiles against pi 0.58.3 and
oh-my-pi 18.2.3 on the same files, measure by measure (issue 11).

The expected values are the reference packages' own outputs (run through our drivers); nothing
here comes from our code. Inputs: a generated session with branches, a compaction, bash
commands, custom messages, metadata and all-zero usage (needs no corpus); every pi-format corpus
file; the other corpus formats after our conversion. Missing node/npm/bun skips, except under
CI=true, where it fails. Reference documents are cached per file and pins digest outside the
repository, so repeated runs only pay for our side.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from _corpus import CORPUS, PI_FILES, corpus_file

from musepi_lab.cli import main as cli_main
from musepi_lab.compaction import CompactionSettings
from musepi_lab.conformance import ReferenceToolMissing, compare_file, format_table
from musepi_lab.conformance._compare import (
    COMPARISONS,
    SEED_BOUNDARY_REASON,
    first_difference,
    merge_rows,
)
from musepi_lab.conformance._ours import our_budgets
from musepi_lab.conformance._reference import cached_reference
from musepi_lab.conformance._rows import MeasureRow
from musepi_lab.formats import read_session

# A few budgets keep the suite fast; the CLI sweeps all 11 (DEFAULT_BUDGETS).
TEST_BUDGETS = (1000, 5000, 20000, 100000)
# Converted formats: one file of each, the smallest that still compacts.
CONVERTED = [
    ("claude-code", "spotter_short.jsonl"),
    ("codex", "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"),
    ("openhands", "runtime_trajs_basic_gui_mode.json"),
    ("openhands", "multi_swe_bench_examples_output.jsonl"),
    ("swe-agent", "gpt4__pydicom__pydicom-1458.traj"),
]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing(reason: str) -> NoReturn:
    """Skip, or fail under CI where a skip would hide that the reference never ran."""
    if in_ci():
        pytest.fail(f"CI=true but the reference packages cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def rows_for(
    path: Path, budgets: tuple[int, ...] = TEST_BUDGETS, snapcompact: tuple[int, ...] = ()
) -> list[MeasureRow]:
    # Snapcompact at every corpus file is tests/test_snapcompact_conformance.py's; here only
    # where asked (the release's renderer takes seconds per budget).
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            missing(f"{tool} not found on PATH")
    try:
        return list(compare_file(path, budgets=budgets, snapcompact_budgets=snapcompact).rows)
    except ReferenceToolMissing as error:
        missing(str(error))


def assert_all_agree(rows: list[MeasureRow]) -> None:
    bad = [row for row in rows if not row.ok]
    assert not bad, "\n".join(
        f"{r.agent} {r.measure}: {r.agreed}/{r.total}; {r.first_difference}" for r in bad
    )


# --- a generated session with every entry type ----------------------------------------------


def _usage(total: int) -> dict[str, Any]:
    return {
        "input": total,
        "output": 20,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": total + 20,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def generated_records() -> list[dict[str, Any]]:
    """A v3 session: two branches off the middle, a compaction, bash commands, custom messages,
    a custom-role message, metadata between turns, file reads and edits, and a final assistant
    turn whose usage is all zero (as converters write it)."""
    records: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": 3,
            "id": "gen",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/work/project",
        }
    ]
    parent: str | None = None
    clock = 1767225600000

    def add(record: dict[str, Any], parent_id: str | None = ...) -> str:  # type: ignore[assignment]
        nonlocal parent, clock
        clock += 1000
        entry_id = f"e{len(records):04d}"
        record = {
            "id": entry_id,
            "parentId": parent if parent_id is ... else parent_id,
            "timestamp": f"2026-01-01T00:{(len(records) // 60) % 60:02d}:{len(records) % 60:02d}.000Z",
            **record,
        }
        if record["type"] == "message":
            record["message"] = {**record["message"], "timestamp": clock}
        records.append(record)
        parent = entry_id
        return entry_id

    def user(text: str) -> str:
        return add({"type": "message", "message": {"role": "user", "content": text}})

    def assistant(text: str, calls: list[tuple[str, str, dict[str, Any]]], tokens: int) -> str:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        content += [
            {"type": "toolCall", "id": call_id, "name": name, "arguments": args}
            for call_id, name, args in calls
        ]
        usage = _usage(tokens) if tokens else {**_usage(0), "output": 0, "totalTokens": 0}
        return add(
            {
                "type": "message",
                "message": {
                    "role": "assistant",
                    "content": content,
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "usage": usage,
                    "stopReason": "toolUse" if calls else "stop",
                },
            }
        )

    def result(call_id: str, name: str, text: str) -> str:
        return add(
            {
                "type": "message",
                "message": {
                    "role": "toolResult",
                    "toolCallId": call_id,
                    "toolName": name,
                    "content": [{"type": "text", "text": text}],
                    "isError": False,
                },
            }
        )

    def bash(command: str, output: str) -> str:
        return add(
            {
                "type": "message",
                "message": {
                    "role": "bashExecution",
                    "command": command,
                    "output": output,
                    "exitCode": 0,
                    "cancelled": False,
                    "truncated": False,
                },
            }
        )

    add({"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    add({"type": "thinking_level_change", "thinkingLevel": "medium"})
    body = "lorem ipsum dolor sit amet " * 40
    for turn in range(12):
        user(f"Turn {turn}: please look at module {turn}. " + body[: 200 + 37 * turn])
        call = f"call-{turn}-a"
        assistant(
            f"Reading module {turn}.",
            [(call, "read", {"path": f"src/mod{turn % 4}.py"})],
            2000 + 900 * turn,
        )
        result(call, "read", f"# module {turn}\n" + body * (1 + turn % 3))
        if turn % 3 == 1:
            bash(f"pytest tests/test_mod{turn}.py", "collected 3 items\n...\n3 passed\n" + body)
        if turn % 4 == 2:
            add({"type": "label", "targetId": parent, "label": f"checkpoint {turn}"})
        if turn % 5 == 3:
            add(
                {
                    "type": "custom_message",
                    "customType": "note",
                    "content": f"Reminder {turn}: " + body[:300],
                    "display": True,
                }
            )
            add(
                {
                    "type": "message",
                    "message": {
                        "role": "custom",
                        "customType": "hint",
                        "content": f"hint {turn}",
                        "display": False,
                    },
                }
            )
        call = f"call-{turn}-b"
        assistant(
            "Editing.",
            [(call, "edit", {"path": f"src/mod{turn % 4}.py", "oldText": "a", "newText": "b"})],
            2600 + 900 * turn,
        )
        result(call, "edit", "Applied 1 edit.")
        assistant(f"Done with turn {turn}. " + body[: 120 + 11 * turn], [], 3000 + 900 * turn)
        if turn == 6:
            fork = parent
        if turn == 7:
            first_kept = records[-8]["id"]
            add(
                {
                    "type": "compaction",
                    "summary": "## Goal\nRefactor the modules.\n",
                    "firstKeptEntryId": first_kept,
                    "tokensBefore": 9000,
                    "details": {"readFiles": ["src/old.py"], "modifiedFiles": []},
                }
            )
    # An abandoned branch from turn 6, then back to the main line with a branch summary.
    main_leaf = parent
    parent = fork
    user("Side quest: try another approach. " + body[:400])
    call = "call-side"
    assistant("Trying.", [(call, "write", {"path": "src/side.py", "content": body})], 7000)
    result(call, "write", "Wrote src/side.py")
    parent = main_leaf
    add(
        {
            "type": "branch_summary",
            "fromId": records[-1]["id"],
            "summary": "Tried a side path.",
            "details": {"readFiles": [], "modifiedFiles": ["src/side.py"]},
        }
    )
    bash("git status", "On branch main\nnothing to commit\n")
    user("Wrap up. " + body[:500])
    assistant("Wrapped up. " + body[:300], [], 0)  # all-zero usage: the release still takes it
    return records


@pytest.fixture(scope="module")
def generated_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("conformance") / "generated.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in generated_records()))
    yield path


def test_generated_session_agrees_on_every_measure(generated_file: Path) -> None:
    rows = rows_for(generated_file, (1000, 2000, 5000, 10000, 20000), snapcompact=(1000,))
    assert_all_agree(rows)
    measures = {(r.agent, r.measure) for r in rows}
    # The texts: pi's one serializer, MusePi's every dialect, snapcompact's archive and
    # frames (pixels compared with the frames the release wrote).
    assert ("pi", "summarizer_input") in measures
    dialects = {m.split("/", 1)[1] for a, m in measures if m.startswith("summarizer_input/")}
    assert {"none", "anthropic", "harmony", "xml", "qwen3", "gemma"} <= dialects
    for part in ("plan", "archive_text", "frame_geometry", "frame_pixels", "billing"):
        assert ("musepi", f"snapcompact/{part}") in measures
    # (this session is small: its archive fits the text pages, so no frame; see below)
    # Both agents report the core measures; the release alone has pruning.
    for agent in ("pi", "musepi"):
        for measure in (
            "context",
            "estimates",
            "cut_point",
            "prepare.first_kept",
            "prepare.tokens_before",
            "file_lists",
            "files_block",
            "branch.prepare",
        ):
            assert (agent, measure) in measures
    assert ("musepi", "pruning.maintenance_default") in measures
    assert ("pi", "pruning.maintenance_default") not in measures


def _entry_indices(preparation: dict[str, Any], key: str) -> list[int]:
    return [m["entry_index"] for m in preparation[key]]


def test_seed_boundary_differences_are_listed_not_failed(generated_file: Path) -> None:
    # The generated session compacts once (file index of the compaction below). The seed
    # starts prepareCompaction right after it; the release re-opens the region it kept
    # (the 7 entries before it), which shows in its own output at a small budget.
    budgets = (1000, 20000)
    rows = rows_for(generated_file, budgets)
    session = read_session(generated_file)
    compaction = next(i for i, e in enumerate(session.entries) if e.type == "compaction")
    release = cached_reference("musepi", generated_file, budgets, texts="digest")
    released = release["budgets"]["1000"]["prepare_compaction"]
    assert min(_entry_indices(released, "messagesToSummarize")) < compaction
    seed = our_budgets(session, "musepi", budgets, boundary="seed")
    for budget in budgets:
        prepared = seed[str(budget)]["prepare_compaction"]
        if prepared is None:
            continue  # nothing after the compaction to summarize at this budget
        for key in ("messagesToSummarize", "turnPrefixMessages", "recentMessages"):
            assert all(i > compaction for i in _entry_indices(prepared, key))

    assert_all_agree(rows)  # ordinary rows (release rule) agree; seed rows never fail
    listed = {r.measure: r for r in rows if r.seed_difference is not None}
    assert {r.agent for r in listed.values()} == {"musepi"}
    assert all(r.seed_difference == SEED_BOUNDARY_REASON for r in listed.values())
    summarized = listed["prepare.messages_to_summarize"]
    assert 0 < summarized.total <= len(budgets) and summarized.agreed < summarized.total
    assert "cut_point" not in listed  # findCutPoint on the raw path: no boundary involved
    previous = listed["prepare.previous_summary"]  # the same compaction either way
    assert previous.agreed == previous.total
    table = format_table(rows)
    ordinary, _, seed_section = table.partition("seed differences")
    assert SEED_BOUNDARY_REASON in seed_section and "prepare.messages_to_summarize" in seed_section
    assert "prepare.messages_to_summarize" in ordinary  # also in the release-rule rows


def test_no_seed_rows_for_pi_or_without_a_compaction(generated_file: Path) -> None:
    from musepi_lab.conformance._compare import compare_seed_boundary

    session = read_session(generated_file)
    no_compaction = {"agent": "musepi", "session": {"latest_compaction_path_index": -1}}
    assert compare_seed_boundary(no_compaction, session, TEST_BUDGETS) == []
    pi = {"agent": "pi", "session": {"latest_compaction_path_index": 5}}
    assert compare_seed_boundary(pi, session, TEST_BUDGETS) == []


# --- the corpus --------------------------------------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("parts", PI_FILES, ids=lambda p: "/".join(p[1:]))
def test_pi_corpus_file_agrees(parts: tuple[str, ...]) -> None:
    assert_all_agree(rows_for(corpus_file(*parts)))


@pytest.mark.corpus
def test_the_table_compares_snapcompact_frames_pixel_for_pixel() -> None:
    rows = rows_for(corpus_file("pi", "large-session.jsonl"), (20000,), snapcompact=(20000,))
    assert_all_agree(rows)
    pixels = next(r for r in rows if r.measure == "snapcompact/frame_pixels")
    geometry = next(r for r in rows if r.measure == "snapcompact/frame_geometry")
    assert pixels.total == geometry.total > 0


@pytest.mark.corpus
@pytest.mark.parametrize("parts", CONVERTED, ids=lambda p: "/".join(p))
def test_converted_corpus_file_agrees(parts: tuple[str, ...]) -> None:
    report_rows = rows_for(corpus_file(*parts))
    assert_all_agree(report_rows)


@pytest.mark.corpus
def test_command_prints_the_table_and_exits_zero_on_agreement(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = corpus_file("pi", "before-compaction.jsonl")
    rows_for(path)  # skips (or fails under CI) when the tools are missing
    out = tmp_path / "rows.json"
    code = cli_main(["conformance", str(path), "--budgets", "20000", "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "cut_point" in printed and "prepare.first_kept" in printed
    document = json.loads(out.read_text())
    assert document["budgets"] == [20000]
    assert {row["agent"] for row in document["files"][0]["rows"]} == {"pi", "musepi"}
    # The file compacts twice: the seed's boundary rows are listed, reason included.
    listed = [row for row in document["files"][0]["rows"] if row["seed_difference"]]
    assert {row["agent"] for row in listed} == {"musepi"}
    assert "seed differences (listed, not failures)" in printed
    # MusePi compared: snapcompact's normalization on every code point, once for the run.
    assert "unicode/text 8x13" in printed and "unicode/cells" in printed
    unicode_rows = document["unicode"]
    assert {row["measure"] for row in unicode_rows} >= {
        "unicode/text silver",
        "unicode/counts 8x13",
    }
    assert all(row["agreed"] == row["total"] > 0 for row in unicode_rows)


@pytest.mark.corpus
def test_command_exits_nonzero_on_a_disagreement_but_not_on_own_wording(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from musepi_lab.conformance import _compare

    path = corpus_file("pi", "before-compaction.jsonl")
    rows_for(path, (20000,))

    def own_wording(reference: Any, session: Any, budgets: Any) -> list[MeasureRow]:
        return [MeasureRow("prose", str(reference["agent"]), 0, 1, "ours", own_wording=True)]

    def disagreeing(reference: Any, session: Any, budgets: Any) -> list[MeasureRow]:
        return [MeasureRow("made-up", str(reference["agent"]), 1, 2, "budget 20000: 1 vs 2")]

    monkeypatch.setattr(_compare, "COMPARISONS", [own_wording])
    assert cli_main(["conformance", str(path), "--budgets", "20000"]) == 0
    monkeypatch.setattr(_compare, "COMPARISONS", [own_wording, disagreeing])
    assert cli_main(["conformance", str(path), "--budgets", "20000"]) == 1
    assert "budget 20000: 1 vs 2" in capsys.readouterr().out


def test_command_names_a_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing_file = tmp_path / "nope.jsonl"
    assert cli_main(["conformance", str(missing_file)]) == 2
    assert str(missing_file) in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "data", "kind"),
    [
        ("empty.jsonl", b"", "empty-file"),
        ("frame.png", b"\x89PNG\r\n\x1a\n\x00\x00", "binary-file"),
    ],
)
def test_command_refuses_a_file_that_holds_no_session(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, data: bytes, kind: str
) -> None:
    # Refused before any reference driver runs (they would fail with a stack trace).
    path = tmp_path / name
    path.write_bytes(data)
    assert cli_main(["conformance", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: holds no session" in err and f"[{kind}]" in err
    assert path.read_bytes() == data


# --- pure parts (no reference needed) -----------------------------------------------------


@pytest.mark.parametrize(
    ("ours", "theirs", "expected"),
    [
        (1, 1, None),
        ({"a": [1, 2]}, {"a": [1, 3]}, "x.a[1]: ours 2, release 3"),
        ([1], [1, 2], "x: length ours 1, release 2"),
        ("abcd", "abXd", "x: text differs at character 2 (ours 'cd', release 'Xd')"),
    ],
)
def test_first_difference_names_the_place(ours: Any, theirs: Any, expected: str | None) -> None:
    assert first_difference(ours, theirs, "x") == expected


def test_merge_rows_sums_cases_and_keeps_the_first_difference() -> None:
    rows = [
        MeasureRow("cut_point", "musepi", 2, 2),
        MeasureRow("cut_point", "musepi", 1, 3, "b.jsonl: budget 1000"),
        MeasureRow("cut_point", "musepi", 0, 1, "c.jsonl: budget 5000"),
        MeasureRow("cut_point", "pi", 4, 4),
    ]
    merged = {(r.agent, r.measure): r for r in merge_rows(rows)}
    assert merged["musepi", "cut_point"] == MeasureRow(
        "cut_point", "musepi", 3, 6, "b.jsonl: budget 1000"
    )
    assert merged["pi", "cut_point"].ok


def test_own_wording_rows_do_not_fail() -> None:
    assert MeasureRow("summary.prose", "musepi", 0, 3, "x", own_wording=True).ok
    assert not MeasureRow("cut_point", "musepi", 2, 3, "x").ok


def test_seed_difference_rows_do_not_fail_and_merge_apart() -> None:
    seed = MeasureRow("prepare.first_kept", "musepi", 1, 3, "a.jsonl: x", seed_difference="why")
    release = MeasureRow("prepare.first_kept", "musepi", 3, 3)
    assert seed.ok
    merged = merge_rows([release, seed, seed])
    assert sorted((r.seed_difference or "", r.agreed, r.total) for r in merged) == [
        ("", 3, 3),
        ("why", 2, 6),
    ]
    lines = format_table(merged).splitlines()
    at = lines.index("seed differences (listed, not failures) — why")
    assert "3/3" in lines[1] and "2/6" in lines[at + 2] and "a.jsonl: x" in lines[at + 2]


def test_comparisons_are_registered_in_one_list() -> None:
    assert [c.__name__ for c in COMPARISONS] == [
        "compare_engine",
        "compare_seed_boundary",
        "compare_dialects",
        "compare_pi_summarizer_input",
    ]


def test_musepi_settings_record_the_release_they_follow() -> None:
    assert CompactionSettings.musepi().reference == "oh-my-pi 18.2.3"
    assert CompactionSettings.pi().reference == "pi-coding-agent 0.58.3"


def test_corpus_path_is_outside_the_repository() -> None:
    assert not str(CORPUS.resolve()).startswith(str(Path(__file__).resolve().parents[1]) + "/")
