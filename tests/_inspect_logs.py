"""Inspect AI logs made by the real library: a small task run offline on `mockllm`.

The task is a `react` agent with one tool and one of Inspect's own compactions at a tiny
threshold, so the logs hold system, user, assistant and tool messages, paired tool calls
and results, and `compaction` events: `trim` (messages dropped from the model's input) or
`summary` (a summary message appended to the history, written by a second mockllm model
that answers with its default output). Samples run one after another (`max_samples=1`),
so the scripted outputs reach them in order.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SAMPLES = 3
CALLS_PER_SAMPLE = 4


@contextmanager
def offline_tiktoken() -> Iterator[None]:
    """Inspect counts tokens with tiktoken's o200k_base, which downloads its rank file;
    hand it the encoding this project builds offline instead."""
    import tiktoken

    from musepi_lab.tokens._bpe import get_encoding

    original = tiktoken.get_encoding
    tiktoken.get_encoding = get_encoding  # type: ignore[assignment]
    try:
        yield
    finally:
        tiktoken.get_encoding = original  # type: ignore[assignment]


def _outputs() -> list[Any]:
    from inspect_ai.model import ModelOutput

    outputs = []
    for sample in range(SAMPLES):
        for call in range(CALLS_PER_SAMPLE):
            outputs.append(
                ModelOutput.for_tool_call(
                    "mockllm/model",
                    "add",
                    {"x": sample * 10 + call, "y": 2},
                    content=f"Adding step {call} of sample {sample}.",
                )
            )
        outputs.append(
            ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": str(sample + 2)})
        )
    return outputs


def _task(compaction: str) -> Any:
    from inspect_ai import Task
    from inspect_ai.agent import react
    from inspect_ai.dataset import Sample
    from inspect_ai.model import CompactionSummary, CompactionTrim, get_model
    from inspect_ai.scorer import match
    from inspect_ai.tool import tool

    @tool
    def add() -> Any:
        async def execute(x: int, y: int) -> str:
            """Add two numbers.

            Args:
                x: First number.
                y: Second number.
            """
            return f"{x} + {y} = {x + y}. " + "Long tool output line. " * 20

        return execute

    samples = [
        Sample(
            input=f"Add numbers for case {i}, then submit {i + 2}.",
            target=str(i + 2),
            id=f"case-{i}",
        )
        for i in range(SAMPLES)
    ]
    agent = react(
        prompt="You add numbers with the add tool.",
        tools=[add()],
        compaction=(
            CompactionTrim(threshold=400, preserve=0.5)
            if compaction == "trim"
            else CompactionSummary(threshold=600, model=get_model("mockllm/model"))
        ),
    )
    return Task(dataset=samples, solver=agent, scorer=match())


def write_inspect_logs(log_dir: Path) -> dict[str, Path]:
    """Run the task with each compaction (`.eval` logs), then have Inspect write the trim
    log again as `.json`.

    Returns:
        `{"eval": trim .eval, "json": the same log as .json, "summary": summary .eval}`.
    """
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log, write_eval_log
    from inspect_ai.model import get_model

    written: dict[str, Path] = {}
    with offline_tiktoken():
        for compaction, key in (("trim", "eval"), ("summary", "summary")):
            logs = inspect_eval(
                _task(compaction),
                model=get_model("mockllm/model", custom_outputs=_outputs()),
                log_dir=str(log_dir / compaction),
                log_format="eval",
                display="none",
                max_samples=1,
                score=False,
            )
            written[key] = Path(logs[0].location)
    written["json"] = written["eval"].with_suffix(".json")
    write_eval_log(read_eval_log(str(written["eval"])), str(written["json"]), format="json")
    return written
