"""Runtime messages made from entries (pi `getMessageFromEntry`, spec §2.1 and §4.3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._model import Entry
from ._session import parse_timestamp_ms


def _entry_ms(entry: Entry) -> int:
    ms = parse_timestamp_ms(entry.timestamp)
    return int(ms) if ms is not None else 0


def compaction_summary_message(entry: Entry) -> dict[str, Any]:
    """The `compactionSummary` runtime message of a compaction entry (spec §1.5).

    oh-my-pi carries `shortSummary`, `method`, `tokensAfter` and `warning` along (§2.3).
    """
    msg: dict[str, Any] = {
        "role": "compactionSummary",
        "summary": entry.get("summary", "") or "",
        "tokensBefore": entry.get("tokensBefore", 0),
        "timestamp": _entry_ms(entry),
    }
    for key in ("shortSummary", "method", "tokensAfter", "warning"):
        if entry.get(key) is not None:
            msg[key] = entry.get(key)
    return msg


def branch_summary_message(entry: Entry) -> dict[str, Any]:
    """The `branchSummary` runtime message of a branch_summary entry."""
    return {
        "role": "branchSummary",
        "summary": entry.get("summary", "") or "",
        "fromId": entry.get("fromId"),
        "timestamp": _entry_ms(entry),
    }


def custom_message(entry: Entry) -> dict[str, Any]:
    """The `custom` runtime message of a custom_message entry."""
    msg: dict[str, Any] = {
        "role": "custom",
        "customType": entry.get("customType"),
        "content": entry.get("content", ""),
        "display": entry.get("display", True),
        "timestamp": _entry_ms(entry),
    }
    if entry.get("details") is not None:
        msg["details"] = entry.get("details")
    return msg


def entry_to_message(entry: Entry, *, include_compaction: bool = True) -> Mapping[str, Any] | None:
    """The runtime message an entry contributes, or None (pi `getMessageFromEntry`).

    `message` → its message; `custom_message` → `custom`; `branch_summary` →
    `branchSummary`; `compaction` → `compactionSummary` (unless `include_compaction` is
    false, as in oh-my-pi's prepareCompaction); every other type → None.
    """
    kind = entry.type
    if kind == "message":
        return entry.message
    if kind == "custom_message":
        return custom_message(entry)
    if kind == "branch_summary":
        return branch_summary_message(entry)
    if kind == "compaction" and include_compaction:
        return compaction_summary_message(entry)
    return None
