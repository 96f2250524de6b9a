"""Inspect AI evaluation logs (`.eval` zip archives and `.json` documents) → `Session`s.

An Inspect log holds one evaluation: its `eval` description (task, model, ids) and its
samples. Each sample (one epoch of one dataset item) becomes one session, linear, read
from the sample's `messages` (the conversation as the agent kept it) and `events`:

- `system` → `custom_message` entry, customType `inspect-ai:system` (context-visible
  instructions, not a user turn).
- `user` → user message; a summary Inspect's `summary` compaction appended (metadata
  `summary: true`) → a pi `compaction` entry with that text as its summary, whose kept
  context starts at the next entry (as Codex compactions are read), `tokensBefore` from the
  matching `summary` compaction event. Inspect also keeps the system message and the
  sample input ahead of its summary; a pi context keeps only what follows a compaction.
- `assistant` → assistant message: text and `reasoning` content (→ thinking, with its
  signature), `tool_calls` → toolCall blocks. Usage comes from the `model` event whose
  output is that message (`input_tokens`, `output_tokens`, cache reads and writes).
- `tool` → toolResult of the call it names (`tool_call_id`, `function`); `error` marks
  it `isError`. A result whose call is not in the conversation is kept and recorded as a
  problem.
- `compaction` events (Inspect's own trim, edit or summary compactions) → `custom`
  entries, customType `inspect-ai:compaction`, just before the first message the model
  produced after them, with the event (type, tokens before and after, trigger) as data.
  Inspect keeps the whole history in `messages` and a trim or edit names neither a summary
  nor a first kept message, so those are recorded where they happened, not replayed.

Long strings are stored once as `attachment://<hash>` references; they are resolved from
the sample's `attachments`. Content the entry model has no place for (audio, video, data
blocks) is kept as a text placeholder and recorded as a problem naming the field. Samples
in `.eval` archives are members `samples/<id>_epoch_<n>.json`, usually compressed with
zstd (ZIP method 93), which needs the `zstandard` package (`pip install musepi-lab[inspect]`).
Entries carry `sourceId` = the Inspect message id; `line` is None (problems name the
archive member or the JSON path instead).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..session._errors import ProblemLog
from ..session._model import Entry
from ..session._session import CURRENT_SESSION_VERSION, Session
from ._inspect_log import read_log
from ._io import read_bytes_checked
from ._records import (
    IdAllocator,
    assistant_message,
    chain,
    empty_session,
    epoch_ms,
    message_record,
    stable_id,
    text_block,
    token_count,
    tool_call_block,
    tool_result_message,
    usage,
    user_message,
)

SOURCE_FORMAT = "inspect-ai"
SYSTEM_CUSTOM_TYPE = "inspect-ai:system"
COMPACTION_CUSTOM_TYPE = "inspect-ai:compaction"
ATTACHMENT_PREFIX = "attachment://"


# -- messages ---------------------------------------------------------------------------------
def resolve_attachments(value: Any, attachments: Mapping[str, Any]) -> Any:
    """`value` with every `attachment://<hash>` string replaced by the attachment's text."""
    if isinstance(value, str):
        if value.startswith(ATTACHMENT_PREFIX):
            found = attachments.get(value[len(ATTACHMENT_PREFIX) :])
            return found if isinstance(found, str) else value
        return value
    if isinstance(value, list):
        return [resolve_attachments(v, attachments) for v in value]
    if isinstance(value, Mapping):
        return {k: resolve_attachments(v, attachments) for k, v in value.items()}
    return value


def _image_block(image: Any) -> dict[str, Any] | None:
    if isinstance(image, str) and image.startswith("data:") and ";base64," in image:
        head, payload = image.split(",", 1)
        return {"type": "image", "data": payload, "mimeType": head[5:].split(";", 1)[0]}
    return None


def content_blocks(
    content: Any, where: str, log: ProblemLog, *, assistant: bool = False
) -> list[dict[str, Any]]:
    """pi blocks for Inspect `content` (a string or a list of content objects)."""
    if isinstance(content, str):
        return [text_block(content)] if content else []
    if not isinstance(content, list):
        log.add(
            None, "bad-content", f"{where}.content is a {type(content).__name__}; read as empty"
        )
        return []
    blocks: list[dict[str, Any]] = []
    for k, item in enumerate(content):
        kind = item.get("type") if isinstance(item, Mapping) else None
        if kind == "text" and isinstance(item.get("text"), str):
            blocks.append(text_block(item["text"]))
        elif kind == "reasoning" and assistant:
            block: dict[str, Any] = {"type": "thinking", "thinking": str(item.get("reasoning", ""))}
            if isinstance(item.get("signature"), str):
                block["thinkingSignature"] = item["signature"]
            if item.get("redacted"):
                block["redacted"] = True
            blocks.append(block)
        elif kind == "image" and _image_block(item.get("image")) is not None:
            blocks.append(_image_block(item.get("image")) or {})
        else:
            log.add(
                None,
                "unmapped-content",
                f"{where}.content[{k}] of type {kind!r} has no place in the entry model; "
                "kept as a text placeholder",
            )
            blocks.append(text_block(f"[{kind or 'unknown'} content]"))
    return blocks


def _model_outputs(events: list[Any]) -> dict[str, tuple[Mapping[str, Any], str | None]]:
    """Message id → (usage, timestamp) of the `model` event that produced it."""
    out: dict[str, tuple[Mapping[str, Any], str | None]] = {}
    for event in events:
        if not isinstance(event, Mapping) or event.get("event") != "model":
            continue
        output = event.get("output")
        choices = output.get("choices") if isinstance(output, Mapping) else None
        message = choices[0].get("message") if isinstance(choices, list) and choices else None
        if isinstance(message, Mapping) and isinstance(message.get("id"), str):
            found = output.get("usage") if isinstance(output, Mapping) else None
            stamp = event.get("timestamp")
            out[message["id"]] = (
                found if isinstance(found, Mapping) else {},
                stamp if isinstance(stamp, str) else None,
            )
    return out


def _compactions_before(events: list[Any]) -> tuple[dict[str, list[Mapping[str, Any]]], list[Any]]:
    """Compaction events keyed by the id of the next message a model produced after them,
    and those after the last model call."""
    keyed: dict[str, list[Mapping[str, Any]]] = {}
    pending: list[Mapping[str, Any]] = []
    for event in events:
        if not isinstance(event, Mapping):
            continue
        if event.get("event") == "compaction":
            pending.append(event)
        elif event.get("event") == "model" and pending:
            output = event.get("output")
            choices = output.get("choices") if isinstance(output, Mapping) else None
            message = choices[0].get("message") if isinstance(choices, list) and choices else None
            if isinstance(message, Mapping) and isinstance(message.get("id"), str):
                keyed.setdefault(message["id"], []).extend(pending)
                pending = []
    return keyed, pending


def _is_summary(message: Mapping[str, Any]) -> bool:
    metadata = message.get("metadata")
    return isinstance(metadata, Mapping) and metadata.get("summary") is True


def _usage_of(found: Mapping[str, Any]) -> dict[str, Any]:
    return usage(
        input=found.get("input_tokens", 0),
        output=found.get("output_tokens", 0),
        cache_read=found.get("input_tokens_cache_read") or 0,
        cache_write=found.get("input_tokens_cache_write") or 0,
        total=found.get("total_tokens"),
    )


def _compaction_record(entry_id: str, event: Mapping[str, Any]) -> dict[str, Any]:
    data = {k: event.get(k) for k in ("type", "tokens_before", "tokens_after", "source", "role")}
    metadata = event.get("metadata")
    if isinstance(metadata, Mapping):
        data["metadata"] = dict(metadata)
    return {
        "type": "custom",
        "id": entry_id,
        "parentId": None,
        "timestamp": event.get("timestamp"),
        "customType": COMPACTION_CUSTOM_TYPE,
        "data": data,
        "sourceId": event.get("uuid"),
    }


class _SampleBuilder:
    """Turns one sample's messages into v3 records, in order, not yet chained."""

    def __init__(
        self, sample: Mapping[str, Any], where: str, seed: str, model: str, log: ProblemLog
    ) -> None:
        self.where = where
        self.log = log
        self.model = model
        self.records: list[dict[str, Any]] = []
        # Seeded by the session id, so an `.eval` and a `.json` of one log give the same ids.
        self.alloc = IdAllocator(seed)
        events = sample.get("events")
        self.events: list[Any] = events if isinstance(events, list) else []
        self.outputs = _model_outputs(self.events)
        self.compactions, self.trailing = _compactions_before(self.events)
        self.calls: dict[str, str] = {}  # tool call id → tool name
        self.summary_events = [
            e
            for e in self.events
            if isinstance(e, Mapping)
            and e.get("event") == "compaction"
            and e.get("type") == "summary"
        ]
        self.summary_rows: list[int] = []
        started = sample.get("started_at")
        self.started = started if isinstance(started, str) else None

    def build(self, messages: list[Any]) -> list[dict[str, Any]]:
        for index, message in enumerate(messages):
            where = f"{self.where}.messages[{index}]"
            if not isinstance(message, Mapping):
                self.log.add(None, "not-an-object", f"{where} is not an object; skipped")
                continue
            for event in self.compactions.get(str(message.get("id")), []):
                self._compaction(event)
            self._message(message, index, where)
        for event in self.trailing:
            self._compaction(event)
        for row in self.summary_rows:
            # The kept context is the entry after the summary; the last entry names itself.
            kept = self.records[row + 1] if row + 1 < len(self.records) else self.records[row]
            self.records[row]["firstKeptEntryId"] = kept["id"]
        return self.records

    def _compaction(self, event: Mapping[str, Any]) -> None:
        entry_id = self.alloc.take(None, "compaction", event.get("uuid"))
        self.records.append(_compaction_record(entry_id, event))

    def _message(self, message: Mapping[str, Any], index: int, where: str) -> None:
        role = message.get("role")
        source_id = message.get("id") if isinstance(message.get("id"), str) else None
        entry_id = self.alloc.take(source_id, "message", index)
        found, stamp = self.outputs.get(source_id or "", ({}, None))
        stamp = stamp or self.started
        ms = epoch_ms(stamp)
        if role == "system":
            text = "\n".join(
                b["text"]
                for b in content_blocks(message.get("content"), where, self.log)
                if b["type"] == "text"
            )
            self.records.append(
                {
                    "type": "custom_message",
                    "id": entry_id,
                    "parentId": None,
                    "timestamp": stamp,
                    "customType": SYSTEM_CUSTOM_TYPE,
                    "content": text,
                    "display": False,
                    "sourceId": source_id,
                }
            )
        elif role == "user" and _is_summary(message):
            self._summary(message, entry_id, stamp, source_id, where)
        elif role == "user":
            blocks = content_blocks(message.get("content"), where, self.log)
            self._add(entry_id, stamp, user_message(blocks, ms), source_id)
        elif role == "assistant":
            self._assistant(message, entry_id, stamp, ms, found, source_id, where)
        elif role == "tool":
            self._tool(message, entry_id, stamp, ms, source_id, where)
        else:
            self.log.add(
                None, "unknown-role", f"{where} has role {role!r}; kept outside the context"
            )
            self.records.append(
                {
                    "type": "custom",
                    "id": entry_id,
                    "parentId": None,
                    "timestamp": stamp,
                    "customType": f"inspect-ai:{role}",
                    "data": dict(message),
                    "sourceId": source_id,
                }
            )

    def _summary(
        self, message: Mapping[str, Any], entry_id: str, stamp: str | None, source: Any, where: str
    ) -> None:
        text = "\n".join(
            b["text"]
            for b in content_blocks(message.get("content"), where, self.log)
            if b["type"] == "text"
        )
        k = len(self.summary_rows)
        event = self.summary_events[k] if k < len(self.summary_events) else {}
        self.summary_rows.append(len(self.records))
        self.records.append(
            {
                "type": "compaction",
                "id": entry_id,
                "parentId": None,
                "timestamp": stamp,
                "summary": text,
                "firstKeptEntryId": None,  # filled in `build`: the next entry
                "tokensBefore": token_count(event.get("tokens_before")),
                "details": {"readFiles": [], "modifiedFiles": []},
                "sourceId": source,
            }
        )

    def _add(self, entry_id: str, stamp: str | None, message: dict[str, Any], source: Any) -> None:
        self.records.append(message_record(entry_id, None, stamp, message, source_id=source))

    def _assistant(
        self,
        message: Mapping[str, Any],
        entry_id: str,
        stamp: str | None,
        ms: int,
        found: Mapping[str, Any],
        source_id: str | None,
        where: str,
    ) -> None:
        blocks = content_blocks(message.get("content"), where, self.log, assistant=True)
        calls = message.get("tool_calls")
        for k, call in enumerate(calls if isinstance(calls, list) else []):
            if not isinstance(call, Mapping) or not isinstance(call.get("id"), str):
                self.log.add(None, "bad-tool-call", f"{where}.tool_calls[{k}] has no id; skipped")
                continue
            name = str(call.get("function", ""))
            self.calls[call["id"]] = name
            blocks.append(tool_call_block(call["id"], name, call.get("arguments", {})))
        model = str(message.get("model") or self.model)
        provider, _, model_id = model.rpartition("/")
        stop = "toolUse" if any(b["type"] == "toolCall" for b in blocks) else "stop"
        msg = assistant_message(
            blocks,
            ms,
            model=model_id or model,
            provider=provider,
            usage_=_usage_of(found),
            stop_reason=stop,
        )
        self._add(entry_id, stamp, msg, source_id)

    def _tool(
        self,
        message: Mapping[str, Any],
        entry_id: str,
        stamp: str | None,
        ms: int,
        source_id: str | None,
        where: str,
    ) -> None:
        call_id = message.get("tool_call_id")
        call_id = call_id if isinstance(call_id, str) else ""
        name = self.calls.get(call_id) or str(message.get("function") or "")
        if call_id not in self.calls:
            self.log.add(
                None,
                "unpaired-tool-result",
                f"{where} answers tool call {call_id!r}, which no earlier assistant message made",
            )
        blocks = content_blocks(message.get("content"), where, self.log)
        error = message.get("error")
        if isinstance(error, Mapping) and error.get("message"):
            blocks.append(text_block(str(error["message"])))
        msg = tool_result_message(call_id, name, blocks, ms, is_error=error is not None)
        self._add(entry_id, stamp, msg, source_id)


# -- sessions ---------------------------------------------------------------------------------
def _sample_id(evaluation: Mapping[str, Any], sample: Mapping[str, Any]) -> str:
    uuid = sample.get("uuid")
    if isinstance(uuid, str) and uuid:
        return uuid
    return stable_id(evaluation.get("eval_id"), sample.get("id"), sample.get("epoch"))


def sample_header(
    path: str, evaluation: Mapping[str, Any], sample: Mapping[str, Any]
) -> dict[str, Any]:
    """The session header of one sample."""
    header: dict[str, Any] = {
        "type": "session",
        "version": CURRENT_SESSION_VERSION,
        "id": _sample_id(evaluation, sample),
        "timestamp": sample.get("started_at") or evaluation.get("created"),
        "sourceFormat": SOURCE_FORMAT,
        "sourcePath": path,
    }
    for key, field in (
        ("task", "task"),
        ("model", "model"),
        ("evalId", "eval_id"),
        ("runId", "run_id"),
    ):
        if isinstance(evaluation.get(field), str):
            header[key] = evaluation[field]
    for key, field in (("sampleId", "id"), ("epoch", "epoch")):
        if isinstance(sample.get(field), (str, int)) and not isinstance(sample.get(field), bool):
            header[key] = sample[field]
    return header


def sample_session(
    path: str, evaluation: Mapping[str, Any], where: str, sample: Any, log: ProblemLog
) -> Session | None:
    """One session from one sample (None, with the problem recorded, when it is no sample)."""
    if not isinstance(sample, Mapping):
        log.add(None, "not-an-object", f"{where} is not a sample object; skipped")
        return None
    attachments = sample.get("attachments")
    if isinstance(attachments, Mapping) and attachments:
        sample = resolve_attachments(sample, attachments)
    messages = sample.get("messages")
    if not isinstance(messages, list):
        log.add(None, "missing-messages", f"{where} has no `messages` list; no entries read")
        messages = []
    header = sample_header(path, evaluation, sample)
    builder = _SampleBuilder(
        sample, f"{Path(path).name}:{where}", str(header["id"]), str(header.get("model", "")), log
    )
    records = chain(builder.build(messages))
    return Session(
        header,
        [Entry.from_record(r) for r in records],
        errors=log.finish(),
        source_path=path,
        source_format=SOURCE_FORMAT,
    )


def iter_inspect(path: str | os.PathLike[str], *, strict: bool = False) -> Iterator[Session]:
    """Read every sample of an Inspect AI log, one session at a time.

    Problems with the log as a whole travel with the first session; a log with no readable
    sample yields one empty session carrying them.

    Args:
        path: An Inspect `.eval` archive or `.json` log.
        strict: Raise `SessionReadError` for the earliest problem instead of recording it.

    Raises:
        SessionReadError: The path is not a readable file, or (strict) the content is bad.
    """
    p, data = read_bytes_checked(path)
    log = ProblemLog(p, strict=strict, deferred=True)
    evaluation, samples = read_log(data, log)
    yielded = False
    for where, sample in samples:
        session = sample_session(p, evaluation, where, sample, log)
        if session is not None:
            yielded = True
            yield session
            log = ProblemLog(p, strict=strict, deferred=True)
    if not yielded:
        yield empty_session(p, log.finish(), SOURCE_FORMAT)


def read_inspect(path: str | os.PathLike[str], *, strict: bool = False) -> Session:
    """Read an Inspect AI log into one `Session`: its first sample.

    A log with several samples gives the first and records a `multiple-sessions` problem
    (in strict mode, raises it): use `iter_sessions` / `read_sessions` (or `iter_inspect`)
    to read them all.

    Args:
        path: An Inspect `.eval` archive or `.json` log.
        strict: Raise `SessionReadError` for the earliest problem instead of recording it.

    Raises:
        SessionReadError: The path is not a readable file, or (strict) the content is bad.
    """
    p, data = read_bytes_checked(path)
    log = ProblemLog(p, strict=strict, deferred=True)
    evaluation, samples = read_log(data, log)
    if len(samples) > 1:
        log.add(
            None,
            "multiple-sessions",
            f"log holds {len(samples)} samples (one session each); this is the first — "
            "use iter_sessions or read_sessions to read them all",
        )
    for where, sample in samples:
        session = sample_session(p, evaluation, where, sample, log)
        if session is not None:
            return session
    return empty_session(p, log.finish(), SOURCE_FORMAT)
