"""The strategy registry (issue 4 item 8): strategies are plain values with their parameters.

Every registered strategy prints, hashes, compares by its parameters and round-trips
through `get(name, **params)`; unknown names and bad parameters fail clearly; `compact()`
returns None where there is nothing to do.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session

# Importing the strategy modules registers them (the package imports every built-in).
from musepi_lab.strategies import _extractive, _hybrid, _masking, _none, _prune, _truncate
from musepi_lab.strategies._base import Strategy, available, compact, get, strategy_type

BASELINES = {
    "observation-masking": _masking.ObservationMasking,
    "truncate": _truncate.Truncate,
    "prune": _prune.Prune,
    "extractive": _extractive.Extractive,
    "none": _none.NoCompaction,
    "hybrid": _hybrid.Hybrid,
}
# Parameter values other than the defaults, one set per baseline (none has no parameter).
OTHER_PARAMS: dict[str, dict[str, Any]] = {
    "observation-masking": {"keep_turns": 3},
    "truncate": {},
    "prune": {"protect_tokens": 1000, "minimum_savings": 0},
    "extractive": {"request_chars": 80, "max_items": 4, "state_chars": 200},
    "none": {},
    "hybrid": {"keep_turns": 2, "summary": "extractive", "target_ratio": 0.4, "window": 32000},
}


def test_the_baselines_are_registered_under_their_names() -> None:
    names = available()
    assert list(names) == sorted(names)
    for name, cls in BASELINES.items():
        assert name in names
        assert strategy_type(name) is cls
        assert cls.name == name


@pytest.mark.parametrize("name", available())
def test_every_registered_strategy_is_a_plain_value(name: str) -> None:
    strategy = get(name)
    assert isinstance(strategy, Strategy)
    assert strategy.name == name
    assert repr(strategy).startswith(type(strategy).__name__ + "(")
    assert strategy.label == name  # defaults only: the label is the bare name
    twin = get(name)
    assert twin == strategy and hash(twin) == hash(strategy)
    assert get(strategy.name, **strategy.params) == strategy
    assert get(strategy) is strategy
    with pytest.raises(dataclasses.FrozenInstanceError):
        strategy.name_of_nothing = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baselines_compare_and_round_trip_by_params(name: str) -> None:
    params = OTHER_PARAMS[name]
    strategy = get(name, **params)
    assert get(strategy.name, **strategy.params) == strategy
    assert {**get(name).params, **params} == strategy.params
    # Params go into papermill parameters and notebooks as JSON.
    assert json.loads(json.dumps(strategy.params)) == strategy.params
    assert len({strategy, get(name, **params)}) == 1
    if params:
        assert strategy != get(name)
        for key, value in params.items():
            assert f"{key}={value!r}" in strategy.label
    else:
        assert strategy.label == name


def test_distinct_params_make_distinct_values() -> None:
    a = get("observation-masking", keep_turns=3)
    b = get("observation-masking", keep_turns=4)
    assert a != b and len({a, b, get("observation-masking", keep_turns=3)}) == 2
    assert a.label == "observation-masking(keep_turns=3)"
    assert repr(a) == "ObservationMasking(keep_turns=3)"
    assert get(a, keep_turns=4) == b


def test_unknown_names_list_the_available_ones() -> None:
    with pytest.raises(KeyError) as info:
        get("observation-masks")
    message = str(info.value)
    assert "observation-masks" in message
    for name in available():
        assert name in message


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_unknown_params_are_a_type_error(name: str) -> None:
    with pytest.raises(TypeError):
        get(name, no_such_parameter=1)


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("observation-masking", {"keep_turns": "3"}),
        ("prune", {"protect_tokens": 1.5}),
        ("extractive", {"max_items": None}),
        ("hybrid", {"target_tokens": "10k"}),
        ("hybrid", {"summary": None}),
    ],
)
def test_params_of_the_wrong_type_are_a_type_error(name: str, params: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        get(name, **params)


def tiny_session() -> Session:
    """One request, one small tool step, one answer: nothing worth compacting."""
    records = [
        {"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1}},
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {}}],
                "timestamp": 2,
            },
        },
        {
            "type": "message",
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "bash",
                "content": [{"type": "text", "text": "ok"}],
                "isError": False,
                "timestamp": 3,
            },
        },
        {
            "type": "message",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        },
    ]
    entries = []
    for n, record in enumerate(records, start=1):
        record.update(
            id=f"t{n}", parentId=f"t{n - 1}" if n > 1 else None, timestamp="2026-01-01T00:00:00Z"
        )
        entries.append(Entry.from_record(record))
    return Session({"type": "session", "id": "tiny"}, entries)


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("observation-masking", {}),
        ("observation-masking", {"keep_turns": 0}),  # "ok" is smaller than any placeholder
        ("truncate", {}),
        ("prune", {}),
        ("extractive", {}),
        ("hybrid", {"summary": "extractive"}),
        ("hybrid", {"summary": "extractive", "target_tokens": 0}),
    ],
)
def test_compact_returns_none_when_there_is_nothing_to_do(
    name: str, params: dict[str, Any]
) -> None:
    assert compact(tiny_session(), name, **params) is None


def test_none_still_reports_on_a_session_it_leaves_alone() -> None:
    session = tiny_session()
    result = compact(session, "none")
    assert result is not None
    assert result.strategy == "none"
    assert result.apply(session) is session
