"""What every strategy receives (`CompactionContext`) and the error of a strategy that cannot
run (`StrategyUnavailable`): a leaf under the registry (`_base`) and the context measure
(`_context_size`), which both use them."""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import MusepiLabError
from .._prompts import PromptSet
from ..compaction._hooks import Compacting
from ..compaction._prepare import CompactionPreparation
from ..compaction._settings import CompactionSettings
from ..llm._summarizer import Summarizer
from ..session._session import Session
from ..tokens._counter import TokenCounter


class StrategyUnavailable(MusepiLabError, RuntimeError):
    """A strategy cannot run with what it was given (e.g. an LLM strategy without a
    summarizer, or snapcompact for a model that cannot read images)."""


@dataclass(frozen=True)
class CompactionContext:
    """What every strategy receives.

    Attributes:
        session: The session to compact.
        preparation: The engine's preparation (cut point, regions, previous summary, file
            operations), or None when the engine found nothing to summarize.
        settings: Compaction settings (profile, reserve, keep-recent, ...).
        counter: The token counter (cached per entry).
        summarizer: The LLM seam, or None.
        prompts: The prompt set.
        leaf_id: The leaf whose path is compacted (None: the session leaf).
        compacting: The `session.compacting` hook's answer (a replacement summary
            prompt, `<additional-context>` lines), honoured by the LLM summary.
    """

    session: Session
    preparation: CompactionPreparation | None
    settings: CompactionSettings
    counter: TokenCounter
    summarizer: Summarizer | None
    prompts: PromptSet
    leaf_id: str | None = None
    compacting: Compacting | None = None

    def require_summarizer(self, strategy: str) -> Summarizer:
        """The summarizer, or a clear error naming the strategy."""
        if self.summarizer is None:
            raise StrategyUnavailable(
                f"strategy {strategy!r} calls a model: pass summarizer= "
                "(e.g. OpenAICompatibleSummarizer(base_url=...))"
            )
        return self.summarizer
