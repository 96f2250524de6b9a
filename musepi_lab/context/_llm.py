"""Runtime messages to provider roles (`convert_to_llm`, spec §2.2 and §2.3) and pi's
provider-layer repairs (`provider_messages`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._prompts import PromptSet, resolve_prompts
from ..session._model import Message
from ..session._profiles import Profile, check_profile
from . import _templates as tpl
from ._build import ADVISOR_TYPE
from ._summaries import _is_number


# ---------------------------------------------------------------------------------------
# convert_to_llm (spec §2.2 pi, §2.3 MusePi)
# ---------------------------------------------------------------------------------------
def bash_execution_text(message: Message, *, path_notice: bool = True) -> str:
    """The user text a `bashExecution` message becomes (spec §2.2).

    `path_notice`: append pi's `[Output truncated. Full output: <path>]` from `truncated` and
    `fullOutputPath`. oh-my-pi 18.2.3 (`bashExecutionToText`) writes its notices from the
    message's `meta` only and never reads those two fields, so the MusePi profile passes False.
    """
    text = f"Ran `{message.get('command', '')}`\n"
    output = message.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif _is_number(exit_code) and exit_code != 0:
        text += f"\n\nCommand exited with code {exit_code}"
    if path_notice and message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def python_execution_text(message: Message, *, path_notice: bool = True) -> str:
    """The user text a MusePi `pythonExecution` message becomes (same shape as bash;
    `path_notice` as in `bash_execution_text`)."""
    text = f"Ran Python:\n```python\n{message.get('code', '')}\n```\n"
    output = message.get("output")
    text += f"Output:\n```\n{output}\n```" if output else "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(execution cancelled)"
    elif _is_number(exit_code) and exit_code != 0:
        text += f"\n\nExecution failed with code {exit_code}"
    if path_notice and message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _text_content(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _user(content: list[Any], message: Message, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "role": "user",
        "content": content,
        "timestamp": message.get("timestamp"),
    }
    out.update(extra)
    return out


def render_compaction_summary(
    message: Message, *, profile: Profile | str = "musepi", prompts: PromptSet | None = None
) -> str:
    """The wrapped text of a compactionSummary message (without snapcompact blocks).

    pi wraps with its fixed prefix and suffix; MusePi renders the prompt set's
    `compaction-summary-context` (or `handoff-summary-context` for a handoff).
    """
    summary = str(message.get("summary", ""))
    if profile == "pi":
        return tpl.COMPACTION_SUMMARY_PREFIX + summary + tpl.COMPACTION_SUMMARY_SUFFIX
    name = (
        "handoff-summary-context"
        if message.get("method") == "handoff"
        else "compaction-summary-context"
    )
    return resolve_prompts(prompts).render(name, summary=summary)


def render_branch_summary(
    message: Message, *, profile: Profile | str = "musepi", prompts: PromptSet | None = None
) -> str:
    """The wrapped text of a branchSummary message (MusePi: `branch-summary-context`)."""
    summary = str(message.get("summary", ""))
    if profile == "pi":
        return tpl.BRANCH_SUMMARY_PREFIX + summary + tpl.BRANCH_SUMMARY_SUFFIX
    return resolve_prompts(prompts).render("branch-summary-context", summary=summary)


def _pi_to_llm(message: Message) -> dict[str, Any] | None:
    role = message.get("role")
    if role in ("user", "assistant", "toolResult"):
        return dict(message)
    if role == "bashExecution":
        if message.get("excludeFromContext"):
            return None
        return _user([{"type": "text", "text": bash_execution_text(message)}], message)
    if role == "custom":
        return _user(_text_content(message.get("content")), message)
    if role == "branchSummary":
        return _user(
            [{"type": "text", "text": render_branch_summary(message, profile="pi")}], message
        )
    if role == "compactionSummary":
        text = render_compaction_summary(message, profile="pi")
        return _user([{"type": "text", "text": text}], message)
    return None


def pruned_tool_result_content(content: Any) -> list[Any]:
    """A pruned tool result's content: its texts as one block at the first text, images kept."""
    blocks = list(content) if isinstance(content, list) else []
    texts = [
        b.get("text", "")
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    text = "".join(texts) or tpl.PRUNED_TOOL_RESULT_TEXT
    first = next(
        (i for i, b in enumerate(blocks) if isinstance(b, Mapping) and b.get("type") == "text"),
        -1,
    )
    if first < 0:
        return [{"type": "text", "text": text}, *blocks]
    out: list[Any] = []
    for index, block in enumerate(blocks):
        is_text = isinstance(block, Mapping) and block.get("type") == "text"
        if not is_text:
            out.append(block)
        elif index == first:
            out.append({"type": "text", "text": text})
    return out


def custom_message_role(message: Message) -> str:
    """`developer` for custom messages, except advisor cards addressed to the user."""
    if message.get("customType") != ADVISOR_TYPE:
        return "developer"
    details = message.get("details")
    if isinstance(details, Mapping) and details.get("messageRole") == "user":
        return "user"
    return "developer"


def _musepi_to_llm(message: Message, prompts: PromptSet | None = None) -> dict[str, Any] | None:
    role = message.get("role")
    if role in ("custom", "hookMessage"):
        out: dict[str, Any] = {
            "role": custom_message_role(message),
            "content": _text_content(message.get("content")),
            "timestamp": message.get("timestamp"),
        }
        attribution = message.get("attribution")
        if attribution is None and message.get("customType") == ADVISOR_TYPE:
            attribution = "agent"
        if attribution is not None:
            out["attribution"] = attribution
        return out
    if role == "branchSummary":
        text = render_branch_summary(message, prompts=prompts)
        return _user([{"type": "text", "text": text}], message, attribution="agent")
    if role == "compactionSummary":
        blocks = message.get("blocks")
        if blocks is not None:
            content = [{"type": "text", "text": str(message.get("summary", ""))}, *blocks]
        else:
            images = message.get("images") or []
            content = [
                {"type": "text", "text": render_compaction_summary(message, prompts=prompts)},
                *images,
            ]
        out = _user(content, message, attribution="agent")
        if message.get("providerPayload") is not None:
            out["providerPayload"] = message["providerPayload"]
        return out
    if role == "user":
        return {**message, "attribution": message.get("attribution") or "user"}
    if role == "developer":
        return {**message, "attribution": message.get("attribution") or "agent"}
    if role == "assistant":
        return dict(message)
    if role == "toolResult":
        out = {**message, "attribution": message.get("attribution") or "agent"}
        if message.get("prunedAt") is not None:
            out["content"] = pruned_tool_result_content(message.get("content"))
        return out
    if role == "bashExecution":
        if message.get("excludeFromContext"):
            return None
        text = bash_execution_text(message, path_notice=False)
        return _user([{"type": "text", "text": text}], message, attribution="user")
    if role == "pythonExecution":
        if message.get("excludeFromContext"):
            return None
        text = python_execution_text(message, path_notice=False)
        return _user([{"type": "text", "text": text}], message, attribution="user")
    return None


def convert_to_llm(
    messages: Iterable[Message],
    *,
    profile: Profile | str = "musepi",
    prompts: PromptSet | None = None,
) -> list[dict[str, Any]]:
    """Runtime messages → provider-role messages (spec §2.2 pi, §2.3 MusePi).

    pi: user/assistant/toolResult pass; bashExecution, custom and both summaries become
    user messages. MusePi: custom/hookMessage become `developer` (advisor cards addressed to
    the user stay `user`), summaries are rendered through the context templates (a handoff
    through its own), snapcompact blocks follow the raw summary, pruned tool results
    collapse to one text block, and every message gets its attribution. Roles a profile
    does not know are dropped. Each result is a new top-level dict.

    Args:
        messages: Runtime messages, e.g. `SessionContext.messages`.
        profile: `"musepi"` or `"pi"`.
        prompts: The prompt set whose context templates wrap summaries (MusePi; default:
            the project's).

    Raises:
        ValueError: Unknown profile.
    """
    check_profile(profile)
    prompt_set = resolve_prompts(prompts) if profile != "pi" else None
    out: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        llm = _pi_to_llm(message) if profile == "pi" else _musepi_to_llm(message, prompt_set)
        if llm is not None:
            out.append(llm)
    return out


# ---------------------------------------------------------------------------------------
# Provider layer (pi `transformMessages`, second pass)
# ---------------------------------------------------------------------------------------
def _synthetic_results(
    pending: Sequence[Mapping[str, Any]], seen: set[Any], timestamp: Any
) -> list[dict[str, Any]]:
    return [
        {
            "role": "toolResult",
            "toolCallId": call.get("id"),
            "toolName": call.get("name"),
            "content": [{"type": "text", "text": tpl.SYNTHETIC_TOOL_RESULT_TEXT}],
            "isError": True,
            "timestamp": timestamp,
        }
        for call in pending
        if call.get("id") not in seen
    ]


def provider_messages(llm_messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """pi's provider-layer repairs of LLM messages (spec §2.2, `transform-messages.ts`).

    Assistant turns with stopReason `error`/`aborted` are skipped; a tool call left without
    a result gets a made-up error result ("No result provided") inserted before the next
    user message or the next assistant turn. Calls still pending at the end stay as they
    are, as in pi. pi stamps the made-up result with the current time; we use the calling
    turn's timestamp so the output is deterministic.

    Args:
        llm_messages: Output of `convert_to_llm`.
    """
    out: list[dict[str, Any]] = []
    pending: list[Mapping[str, Any]] = []
    pending_ts: Any = None
    seen: set[Any] = set()
    for message in llm_messages:
        role = message.get("role")
        if role in ("assistant", "user") and pending:
            out.extend(_synthetic_results(pending, seen, pending_ts))
            pending, seen = [], set()
        if role == "assistant":
            if message.get("stopReason") in ("error", "aborted"):
                continue
            content = message.get("content")
            calls = [
                b
                for b in (content if isinstance(content, list) else [])
                if isinstance(b, Mapping) and b.get("type") == "toolCall"
            ]
            if calls:
                pending, seen, pending_ts = calls, set(), message.get("timestamp")
        elif role == "toolResult":
            seen.add(message.get("toolCallId"))
        out.append(dict(message))
    return out
