"""Branch summaries: what the user leaves behind on tree navigation, summarized by a model.

`generate_branch_summary` follows pi's `generateBranchSummary` (spec §7.1) and oh-my-pi's
differences (§7.2): the budget is the model's window less the reserve, the abandoned entries
are chosen newest-first within it (`prepare_branch_entries`), serialized in a
`<conversation>` block, followed by the branch prompt (or the custom instructions), and sent
with the summarization system prompt through the one model seam. The summary is the preamble
plus the answer, with the file operations appended as the profile formats them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._prompts import PromptSet, resolve_prompts
from ..compaction._branch import (
    DEFAULT_BRANCH_SUMMARY_RESERVE,
    BranchPreparation,
    branch_summary_budget,
    prepare_branch_entries,
)
from ..compaction._file_ops import (
    compute_file_lists,
    file_details,
    format_file_operations,
    upsert_file_operations,
)
from ..llm import Summarizer, SummarizerError, SummaryRequest, SummaryResponse
from ..session._model import Entry
from ..session._profiles import check_profile
from ..strategies._summary_input import summary_dialect, summary_transcript
from ..tokens._counter import TokenCounter

NOTHING_TO_SUMMARIZE = "No content to summarize"
"""The summary of a branch with no message to summarize (pi's text; no model is asked)."""
BRANCH_SUMMARY_MAX_TOKENS = 2048
"""`maxTokens` of the branch-summary request (pi and oh-my-pi)."""


@dataclass(frozen=True)
class BranchSummary:
    """A branch summary and how it was made.

    Attributes:
        summary: The text stored on the `branch_summary` entry.
        read_files: Files only read on the branch (and carried by earlier summaries).
        modified_files: Files written or edited.
        preparation: The messages chosen within the budget, and the file operations.
        budget: The token budget of the summarizer input.
        request: The request sent, or None when nothing was summarized.
        response: The model's answer, or None.
    """

    summary: str
    read_files: tuple[str, ...]
    modified_files: tuple[str, ...]
    preparation: BranchPreparation
    budget: int
    request: SummaryRequest | None = None
    response: SummaryResponse | None = None

    @property
    def details(self) -> dict[str, list[str]]:
        """The entry's `details`: `{"readFiles": [...], "modifiedFiles": [...]}`."""
        return file_details(self.read_files, self.modified_files)


def branch_instructions(
    prompts: PromptSet,
    *,
    profile: str,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
) -> str:
    """The instruction text after the `<conversation>` block.

    pi: the branch prompt, with `Additional focus: …` appended for custom instructions, or
    the custom instructions alone with `replace_instructions`. MusePi: custom instructions
    always replace the branch prompt (spec §7.2).
    """
    base = prompts.text("branch-summary")
    if not custom_instructions:
        return base
    if replace_instructions or profile != "pi":
        return custom_instructions
    return f"{base}\n\nAdditional focus: {custom_instructions}"


def branch_summary_request(
    preparation: BranchPreparation,
    *,
    profile: str = "musepi",
    prompts: PromptSet | str | None = None,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    dialect: str | None = None,
) -> SummaryRequest | None:
    """The request that summarizes a prepared branch; None when it holds no message.

    `dialect`: MusePi's transcript dialect (default `xml`, oh-my-pi's fallback; see
    `summary_dialect`); ignored for pi.
    """
    check_profile(profile)
    if not preparation.messages:
        return None
    prompt_set = resolve_prompts(prompts)
    conversation = summary_transcript(
        preparation.messages,
        profile=profile,
        prompts=prompt_set,
        dialect=summary_dialect(None, profile, dialect),
    ).text()
    instructions = branch_instructions(
        prompt_set,
        profile=profile,
        custom_instructions=custom_instructions,
        replace_instructions=replace_instructions,
    )
    return SummaryRequest(
        system_prompt=prompt_set.text("summarization-system"),
        prompt=f"<conversation>\n{conversation}\n</conversation>\n\n{instructions}",
        max_tokens=BRANCH_SUMMARY_MAX_TOKENS,
        purpose="branch",
    )


def _with_file_operations(
    text: str,
    read_files: Sequence[str],
    modified_files: Sequence[str],
    *,
    profile: str,
    read_set: Any,
) -> str:
    if profile == "pi":
        return text + format_file_operations(read_files, modified_files)
    return upsert_file_operations(text, read_files, modified_files, read_set=read_set)


def generate_branch_summary(
    entries: Sequence[Entry],
    summarizer: Summarizer,
    *,
    profile: str = "musepi",
    counter: TokenCounter | None = None,
    prompts: PromptSet | str | None = None,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    reserve_tokens: int = DEFAULT_BRANCH_SUMMARY_RESERVE,
    dialect: str | None = None,
) -> BranchSummary:
    """Summarize abandoned entries with a model (spec §7.1–7.2).

    Args:
        entries: The abandoned entries, chronological (`collect_entries_for_branch_summary`).
        summarizer: The model seam (its `context_window` sets the budget).
        profile: `musepi` (default) or `pi`.
        counter: Token counter for the budget walk (default: the profile's estimator).
        prompts: A prompt set or folder (default: the project's).
        custom_instructions: Extra focus (pi) or replacement instructions (MusePi).
        replace_instructions: pi: use `custom_instructions` instead of the branch prompt.
        reserve_tokens: Tokens kept free of the window (`branchSummary.reserveTokens`).
        dialect: MusePi: the transcript's dialect; None picks it from the summarizer's
            `model` as oh-my-pi 18.2.3 does (`preferred_dialect`).

    Returns:
        The `BranchSummary`; with nothing to summarize, pi's "No content to summarize" and
        no request.

    Raises:
        SummarizerError: The model's answer holds no text (never stored as a summary).
    """
    check_profile(profile)
    prompt_set = resolve_prompts(prompts)
    budget = branch_summary_budget(getattr(summarizer, "context_window", None), reserve_tokens)
    prep = prepare_branch_entries(
        entries, budget, counter=counter or TokenCounter.for_profile(profile), profile=profile
    )
    read_files, modified_files = compute_file_lists(prep.file_ops, profile=profile)
    request = branch_summary_request(
        prep,
        profile=profile,
        prompts=prompt_set,
        custom_instructions=custom_instructions,
        replace_instructions=replace_instructions,
        dialect=summary_dialect(summarizer, profile, dialect, path=entries),
    )
    if request is None:
        return BranchSummary(NOTHING_TO_SUMMARIZE, (), (), prep, budget)
    response = summarizer.summarize(request)
    if not response.text.strip():
        raise SummarizerError(
            f"the branch summary came back empty from {getattr(summarizer, 'model', 'the model')!r}"
        )
    text = prompt_set.text("branch-summary-preamble") + response.text
    summary = _with_file_operations(
        text, read_files, modified_files, profile=profile, read_set=prep.file_ops.read
    )
    return BranchSummary(
        summary, tuple(read_files), tuple(modified_files), prep, budget, request, response
    )
