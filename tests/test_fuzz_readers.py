"""Fuzz every reader with damaged copies of real corpus files.

Damage: random truncation, byte flips, line shuffles, duplicated and deleted lines.
Contract: lenient mode never raises and lists problems naming the file; strict mode raises
`SessionReadError` only, exactly when lenient mode found a problem; the damaged file is
left as it was; format detection never raises. For pi files, every line that plain `json`
reads as an entry is also an entry of the session, on the same line.

Big files are cut to their first lines (read once per module) so the whole module stays
well under a minute.
"""

from __future__ import annotations

import functools
import importlib
import json
import random
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _corpus import CORPUS, corpus_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from musepi_lab.formats._registry import FORMATS, detect_format, read_session
from musepi_lab.session._errors import ReadProblem, SessionReadError

READER_MODULES = {
    "pi": "musepi_lab.formats._pi",
    "claude-code": "musepi_lab.formats._claude_code",
    "codex": "musepi_lab.formats._codex",
    "swe-agent": "musepi_lab.formats._swe_agent",
    "openhands": "musepi_lab.formats._openhands",
    "gemini-cli": "musepi_lab.formats._gemini_cli",
    "opencode": "musepi_lab.formats._opencode",
}

# Fixtures of the repository (tests/data, see their PROVENANCE.md) for formats the corpus
# has no sessions of; paths starting with `data/` are read from there.
GEMINI_FIXTURES: list[tuple[str, str, int | None]] = [
    ("gemini-cli", "data/gemini-cli/chats/session-2026-12-03T10-00-7f3c2a10.jsonl", None),
    ("gemini-cli", "data/gemini-cli/chats/session-2026-11-20T08-30-0a1b2c3d.json", None),
    ("gemini-cli", "data/gemini-cli/checkpoint-setup.json", None),
    ("gemini-cli", "data/gemini-cli-run/chats/session-2026-12-03T19-10-1bf17e1b.jsonl", None),
]
OPENCODE_STORAGE = Path(__file__).parent / "data" / "opencode" / "storage"

# (format, path under the corpus, lines kept: None = whole file, needed for JSON documents)
FUZZ_FILES: list[tuple[str, str, int | None]] = [
    ("pi", "pi/large-session.jsonl", 200),
    ("pi", "pi/before-compaction.jsonl", 200),
    ("pi", "pi/oh-my-pi/large-session.jsonl", 120),
    ("pi", "pi/oh-my-pi/before-compaction.jsonl", 120),
    ("pi", "pi/earendil-works-pi/prompt-cache-replay-session.jsonl", None),
    ("claude-code", "claude-code/spotter_short.jsonl", None),
    ("claude-code", "claude-code/spotter_tool_heavy.jsonl", None),
    ("claude-code", "claude-code/spotter_subagent.jsonl", 60),
    ("claude-code", "claude-code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl", None),
    ("claude-code", "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl", 150),
    ("claude-code", "claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl", 150),
    ("claude-code", "claude-code/258c7280-ae70-4798-800f-63464d01a85d.jsonl", 150),
    ("claude-code", "claude-code/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl", 150),
    (
        "codex",
        "codex/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
        150,
    ),
    (
        "codex",
        "codex/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
        200,
    ),
    (
        "codex",
        "codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
        200,
    ),
    ("swe-agent", "swe-agent/ctf_crypto_katy.traj", None),
    ("swe-agent", "swe-agent/gpt4__pydicom__pydicom-1458.traj", None),
    (
        "swe-agent",
        "swe-agent/replay_function_calling_replace_from_source__marshmallow-code__marshmallow-1867.traj",
        None,
    ),
    ("openhands", "openhands/runtime_trajs_basic_gui_mode.json", None),
    ("openhands", "openhands/multi_swe_bench_examples_output.jsonl", 1),
    *GEMINI_FIXTURES,
]

FUZZ = settings(
    max_examples=25,
    deadline=None,
    database=None,  # nothing written into the repository
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@functools.cache
def corpus_bytes(relative: str, keep_lines: int | None) -> bytes:
    """A corpus file's bytes (its first `keep_lines` lines), read once per module; the
    test is skipped when the corpus is not there (fixtures under `data/` always are)."""
    if not relative.startswith("data/") and not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    if relative.startswith("data/"):
        data = (Path(__file__).parent / relative).read_bytes()
    else:
        data = corpus_file(*relative.split("/")).read_bytes()
    if keep_lines is None:
        return data
    return b"".join(data.splitlines(keepends=True)[:keep_lines])


# -- damage ----------------------------------------------------------------------------------

Op = tuple[Any, ...]


def _lines_op(data: bytes, change: Callable[[list[bytes]], None]) -> bytes:
    lines = data.split(b"\n")
    change(lines)
    return b"\n".join(lines)


def damage(data: bytes, ops: list[Op]) -> bytes:
    """Apply damage operations; positions are taken modulo the current size."""
    for op in ops:
        kind = op[0]
        if kind == "truncate":
            data = data[: op[1] % (len(data) + 1)]
        elif kind == "flip" and data:
            at = op[1] % len(data)
            data = data[:at] + bytes([data[at] ^ op[2]]) + data[at + 1 :]
        elif kind == "shuffle":
            data = _lines_op(data, random.Random(op[1]).shuffle)
        elif kind == "duplicate":

            def duplicate(lines: list[bytes], src: int = op[1], dst: int = op[2]) -> None:
                lines.insert(dst % (len(lines) + 1), lines[src % len(lines)])

            data = _lines_op(data, duplicate)
        elif kind == "delete":

            def delete(lines: list[bytes], start: int = op[1], count: int = op[2]) -> None:
                at = start % len(lines)
                del lines[at : at + count]

            data = _lines_op(data, delete)
    return data


POSITION = st.integers(min_value=0, max_value=2**31)
DAMAGE = st.lists(
    st.one_of(
        st.tuples(st.just("truncate"), POSITION),
        st.tuples(st.just("flip"), POSITION, st.integers(min_value=1, max_value=255)),
        st.tuples(st.just("shuffle"), POSITION),
        st.tuples(st.just("duplicate"), POSITION, POSITION),
        st.tuples(st.just("delete"), POSITION, st.integers(min_value=1, max_value=20)),
    ),
    min_size=1,
    max_size=4,
)


# -- independent view of a pi file -----------------------------------------------------------


def _reject(name: str) -> Any:
    raise ValueError(name)  # JSON.parse has no NaN / Infinity


def pi_entry_lines(data: bytes) -> set[int]:
    """Lines that plain json reads as pi entries (not the header, not an omp title slot)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    out = set()
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            value = json.loads(raw.decode("utf-8"), parse_constant=_reject)
        except (UnicodeDecodeError, ValueError, RecursionError):
            continue
        if not isinstance(value, dict) or value.get("type") == "session":
            continue
        if number == 1 and value.get("type") == "title":
            continue
        out.add(number)
    return out


# -- the test --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.mark.parametrize(
    ("fmt", "relative", "keep_lines"), FUZZ_FILES, ids=[f[1].split("/")[-1] for f in FUZZ_FILES]
)
@FUZZ
@given(ops=DAMAGE)
def test_damaged_files_never_crash_the_reader(
    fuzz_dir: Path, fmt: str, relative: str, keep_lines: int | None, ops: list[Op]
) -> None:
    try:
        importlib.import_module(READER_MODULES[fmt])
    except ImportError as exc:
        pytest.skip(f"the {fmt} reader does not import yet: {exc}")
    data = damage(corpus_bytes(relative, keep_lines), ops)
    path = fuzz_dir / relative.replace("/", "__")
    path.write_bytes(data)
    n_lines = data.count(b"\n") + 1

    assert detect_format(path) in FORMATS

    session = read_session(path, format=fmt)  # lenient: nothing may escape
    for problem in session.errors:
        assert isinstance(problem, ReadProblem)
        assert problem.path == str(path)
        assert problem.line is None or 1 <= problem.line <= n_lines, problem
        assert str(problem).startswith(str(path))
    leaf = session.leaf_id
    assert leaf is None or session.path()[-1].id == leaf
    assert len(session.roots) <= len(session.entries)

    try:
        read_session(path, strict=True, format=fmt)
    except SessionReadError as err:
        assert str(err).startswith(str(path))
        assert session.errors, f"strict raised {err} but lenient mode found no problem"
    else:
        assert not session.errors, f"lenient found {session.errors[0]} but strict did not raise"

    assert path.read_bytes() == data  # the input is never modified

    if fmt == "pi":
        kept = {e.line for e in session.entries}
        repaired = {p.line for p in session.errors if p.kind in ("invalid-utf8", "lone-surrogate")}
        assert pi_entry_lines(data) <= kept
        assert kept <= pi_entry_lines(data) | repaired


@FUZZ
@given(which=st.integers(min_value=0, max_value=2**31), ops=DAMAGE)
def test_damaged_opencode_files_never_crash_the_reader(
    tmp_path_factory: pytest.TempPathFactory, which: int, ops: list[Op]
) -> None:
    # One file of a copied storage folder damaged: the session, a message or a part.
    storage = tmp_path_factory.mktemp("opencode") / "storage"
    shutil.copytree(OPENCODE_STORAGE, storage)
    files = sorted(storage.rglob("*.json"))
    target = files[which % len(files)]
    data = damage(target.read_bytes(), ops)
    target.write_bytes(data)
    session_file = next((storage / "session").glob("*/*.json"))
    assert detect_format(session_file) in FORMATS

    session = read_session(session_file, format="opencode")  # lenient: nothing may escape
    for problem in session.errors:
        assert isinstance(problem, ReadProblem)
        assert problem.path.startswith(str(storage)), problem
        assert problem.line is None or problem.line >= 1
    try:
        read_session(session_file, strict=True, format="opencode")
    except SessionReadError as err:
        assert str(err).startswith(str(storage))
        assert session.errors, f"strict raised {err} but lenient mode found no problem"
    else:
        assert not session.errors, f"lenient found {session.errors[0]} but strict did not raise"
    assert target.read_bytes() == data  # the input is never modified
    out = session.write(storage.parent / "written.jsonl")
    assert len(read_session(out).entries) == len(session.entries)


@FUZZ
@given(ops=st.lists(
    st.one_of(
        st.tuples(st.just("truncate"), POSITION),
        st.tuples(st.just("flip"), POSITION, st.integers(min_value=1, max_value=255)),
    ),
    min_size=1,
    max_size=4,
))  # fmt: skip
def test_damaged_opencode_database_never_crashes_the_reader(
    tmp_path_factory: pytest.TempPathFactory, ops: list[Op]
) -> None:
    db = tmp_path_factory.mktemp("opencode-db") / "opencode.db"
    data = damage(
        (OPENCODE_STORAGE.parent.parent / "opencode-run/db/opencode.db").read_bytes(), ops
    )
    db.write_bytes(data)
    assert detect_format(db) in FORMATS
    session = read_session(db)  # lenient: nothing may escape
    assert all(isinstance(p, ReadProblem) and p.path == str(db) for p in session.errors)
    try:
        read_session(db, strict=True)
    except SessionReadError as err:
        assert str(err).startswith(str(db))
    assert db.read_bytes() == data  # opened read-only


# -- hostile values: nesting depth, huge numbers, long first lines (issue 13) ----------------

# One small input per format (first lines of corpus files; JSON documents whole).
HOSTILE_FILES: list[tuple[str, str, int | None]] = [
    ("pi", "pi/before-compaction.jsonl", 40),
    ("claude-code", "claude-code/spotter_short.jsonl", None),
    (
        "codex",
        "codex/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
        40,
    ),
    ("swe-agent", "swe-agent/ctf_crypto_katy.traj", None),
    ("openhands", "openhands/runtime_trajs_basic_gui_mode.json", None),
    ("openhands", "openhands/multi_swe_bench_examples_output.jsonl", 1),
    *GEMINI_FIXTURES,
]

_OBJECT_START = re.compile(rb'\{\s*"')
_NUMBER = re.compile(rb"(?<=[:\[,])\s*-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
HUGE_NUMBERS = [
    b"1e999",
    b"-1e400",
    b"18446744073709551615",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"123456789012345678901234567890",
    b"1" + b"0" * 400,
    b"4.9e-400",
]


def nested_text(depth: int, kind: str) -> bytes:
    if kind == "list":
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


def _insert_field(data: bytes, at: int, field: bytes) -> bytes:
    """`field` (`"key":value,`) inserted after the `{` of the `at`-th object start."""
    starts = [m.start() for m in _OBJECT_START.finditer(data)]
    if not starts:
        return data
    pos = starts[at % len(starts)] + 1
    return data[:pos] + field + data[pos:]


HostileOp = tuple[Any, ...]


def hostile(data: bytes, ops: list[HostileOp]) -> bytes:
    for op in ops:
        kind = op[0]
        if kind == "nest":
            data = _insert_field(data, op[1], b'"fuzz":' + nested_text(op[2], op[3]) + b",")
        elif kind == "number":
            numbers = list(_NUMBER.finditer(data))
            if numbers:
                m = numbers[op[1] % len(numbers)]
                data = data[: m.start()] + HUGE_NUMBERS[op[2] % len(HUGE_NUMBERS)] + data[m.end() :]
        elif kind == "long-first-line":
            # Padding inside the first record: its line outgrows the 64 KB format sniff.
            data = _insert_field(data, 0, b'"pad":"' + b"x" * op[1] + b'",')
    return data


HOSTILE = st.lists(
    st.one_of(
        st.tuples(
            st.just("nest"),
            POSITION,
            st.integers(min_value=1, max_value=3000),
            st.sampled_from(["list", "dict"]),
        ),
        st.tuples(st.just("number"), POSITION, st.integers(min_value=0, max_value=7)),
        st.tuples(st.just("long-first-line"), st.integers(min_value=60_000, max_value=200_000)),
    ),
    min_size=1,
    max_size=3,
)


@pytest.mark.parametrize(
    ("fmt", "relative", "keep_lines"),
    HOSTILE_FILES,
    ids=[f"{f[0]}-{f[1].split('/')[-1][:20]}" for f in HOSTILE_FILES],
)
@FUZZ
@given(ops=HOSTILE)
def test_hostile_values_never_crash_reading_or_writing(
    fuzz_dir: Path, fmt: str, relative: str, keep_lines: int | None, ops: list[HostileOp]
) -> None:
    data = hostile(corpus_bytes(relative, keep_lines), ops)
    path = fuzz_dir / ("hostile-" + relative.replace("/", "__"))
    path.write_bytes(data)

    detected = detect_format(path)
    assert detected in FORMATS
    if not any(op[0] == "nest" and op[2] > 900 for op in ops):
        # Without values deeper than any parser goes, the content still tells its format
        # (a long first line included).
        assert detected == fmt
    for forced in (None, fmt):
        session = read_session(path, format=forced)  # lenient: nothing may escape
        assert all(isinstance(p, ReadProblem) and p.path == str(path) for p in session.errors)
        # What the reader accepted can be written and read back.
        out = session.write(fuzz_dir / "hostile-written.jsonl")
        again = read_session(out)
        assert len(again.entries) == len(session.entries)
        try:
            read_session(path, strict=True, format=forced)
        except SessionReadError as err:
            assert str(err).startswith(str(path))
    assert path.read_bytes() == data


@pytest.mark.parametrize(
    ("fmt", "relative", "keep_lines"),
    HOSTILE_FILES,
    ids=[f"{f[0]}-{f[1].split('/')[-1][:20]}" for f in HOSTILE_FILES],
)
def test_values_nested_just_under_the_writers_limit_are_written_back(
    fuzz_dir: Path, fmt: str, relative: str, keep_lines: int | None
) -> None:
    # Found by the fuzz test above (Claude Code, 251 levels on the first line): a value
    # orjson can write alone went a few levels deeper inside the converted entry, and the
    # session could not be written. Every depth around orjson's 254-level limit, both
    # container kinds, the first two objects of the file.
    base = corpus_bytes(relative, keep_lines)
    path = fuzz_dir / ("deep-" + relative.replace("/", "__"))
    for depth in range(236, 258, 3):
        for kind in ("list", "dict"):
            for at in (0, 1):
                path.write_bytes(hostile(base, [("nest", at, depth, kind)]))
                session = read_session(path, format=fmt)
                out = session.write(fuzz_dir / "deep-written.jsonl")
                assert len(read_session(out).entries) == len(session.entries), (depth, kind, at)
