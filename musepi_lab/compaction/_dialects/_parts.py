"""Message parts (`dialect/rendering.ts`) and the two transcript shapes the dialects share:
Human/Assistant segments and ChatML turns."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Message = Mapping[str, Any]


# -- message parts (dialect/rendering.ts) -------------------------------------------------
def message_blocks(message: Message) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, Mapping)]


def content_text(content: Any) -> str:
    """`messageContentText`: texts concatenated, each image as `[Image: <mime>]`."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    out = ""
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            out += block["text"]
        elif kind == "image":
            mime = block.get("mimeType")
            out += f"[Image: {mime}]" if mime else "[Image]"
    return out


@dataclass(frozen=True)
class AssistantParts:
    """An assistant message's texts (concatenated), thinkings (joined by `\\n`), calls."""

    text: str
    thinking: str
    calls: tuple[Mapping[str, Any], ...]


def assistant_parts(message: Message) -> AssistantParts:
    """`assistantTranscriptParts`."""
    text, thinking, calls = "", [], []
    for block in message_blocks(message):
        kind = block.get("type")
        if kind == "text":
            text += str(block.get("text", ""))
        elif kind == "thinking":
            thinking.append(str(block.get("thinking", "")))
        elif kind == "toolCall":
            calls.append(block)
    return AssistantParts(text, "\n".join(thinking), tuple(calls))


@dataclass(frozen=True)
class ToolResult:
    """One tool result of a run (`DialectToolResult`)."""

    id: str
    name: str
    index: int
    text: str
    is_error: bool


def tool_result_run(messages: Sequence[Message], start: int) -> tuple[tuple[ToolResult, ...], int]:
    """`collectToolResultRun`: the consecutive tool results from `start`, and the next index."""
    results: list[ToolResult] = []
    end = start
    while end < len(messages) and messages[end].get("role") == "toolResult":
        msg = messages[end]
        results.append(
            ToolResult(
                id=str(msg.get("toolCallId", "")),
                name=str(msg.get("toolName", "")),
                index=len(results),
                text=content_text(msg.get("content")),
                is_error=msg.get("isError") is True,
            )
        )
        end += 1
    return tuple(results), end


_NO_PARTS = AssistantParts("", "", ())


@dataclass(frozen=True)
class Turn:
    """One step of a transcript walk: an assistant message (`parts`), a run of consecutive
    tool results (role `toolResult`, `results`), or any other message (`text`)."""

    role: str
    parts: AssistantParts = _NO_PARTS
    results: tuple[ToolResult, ...] = ()
    text: str = ""


def turns(messages: Sequence[Message]) -> Iterator[Turn]:
    """The messages as every dialect walks them: each assistant message with its parts,
    each run of tool results at once (`collectToolResultRun`), every other message with
    its text (`messageContentText`)."""
    i = 0
    while i < len(messages):
        msg = messages[i]
        role = msg.get("role")
        if role == "assistant":
            yield Turn("assistant", parts=assistant_parts(msg))
            i += 1
        elif role == "toolResult":
            run, i = tool_result_run(messages, i)
            yield Turn("toolResult", results=run)
        else:
            yield Turn(str(role), text=content_text(msg.get("content")))
            i += 1


def call_name(call: Mapping[str, Any]) -> str:
    return str(call.get("name", ""))


def call_args(call: Mapping[str, Any]) -> Mapping[str, Any]:
    args = call.get("arguments")
    return args if isinstance(args, Mapping) else {}


def escape_xml_attr(value: str) -> str:
    """`escapeXmlAttr`."""
    return (
        value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")
    )


def escape_xml_text(value: str) -> str:
    """`escapeXmlText`."""
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_ASCII_WS = "\t\n\x0b\x0c\r "


def _find_thinking_close(open_tag: str, close: str, text: str, start: int, end: int) -> int:
    depth, cursor = 1, start
    while cursor < end:
        next_close = text.find(close, cursor)
        if next_close < 0 or next_close >= end:
            return -1
        next_open = text.find(open_tag, cursor)
        if 0 <= next_open < next_close:
            depth += 1
            cursor = next_open + len(open_tag)
            continue
        depth -= 1
        if depth == 0:
            return next_close
        cursor = next_close + len(close)
    return -1


def _unwrap_thinking(open_tag: str, close: str, text: str) -> str:
    """Already-wrapped thinking (`<thinking>…</thinking>` runs) loses its own envelopes."""
    end = len(text.rstrip(_ASCII_WS))
    cursor = len(text) - len(text.lstrip(_ASCII_WS)) if end else 0
    if cursor >= end or not text.startswith(open_tag, cursor):
        return text
    segments: list[str] = []
    while cursor < end:
        if not text.startswith(open_tag, cursor):
            return text
        inner_start = cursor + len(open_tag)
        inner_end = _find_thinking_close(open_tag, close, text, inner_start, end)
        if inner_end < 0:
            return text
        inner = text[inner_start:inner_end].strip(_ASCII_WS)
        segments.append(_unwrap_thinking(open_tag, close, inner))
        cursor = inner_end + len(close)
        while cursor < end and text[cursor] in _ASCII_WS:
            cursor += 1
    return "\n".join(segments)


def delimited_thinking(open_tag: str, close: str, text: str) -> str:
    """`renderDelimitedThinking`: `open\\n<unwrapped text>\\nclose`, or "" for no text."""
    if not text:
        return ""
    return f"{open_tag}\n{_unwrap_thinking(open_tag, close, text)}\n{close}"


def plain_thinking(open_tag: str, close: str) -> Callable[[str], str]:
    return lambda text: f"{open_tag}\n{text}\n{close}" if text else ""


def tool_response_results(results: Sequence[ToolResult]) -> str:
    """`renderToolResponseResults`: each text in `<tool_response>` tags, one per line."""
    return "\n".join(f"<tool_response>\n{r.text}\n</tool_response>" for r in results)


# -- transcript shapes ---------------------------------------------------------------------
Calls = Callable[[Sequence[Mapping[str, Any]]], str]
Results = Callable[[Sequence[ToolResult]], str]
Thinking = Callable[[str], str]


def legacy_text_transcript(
    messages: Sequence[Message], *, thinking: Thinking, calls: Calls, results: Results
) -> str:
    """`renderLegacyTextTranscript`: `\\n\\nHuman: …` / `\\n\\nAssistant: …` segments."""
    out = ""
    for turn in turns(messages):
        p = turn.parts
        if turn.role == "assistant":
            out += f"\n\nAssistant: {thinking(p.thinking)}{p.text}{calls(p.calls)}"
        elif turn.role == "toolResult":
            out += f"\n\nHuman: {results(turn.results)}"
        elif turn.role != "developer":
            out += f"\n\nHuman: {turn.text}"
        elif turn.text:
            out = f"{out}\n\n{turn.text}" if out else turn.text
    return out


def _chatml_turn(role: str, body: str) -> str:
    return f"<|im_start|>{role}\n{body}<|im_end|>\n"


def chatml_transcript(
    messages: Sequence[Message],
    *,
    tool_result_role: str,
    thinking: Thinking,
    calls: Calls,
    results: Results,
) -> str:
    """`renderChatMlTranscript`: `<|im_start|>role\\n…<|im_end|>\\n` turns."""
    out = ""
    for turn in turns(messages):
        p = turn.parts
        if turn.role == "assistant":
            out += _chatml_turn("assistant", f"{thinking(p.thinking)}{p.text}{calls(p.calls)}")
        elif turn.role == "toolResult":
            out += _chatml_turn(tool_result_role, results(turn.results))
        else:
            out += _chatml_turn(system_role(turn.role), turn.text)
    return out


def system_role(role: str) -> str:
    """The role a turn prints: `developer` messages print as `system`."""
    return "system" if role == "developer" else role
