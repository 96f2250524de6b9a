"""Independent reading of raw session files for the tests' expected values: plain `json`,
none of the package's readers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def jsonl_records(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file, one per line; lines that are not JSON objects
    (a cut last line, a bare value) are left out."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


# -- Codex rollouts --------------------------------------------------------------------------
CODEX_CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")


def codex_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) of every non-blank line of a rollout (each must be JSON)."""
    out = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if text.strip():
            out.append((number, json.loads(text)))
    return out


def is_codex_output_item(payload: dict[str, Any]) -> bool:
    """A response item the model produced: reasoning, a call, an assistant message."""
    kind = payload.get("type")
    return kind in ("reasoning", *CODEX_CALL_TYPES) or (
        kind == "message" and payload.get("role") == "assistant"
    )


def codex_requests(lines: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """(line, last_token_usage) of each model request: a `token_count` event whose cumulative
    totals (`total_token_usage`) moved and whose input or output is above zero (Codex repeats
    an event without a new request, and writes zero counts around a compaction)."""
    out, previous = [], None
    for number, record in lines:
        payload = record.get("payload") or {}
        if record.get("type") != "event_msg" or payload.get("type") != "token_count":
            continue
        info = payload.get("info")
        if not info or not isinstance(info.get("last_token_usage"), dict):
            continue
        if info.get("total_token_usage") == previous:
            continue
        previous = info.get("total_token_usage")
        last = info["last_token_usage"]
        if last.get("input_tokens") or last.get("output_tokens"):
            out.append((number, last))
    return out


def codex_responses(lines: list[tuple[int, dict[str, Any]]]) -> list[list[tuple[int, dict]]]:
    """(line, payload) of the output items of each model response, in file order: a run of
    output items with no other response item, prompt event or new request between them."""
    request_lines = {n for n, _ in codex_requests(lines)}
    responses: list[list[tuple[int, dict[str, Any]]]] = []
    open_run = False
    for number, record in lines:
        payload = record.get("payload") or {}
        if number in request_lines or payload.get("type") == "user_message":
            open_run = False
        if record.get("type") != "response_item":
            continue
        if not is_codex_output_item(payload):
            open_run = False
            continue
        if not open_run:
            responses.append([])
            open_run = True
        responses[-1].append((number, payload))
    return responses


def raw_path(records: list[dict[str, Any]], leaf_id: str) -> list[str]:
    """The ids from the root to `leaf_id`, following each record's `parentId`."""
    by_id = {r["id"]: r for r in records}
    ids, node = [], by_id[leaf_id]
    while node is not None:
        ids.append(node["id"])
        node = by_id.get(node.get("parentId"))
    return ids[::-1]


def raw_leaves(records: list[dict[str, Any]]) -> set[str]:
    """The ids no record names as its parent."""
    parents = {r.get("parentId") for r in records}
    return {r["id"] for r in records if r["id"] not in parents}
