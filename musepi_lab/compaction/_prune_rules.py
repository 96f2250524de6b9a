"""What MusePi's tool-output pruning keeps or blanks, one result at a time (spec §6.3):
the notices, the defaults of oh-my-pi 18.2.3, the read-supersede key, complete reads, skill
reads and protected tools. The passes over a session are in `_pruning`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..tokens._estimate import utf16_len
from ._file_ops import split_read_selector

SUPERSEDED_NOTICE = "[Superseded by a newer read of this file]"
"""Text written over a read result that a newer read of the same file replaced."""
USELESS_NOTICE = "[Uneventful result elided]"
"""Text written over a result its tool flagged useless."""
MIN_PRUNE_TOKENS = 50
"""Age-based pruning skips results smaller than this: the notice would save nothing."""
DEFAULT_PROTECT_TOKENS = 40000
DEFAULT_MINIMUM_SAVINGS = 20000
DEFAULT_PROTECTED_TOOLS: tuple[str, ...] = ("skill",)
DEFAULT_SUFFIX_TOKEN_LIMIT = 8000
DEFAULT_IDLE_FLUSH_MS = 90 * 60 * 1000
"""oh-my-pi 18.2.3 `PRUNE_IDLE_FLUSH_MS` (session-maintenance.ts): the cache is cold after this."""
MAINTENANCE_CACHE_WARM_SUFFIX_TOKENS = 8000
"""oh-my-pi 18.2.3 `PRUNE_CACHE_WARM_SUFFIX_TOKENS`: the maintenance never prunes a result
followed by more than this many tokens (it sits in the warm prompt-cache prefix)."""
SKILL_URL_PREFIX = "skill://"
_RANGE_SEP = "\x00"
_ALTERNATE_SEP = "\x01"

ProtectedMatcher = str | Callable[[Mapping[str, Any], Mapping[str, Any] | None], bool]
"""A tool name (protects every result of that tool) or a predicate `(result, call) -> bool`."""
SupersedeKey = Callable[[str, Mapping[str, Any]], str | None]
CompleteCheck = Callable[[Mapping[str, Any]], bool]


def pruned_notice(tokens: int) -> str:
    """The notice of an age-pruned result: `[Output truncated - N tokens]`."""
    return f"[Output truncated - {tokens} tokens]"


def pruned_savings(tokens: int, notice: str) -> int:
    """Tokens saved by replacing a result of `tokens` tokens with `notice`.

    `max(0, tokens − ceil(len(notice) / 4))`, the notice length in UTF-16 units.
    """
    return max(0, tokens - math.ceil(utf16_len(notice) / 4))


# -- supersede keys ------------------------------------------------------------------------


def is_alternate_form_selector(selector: str) -> bool:
    """Whether a read selector shows another form of the file (`raw`, `conflicts`).

    A compound such as `1-50:raw` counts as raw.
    """
    return any(part.lower() in ("raw", "conflicts") for part in selector.split(":"))


def read_supersede_key(tool_name: str, args: Mapping[str, Any]) -> str | None:
    """The supersede key of a tool call (oh-my-pi `readToolSupersedeKey`).

    Only `read` calls with a non-empty string path have one; paths containing `://` are
    exempt. A selector-free read keys on the path, a line-range read on `path + "\\0" +
    selector` (so a complete read of the whole file can supersede it), a `raw` or
    `conflicts` read on `path + "\\1" + selector` (superseded only by the same selector).
    """
    if tool_name != "read":
        return None
    path = args.get("path")
    if not isinstance(path, str) or not path or "://" in path:
        return None
    base, selector = split_read_selector(path)
    if selector is None:
        return base
    separator = _ALTERNATE_SEP if is_alternate_form_selector(selector) else _RANGE_SEP
    return base + separator + selector


def is_complete_read_result(message: Mapping[str, Any]) -> bool:
    """oh-my-pi's strict completeness test of a `read` result (`isCompleteReadResult`).

    Complete needs positive proof in the read tool's `details`: a `totalLines` count (or an
    image in the content), and no summary, truncation or column cap. pi sessions carry no
    such details, so with this test their bare reads never supersede range reads; the
    pruning functions therefore default to treating every successful result as complete.
    """
    details = message.get("details")
    if not isinstance(details, Mapping):
        return False
    truncation = details.get("truncation")
    if details.get("summary") or (isinstance(truncation, Mapping) and truncation.get("truncated")):
        return False
    meta = details.get("meta")
    if isinstance(meta, Mapping):
        limits = meta.get("limits")
        if meta.get("truncation") or (
            isinstance(limits, Mapping) and limits.get("columnTruncated")
        ):
            return False
    content = message.get("content")
    has_image = isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "image" for b in content
    )
    return details.get("totalLines") is not None or has_image


def is_skill_read(result: Mapping[str, Any], call: Mapping[str, Any] | None) -> bool:
    """Whether a result is a `read` of a `skill://` path (protected by default)."""
    if result.get("toolName") != "read" or call is None or call.get("name") != "read":
        return False
    args = call.get("arguments")
    path = args.get("path") if isinstance(args, Mapping) else None
    return isinstance(path, str) and path.startswith(SKILL_URL_PREFIX)


def is_protected(
    result: Mapping[str, Any],
    call: Mapping[str, Any] | None,
    matchers: Sequence[ProtectedMatcher],
) -> bool:
    for matcher in matchers:
        if isinstance(matcher, str):
            if result.get("toolName") == matcher:
                return True
        elif matcher(result, call):
            return True
    return False


# -- shared pieces -------------------------------------------------------------------------
