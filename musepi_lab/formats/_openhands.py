"""OpenHands event streams and evaluation outputs → `Session`s.

Two layouts:

- an event stream: a JSON array of events (a saved trajectory), or JSONL with one event per
  line; one session;
- an evaluation output (`output.jsonl`): one instance per line, each with `instance_id`,
  `metadata`, `metrics` and a `history` event stream; one session per instance.

An event has `id`, `timestamp`, `source` (`user`, `agent`, `environment`) and either an
`action` with `args` or an `observation` with `content` and `extras`; observations name the
action they answer in `cause`, and tool-driven ones carry `tool_call_metadata`.

Mapping, event by event, linked into a linear chain:

- user `message` → user message; agent `message` → assistant text; agent `finish` →
  assistant text (its thought and final message); agent `think` without tool metadata →
  assistant text.
- Other agent actions (`run`, `read`, `edit`, `browse`, `think` called as a tool, ...) →
  assistant message with the action's `thought` as text and one toolCall: id =
  `tool_call_metadata.tool_call_id`, else `event_<id>`; name = the action (so `read` and
  `edit` with `path` feed pi's file-operation tracking); arguments = the arguments the model
  wrote, from the model response in `tool_call_metadata` when it is recorded there (the
  action's `args` can miss them: older `edit` events keep the file text only inside
  `translated_ipython_code`), else `args` without `thought` (it is the text). The model
  response's token usage is attached once per response.
- An observation answering such a call (by tool-call id, else by `cause`) → toolResult;
  `isError` when the observation is `error` or `success` is false.
- An `error` observation answering nothing (the model's call could not be parsed) → user
  message, as OpenHands feeds it back to the model.
- Everything else — system prompt, recall, agent state changes, `null` events, observations
  of non-tool actions — → `custom` entries (`customType = "openhands:<action or
  observation>"`, `data` = the raw event), outside the LLM context.

Resolver output and early evaluation output wrote events flat (`dataclasses.asdict`: no
`source`, no `args`, no ids); they are rewritten in the current shape first, with the
sources inferred and one `inferred-source` problem saying so (`_openhands_parse.py`).
Instances without `instance_id` take the resolver's `owner/repo#number`, and ids repeated
within a file get the line of their instance (`id@line`). A stream in which no event maps
to a message is a `no-messages` problem.

`sourceId = str(event id)`. Timestamps without a zone are taken as UTC. Entries of a JSONL
line get that line number; events of a JSON array get the line their object starts on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ..session._errors import ProblemLog
from ..session._model import Entry
from ..session._session import CURRENT_SESSION_VERSION, Session
from ._io import read_bytes_checked
from ._openhands_parse import Stream, is_event, modern_events, parse_streams
from ._records import (
    IdAllocator,
    assistant_message,
    chain,
    empty_session,
    message_record,
    text_block,
    token_count,
    tool_call_block,
    tool_result_message,
    usage,
    user_message,
)
from ._swe_agent import ToolCallIds, parse_arguments

SOURCE_FORMAT = "openhands"

# Actions that steer the runtime rather than act on the world.
CONTROL_ACTIONS: frozenset[str] = frozenset(
    {"system", "recall", "change_agent_state", "null", "condensation", "condensation_request"}
)


# -- time -------------------------------------------------------------------------------------
def event_time(value: Any) -> tuple[str | None, int]:
    """`(ISO timestamp with ms and Z, epoch ms)` of an event timestamp; naive means UTC."""
    if not isinstance(value, str) or not value:
        return None, 0
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value, 0
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    parsed = parsed.astimezone(UTC)
    iso = parsed.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return iso, int(parsed.timestamp() * 1000)


# -- events -----------------------------------------------------------------------------------
def _source_id(event: Mapping[str, Any]) -> str | None:
    value = event.get("id")
    return str(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _args(event: Mapping[str, Any]) -> Mapping[str, Any]:
    args = event.get("args")
    return args if isinstance(args, Mapping) else {}


def _metadata(event: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = event.get("tool_call_metadata")
    return meta if isinstance(meta, Mapping) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def event_kind(event: Mapping[str, Any]) -> str:
    """How an event maps: `user`, `assistant-text`, `tool-call`, `observation` or `custom`."""
    source = event.get("source")
    if "action" in event:
        action = event.get("action")
        if action == "message" and source == "user":
            return "user"
        if source != "agent" or not isinstance(action, str) or action in CONTROL_ACTIONS:
            return "custom"
        if action in ("message", "finish") or (action == "think" and not _metadata(event)):
            return "assistant-text"
        return "tool-call"
    if "observation" in event:
        return "observation"
    return "custom"


def _custom_kind(event: Mapping[str, Any]) -> str:
    for key in ("action", "observation"):
        if isinstance(event.get(key), str):
            return f"openhands:{event[key]}"
    return "openhands:event"


def _response_usage(meta: Mapping[str, Any]) -> tuple[str | None, str, dict[str, Any] | None]:
    """`(response id, model, usage)` of a tool call's model response, where recorded."""
    response = meta.get("model_response")
    if not isinstance(response, Mapping):
        return None, "", None
    response_id = response.get("id") if isinstance(response.get("id"), str) else None
    model = _str(response.get("model"))
    raw = response.get("usage")
    if not isinstance(raw, Mapping):
        return response_id, model, None
    prompt = token_count(raw.get("prompt_tokens"))
    details = raw.get("prompt_tokens_details")
    cached = token_count(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    # OpenAI-style prompt_tokens include cached ones; pi's `input` does not.
    return (
        response_id,
        model,
        usage(
            input=prompt - cached,
            output=raw.get("completion_tokens") or 0,
            cache_read=cached,
            total=raw.get("total_tokens"),
        ),
    )


def _model_arguments(meta: Mapping[str, Any]) -> Any | None:
    """The arguments the model wrote for this call, from its recorded response, or None."""
    response = meta.get("model_response")
    call_id = meta.get("tool_call_id")
    if not isinstance(response, Mapping) or not isinstance(call_id, str):
        return None
    for choice in response.get("choices") or ():
        message = choice.get("message") if isinstance(choice, Mapping) else None
        calls = message.get("tool_calls") if isinstance(message, Mapping) else None
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, Mapping) and call.get("id") == call_id:
                function = call.get("function")
                if isinstance(function, Mapping):
                    return parse_arguments(function.get("arguments"))
    return None


def _observation_text(event: Mapping[str, Any]) -> str:
    content = event.get("content")
    if isinstance(content, str):
        return content
    if content is None:
        return _str(event.get("message"))
    return orjson.dumps(content).decode()


class _Builder:
    """Turns one event stream into v3 records (state: open tool calls, seen responses)."""

    def __init__(self, alloc: IdAllocator, log: ProblemLog, model: str) -> None:
        self.alloc = alloc
        self.log = log
        self.model = model  # the configured model until a response names the one that ran
        self.records: list[dict[str, Any]] = []
        self.lines: list[int | None] = []
        self.calls = ToolCallIds()
        # Open calls: call id → (name, source call id, event key), and both indexes.
        self.open: dict[str, tuple[str, str, str]] = {}
        self.open_by_call: dict[str, str] = {}
        self.open_by_event: dict[str, str] = {}
        self.responses: set[str] = set()
        # Older flat events name no cause: an observation answers the oldest open call.
        self.pair_in_order = False

    def add(self, record: dict[str, Any], line: int | None, source_id: str | None) -> None:
        if source_id is not None:
            record["sourceId"] = source_id
        self.records.append(record)
        self.lines.append(line)

    def event(self, index: int, line: int | None, event: Any) -> None:
        if not isinstance(event, Mapping):
            self.log.add(
                line,
                "not-an-object",
                f"event {index} is a JSON {type(event).__name__}, not an event; skipped",
            )
            return
        source_id = _source_id(event)
        entry_id = self.alloc.take(None, "event", index, source_id)
        iso, ms = event_time(event.get("timestamp"))
        kind = event_kind(event)
        if kind == "user":
            text = _str(_args(event).get("content")) or _str(event.get("message"))
            record = message_record(entry_id, None, iso, user_message(text, ms))
        elif kind == "assistant-text":
            record = message_record(entry_id, None, iso, self._text_message(event, ms))
        elif kind == "tool-call":
            msg = self._tool_call(event, source_id or f"index{index}", ms)
            record = message_record(entry_id, None, iso, msg)
        elif kind == "observation" and (call := self._answered_call(event)) is not None:
            call_id, name = call
            is_error = event.get("observation") == "error" or event.get("success") is False
            msg = tool_result_message(
                call_id, name, _observation_text(event), ms, is_error=is_error
            )
            record = message_record(entry_id, None, iso, msg)
        elif kind == "observation" and event.get("observation") == "error":
            record = message_record(entry_id, None, iso, user_message(_observation_text(event), ms))
        else:
            if kind == "custom" and not is_event(event):
                self.log.add(
                    line,
                    "unknown-event",
                    f"event {index} has neither `action` nor `observation`; kept as custom",
                )
            record = {
                "type": "custom",
                "id": entry_id,
                "parentId": None,
                "timestamp": iso,
                "customType": _custom_kind(event),
                "data": dict(event),
            }
        self.add(record, line, source_id)

    def _text_message(self, event: Mapping[str, Any], ms: int) -> dict[str, Any]:
        args = _args(event)
        parts = [
            _str(args.get("thought")),
            _str(args.get("content")),
            _str(args.get("final_thought")),
        ]
        if not any(p.strip() for p in parts):
            parts = [_str(event.get("message"))]
        blocks = [text_block(p) for p in parts if p.strip()]
        # A `finish` (or message) written as a tool call has its model response's usage too.
        usage_ = self._usage_once(_metadata(event))
        return assistant_message(blocks, ms, model=self.model, usage_=usage_)

    def _usage_once(self, meta: Mapping[str, Any]) -> dict[str, Any] | None:
        """The usage of the model response behind `meta`, the first time that response is
        met (several calls of one response share its usage; it is counted once)."""
        response_id, model, usage_ = _response_usage(meta)
        self.model = model or self.model
        if response_id is not None:
            if response_id in self.responses:
                usage_ = None
            self.responses.add(response_id)
        return usage_

    def _tool_call(self, event: Mapping[str, Any], event_key: str, ms: int) -> dict[str, Any]:
        args = _args(event)
        meta = _metadata(event)
        name = str(event.get("action"))
        source_call = _str(meta.get("tool_call_id")) or f"event_{event_key}"
        call_id = self.calls.issue(source_call, name)
        thought = _str(args.get("thought"))
        arguments = _model_arguments(meta)
        if arguments is None and name == "think":
            # The thought is the tool's only argument; as text too it would count twice.
            arguments, thought = {"thought": thought}, ""
        elif arguments is None:
            arguments = {k: v for k, v in args.items() if k != "thought"}
        blocks = [text_block(thought)] if thought.strip() else []
        blocks.append(tool_call_block(call_id, name, arguments))
        usage_ = self._usage_once(meta)
        self.open[call_id] = (name, source_call, event_key)
        self.open_by_call[source_call] = call_id
        self.open_by_event[event_key] = call_id
        return assistant_message(blocks, ms, model=self.model, usage_=usage_, stop_reason="toolUse")

    def _answered_call(self, event: Mapping[str, Any]) -> tuple[str, str] | None:
        """The open tool call this observation answers (and close it), or None."""
        source_call = _str(_metadata(event).get("tool_call_id"))
        cause = event.get("cause")
        cause_id = (
            str(cause) if isinstance(cause, (int, str)) and not isinstance(cause, bool) else None
        )
        call_id = self.open_by_call.get(source_call) if source_call else None
        if call_id is None and cause_id is not None:
            call_id = self.open_by_event.get(cause_id)
        if call_id is None and self.pair_in_order and not source_call and cause_id is None:
            call_id = next(iter(self.open), None)
        if call_id is None:
            return None
        name, by_call, by_event = self.open.pop(call_id)
        if self.open_by_call.get(by_call) == call_id:
            del self.open_by_call[by_call]
        if self.open_by_event.get(by_event) == call_id:
            del self.open_by_event[by_event]
        return call_id, name


# -- header -----------------------------------------------------------------------------------
def _metrics(stream: Stream) -> dict[str, Any] | None:
    metrics = stream.instance.get("metrics") if stream.instance is not None else None
    if not isinstance(metrics, Mapping):
        # Event streams carry running totals on the events; the last one is the total.
        metrics = next(
            (
                e["llm_metrics"]
                for _, e in reversed(stream.events)
                if isinstance(e, Mapping) and isinstance(e.get("llm_metrics"), Mapping)
            ),
            None,
        )
    if not isinstance(metrics, Mapping):
        return None
    keys = ("accumulated_cost", "accumulated_token_usage")
    out = {k: metrics[k] for k in keys if k in metrics}
    return out or None


def _cwd(stream: Stream) -> str | None:
    for _, event in stream.events:
        if not isinstance(event, Mapping) or not isinstance(event.get("extras"), Mapping):
            continue
        meta = event["extras"].get("metadata")
        if isinstance(meta, Mapping) and isinstance(meta.get("working_dir"), str):
            return str(meta["working_dir"])
    return None


def _issue_id(instance: Mapping[str, Any]) -> str | None:
    """`owner/repo#number` of a resolver output's issue (it has no `instance_id`)."""
    issue = instance.get("issue")
    if not isinstance(issue, Mapping) or not isinstance(issue.get("number"), (int, str)):
        return None
    owner, repo = issue.get("owner"), issue.get("repo")
    where = f"{owner}/{repo}" if isinstance(owner, str) and isinstance(repo, str) else ""
    kind = instance.get("issue_type")
    return f"{where}#{issue['number']}" if where else f"{kind or 'issue'}-{issue['number']}"


def unique_ids(path: str, streams: list[Stream]) -> list[str]:
    """One session id per stream, distinct within the file: a repeated id takes the line
    its instance starts on (`id@line`), so the id joins of the DataFrames hold."""
    ids = [str(stream_header(path, s)["id"]) for s in streams]
    counts: dict[str, int] = {}
    for session_id in ids:
        counts[session_id] = counts.get(session_id, 0) + 1
    return [
        f"{sid}@{s.line if s.line is not None else k + 1}" if counts[sid] > 1 else sid
        for k, (sid, s) in enumerate(zip(ids, streams, strict=True))
    ]


def stream_header(path: str, stream: Stream) -> dict[str, Any]:
    """The session header of an event stream: id, first timestamp, model, metrics."""
    instance = stream.instance or {}
    instance_id = instance.get("instance_id")
    if not isinstance(instance_id, (str, int)):
        instance_id = _issue_id(instance)
    header: dict[str, Any] = {
        "type": "session",
        "version": CURRENT_SESSION_VERSION,
        "id": str(instance_id) if isinstance(instance_id, (str, int)) else Path(path).stem,
        "sourceFormat": SOURCE_FORMAT,
    }
    first_ts = next(
        (event_time(e.get("timestamp"))[0] for _, e in stream.events if isinstance(e, Mapping)),
        None,
    )
    if first_ts is not None:
        header["timestamp"] = first_ts
    cwd = _cwd(stream)
    if cwd is not None:
        header["cwd"] = cwd
    if isinstance(instance_id, (str, int)):
        header["instanceId"] = instance_id
    metadata = instance.get("metadata")
    if isinstance(metadata, Mapping):
        llm = metadata.get("llm_config")
        if isinstance(llm, Mapping) and isinstance(llm.get("model"), str):
            header["model"] = llm["model"]
        if isinstance(metadata.get("agent_class"), str):
            header["agentClass"] = metadata["agent_class"]
    metrics = _metrics(stream)
    if metrics is not None:
        header["metrics"] = metrics
    if instance.get("error") is not None:
        header["sourceError"] = instance["error"]
    return header


def stream_session(
    path: str, stream: Stream, log: ProblemLog, session_id: str | None = None
) -> Session:
    """One `Session` from one event stream (problems go to `log`, then its `finish()`:
    in file order, or in strict mode the earliest one raised); `session_id` overrides the
    header's id (for a file whose instances share one)."""
    header = stream_header(path, stream)
    if session_id is not None:
        header["id"] = session_id
    events, flat = modern_events(stream.events, log)
    builder = _Builder(IdAllocator(str(header["id"])), log, _str(header.get("model")))
    builder.pair_in_order = flat
    for index, (line, event) in enumerate(events):
        builder.event(index, line, event)
    if events and not any(r["type"] == "message" for r in builder.records):
        log.add(
            stream.line,
            "no-messages",
            f"{len(events)} events, none of them a message the model saw; all kept as custom",
        )
    entries = [
        Entry.from_record(record, line=line)
        for record, line in zip(chain(builder.records), builder.lines, strict=True)
    ]
    return Session(
        header, entries, errors=log.finish(), source_path=path, source_format=SOURCE_FORMAT
    )


# -- public -----------------------------------------------------------------------------------
def iter_openhands(path: str | os.PathLike[str], *, strict: bool = False) -> Iterator[Session]:
    """Read every session of an OpenHands file, one at a time.

    An evaluation output yields one session per instance (line); an event stream yields one.
    Problems with the file as a whole (lines that do not parse, ...) are recorded on the first
    session; a file with nothing readable yields one empty session carrying them.

    Args:
        path: An OpenHands `output.jsonl`, or an event stream (`.json` array or JSONL).
        strict: Raise `SessionReadError` for the earliest problem in the file instead of
            recording it.

    Raises:
        SessionReadError: The path is not a readable file, or (strict) the content is bad.
    """
    p, data = read_bytes_checked(path)
    # Deferred: each session's problems come in file order, and strict mode raises the
    # earliest of them (the file's own problems travel with the first session).
    log = ProblemLog(p, strict=strict, deferred=True)
    streams = parse_streams(data, log)
    if not streams:
        yield empty_session(p, log.finish(), SOURCE_FORMAT)
        return
    ids = unique_ids(p, streams)
    for k, stream in enumerate(streams):
        stream_log = log if k == 0 else ProblemLog(p, strict=strict, deferred=True)
        yield stream_session(p, stream, stream_log, ids[k])


def read_openhands(path: str | os.PathLike[str], *, strict: bool = False) -> Session:
    """Read an OpenHands file into one `Session` (the first, for an evaluation output).

    A file holding several instances gives its first one and records a `multiple-sessions`
    problem (in strict mode, raises it): use `iter_sessions` / `read_sessions` (or
    `iter_openhands`) to read them all.

    Args:
        path: An OpenHands `output.jsonl`, or an event stream (`.json` array or JSONL).
        strict: Raise `SessionReadError` for the earliest problem in the file instead of
            recording it.

    Raises:
        SessionReadError: The path is not a readable file, or (strict) the content is bad.
    """
    p, data = read_bytes_checked(path)
    log = ProblemLog(p, strict=strict, deferred=True)
    streams = parse_streams(data, log)
    if not streams:
        return empty_session(p, log.finish(), SOURCE_FORMAT)
    if len(streams) > 1:
        log.add(
            None,
            "multiple-sessions",
            f"file holds {len(streams)} sessions (one per instance); this is the first — "
            "use iter_sessions or read_sessions to read them all",
        )
    return stream_session(p, streams[0], log, unique_ids(p, streams)[0])
