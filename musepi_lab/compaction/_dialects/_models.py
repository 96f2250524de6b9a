"""Which dialect a model reads (pi-catalog identity): `model_class` and `preferred_dialect`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from .._serialize import JS_WHITESPACE
from ._js import js_trim

FALLBACK_DIALECT: Final = "xml"
"""The dialect of a model no class rule recognizes (`FALLBACK_DIALECT`)."""


# -- which dialect (pi-catalog identity) -----------------------------------------------------
@dataclass(frozen=True)
class _Matcher:
    kind: str  # exact, bounded, namespace, prefix, glob
    token: str
    bounded: bool = False


_RANK: Final = {"exact": 4, "bounded": 3, "namespace": 2, "prefix": 1, "glob": 0}

# The model classes of `pi-catalog`'s taxonomy (`compat/rules.json`), with their matchers,
# and the dialect `preferredDialect` gives each; classes without a dialect of their own
# still take part in the ranking (a `mistral` id must not fall into another class).
_CLASSES: Final[tuple[tuple[str, str | None, tuple[_Matcher, ...]], ...]] = (
    ("ai21", None, (_Matcher("bounded", "jamba"), _Matcher("namespace", "ai21"))),
    (
        "amazon",
        None,
        (
            _Matcher("bounded", "nova"),
            _Matcher("bounded", "titan"),
            _Matcher("namespace", "amazon", True),
        ),
    ),
    (
        "anthropic",
        "anthropic",
        (
            _Matcher("namespace", "anthropic", True),
            _Matcher("bounded", "anthropic"),
            _Matcher("bounded", "claude"),
        ),
    ),
    ("baidu", None, (_Matcher("bounded", "ernie"),)),
    ("bytedance", None, (_Matcher("bounded", "doubao"),)),
    ("cohere", None, (_Matcher("bounded", "command"), _Matcher("namespace", "cohere"))),
    (
        "deepseek",
        "deepseek",
        (_Matcher("namespace", "deepseek", True), _Matcher("bounded", "deepseek")),
    ),
    ("gemini", "gemini", (_Matcher("bounded", "gemini"),)),
    ("gemma", "gemma", (_Matcher("bounded", "gemma"),)),
    ("glm", "glm", (_Matcher("bounded", "glm"), _Matcher("bounded", "zai-glm"))),
    (
        "gpt-oss",
        "harmony",
        (_Matcher("namespace", "gpt-oss", True), _Matcher("bounded", "gpt-oss")),
    ),
    ("kimi", "kimi", (_Matcher("namespace", "moonshotai"), _Matcher("bounded", "kimi"))),
    (
        "meta",
        None,
        (
            _Matcher("bounded", "muse-spark"),
            _Matcher("bounded", "llama"),
            _Matcher("namespace", "meta-llama"),
        ),
    ),
    ("mimo", None, (_Matcher("bounded", "mimo"),)),
    (
        "minimax",
        "minimax",
        (
            _Matcher("namespace", "minimax"),
            _Matcher("bounded", "minimax"),
            _Matcher("bounded", "hailuo"),
        ),
    ),
    ("mistral", None, (_Matcher("bounded", "mistral"), _Matcher("bounded", "mixtral"))),
    (
        "openai",
        "harmony",
        (
            _Matcher("namespace", "openai"),
            _Matcher("namespace", "openai", True),
            _Matcher("prefix", "gpt-"),
            _Matcher("prefix", "chatgpt-"),
            _Matcher("prefix", "codex-"),
            _Matcher("exact", "o1"),
            _Matcher("prefix", "o1-"),
            _Matcher("prefix", "o1."),
            _Matcher("exact", "o3"),
            _Matcher("prefix", "o3-"),
            _Matcher("prefix", "o3."),
            _Matcher("exact", "o4"),
            _Matcher("prefix", "o4-"),
            _Matcher("prefix", "o4."),
        ),
    ),
    (
        "qwen",
        "qwen3",
        (
            _Matcher("bounded", "qwen"),
            _Matcher("bounded", "deepseek-r1-distill-qwen"),
            _Matcher("glob", "*distill-qwen*"),
        ),
    ),
    ("stepfun", None, (_Matcher("bounded", "step"),)),
    (
        "xai",
        None,
        (
            _Matcher("prefix", "cursor-grok-"),
            _Matcher("bounded", "grok"),
            _Matcher("namespace", "x-ai"),
            _Matcher("namespace", "xai"),
        ),
    ),
)

# `collapse.suffixes`: effort and thinking suffixes stripped before classifying (the longest
# wins; `-max` is kept on qwen ids).
_VARIANT_SUFFIXES: Final = (
    ("-thinking", None),
    ("-extra-high", None),
    ("-none", None),
    ("-minimal", None),
    ("-medium", None),
    ("-xhigh", None),
    ("-high", None),
    ("-low", None),
    ("-max", "qwen"),
)


def _bare(model_id: str) -> str:
    return model_id[model_id.rfind("/") + 1 :]


def _bounded(value: str, token: str) -> bool:
    if value == token:
        return True
    if not value.startswith(token):
        return False
    follow = value[len(token) : len(token) + 1]
    return follow != "" and (follow in "-_.:" or (follow.isdigit() and follow.isascii()))


def _glob(pattern: str, value: str) -> bool:
    segments = pattern.split("*")
    if len(segments) == 1:
        return value == pattern
    if not value.startswith(segments[0]):
        return False
    rest = value[len(segments[0]) :]
    for segment in segments[1:-1]:
        if not segment:
            continue
        found = rest.find(segment)
        if found == -1:
            return False
        rest = rest[found + len(segment) :]
    return segments[-1] == "" or rest.endswith(segments[-1])


def _matches(m: _Matcher, lower: str, bare: str) -> bool:
    if m.kind == "exact":
        return bare == m.token
    if m.kind == "bounded":
        return _bounded(bare, m.token)
    if m.kind == "namespace":
        parts = re.split(r"[/.:]", lower) if m.bounded else lower.split("/")
        return any((_bounded(p, m.token) if m.bounded else p == m.token) for p in parts if p)
    if m.kind == "prefix":
        return bare.startswith(m.token)
    return _glob(m.token, bare)


def _collapsed(model_id: str) -> str:
    lower = model_id.lower()
    bare = _bare(lower)
    winner = ""
    for suffix, except_prefix in _VARIANT_SUFFIXES:
        if not lower.endswith(suffix):
            continue
        if except_prefix is not None and bare.startswith(except_prefix):
            continue
        if len(suffix) > len(winner):
            winner = suffix
    return model_id[: len(model_id) - len(winner)] if winner else model_id


def model_class(model_id: str) -> str:
    """The taxonomy class of a model id (`classifyModel("", id, {lenient: true}).class`).

    The best-ranked matcher wins (exact > bounded > namespace > prefix > glob, then the
    longer token); a tie between two classes, or no match, is `unknown`.
    """
    trimmed = model_id.strip(JS_WHITESPACE)
    logical = _collapsed(trimmed) if len(trimmed) == len(model_id) else trimmed
    lower = js_trim(logical).lower()
    bare = _bare(lower)
    best: tuple[int, int] | None = None
    winner = "unknown"
    tied = False
    for cls, _dialect, matchers in _CLASSES:
        for m in matchers:
            if not _matches(m, lower, bare):
                continue
            rank = (_RANK[m.kind], len(m.token))
            if best is not None and rank == best and winner != cls:
                tied = True
            elif best is None or rank > best:
                best, winner, tied = rank, cls, False
    return "unknown" if tied else winner


_CLASS_DIALECT: Final = {cls: dialect for cls, dialect, _ in _CLASSES if dialect is not None}


def preferred_dialect(model_id: str | None) -> str:
    """The dialect oh-my-pi renders a summary input in for a target model id.

    Anthropic models get `anthropic`, OpenAI and gpt-oss models `harmony`, the GLM, Gemini,
    Gemma, Kimi, Qwen, DeepSeek and MiniMax families their own template, anything else
    (and no model) the `xml` fallback.
    """
    if not model_id:
        return FALLBACK_DIALECT
    return _CLASS_DIALECT.get(model_class(model_id), FALLBACK_DIALECT)
