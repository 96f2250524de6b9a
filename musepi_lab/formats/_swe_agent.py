"""SWE-agent `.traj` trajectories → `Session`.

A `.traj` file is one JSON document: `history` (the messages the model was sent and
produced), `trajectory` (one step per action; newer versions embed the whole message list in
every step, which is why those files are large), `info` (model stats, exit status) and
`environment`. Only `history` is read for entries: it is the conversation as the model saw
it, and every step's `messages` is a copy of a prefix of it.

Mapping, one history item at a time, linked into a linear chain:

- `system` → `custom_message` entry, customType `swe-agent:system` (context-visible, like
  instructions, but not a user turn).
- `user` → user message; `is_demo` items keep their role and get `"demo": true` on the entry.
- `assistant` → assistant message. New format: text = `content` (or `thought` when content
  is empty), `tool_calls` → toolCall blocks with parsed JSON arguments. Old format (text
  commands, no `tool_calls`): the `action` command becomes a synthetic toolCall named by the
  command's first word with arguments `{"command": action}`, id `history_<index>`; the
  text is `thought`, because the old `content` is the thought followed by the same command in
  a fenced block, which would count the command twice.
- `tool` → toolResult per id in `tool_call_ids`.
- Old format: environment output arrives as the `user` message right after an assistant
  action; it becomes the toolResult of that action's synthetic call, so tool-call pairing
  holds as in a pi session.
- The final action's output (the `submit` diff) is only in the last `trajectory` step:
  it becomes the toolResult of the history's last call when that call names the step's
  command (`sourceId = "trajectory:<index>"`).

Trajectories carry no timestamps: entry timestamps are None and message timestamps 0.
Every entry has `sourceId = "history:<index>"`; `line` is None (the history is nested in one
document), while JSON syntax errors are reported with the line orjson gives.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ..session._errors import ProblemLog
from ..session._model import Entry
from ..session._session import CURRENT_SESSION_VERSION, Session
from ._io import looks_binary, read_bytes_checked, within_nesting
from ._records import (
    IdAllocator,
    assistant_message,
    chain,
    message_record,
    text_block,
    tool_call_block,
    tool_result_message,
    user_message,
)
from ._values import loads_js, range_message

SOURCE_FORMAT = "swe-agent"
SYSTEM_CUSTOM_TYPE = "swe-agent:system"
UTF8_BOM = b"\xef\xbb\xbf"


# -- JSON documents ---------------------------------------------------------------------------
def _line_of_offset(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def parse_json_document(data: bytes, log: ProblemLog) -> tuple[bool, Any]:
    """Parse one whole-file JSON document, recording what is wrong with it.

    A leading UTF-8 byte-order mark is skipped. Binary or empty data and JSON syntax errors
    are recorded (syntax errors with the line
    orjson reports, as `truncated-json` when the document stops early, else
    `malformed-json`). Invalid UTF-8 is recorded and replaced, and parsing goes on.

    Args:
        data: The file's bytes.
        log: Where problems go (a strict log that is not deferred raises the first one).

    Returns:
        `(True, value)` when the document parsed, else `(False, None)`.
    """
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
    if looks_binary(data):
        log.add(None, "binary-file", "file holds NUL bytes: not a JSON document")
        return False, None
    if not data.strip():
        log.add(None, "empty-file", "file is empty")
        return False, None
    try:
        return True, within_nesting(orjson.loads(data), None, log)
    except orjson.JSONDecodeError:
        pass
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        log.add(
            _line_of_offset(data, exc.start),
            "invalid-utf8",
            "document is not valid UTF-8; bad bytes replaced",
        )
        text = data.decode("utf-8", errors="replace")
    try:
        return True, within_nesting(orjson.loads(text), None, log)
    except orjson.JSONDecodeError as exc:
        error = exc
    if "depth" in error.msg:
        log.add(
            error.lineno,
            "nested-too-deeply",
            f"document nests deeper than the parser allows ({error.msg}); not read",
        )
        return False, None
    try:
        # JSON.parse takes numbers past double range, which orjson refuses.
        value, out_of_range = loads_js(text)
    except ValueError:
        truncated = error.msg.startswith("unexpected end") or error.pos >= len(text.rstrip())
        kind = "truncated-json" if truncated else "malformed-json"
        what = "document is cut short" if truncated else "not valid JSON"
        log.add(error.lineno, kind, f"{what}: {error.msg} (column {error.colno})")
        return False, None
    log.add(error.lineno, "number-out-of-range", range_message(out_of_range))
    return True, within_nesting(value, None, log)


# -- content ----------------------------------------------------------------------------------
def _image_block(url: str) -> dict[str, Any] | None:
    # Only inline data URLs can become pi image blocks; remote URLs have no bytes to carry.
    if not url.startswith("data:") or ";base64," not in url:
        return None
    mime, data = url[5:].split(";base64,", 1)
    return {"type": "image", "data": data, "mimeType": mime or "image/png"}


def content_blocks(content: Any) -> list[dict[str, Any]]:
    """pi text/image blocks from an OpenAI-style message content (string or part list)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [text_block(content)]
    if not isinstance(content, list):
        return [text_block(orjson.dumps(content).decode())]
    blocks: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, str):
            blocks.append(text_block(part))
            continue
        if isinstance(part, Mapping):
            if isinstance(part.get("text"), str):
                blocks.append(text_block(part["text"]))
                continue
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            if isinstance(url, str):
                block = _image_block(url)
                if block is not None:
                    blocks.append(block)
                    continue
        blocks.append(text_block(orjson.dumps(part).decode()))
    return blocks


def _text(content: Any) -> str:
    return "".join(b["text"] for b in content_blocks(content) if b["type"] == "text")


def parse_arguments(raw: Any) -> Any:
    """Tool-call arguments as an object: JSON strings parsed, unparseable text kept as is."""
    if isinstance(raw, str):
        try:
            return orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError:
            return raw
    return raw if raw is not None else {}


class ToolCallIds:
    """Keeps tool-call ids unique within a session while results still find their call.

    Replayed trajectories reuse one id for several calls; pi pairs results by id, so a
    reused id gets a `-<n>` suffix and later results naming the id go to its newest call.
    """

    __slots__ = ("_current", "_names", "_used")

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._current: dict[str, str] = {}
        self._names: dict[str, str] = {}

    def issue(self, source_id: str, name: str) -> str:
        """A unique id for a new call whose source id is `source_id`."""
        new_id, n = source_id, 1
        while new_id in self._used:
            n += 1
            new_id = f"{source_id}-{n}"
        self._used.add(new_id)
        self._current[source_id] = new_id
        self._names[new_id] = name
        return new_id

    def resolve(self, source_id: str) -> tuple[str, str] | None:
        """`(call id, tool name)` of the newest call with this source id, or None."""
        new_id = self._current.get(source_id)
        return (new_id, self._names[new_id]) if new_id is not None else None


# -- history items ----------------------------------------------------------------------------
def _assistant_content(
    item: Mapping[str, Any], index: int, calls: ToolCallIds
) -> tuple[list[dict[str, Any]], tuple[str, str] | None]:
    """Blocks of an assistant item, and `(call id, name)` of an old-format action's call."""
    blocks: list[dict[str, Any]] = []
    for thinking in item.get("thinking_blocks") or ():
        if isinstance(thinking, Mapping) and isinstance(thinking.get("thinking"), str):
            blocks.append({"type": "thinking", "thinking": thinking["thinking"]})
    content = _text(item.get("content"))
    thought: str = item["thought"] if isinstance(item.get("thought"), str) else ""
    action = item.get("action")
    raw_calls = item.get("tool_calls")
    if isinstance(raw_calls, list):
        text = content or thought
        if text.strip():
            blocks.append(text_block(text))
        for k, call in enumerate(raw_calls):
            if not isinstance(call, Mapping):
                continue
            function = call.get("function")
            function = function if isinstance(function, Mapping) else {}
            name = str(function.get("name") or call.get("name") or "")
            source_id = call.get("id")
            source_id = (
                source_id if isinstance(source_id, str) and source_id else f"history_{index}_{k}"
            )
            call_id = calls.issue(source_id, name)
            blocks.append(
                tool_call_block(call_id, name, parse_arguments(function.get("arguments")))
            )
        return blocks, None
    if isinstance(action, str) and action.strip():
        # Old format: content = thought + the fenced command, and the command becomes the call.
        text = thought if thought and content.startswith(thought) else content
        if text.strip():
            blocks.append(text_block(text))
        name = action.split(None, 1)[0]
        call_id = calls.issue(f"history_{index}", name)
        blocks.append(tool_call_block(call_id, name, {"command": action}))
        return blocks, (call_id, name)
    text = content or thought
    if text.strip():
        blocks.append(text_block(text))
    return blocks, None


def _tool_output_messages(
    item: Mapping[str, Any],
    index: int,
    entry_id: str,
    calls: ToolCallIds,
    alloc: IdAllocator,
    log: ProblemLog,
) -> list[tuple[str, dict[str, Any]]]:
    """`(entry id, message)` for a `tool` history item: one tool result per call it answers
    (the text with the first), or a user message when it names no earlier call."""
    ids = item.get("tool_call_ids")
    ids = [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []
    if not ids and isinstance(item.get("tool_call_id"), str):
        ids = [item["tool_call_id"]]
    resolved = [calls.resolve(i) for i in ids]
    if not ids or None in resolved:
        log.add(
            None,
            "unpaired-tool-result",
            f"history[{index}]: tool output names no earlier tool call "
            f"({ids or 'no tool_call_ids'}); kept as a user message",
        )
        return [(entry_id, user_message(content_blocks(item.get("content")), 0))]
    out: list[tuple[str, dict[str, Any]]] = []
    # One output for several calls: the text goes with the first, once.
    for k, (call_id, name) in enumerate(r for r in resolved if r is not None):
        blocks = content_blocks(item.get("content")) if k == 0 else []
        rid = entry_id if k == 0 else alloc.take(None, "history", index, k)
        out.append((rid, tool_result_message(call_id, name, blocks, 0)))
    return out


def history_records(
    history: list[Any], alloc: IdAllocator, log: ProblemLog
) -> list[dict[str, Any]]:
    """v3 records for a SWE-agent `history` list, in order, not yet chained."""
    records: list[dict[str, Any]] = []
    calls = ToolCallIds()
    pending: tuple[str, str] | None = None  # old format: synthetic call awaiting its output

    def add(record: dict[str, Any], item: Mapping[str, Any], index: int) -> None:
        record["sourceId"] = f"history:{index}"
        if item.get("is_demo"):
            record["demo"] = True
        records.append(record)

    for index, item in enumerate(history):
        if not isinstance(item, Mapping):
            log.add(
                None,
                "not-an-object",
                f"history[{index}] is a JSON {type(item).__name__}, not a message; skipped",
            )
            continue
        role = item.get("role")
        answered, pending = pending, None
        entry_id = alloc.take(None, "history", index)
        record: dict[str, Any]
        if role == "system":
            record = {
                "type": "custom_message",
                "id": entry_id,
                "parentId": None,
                "timestamp": None,
                "customType": SYSTEM_CUSTOM_TYPE,
                "content": _text(item.get("content")),
                "display": False,
            }
            add(record, item, index)
        elif role == "user" and answered is not None:
            call_id, name = answered
            msg = tool_result_message(call_id, name, content_blocks(item.get("content")), 0)
            add(message_record(entry_id, None, None, msg), item, index)
        elif role == "user":
            msg = user_message(content_blocks(item.get("content")), 0)
            add(message_record(entry_id, None, None, msg), item, index)
        elif role == "assistant":
            blocks, pending = _assistant_content(item, index, calls)
            stop = "toolUse" if any(b["type"] == "toolCall" for b in blocks) else "stop"
            msg = assistant_message(blocks, 0, stop_reason=stop)
            add(message_record(entry_id, None, None, msg), item, index)
        elif role == "tool":
            for rid, msg in _tool_output_messages(item, index, entry_id, calls, alloc, log):
                add(message_record(rid, None, None, msg), item, index)
        else:
            log.add(
                None,
                "unknown-role",
                f"history[{index}] has role {role!r}; kept as a custom entry outside the context",
            )
            record = {
                "type": "custom",
                "id": entry_id,
                "parentId": None,
                "timestamp": None,
                "customType": f"swe-agent:{role}",
                "data": dict(item),
            }
            add(record, item, index)
    return records


def _open_call(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The one tool call of an assistant record, or None (no call, or several)."""
    message = record.get("message")
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return None
    calls = [b for b in message.get("content", ()) if b.get("type") == "toolCall"]
    return calls[0] if len(calls) == 1 else None


def final_observation(
    records: list[dict[str, Any]], trajectory: Any, alloc: IdAllocator
) -> dict[str, Any] | None:
    """The result of the last call, when only `trajectory` holds it (the `submit` output).

    SWE-agent appends an observation to `history` only when another model call follows,
    so the last action's output is in the last trajectory step alone. It is the result of
    the history's last record when that is an assistant message with one call naming the
    same command.
    """
    if not records or not isinstance(trajectory, list) or not trajectory:
        return None
    step = trajectory[-1]
    call = _open_call(records[-1])
    if call is None or not isinstance(step, Mapping):
        return None
    observation, action = step.get("observation"), step.get("action")
    if not isinstance(observation, str) or not isinstance(action, str) or not action.split():
        return None
    if action.split(None, 1)[0] != call["name"]:
        return None
    msg = tool_result_message(call["id"], call["name"], content_blocks(observation), 0)
    record = message_record(alloc.take(None, "trajectory", len(trajectory) - 1), None, None, msg)
    record["sourceId"] = f"trajectory:{len(trajectory) - 1}"
    return record


# -- header -----------------------------------------------------------------------------------
def _working_dir(doc: Mapping[str, Any]) -> str | None:
    steps = doc.get("trajectory")
    if not isinstance(steps, list) or not steps or not isinstance(steps[0], Mapping):
        return None
    state = steps[0].get("state")
    if isinstance(state, str):
        try:
            state = orjson.loads(state)
        except orjson.JSONDecodeError:
            return None
    cwd = state.get("working_dir") if isinstance(state, Mapping) else None
    return cwd if isinstance(cwd, str) else None


def trajectory_header(path: str, doc: Mapping[str, Any]) -> dict[str, Any]:
    """The session header of a trajectory: id from the file stem, stats from `info`."""
    header: dict[str, Any] = {
        "type": "session",
        "version": CURRENT_SESSION_VERSION,
        "id": Path(path).stem,
        "sourceFormat": SOURCE_FORMAT,
    }
    cwd = _working_dir(doc)
    if cwd is not None:
        header["cwd"] = cwd
    info = doc.get("info")
    if isinstance(info, Mapping):
        if isinstance(info.get("model_stats"), Mapping):
            header["modelStats"] = dict(info["model_stats"])
        if isinstance(info.get("exit_status"), str):
            header["exitStatus"] = info["exit_status"]
    if isinstance(doc.get("environment"), str):
        header["environment"] = doc["environment"]
    return header


def read_swe_agent(path: str | os.PathLike[str], *, strict: bool = False) -> Session:
    """Read a SWE-agent `.traj` trajectory into a `Session` (a linear chain).

    Args:
        path: The `.traj` file (one JSON document).
        strict: Raise `SessionReadError` for the earliest problem in the file instead of
            recording it.

    Returns:
        The session; `source_format` is `swe-agent`, problems in `errors` in file order. A document that does not parse gives
        an empty session with the problem in `errors`.

    Raises:
        SessionReadError: The path is not a readable file, or (strict) the content is bad.
    """
    p, data = read_bytes_checked(path)
    # Deferred: strict mode raises the problem earliest in the file, the one lenient mode
    # lists first, after the whole document has been looked at.
    log = ProblemLog(p, strict=strict, deferred=True)
    empty_header = {
        "type": "session",
        "version": CURRENT_SESSION_VERSION,
        "id": Path(p).stem,
        "sourceFormat": SOURCE_FORMAT,
    }
    ok, doc = parse_json_document(data, log)
    if not ok:
        return Session(
            empty_header, (), errors=log.finish(), source_path=p, source_format=SOURCE_FORMAT
        )
    if not isinstance(doc, Mapping):
        log.add(1, "not-an-object", f"document is a JSON {type(doc).__name__}, not a trajectory")
        return Session(
            empty_header, (), errors=log.finish(), source_path=p, source_format=SOURCE_FORMAT
        )
    header = trajectory_header(p, doc)
    history = doc.get("history")
    if not isinstance(history, list):
        log.add(None, "missing-history", "trajectory has no `history` list; no entries read")
        history = []
    alloc = IdAllocator(str(header["id"]))
    records = history_records(history, alloc, log)
    final = final_observation(records, doc.get("trajectory"), alloc)
    if final is not None:
        records.append(final)
    return Session(
        header,
        [Entry.from_record(r) for r in chain(records)],
        errors=log.finish(),
        source_path=p,
        source_format=SOURCE_FORMAT,
    )
