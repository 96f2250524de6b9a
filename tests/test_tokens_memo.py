"""Counts that outlive a counter, the estimators' fast paths, and the rank cache (issue 14)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import tiktoken_ext.openai_public as openai_public

from musepi_lab.session._model import Entry
from musepi_lab.tokens import _bpe
from musepi_lab.tokens._counter import TokenCounter
from musepi_lab.tokens._estimate import js_stringify, js_stringify_bytes

CALL = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": "Reading it."},
        {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.py"}},
    ],
}


def _entry(message: dict[str, Any], entry_id: str = "e1") -> Entry:
    return Entry.from_record({"type": "message", "id": entry_id, "message": message})


@pytest.mark.parametrize("method", ["pi", "musepi"])
def test_a_second_counter_reuses_the_entrys_count(
    method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = _entry(CALL)
    first = TokenCounter(method).count_entry(entry)

    def fail(*_: Any, **__: Any) -> int:
        raise AssertionError("counted again")

    monkeypatch.setattr(TokenCounter, "count_message", fail)
    assert TokenCounter(method).count_entry(entry) == first
    assert TokenCounter(method).count_entries([entry, entry]) == [first, first]


def test_counts_are_kept_per_method() -> None:
    entry = _entry({"role": "user", "content": "héllo"})  # 5 UTF-16 units, 6 UTF-8 bytes
    assert TokenCounter("pi").count_entry(entry) == math.ceil(5 / 4)
    assert TokenCounter("musepi").count_entry(entry) == (6 + 3) // 4
    assert TokenCounter("pi").count_entry(entry) == math.ceil(5 / 4)


def test_a_copied_entry_is_counted_afresh() -> None:
    entry = _entry({"role": "user", "content": "abcd"})
    assert TokenCounter("pi").count_entry(entry) == 1
    longer = entry.copy_with(message={"role": "user", "content": "abcdefgh"})
    assert TokenCounter("pi").count_entry(longer) == 2


def test_the_memo_is_not_part_of_the_entry_value() -> None:
    entry = _entry(CALL)
    TokenCounter("pi").count_entry(entry)
    assert entry.to_dict() == {"type": "message", "id": "e1", "message": CALL}
    assert "_memo" not in repr(entry)
    assert entry.copy_with().to_dict() == entry.to_dict()


@pytest.mark.parametrize(
    "value",
    [
        {"path": "a.py", "offset": 1.0, "limit": 2.5},
        {"n": [1.0, {"deep": 3.0}], "big": 1e16, "half": 0.5},
        {"text": "version 1.0 and 1e5 in a string", "flag": True, "none": None},
        {"unicode": "ünïcode ✓", "int": 10},
    ],
)
def test_js_stringify_prints_numbers_as_javascript(value: dict[str, Any]) -> None:
    # JavaScript's JSON.stringify prints integral doubles without a fraction; the stdlib
    # with the floats turned to ints first is an independent printer of the same text.
    def js(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {k: js(x) for k, x in v.items()}
        if isinstance(v, list):
            return [js(x) for x in v]
        return v

    expected = json.dumps(js(value), separators=(",", ":"), ensure_ascii=False)
    assert js_stringify(value) == expected
    assert js_stringify_bytes(value) == expected.encode()


def _cl100k_hash() -> str:
    # The expected sha256 of the rank file, as tiktoken's own constructor passes it.
    seen: list[str] = []

    def capture(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        seen.append(str(expected_hash))
        return {}

    scope = dict(vars(openai_public), load_tiktoken_bpe=capture)
    constructor = openai_public.ENCODING_CONSTRUCTORS["cl100k_base"]
    try:
        type(constructor)(constructor.__code__, scope)()
    except Exception:  # only the captured hash is wanted
        pass
    return seen[0]


def test_rank_cache_round_trip_and_corruption(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MUSEPI_LAB_CACHE", str(tmp_path))
    expected_hash = _cl100k_hash()
    bundled = _bpe.load_bundled_ranks("cl100k_base", expected_hash)
    cache = _bpe.rank_cache_path("cl100k_base", expected_hash)
    assert cache.parent.parent == tmp_path and not cache.exists()
    assert _bpe.load_ranks("cl100k_base", expected_hash) == bundled
    assert cache.is_file()
    assert _bpe.load_ranks("cl100k_base", expected_hash) == bundled  # from the cache
    data = bytearray(cache.read_bytes())
    data[-1] ^= 0xFF
    cache.write_bytes(bytes(data))
    assert _bpe._read_rank_cache(cache) is None  # an altered file is not trusted
    assert _bpe.load_ranks("cl100k_base", expected_hash) == bundled
    assert _bpe._read_rank_cache(cache) == bundled  # and rewritten


def _chain(n: int) -> list[Entry]:
    # Alternating user and assistant messages of 400 ASCII chars: 100 tokens each (pi:
    # ceil(400 / 4), MusePi: (400 + 3) >> 2).
    entries = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        content: Any = "x" * 400 if role == "user" else [{"type": "text", "text": "x" * 400}]
        entries.append(
            Entry.from_record(
                {
                    "type": "message",
                    "id": f"{i:08x}",
                    "parentId": f"{i - 1:08x}" if i else None,
                    "message": {"role": role, "content": content},
                }
            )
        )
    return entries


@pytest.mark.parametrize("profile", ["pi", "musepi"])
def test_a_cut_counts_only_what_its_walk_reaches(profile: str) -> None:
    from _builders import CountingCounter

    from musepi_lab.compaction._cut import cut_window

    path = _chain(50)
    counter = CountingCounter(profile)
    window = cut_window(path, 0, len(path), counter=counter, profile=profile)
    assert counter.calls == 0
    # Walking back from the newest entry, 100 + 100 + 100 goes past 250 at the third:
    # pi cuts at that entry (47); MusePi (oh-my-pi 18.2.3) keeps the oldest cut point
    # whose suffix fits, the one after it (48: 200 tokens).
    cut = window.cut(250)
    assert counter.calls == 3
    assert cut.first_kept_entry_index == {"pi": 47, "musepi": 48}[profile]
    # reached inside what was counted: nothing more to count (pi 48, MusePi 49)
    assert window.cut(150).first_kept_entry_index == {"pi": 48, "musepi": 49}[profile]
    assert counter.calls == 3
    assert window.cut(10**9).first_kept_entry_index == 0  # everything kept...
    assert counter.calls == 50  # ...after counting everything, once


def _fragment_estimate(message: Any) -> int:
    # The estimate as spec §3.4 defines it: per fragment, then the extras.
    from musepi_lab.tokens._estimate import extra_tokens, text_fragments

    units = sum((len(f.encode("utf-8", "surrogatepass")) + 3) >> 2 for f in text_fragments(message))
    return units + extra_tokens(message)


MESSAGES = [
    {"role": "user", "content": "plain ascii"},
    {"role": "user", "content": [{"type": "text", "text": "ünï"}, {"type": "image"}]},
    {"role": "toolResult", "content": [{"type": "image"}, {"type": "text", "text": 3}]},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig" * 9},
            {"type": "redactedThinking", "data": "xyz"},
            {"type": "toolCall", "name": "edit", "arguments": {"path": "é.py", "n": 2.0}},
            {"type": "text", "text": None},
            "not a block",
        ],
    },
    {"role": "bashExecution", "command": "ls -la", "output": "a\nb"},
    {"role": "pythonExecution", "code": "print(1)", "output": ""},
    {
        "role": "compactionSummary",
        "summary": "so far",
        "blocks": [{"type": "text", "text": "head"}, {"type": "image"}, {"type": "image"}],
    },
    {"role": "branchSummary", "summary": "ünïcode"},
    {"role": "unknown", "content": "ignored"},
]


@pytest.mark.parametrize("message", MESSAGES)
def test_fused_musepi_estimate_equals_the_fragment_definition(message: Any) -> None:
    from musepi_lab.tokens._estimate import estimate_tokens_musepi

    assert estimate_tokens_musepi(message) == _fragment_estimate(message)


def test_fused_musepi_estimate_on_a_corpus_session() -> None:
    from _corpus import corpus_file

    from musepi_lab.formats._pi import read_pi_jsonl
    from musepi_lab.session._messages import entry_to_message
    from musepi_lab.tokens._estimate import estimate_tokens_musepi

    session = read_pi_jsonl(corpus_file("pi", "large-session.jsonl"))
    messages = [m for m in map(entry_to_message, session.entries) if m is not None]
    assert messages
    for message in messages:
        assert estimate_tokens_musepi(message) == _fragment_estimate(message)


@pytest.mark.parametrize("profile", ["pi", "musepi"])
def test_a_session_keeps_its_plan_for_any_counter_of_the_method(
    profile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from musepi_lab.compaction import _prepare
    from musepi_lab.compaction._prepare import prepare_compaction
    from musepi_lab.compaction._settings import CompactionSettings
    from musepi_lab.session._session import Session

    session = Session({"type": "session", "id": "s"}, _chain(40))
    settings = CompactionSettings.for_profile(profile, keep_recent_tokens=250)
    first = prepare_compaction(session, settings, TokenCounter.for_profile(profile))
    assert first is not None

    def fail(*_: Any, **__: Any) -> None:
        raise AssertionError("planned again")

    monkeypatch.setattr(_prepare, "_build_plan", fail)
    again = prepare_compaction(session, settings, TokenCounter.for_profile(profile))
    assert again is not None and again.first_kept_entry_id == first.first_kept_entry_id
    # A copy is a new value: planned on its own.
    with pytest.raises(AssertionError, match="planned again"):
        prepare_compaction(session.copy_with(), settings, TokenCounter.for_profile(profile))
