"""OpenAI Codex CLI rollout JSONL (`~/.codex/sessions/.../rollout-<ts>-<uuid>.jsonl`) → `Session`.

A rollout is one JSON object per line, `{"timestamp", "type", "payload"}`, with `type` one of
`session_meta`, `response_item` (what the model saw or said), `event_msg` (UI events),
`turn_context` (per-turn settings) and `compacted` (a Codex compaction). The mapping:

- `session_meta` (the first one) → the session header; it is not an entry.
- Every other line → one entry, chained linearly in file order, with `line=` and a
  `sourceId` (the Codex `call_id` for tool items, the item `id` when there is one, else
  `line:<n>`), except that the output items of one model response share one entry (below).
  Payload fields the pi shape has no place for are kept in `sourceFields`.
- `response_item` `message` → a `user`, `developer` (also for `system`) or `assistant`
  message. User messages Codex injects itself (environment context, AGENTS.md / user
  instructions, turn-aborted notes) stay user messages, marked with `sourceKind`.
- **One model request, one assistant entry.** Codex writes each output item of a response
  as its own line: `reasoning` (→ a thinking block: the summary text, the encrypted
  reasoning in `thinkingSignature`), `function_call`, `custom_tool_call`,
  `local_shell_call`, `web_search_call` (→ a toolCall block) and assistant `message`s (→
  text). A run of them with no other response item, prompt or new request between them is
  one response: one assistant entry at the line of its first item, blocks in file order,
  `stopReason` `toolUse` when it calls a tool, each item's line, id, timestamp and unmapped
  fields in `sourceItems`. UI events between the items do not split it.
- `function_call_output`, `custom_tool_call_output` → a toolResult paired by `call_id`. A
  call without output stays without one; an output for an unknown call is kept and recorded
  as `unpaired-tool-result`.
- `compacted` → a pi `compaction` entry (spec §1.4, §5.7), replay data in
  `preserveData.openaiRemoteCompaction`.
- `event_msg` and `turn_context` → `custom` entries (`customType: "codex:<type>"`), so
  nothing is lost and none of them reaches the LLM context. `event_msg` `user_message` /
  `agent_message` repeat response items; as custom entries they are never counted twice. A
  `user_message` event with no user response message beside it is the prompt's only record
  (some rollouts write no response item for it): it becomes the user message
  (`sourceEvent: "user_message"`).
- Usage: a `token_count` event whose cumulative totals moved and whose input or output is
  above zero is one model request; its `last_token_usage` becomes the `usage` of the reply
  it belongs to (`assign_usage`: Codex 0.66 and later write it after the reply, 0.58 and
  earlier before). A request no reply answers (an interrupted turn) keeps its usage on its
  token_count entry as `requestUsage` (`usage`, `model`, `provider`), where usage reports
  bill it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..session._errors import ProblemLog, SessionReadError
from ..session._session import Session
from ._codex_convert import Converter
from ._codex_family import history_source, inherited_lines, linked_children, own_child_meta
from ._codex_header import SOURCE_FORMAT, linked_child
from ._codex_items import (
    LineIds as LineIds,  # imported from here by tests and callers
)
from ._codex_items import (
    may_be_json as may_be_json,
)
from ._codex_items import modern_values, rollout_session_id
from ._io import looks_binary, parse_jsonl, read_bytes_checked
from ._records import empty_session

_BOM = b"\xef\xbb\xbf"


def read_codex(path: str | os.PathLike[str], *, strict: bool = False) -> Session:
    """Read an OpenAI Codex CLI rollout JSONL file into a `Session`.

    Every line but the `session_meta` header becomes one entry, chained in file order (the
    output items of one model response are one entry); messages get pi shapes, native Codex
    compactions become `compaction` entries, and UI events and turn settings are kept as
    `custom` entries outside the LLM context. Rollouts in the same folder that this session
    spawned or started as a review agent are read with it into `Session.linked`; records a
    forked rollout copied from another session are `codex:inherited` custom entries. See
    the module docstring and `_codex_family` for the full mapping.

    Args:
        path: The rollout `.jsonl` file (never modified).
        strict: Raise `SessionReadError` for the earliest problem in the file (a linked
            child's only when this file has none) instead of recording it.

    Returns:
        The session, `source_format="codex"`, problems in `Session.errors` in file order
        (a linked child's after this file's, naming their own file).

    Raises:
        SessionReadError: The path is not a readable file, or (strict) the content is bad.
    """
    return _read_codex(path, strict=strict, seen=frozenset(), parent=None)


def _read_codex(
    path: str | os.PathLike[str],
    *,
    strict: bool,
    seen: frozenset[Path],
    parent: tuple[Path, list[tuple[int, Any]]] | None,
) -> Session:
    p, data = read_bytes_checked(path)
    # Deferred: strict mode names the same first problem that lenient mode lists first.
    log = ProblemLog(p, strict=strict, deferred=True)
    if looks_binary(data):
        log.add(None, "binary-file", "file holds NUL bytes: not a rollout")
        return empty_session(p, log.finish(), SOURCE_FORMAT, id=rollout_session_id(p), cwd="")
    if not data.removeprefix(_BOM).strip():
        log.add(None, "empty-file", "file is empty")
        return empty_session(p, log.finish(), SOURCE_FORMAT, id=rollout_session_id(p), cwd="")
    values = parse_jsonl(data, log)
    session = session_from_codex_values(p, values, log, history=_history(p, values, parent))
    here = Path(p)
    children = []
    problems = list(session.errors)
    for child_path, event_line in linked_children(here):
        if child_path in seen or child_path == here:
            continue
        child = _read_codex(child_path, strict=strict, seen=seen | {here}, parent=(here, values))
        children.append(linked_child(child, session, event_line))
        problems.extend(child.errors)
    return session.copy_with(linked=children, errors=problems) if children else session


def _history(
    path: str,
    values: list[tuple[int, Any]],
    parent: tuple[Path, list[tuple[int, Any]]] | None,
) -> list[tuple[int, Any]] | None:
    """The parsed lines of the rollout a forked one copied its history from, when that
    rollout is beside it (its own problems are reported when it is read), else None."""
    own = own_child_meta(values)
    source = history_source(path, own) if own is not None else None
    if source is None:
        return None
    if parent is not None and parent[0] == source:
        return parent[1]
    try:
        _, data = read_bytes_checked(source)
    except SessionReadError:
        return None
    return parse_jsonl(data, ProblemLog(str(source), strict=False))


def session_from_codex_values(
    path: str,
    values: list[tuple[int, Any]],
    log: ProblemLog,
    *,
    history: list[tuple[int, Any]] | None = None,
) -> Session:
    """Build a `Session` from parsed rollout lines (`(line_number, value)` pairs); the
    problems go to `log`, whose `finish()` gives the session's `errors`.

    Args:
        path: The rollout's path (for problems and the id of a rollout without metadata).
        values: The parsed lines.
        log: Where problems go.
        history: The parsed lines of the session a forked rollout copied its history from,
            which tell its copied records exactly; without them, the copied records are
            those timestamped before the rollout's start (`inherited_lines`).
    """
    p = path
    values, legacy = modern_values(values)
    child = own_child_meta(values)
    inherited: frozenset[int] = frozenset()
    if child is not None:
        inherited, unresolved = inherited_lines(values, child, history)
        if unresolved is not None:
            log.add(
                unresolved,
                "unseparated-fork-prefix",
                f"forked from {child.forked_from or child.parent_id}, whose rollout is not "
                "beside this one, and the copied records are not timestamped before this "
                "session's start: they are read as this session's own",
            )
    converter = Converter(p, values, log, inherited=inherited)
    if not converter.has_meta and values:
        log.add(values[0][0], "missing-header", "rollout has no session_meta; header synthesized")
    converter.run()
    entries = converter.finish()
    errors = log.finish()
    header = converter.header(child)
    if legacy:
        header["rolloutLayout"] = "legacy"  # the layout before session_meta (mid 2025)
    return Session(
        header,
        entries,
        errors=errors,
        source_path=p,
        source_format=SOURCE_FORMAT,
    )
