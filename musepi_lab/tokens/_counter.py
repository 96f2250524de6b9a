"""`TokenCounter`: one token method, counts cached per entry."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..session._messages import entry_to_message
from ..session._model import Entry, entry_memo
from ._bpe import BPE_ENCODINGS, get_encoding
from ._estimate import (
    estimate_tokens_musepi,
    estimate_tokens_pi,
    extra_tokens,
    text_fragments,
    utf8_len,
    utf16_len,
)

if TYPE_CHECKING:
    import tiktoken

METHODS: tuple[str, ...] = ("pi", "musepi", *BPE_ENCODINGS)
DEFAULT_TOKEN_METHOD = "musepi"
"""The default everywhere a count is made without a counter: oh-my-pi's estimator."""


def token_method_for(profile: str) -> str:
    """The estimator the agent of `profile` uses: `pi` for pi, `musepi` otherwise."""
    return "pi" if profile == "pi" else DEFAULT_TOKEN_METHOD


# Below this many texts a thread pool costs more than it saves.
_BATCH_MIN_TEXTS = 16


def bpe_lengths(encoding: tiktoken.Encoding, texts: Sequence[str]) -> list[int]:
    """Token counts of texts with a BPE encoding (special tokens read as ordinary text).

    Many texts go through tiktoken's threaded `encode_ordinary_batch` in one call.
    """
    if len(texts) < _BATCH_MIN_TEXTS:
        encode = encoding.encode_ordinary
        return [len(encode(text)) for text in texts]
    return [len(ids) for ids in encoding.encode_ordinary_batch(list(texts))]


class TokenCounter:
    """Counts tokens of texts, messages and entries with one method.

    Methods: `pi` (UTF-16 chars/4, pi's estimator), `musepi` (UTF-8 bytes/4 per fragment,
    oh-my-pi's estimator), `o200k_base` and `cl100k_base` (tiktoken BPE, built offline
    from bundled rank files on first use). BPE methods count the fragments the `musepi`
    estimator counts (`text_fragments`), each with its real token count, plus the same
    fixed extras for images and snapcompact frames (`extra_tokens`).

    Entry counts are memoised on the entry itself, one per method, so every counter of the
    method, every preparation, strategy and replay shares them: an entry is counted once
    per method in its life. A subclass (which may count differently) keeps its own cache
    instead.
    """

    def __init__(self, method: str = DEFAULT_TOKEN_METHOD) -> None:
        if method not in METHODS:
            raise ValueError(f"unknown token method {method!r}; expected one of {METHODS}")
        self.method = method
        # None: the counts live in the entries' memo (shared); a dict: this counter's own.
        self._own_cache: dict[Entry, int] | None = None if type(self) is TokenCounter else {}

    @classmethod
    def for_profile(cls, profile: str) -> TokenCounter:
        """A counter with the estimator the agent of `profile` uses."""
        return cls(token_method_for(profile))

    def __repr__(self) -> str:
        return f"TokenCounter({self.method!r})"

    @property
    def is_bpe(self) -> bool:
        """True for the tiktoken methods."""
        return self.method in BPE_ENCODINGS

    @property
    def encoding(self) -> tiktoken.Encoding | None:
        """The tiktoken encoding of a BPE method (loaded on first use), else None."""
        return get_encoding(self.method) if self.is_bpe else None

    def count_text(self, text: str) -> int:
        """Tokens of a bare text."""
        if self.method == "pi":
            return -(-utf16_len(text) // 4)
        if self.method == "musepi":
            return (utf8_len(text) + 3) >> 2
        return len(get_encoding(self.method).encode_ordinary(text))

    def count_texts(self, texts: Iterable[str]) -> list[int]:
        """Tokens of each text; BPE methods encode them in one batch."""
        if self.is_bpe:
            return bpe_lengths(get_encoding(self.method), list(texts))
        return [self.count_text(text) for text in texts]

    def count_message(self, message: Mapping[str, Any]) -> int:
        """Tokens of one runtime message (role-aware, as the method's estimator)."""
        if self.method == "pi":
            return estimate_tokens_pi(message)
        if self.method == "musepi":
            return estimate_tokens_musepi(message)
        return self.count_messages([message])

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        """Sum of `count_message` over messages (BPE methods encode all in one batch)."""
        if not self.is_bpe:
            return sum(self.count_message(m) for m in messages)
        fragments: list[str] = []
        extra = 0
        for message in messages:
            fragments.extend(f for f in text_fragments(message) if f)
            extra += extra_tokens(message)
        return sum(bpe_lengths(get_encoding(self.method), fragments)) + extra

    def _cached(self, entry: Entry) -> int | None:
        own = self._own_cache
        if own is None:
            return entry_memo(entry).get(self.method)
        return own.get(entry)

    def _store(self, entry: Entry, count: int) -> None:
        own = self._own_cache
        if own is None:
            entry_memo(entry)[self.method] = count
        else:
            own[entry] = count

    def count_entry(self, entry: Entry) -> int:
        """Tokens of the runtime message an entry contributes (0 for metadata), cached."""
        cached = self._cached(entry)
        if cached is None:
            msg = entry_to_message(entry)
            cached = self.count_message(msg) if msg is not None else 0
            self._store(entry, cached)
        return cached

    def count_entries(self, entries: Iterable[Entry]) -> list[int]:
        """`count_entry` of each entry, in order; uncached entries are counted together.

        For BPE methods the fragments of every uncached entry go through one
        `encode_ordinary_batch` call, which is what makes counting a whole session fast.
        """
        if not self.is_bpe:
            if self._own_cache is not None:
                return [self.count_entry(entry) for entry in entries]
            return _heuristic_counts(entries, self.method)
        entries = list(entries)
        texts: list[str] = []
        spans: list[tuple[Entry, int, int, int]] = []
        pending: set[Entry] = set()
        for entry in entries:
            if entry in pending or self._cached(entry) is not None:
                continue
            pending.add(entry)
            msg = entry_to_message(entry)
            if msg is None:
                self._store(entry, 0)
                continue
            start = len(texts)
            texts.extend(f for f in text_fragments(msg) if f)
            spans.append((entry, start, len(texts), extra_tokens(msg)))
        if spans:
            lengths = bpe_lengths(get_encoding(self.method), texts)
            for entry, start, stop, extra in spans:
                self._store(entry, sum(lengths[start:stop]) + extra)
        return [self.count_entry(entry) for entry in entries]


def _heuristic_counts(entries: Iterable[Entry], method: str) -> list[int]:
    """`count_entry` of each entry for the `pi` or `musepi` estimator, through the entries'
    memo, in one loop (the hot path of a cold preparation)."""
    estimate = estimate_tokens_pi if method == "pi" else estimate_tokens_musepi
    counts: list[int] = []
    for entry in entries:
        memo = entry_memo(entry)
        count = memo.get(method)
        if count is None:
            msg = entry_to_message(entry)
            count = memo[method] = estimate(msg) if msg is not None else 0
        counts.append(count)
    return counts
