"""Tool-output pruning of MusePi / oh-my-pi (spec §6.3): blank old, stale or useless results.

Two passes, both pure (they return a new `Session`; entries are never changed in place):

- `prune_tool_outputs`: before a compaction check. Walks tool results newest→oldest; once
  40000 tokens of newer tool output are behind it, a result (not protected, ≥ 50 tokens)
  becomes a candidate, and superseded reads and useless results are candidates at any
  age. All candidates are blanked only if together they save ≥ 20000 tokens.
- `prune_superseded_tool_results`: the cheap per-turn pass. Blanks superseded reads (and
  useless results) when few tokens follow them (≤ 8000, cheap to re-cache) or when the
  session has been idle ≥ 30 minutes (provider cache cold).

A blanked result keeps its entry id, `toolCallId` and `toolName` (so tool-call pairing
stays valid); its content becomes one text block with a notice, and `prunedAt` is set.
Entries before the latest compaction's `firstKeptEntryId` are never touched: they are no
longer sent to the model.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..session._model import Entry
from ..session._session import Session
from ..tokens._counter import TokenCounter
from ._prune_options import PruneOptions, PruneRules, outputs_rules, superseded_rules
from ._prune_rules import (
    SUPERSEDED_NOTICE,
    USELESS_NOTICE,
    CompleteCheck,
    ProtectedMatcher,
    SupersedeKey,
    is_protected,
    pruned_notice,
    pruned_savings,
)


@dataclass(frozen=True, slots=True)
class PruneResult:
    """What a pruning pass did.

    Attributes:
        session: The new session (the input session itself when nothing was pruned), or
            None when the pass was given bare path entries.
        entries: The path entries after the pass (pruned ones replaced).
        pruned_ids: Ids of the entries blanked, in path order.
        tokens_saved: Estimated tokens saved.
    """

    session: Session | None
    entries: tuple[Entry, ...]
    pruned_ids: tuple[str, ...]
    tokens_saved: int

    @property
    def pruned_count(self) -> int:
        """How many results were blanked."""
        return len(self.pruned_ids)

    @property
    def changed(self) -> bool:
        """Whether anything was pruned."""
        return bool(self.pruned_ids)


@dataclass(frozen=True, slots=True)
class _Candidate:
    index: int
    entry: Entry
    tokens: int
    notice: str


def _path_of(
    session_or_entries: Session | Sequence[Entry],
) -> tuple[Session | None, tuple[Entry, ...]]:
    if isinstance(session_or_entries, Session):
        return session_or_entries, session_or_entries.path()
    return None, tuple(session_or_entries)


def _tool_result(entry: Entry) -> Mapping[str, Any] | None:
    msg = entry.message
    return msg if msg is not None and msg.get("role") == "toolResult" else None


def _tool_calls_by_id(entries: Sequence[Entry]) -> dict[Any, Mapping[str, Any]]:
    calls: dict[Any, Mapping[str, Any]] = {}
    for entry in entries:
        msg = entry.message
        if (
            msg is None
            or msg.get("role") != "assistant"
            or not isinstance(msg.get("content"), list)
        ):
            continue
        for block in msg["content"]:
            if isinstance(block, Mapping) and block.get("type") == "toolCall":
                calls[block.get("id")] = block
    return calls


def latest_keep_boundary(entries: Sequence[Entry]) -> str | None:
    """`firstKeptEntryId` of the latest compaction among the entries, if any."""
    for entry in reversed(entries):
        if entry.type == "compaction":
            kept = entry.get("firstKeptEntryId")
            return kept if isinstance(kept, str) else None
    return None


def _boundary_index(entries: Sequence[Entry], keep_boundary_id: str | None) -> int:
    if keep_boundary_id is None:
        return 0
    for index, entry in enumerate(entries):
        if entry.id == keep_boundary_id:
            return index
    return 0


def _suffix_tokens(entries: Sequence[Entry], counter: TokenCounter) -> list[int]:
    # suffix[i] = tokens of every message entry strictly after i: what the provider must
    # re-cache if entry i changes.
    suffix = [0] * len(entries)
    total = 0
    for index in range(len(entries) - 1, -1, -1):
        suffix[index] = total
        if entries[index].type == "message":
            total += counter.count_entry(entries[index])
    return suffix


def _superseded(
    entries: Sequence[Entry],
    counter: TokenCounter,
    calls: Mapping[Any, Mapping[str, Any]],
    key_of: SupersedeKey,
    complete: CompleteCheck | None,
    protected: Sequence[ProtectedMatcher],
) -> list[_Candidate]:
    # Newest → oldest, remembering per key whether a newer successful / complete result
    # was seen (an entry exists once any newer result of the key, even a failed one, was).
    newer: dict[str, dict[str, bool]] = {}
    found: list[_Candidate] = []
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        msg = _tool_result(entry)
        if msg is None or "prunedAt" in msg:
            continue
        call = calls.get(msg.get("toolCallId"))
        if call is None or is_protected(msg, call, protected):
            continue
        args = call.get("arguments")
        key = key_of(str(call.get("name", "")), args if isinstance(args, Mapping) else {})
        if key is None:
            continue
        sep = key.find("\x00")
        same = newer.get(key)
        parent = newer.get(key[:sep]) if sep >= 0 else None
        if msg.get("isError"):
            superseded = same is not None or bool(parent and parent["success"])
        else:
            superseded = bool(same and same["success"]) or bool(parent and parent["complete"])
        state = same if same is not None else {"success": False, "complete": False}
        if not msg.get("isError"):
            state["success"] = True
            state["complete"] = state["complete"] or (complete(msg) if complete else True)
        newer[key] = state
        if superseded:
            found.append(_Candidate(index, entry, counter.count_entry(entry), SUPERSEDED_NOTICE))
    found.reverse()
    return found


def _useless(
    entries: Sequence[Entry],
    counter: TokenCounter,
    calls: Mapping[Any, Mapping[str, Any]],
    protected: Sequence[ProtectedMatcher],
    exclude: set[int],
) -> list[_Candidate]:
    found: list[_Candidate] = []
    for index, entry in enumerate(entries):
        msg = _tool_result(entry)
        if msg is None or msg.get("useless") is not True or "prunedAt" in msg:
            continue
        if msg.get("isError") is True or index in exclude:
            continue
        if is_protected(msg, calls.get(msg.get("toolCallId")), protected):
            continue
        tokens = counter.count_entry(entry)
        if pruned_savings(tokens, USELESS_NOTICE) <= 0:
            continue
        found.append(_Candidate(index, entry, tokens, USELESS_NOTICE))
    return found


def _blank(entry: Entry, notice: str, now_ms: int) -> Entry:
    message = dict(entry.message or {})
    message["content"] = [{"type": "text", "text": notice}]
    message["prunedAt"] = now_ms
    return entry.copy_with(message=message)


def _apply(
    session: Session | None,
    entries: tuple[Entry, ...],
    candidates: Sequence[_Candidate],
    now_ms: int | None,
) -> PruneResult:
    stamp = int(time.time() * 1000) if now_ms is None else int(now_ms)
    replaced = {id(c.entry): _blank(c.entry, c.notice, stamp) for c in candidates}
    new_path = tuple(replaced.get(id(e), e) for e in entries)
    new_session = None
    if session is not None:
        new_session = session.copy_with(
            entries=tuple(replaced.get(id(e), e) for e in session.entries)
        )
    saved = sum(pruned_savings(c.tokens, c.notice) for c in candidates)
    ids = tuple(str(c.entry.id) for c in sorted(candidates, key=lambda c: c.index))
    return PruneResult(new_session, new_path, ids, saved)


def _special(
    entries: Sequence[Entry],
    counter: TokenCounter,
    calls: Mapping[Any, Mapping[str, Any]],
    rules: PruneRules,
) -> dict[int, _Candidate]:
    """The candidates at any age, by path index: superseded reads, then useless results
    (a result both is pruned as superseded)."""
    superseded: dict[int, _Candidate] = {}
    if rules.supersede:
        found = _superseded(
            entries, counter, calls, rules.supersede_key, rules.supersede_complete, rules.matchers
        )
        superseded = {c.index: c for c in found}
    useless: dict[int, _Candidate] = {}
    if rules.useless:
        found = _useless(entries, counter, calls, rules.matchers, set(superseded))
        useless = {c.index: c for c in found}
    return {**useless, **superseded}


def _boundary(entries: Sequence[Entry], rules: PruneRules) -> int:
    """Path index of the first entry still sent to the model."""
    given = rules.keep_boundary_id
    return _boundary_index(entries, latest_keep_boundary(entries) if given is None else given)


# -- the passes ----------------------------------------------------------------------------


def _walk_candidates(
    entries: Sequence[Entry],
    counter: TokenCounter,
    calls: Mapping[Any, Mapping[str, Any]],
    special: Mapping[int, _Candidate],
    rules: PruneRules,
) -> list[_Candidate]:
    """The newest→oldest walk of `pruneToolOutputs`: superseded and useless results (in
    `special`) at any age, others once `rules.protect` tokens of newer output are kept."""
    warm = rules.cache_warm_suffix_tokens
    suffix = _suffix_tokens(entries, counter) if warm is not None else None
    boundary = _boundary(entries, rules)
    accumulated = 0
    candidates: list[_Candidate] = []
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        msg = _tool_result(entry)
        if msg is None:
            continue
        tokens = counter.count_entry(entry)
        in_warm_prefix = suffix is not None and warm is not None and suffix[index] > warm
        if "prunedAt" in msg or in_warm_prefix or index < boundary:
            accumulated += tokens
            continue
        if index in special:
            candidates.append(special[index])
        elif (
            accumulated >= rules.protect
            and tokens >= rules.floor
            and not is_protected(msg, calls.get(str(msg.get("toolCallId"))), rules.matchers)
        ):
            candidates.append(_Candidate(index, entry, tokens, pruned_notice(tokens)))
        accumulated += tokens
    return candidates


def prune_tool_outputs(
    session_or_path_entries: Session | Sequence[Entry],
    counter: TokenCounter,
    *,
    now_ms: int | None = None,
    options: PruneOptions | None = None,
    **keywords: Any,
) -> PruneResult:
    """oh-my-pi's `pruneToolOutputs` (spec §6.3), as a pure function.

    Walks tool results newest→oldest: superseded and useless results are candidates at any
    age, others once `protect_tokens` of newer output are kept. Below `minimum_savings`
    nothing changes; else each candidate becomes its notice, with `prunedAt` set. A `None`
    option is read from `settings` (its `prune_*` fields), else takes oh-my-pi's default.

    Args:
        session_or_path_entries: A session (its current path is pruned) or path entries.
        counter: Token counter (`TokenCounter`); counts are cached per entry.
        now_ms: The `prunedAt` stamp (epoch ms); None reads the clock.
        options: A `PruneOptions` (default: every option at its default).
        **keywords: Any option of `PruneOptions` by name (`protect_tokens=`,
            `minimum_savings=`, `protected_tools=`, `prune_useless=`, `supersede_reads=`,
            `protect_skill_reads=`, `min_prune_tokens=`, `supersede_key=`,
            `supersede_complete=`, `cache_warm_suffix_tokens=`, `keep_boundary_id=`,
            `settings=`), replacing the one in `options`.

    Returns:
        A `PruneResult` (the input is never modified).
    """
    rules = outputs_rules(PruneOptions.given(options, keywords, "prune_tool_outputs"))
    session, entries = _path_of(session_or_path_entries)
    calls = _tool_calls_by_id(entries)
    special = _special(entries, counter, calls, rules)
    candidates = _walk_candidates(entries, counter, calls, special, rules)
    total = sum(pruned_savings(c.tokens, c.notice) for c in candidates)
    if not candidates or total < rules.minimum:
        return PruneResult(session, entries, (), 0)
    return _apply(session, entries, candidates, now_ms)


def maintenance_prune(
    session_or_path_entries: Session | Sequence[Entry],
    counter: TokenCounter,
    *,
    settings: Any = None,
    now_ms: int | None = None,
) -> PruneResult:
    """The pruning MusePi's session maintenance runs before a threshold compaction.

    oh-my-pi 18.2.3 (`session-maintenance.ts`, `#pruneToolOutputs`) passes the library's
    `DEFAULT_PRUNE_CONFIG` with `pruneUseless` from `compaction.dropUseless`, the latest
    compaction's `firstKeptEntryId` as keep boundary, and the warm-cache guard
    (`cacheWarmSuffixTokens` 8000), and no supersede key: superseded reads are left to the
    per-turn pass (`prune_superseded_tool_results`). The values come from `settings`
    (`prune_supersede_reads`, `prune_cache_warm_suffix_tokens`, `drop_useless`, ...).

    Args:
        session_or_path_entries: A session (its current path) or path entries.
        counter: Token counter.
        settings: A `CompactionSettings` (default: MusePi's).
        now_ms: The `prunedAt` stamp (epoch ms); None reads the clock.
    """
    if settings is None:
        from ._settings import CompactionSettings

        settings = CompactionSettings.musepi()
    return prune_tool_outputs(
        session_or_path_entries,
        counter,
        prune_useless=settings.drop_useless,
        supersede_reads=settings.prune_supersede_reads,
        cache_warm_suffix_tokens=settings.prune_cache_warm_suffix_tokens,
        now_ms=now_ms,
        settings=settings,
    )


def _last_message_timestamp(entries: Sequence[Entry]) -> float | None:
    """The `timestamp` (epoch ms) of the path's last message, if it records one."""
    for entry in reversed(entries):
        if entry.type != "message":
            continue
        stamp = (entry.message or {}).get("timestamp")
        if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
            return float(stamp)
        return None
    return None


def prune_superseded_tool_results(
    session_or_path_entries: Session | Sequence[Entry],
    counter: TokenCounter,
    *,
    now_ms: int | None = None,
    options: PruneOptions | None = None,
    **keywords: Any,
) -> PruneResult:
    """oh-my-pi's per-turn `pruneSupersededToolResults` (spec §6.3), as a pure function.

    Candidates: superseded reads and useless results. When the path's last message is at
    least `idle_flush_ms` old (cold cache) every candidate after the keep boundary is pruned,
    else only those followed by at most `suffix_token_limit` tokens. No minimum saving.
    A `None` option is read from `settings` (`supersede_reads`, `drop_useless`,
    `supersede_suffix_tokens`, `supersede_idle_seconds`), else takes oh-my-pi's default.

    Args:
        session_or_path_entries: A session (its current path is pruned) or path entries.
        counter: Token counter.
        now_ms: The current time and `prunedAt` stamp (epoch ms); None reads the clock.
        options: A `PruneOptions` (default: every option at its default).
        **keywords: Any option of `PruneOptions` by name (`supersede_reads=`,
            `prune_useless=`, `suffix_token_limit=`, `idle_flush_ms=`, `protected_tools=`,
            `protect_skill_reads=`, `supersede_key=`, `supersede_complete=`,
            `keep_boundary_id=`, `settings=`), replacing the one in `options`.

    Returns:
        A `PruneResult`; the input is never modified.
    """
    where = "prune_superseded_tool_results"
    rules = superseded_rules(PruneOptions.given(options, keywords, where))
    session, entries = _path_of(session_or_path_entries)
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)
    special = _special(entries, counter, _tool_calls_by_id(entries), rules)
    candidates = [special[i] for i in sorted(special)]
    chosen = _cheap_to_recache(entries, counter, candidates, rules, now) if candidates else []
    if not chosen:
        return PruneResult(session, entries, (), 0)
    return _apply(session, entries, chosen, now)


def _cheap_to_recache(
    entries: Sequence[Entry],
    counter: TokenCounter,
    candidates: Sequence[_Candidate],
    rules: PruneRules,
    now: int,
) -> list[_Candidate]:
    """The candidates after the keep boundary that are worth blanking now: all of them when
    the cache is cold (the last message `idle_ms` old), else those followed by at most
    `suffix_limit` tokens."""
    boundary = _boundary(entries, rules)
    last_ts = _last_message_timestamp(entries)
    if last_ts is not None and now - last_ts >= rules.idle_ms:
        return [c for c in candidates if c.index >= boundary]
    suffix = _suffix_tokens(entries, counter)
    return [c for c in candidates if c.index >= boundary and suffix[c.index] <= rules.suffix_limit]
