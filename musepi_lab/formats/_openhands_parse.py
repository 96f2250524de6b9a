"""Parsing OpenHands files into event streams, and the older flat event serialization.

Split from `_openhands.py`, which maps the events: this module finds them (a JSON array,
JSONL events, or an evaluation/resolver output with one instance per line) and rewrites
events of the older serialization in the current shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..session._errors import ProblemLog
from ._io import looks_binary, parse_jsonl, within_nesting
from ._swe_agent import UTF8_BOM, parse_json_document
from ._values import end_of_value, number_hooks, range_message


@dataclass(frozen=True, slots=True)
class Stream:
    """One session's worth of events, with what the header needs."""

    events: Sequence[tuple[int | None, Any]]
    instance: Mapping[str, Any] | None = None
    line: int | None = None


# -- parsing ----------------------------------------------------------------------------------
def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in " \t\r\n":
        i += 1
    return i


def parse_json_array(text: str, log: ProblemLog) -> list[tuple[int, Any]]:
    """The items of a top-level JSON array with the line each starts on.

    Items are decoded one by one, so when the array is cut short or broken the items before
    the damage are kept and the damage is recorded with its line.
    """
    parse_float, parse_int, out_of_range = number_hooks()
    decoder = json.JSONDecoder(
        parse_float=parse_float, parse_int=parse_int, parse_constant=_reject_constant
    )
    out: list[tuple[int, Any]] = []
    i = _skip_ws(text, 0) + 1  # past "["
    line, counted = 1, 0

    def line_at(pos: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, pos)
        counted = pos
        return line

    i = _skip_ws(text, i)
    if i < len(text) and text[i] == "]":
        return out
    while True:
        if i >= len(text):
            log.add(line_at(len(text)), "truncated-json", "array is cut short: no closing ']'")
            return out
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            truncated = exc.pos >= len(text.rstrip())
            kind = "truncated-json" if truncated else "malformed-json"
            what = "array is cut short" if truncated else "not valid JSON"
            log.add(exc.lineno, kind, f"{what}: {exc.msg} (column {exc.colno})")
            return out
        except RecursionError:
            value, deep_end = _deep_item(text, i, line_at(i), log)
            if deep_end is None:
                return out
            end = deep_end
        if out_of_range:
            log.add(line_at(i), "number-out-of-range", range_message(out_of_range))
            out_of_range.clear()
        if value is not _SKIPPED:
            out.append((line_at(i), within_nesting(value, line_at(i), log)))
        i = _skip_ws(text, end)
        if i < len(text) and text[i] == ",":
            i = _skip_ws(text, i + 1)
            continue
        if i < len(text) and text[i] == "]":
            rest = _skip_ws(text, i + 1)
            if rest < len(text):
                log.add(line_at(rest), "malformed-json", "content after the closing ']'; ignored")
            return out
        if i >= len(text):
            log.add(line_at(len(text)), "truncated-json", "array is cut short: no closing ']'")
        else:
            log.add(line_at(i), "malformed-json", f"expected ',' or ']', found {text[i]!r}")
        return out


_SKIPPED: Any = object()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # as JSON.parse


def _deep_item(text: str, start: int, line: int, log: ProblemLog) -> tuple[Any, int | None]:
    """An array item too deep for Python's parser: orjson's deeper one, else skipped.

    Returns `(value or _SKIPPED, end)`; `end` is None when the item never closes.
    """
    end = end_of_value(text, start)
    if end is None:
        log.add(line, "truncated-json", "array is cut short inside a deeply nested item")
        return _SKIPPED, None
    try:
        return orjson.loads(text[start:end]), end
    except orjson.JSONDecodeError as exc:
        log.add(
            line,
            "nested-too-deeply",
            f"array item nests deeper than any parser here allows ({exc.msg}); skipped",
        )
        return _SKIPPED, end


def _decode(data: bytes, log: ProblemLog) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        log.add(
            data.count(b"\n", 0, exc.start) + 1,
            "invalid-utf8",
            "file is not valid UTF-8; bad bytes replaced",
        )
        return data.decode("utf-8", errors="replace")


def _first_line_is_json(data: bytes) -> bool:
    """Whether the first non-blank of the first 64 lines (else the rest) parses: the lines
    found one by one, not `data.split(b"\n", 64)`, which copies the rest of the file."""
    start = 0
    for _ in range(64):
        end = data.find(b"\n", start)
        if end < 0:
            break
        if data[start:end].strip():
            return _parses(data[start:end])
        start = end + 1
    rest = data[start:]
    return bool(rest.strip()) and _parses(rest)


def _parses(raw: bytes) -> bool:
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return True


def is_event(value: Any) -> bool:
    """Whether a value is an OpenHands event (it has an `action` or an `observation`)."""
    return isinstance(value, Mapping) and ("action" in value or "observation" in value)


def _instance_stream(line: int | None, value: Any, log: ProblemLog) -> Stream | None:
    if not isinstance(value, Mapping):
        log.add(line, "not-an-object", f"line holds a JSON {type(value).__name__}, not an instance")
        return None
    history = value.get("history")
    if not isinstance(history, list):
        log.add(line, "missing-history", "instance has no `history` list; no entries read")
        history = []
    return Stream([(line, event) for event in history], instance=value, line=line)


def parse_streams(data: bytes, log: ProblemLog) -> list[Stream]:
    """Split an OpenHands file into event streams, one per session it holds."""
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
    if looks_binary(data):
        log.add(None, "binary-file", "file holds NUL bytes: not an OpenHands file")
        return []
    if not data.strip():
        log.add(None, "empty-file", "file is empty")
        return []
    if data.lstrip().startswith(b"["):
        return [Stream(parse_json_array(_decode(data, log), log))]
    if _first_line_is_json(data):
        values = parse_jsonl(data, log)
        if values and is_event(values[0][1]) and "history" not in values[0][1]:
            return [Stream(values)]
        streams = [_instance_stream(line, value, log) for line, value in values]
        return [s for s in streams if s is not None]
    ok, doc = parse_json_document(data, log)
    if not ok:
        return []
    if isinstance(doc, Mapping) and "history" in doc:
        stream = _instance_stream(None, doc, log)
        return [stream] if stream is not None else []
    log.add(1, "not-an-object", "document is neither an event list nor an instance")
    return []


# -- the older serialization ------------------------------------------------------------------
# `dataclasses.asdict(event)`, as the early resolver wrote `history`: an action's arguments
# at the top level, no `args`/`extras`, and no `id`, `timestamp`, `source` or `cause`.
_EVENT_FIELDS = frozenset(
    {"id", "timestamp", "source", "message", "cause", "tool_call_metadata", "llm_metrics"}
)


def is_flat_event(event: Any) -> bool:
    """Whether an event is in the older, flat serialization (no `source`, no `args`)."""
    if not isinstance(event, Mapping) or "source" in event:
        return False
    if "action" in event:
        return "args" not in event
    return "observation" in event and "extras" not in event


def _flat_source(event: Mapping[str, Any], index: int, previous: Mapping[str, Any] | None) -> str:
    """Who wrote a flat action: its first message and a reply to a waiting agent are the
    user's (the task, the resolver's automatic answers); everything else is the agent's."""
    if event.get("action") != "message":
        return "agent"
    if index == 0 or previous is None:
        return "user"
    waiting = previous.get("action") == "message" and previous.get("wait_for_response") is True
    return "user" if waiting else "agent"


def modern_events(
    events: Sequence[tuple[int | None, Any]], log: ProblemLog
) -> tuple[list[tuple[int | None, Any]], bool]:
    """The events with flat ones rewritten in the current shape (see `is_flat_event`).

    An older `[action, observation]` pair is split into its two events. Returns the events
    and whether any was flat; then a single `inferred-source` problem says so.
    """
    out: list[tuple[int | None, Any]] = []
    for line, event in events:
        if isinstance(event, list) and all(isinstance(e, Mapping) for e in event):
            out.extend((line, e) for e in event)
        else:
            out.append((line, event))
    flat = [i for i, (_, e) in enumerate(out) if is_flat_event(e)]
    if not flat:
        return out, False
    previous: Mapping[str, Any] | None = None
    actions = 0
    for i in flat:
        line, event = out[i]
        rest = {k: v for k, v in event.items() if k not in _EVENT_FIELDS}
        keep = {k: v for k, v in event.items() if k in _EVENT_FIELDS}
        if "action" in event:
            rest.pop("action")
            source = _flat_source(event, actions, previous)
            out[i] = (line, {**keep, "source": source, "action": event["action"], "args": rest})
            previous, actions = event, actions + 1
        else:
            content = rest.pop("content", "")
            rest.pop("observation")
            new = {**keep, "source": "environment", "observation": event["observation"]}
            out[i] = (line, {**new, "content": content, "extras": rest})
    log.add(
        out[flat[0]][0],
        "inferred-source",
        f"{len(flat)} events in the older serialization (no `source`, arguments not in "
        "`args`): a message answering a waiting agent, or the first one, is taken as the "
        "user's, other actions as the agent's, and observations answer calls in order",
    )
    return out, True
