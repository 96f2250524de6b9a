"""The text measures of the conformance table: the summarizer input per dialect and
snapcompact's archives and frames, as `MeasureRow`s.

The comparisons themselves are `_dialects.compare_summarizer_inputs` and
`_snapcompact.compare_snapcompact`; this module turns their rows into the table's. A summarizer text that differs from the release's only inside the sentence that
wraps a summary (our own wording) agrees on the format; those cases are counted again in an
own-wording row, which never fails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..compaction._serialize import serialize_conversation
from ..context._llm import convert_to_llm
from ..session._session import Session
from ._dialects import (
    _wildcarded,
    compare_summarizer_inputs,
    messages_at,
    text_difference,
    wording_only,
)
from ._rows import MeasureRow
from ._snapcompact import compare_snapcompact

OWN_WORDING_MEASURE = "summarizer_input/wrapper sentence"
"""The own-wording row: texts identical to the release's outside the summary wrappers."""


def _has_full_texts(reference: Mapping[str, Any]) -> bool:
    for entry in (reference.get("budgets") or {}).values():
        texts = (entry or {}).get("summarizer_input")
        if isinstance(texts, Mapping):
            for per_dialect in texts.values():
                if isinstance(per_dialect, Mapping):
                    return any(isinstance(t, str) for t in per_dialect.values())
    return False


def compare_dialects(
    reference: Mapping[str, Any], session: Session, budgets: Sequence[int]
) -> list[MeasureRow]:
    """The summarizer input in every dialect (MusePi, reference run with full texts)."""
    if reference.get("agent") != "musepi" or not _has_full_texts(reference):
        return []
    rows: list[MeasureRow] = []
    wrapped_same, wrapped_total, wording = 0, 0, None
    for row in compare_summarizer_inputs(reference, session, budgets):
        agreed, only_wording = int(row["agreed"]), int(row["wording_only"])
        rows.append(
            MeasureRow(
                str(row["measure"]),
                "musepi",
                agreed + only_wording,
                int(row["total"]),
                row["first_difference"],
            )
        )
        wrapped_same += agreed
        wrapped_total += agreed + only_wording
        wording = wording or row["wording"]
    if wrapped_total:
        rows.append(
            MeasureRow(OWN_WORDING_MEASURE, "musepi", wrapped_same, wrapped_total, wording, True)
        )
    return rows


def _pi_cases(
    reference: Mapping[str, Any], budgets: Sequence[int]
) -> list[tuple[str, list[Any], str]]:
    """(label, the reference's message list, its serialized text) for every pi text."""
    cases: list[tuple[str, list[Any], str]] = []
    for budget in budgets:
        entry = (reference.get("budgets") or {}).get(str(budget)) or {}
        prep, texts = entry.get("prepare_compaction"), entry.get("summarizer_input")
        if prep and isinstance(texts, Mapping):
            for key in ("messagesToSummarize", "turnPrefixMessages"):
                if isinstance(texts.get(key), str):
                    cases.append((f"budget {budget} {key}", prep.get(key) or [], texts[key]))
    branch = (reference.get("branch_summary") or {}).get("prepare") or {}
    for key, prep in branch.items():
        if prep and isinstance(prep.get("summarizer_input"), str):
            label = f"branch summary budget {key}"
            cases.append((label, prep.get("messages") or [], prep["summarizer_input"]))
    return cases


def compare_pi_summarizer_input(
    reference: Mapping[str, Any], session: Session, budgets: Sequence[int]
) -> list[MeasureRow]:
    """pi's one serializer (`serializeConversation(convertToLlm(...))`) on the messages the
    reference prepared, byte for byte; texts that differ only inside a summary message's
    wrapper sentence (our own wording) agree on the format and are counted again in the
    own-wording row."""
    if reference.get("agent") != "pi":
        return []
    agreed = wording = total = 0
    first: str | None = None
    described_wording: str | None = None
    for label, described, theirs in _pi_cases(reference, budgets):
        messages = messages_at(session, described)
        ours = serialize_conversation(convert_to_llm(messages, profile="pi"))
        total += 1
        found = text_difference(ours, theirs)
        if found is None:
            agreed += 1
            continue
        opened = _wildcarded(messages)
        if opened is not None:
            open_text = serialize_conversation(convert_to_llm(opened, profile="pi"))
            filled = wording_only(open_text, theirs)
            if filled is not None:
                wording += 1
                described_wording = described_wording or (
                    f"{label}: {filled[0]} summary message(s), "
                    f"{len(ours) - (len(theirs) - filled[1])} characters ours, "
                    f"{filled[1]} the release's"
                )
                continue
        first = first or f"{label}: {found}"
    if not total:
        return []
    rows = [MeasureRow("summarizer_input", "pi", agreed + wording, total, first)]
    rows.append(
        MeasureRow(OWN_WORDING_MEASURE, "pi", agreed, agreed + wording, described_wording, True)
    )
    return rows


def snapcompact_rows(
    reference: Mapping[str, Any], session: Session, budgets: Sequence[int]
) -> list[MeasureRow]:
    """Snapcompact's plan, archive text, frame geometry, pixels and billing (MusePi, a
    reference run with snapcompact at `budgets` and its frames written)."""
    return [
        MeasureRow(
            str(row["measure"]),
            "musepi",
            int(row["agreed"]),
            int(row["total"]),
            row["first_difference"],
        )
        for row in compare_snapcompact(reference, session, budgets)
    ]
