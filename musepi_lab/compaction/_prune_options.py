"""`PruneOptions`: how the two pruning passes decide, as one frozen value, and the rules
each pass reads from it.

A `None` option is read from `settings` (a `CompactionSettings`, by the pass's own field
names: the maintenance pass reads `prune_*`, the per-turn pass `supersede_*` and
`drop_useless`), else takes oh-my-pi 18.2.3's default. `outputs_rules` and
`superseded_rules` resolve the options once, so the passes work on plain values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from .._options import Options
from ._prune_rules import (
    DEFAULT_IDLE_FLUSH_MS,
    DEFAULT_MINIMUM_SAVINGS,
    DEFAULT_PROTECT_TOKENS,
    DEFAULT_PROTECTED_TOOLS,
    DEFAULT_SUFFIX_TOKEN_LIMIT,
    MIN_PRUNE_TOKENS,
    CompleteCheck,
    ProtectedMatcher,
    SupersedeKey,
    is_skill_read,
    read_supersede_key,
)


@dataclasses.dataclass(frozen=True)
class PruneOptions(Options):
    """The options of `prune_tool_outputs` and `prune_superseded_tool_results` (each one
    also a keyword of them; each pass reads those it uses).

    Attributes:
        protect_tokens: Newest tool-output tokens left alone (40000; maintenance pass).
        minimum_savings: Least total savings worth a change (20000; maintenance pass).
        min_prune_tokens: Age-based floor (`MIN_PRUNE_TOKENS` = 50; maintenance pass).
        cache_warm_suffix_tokens: Prompt-cache guard of the maintenance pass; None
            disables it (the default).
        suffix_token_limit: Per-turn pass: cheap tail to re-cache (8000).
        idle_flush_ms: Per-turn pass: the cache is cold after this (90 min).
        prune_useless: Results flagged `useless` are candidates at any age (True).
        supersede_reads: Superseded reads are candidates at any age (True).
        protected_tools: Tool names or `(result, call) -> bool` never pruned (`("skill",)`).
        protect_skill_reads: Also protect reads of `skill://` paths (oh-my-pi's default).
        supersede_key: Maps a tool call to its supersede key (`read_supersede_key`).
        supersede_complete: Whether a successful result shows its whole target; None: all
            do (see `is_complete_read_result` for the read tool's strict test).
        keep_boundary_id: First entry still sent (None: the latest `firstKeptEntryId`).
        settings: A `CompactionSettings` the `None` options are read from.
    """

    protect_tokens: int | None = None
    minimum_savings: int | None = None
    min_prune_tokens: int | None = None
    cache_warm_suffix_tokens: int | None = None
    suffix_token_limit: int | None = None
    idle_flush_ms: int | None = None
    prune_useless: bool | None = None
    supersede_reads: bool | None = None
    protected_tools: Sequence[ProtectedMatcher] | None = None
    protect_skill_reads: bool = True
    supersede_key: SupersedeKey = read_supersede_key
    supersede_complete: CompleteCheck | None = None
    keep_boundary_id: str | None = None
    settings: Any = None


@dataclasses.dataclass(frozen=True)
class PruneRules:
    """The options of one pass resolved to plain values (`outputs_rules`,
    `superseded_rules`); the thresholds a pass does not use stay at their defaults."""

    useless: bool
    supersede: bool
    matchers: tuple[ProtectedMatcher, ...]
    supersede_key: SupersedeKey
    supersede_complete: CompleteCheck | None
    keep_boundary_id: str | None
    protect: int = DEFAULT_PROTECT_TOKENS
    minimum: int = DEFAULT_MINIMUM_SAVINGS
    floor: int = MIN_PRUNE_TOKENS
    cache_warm_suffix_tokens: int | None = None
    suffix_limit: int = DEFAULT_SUFFIX_TOKEN_LIMIT
    idle_ms: int = DEFAULT_IDLE_FLUSH_MS


def _setting(settings: Any, name: str, explicit: Any, default: Any) -> Any:
    if explicit is not None:
        return explicit
    if settings is not None and hasattr(settings, name):
        return getattr(settings, name)
    return default


def _matchers(options: PruneOptions) -> tuple[ProtectedMatcher, ...]:
    tools = _setting(
        options.settings, "prune_protected_tools", options.protected_tools, DEFAULT_PROTECTED_TOOLS
    )
    matchers = tuple(tools)
    return (*matchers, is_skill_read) if options.protect_skill_reads else matchers


def outputs_rules(options: PruneOptions) -> PruneRules:
    """The rules of the maintenance pass (`prune_tool_outputs`): `prune_*` settings."""
    o, s = options, options.settings
    return PruneRules(
        useless=_setting(s, "prune_useless", o.prune_useless, True),
        supersede=_setting(s, "prune_supersede_reads", o.supersede_reads, True),
        matchers=_matchers(o),
        supersede_key=o.supersede_key,
        supersede_complete=o.supersede_complete,
        keep_boundary_id=o.keep_boundary_id,
        protect=_setting(s, "prune_protect_tokens", o.protect_tokens, DEFAULT_PROTECT_TOKENS),
        minimum=_setting(s, "prune_minimum_savings", o.minimum_savings, DEFAULT_MINIMUM_SAVINGS),
        floor=_setting(s, "prune_min_tokens", o.min_prune_tokens, MIN_PRUNE_TOKENS),
        cache_warm_suffix_tokens=o.cache_warm_suffix_tokens,
    )


def superseded_rules(options: PruneOptions) -> PruneRules:
    """The rules of the per-turn pass (`prune_superseded_tool_results`): `supersede_*`
    and `drop_useless` settings."""
    o, s = options, options.settings
    idle_ms = o.idle_flush_ms
    if idle_ms is None and hasattr(s, "supersede_idle_seconds"):
        idle_ms = int(s.supersede_idle_seconds * 1000)
    return PruneRules(
        useless=_setting(s, "drop_useless", o.prune_useless, True),
        supersede=_setting(s, "supersede_reads", o.supersede_reads, True),
        matchers=_matchers(o),
        supersede_key=o.supersede_key,
        supersede_complete=o.supersede_complete,
        keep_boundary_id=o.keep_boundary_id,
        suffix_limit=_setting(
            s, "supersede_suffix_tokens", o.suffix_token_limit, DEFAULT_SUFFIX_TOKEN_LIMIT
        ),
        idle_ms=DEFAULT_IDLE_FLUSH_MS if idle_ms is None else idle_ms,
    )
