"""Deterministic stand-ins for the reader and the judge, as loopback-server responders.

`StubOpenAIServer(responder=echo_reader)` is a reader that answers every probe with all the
text of the context it was sent: a perfect reader of what the compaction kept and blind to
what it dropped, so exact-match scores against it are exactly "is the reference still in
the context". `StubOpenAIServer(responder=overlap_judge)` grades by word overlap between the
reference and the answer on the rubric's dimensions. Neither is a model: they test the
plumbing and give the score table a deterministic floor and ceiling; run a real endpoint to
measure comprehension.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ._ask import JUDGE_MAX
from ._model import chat_text

_WORD = re.compile(r"[A-Za-z0-9_./:-]+")
_CONCRETE = re.compile(r"[0-9_/.]|[a-z][A-Z]")
_DONT_KNOW = re.compile(r"(?i)\b(?:do not|don't|cannot|can't) (?:know|tell|recall)\b")


def echo_reader(body: Mapping[str, Any]) -> str:
    """The reader's reply: every text of the context (the messages between the system
    prompt and the question), as `chat_text` reads it."""
    messages = list(body.get("messages") or [])
    return chat_text(messages[1:-1])


def _block(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.DOTALL)
    return match.group(1) if match else ""


def _words(text: str) -> set[str]:
    return {w.strip(".:-").lower() for w in _WORD.findall(text) if len(w.strip(".:-")) > 1}


def _concrete(text: str) -> set[str]:
    """Words that name something: with a digit, `_`, `/` or `.` inside, or camelCase
    (sentence punctuation around a word does not count)."""
    stripped = (w.strip(".:-") for w in _WORD.findall(text))
    return {w.lower() for w in stripped if len(w) > 1 and _CONCRETE.search(w)}


def _share(wanted: set[str], found: set[str]) -> float:
    return len(wanted & found) / len(wanted) if wanted else 0.0


def overlap_scores(reference: str, answer: str) -> dict[str, int]:
    """Rubric scores from word overlap, scaled to 0–5.

    correctness: the share of the reference's concrete words (paths, names, numbers) the
    answer holds; an answer that names nothing concrete outside the reference is at least 1
    (vague, not wrong), one that names only things the reference does not is 0 (wrong).
    completeness: the share of all the reference's words. specificity: the answer's own
    concrete words against the reference's, times correctness. An empty or "I do not know"
    answer scores 0 everywhere.
    """
    if not answer.strip() or _DONT_KNOW.search(answer):
        return {"correctness": 0, "completeness": 0, "specificity": 0}
    ref, ans = _words(reference), _words(answer)
    concrete_ref = _concrete(reference) & ref or ref
    concrete_ans = _concrete(answer)
    share = _share(concrete_ref, ans)
    foreign = bool(concrete_ans - ref)
    correctness = max(round(JUDGE_MAX * share), 0 if foreign else 1)
    specificity = min(1.0, len(concrete_ans) / max(1, len(concrete_ref)))
    return {
        "correctness": correctness,
        "completeness": round(JUDGE_MAX * _share(ref, ans)),
        "specificity": round(JUDGE_MAX * specificity * share),
    }


def overlap_judge(body: Mapping[str, Any]) -> str:
    """The judge's reply: `overlap_scores` of the request's reference and answer, as JSON."""
    messages = list(body.get("messages") or [])
    prompt = str(messages[-1].get("content", "")) if messages else ""
    scores = overlap_scores(_block(prompt, "reference"), _block(prompt, "answer"))
    return json.dumps({**scores, "rationale": "word overlap with the reference"})
