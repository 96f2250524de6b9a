"""Asking and scoring: the reader's and the judge's requests, and how an answer is scored.

Both models are reached through the one seam (`Summarizer.summarize(SummaryRequest)`), so
the disk cache, retries and the rule that no key is ever recorded hold for them too.

- The reader gets the compacted context as Chat Completions history (what the agent would
  send next), the `probe-reader` system prompt, and the probe's question as the last user
  message.
- A probe with exact references is scored without a judge: the share of its exact strings
  found verbatim in the answer (1.0 or 0.0 for a single fact; a fraction for a file list).
- Every other probe goes to the judge: the `probe-judge` rubric as the system prompt, the
  question, the reference and the answer in tagged blocks; it replies with a JSON object of
  0–5 scores per dimension (`JUDGE_DIMENSIONS`); the probe's score is their sum over the
  maximum.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._prompts import PromptSet
from ..llm._summarizer import SummaryRequest
from ._model import Probe

JUDGE_DIMENSIONS: tuple[str, ...] = ("correctness", "completeness", "specificity")
"""The rubric's dimensions, each scored 0–5 (`prompts/probe-judge.md`)."""
JUDGE_MAX = 5
READER_MAX_TOKENS = 512
JUDGE_MAX_TOKENS = 300

_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def reader_request(
    probe: Probe,
    history: Sequence[Mapping[str, Any]],
    prompts: PromptSet,
    *,
    max_tokens: int = READER_MAX_TOKENS,
) -> SummaryRequest:
    """The reader's request: the compacted context as history, then the question."""
    return SummaryRequest(
        system_prompt=prompts.text("probe-reader"),
        prompt=probe.question,
        max_tokens=max_tokens,
        purpose="probe-reader",
        history=tuple(history),
    )


def judge_prompt(question: str, reference: str, answer: str) -> str:
    """The judge's user message: question, reference and answer in tagged blocks."""
    return (
        f"<question>\n{question}\n</question>\n\n"
        f"<reference>\n{reference}\n</reference>\n\n"
        f"<answer>\n{answer}\n</answer>"
    )


def judge_request(
    probe: Probe, answer: str, prompts: PromptSet, *, max_tokens: int = JUDGE_MAX_TOKENS
) -> SummaryRequest:
    """The judge's request: the rubric as the system prompt, then the tagged blocks."""
    return SummaryRequest(
        system_prompt=prompts.text("probe-judge"),
        prompt=judge_prompt(probe.question, probe.reference, answer),
        max_tokens=max_tokens,
        purpose="probe-judge",
    )


def exact_score(exact: Sequence[str], answer: str) -> float:
    """Share of the exact strings found verbatim in the answer."""
    if not exact:
        raise ValueError("exact_score needs at least one exact string")
    return sum(1 for s in exact if s in answer) / len(exact)


@dataclass(frozen=True)
class Judgement:
    """A judge's reply, parsed.

    Attributes:
        scores: Dimension → 0–5 (clamped, rounded), for every `JUDGE_DIMENSIONS`.
        rationale: The judge's one-line reason, if it gave one.
        error: Why the reply could not be read (then `scores` is empty).
    """

    scores: Mapping[str, int]
    rationale: str = ""
    error: str | None = None

    @property
    def score(self) -> float:
        """Sum of the dimensions over their maximum (0–1); NaN when unreadable."""
        if self.error is not None or not self.scores:
            return math.nan
        return sum(self.scores.values()) / (JUDGE_MAX * len(JUDGE_DIMENSIONS))


def parse_judgement(text: str) -> Judgement:
    """Read the judge's JSON reply (the first `{...}` in it); an error, never a guess,
    when a dimension is missing or not a number."""
    match = _JSON_OBJECT.search(text)
    if match is None:
        return Judgement({}, error="no JSON object in the judge's reply")
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return Judgement({}, error="the judge's reply is not valid JSON")
    if not isinstance(data, dict):
        return Judgement({}, error="the judge's reply is not a JSON object")
    scores: dict[str, int] = {}
    for dim in JUDGE_DIMENSIONS:
        value = data.get(dim)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return Judgement({}, error=f"the judge gave no number for {dim!r}")
        scores[dim] = min(JUDGE_MAX, max(0, round(value)))
    rationale = data.get("rationale")
    return Judgement(scores, rationale=rationale if isinstance(rationale, str) else "")
