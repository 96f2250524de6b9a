"""Billing one walked stream: each `RequestSpec` under its cache model, the stream's harness
prefix (system prompt, warm prefix) and a line per request (`_own.Terms`), in order, the
cache carried from request to request.

What the record says is used where it says it (issue 27): a reply that carries usage is
billed its recorded output tokens (hidden reasoning included), whatever the strategy, since
under every strategy the reply is the recorded one; only replies without usage get the
estimate (their billed text at the stream's ratio plus the hidden reasoning counted from its
encrypted length), and `output_recorded` says which. A request's writes take the recorded
5-minute/1-hour split of its reply (`cacheWrite1h`): priced at the mix, and the cached prefix
lives an hour when most of them were 1-hour writes; a request whose reply recorded no writes
keeps the stream's last recorded split.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ._billing import Bill, RequestSpec
from ._cache import CacheModel, CacheState, bill_cached, cached_tokens, is_alive, write_price
from ._calibrated import Calibration
from ._own import Terms


class Billed(NamedTuple):
    """One request billed, with what the bill's simulation needs (`_uncertainty`).

    Attributes:
        bill: Its tokens and USD.
        cache_model: The cache model's name.
        prompt: Prompt tokens (system prompt included).
        conversation: The prompt's conversation part in billed units (`RequestSpec`).
        shared: The conversation part of the prefix it read from its own cache, in billed
            units, or None when it read nothing beyond the warm prefix.
        warm: The warm prefix it read whatever its cache held.
        expired: Tokens a cache still alive would have served beyond what it read (its
            lifetime ran out, by the documented rules), or, at a stream's first request
            (no cache of its own), its system prompt beyond what it read (another
            stream's cache, of the same prefix, may hold it: the user's previous session,
            a sibling subagent): what an unpredicted hit saves.
        output_recorded: The output tokens are the recorded ones (else estimated).
        one_hour: The 1-hour share its writes were priced at (None: the model's own).
        price_input: USD per million uncached input tokens.
        price_read: USD per million cache reads.
        price_rest: USD per million prompt tokens not read (a write, or input for OpenAI).
        price_output: USD per million output tokens.
        refused: The provider answered with an error (billed nothing).
    """

    bill: Bill
    cache_model: str
    prompt: int
    conversation: int
    shared: int | None
    warm: int
    expired: int
    output_recorded: bool
    one_hour: float | None
    price_input: float
    price_read: float
    price_rest: float
    price_output: float
    refused: bool = False

    @property
    def hit(self) -> bool:
        """Whether most of its prompt was read from cache."""
        return self.prompt > 0 and self.bill.cache_read * 2 >= self.prompt


def bill_stream(
    specs: Sequence[RequestSpec],
    terms: Sequence[Terms],
    calibration: Calibration,
    *,
    warm: int,
    follow_record: bool = True,
    initial: CacheState | None = None,
) -> tuple[list[Billed], list[CacheState | None]]:
    """Bill a stream's requests in order.

    Args:
        specs: The walk's requests.
        terms: One line per request (system prompt, token ratio).
        calibration: The cache models' parameters (TTL, blocks).
        warm: The stream's warm prefix (provider tokens).
        follow_record: Take each request's 1-hour write share from its recorded usage
            (the `auto` cache model); False: the chosen cache model's own.
        initial: What the provider holds before the first request (a compaction run
            starts from the main conversation's cache).

    Returns:
        The billed requests and the cache after each.
    """
    out: list[Billed] = []
    states: list[CacheState | None] = []
    cache = initial
    share: float | None = None
    for spec, term in zip(specs, terms, strict=True):
        model = calibration.model(spec.cache)
        if follow_record and model.provider == "anthropic" and spec.recorded is not None:
            share = spec.recorded.one_hour_share if spec.recorded.cache_write else share
        one_hour = share if follow_record and model.provider == "anthropic" else None
        billed, after = _bill_one(spec, term, model, cache, warm, one_hour)
        out.append(billed)
        cache = after
        states.append(cache)
    return out, states


def _bill_one(
    spec: RequestSpec,
    term: Terms,
    model: CacheModel,
    cache: CacheState | None,
    warm: int,
    one_hour: float | None,
) -> tuple[Billed, CacheState | None]:
    """One request billed on its line, and the cache after it (a refused request leaves
    it as it was)."""
    prices = spec.prices
    if spec.refused:
        empty = Bill(0, 0, 0, 0.0, 0)
        return _billed(spec, model.name, empty, 0, None, 0, 0, one_hour, prices), cache
    system = max(0, round(term.system))
    ratio = max(0.0, term.ratio)
    prompt = max(0, system + round(ratio * spec.conversation))
    reusable = None if spec.reusable is None else system + round(ratio * spec.reusable)
    output, recorded = _output(spec, ratio)
    alive = is_alive(
        model, cache, now_ms=spec.now_ms, model_id=spec.model_id, thinking=spec.thinking
    )
    bill, after = bill_cached(
        model,
        cache,
        prompt=prompt,
        reusable=reusable,
        now_ms=spec.now_ms,
        model_id=spec.model_id,
        output_tokens=output,
        prices=prices,
        warm=warm,
        thinking=spec.thinking,
        one_hour=one_hour,
    )
    billed = Billed(
        bill,
        model.name,
        prompt,
        spec.conversation,
        _shared_units(spec, cache, alive, warm, system, ratio),
        min(prompt, warm),
        _expired(model, cache, spec, prompt, reusable, bill.cache_read, alive)
        if cache is not None
        else _unheld(model, min(prompt, system), bill.cache_read),
        recorded,
        one_hour,
        prices["input"],
        prices["cache_read"],
        write_price(model, prices, one_hour),
        prices["output"],
    )
    return billed, after


def _billed(
    spec: RequestSpec,
    name: str,
    bill: Bill,
    prompt: int,
    shared: int | None,
    warm: int,
    expired: int,
    one_hour: float | None,
    prices: Mapping[str, float],
) -> Billed:
    return Billed(
        bill,
        name,
        prompt,
        spec.conversation,
        shared,
        warm,
        expired,
        spec.recorded is not None,
        one_hour,
        prices["input"],
        prices["cache_read"],
        prices["input"],
        prices["output"],
        refused=True,
    )


def _output(spec: RequestSpec, ratio: float) -> tuple[int, bool]:
    """The reply's output tokens: the recorded ones where it carries usage, else its text
    at the stream's ratio plus its hidden reasoning."""
    if spec.recorded is not None:
        return spec.recorded.output, True
    return round(ratio * spec.output_estimate) + spec.hidden, False


def _shared_units(
    spec: RequestSpec,
    cache: CacheState | None,
    alive: bool,
    warm: int,
    system: int,
    ratio: float,
) -> int | None:
    """The conversation part (billed units) of the prefix read from the stream's own cache,
    or None when only the warm prefix (or nothing) was read."""
    if not alive or cache is None:
        return None
    if spec.reusable is not None:
        return min(spec.conversation, spec.reusable)
    previous = (cache.prefix - system) / ratio if ratio > 0 else 0.0
    if cache.prefix <= warm:
        return None
    return max(0, min(spec.conversation, round(previous)))


def _unheld(model: CacheModel, system: int, read: int) -> int:
    """A stream's first request: the tokens of its system prompt beyond what it read,
    which another stream's cache (the user's previous session, a sibling subagent) may
    hold, as the provider's cache is shared across requests with the same prefix."""
    return max(0, cached_tokens(model, system) - read)


def _expired(
    model: CacheModel,
    cache: CacheState | None,
    spec: RequestSpec,
    prompt: int,
    reusable: int | None,
    read: int,
    alive: bool,
) -> int:
    """Tokens the cache would have served had its lifetime not run out."""
    if alive or cache is None or cache.model != spec.model_id:
        return 0
    would = cached_tokens(model, min(prompt, cache.prefix if reusable is None else reusable))
    return max(0, would - read)
