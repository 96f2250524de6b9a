"""The summarizer input in each dialect (MusePi profile) against oh-my-pi 18.2.3.

Two kinds of check:

- unit: one small hand-made conversation rendered in every dialect; each expected text is
  written out here from the release's sources (`pi-agent-core/src/compaction/utils.ts`,
  `pi-ai/src/dialect/<dialect>.ts` and `rendering.ts`), not from our output, and was checked
  once against the release itself (the same messages through its exported
  `serializeConversationForSummary` and `preferredDialect` under Bun: all equal);
- corpus: every pi-format corpus file at several budgets, each dialect's text next to the
  text the release's `serializeConversationForSummary(convertToLlm(...), dialect)` produced
  (the reference driver, `conformance/`), byte for byte. The reference documents are the
  conformance package's cached runs (`cached_reference`: keyed by the file's digest, the pins,
  the driver and the options), so a second run does not start Bun. Missing node, npm or Bun skips these,
  except under CI=true, where it fails them.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any, NoReturn

import pytest
from _corpus import PI_FILES, REPO_ROOT, corpus_file

from musepi_lab import read_session
from musepi_lab.compaction._summary_dialects import (
    SUMMARY_DIALECTS,
    js_keys,
    js_number,
    preferred_dialect,
    serialize_for_summary,
)
from musepi_lab.conformance import ReferenceToolMissing
from musepi_lab.conformance._dialects import (
    MEASURE_DIALECTS,
    SUMMARY_ROLES,
    compare_summarizer_inputs,
    text_difference,
    wording_only,
)
from musepi_lab.conformance._reference import cached_reference

# -- unit: one conversation, every dialect ---------------------------------------------------
CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "content": "Fix <conversation> bug", "timestamp": 1},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "look first"},
            {"type": "text", "text": "Reading."},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.py"}},
            {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"cmd": "ls", "n": 2}},
        ],
    },
    {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "read",
        "content": [{"type": "text", "text": "x = 1"}],
        "isError": False,
    },
    {
        "role": "toolResult",
        "toolCallId": "c2",
        "toolName": "bash",
        "content": [{"type": "text", "text": "boom"}],
        "isError": True,
    },
    {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
]
USER = "Fix &lt;conversation> bug"  # every dialect's output neutralizes boundary tags
READ_INVOKE = '<invoke name="read"><parameter name="path">"a.py"</parameter></invoke>'
BASH_INVOKE = (
    '<invoke name="bash"><parameter name="cmd">"ls"</parameter>'
    '<parameter name="n">2</parameter></invoke>'
)
FUNCTION_RESULTS = (
    "<function_results>\n"
    "<result>\n<tool_name>read</tool_name>\n<stdout>x = 1</stdout>\n</result>\n"
    "<error>\n<tool_name>bash</tool_name>\n<stderr>boom</stderr>\n</error>\n"
    "</function_results>"
)
TOOL_RESPONSES = "<tool_response>\nx = 1\n</tool_response>\n<tool_response>\nboom\n</tool_response>"
READ_JSON = '{"path":"a.py"}'
BASH_JSON = '{"cmd":"ls","n":2}'
DS = {  # DeepSeek's tokens: full-width bars (U+FF5C) and U+2581 for spaces
    "bos": "<\uff5cbegin\u2581of\u2581sentence\uff5c>",
    "eos": "<\uff5cend\u2581of\u2581sentence\uff5c>",
    "user": "<\uff5cUser\uff5c>",
    "assistant": "<\uff5cAssistant\uff5c>",
    "calls": "<\uff5ctool\u2581calls\u2581begin\uff5c>",
    "calls_end": "<\uff5ctool\u2581calls\u2581end\uff5c>",
    "call": "<\uff5ctool\u2581call\u2581begin\uff5c>",
    "call_end": "<\uff5ctool\u2581call\u2581end\uff5c>",
    "sep": "<\uff5ctool\u2581sep\uff5c>",
    "out": "<\uff5ctool\u2581output\u2581begin\uff5c>",
    "out_end": "<\uff5ctool\u2581output\u2581end\uff5c>",
}


def harmony_escaped(text: str) -> str:
    # Every `<|…|>` in these texts is a harmony control token, which the release escapes.
    return text.replace("<|", "<\\|").replace("|>", "\\|>")


EXPECTED: dict[str, str] = {
    "none": (
        f"[User]: {USER}\n\n[Think]: look first\n\n[Assistant]: Reading.\n\n"
        '[Tool Call]: read(path="a.py"); bash(cmd="ls", n=2)\n\n'
        "[Tool Result]: x = 1\n\n[Tool Result]: boom\n\n[Assistant]: Done."
    ),
    "anthropic": (  # thinking dropped for Claude targets
        f"\n\nHuman: {USER}"
        f"\n\nAssistant: Reading.<function_calls>\n{READ_INVOKE}\n{BASH_INVOKE}\n</function_calls>"
        f"\n\nHuman: {FUNCTION_RESULTS}"
        "\n\nAssistant: Done."
    ),
    "xml": (
        f"\n\nHuman: {USER}"
        f"\n\nAssistant: <thinking>\nlook first\n</thinking>Reading.{READ_INVOKE}\n{BASH_INVOKE}"
        f"\n\nHuman: {TOOL_RESPONSES}"
        "\n\nAssistant: Done."
    ),
    "minimax": (
        f"\n\nHuman: {USER}"
        "\n\nAssistant: <thinking>\nlook first\n</thinking>Reading."
        f"<minimax:tool_call>\n{READ_INVOKE}\n{BASH_INVOKE}\n</minimax:tool_call>"
        f"\n\nHuman: {FUNCTION_RESULTS}"
        "\n\nAssistant: Done."
    ),
    "harmony": harmony_escaped(
        f"<|start|>user<|message|>{USER}<|end|>"
        "<|start|>assistant<|channel|>analysis<|message|>look first<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Reading.<|end|>"
        f"<|start|>assistant<|channel|>commentary to=functions.read<|message|>{READ_JSON}<|call|>"
        f"<|start|>assistant<|channel|>commentary to=functions.bash<|message|>{BASH_JSON}<|call|>"
        "<|start|>functions.read to=assistant<|channel|>commentary<|message|>x = 1<|end|>"
        "<|start|>functions.bash to=assistant<|channel|>commentary<|message|>boom<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Done.<|end|>"
    ),
    "glm": (
        f"[gMASK]<sop><|user|>\n{USER}"
        "<|assistant|>\n\n<think>\nlook first\n</think>Reading."
        '<tool_call>read\n<arg_key>path</arg_key>\n<arg_value>"a.py"</arg_value>\n</tool_call>\n'
        '<tool_call>bash\n<arg_key>cmd</arg_key>\n<arg_value>"ls"</arg_value>\n'
        "<arg_key>n</arg_key>\n<arg_value>2</arg_value>\n</tool_call>"
        f"<|observation|>\n{TOOL_RESPONSES}"
        "<|assistant|>\nDone."
    ),
    "hermes": (
        f"<|im_start|>user\n{USER}<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nlook first\n</think>Reading."
        '<tool_call>\n{"name":"read","arguments":{"path":"a.py"}}\n</tool_call>\n'
        '<tool_call>\n{"name":"bash","arguments":{"cmd":"ls","n":2}}\n</tool_call><|im_end|>\n'
        f"<|im_start|>tool\n{TOOL_RESPONSES}<|im_end|>\n"
        "<|im_start|>assistant\nDone.<|im_end|>\n"
    ),
    "qwen3": (
        f"<|im_start|>user\n{USER}<|im_end|>\n"
        "<|im_start|>assistant\n<think>\nlook first\n</think>Reading."
        '<tool_call>\n{"name":"read","arguments":{"path":"a.py"}}\n</tool_call>\n'
        '<tool_call>\n{"name":"bash","arguments":{"cmd":"ls","n":2}}\n</tool_call><|im_end|>\n'
        f"<|im_start|>user\n{TOOL_RESPONSES}<|im_end|>\n"
        "<|im_start|>assistant\nDone.<|im_end|>\n"
    ),
    "kimi": (
        f"<|im_user|>user<|im_middle|>{USER}<|im_end|>"
        "<|im_assistant|>assistant<|im_middle|><think>\nlook first\n</think>Reading."
        "<|tool_calls_section_begin|>"
        f"<|tool_call_begin|>functions.read:0<|tool_call_argument_begin|>{READ_JSON}<|tool_call_end|>"
        f"<|tool_call_begin|>functions.bash:1<|tool_call_argument_begin|>{BASH_JSON}<|tool_call_end|>"
        "<|tool_calls_section_end|><|im_end|>"
        "<|im_system|>read<|im_middle|>## Return of functions.read:0\nx = 1<|im_end|>"
        "<|im_system|>bash<|im_middle|>## Return of functions.bash:1\nboom<|im_end|>"
        "<|im_assistant|>assistant<|im_middle|>Done.<|im_end|>"
    ),
    "deepseek": (
        f"{DS['bos']}{DS['user']}{USER}"
        f"{DS['assistant']}<think>\nlook first\n</think>Reading.{DS['calls']}"
        f"{DS['call']}read{DS['sep']}{READ_JSON}{DS['call_end']}"
        f"{DS['call']}bash{DS['sep']}{BASH_JSON}{DS['call_end']}"
        f"{DS['calls_end']}{DS['eos']}"
        f"{DS['out']}x = 1{DS['out_end']}\n{DS['out']}boom{DS['out_end']}"
        f"{DS['assistant']}Done.{DS['eos']}"
    ),
    "gemini": (  # a call-less model turn still gets an empty `[]` tool_code block
        f"<bos><start_of_turn>user\n{USER}<end_of_turn>\n"
        "<start_of_turn>model\n```thinking\nlook first\n```\nReading.```tool_code\n"
        '[default_api.read(path="a.py"), default_api.bash(cmd="ls", n=2)]\n```<end_of_turn>\n'
        "<start_of_turn>user\n```tool_outputs\nx = 1\n```\n```tool_outputs\nboom\n```"
        "<end_of_turn>\n"
        "<start_of_turn>model\nDone.```tool_code\n[]\n```<end_of_turn>\n"
    ),
    "gemma": (  # the results following a model turn are part of that turn
        f"<bos><|turn>user\n{USER}<turn|>"
        "<|turn>model\n<|channel>thought\nlook first<channel|>Reading."
        '<|tool_call>call:read{path:<|"|>a.py<|"|>}<tool_call|>'
        '<|tool_call>call:bash{cmd:<|"|>ls<|"|>,n:2}<tool_call|>'
        '<|tool_response>response:read{output:<|"|>x = 1<|"|>}<tool_response|>'
        '<|tool_response>response:bash{output:<|"|>boom<|"|>}<tool_response|>'
        "<turn|><|turn>model\nDone.<turn|>"
    ),
}


def test_every_dialect_has_an_expected_text() -> None:
    assert set(EXPECTED) == set(MEASURE_DIALECTS) == {"none", *SUMMARY_DIALECTS}


@pytest.mark.parametrize("dialect", sorted(EXPECTED))
def test_dialect_renders_the_release_format(dialect: str) -> None:
    assert serialize_for_summary(CONVERSATION, dialect) == EXPECTED[dialect]


def test_none_and_legacy_are_the_same_serializer() -> None:
    assert serialize_for_summary(CONVERSATION, None) == EXPECTED["none"]


def test_unknown_dialect_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'chatml'"):
        serialize_for_summary(CONVERSATION, "chatml")


def test_useless_pair_and_empty_messages_are_left_out() -> None:
    messages = [
        {
            "role": "assistant",
            "content": [
                {"type": "toolCall", "id": "u", "name": "grep", "arguments": {"q": "x"}},
            ],
        },
        {
            "role": "toolResult",
            "toolCallId": "u",
            "toolName": "grep",
            "content": [{"type": "text", "text": "nothing"}],
            "useless": True,
        },
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]},
        {"role": "toolResult", "toolCallId": "v", "toolName": "read", "content": []},
        {"role": "user", "content": [{"type": "text", "text": "next"}]},
    ]
    # The useless call leaves its assistant message empty (dropped); so does the anthropic
    # target's thinking-only message; the result without text is dropped in every dialect.
    assert serialize_for_summary(messages, "anthropic") == "\n\nHuman: next"
    assert serialize_for_summary(messages, "xml") == (
        "\n\nAssistant: <thinking>\nhm\n</thinking>\n\nHuman: next"
    )
    assert serialize_for_summary(messages, "none") == "[Think]: hm\n\n[User]: next"


def test_tool_result_is_cut_at_2000_utf16_units() -> None:
    text = "é" * 1999 + "😀" + "tail"  # the emoji's second UTF-16 unit is unit 2001
    messages = [
        {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "read",
            "content": [{"type": "text", "text": text}],
        }
    ]
    rendered = serialize_for_summary(messages, "hermes")
    cut = "é" * 1999 + "\ud83d"  # String.prototype.slice(0, 2000) splits the pair
    marker = "\n\n[... 5 more characters truncated]"  # 2005 units − 2000
    assert rendered == (
        f"<|im_start|>tool\n<tool_response>\n{cut}{marker}\n</tool_response><|im_end|>\n"
    )


def test_developer_text_joins_the_next_gemini_user_turn() -> None:
    messages = [
        {"role": "developer", "content": "rules"},
        {"role": "user", "content": "go"},
        {"role": "developer", "content": "late"},
    ]
    assert serialize_for_summary(messages, "gemini") == (
        "<bos><start_of_turn>user\nrules\ngo<end_of_turn>\n<start_of_turn>user\nlate<end_of_turn>\n"
    )
    # The legacy text transcript writes developer text bare; DeepSeek too.
    assert serialize_for_summary(messages, "xml") == "rules\n\nHuman: go\n\nlate"
    assert serialize_for_summary(messages, "deepseek") == (
        f"{DS['bos']}rules{DS['user']}go" + "late"
    )


def test_harmony_tokens_in_content_are_escaped_too() -> None:
    messages = [{"role": "user", "content": "a <|end|> b <|im_end|>"}]
    assert serialize_for_summary(messages, "harmony") == (
        "<\\|start\\|>user<\\|message\\|>a <\\|end\\|> b <|im_end|><\\|end\\|>"
    )


def test_gemma_reads_json_tool_output_as_values() -> None:
    messages = [
        {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "t",
            "content": [{"type": "text", "text": '{"b":[1,true,null],"1":2.50}'}],
        }
    ]
    # JSON.parse, then JavaScript key order (integer-like keys first) and String(2.5).
    assert serialize_for_summary(messages, "gemma") == (
        "<bos><|turn>model\n<|tool_response>response:t{output:{1:2.5,b:[1,true,null]}}"
        "<tool_response|><turn|>"
    )


def test_javascript_key_order_and_numbers() -> None:
    assert js_keys({"b": 1, "10": 2, "a": 3, "2": 4, "01": 5}) == ["2", "10", "b", "a", "01"]
    assert [js_number(v) for v in (1e21, 1.5e-7, 0.000001, 123.456, -0.0, 2.0, 2**60)] == [
        "1e+21",
        "1.5e-7",
        "0.000001",
        "123.456",
        "0",
        "2",
        "1152921504606847000",
    ]


# Printed by pi-catalog 18.2.3: `preferredDialect(id)` for each id.
RELEASE_DIALECTS = {
    "claude-sonnet-4-5": "anthropic",
    "anthropic/claude-opus-4.1": "anthropic",
    "gpt-5.1-codex": "harmony",
    "openai/gpt-oss-120b": "harmony",
    "o3-high": "harmony",
    "glm-4.6": "glm",
    "gemini-2.5-pro": "gemini",
    "gemma-3-27b-it": "gemma",
    "moonshotai/kimi-k2-instruct": "kimi",
    "qwen3-coder-480b": "qwen3",
    "deepseek-r1-distill-qwen-32b": "qwen3",
    "deepseek-chat": "deepseek",
    "MiniMax-M2": "minimax",
    "llama-3.3-70b": "xml",
    "mistral-large-latest": "xml",
    "grok-4": "xml",
    "some-local-model": "xml",
}


@pytest.mark.parametrize("model_id", sorted(RELEASE_DIALECTS))
def test_preferred_dialect_follows_the_release(model_id: str) -> None:
    assert preferred_dialect(model_id) == RELEASE_DIALECTS[model_id]


def test_no_model_falls_back_to_xml() -> None:
    assert preferred_dialect(None) == "xml"


def test_text_difference_names_the_first_differing_character() -> None:
    assert text_difference("abc", "abc") is None
    found = text_difference("abXd", "abYd")
    assert found is not None and found.startswith("character 2 (lengths 4 vs 4)")


def test_wording_only_accepts_other_text_in_the_wrapper_and_nothing_else() -> None:
    hole = "\x00summary-wrapper\x00"
    assert wording_only(f"A{hole}B", "A their words B") == (1, 13)
    assert wording_only(f"A{hole}B", "X their words B") is None
    assert wording_only(f"A{hole}B{hole}C", "A1B2C") == (2, 2)


# -- corpus: byte for byte against the release -----------------------------------------------
BUDGETS = (1000, 5000, 20000, 60000, 100000)
FILES = ["/".join(parts[1:]) for parts in PI_FILES]


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _missing(reason: str) -> NoReturn:
    if _in_ci():
        pytest.fail(f"CI=true but the reference driver cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


@cache
def reference(path: Path) -> dict[str, Any]:
    """The release's document for one session file with its full texts: the conformance
    package's cached run (keyed by the file, the pins, the driver and the options)."""
    try:
        return cached_reference("musepi", path, BUDGETS, snapcompact=False, texts="full")
    except ReferenceToolMissing as exc:
        _missing(str(exc))


def _summary_cases(document: dict[str, Any]) -> tuple[int, int]:
    """(texts, texts whose messages hold a compaction or branch summary), counted from the
    reference document alone."""
    lists = []
    for key in map(str, BUDGETS):
        entry = document["budgets"].get(key) or {}
        if entry.get("prepare_compaction") and entry.get("summarizer_input"):
            for part in ("messagesToSummarize", "turnPrefixMessages"):
                lists.append(entry["prepare_compaction"][part] or [])
    for key in ("0", *map(str, BUDGETS)):
        prep = document["branch_summary"]["prepare"].get(key)
        if prep and prep.get("summarizer_input"):
            lists.append(prep["messages"] or [])
    wrapped = sum(1 for items in lists if any(m["role"] in SUMMARY_ROLES for m in items))
    return len(lists), wrapped


def _assert_matches(path: Path) -> None:
    document = reference(path)
    session = read_session(path)
    rows = compare_summarizer_inputs(document, session, BUDGETS)
    texts, wrapped = _summary_cases(document)
    assert texts > 0
    for row in rows:
        assert row["total"] == texts, row["measure"]
        # Byte-identical, except a text holding a summary message, whose wrapper sentence is
        # our own wording; everything around it must still be identical.
        assert row["agreed"] + row["wording_only"] == texts, (
            row["measure"],
            row["first_difference"],
        )
        assert row["wording_only"] <= wrapped, row["measure"]


@pytest.mark.corpus
@pytest.mark.parametrize("name", FILES)
def test_summarizer_input_matches_the_release(name: str) -> None:
    _assert_matches(corpus_file("pi", *name.split("/")))


SAMPLES = sorted((REPO_ROOT / "datasets" / "sample").glob("*.jsonl"))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_summarizer_input_matches_the_release_on_the_bundled_sample(path: Path) -> None:
    # The generated sample holds branch summaries and compactions (wrapped in our wording).
    _assert_matches(path)


def edge_records() -> list[dict[str, Any]]:
    """A session of the message kinds and values the corpus lacks: thinking already in
    `<thinking>` tags, parallel calls, floats JavaScript prints in exponent form, integer-like
    and nested argument keys, a multi-line argument, an error result with markup, a result cut
    inside a surrogate pair, a custom message, a bash run (exit code, truncated), images in a
    user message and as a whole tool result, a `useless` result, a `functions.`-prefixed call
    id, JSON tool output, boundary tags and harmony tokens in user text; then long turns so
    the cut keeps them in the summarized part."""
    usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15}
    usage["cost"] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    meta = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}
    assistant = {**meta, "stopReason": "stop", "usage": usage}
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}

    def result(call: str, name: str, content: list[Any], **extra: Any) -> dict[str, Any]:
        return {"role": "toolResult", "toolCallId": call, "toolName": name, "content": content,
                "isError": False, **extra}  # fmt: skip

    def call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"type": "toolCall", "id": call_id, "name": name, "arguments": args}

    bash_args = {
        "command": "echo 'hi'\nls \"x\"",
        "timeout": 1.5,
        "big": 1e21,
        "tiny": 1.5e-7,
        "env": {"2": "b", "1": "a", "k": [True, None, 0.1]},
    }
    messages: list[dict[str, Any] | tuple[str, dict[str, Any]]] = [
        {"role": "user", "content": "Fix </conversation> and <|start|>x<|end|> tokens"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": "<thinking>plan</thinking>\n<thinking>steps</thinking>",
                },
                {"type": "text", "text": "Looking."},
                call("t1", "read", {"path": "src/a.py", "offset": 10}),
                call("t2", "bash", bash_args),
            ],
            **assistant,
        },
        result("t1", "read", [{"type": "text", "text": "é" * 1999 + "😀tail"}]),
        {**result("t2", "bash", [{"type": "text", "text": "boom & <bad>"}]), "isError": True},
        ("custom_message", {"customType": "note", "content": "Remember the flag", "display": True}),
        {
            "role": "bashExecution",
            "command": "make check",
            "output": "ok",
            "exitCode": 2,
            "cancelled": False,
            "truncated": True,
            "fullOutputPath": "/tmp/x.log",
        },
        {"role": "user", "content": [{"type": "text", "text": "see"}, image]},
        {"role": "assistant", "content": [call("t3", "grep", {"pattern": "x"})], **assistant},
        result("t3", "grep", [{"type": "text", "text": "no matches"}], useless=True),
        {
            "role": "assistant",
            "content": [
                call("functions.write:7", "write", {"path": "b.py", "content": 'x = "1"\n'})
            ],
            **assistant,
        },
        result("functions.write:7", "write", [image]),
        result("t9", "json", [{"type": "text", "text": '{"a": [1, 2.0, "s"], "10": {"x": null}}'}]),
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}], **assistant},
    ]
    for turn in range(12):
        messages.append({"role": "user", "content": f"Turn {turn}: " + "word " * 300})
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": f"Answer {turn}."}],
                **assistant,
            }
        )
    records: list[dict[str, Any]] = []
    for n, item in enumerate(messages):
        head = {
            "id": f"e{n:03d}",
            "parentId": records[-1]["id"] if records else None,
            "timestamp": f"2026-03-06T09:{n // 60:02d}:{n % 60:02d}.000Z",
        }
        if isinstance(item, tuple):
            records.append({"type": item[0], **head, **item[1]})
        else:
            records.append(
                {
                    "type": "message",
                    **head,
                    "message": {**item, "timestamp": 1772787600000 + n * 1000},
                }
            )
    return records


@pytest.fixture(scope="module")
def edge_session_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dialects") / "edge.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": "edge",
        "timestamp": "2026-03-06T09:00:00.000Z",
    }
    lines = [json.dumps(header), *(json.dumps(r, ensure_ascii=False) for r in edge_records())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_summarizer_input_matches_the_release_on_generated_edge_cases(
    edge_session_file: Path,
) -> None:
    _assert_matches(edge_session_file)
