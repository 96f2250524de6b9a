"""The strategy contract, the registry, and `compact()`.

A strategy is a plain frozen dataclass: its fields are its parameters, so it prints, hashes,
compares, and goes into papermill parameters and widget dropdowns by name
(`strategies.get("observation-masking", keep_turns=3)`). Every strategy gets the same
`CompactionContext` (the session, the preparation made by the engine, settings, token
counter, summarizer and prompt set) and returns a `CompactionResult`, so researchers compare
them on equal terms.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .._prompts import PromptSet, resolve_prompts
from ..compaction._hooks import NO_HOOKS, BeforeCompact, SessionHooks
from ..compaction._prepare import CompactionPreparation, prepare_compaction
from ..compaction._result import CompactionResult
from ..compaction._settings import CompactionSettings
from ..llm._summarizer import Summarizer
from ..session._session import Session
from ..tokens._counter import TokenCounter
from ._context import CompactionContext as CompactionContext  # re-exported: its old home
from ._context import StrategyUnavailable as StrategyUnavailable  # re-exported: its old home


@dataclass(frozen=True)
class Strategy:
    """Base of every strategy. Subclasses are frozen dataclasses whose fields are their
    parameters, and implement `run`.

    Class attributes:
        name: The registry name.
        needs_summarizer: True for strategies that call a model.
        needs_preparation: True when the strategy works on the engine's cut (summaries,
            archives); False for strategies that rewrite the session themselves (masking).
    """

    name: ClassVar[str] = ""
    needs_summarizer: ClassVar[bool] = False
    needs_preparation: ClassVar[bool] = True

    def requires_summarizer(self) -> bool:
        """Whether this value needs a model endpoint from the caller (the class default,
        `needs_summarizer`, unless its parameters configure one themselves)."""
        return self.needs_summarizer

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """Compact: return a result, or None when there is nothing to do."""
        raise NotImplementedError

    @property
    def params(self) -> dict[str, Any]:
        """The strategy's parameters (its dataclass fields)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @property
    def changed_params(self) -> dict[str, Any]:
        """The parameters whose values differ from the strategy's defaults."""
        changed: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.default is not dataclasses.MISSING:
                default: Any = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            else:
                default = dataclasses.MISSING
            value = getattr(self, f.name)
            if value != default:
                changed[f.name] = value
        return changed

    @property
    def label(self) -> str:
        """The strategy's label (`strategy_label`) from the parameters that differ from the
        defaults, e.g. `observation-masking(keep_turns=3)`."""
        return strategy_label(self.name, self.changed_params)


def strategy_label(name: str, params: Mapping[str, Any] | None = None) -> str:
    """The one label of a strategy in replay and bench tables, plots and widgets: `name`, or
    `name(k=v, ...)` for the given (non-default) parameters, strings quoted."""
    if not params:
        return str(name)
    inner = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in params.items())
    return f"{name}({inner})"


_REGISTRY: dict[str, type[Strategy]] = {}


def register(cls: type[Strategy]) -> type[Strategy]:
    """Class decorator: add a strategy to the registry under `cls.name`."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"strategy name {cls.name!r} is already registered")
    _REGISTRY[cls.name] = cls
    return cls


def available() -> tuple[str, ...]:
    """Names of every registered strategy, sorted. (Importing `musepi_lab.strategies`,
    which any import of this module does first, imports and so registers every built-in.)"""
    return tuple(sorted(_REGISTRY))


def get(name: str | Strategy, **params: Any) -> Strategy:
    """A strategy by name with parameters (or a strategy value, returned as is).

    Raises:
        KeyError: No strategy has that name.
        TypeError: A parameter the strategy does not take.
    """
    if isinstance(name, Strategy):
        return dataclasses.replace(name, **params) if params else name
    try:
        cls = _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown strategy {name!r}; available: {', '.join(available())}") from None
    return cls(**params)


def strategy_type(name: str) -> type[Strategy]:
    """The class registered under a name."""
    return _REGISTRY[name]


def compact(
    session: Session,
    strategy: str | Strategy,
    *,
    settings: CompactionSettings | None = None,
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    prompts: PromptSet | str | None = None,
    leaf_id: str | None = None,
    custom_instructions: str | None = None,
    clock: Callable[[], float] = time.perf_counter,
    hooks: SessionHooks | None = None,
    **params: Any,
) -> CompactionResult | None:
    """Run one strategy on a session.

    Args:
        session: The session (not changed).
        strategy: A registry name or a strategy value.
        settings: Compaction settings (default: MusePi's).
        counter: Token counter (default: the profile's estimator).
        summarizer: The LLM seam for strategies that call a model.
        prompts: A prompt set or a folder of prompts (default: the project's).
        leaf_id: The leaf whose path is compacted.
        custom_instructions: Extra focus for the summarizer.
        clock: Timer used for `latency_s` (injected in tests).
        hooks: The seed's touchpoints: `session_before_compact` (cancel, or supply the
            summary: no strategy runs and the result is `from_extension`),
            `session_compacting` (prompt and context of the LLM summary) and
            `session_compact` (told the result).
        **params: Strategy parameters when `strategy` is a name.

    Returns:
        The result (apply it with `result.apply(session)`), or None when the strategy
        has nothing to do (e.g. the whole path fits the keep budget) or a hook cancelled.
    """
    strat = get(strategy, **params)
    settings = settings or CompactionSettings.musepi()
    counter = counter or TokenCounter.for_profile(settings.profile)
    preparation = prepare_compaction(
        session,
        settings,
        counter,
        leaf_id=leaf_id,
        custom_instructions=custom_instructions,
    )
    hooks = hooks or NO_HOOKS
    before = (
        hooks.session_before_compact(preparation)
        if preparation is not None and hooks.session_before_compact
        else None
    )
    if before is not None and before.cancel:
        return None
    compacting = (
        hooks.session_compacting(preparation)
        if preparation is not None and hooks.session_compacting
        else None
    )
    ctx = CompactionContext(
        session=session,
        preparation=preparation,
        settings=settings,
        counter=counter,
        summarizer=summarizer,
        prompts=resolve_prompts(prompts),
        leaf_id=leaf_id,
        compacting=compacting,
    )
    measured = _run_measured(strat, ctx, before, clock)
    if measured is not None and hooks.session_compact:
        hooks.session_compact(measured)
    return measured


def _run_measured(
    strat: Strategy,
    ctx: CompactionContext,
    before: BeforeCompact | None,
    clock: Callable[[], float],
) -> CompactionResult | None:
    """The hook's supplied summary, else one run of the strategy; measured, timed by `clock`.

    None when the strategy has nothing to do (or cannot run without a preparation).
    """
    preparation = ctx.preparation
    if preparation is not None and before is not None and before.summary is not None:
        started = clock()
        result: CompactionResult | None = supplied_result(preparation, before)
    else:
        if strat.requires_summarizer():
            ctx.require_summarizer(strat.name)
        if strat.needs_preparation and preparation is None:
            return None
        started = clock()
        result = strat.run(ctx)
    if result is None:
        return None
    return _measured(result, strat, ctx, ctx.session, ctx.leaf_id, clock() - started)


def supplied_result(preparation: CompactionPreparation, answer: BeforeCompact) -> CompactionResult:
    """The result of a summary an extension supplied (`session_before_compact`): the
    preparation's cut unless the answer names another, marked `from_extension` (pi writes
    `fromHook: true`, MusePi `fromExtension: true`)."""
    fields: dict[str, Any] = {"from_extension": True}
    if answer.first_kept_entry_id is not None:
        fields["first_kept_entry_id"] = answer.first_kept_entry_id
    if answer.details is not None:
        fields["details"] = answer.details
    return CompactionResult.from_preparation(preparation, str(answer.summary), **fields)


def _measured(
    result: CompactionResult,
    strat: Strategy,
    ctx: CompactionContext,
    session: Session,
    leaf_id: str | None,
    elapsed: float,
) -> CompactionResult:
    # Every strategy is measured here and only here: the rebuilt context before and after,
    # counted by `_context_size` with the run's counter. Whatever a strategy put in
    # `tokens_after` is replaced.
    from ._context_size import applied_context_tokens, context_tokens

    params = {**(result.params or {}), **_jsonable(strat.params)}
    extra: dict[str, Any] = {
        "strategy": strat.name,
        "params": params,
        "context_tokens_before": context_tokens(session, ctx, leaf_id),
        "tokens_after": applied_context_tokens(result, ctx),
    }
    if not result.latency_s:
        extra["latency_s"] = elapsed
    return result.copy_with(**extra)


def _jsonable(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in params.items()}
