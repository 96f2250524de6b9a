"""Summarizer input per dialect next to oh-my-pi's: a pure comparison for the conformance table.

The reference document (`conformance/README.md`, musepi agent, `--texts full`) lists, per
budget, the messages the release summarizes (`messagesToSummarize`, `turnPrefixMessages`, as
entry indices) and the text it would send in each dialect; `branch_summary.prepare` does the
same for a branch summary. We take the same entries from our `Session`, turn them into LLM
messages with our MusePi `convert_to_llm`, render them with `serialize_for_summary` and compare
byte for byte. The messages come from the reference, so this measure does not depend on where
our cut point falls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..compaction._summary_dialects import LEGACY_DIALECT, SUMMARY_DIALECTS, serialize_for_summary
from ..context._llm import convert_to_llm
from ..session._messages import entry_to_message
from ..session._session import Session

MEASURE_DIALECTS = (LEGACY_DIALECT, *SUMMARY_DIALECTS)
"""The dialects the reference reports, `none` (the legacy serializer) first."""
_CONTEXT_CHARS = 24
SUMMARY_ROLES = ("compactionSummary", "branchSummary")
"""Runtime messages whose LLM text wraps a summary in a sentence of our own wording."""
_WILDCARD = "\x00summary-wrapper\x00"


def messages_at(
    session: Session, described: Iterable[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The runtime messages of the entries the reference names (`{entry_index, …}`).

    Raises:
        ValueError: An index outside the session, or an entry that carries no message,
            naming the session file and the index.
    """
    out: list[Mapping[str, Any]] = []
    for item in described:
        index = int(item["entry_index"])
        if not 0 <= index < len(session.entries):
            raise ValueError(
                f"{session.source_path}: the reference names entry {index}, not in the file"
            )
        message = entry_to_message(session.entries[index])
        if message is None:
            raise ValueError(
                f"{session.source_path}: entry {index} ({session.entries[index].type}) has no message"
            )
        out.append(message)
    return out


def text_difference(ours: str, theirs: str) -> str | None:
    """Where two texts first differ, as a short string; None when they are equal."""
    if ours == theirs:
        return None
    at = next(
        (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
        min(len(ours), len(theirs)),
    )
    lo = max(at - _CONTEXT_CHARS, 0)
    hi = at + _CONTEXT_CHARS
    return (
        f"character {at} (lengths {len(ours)} vs {len(theirs)}): "
        f"ours {ours[lo:hi]!r}, release {theirs[lo:hi]!r}"
    )


def _wildcarded(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]] | None:
    """The messages with each summary message's text left open, or None when none has one."""
    if not any(m.get("role") in SUMMARY_ROLES for m in messages):
        return None
    return [
        {
            "role": "user",
            "content": [{"type": "text", "text": _WILDCARD}],
            "timestamp": m.get("timestamp"),
        }
        if m.get("role") in SUMMARY_ROLES
        else m
        for m in messages
    ]


def wording_only(open_text: str, theirs: str) -> tuple[int, int] | None:
    """Whether `theirs` is `open_text` with each wildcard filled by some text.

    Returns:
        (wildcards, characters the release put in them), or None when the texts differ
        elsewhere too (then the format, not only the wording, differs).
    """
    pieces = open_text.split(_WILDCARD)
    head, *middle, tail = pieces
    if (
        len(theirs) < len(head) + len(tail)
        or not theirs.startswith(head)
        or not theirs.endswith(tail)
    ):
        return None
    at, stop = len(head), len(theirs) - len(tail)
    for piece in middle:  # leftmost placement is enough: the tail is anchored at the end
        found = theirs.find(piece, at, stop)
        if found < 0:
            return None
        at = found + len(piece)
    filled = len(theirs) - sum(len(p) for p in pieces)
    return len(pieces) - 1, filled


def _cases(
    reference: Mapping[str, Any], budgets: Sequence[int]
) -> list[tuple[str, list[Any], Mapping[str, Any]]]:
    """(label, reference message list, per-dialect texts) for every text the reference gives."""
    cases: list[tuple[str, list[Any], Mapping[str, Any]]] = []
    per_budget = reference.get("budgets") or {}
    for budget in budgets:
        entry = per_budget.get(str(budget)) or {}
        prep = entry.get("prepare_compaction")
        texts = entry.get("summarizer_input")
        if not prep or not isinstance(texts, Mapping):
            continue
        for key in ("messagesToSummarize", "turnPrefixMessages"):
            if isinstance(texts.get(key), Mapping):
                cases.append((f"budget {budget} {key}", prep.get(key) or [], texts[key]))
    branch = (reference.get("branch_summary") or {}).get("prepare") or {}
    for key in ("0", *(str(b) for b in budgets)):
        prep = branch.get(key)
        if prep and isinstance(prep.get("summarizer_input"), Mapping):
            label = f"branch summary budget {key}"
            cases.append((label, prep.get("messages") or [], prep["summarizer_input"]))
    return cases


def compare_summarizer_inputs(
    reference: Mapping[str, Any], session: Session, budgets: Sequence[int]
) -> list[dict[str, Any]]:
    """Agreement of our summarizer input with the release's, one row per dialect.

    Args:
        reference: The musepi reference document with full texts (`--texts full`).
        session: The same file read by us.
        budgets: keepRecentTokens values to compare (the branch summary's unlimited
            budget `0` is always included when present).

    Returns:
        Rows `{measure: "summarizer_input/<dialect>", agreed, total, first_difference,
        wording_only, wording}`; a case is one text (messages to summarize, turn prefix or
        branch, per budget). `agreed` counts byte-identical texts. `wording_only` counts the
        others that differ only inside the wrapper sentence of a compaction or branch summary
        message (our own wording by design): the rest of the text, format included, is
        byte-identical. `wording` describes the first such case (wrapper count and lengths).
    """
    rows: dict[str, dict[str, Any]] = {
        d: {
            "measure": f"summarizer_input/{d}",
            "agreed": 0,
            "total": 0,
            "first_difference": None,
            "wording_only": 0,
            "wording": None,
        }
        for d in MEASURE_DIALECTS
    }
    for label, described, texts in _cases(reference, budgets):
        messages = messages_at(session, described)
        llm = convert_to_llm(messages, profile="musepi")
        opened = _wildcarded(messages)
        llm_open = None if opened is None else convert_to_llm(opened, profile="musepi")
        for dialect in MEASURE_DIALECTS:
            theirs = texts.get(dialect)
            if not isinstance(theirs, str):
                continue
            row = rows[dialect]
            row["total"] += 1
            ours = serialize_for_summary(llm, dialect)
            found = text_difference(ours, theirs)
            if found is None:
                row["agreed"] += 1
                continue
            if llm_open is not None:
                filled = wording_only(serialize_for_summary(llm_open, dialect), theirs)
                if filled is not None:
                    row["wording_only"] += 1
                    if row["wording"] is None:
                        count, chars = filled
                        ours_chars = len(ours) - (len(theirs) - chars)
                        row["wording"] = (
                            f"{label}: {count} summary message(s), {ours_chars} characters ours, "
                            f"{chars} the release's"
                        )
                    continue
            if row["first_difference"] is None:
                row["first_difference"] = f"{label}: {found}"
    return list(rows.values())
