"""Finding many facts in one text with one pass: an Aho–Corasick automaton per fact set.

Scoring asks, for every benchmark cell, which of a session's facts occur in a context's
text. One substring scan per fact costs (facts × text length); an Aho–Corasick automaton
built once per fact set finds every fact in one pass over the text. `pyahocorasick` (C)
does the work; without it a substring scan per fact gives the same answers, slower.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

try:  # pragma: no cover - the fallback is exercised only where the wheel is missing
    import ahocorasick as _ahocorasick
except ImportError:  # pragma: no cover
    _ahocorasick = None

HAS_AHOCORASICK = _ahocorasick is not None
"""True when `pyahocorasick` is installed (else the per-fact scan is used)."""


class FactMatcher:
    """Finds which of a fixed set of strings occur in a text, in one pass.

    Args:
        needles: The strings to look for (empty strings are never found).
        backend: `"auto"` (Aho–Corasick when installed), `"ahocorasick"` or `"scan"`.
    """

    __slots__ = ("_automaton", "needles")

    def __init__(self, needles: Iterable[str], *, backend: str = "auto") -> None:
        self.needles: tuple[str, ...] = tuple(dict.fromkeys(n for n in needles if n))
        use_ac = backend == "ahocorasick" or (backend == "auto" and HAS_AHOCORASICK)
        if backend not in ("auto", "ahocorasick", "scan"):
            raise ValueError(f"unknown backend {backend!r}")
        if use_ac and _ahocorasick is None:
            raise ImportError("pyahocorasick is not installed")
        self._automaton: Any = None
        if use_ac and self.needles:
            automaton = _ahocorasick.Automaton()
            for needle in self.needles:
                automaton.add_word(needle, needle)
            automaton.make_automaton()
            self._automaton = automaton

    def found(self, text: str) -> frozenset[str]:
        """The needles that occur in `text` (overlapping and nested ones included)."""
        if not self.needles or not text:
            return frozenset()
        if self._automaton is None:
            return frozenset(n for n in self.needles if n in text)
        return frozenset(value for _, value in self._automaton.iter(text))


@lru_cache(maxsize=64)
def _cached_matcher(needles: tuple[str, ...]) -> FactMatcher:
    return FactMatcher(needles)


def matcher_for(needles: Sequence[str]) -> FactMatcher:
    """A matcher for `needles`, built once per distinct needle tuple (kept in a small
    cache, so the cells of one session share one automaton)."""
    return _cached_matcher(tuple(needles))


def found_in(needles: Iterable[str], text: str) -> frozenset[str]:
    """The `needles` that occur in `text`, with one pass over the text."""
    return matcher_for(tuple(needles)).found(text)
