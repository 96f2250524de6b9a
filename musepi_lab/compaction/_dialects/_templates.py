"""Chat-template dialects with their own value printing: gemini, gemma and harmony."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._js import js_json, js_json_parse, js_keys, js_number
from ._parts import (
    Message,
    ToolResult,
    call_args,
    call_name,
    system_role,
    turns,
)


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
    args = call_args(call)
    kwargs = ", ".join(f"{k}={py_value(args[k])}" for k in js_keys(args))
    return f"default_api.{call_name(call)}({kwargs})"


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
    for turn in turns(messages):
        if turn.role == "developer":
            preamble = _join_user(preamble, turn.text)
            continue
        if turn.role == "user":
            out += _gemini_turn("user", _join_user(preamble, turn.text))
            preamble = ""
            continue
        if preamble:
            out += _gemini_turn("user", preamble)
            preamble = ""
        p = turn.parts
        if turn.role == "assistant":
            think = f"```thinking\n{p.thinking}\n```\n" if p.thinking else ""
            # The release renders a call-less turn as an empty list `[]` too.
            body = (
                _gemini_call(p.calls[0])
                if len(p.calls) == 1
                else "[" + ", ".join(_gemini_call(c) for c in p.calls) + "]"
            )
            out += _gemini_turn("model", f"{think}{p.text}```tool_code\n{body}\n```")
            continue
        # The release's walk takes any other message as a run of tool results.
        out += _gemini_turn(
            "user", "\n".join(f"```tool_outputs\n{r.text}\n```" for r in turn.results)
        )
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
    model_turn: str | None = None  # a model turn waiting for the tool results after it
    for turn in turns(messages):
        if model_turn is not None:
            if turn.role == "toolResult":
                out += _gemma_turn("model", model_turn + _gemma_results(turn.results))
                model_turn = None
                continue
            out += _gemma_turn("model", model_turn)
            model_turn = None
        p = turn.parts
        if turn.role == "assistant":
            think = f"<|channel>thought\n{p.thinking}<channel|>" if p.thinking else ""
            calls = "".join(
                "<|tool_call>call:"
                + call_name(c)
                + "{"
                + ",".join(f"{k}:{gemma_value(call_args(c)[k])}" for k in js_keys(call_args(c)))
                + "}<tool_call|>"
                for c in p.calls
            )
            model_turn = f"{think}{p.text}{calls}"
        elif turn.role == "toolResult":
            out += _gemma_turn("model", _gemma_results(turn.results))
        else:
            out += _gemma_turn(system_role(turn.role), turn.text)
    if model_turn is not None:
        out += _gemma_turn("model", model_turn)
    return out


# -- harmony ---------------------------------------------------------------------------------
def _harmony_recipient(name: str) -> str:
    return name if name.startswith("functions.") else f"functions.{name}"


def render_harmony(messages: Sequence[Message]) -> str:
    """`harmony`: OpenAI's `<|start|>role<|channel|>…<|message|>…<|end|>` messages."""
    out = ""
    for turn in turns(messages):
        p = turn.parts
        if turn.role == "assistant":
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
                    f"{_harmony_recipient(call_name(c))}<|message|>"
                    f"{js_json(dict(call_args(c)))}<|call|>"
                )
                emitted = True
            if not emitted:
                out += "<|start|>assistant<|channel|>final<|message|><|end|>"
        elif turn.role == "toolResult":
            out += "".join(
                f"<|start|>{_harmony_recipient(r.name)} to=assistant<|channel|>commentary"
                f"<|message|>{r.text}<|end|>"
                for r in turn.results
            )
        else:
            out += f"<|start|>{turn.role}<|message|>{turn.text}<|end|>"
    return out


_HARMONY_TOKEN_RE = re.compile(r"<\|(start|end|message|channel|constrain|return|call)\|>")


def escape_harmony_control_tokens(text: str) -> str:
    """`escapeHarmonyControlTokens`: `<|start|>` becomes the inert `<\\|start\\|>`."""
    return _HARMONY_TOKEN_RE.sub(r"<\\|\1\\|>", text)
