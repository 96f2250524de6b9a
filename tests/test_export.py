"""`musepi-lab export` and `musepi_lab.export`: a session's transcript as HTML or Markdown
(issue 29, item 6), what a claude-code-log reader expects: a session header with tokens,
each message with its timestamp, tool calls and results folded, compactions and the cut
marked; the HTML self-contained, both escaped, written atomically.

Expected messages, timestamps, tool calls and usage sums are read from the raw JSONL with
plain `json`; the Markdown is rendered by markdown-it (an independent CommonMark parser),
the HTML parsed by the standard library's parser.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from _corpus import corpus_file

from musepi_lab.cli import main
from musepi_lab.compaction._prepare import prepare_compaction
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.export import transcript_html, transcript_markdown, write_transcript
from musepi_lab.formats._registry import read_session
from musepi_lab.tokens._counter import TokenCounter

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "sample-0001.jsonl"
SHOWN_TYPES = {"message", "compaction", "branch_summary", "custom_message"}
HOSTILE = [
    "<script>alert('owned')</script>",
    "</details></pre></div><img src=x onerror=alert(1)>",
    "# not a heading\n\n[click](javascript:alert(1)) **bold** _em_ `code` ``` fence",
    "| a | b |\n|---|---|\n- item\n1. item\n> quote\n    indented\n===\n$x^2$ &amp; ~~gone~~",
]


# -- the raw file, read independently --------------------------------------------------------
def raw_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def raw_path(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Root → last entry in file order, by parentId."""
    entries = [r for r in records if r.get("type") != "session"]
    by_id = {r["id"]: r for r in entries}
    node: dict[str, Any] | None = entries[-1]
    path = []
    while node is not None:
        path.append(node)
        node = by_id.get(node.get("parentId"))
    return path[::-1]


def hostile_session(tmp_path: Path) -> Path:
    """A short pi session whose every text field is hostile."""
    header = {"type": "session", "version": 3, "id": "evil<b>", "timestamp": "2026-01-01T00:00:00Z"}
    lines = [header]
    parent = None
    for i, text in enumerate(HOSTILE):
        user = {
            "type": "message",
            "id": f"u{i}",
            "parentId": parent,
            "timestamp": f"2026-01-01T00:0{i}:00.000Z",
            "message": {"role": "user", "content": text, "timestamp": 0},
        }
        call = {
            "type": "message",
            "id": f"a{i}",
            "parentId": f"u{i}",
            "timestamp": f"2026-01-01T00:0{i}:10.000Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": text},
                    {
                        "type": "toolCall",
                        "id": f"t{i}",
                        "name": "bash<i>",
                        "arguments": {"cmd": text},
                    },
                ],
                "provider": "anthropic",
                "model": "m</title>",
                "usage": {
                    "input": 10,
                    "output": 5,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 15,
                },
                "stopReason": "toolUse",
                "timestamp": 0,
            },
        }
        result = {
            "type": "message",
            "id": f"r{i}",
            "parentId": f"a{i}",
            "timestamp": f"2026-01-01T00:0{i}:20.000Z",
            "message": {
                "role": "toolResult",
                "toolCallId": f"t{i}",
                "toolName": "bash<i>",
                "content": [{"type": "text", "text": text}],
                "isError": False,
                "timestamp": 0,
            },
        }
        lines += [user, call, result]
        parent = f"r{i}"
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    return path


class Page(HTMLParser):
    """Tags, attributes and text of an HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page_html: str) -> Page:
    page = Page()
    page.feed(page_html)
    page.close()
    return page


# -- HTML ---------------------------------------------------------------------------------------
def test_html_is_self_contained_and_shows_hostile_text_as_text(tmp_path):
    session = read_session(hostile_session(tmp_path))
    page = parse(transcript_html(session))
    names = [t for t, _ in page.tags]
    assert "script" not in names and "img" not in names and "link" not in names
    assert "iframe" not in names and "object" not in names
    for tag, attrs in page.tags:
        assert not any(a.startswith("on") for a in attrs), (tag, attrs)
        assert "src" not in attrs and "href" not in attrs, (tag, attrs)
    text = "".join(page.text)
    for hostile in HOSTILE:
        assert hostile in text  # user, assistant and tool result each show it whole
    assert text.count(HOSTILE[0]) >= 4  # user, reply, tool call arguments, tool result
    assert "evil<b>" in text and "m</title>" in text
    # Exactly one of each structural element the page opens itself.
    assert names.count("html") == 1 and names.count("body") == 1 and names.count("title") == 1


def test_html_header_messages_timestamps_and_folded_tool_calls_match_the_raw_file():
    records = raw_records(SAMPLE)
    path = [r for r in raw_path(records) if r["type"] in SHOWN_TYPES]
    page_html = transcript_html(read_session(SAMPLE))
    page = parse(page_html)
    rows = [a for t, a in page.tags if t == "div" and (a.get("class") or "").startswith("message")]
    assert [a["id"] for a in rows] == [f"entry-{r['id']}" for r in path]
    text = "".join(page.text)
    for record in path:
        assert record["timestamp"] in text
    calls = [
        b
        for r in path
        if r["type"] == "message"
        for b in (r["message"]["content"] if isinstance(r["message"]["content"], list) else [])
        if b.get("type") == "toolCall"
    ]
    summaries = re.findall(r"<summary>(.*?)</summary>", page_html, re.S)
    assert sum(s.startswith("tool call ") for s in summaries) == len(calls)
    results = [r for r in path if r["type"] == "message" and r["message"]["role"] == "toolResult"]
    assert sum(s.startswith("result ") for s in summaries) == len(results)
    # The header's usage is the raw sum over the path's replies, labelled by source.
    replies = [
        r["message"]["usage"] for r in path if r["type"] == "message" and "usage" in r["message"]
    ]
    usage = {k: sum(u.get(k, 0) for u in replies) for k in ("input", "output", "cacheRead")}
    assert (
        f"{len(replies):,} replies: input {usage['input']:,}, output {usage['output']:,}, "
        f"cache read {usage['cacheRead']:,}"
    ) in text
    assert "recorded by the provider" in text and "estimated by the counter" in text


def test_html_marks_the_compaction_and_the_cut():
    records = raw_records(SAMPLE)
    compaction = next(r for r in raw_path(records) if r["type"] == "compaction")
    session = read_session(SAMPLE)
    page_html = transcript_html(session)
    block = re.search(
        rf"<div class='message compactionSummary[^']*' id='entry-{compaction['id']}'>.*?</div></div>",
        page_html,
        re.S,
    )
    assert block, "the compaction is not marked"
    assert f"kept from entry {compaction['firstKeptEntryId']} on" in block.group(0)
    assert f"{compaction['tokensBefore']:,} tokens" in block.group(0)
    prep = prepare_compaction(session, CompactionSettings.musepi(), TokenCounter("musepi"))
    assert prep is not None
    cut = re.search(
        r"<div class='marker cut'>(.*?)</div>\s*<div class='message [^']*' id='entry-([^']+)'>",
        page_html,
        re.S,
    )
    assert cut, "no cut line"
    first_kept = prep.path[prep.cut_index]
    assert cut.group(2) == first_kept.id and prep.first_kept_entry_id in html.unescape(cut.group(1))


# -- Markdown -------------------------------------------------------------------------------------
def rendered_markdown(text: str) -> str:
    markdown_it = pytest.importorskip("markdown_it")
    # GitHub's flavour: CommonMark with tables and strikethrough, raw HTML allowed.
    md = markdown_it.MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    return str(md.render(text))


def test_markdown_renders_hostile_text_as_that_text(tmp_path):
    session = read_session(hostile_session(tmp_path))
    out = rendered_markdown(transcript_markdown(session))
    page = parse(out)
    names = [t for t, _ in page.tags]
    assert "script" not in names and "img" not in names and "a" not in names
    assert "del" not in names and "blockquote" not in names[: names.index("table")]
    # The only headings are the title and one per message; no list or table from the text.
    assert names.count("h1") == 1 and names.count("h3") == 3 * len(HOSTILE)
    assert names.count("ul") == 0 and names.count("ol") == 0 and names.count("table") == 1
    text = "".join(page.text)
    for hostile in HOSTILE:
        # Prose keeps its characters; indentation and line breaks may change form.
        for line in hostile.splitlines():
            assert line.strip() in text.replace("\u00a0", " "), line
    # Each tool call and result folds in its own <details>, its text in a code block.
    assert out.count("<details>") == 2 * len(HOSTILE)
    assert names.count("pre") == 2 * len(HOSTILE)


def test_markdown_carries_the_timestamps_compaction_and_cut():
    records = raw_records(SAMPLE)
    path = [r for r in raw_path(records) if r["type"] in SHOWN_TYPES]
    text = transcript_markdown(read_session(SAMPLE))
    rendered = rendered_markdown(text)
    headings = [html.unescape(h) for h in re.findall(r"<h3>(.*?)</h3>", rendered, re.S)]
    assert len(headings) == len(path)
    for heading, record in zip(headings, path, strict=True):
        assert f"<code>{record['timestamp']}</code>" in heading
        assert f"<code>{record['id']}</code>" in heading
    assert any(h.startswith("Compaction") for h in headings)
    assert "✂ the cut" in rendered


# -- writing --------------------------------------------------------------------------------------
def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_cli_export_writes_both_formats_and_leaves_the_session_alone(tmp_path, capsys):
    before = sha(SAMPLE)
    assert main(["export", str(SAMPLE), "--out", str(tmp_path / "t.html")]) == 0
    assert main(["export", str(SAMPLE), "--format", "md", "--out", str(tmp_path / "t.txt")]) == 0
    out = capsys.readouterr().out
    assert "wrote" in out and "(html" in out and "(md" in out
    assert (tmp_path / "t.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert (tmp_path / "t.txt").read_text(encoding="utf-8").startswith("# Session sample")
    assert sha(SAMPLE) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.html", "t.txt"]  # no temp left


def test_cli_export_errors_are_one_line(tmp_path, capsys):
    assert main(["export", str(SAMPLE), "--out", str(tmp_path / "t.txt")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--format html or md" in err
    assert main(["export", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "x.md")]) == 2
    assert "no such session file" in capsys.readouterr().err
    assert main(["export", str(SAMPLE), "--out", str(tmp_path / "x.md"), "--leaf", "nope"]) == 2
    assert "no entry 'nope'" in capsys.readouterr().err


def test_a_failed_export_leaves_the_earlier_file_as_it_was(tmp_path, monkeypatch):
    out = tmp_path / "t.html"
    write_transcript(SAMPLE, out)
    first = out.read_bytes()
    import musepi_lab.export._write as write_module

    def broken(*_: Any, **__: Any) -> str:
        raise RuntimeError("disk gone")

    monkeypatch.setattr(write_module, "transcript_html", broken)
    with pytest.raises(RuntimeError):
        write_transcript(SAMPLE, out)
    assert out.read_bytes() == first and [p.name for p in tmp_path.iterdir()] == ["t.html"]


def test_export_refuses_to_overwrite_its_session(tmp_path):
    copy = tmp_path / "s.md"
    copy.write_bytes(SAMPLE.read_bytes())
    with pytest.raises(ValueError, match="overwrite the session"):
        write_transcript(copy, copy, format="md")


def test_the_largest_claude_code_session_exports_with_its_subagents_listed(tmp_path):
    source = corpus_file("claude-code", "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl")
    subagents = list((source.parent / source.stem / "subagents").glob("agent-*.jsonl"))
    out = write_transcript(source, tmp_path / "big.html")
    text = "".join(parse(out.read_text(encoding="utf-8")).text)
    assert f"subagents{len(subagents):,}" in text.replace(" ", "")
    assert "context at the leaf" in text and "recorded by the provider" in text
