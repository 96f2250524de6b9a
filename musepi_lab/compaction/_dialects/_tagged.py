"""Tool-call markup dialects: Claude-style invokes (anthropic, xml, minimax), the ChatML
families (hermes, qwen3), glm, kimi and deepseek."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._js import js_json, js_keys, js_trim
from ._parts import (
    Message,
    ToolResult,
    call_args,
    call_name,
    chatml_transcript,
    delimited_thinking,
    escape_xml_attr,
    escape_xml_text,
    legacy_text_transcript,
    plain_thinking,
    system_role,
    tool_response_results,
    turns,
)


# -- Claude-style invoke markup (anthropic, xml, minimax) ------------------------------------
def _invoke(call: Mapping[str, Any]) -> str:
    # Without tool schemas (the summary has none) every value is JSON, strings included.
    args = call_args(call)
    params = "".join(
        f'<parameter name="{escape_xml_attr(k)}">{js_json(args[k])}</parameter>'
        for k in js_keys(args)
    )
    return f'<invoke name="{escape_xml_attr(call_name(call))}">{params}</invoke>'


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
        + js_json({"name": call_name(c), "arguments": dict(call_args(c))})
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
        thinking=plain_thinking("<think>", "</think>"),
        calls=_json_tool_calls,
        results=tool_response_results,
    )


# -- glm -------------------------------------------------------------------------------------
def _glm_call(call: Mapping[str, Any]) -> str:
    args = call_args(call)
    body = f"<tool_call>{call_name(call)}"
    for key in js_keys(args):
        body += f"\n<arg_key>{key}</arg_key>\n<arg_value>{js_json(args[key])}</arg_value>"
    return f"{body}\n</tool_call>"


def render_glm(messages: Sequence[Message]) -> str:
    """`glm`: `[gMASK]<sop>` then `<|role|>\\n` turns, `<arg_key>`/`<arg_value>` calls."""
    if not messages:
        return ""
    out = "[gMASK]<sop>"
    for turn in turns(messages):
        p = turn.parts
        if turn.role == "assistant":
            think = f"\n<think>\n{p.thinking}\n</think>" if p.thinking else ""
            calls = "\n".join(_glm_call(c) for c in p.calls)
            out += f"<|assistant|>\n{think}{p.text}{calls}"
        elif turn.role == "toolResult":
            out += f"<|observation|>\n{tool_response_results(turn.results)}"
        else:
            out += f"<|{system_role(turn.role)}|>\n{turn.text}"
    return out


# -- kimi ------------------------------------------------------------------------------------
def _kimi_call_id(name: str, call_id: str, index: int) -> str:
    trimmed = js_trim(call_id)
    return trimmed if trimmed.startswith("functions.") else f"functions.{name}:{index}"


def _kimi_turn(role: str, name: str, body: str) -> str:
    return f"<|im_{role}|>{name}<|im_middle|>{body}<|im_end|>"


def render_kimi(messages: Sequence[Message]) -> str:
    """`kimi`: `<|im_role|>name<|im_middle|>…<|im_end|>` turns, tool-call section tokens."""
    out = ""
    for turn in turns(messages):
        p = turn.parts
        if turn.role == "assistant":
            calls = ""
            if p.calls:
                body = "".join(
                    f"<|tool_call_begin|>{_kimi_call_id(call_name(c), str(c.get('id', '')), n)}"
                    f"<|tool_call_argument_begin|>{js_json(dict(call_args(c)))}<|tool_call_end|>"
                    for n, c in enumerate(p.calls)
                )
                calls = f"<|tool_calls_section_begin|>{body}<|tool_calls_section_end|>"
            think = f"<think>\n{p.thinking}\n</think>" if p.thinking else ""
            out += _kimi_turn("assistant", "assistant", f"{think}{p.text}{calls}")
        elif turn.role == "toolResult":
            out += "".join(
                _kimi_turn(
                    "system",
                    r.name,
                    f"## Return of {_kimi_call_id(r.name, r.id, r.index)}\n{r.text}",
                )
                for r in turn.results
            )
        else:
            role = system_role(turn.role)
            out += _kimi_turn(role, role, turn.text)
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
    for turn in turns(messages):
        p = turn.parts
        if turn.role == "assistant":
            calls = ""
            if p.calls:
                body = "".join(
                    f"{_DS_CALL_BEGIN}{call_name(c)}{_DS_SEP}{js_json(dict(call_args(c)))}"
                    f"{_DS_CALL_END}"
                    for c in p.calls
                )
                calls = f"{_DS_CALLS_BEGIN}{body}{_DS_CALLS_END}"
            think = f"<think>\n{p.thinking}\n</think>" if p.thinking else ""
            out += f"{_DS_ASSISTANT}{think}{p.text}{calls}{_DS_EOS}"
        elif turn.role == "toolResult":
            out += "\n".join(f"{_DS_OUTPUT_BEGIN}{r.text}{_DS_OUTPUT_END}" for r in turn.results)
        else:
            out += turn.text if turn.role == "developer" else f"{_DS_USER}{turn.text}"
    return out
