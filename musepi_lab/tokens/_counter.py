"""`TokenCounter`: one token method, counts cached per entry."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..session._messages import entry_to_message
from ..session._model import Entry
from ._estimate import estimate_tokens_musepi, estimate_tokens_pi, utf8_len, utf16_len

METHODS: tuple[str, ...] = ("pi", "musepi", "o200k_base", "cl100k_base")


class TokenCounter:
    """Counts tokens of texts, messages and entries with one method.

    Methods: `pi` (UTF-16 chars/4, pi's estimator), `musepi` (UTF-8 bytes/4 per fragment,
    oh-my-pi's estimator), `o200k_base` and `cl100k_base` (tiktoken BPE, offline).
    Entry counts are cached per entry object, so sweeps over budgets count once.
    """

    def __init__(self, method: str = "musepi") -> None:
        if method not in METHODS:
            raise ValueError(f"unknown token method {method!r}; expected one of {METHODS}")
        self.method = method
        self._entry_cache: dict[Entry, int] = {}

    def __repr__(self) -> str:
        return f"TokenCounter({self.method!r})"

    def count_text(self, text: str) -> int:
        """Tokens of a bare text."""
        if self.method == "pi":
            return -(-utf16_len(text) // 4)
        if self.method == "musepi":
            return (utf8_len(text) + 3) >> 2
        raise NotImplementedError("BPE methods arrive with the tokens module")

    def count_message(self, message: Mapping[str, Any]) -> int:
        """Tokens of one runtime message (role-aware, as the method's estimator)."""
        if self.method == "pi":
            return estimate_tokens_pi(message)
        if self.method == "musepi":
            return estimate_tokens_musepi(message)
        raise NotImplementedError("BPE methods arrive with the tokens module")

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        """Sum of `count_message` over messages."""
        return sum(self.count_message(m) for m in messages)

    def count_entry(self, entry: Entry) -> int:
        """Tokens of the runtime message an entry contributes (0 for metadata), cached."""
        cached = self._entry_cache.get(entry)
        if cached is None:
            msg = entry_to_message(entry)
            cached = self.count_message(msg) if msg is not None else 0
            self._entry_cache[entry] = cached
        return cached
