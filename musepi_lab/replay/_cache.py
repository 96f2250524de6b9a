"""Provider prompt-cache models: what one request reads from cache, writes to it, and pays.

Three models, chosen per request from the reply's recorded provider/API (overridable):

- `anthropic`: explicit breakpoints on the last message (as pi and Claude Code place them),
  so a request reads the previous request's whole prompt when that prefix is unchanged and
  still alive, and writes the rest. The cache lives 5 minutes after its last use (1 hour
  with `anthropic-1h`); a model change or a changed prefix (a compaction) invalidates it,
  and so does a changed thinking level (Anthropic: changing the thinking parameters
  invalidates the message cache).
  Writes are billed at their own price (`cache_write`, `cache_write_1h`).
- `openai`: automatic prefix caching; prefixes of at least 1,024 tokens are cached in
  128-token blocks, writes cost nothing extra (the uncached part is billed as input), and
  an idle cache is evicted after 5 to 10 minutes (`OPENAI_TTL_SECONDS`, fitted).
- `neutral`: the first wave's model: the previous prompt is always cached, the rest is
  written, nothing expires. Used when the provider is unknown.

What the model sees: the simulated context (the counter's estimate, scaled to the
provider's tokenizer by a fitted ratio), the system prompt and tools (a fitted estimate
per harness version), the recorded timestamps and the provider. Recorded usage is never an
input of a replay: the free parameters are fitted on the train split of the corpus
(`replay.calibrate`, values in `_fitted`) and judged on the other (`replay.judge_session`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..metrics._metrics import common_prefix_length
from ..metrics._prices import prices_for
from ..session._messages import entry_to_message
from ..session._model import Entry
from ..tokens._estimate import estimate_tokens_musepi
from . import _fitted
from ._billing import Bill

ANTHROPIC_TTL_SECONDS = 300.0
"""Anthropic's default cache lifetime after last use (5 minutes)."""

ANTHROPIC_1H_TTL_SECONDS = 3600.0
"""Anthropic's optional 1-hour cache lifetime."""

OPENAI_TTL_SECONDS: float = _fitted.OPENAI_TTL_SECONDS
"""OpenAI evicts an idle prefix after 5 to 10 minutes; which one is fitted
(`replay.calibrate`, on the train split of `replay.CALIBRATION_SPLIT`)."""

OPENAI_BLOCK = 128
"""OpenAI caches prefixes in 128-token increments."""

MIN_CACHED_PREFIX = 1024
"""Shortest cacheable prefix for both providers (Sonnet/Opus-class and GPT models)."""

TOKENIZER_RATIO: Mapping[str, float] = _fitted.TOKEN_RATIO
"""Provider tokens per billed-estimate token (`billed_message_tokens`, ~4 bytes a token),
per tokenizer family, as shipped (`DEFAULT_CALIBRATION`).

Anthropic's tokenizer is not public and OpenAI's o200k_base is only roughly tracked by
bytes/4, so both are fitted (`replay.calibrate`): the slope of one weighted least-squares
line per family of recorded prompt tokens against the billed estimate of the context, with
one intercept (the system prompt, `SYSTEM_PROMPT_TOKENS`) per harness version, over the
train split's requests before any recorded compaction. Per session the ratio still varies
(issue 10 measured 1.10 to 1.88 for Anthropic): its spread is `CacheModel.ratio_spread`.
"""

SYSTEM_PROMPT_TOKENS: tuple[tuple[str, tuple[int, ...], int], ...] = _fitted.SYSTEM_PROMPT_TOKENS
"""System prompt plus tool definitions, in provider tokens: `(harness, from version,
tokens)`, the first row whose harness matches and whose version the session's is at least.

None of the corpus formats records them, so each is fitted (`replay.calibrate`): the
intercept of the token-ratio line of the harness's version among the train split's
sessions (Codex's redacted instructions counted from their length). Other harnesses: 0.
"""

WARM_PREFIX_TOKENS: tuple[tuple[str, tuple[int, ...], int], ...] = _fitted.WARM_PREFIX_TOKENS
"""The harness's static prompt prefix that the provider already holds when a session
starts, in provider tokens: `(harness, from version, tokens)`, selected as
`SYSTEM_PROMPT_TOKENS`.

Claude Code sends the same tool definitions and fixed system text, behind a cache
breakpoint, in every session of a version, so its sessions find that prefix cached by the
sessions (and side requests) before them. Fitted (`replay.calibrate`): the median, over the
train split's sessions of the harness version, of the first request's recorded cache read
(issue 10 saw 17,842 in three 2.1.39 sessions, 11,515 to 17,915 in 2.1.38, 4,734 and
14,874 in 1.0.98). A request reads at least this much, whatever the state of the
conversation's own cache. Harness versions whose first requests read nothing: no row.
"""

SPLIT_REPLY_HARNESSES: frozenset[str] = frozenset({"codex"})
"""Harnesses that record each output item of one response (reasoning, message, tool call)
as its own assistant record: consecutive assistant entries there are one request."""

ENCRYPTED_REASONING_OVERHEAD = 1000
"""Characters of an encrypted reasoning item (`thinkingSignature` of an OpenAI reply) that
carry no reasoning: the length of an item whose reply recorded no reasoning tokens."""

ENCRYPTED_CHARS_PER_REASONING_TOKEN = 6.0
"""Characters of encrypted reasoning per hidden reasoning token.

OpenAI bills the reasoning it hides as output, and returns it only encrypted (base64 of
the ciphertext, so about 4/3 of the reasoning text's bytes). Declared, fitted across the
three Codex corpus sessions (318 requests; redacted items counted from their `len=`): a
least-squares line of the recorded `reasoning_output_tokens` against the length of the
request's encrypted reasoning crosses zero at 956 characters with 6.07 characters a token
(per session 5.9 to 6.7); 1,000 and 6.0 predict 79.3k of the 79.5k recorded tokens.
"""

CACHE_MODELS: tuple[str, ...] = ("anthropic", "anthropic-1h", "openai", "neutral")
"""The names `replay(cache=...)` accepts, plus "auto" (from each reply's provider)."""

_REDACTED = re.compile(r"\[REDACTED_[A-Z_]+ len=(\d+)[^\]]*\]")


@dataclass(frozen=True, slots=True)
class CacheModel:
    """How one provider caches and bills a prompt.

    Attributes:
        name: One of `CACHE_MODELS`.
        provider: The tokenizer family for `TOKENIZER_RATIO` ("anthropic", "openai",
            "neutral").
        ttl_seconds: Lifetime of a cached prefix after its last use; None: forever.
        bills_writes: Whether writes have their own price (else the uncached part is
            billed as plain input and nothing is "written").
        write_price: The price key of a write (`cache_write` or `cache_write_1h`).
        block: Cached prefixes are whole multiples of this many tokens.
        min_prefix: Shortest prefix that is cached at all.
        token_ratio: Provider tokens per billed-estimate token (`TOKENIZER_RATIO`): the
            prior of a stream's own ratio (`_own`).
        ratio_spread: Scale of the natural log of a session's own token ratio around
            `token_ratio` (fitted between sessions; 0: exact).
        system_spread: Standard deviation of a session's own system prompt around its
            harness version's (tokens, fitted between sessions).
        noise: Relative error of one request's prompt around its session's line (a
            robust scale, fitted within sessions).
        noise_correlation: The lag-1 autocorrelation of those errors (consecutive
            requests err alike: a context estimate is off by what the context holds).
        miss_rate: Share of the requests this model reads mostly from cache that the
            provider nevertheless misses, which no documented rule predicts (fitted;
            the replay bills none of them, `ReplayResult.cost` adds their expectation).
        miss_concentration: How alike sessions' own miss rates are: the beta prior of a
            session's rate has mean `miss_rate` and this concentration (0: every session
            misses at `miss_rate` exactly), updated by the session's own requests.
        key_concentration: How alike the miss rates of different harness keys are
            (`_calibrated.Calibration.event_rates`): the concentration of the beta prior
            of a stream whose key the fit has no row for, centred on `miss_rate` (a
            harness never seen misses like the family only as closely as the seen
            harnesses do; 0: `miss_concentration`).
        hit_rate: Share of the requests whose cache the rules let expire that the
            provider served from cache anyway (fitted; same prior form, same
            concentration).
        memory: The weight a recorded request keeps in a causal estimate of the line per
            later request (`_own.Prior.memory`; fitted).
        version_spread: How far (in log) a harness version's system prompt is from the
            nearest fitted version's: a stream whose own version has no row takes that
            one's, this much less sure (fitted between consecutive fitted versions).
    """

    name: str
    provider: str
    ttl_seconds: float | None
    bills_writes: bool
    write_price: str
    block: int
    min_prefix: int
    token_ratio: float = 1.0
    ratio_spread: float = 0.0
    system_spread: float = 0.0
    noise: float = 0.0
    noise_correlation: float = 0.0
    miss_rate: float = 0.0
    miss_concentration: float = 0.0
    key_concentration: float = 0.0
    hit_rate: float = 0.0
    memory: float = 1.0
    version_spread: float = 0.0


def _fitted_model(model: CacheModel) -> CacheModel:
    def fitted(name: str) -> float:
        return float(getattr(_fitted, name, {}).get(model.provider, 0.0))

    return dataclasses.replace(
        model,
        token_ratio=_fitted.TOKEN_RATIO.get(model.provider, 1.0),
        ratio_spread=fitted("RATIO_SPREAD"),
        system_spread=fitted("SYSTEM_SPREAD"),
        noise=fitted("NOISE"),
        noise_correlation=fitted("NOISE_CORRELATION"),
        miss_rate=fitted("MISS_RATE"),
        miss_concentration=fitted("MISS_CONCENTRATION"),
        key_concentration=fitted("KEY_CONCENTRATION"),
        hit_rate=fitted("HIT_RATE"),
        memory=float(getattr(_fitted, "MEMORY", {}).get(model.provider, 1.0)),
        version_spread=fitted("VERSION_SPREAD"),
    )


ANTHROPIC = _fitted_model(
    CacheModel(
        "anthropic", "anthropic", ANTHROPIC_TTL_SECONDS, True, "cache_write", 1, MIN_CACHED_PREFIX
    )
)
ANTHROPIC_1H = _fitted_model(
    CacheModel(
        "anthropic-1h",
        "anthropic",
        ANTHROPIC_1H_TTL_SECONDS,
        True,
        "cache_write_1h",
        1,
        MIN_CACHED_PREFIX,
    )
)
OPENAI = _fitted_model(
    CacheModel(
        "openai", "openai", OPENAI_TTL_SECONDS, False, "input", OPENAI_BLOCK, MIN_CACHED_PREFIX
    )
)
NEUTRAL = _fitted_model(CacheModel("neutral", "neutral", None, True, "cache_write", 1, 0))

_BY_NAME = {m.name: m for m in (ANTHROPIC, ANTHROPIC_1H, OPENAI, NEUTRAL)}


@dataclass(frozen=True, slots=True)
class CacheState:
    """What the provider holds after a request.

    Attributes:
        prefix: Prompt tokens (provider tokens) of the last request, now cached.
        last_ms: When the cache was last used (ms), or None without timestamps.
        model: The model id that holds it (a different model has its own cache).
        thinking: The thinking level of that request.
        ttl_seconds: The lifetime it was written with (None: the cache model's own).
    """

    prefix: int
    last_ms: float | None
    model: str
    thinking: str = "off"
    ttl_seconds: float | None = None


def cache_model(name: str) -> CacheModel:
    """The cache model of a name in `CACHE_MODELS`.

    Raises:
        ValueError: An unknown name.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown cache model {name!r}; expected one of {CACHE_MODELS}") from None


def cache_model_for(message: Mapping[str, Any]) -> CacheModel:
    """The cache model of a recorded reply, from its `provider` and `api`."""
    provider = str(message.get("provider") or "").lower()
    api = str(message.get("api") or "").lower()
    if "anthropic" in provider or api.startswith("anthropic"):
        return ANTHROPIC
    if "openai" in provider or api.startswith("openai"):
        return OPENAI
    return NEUTRAL


def _version(text: object) -> tuple[int, ...]:
    parts = re.findall(r"\d+", str(text or ""))
    return tuple(int(p) for p in parts[:3])


def harness_version(header: Mapping[str, Any]) -> tuple[str, tuple[int, ...]]:
    """A session header's harness (`sourceFormat`, "pi" when absent) and version
    (`sourceVersion` / `cliVersion`, as up to three numbers; () when absent)."""
    harness = str(header.get("sourceFormat") or "pi")
    return harness, _version(header.get("sourceVersion") or header.get("cliVersion"))


STREAM_SUFFIX: Mapping[str, str] = {"sidechain": ":subagent", "subagent": ":subagent"}
"""What a stream's kind adds to its harness name in the harness tables: a subagent (inline
sidechain or linked transcript) has its own system prompt and tools, not the main one's."""


def stream_harness(header: Mapping[str, Any]) -> str:
    """The harness name a stream's prefix is fitted and looked up under: its header's
    harness (`harness_version`), plus `:subagent` for a subagent's stream (its header's
    `subagentKind` is `subagent` or `sidechain`)."""
    harness, _ = harness_version(header)
    return harness + STREAM_SUFFIX.get(str(header.get("subagentKind") or ""), "")


def table_key(header: Mapping[str, Any], family: str | None = None) -> str:
    """A harness table's row key for a stream: `stream_harness`, then `@family` (a system
    prompt is counted in its provider's tokens, so pi on Anthropic and pi on OpenAI have
    rows of their own)."""
    harness = stream_harness(header)
    return f"{harness}@{family}" if family else harness


def table_row(
    table: Sequence[tuple[str, tuple[int, ...], int]],
    header: Mapping[str, Any],
    family: str | None = None,
) -> tuple[int, bool]:
    """The tokens of a `(key, version, tokens)` table (`SYSTEM_PROMPT_TOKENS`,
    `WARM_PREFIX_TOKENS`) for a stream's header, and whether the row is the stream's own
    (its key with its family, and its version's major.minor).

    The row is the first whose key is, in this order, the stream's `table_key` with its
    family, without one, or with another family (the same harness and stream kind counted
    in another tokenizer is nearer than nothing), and whose version the stream's is at
    least; else (a version older than any fitted) that key's oldest row; `(0, False)`
    when no key matches."""
    _, version = harness_version(header)
    harness = stream_harness(header)
    own = table_key(header, family) if family else harness
    keys = [own, harness] if family else [harness]
    keys += sorted({name for name, _, _ in table if name.split("@")[0] == harness} - set(keys))
    for key in keys:
        rows = [(since, tokens) for name, since, tokens in table if name == key]
        if not rows:
            continue
        reached = [(since, tokens) for since, tokens in rows if version >= since]
        since, tokens = reached[0] if reached else rows[-1]
        return tokens, key == own and tuple(since) == version[: len(since)] and bool(since)
    return 0, False


def declared_tokens(
    table: Sequence[tuple[str, tuple[int, ...], int]],
    header: Mapping[str, Any],
    family: str | None = None,
) -> int:
    """The tokens of `table_row`."""
    return table_row(table, header, family)[0]


def system_prompt_tokens(header: Mapping[str, Any]) -> int:
    """The declared system prompt and tools estimate for a session header (its
    `sourceFormat` and `sourceVersion` / `cliVersion`; 0 when unknown)."""
    return declared_tokens(SYSTEM_PROMPT_TOKENS, header)


def warm_prefix_tokens(header: Mapping[str, Any]) -> int:
    """The declared static prefix a session of this harness finds already cached
    (`WARM_PREFIX_TOKENS`; 0 when unknown)."""
    return declared_tokens(WARM_PREFIX_TOKENS, header)


def billed_message_tokens(message: Mapping[str, Any] | None) -> int:
    """What a provider bills for one message, before `TOKENIZER_RATIO`: the MusePi
    estimate (UTF-8 bytes / 4 per fragment, images and frames at their fixed counts)
    without encrypted reasoning signatures (opaque data the provider does not bill as
    text), plus the length of redacted texts (`redacted_extra_tokens`)."""
    if message is None:
        return 0
    return estimate_tokens_musepi(message, exclude_encrypted_reasoning=True) + (
        redacted_extra_tokens(message)
    )


def billed_entry_tokens(entry: Entry) -> int:
    """`billed_message_tokens` of the message an entry contributes (0 for metadata)."""
    return billed_message_tokens(entry_to_message(entry))


def billed_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """`billed_message_tokens` summed over a rebuilt context, plus the hidden reasoning of
    its current turn (`current_turn_reasoning`)."""
    context = list(messages)
    return sum(billed_message_tokens(m) for m in context) + current_turn_reasoning(context)


def current_turn_reasoning(messages: Sequence[Mapping[str, Any]]) -> int:
    """`hidden_reasoning_tokens` of the replies after the context's last user message.

    Codex sends its encrypted reasoning items back with the history, and OpenAI counts
    those of the current turn as input (the reasoning of the tool-call loop under way) and
    drops those from before the last user message (OpenAI's reasoning guide). Checked on
    the Codex corpus session with its text: counted, the median request's prompt error
    falls from 10.6% to 1.5%.
    """
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return sum(hidden_reasoning_tokens(m) for m in messages[last_user + 1 :])


def billed_prefix(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> int:
    """`billed_tokens` of the longest common message prefix of two contexts (what a
    compaction leaves of the cached prompt, system prompt aside)."""
    return sum(billed_message_tokens(m) for m in before[: common_prefix_length(before, after)])


def hidden_reasoning_tokens(message: Mapping[str, Any] | None) -> int:
    """Output tokens of the reasoning a reply hid: each encrypted reasoning item
    (`thinkingSignature` of a `thinking` block, or a redacted marker's `len=`) beyond
    `ENCRYPTED_REASONING_OVERHEAD`, at `ENCRYPTED_CHARS_PER_REASONING_TOKEN`. Only OpenAI
    replies carry them; Anthropic's signatures are not the reasoning (0)."""
    if message is None or "openai" not in str(message.get("api") or message.get("provider")):
        return 0
    content = message.get("content")
    total = 0.0
    for block in content if isinstance(content, list) else ():
        signature = block.get("thinkingSignature") if isinstance(block, Mapping) else None
        if block.get("type") != "thinking" or not isinstance(signature, str):
            continue
        marker = _REDACTED.fullmatch(signature.strip())
        length = int(marker.group(1)) if marker else len(signature)
        total += max(0, length - ENCRYPTED_REASONING_OVERHEAD) / ENCRYPTED_CHARS_PER_REASONING_TOKEN
    return round(total)


def provider_tokens(estimate: int, model: CacheModel) -> int:
    """The counter's estimate in the provider's tokens (the model's `token_ratio`)."""
    return round(estimate * model.token_ratio)


def redacted_extra_tokens(message: Mapping[str, Any] | None, chars_per_token: float = 4.0) -> int:
    """Tokens a redacted text had beyond its marker: `[REDACTED_TEXT len=N …]` (or
    `REDACTED_OUTPUT`, …) stands for N characters, counted as N / `chars_per_token`, less
    the marker's own length. Image blocks are skipped: an image is billed per image, not
    by the length of its redacted data."""
    if message is None:
        return 0
    content = message.get("content")
    blocks = content if isinstance(content, list) else [content]
    extra = 0.0
    for block in blocks:
        if isinstance(block, Mapping) and block.get("type") == "image":
            continue
        raw = str(block)
        if "[REDACTED_" not in raw:
            continue
        for match in _REDACTED.finditer(raw):
            extra += (int(match.group(1)) - len(match.group(0))) / chars_per_token
    return max(0, math.ceil(extra))


def is_alive(
    model: CacheModel,
    cache: CacheState | None,
    *,
    now_ms: float | None,
    model_id: str,
    thinking: str = "off",
) -> bool:
    """Whether a cached prefix is still there for this request."""
    if cache is None or cache.model != model_id:
        return False
    if model.provider == "anthropic" and cache.thinking != thinking:
        return False
    ttl = cache.ttl_seconds if cache.ttl_seconds is not None else model.ttl_seconds
    if ttl is None or now_ms is None or cache.last_ms is None:
        return True
    return now_ms - cache.last_ms <= ttl * 1000


def cached_tokens(model: CacheModel, reusable: int) -> int:
    """Tokens of a reusable prefix the provider serves from cache (blocks, minimum)."""
    if reusable < model.min_prefix:
        return 0
    return reusable - reusable % model.block


def write_lifetime(model: CacheModel, one_hour: float | None) -> float | None:
    """The lifetime a request's writes get: Anthropic's 1 hour when most of its recorded
    writes were 1-hour writes (`one_hour` is their share), else the model's own."""
    if model.provider == "anthropic" and one_hour is not None and one_hour >= 0.5:
        return ANTHROPIC_1H_TTL_SECONDS
    return model.ttl_seconds


def write_price(model: CacheModel, prices: Mapping[str, float], one_hour: float | None) -> float:
    """USD per million written tokens: for a model that bills writes, the 5-minute and
    1-hour write prices mixed at the recorded 1-hour share (`one_hour`; None: the model's
    own `write_price`); for one that does not, the input price."""
    if not model.bills_writes:
        return prices["input"]
    if one_hour is None:
        return prices.get(model.write_price, prices["cache_write"])
    long = prices.get("cache_write_1h", prices["cache_write"])
    return (1.0 - one_hour) * prices["cache_write"] + one_hour * long


def bill_cached(
    model: CacheModel,
    cache: CacheState | None,
    *,
    prompt: int,
    reusable: int | None,
    now_ms: float | None,
    model_id: str,
    output_tokens: int,
    prices: Mapping[str, float],
    warm: int = 0,
    thinking: str = "off",
    one_hour: float | None = None,
) -> tuple[Bill, CacheState]:
    """Bill one request under a cache model and return what is cached after it.

    Args:
        model: The provider's cache model.
        cache: What was cached after the previous request (None for the first).
        prompt: Prompt tokens of this request (provider tokens, system prompt included).
        reusable: Tokens of the cached prefix this request shares unchanged (the previous
            prompt, or what a compaction kept of it); None: the previous prompt.
        now_ms: This request's timestamp (ms), or None.
        model_id: The model the request went to.
        output_tokens: Tokens of the reply.
        prices: USD per million tokens (`input`, `cache_write`, `cache_write_1h`,
            `cache_read`, `output`).
        warm: Tokens of a static prefix the provider holds whatever this session did
            (`warm_prefix_tokens`); read on every request.
        thinking: The thinking level in force for this request.
        one_hour: The share of this request's writes made with the 1-hour lifetime (the
            recorded split); None: the model's own price and lifetime. At least half
            makes the cached prefix live an hour (`write_lifetime`).
    """
    shared = min(prompt, warm)
    alive = is_alive(model, cache, now_ms=now_ms, model_id=model_id, thinking=thinking)
    if alive and cache is not None:
        shared = max(shared, min(prompt, cache.prefix if reusable is None else reusable))
    read = cached_tokens(model, shared)
    rest = prompt - read
    write, uncached = (rest, 0) if model.bills_writes else (0, rest)
    long = round(write * one_hour) if one_hour is not None and model.bills_writes else 0
    if one_hour is None and model.write_price == "cache_write_1h":
        long = write
    cost = (
        uncached * prices["input"]
        + read * prices["cache_read"]
        + write * write_price(model, prices, one_hour)
        + output_tokens * prices["output"]
    ) / 1e6
    ttl = write_lifetime(model, one_hour)
    if not write and cache is not None and alive:
        ttl = cache.ttl_seconds  # a read refreshes the lifetime the prefix was written with
    return Bill(read, write, output_tokens, cost, uncached, long), CacheState(
        prompt, now_ms, model_id, thinking, ttl
    )


def request_prices(
    message: Mapping[str, Any],
    override: Mapping[str, float] | None,
    rates: Mapping[str, Mapping[str, float]] | None = None,
) -> Mapping[str, float]:
    """Prices of a request: the reply's model's (`prices_for`), under the prices the
    session's own recorded costs imply for that model (`_billing.recorded_rates`: what the
    harness charged is exact where it recorded it), overridden by `override`."""
    model = str(message.get("model") or "")
    base = {**prices_for(model), **((rates or {}).get(model) or {})}
    return {**base, **override} if override else base
