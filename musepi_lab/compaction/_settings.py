"""`CompactionSettings`: every offline default of pi and MusePi (oh-my-pi) compaction.

Sources: spec §3.3 (pi settings), §3.5 and §6.1 (oh-my-pi `context-settings.ts` and the
engine's `DEFAULT_COMPACTION_SETTINGS`), §5.2 and §5.7 (summary output budgets), §6.3
(pruning), §7 (branch summaries). Settings that only make sense inside a live agent
(provider lanes' deadlines, UI prompts, snapcompact imaging of system prompts) are left out.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from ..session._profiles import PROFILES, check_profile

DEFAULT_RESERVE_TOKENS = 16384
"""Reserve used when `reserve_tokens` is unset (pi default and oh-my-pi engine default)."""
MAX_SUMMARY_TOKENS = 16384
"""oh-my-pi's hard ceiling on a generated summary or turn prefix (spec §5.7)."""
SHORT_SUMMARY_MAX_TOKENS = 512
"""oh-my-pi's ceiling on the display-only short summary (spec §5.7)."""
SUMMARY_RESERVE_RATIO = 0.8
TURN_PREFIX_RESERVE_RATIO = 0.5
SHORT_SUMMARY_RESERVE_RATIO = 0.2
BRANCH_SUMMARY_MAX_TOKENS = 2048
"""`maxTokens` of a branch-summary request, pi and oh-my-pi (spec §7)."""
MUSEPI_METHOD_ORDER: tuple[str, ...] = ("remote", "snapcompact", "handoff", "shake", "soft")
METHODS: frozenset[str] = frozenset({"window", "remote", "snapcompact", "handoff", "soft", "shake"})
MUSEPI_REFERENCE = "oh-my-pi 18.2.3"
"""The oh-my-pi release the MusePi profile follows where the seed is silent (issue 11)."""
PI_REFERENCE = "pi-coding-agent 0.58.3"
"""The pi release the pi profile follows."""
STRATEGIES: frozenset[str] = frozenset({"context-full", "handoff", "shake", "snapcompact", "off"})
BOUNDARIES: tuple[str, ...] = ("seed", "release")
"""Where MusePi's `prepare_compaction` starts after a previous compaction (`boundary`)."""


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """Settings of the compaction engine, with the defaults of MusePi or pi.

    `CompactionSettings()` and `CompactionSettings.musepi()` give MusePi's defaults
    (oh-my-pi 18.2.3's where the seed is silent, the seed's boundary rule: `boundary`); `CompactionSettings.pi()` gives pi's. Change fields with `copy_with`.

    Attributes:
        profile: `"musepi"` or `"pi"`: which algorithm variants the engine runs
            (`prepare_compaction`, `should_compact`, token walks) when none is asked for.
        enabled: `compaction.enabled` (both: true). Automatic maintenance on or off;
            `should_compact` is false when off.
        strategy: oh-my-pi engine strategy (`context-full`, `handoff`, `shake`,
            `snapcompact`, `off`); `off` disables the threshold trigger (spec §3.5).
        method_order: `compaction.methodOrder`, the ordered fallback list of maintenance
            methods (MusePi: remote, snapcompact, handoff, shake, soft; pi: soft only,
            its single LLM summary).
        reserve_tokens: `compaction.reserveTokens`. pi: 16384. MusePi: unset (None); the
            engine then uses 16384, never less than 15% of the window, and an unset
            reserve may fall back to the proportional one on small windows (spec §3.5).
        keep_recent_tokens: `compaction.keepRecentTokens` (both: 20000), the budget of
            recent conversation kept verbatim.
        threshold_percent: `compaction.thresholdPercent` (MusePi: -1 = use the reserve
            rule; 1–99 = that percent of the window). Not used by pi.
        threshold_tokens: `compaction.thresholdTokens` (MusePi: -1 = unset; a positive
            value is a fixed threshold that wins over the percent). Not used by pi.
        mid_turn_enabled: `compaction.midTurnEnabled` (MusePi: true) — check the threshold
            at safe tool-loop boundaries before the next provider request. pi (@83378aad)
            checks only after a run ends: false.
        auto_continue: `compaction.autoContinue` (MusePi: true) — queue a continue prompt
            after post-turn maintenance. pi: false.
        async_enabled: `compaction.asyncEnabled` (MusePi: true) — speculative background
            summarization in the band `[threshold − lead, threshold)`, see
            `async_lead_tokens`. pi: false.
        remote_enabled: oh-my-pi `remoteEnabled` (MusePi: true). Offline it decides only
            whether a previous provider-native (remote) compaction is readable when
            preparing the next one. pi: false.
        remote_streaming_v2_enabled: `compaction.remoteStreamingV2Enabled` (MusePi: true).
        v2_retained_message_budget: `compaction.v2RetainedMessageBudget` (64000).
        handoff_save_to_disk: `compaction.handoffSaveToDisk` (false).
        idle_enabled: `compaction.idleEnabled` (false) — idle maintenance trigger.
        idle_threshold_tokens: `compaction.idleThresholdTokens` (200000).
        idle_timeout_seconds: `compaction.idleTimeoutSeconds` (300).
        summary_tokens_cap: ceiling on summary and turn-prefix `maxTokens`
            (MusePi: `MAX_SUMMARY_TOKENS` = 16384; pi: None, no ceiling).
        prune_enabled: run tool-output pruning before compaction checks (MusePi: true;
            pi has no pruning: false).
        prune_protect_tokens: pruning leaves the newest 40000 tokens of tool output alone.
        prune_minimum_savings: pruning happens only if it saves at least 20000 tokens.
        prune_protected_tools: tool names never pruned for age (`("skill",)`).
        prune_useless: useless results are always prune candidates (true).
        prune_min_tokens: results smaller than this are not pruned for age (50).
        prune_supersede_reads: whether the maintenance pruning (`prune_tool_outputs`) also
            prunes superseded reads. oh-my-pi 18.2.3's maintenance passes no supersede key:
            false; superseded reads go through the per-turn pass only.
        prune_cache_warm_suffix_tokens: the maintenance pruning's prompt-cache guard: a
            result followed by more than this many tokens is left alone (oh-my-pi 18.2.3
            `PRUNE_CACHE_WARM_SUFFIX_TOKENS` = 8000; None: no guard).
        supersede_reads: `compaction.supersedeReads` (MusePi: true; pi: false) — per-turn
            pruning of reads superseded by newer reads of the same file.
        drop_useless: `compaction.dropUseless` (MusePi: true; pi: false) — per-turn
            elision of results flagged useless.
        supersede_suffix_tokens: the per-turn pass prunes only while the messages after
            the candidates total at most this many tokens (8000)...
        supersede_idle_seconds: ...or when the last message is at least this old (5400 s,
            oh-my-pi 18.2.3 `PRUNE_IDLE_FLUSH_MS`; the provider cache is assumed cold).
        branch_summary_enabled: `branchSummary.enabled` (MusePi: false; pi has no switch,
            it asks unless `branchSummary.skipPrompt`: true).
        branch_summary_reserve_tokens: `branchSummary.reserveTokens` (16384); the branch
            summary input budget is the window minus this.
        branch_summary_skip_prompt: pi `branchSummary.skipPrompt` (false).
        branch_summary_max_tokens: `maxTokens` of the branch summary request (2048).
        boundary: where MusePi's `prepare_compaction` starts after a previous compaction.
            `"seed"` (default; the seed's "Boundary and cut-point logic":
            `boundaryStart = prevCompactionIndex + 1`): only entries after the previous
            compaction record are estimated, cut and summarized. `"release"` (oh-my-pi
            18.2.3): the previous compaction's kept region, from its `firstKeptEntryId`
            (or after its `providerReplayThroughEntryId` snapshot for a provider-native
            one), is re-opened and cut together with what follows. The pi profile always
            starts after the previous compaction and ignores this field.
        reference: the published release whose behaviour the profile follows where the
            seed is silent, as the conformance harness measures it (`musepi-lab
            conformance`).
    """

    profile: str = "musepi"
    enabled: bool = True
    strategy: str = "context-full"
    method_order: tuple[str, ...] = MUSEPI_METHOD_ORDER
    reserve_tokens: int | None = None
    keep_recent_tokens: int = 20000
    threshold_percent: float = -1
    threshold_tokens: int = -1
    mid_turn_enabled: bool = True
    auto_continue: bool = True
    async_enabled: bool = True
    remote_enabled: bool = True
    remote_streaming_v2_enabled: bool = True
    v2_retained_message_budget: int = 64000
    handoff_save_to_disk: bool = False
    idle_enabled: bool = False
    idle_threshold_tokens: int = 200000
    idle_timeout_seconds: int = 300
    summary_tokens_cap: int | None = MAX_SUMMARY_TOKENS
    prune_enabled: bool = True
    prune_protect_tokens: int = 40000
    prune_minimum_savings: int = 20000
    prune_protected_tools: tuple[str, ...] = ("skill",)
    prune_useless: bool = True
    prune_min_tokens: int = 50
    prune_supersede_reads: bool = False
    prune_cache_warm_suffix_tokens: int | None = 8000
    supersede_reads: bool = True
    drop_useless: bool = True
    supersede_suffix_tokens: int = 8000
    supersede_idle_seconds: float = 5400.0
    branch_summary_enabled: bool = False
    branch_summary_reserve_tokens: int = 16384
    branch_summary_skip_prompt: bool = False
    branch_summary_max_tokens: int = BRANCH_SUMMARY_MAX_TOKENS
    boundary: str = "seed"
    reference: str = MUSEPI_REFERENCE

    def __post_init__(self) -> None:
        check_profile(self.profile)
        if self.boundary not in BOUNDARIES:
            raise ValueError(f"unknown boundary {self.boundary!r}; expected one of {BOUNDARIES}")
        if self.strategy not in STRATEGIES:
            raise ValueError(
                f"unknown strategy {self.strategy!r}; expected one of {sorted(STRATEGIES)}"
            )
        if isinstance(self.method_order, (str, bytes)) or not isinstance(self.method_order, tuple):
            raise TypeError("method_order must be a tuple of method names")
        unknown = [m for m in self.method_order if m not in METHODS]
        if unknown:
            raise ValueError(f"unknown methods in method_order: {unknown}")
        for name in (
            "keep_recent_tokens",
            "v2_retained_message_budget",
            "idle_threshold_tokens",
            "prune_protect_tokens",
            "prune_minimum_savings",
            "prune_min_tokens",
            "supersede_suffix_tokens",
            "branch_summary_reserve_tokens",
            "branch_summary_max_tokens",
        ):
            _check_count(name, getattr(self, name))
        if self.reserve_tokens is not None:
            _check_count("reserve_tokens", self.reserve_tokens)
        if self.summary_tokens_cap is not None:
            _check_count("summary_tokens_cap", self.summary_tokens_cap)
        for name in ("threshold_percent", "threshold_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, not {type(value).__name__}")
        if isinstance(self.prune_protected_tools, (str, bytes)):
            raise TypeError("prune_protected_tools must be a tuple of tool names")

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def musepi(cls, **changes: Any) -> CompactionSettings:
        """MusePi's defaults, with `changes` applied.

        They are oh-my-pi 18.2.3's (`reference`) where the seed is silent and the seed's
        where it speaks: `boundary="seed"` prepares a compaction from the entry after the
        previous compaction record; `musepi(boundary="release")` gives the release's rule.
        """
        return cls(**changes)

    @classmethod
    def pi(cls, **changes: Any) -> CompactionSettings:
        """pi's defaults (spec §3.3), with `changes` applied."""
        base: dict[str, Any] = {
            "profile": "pi",
            "method_order": ("soft",),
            "reserve_tokens": DEFAULT_RESERVE_TOKENS,
            "mid_turn_enabled": False,
            "auto_continue": False,
            "async_enabled": False,
            "remote_enabled": False,
            "remote_streaming_v2_enabled": False,
            "summary_tokens_cap": None,
            "prune_enabled": False,
            "supersede_reads": False,
            "drop_useless": False,
            "branch_summary_enabled": True,
            "prune_cache_warm_suffix_tokens": None,
            "reference": PI_REFERENCE,
        }
        base.update(changes)
        return cls(**base)

    @classmethod
    def for_profile(cls, profile: str, **changes: Any) -> CompactionSettings:
        """The defaults of `profile` (`"musepi"` or `"pi"`)."""
        if profile == "pi":
            return cls.pi(**changes)
        if profile == "musepi":
            return cls.musepi(**changes)
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")

    def copy_with(self, **changes: Any) -> CompactionSettings:
        """A copy with the given fields replaced."""
        return dataclasses.replace(self, **changes)

    # -- derived budgets ----------------------------------------------------------------
    @property
    def resolved_reserve_tokens(self) -> int:
        """The configured reserve, or 16384 when unset."""
        return self.reserve_tokens if self.reserve_tokens is not None else DEFAULT_RESERVE_TOKENS

    @property
    def summary_max_tokens(self) -> int:
        """`maxTokens` of the history summary request (spec §5.2, §5.7).

        pi: `floor(0.8 · reserve)` (13107 with defaults); MusePi: the same, capped at
        `summary_tokens_cap` (16384).
        """
        return self._capped(math.floor(SUMMARY_RESERVE_RATIO * self.resolved_reserve_tokens))

    @property
    def turn_prefix_max_tokens(self) -> int:
        """`maxTokens` of the split-turn prefix summary request: `floor(0.5 · reserve)`,
        capped like the summary in MusePi (8192 with defaults)."""
        return self._capped(math.floor(TURN_PREFIX_RESERVE_RATIO * self.resolved_reserve_tokens))

    @property
    def short_summary_max_tokens(self) -> int | None:
        """`maxTokens` of MusePi's display short summary, `min(512, floor(0.2 · reserve))`;
        None for pi, which writes none."""
        if self.profile == "pi":
            return None
        return min(
            SHORT_SUMMARY_MAX_TOKENS,
            math.floor(SHORT_SUMMARY_RESERVE_RATIO * self.resolved_reserve_tokens),
        )

    def _capped(self, tokens: int) -> int:
        cap = self.summary_tokens_cap
        return tokens if cap is None else min(tokens, cap)


def _check_count(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
