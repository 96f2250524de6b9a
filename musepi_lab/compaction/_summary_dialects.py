"""The summarizer's input in the target model's own dialect (MusePi profile, issue 11).

oh-my-pi 18.2.3 sends the messages to summarize (and a split turn's prefix, and an abandoned
branch) as one transcript rendered in the dialect of the model that will read it
(`serializeConversationForSummary(convertToLlm(messages), preferredDialect(model.id))`):
Claude-style tool-call markup for Anthropic models, OpenAI's harmony tokens for OpenAI
models, a chat template's own tokens for open-weight families, and a plain XML transcript
for everything else. This module ports that FORMAT: one pure function per dialect, the
dispatcher `serialize_for_summary`, and the model-to-dialect rule `preferred_dialect`.

Every byte here is format (tokens, tags, labels) taken from the release's sources
(`pi-agent-core/src/compaction/utils.ts`, `pi-ai/src/dialect/*.ts`,
`pi-catalog/src/identity/dialect.ts`, `pi-catalog/src/compat/taxonomy.ts`); none of it is
our own wording.

Before a dialect renders, the release prepares the messages the same way for every dialect:
tool results flagged `useless` (and not errors) are dropped with their calls, an assistant
message left with no block is dropped, a tool result keeps only its text (cut at 2000 UTF-16
units by `truncate_tool_result`) and is dropped when that is empty, and for `anthropic` the
thinking blocks are dropped. The rendered text then has harmony's control tokens escaped
(`harmony` only) and `<conversation>` / `<previous-summary>` tags neutralized (all).

JavaScript semantics are kept where they change the bytes: object keys in `for…in` order
(integer-like keys first), `String(number)`, `JSON.stringify`, `JSON.parse`, `trim`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..tokens._estimate import js_stringify
from ._serialize import JS_WHITESPACE, neutralize_boundary_tags, truncate_tool_result

Message = Mapping[str, Any]

SUMMARY_DIALECTS: Final = (
    "anthropic",
    "harmony",
    "xml",
    "glm",
    "hermes",
    "kimi",
    "deepseek",
    "qwen3",
    "gemini",
    "gemma",
    "minimax",
)
"""The release's dialects (`pi-catalog` `Dialect`)."""
LEGACY_DIALECT: Final = "none"
"""No dialect: the release's legacy labelled serializer (`[User]:`, `[Think]:`, …)."""
FALLBACK_DIALECT: Final = "xml"
"""The dialect of a model no class rule recognizes (`FALLBACK_DIALECT`)."""


# -- JavaScript value semantics ---------------------------------------------------------------
def _is_array_index(key: str) -> bool:
    return key.isdigit() and key.isascii() and str(int(key)) == key and int(key) < 2**32 - 1


def js_keys(record: Mapping[str, Any]) -> list[str]:
    """An object's keys in JavaScript's `for…in` / `Object.entries` order.

    Integer-like keys (array indices) come first in ascending order, then the rest in
    insertion order.
    """
    keys = [str(k) for k in record]
    indices = sorted((k for k in keys if _is_array_index(k)), key=int)
    if not indices:
        return keys
    return indices + [k for k in keys if not _is_array_index(k)]


def _js_ordered(value: Any) -> Any:
    """`value` with every object's keys in JavaScript order (for `JSON.stringify`)."""
    if isinstance(value, Mapping):
        return {k: _js_ordered(value[k]) for k in js_keys(value)}
    if isinstance(value, list | tuple):
        return [_js_ordered(v) for v in value]
    return value


def js_json(value: Any) -> str:
    """`JSON.stringify(value) ?? "null"` (compact, JavaScript key order)."""
    if value is None:
        return "null"
    return js_stringify(_js_ordered(value))


def js_number(value: float) -> str:
    """`String(number)`: JavaScript's shortest round-trip number text.

    Integers print in full below 1e21; otherwise the shortest digits are written as
    JavaScript does (exponent form below 1e-6 and from 1e21, `e+`/`e-` with no padding).
    """
    if isinstance(value, int) and abs(value) < 2**53:
        return str(value)
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    mantissa, _, exp_text = repr(abs(number)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    point = len(whole) + (int(exp_text) if exp_text else 0)  # decimal point after `point` digits
    if whole == "0":
        stripped = frac.lstrip("0")
        point = -(len(frac) - len(stripped)) + (int(exp_text) if exp_text else 0)
        digits = stripped
    digits = digits.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    exponent = n - 1
    exp = f"e{'+' if exponent >= 0 else '-'}{abs(exponent)}"
    if k == 1:
        return sign + digits + exp
    return sign + digits[0] + "." + digits[1:] + exp


def _reject_constant(name: str) -> Any:
    raise ValueError(f"not JSON: {name}")


def js_json_parse(text: str) -> Any:
    """`JSON.parse(text)`; raises ValueError where JavaScript would throw."""
    return json.loads(text, parse_constant=_reject_constant)


def _js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)


# -- message parts (dialect/rendering.ts) -------------------------------------------------
def _blocks(message: Message) -> list[Mapping[str, Any]]:
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
    for block in _blocks(message):
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


def _call_name(call: Mapping[str, Any]) -> str:
    return str(call.get("name", ""))


def _call_args(call: Mapping[str, Any]) -> Mapping[str, Any]:
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


def _plain_thinking(open_tag: str, close: str) -> Callable[[str], str]:
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
    i = 0
    while i < len(messages):
        msg = messages[i]
        role = msg.get("role")
        if role == "assistant":
            p = assistant_parts(msg)
            out += f"\n\nAssistant: {thinking(p.thinking)}{p.text}{calls(p.calls)}"
            i += 1
        elif role == "toolResult":
            run, i = tool_result_run(messages, i)
            out += f"\n\nHuman: {results(run)}"
        else:
            text = content_text(msg.get("content"))
            if role != "developer":
                out += f"\n\nHuman: {text}"
            elif text:
                out = f"{out}\n\n{text}" if out else text
            i += 1
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
    i = 0
    while i < len(messages):
        msg = messages[i]
        role = msg.get("role")
        if role == "assistant":
            p = assistant_parts(msg)
            out += _chatml_turn("assistant", f"{thinking(p.thinking)}{p.text}{calls(p.calls)}")
            i += 1
        elif role == "toolResult":
            run, i = tool_result_run(messages, i)
            out += _chatml_turn(tool_result_role, results(run))
        else:
            turn_role = "system" if role == "developer" else str(role)
            out += _chatml_turn(turn_role, content_text(msg.get("content")))
            i += 1
    return out


# -- Claude-style invoke markup (anthropic, xml, minimax) ------------------------------------
def _invoke(call: Mapping[str, Any]) -> str:
    # Without tool schemas (the summary has none) every value is JSON, strings included.
    args = _call_args(call)
    params = "".join(
        f'<parameter name="{escape_xml_attr(k)}">{js_json(args[k])}</parameter>'
        for k in js_keys(args)
    )
    return f'<invoke name="{escape_xml_attr(_call_name(call))}">{params}</invoke>'


def _invokes(calls: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(_invoke(c) for c in calls)


def _function_results(results: Sequence[ToolResult]) -> str:
    body = "\n".join(
        f"<{'error' if r.is_error else 'result'}>\n<tool_name>{escape_xml_text(r.name)}</tool_name>\n"
        f"<{'stderr' if r.is_error else 'stdout'}>{r.text}</{'stderr' if r.is_error else 'stdout'}>\n"
        f"</{'error' if r.is_error else 'result'}>"
        for r in results
    )
    return f"<function_results>\n{body}\n</function_results>"


def _xml_thinking(text: str) -> str:
    return delimited_thinking("<thinking>", "</thinking>", text)


def render_anthropic(messages: Sequence[Message]) -> str:
    """`anthropic`: Human/Assistant segments, `<function_calls>` invokes, `<function_results>`."""

    def calls(cs: Sequence[Mapping[str, Any]]) -> str:
        return f"<function_calls>\n{_invokes(cs)}\n</function_calls>" if cs else ""

    return legacy_text_transcript(
        messages, thinking=_xml_thinking, calls=calls, results=_function_results
    )


def render_xml(messages: Sequence[Message]) -> str:
    """`xml` (the fallback): Human/Assistant segments, bare invokes, `<tool_response>` blocks."""
    return legacy_text_transcript(
        messages, thinking=_xml_thinking, calls=_invokes, results=tool_response_results
    )


def render_minimax(messages: Sequence[Message]) -> str:
    """`minimax`: as `anthropic` with a `<minimax:tool_call>` envelope."""

    def calls(cs: Sequence[Mapping[str, Any]]) -> str:
        return f"<minimax:tool_call>\n{_invokes(cs)}\n</minimax:tool_call>" if cs else ""

    return legacy_text_transcript(
        messages, thinking=_xml_thinking, calls=calls, results=_function_results
    )


# -- ChatML families (hermes, qwen3) ---------------------------------------------------------
def _json_tool_calls(calls: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(
        "<tool_call>\n"
        + js_json({"name": _call_name(c), "arguments": dict(_call_args(c))})
        + "\n</tool_call>"
        for c in calls
    )


def render_hermes(messages: Sequence[Message]) -> str:
    """`hermes`: ChatML turns, `<tool_call>` JSON, results in a `tool` turn."""
    return chatml_transcript(
        messages,
        tool_result_role="tool",
        thinking=lambda t: delimited_thinking("<think>", "</think>", t),
        calls=_json_tool_calls,
        results=tool_response_results,
    )


def render_qwen3(messages: Sequence[Message]) -> str:
    """`qwen3`: ChatML turns, `<tool_call>` JSON, results in a `user` turn."""
    return chatml_transcript(
        messages,
        tool_result_role="user",
        thinking=_plain_thinking("<think>", "</think>"),
        calls=_json_tool_calls,
        results=tool_response_results,
    )


# -- glm -------------------------------------------------------------------------------------
def _glm_call(call: Mapping[str, Any]) -> str:
    args = _call_args(call)
    body = f"<tool_call>{_call_name(call)}"
    for key in js_keys(args):
        body += f"\n<arg_key>{key}</arg_key>\n<arg_value>{js_json(args[key])}</arg_value>"
    return f"{body}\n</tool_call>"


def render_glm(messages: Sequence[Message]) -> str:
    """`glm`: `[gMASK]<sop>` then `<|role|>\\n` turns, `<arg_key>`/`<arg_value>` calls."""
    if not messages:
        return ""
    out = "[gMASK]<sop>"
    i = 0
    while i < len(messages):
        msg = messages[i]
        role = msg.get("role")
        if role == "assistant":
            p = assistant_parts(msg)
            think = f"\n<think>\n{p.thinking}\n</think>" if p.thinking else ""
            calls = "\n".join(_glm_call(c) for c in p.calls)
            out += f"<|assistant|>\n{think}{p.text}{calls}"
            i += 1
        elif role == "toolResult":
            run, i = tool_result_run(messages, i)
            out += f"<|observation|>\n{tool_response_results(run)}"
        else:
            turn_role = "system" if role == "developer" else str(role)
            out += f"<|{turn_role}|>\n{content_text(msg.get('content'))}"
            i += 1
    return out


# -- kimi ------------------------------------------------------------------------------------
def _kimi_call_id(name: str, call_id: str, index: int) -> str:
    trimmed = _js_trim(call_id)
    return trimmed if trimmed.startswith("functions.") else f"functions.{name}:{index}"


def _kimi_turn(role: str, name: str, body: str) -> str:
    return f"<|im_{role}|>{name}<|im_middle|>{body}<|im_end|>"


def render_kimi(messages: Sequence[Message]) -> str:
    """`kimi`: `<|im_role|>name<|im_middle|>…<|im_end|>` turns, tool-call section tokens."""
    out = ""
    i = 0
    while i < len(messages):
        msg = messages[i]
        role = msg.get("role")
        if role == "assistant":
            p = assistant_parts(msg)
            calls = ""
            if p.calls:
                body = "".join(
                    f"<|tool_call_begin|>{_kimi_call_id(_call_name(c), str(c.get('id', '')), n)}"
                    f"<|tool_call_argument_begin|>{js_json(dict(_call_args(c)))}<|tool_call_end|>"
                    for n, c in enumerate(p.calls)
                )
                calls = f"<|tool_calls_section_begin|>{body}<|tool_calls_section_end|>"
            think = f"<think>\n{p.thinking}\n</think>" if p.thinking else ""
            out += _kimi_turn("assistant", "assistant", f"{think}{p.text}{calls}")
            i += 1
        elif role == "toolResult":
            run, i = tool_result_run(messages, i)
            out += "".join(
                _kimi_turn(
                    "system",
                    r.name,
                    f"## Return of {_kimi_call_id(r.name, r.id, r.index)}\n{r.text}",
                )
                for r in run
            )
        else:
            turn = "system" if role == "developer" else str(role)
            out += _kimi_turn(turn, turn, content_text(msg.get("content")))
            i += 1
    return out


# -- deepseek --------------------------------------------------------------------------------
_DS_BOS = "<\uff5cbegin\u2581of\u2581sentence\uff5c>"
_DS_EOS = "<\uff5cend\u2581of\u2581sentence\uff5c>"
_DS_USER = "<\uff5cUser\uff5c>"
_DS_ASSISTANT = "<\uff5cAssistant\uff5c>"
_DS_CALLS_BEGIN = "<\uff5ctool\u2581calls\u2581begin\uff5c>"
_DS_CALLS_END = "<\uff5ctool\u2581calls\u2581end\uff5c>"
_DS_CALL_BEGIN = "<\uff5ctool\u2581call\u2581begin\uff5c>"
_DS_CALL_END = "<\uff5ctool\u2581call\u2581end\uff5c>"
_DS_SEP = "<\uff5ctool\u2581sep\uff5c>"
_DS_OUTPUT_BEGIN = "<\uff5ctool\u2581output\u2581begin\uff5c>"
_DS_OUTPUT_END = "<\uff5ctool\u2581output\u2581end\uff5c>"


def render_deepseek(messages: Sequence[Message]) -> str:
    """`deepseek`: DeepSeek's full-width `<｜…｜>` tokens."""
    if not messages:
        return ""
    out = _DS_BOS
    i = 0
    while i < len(messages):
        msg = messages[i]
        role = msg.get("role")
        if role == "assistant":
            p = assistant_parts(msg)
            calls = ""
            if p.calls:
                body = "".join(
                    f"{_DS_CALL_BEGIN}{_call_name(c)}{_DS_SEP}{js_json(dict(_call_args(c)))}"
                    f"{_DS_CALL_END}"
                    for c in p.calls
                )
                calls = f"{_DS_CALLS_BEGIN}{body}{_DS_CALLS_END}"
            think = f"<think>\n{p.thinking}\n</think>" if p.thinking else ""
            out += f"{_DS_ASSISTANT}{think}{p.text}{calls}{_DS_EOS}"
            i += 1
        elif role == "toolResult":
            run, i = tool_result_run(messages, i)
            out += "\n".join(f"{_DS_OUTPUT_BEGIN}{r.text}{_DS_OUTPUT_END}" for r in run)
        else:
            text = content_text(msg.get("content"))
            out += text if role == "developer" else f"{_DS_USER}{text}"
            i += 1
    return out


# -- gemini ----------------------------------------------------------------------------------
def _py_string(value: str) -> str:
    escaped = (
        value.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


def py_value(value: Any) -> str:
    """`pyValue`: a JSON value as a Python literal (`True`/`False`/`None`, escaped strings)."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int | float):
        number = js_number(value)
        return number if math.isfinite(float(value)) else _py_string(number)
    if isinstance(value, str):
        return _py_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(py_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return (
            "{" + ", ".join(f"{_py_string(k)}: {py_value(value[k])}" for k in js_keys(value)) + "}"
        )
    return _py_string(str(value))


def _gemini_call(call: Mapping[str, Any]) -> str:
    args = _call_args(call)
    kwargs = ", ".join(f"{k}={py_value(args[k])}" for k in js_keys(args))
    return f"default_api.{_call_name(call)}({kwargs})"


def _gemini_turn(role: str, body: str) -> str:
    return f"<start_of_turn>{role}\n{body}<end_of_turn>\n"


def _join_user(left: str, right: str) -> str:
    if not left:
        return right
    if not right:
        return left
    return f"{left}\n{right}"


def render_gemini(messages: Sequence[Message]) -> str:
    """`gemini`: `<start_of_turn>` turns, ```` ```tool_code ```` Python calls, developer text
    folded into the next user turn."""
    if not messages:
        return ""
    out = "<bos>"
    preamble = ""
    i = 0
    while i < len(messages):
        msg = messages[i]
        role = msg.get("role")
        if role == "developer":
            preamble = _join_user(preamble, content_text(msg.get("content")))
            i += 1
            continue
        if role == "user":
            out += _gemini_turn("user", _join_user(preamble, content_text(msg.get("content"))))
            preamble = ""
            i += 1
            continue
        if preamble:
            out += _gemini_turn("user", preamble)
            preamble = ""
        if role == "assistant":
            p = assistant_parts(msg)
            think = f"```thinking\n{p.thinking}\n```\n" if p.thinking else ""
            # The release renders a call-less turn as an empty list `[]` too.
            body = (
                _gemini_call(p.calls[0])
                if len(p.calls) == 1
                else "[" + ", ".join(_gemini_call(c) for c in p.calls) + "]"
            )
            out += _gemini_turn("model", f"{think}{p.text}```tool_code\n{body}\n```")
            i += 1
            continue
        run, i = tool_result_run(messages, i)
        out += _gemini_turn("user", "\n".join(f"```tool_outputs\n{r.text}\n```" for r in run))
    if preamble:
        out += _gemini_turn("user", preamble)
    return out


# -- gemma -----------------------------------------------------------------------------------
_GEMMA_STRING = '<|"|>'


def gemma_value(value: Any) -> str:
    """`gemmaValue`: strings in `<|"|>` quotes, `key:value` objects, no spaces."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, str):
        return f"{_GEMMA_STRING}{value}{_GEMMA_STRING}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(gemma_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{gemma_value(value[k])}" for k in js_keys(value)) + "}"
    return f"{_GEMMA_STRING}{value}{_GEMMA_STRING}"


def _parse_maybe_json(text: str) -> Any:
    try:
        return js_json_parse(text)
    except ValueError:
        return text


def _gemma_results(results: Sequence[ToolResult]) -> str:
    return "".join(
        f"<|tool_response>response:{r.name}{{output:{gemma_value(_parse_maybe_json(r.text))}}}"
        "<tool_response|>"
        for r in results
    )


def _gemma_turn(role: str, body: str) -> str:
    return f"<|turn>{role}\n{body}<turn|>"


def render_gemma(messages: Sequence[Message]) -> str:
    """`gemma`: `<|turn>role` turns; the results following a model turn join that turn."""
    if not messages:
        return ""
    out = "<bos>"
    i = 0
    while i < len(messages):
        msg = messages[i]
        role = msg.get("role")
        if role == "assistant":
            p = assistant_parts(msg)
            think = f"<|channel>thought\n{p.thinking}<channel|>" if p.thinking else ""
            calls = "".join(
                "<|tool_call>call:"
                + _call_name(c)
                + "{"
                + ",".join(f"{k}:{gemma_value(_call_args(c)[k])}" for k in js_keys(_call_args(c)))
                + "}<tool_call|>"
                for c in p.calls
            )
            body = f"{think}{p.text}{calls}"
            i += 1
            if i < len(messages) and messages[i].get("role") == "toolResult":
                run, i = tool_result_run(messages, i)
                body += _gemma_results(run)
            out += _gemma_turn("model", body)
        elif role == "toolResult":
            run, i = tool_result_run(messages, i)
            out += _gemma_turn("model", _gemma_results(run))
        else:
            turn = "system" if role == "developer" else str(role)
            out += _gemma_turn(turn, content_text(msg.get("content")))
            i += 1
    return out


# -- harmony ---------------------------------------------------------------------------------
def _harmony_recipient(name: str) -> str:
    return name if name.startswith("functions.") else f"functions.{name}"


def render_harmony(messages: Sequence[Message]) -> str:
    """`harmony`: OpenAI's `<|start|>role<|channel|>…<|message|>…<|end|>` messages."""
    out = ""
    i = 0
    while i < len(messages):
        msg = messages[i]
        role = msg.get("role")
        if role == "assistant":
            p = assistant_parts(msg)
            emitted = False
            if p.thinking:
                out += f"<|start|>assistant<|channel|>analysis<|message|>{p.thinking}<|end|>"
                emitted = True
            if p.text:
                out += f"<|start|>assistant<|channel|>final<|message|>{p.text}<|end|>"
                emitted = True
            for c in p.calls:
                out += (
                    f"<|start|>assistant<|channel|>commentary to="
                    f"{_harmony_recipient(_call_name(c))}<|message|>"
                    f"{js_json(dict(_call_args(c)))}<|call|>"
                )
                emitted = True
            if not emitted:
                out += "<|start|>assistant<|channel|>final<|message|><|end|>"
            i += 1
        elif role == "toolResult":
            run, i = tool_result_run(messages, i)
            out += "".join(
                f"<|start|>{_harmony_recipient(r.name)} to=assistant<|channel|>commentary"
                f"<|message|>{r.text}<|end|>"
                for r in run
            )
        else:
            out += f"<|start|>{role}<|message|>{content_text(msg.get('content'))}<|end|>"
            i += 1
    return out


_HARMONY_TOKEN_RE = re.compile(r"<\|(start|end|message|channel|constrain|return|call)\|>")


def escape_harmony_control_tokens(text: str) -> str:
    """`escapeHarmonyControlTokens`: `<|start|>` becomes the inert `<\\|start\\|>`."""
    return _HARMONY_TOKEN_RE.sub(r"<\\|\1\\|>", text)


# -- legacy (no dialect) ---------------------------------------------------------------------
def render_legacy(messages: Sequence[Message]) -> str:
    """The release's serializer without a dialect: `[User]:`, `[Think]:`, `[Assistant]:`,
    `[Tool Call]:` and `[Tool Result]:` parts joined by a blank line.

    Developer messages and images are left out; `useless` pairs are already gone.
    """
    parts: list[str] = []
    for msg in messages:
        role = msg.get("role")
        if role == "user":
            content = msg.get("content")
            text = (
                content
                if isinstance(content, str)
                else "".join(
                    str(b.get("text", "")) for b in _blocks(msg) if b.get("type") == "text"
                )
            )
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            p_text: list[str] = []
            p_think: list[str] = []
            p_calls: list[str] = []
            for block in _blocks(msg):
                kind = block.get("type")
                if kind == "text":
                    p_text.append(str(block.get("text", "")))
                elif kind == "thinking":
                    p_think.append(str(block.get("thinking", "")))
                elif kind == "toolCall":
                    args = _call_args(block)
                    rendered = ", ".join(f"{k}={js_json(args[k])}" for k in js_keys(args))
                    p_calls.append(f"{_call_name(block)}({rendered})")
            if p_think:
                parts.append("[Think]: " + "\n".join(p_think))
            if p_text:
                parts.append("[Assistant]: " + "\n".join(p_text))
            if p_calls:
                parts.append("[Tool Call]: " + "; ".join(p_calls))
        elif role == "toolResult":
            text = "".join(str(b.get("text", "")) for b in _blocks(msg) if b.get("type") == "text")
            if text:
                parts.append(f"[Tool Result]: {truncate_tool_result(text)}")
    return "\n\n".join(parts)


# -- preparation and dispatch ----------------------------------------------------------------
def useless_call_ids(messages: Iterable[Message]) -> frozenset[str]:
    """Ids of the tool calls whose results are flagged `useless` and are not errors."""
    return frozenset(
        str(m.get("toolCallId"))
        for m in messages
        if m.get("role") == "toolResult"
        and m.get("useless") is True
        and m.get("isError") is not True
    )


def without_useless(messages: Sequence[Message]) -> list[Message]:
    """The legacy serializer's view: useless results and their calls gone (blocks only)."""
    useless = useless_call_ids(messages)
    if not useless:
        return list(messages)
    out: list[Message] = []
    for msg in messages:
        role = msg.get("role")
        if role == "toolResult" and str(msg.get("toolCallId")) in useless:
            continue
        if role == "assistant":
            blocks = [
                b
                for b in _blocks(msg)
                if not (b.get("type") == "toolCall" and str(b.get("id")) in useless)
            ]
            msg = {**msg, "content": blocks}
        out.append(msg)
    return out


def dialect_input(messages: Sequence[Message], dialect: str) -> list[Message]:
    """The messages a dialect renders (see the module docstring for the rules)."""
    useless = useless_call_ids(messages)
    drop_thinking = dialect == "anthropic"
    out: list[Message] = []
    for msg in messages:
        role = msg.get("role")
        if role == "assistant":
            content = msg.get("content")
            blocks = content if isinstance(content, list) else []
            kept = [
                b
                for b in blocks
                if not (
                    isinstance(b, Mapping)
                    and (
                        (b.get("type") == "toolCall" and str(b.get("id")) in useless)
                        or (drop_thinking and b.get("type") == "thinking")
                    )
                )
            ]
            if kept:
                out.append(msg if len(kept) == len(blocks) else {**msg, "content": kept})
        elif role == "toolResult":
            if str(msg.get("toolCallId")) in useless:
                continue
            text = "".join(str(b.get("text", "")) for b in _blocks(msg) if b.get("type") == "text")
            if text:
                out.append(
                    {**msg, "content": [{"type": "text", "text": truncate_tool_result(text)}]}
                )
        else:
            out.append(msg)
    return out


RENDERERS: Final[Mapping[str, Callable[[Sequence[Message]], str]]] = {
    "anthropic": render_anthropic,
    "harmony": render_harmony,
    "xml": render_xml,
    "glm": render_glm,
    "hermes": render_hermes,
    "kimi": render_kimi,
    "deepseek": render_deepseek,
    "qwen3": render_qwen3,
    "gemini": render_gemini,
    "gemma": render_gemma,
    "minimax": render_minimax,
}
"""One transcript renderer per dialect (`getDialectDefinition(d).renderTranscript`)."""


def serialize_for_summary(messages: Iterable[Message], dialect: str | None) -> str:
    """The summarizer's input text: `serializeConversationForSummary(messages, dialect)`.

    Args:
        messages: LLM messages (after `convert_to_llm`, MusePi profile).
        dialect: One of `SUMMARY_DIALECTS`, or None / `"none"` for the legacy labelled serializer.

    Raises:
        ValueError: An unknown dialect.
    """
    listed = list(messages)
    if dialect is None or dialect == LEGACY_DIALECT:
        text = render_legacy(without_useless(listed))
    else:
        render = RENDERERS.get(dialect)
        if render is None:
            known = ", ".join((LEGACY_DIALECT, *SUMMARY_DIALECTS))
            raise ValueError(f"unknown summary dialect {dialect!r} (known: {known})")
        text = render(dialect_input(listed, dialect))
        if dialect == "harmony":
            text = escape_harmony_control_tokens(text)
    return neutralize_boundary_tags(text)


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
    lower = _js_trim(logical).lower()
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
