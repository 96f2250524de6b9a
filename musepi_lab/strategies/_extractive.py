"""`extractive`: a deterministic, model-free summary of what the engine would summarize.

Everything in the summary is copied from the conversation, nothing is generated: the
user's requests (verbatim, capped), the commands run, the errors seen (error-looking lines
of tool results, or the first line of a failed result that has none; provider errors), and the
last state (the last assistant text). They fill the section layout the compaction prompt
asks a model for (spec §5.3: Goal, Constraints & Preferences, Progress, Key Decisions,
Next Steps, Critical Context); the files touched are appended as `llm-summary` appends
them (pi: `<read-files>`/`<modified-files>`; MusePi: one `<files>` block). A baseline that
runs anywhere: no model, no network, the same bytes on every run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..compaction._file_ops import (
    format_summary_files,
    strip_file_operation_tags,
    upsert_file_operations,
)
from ..compaction._result import CompactionResult
from ..compaction._serialize import truncate_head_tail
from ..session._model import Message, message_text
from ._base import CompactionContext, Strategy, register
from ._params import check_count

EXTRACTIVE_METHOD = "extractive"
NONE_EXTRACTED = "(none extracted)"
PREVIOUS_SUMMARY_CHARS = 4000
"""A carried previous summary is cut to this many characters (head and tail), so
summaries of summaries stay bounded."""
COMMAND_CHARS = 200
ERROR_LINE_CHARS = 300


# Lines that look like an error in otherwise successful tool output: exception names,
# compiler/tool `error:` prefixes, test-runner failures, tracebacks, panics. Case matters:
# prose such as "no errors found" must not match.
_ERROR_LINE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b"
    r"|\berror(?:\[\w+\])?:"
    r"|\berror TS\d+"
    r"|\bERROR\b"
    r"|\bFAIL(?:ED)?\b"
    r"|\bfatal:"
    r"|\bpanic:"
    r"|Traceback \(most recent call last\)"
)


@dataclass(frozen=True, slots=True)
class Extract:
    """What the extractive summary copies out of a list of messages.

    Attributes:
        requests: The user's requests, verbatim, in order.
        commands: Shell commands run (tool calls with a `command` argument and user `!`
            commands), first line only, in order, repeats removed (last one kept).
        errors: Error lines seen, in order, repeats removed (last one kept).
        last_state: The last assistant text, or None.
        message_count: How many messages were read.
    """

    requests: tuple[str, ...]
    commands: tuple[str, ...]
    errors: tuple[str, ...]
    last_state: str | None
    message_count: int


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]} […{len(text) - limit} more characters]"


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _unique_last(items: Iterable[str]) -> tuple[str, ...]:
    """Items in order with repeats removed, each kept at its last position."""
    last: dict[str, int] = {}
    ordered = list(items)
    for index, item in enumerate(ordered):
        last[item] = index
    return tuple(item for index, item in enumerate(ordered) if last[item] == index)


def _result_text(message: Message) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else message_text(content)


def _assistant_text(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    texts = [
        b["text"]
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return "\n".join(texts).strip()


def _command_lines(message: Message) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    out: list[str] = []
    for block in content:
        if not isinstance(block, Mapping) or block.get("type") != "toolCall":
            continue
        args = block.get("arguments")
        command = args.get("command") if isinstance(args, Mapping) else None
        if isinstance(command, str) and command.strip():
            out.append(_command(command))
    return out


def _command(command: str) -> str:
    first = _first_line(command)
    more = " …" if command.strip() != first else ""
    return _cap(first, COMMAND_CHARS) + more


def _error_lines(message: Message) -> list[str]:
    role = message.get("role")
    if role == "toolResult":
        text = _result_text(message)
        lines = [
            _cap(line.strip(), ERROR_LINE_CHARS)
            for line in text.splitlines()
            if _ERROR_LINE.search(line)
        ]
        if message.get("isError") and not lines:
            # A failed result with no error-looking line: its first line says what failed.
            first = _first_line(text)
            return [_cap(first, ERROR_LINE_CHARS)] if first else []
        return lines
    if role == "assistant" and message.get("stopReason") == "error":
        error = message.get("errorMessage")
        if isinstance(error, str) and error.strip():
            return [_cap(_first_line(error), ERROR_LINE_CHARS)]
    if role == "bashExecution":
        code = message.get("exitCode")
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            output = message.get("output")
            first = _first_line(output) if isinstance(output, str) else ""
            return [_cap(f"exit code {code}: {first}".rstrip(": "), ERROR_LINE_CHARS)]
    return []


def extract(messages: Iterable[Message]) -> Extract:
    """Copy the requests, commands, errors and last state out of runtime messages.

    Args:
        messages: Runtime messages (as `CompactionPreparation` holds them), oldest first.
    """
    requests: list[str] = []
    commands: list[str] = []
    errors: list[str] = []
    last_state: str | None = None
    count = 0
    for message in messages:
        count += 1
        role = message.get("role")
        if role == "user":
            text = _result_text(message).strip()
            if text:
                requests.append(text)
        elif role == "assistant":
            commands.extend(_command_lines(message))
            text = _assistant_text(message)
            if text:
                last_state = text
        elif role == "bashExecution":
            command = message.get("command")
            if isinstance(command, str) and command.strip():
                commands.append(_command(command))
        errors.extend(_error_lines(message))
    return Extract(
        requests=tuple(requests),
        commands=_unique_last(commands),
        errors=_unique_last(errors),
        last_state=last_state,
        message_count=count,
    )


def _bullet(text: str, prefix: str = "- ") -> str:
    """A Markdown list item; continuation lines are indented under it."""
    lines = text.splitlines() or [""]
    indent = " " * len(prefix)
    return "\n".join([prefix + lines[0], *(indent + line if line else "" for line in lines[1:])])


def _newest(items: Sequence[str], limit: int, noun: str) -> list[str]:
    """The last `limit` items, after a note on how many older ones were left out."""
    if len(items) <= limit:
        return list(items)
    kept = list(items[len(items) - limit :]) if limit > 0 else []
    return [f"({len(items) - len(kept)} earlier {noun} omitted)", *kept]


def _requests(requests: Sequence[str], limit: int, chars: int) -> list[str]:
    """The first request (the goal) and the newest ones, `limit` in all."""
    capped = [_cap(r, chars) for r in requests]
    if len(capped) <= limit:
        return capped
    if limit <= 1:
        return [*capped[:limit], f"({len(capped) - limit} later requests omitted)"]
    newest = capped[len(capped) - (limit - 1) :]
    omitted = len(capped) - limit
    return [capped[0], f"({omitted} requests omitted)", *newest]


def render_extractive_summary(
    found: Extract,
    *,
    previous_summary: str | None = None,
    request_chars: int = 600,
    max_items: int = 15,
    state_chars: int = 1500,
) -> str:
    """The summary text (without the file block) in the compaction-summary layout.

    Args:
        found: What `extract` copied out.
        previous_summary: The previous compaction's summary, carried first (file blocks
            stripped, cut to `PREVIOUS_SUMMARY_CHARS`).
        request_chars: Cap on each request's length.
        max_items: Cap on the number of requests, commands and errors listed.
        state_chars: Cap on the last state's length.
    """
    parts = [
        f"(Extractive summary: copied verbatim from {found.message_count} earlier messages, "
        "no model involved.)"
    ]
    if previous_summary and previous_summary.strip():
        carried = truncate_head_tail(
            strip_file_operation_tags(previous_summary), PREVIOUS_SUMMARY_CHARS
        )
        parts.append(f"## Previous Summary\n{carried.strip()}")
    requests = _requests(found.requests, max_items, request_chars)
    parts.append(
        "## Goal\n" + ("\n".join(_bullet(r) for r in requests) if requests else NONE_EXTRACTED)
    )
    parts.append(f"## Constraints & Preferences\n{NONE_EXTRACTED}")
    commands = _newest([f"`{c}`" for c in found.commands], max_items, "commands")
    done = "\n".join(c if c.startswith("(") else _bullet(f"Ran {c}", "- [x] ") for c in commands)
    state = _cap(found.last_state, state_chars) if found.last_state else None
    progress = [
        "## Progress",
        "### Done",
        done or NONE_EXTRACTED,
        "### In Progress",
        _bullet(f"Last state: {state}", "- [ ] ") if state else NONE_EXTRACTED,
        "### Blocked",
        NONE_EXTRACTED,
    ]
    parts.append("\n".join(progress))
    parts.append(f"## Key Decisions\n{NONE_EXTRACTED}")
    parts.append(
        "## Next Steps\n1. Continue with the newest request under Goal, from the last state "
        "under In Progress."
    )
    errors = _newest(found.errors, max_items, "error lines")
    critical = ["## Critical Context"]
    if errors:
        critical.append("Errors seen:")
        critical.extend(_bullet(e) for e in errors)
    else:
        critical.append(NONE_EXTRACTED)
    parts.append("\n".join(critical))
    return "\n\n".join(parts)


@register
@dataclass(frozen=True)
class Extractive(Strategy):
    """A model-free summary copied out of the messages before the engine's cut.

    Attributes:
        request_chars: Cap on each user request's length (characters).
        max_items: Cap on how many requests, commands and error lines are listed (the
            first request and the newest ones; the newest commands and errors).
        state_chars: Cap on the last assistant text's length.
    """

    name: ClassVar[str] = "extractive"

    request_chars: int = 600
    max_items: int = 15
    state_chars: int = 1500

    def __post_init__(self) -> None:
        check_count("request_chars", self.request_chars, 1)
        check_count("max_items", self.max_items, 1)
        check_count("state_chars", self.state_chars, 1)

    def run(self, ctx: CompactionContext) -> CompactionResult | None:
        """Summarize the preparation; None when it holds nothing to summarize."""
        prep = ctx.preparation
        if prep is None:
            return None
        messages = (*prep.messages_to_summarize, *prep.turn_prefix_messages)
        if not messages:
            return None
        text = render_extractive_summary(
            extract(messages),
            previous_summary=prep.previous_summary,
            request_chars=self.request_chars,
            max_items=self.max_items,
            state_chars=self.state_chars,
        )
        block, details = format_summary_files(prep.file_ops, profile=prep.profile)
        if prep.profile == "musepi":
            summary = upsert_file_operations(
                text, details["readFiles"], details["modifiedFiles"], read_set=prep.file_ops.read
            )
        else:
            summary = text + block
        result = CompactionResult.from_preparation(
            prep,
            summary,
            details=details,
            method=EXTRACTIVE_METHOD,
            params={"prompts": ctx.prompts.label},
        )
        return result
