"""Fact sources and scoring machinery: the one-pass matcher, the per-session fact cache,
corpus facts by fixed rules (against an independent count of a real file), and
snapcompact's imaged pages read as text for the upper bound."""

from __future__ import annotations

import json

import pytest
from _corpus import corpus_file

from musepi_lab.formats._registry import read_session
from musepi_lab.metrics import (
    Fact,
    context_text,
    corpus_facts,
    extract_facts,
    fact_retention,
    facts_of_entries,
)
from musepi_lab.metrics._archive import archive_text, imaged_text, session_archives
from musepi_lab.metrics._match import HAS_AHOCORASICK, FactMatcher
from musepi_lab.metrics._metrics import retention_bounds
from musepi_lab.metrics._scoring import SessionScorer, session_scorer
from musepi_lab.metrics._session_facts import clear_fact_cache, entry_facts
from musepi_lab.session._model import Entry
from musepi_lab.session._session import Session

# -- the matcher ------------------------------------------------------------------------------
NEEDLES = ["abc", "bcd", "b", "abcd", "zz", "", "abc"]
TEXT = "xxabcdyy"


@pytest.mark.parametrize("backend", ["scan", "ahocorasick", "auto"])
def test_matcher_finds_overlapping_and_nested_needles(backend):
    if backend == "ahocorasick" and not HAS_AHOCORASICK:
        pytest.skip("pyahocorasick not installed")
    found = FactMatcher(NEEDLES, backend=backend).found(TEXT)
    assert found == {n for n in NEEDLES if n and n in TEXT} == {"abc", "bcd", "b", "abcd"}
    assert FactMatcher([], backend=backend).found(TEXT) == frozenset()
    assert FactMatcher(NEEDLES, backend=backend).found("") == frozenset()


def test_matcher_is_aho_corasick_here():
    # The project depends on pyahocorasick; the scan is only a fallback.
    assert HAS_AHOCORASICK


def test_fact_retention_unchanged_by_the_matcher():
    facts = [Fact("src/a.py", "path"), Fact("a.py", "path"), Fact("nope", "path")]
    assert fact_retention(facts, "edit src/a.py") == pytest.approx(2 / 3)


# -- per-session cache ------------------------------------------------------------------------
def _entry(i, message):
    return Entry.from_record(
        {
            "type": "message",
            "id": f"e{i}",
            "parentId": f"e{i - 1}" if i else None,
            "timestamp": f"2026-01-01T00:00:{i:02d}.000Z",
            "message": message,
        }
    )


def _user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}


def _call(cid, name, **args):
    content = [{"type": "toolCall", "id": cid, "name": name, "arguments": args}]
    return {"role": "assistant", "content": content, "stopReason": "toolUse", "timestamp": 0}


def _result(cid, text, is_error=False):
    content = [{"type": "text", "text": text}]
    return {
        "role": "toolResult",
        "toolCallId": cid,
        "toolName": "bash",
        "content": content,
        "isError": is_error,
        "timestamp": 0,
    }


MESSAGES = [
    _user("Always run ruff first.\nFix compute_invoice_total in src/billing/invoice.py"),
    _call("c1", "read", path="src/billing/invoice.py"),
    _result("c1", "def compute_invoice_total(): ..."),
    _call("c2", "bash", command="pytest tests/test_invoice.py -x\necho done"),
    _result("c2", "\nValueError: negative quantity in parse_line_items\nFAILED", True),
    _user("Never push on Fridays."),
    _call("c3", "edit", file_path="src/billing/tax_rules.py", oldText="a", newText="b"),
]
SESSION = Session(
    {"type": "session", "version": 3, "id": "s"}, [_entry(i, m) for i, m in enumerate(MESSAGES)]
)


def test_entry_facts_are_extract_facts_per_entry_and_cached():
    clear_fact_cache()
    first = entry_facts(SESSION)
    assert entry_facts(SESSION) is first  # same fingerprint: not extracted again
    for i, message in enumerate(MESSAGES):
        assert first.get(f"e{i}", ()) == extract_facts([message])
    part = facts_of_entries(SESSION, ["e0", "e1", "e2", "e3", "e4"])
    assert part == extract_facts(MESSAGES[:5])
    clear_fact_cache()
    assert entry_facts(SESSION) is not first


# -- corpus facts -----------------------------------------------------------------------------
def test_corpus_facts_follow_their_rules():
    facts = {(f.kind, f.text) for f in corpus_facts(SESSION)}
    assert facts == {
        ("instruction", "Always run ruff first."),
        ("identifier", "compute_invoice_total"),
        ("path", "src/billing/invoice.py"),
        ("command", "pytest tests/test_invoice.py -x"),
        ("error", "ValueError: negative quantity in parse_line_items"),
        ("instruction", "Never push on Fridays."),
        ("path", "src/billing/tax_rules.py"),
    }
    before = {f.text for f in corpus_facts(SESSION, cut="e5")}
    assert "Never push on Fridays." not in before and "src/billing/tax_rules.py" not in before
    assert "ValueError: negative quantity in parse_line_items" in before


def _first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def _raw_counts(records):
    """Files, commands and errors of raw pi records, counted without the library."""
    paths, commands, errors = set(), set(), set()
    for record in records:
        message = record.get("message") if record.get("type") == "message" else None
        if not message:
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "assistant":
            for block in blocks:
                if block.get("type") != "toolCall":
                    continue
                args = block.get("arguments") or {}
                if isinstance(args.get("path"), str) and args["path"].strip():
                    paths.add(args["path"].strip())
                if isinstance(args.get("command"), str) and _first_line(args["command"]):
                    commands.add(_first_line(args["command"]))
            if message.get("stopReason") == "error" and _first_line(
                message.get("errorMessage") or ""
            ):
                errors.add(_first_line(message["errorMessage"]))
        if message.get("role") == "toolResult" and message.get("isError"):
            text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            if _first_line(text):
                errors.add(_first_line(text))
    return paths, commands, errors


def test_corpus_facts_match_an_independent_count_of_a_real_session():
    path = corpus_file("pi", "large-session.jsonl")
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    session = read_session(path)
    # Cut at the 10th user message: count the raw records before it.
    users = [i for i, r in enumerate(records) if r.get("message", {}).get("role") == "user"]
    cut_record = records[users[9]]
    cut = next(
        e.id
        for e in session.path()
        if e.message is not None
        and e.message.get("timestamp") == cut_record["message"]["timestamp"]
    )
    for scope, facts in (
        (records[: users[9]], corpus_facts(session, cut)),
        (records, corpus_facts(session)),
    ):
        by_kind = {k: {f.text for f in facts if f.kind == k} for k in ("path", "command", "error")}
        paths, commands, errors = _raw_counts(scope)
        assert by_kind["path"] == paths
        assert by_kind["command"] == commands
        assert by_kind["error"] == errors
        assert len(paths) > 5 and len(commands) > 5
    assert len(corpus_facts(session, cut)) < len(corpus_facts(session))


# -- snapcompact both ways ----------------------------------------------------------------------
def _frame(data, chars):
    return {"data": data, "mimeType": "image/png", "cols": 10, "rows": 10, "chars": chars}


ARCHIVE = {
    "snapcompact": {
        "frames": [_frame("P1", 6), _frame("P2", 6)],
        "text": "HEAD..page-1page-2TAIL",
        "textHead": "HEAD..",
        "textTail": "TAIL",
        "totalChars": 22,
        "truncatedChars": 0,
    }
}


def test_archive_pages_are_cut_from_the_archive_text_by_frame_chars():
    found = archive_text(ARCHIVE)
    assert found.pages == ("page-1", "page-2") and found.frame_data == ("P1", "P2")
    broken = {"snapcompact": {**ARCHIVE["snapcompact"], "text": "too short"}}
    assert archive_text(broken) is None  # chars do not add up: pages unknown
    assert archive_text({}) is None


def test_imaged_text_reads_only_the_frames_the_context_carries():
    found = archive_text(ARCHIVE)
    both = [
        {
            "role": "compactionSummary",
            "blocks": [{"type": "image", "data": "P1"}, {"type": "image", "data": "P2"}],
        }
    ]
    assert imaged_text(both, [found]) == "HEAD..page-1page-2TAIL"
    newest_only = [{"role": "compactionSummary", "blocks": [{"type": "image", "data": "P2"}]}]
    assert "page-1" not in imaged_text(newest_only, [found])
    assert "page-2TAIL" in imaged_text(newest_only, [found])
    assert imaged_text(both, []) == ""


def test_snapcompact_retention_lower_and_upper_bounds_on_the_sample():
    pytest.importorskip("musepi_lab.strategies.snapcompact")
    from _corpus import SAMPLES

    from musepi_lab.compaction._settings import CompactionSettings
    from musepi_lab.context._build import build_session_context
    from musepi_lab.strategies import compact

    session = read_session(SAMPLES[1])
    result = compact(
        session, "snapcompact", settings=CompactionSettings.musepi(keep_recent_tokens=8000)
    )
    after = result.apply(session)
    raw = result.preserve_data["snapcompact"]
    head, text = raw["textHead"], raw["text"]

    def plain(t: str) -> str:  # as the model reads it: no dim toggles, glyph = newline
        return t.replace("\x0e", "").replace("\x0f", "").replace("\u2588", "\n")

    # The first page: the frame's `chars` printed characters after the head (the zero-width
    # dim toggles print nothing).
    printed = [i for i in range(len(head), len(text)) if text[i] not in "\x0e\x0f"]
    first_page = text[len(head) : printed[raw["frames"][0]["chars"] - 1] + 1]
    needle = plain(first_page)[100:160]  # a string only the first imaged page shows
    messages = build_session_context(after).messages
    lower = context_text(messages)
    upper = context_text(messages, archives=session_archives(after))
    assert needle not in lower and needle in upper
    assert plain(text) in upper  # every frame is carried, so the whole archive reads
    assert retention_bounds([needle, plain(head)[:50]], lower, upper) == (0.5, 1.0)


# -- one scorer per session ---------------------------------------------------------------------
def test_session_scorer_finds_what_a_scan_of_the_context_text_finds_scanning_each_message_once():
    needles = ["src/billing/invoice.py", "compute_invoice_total", "Never push", "absent"]
    scorer = SessionScorer(needles)
    scanned = []

    class Counting:
        needles = scorer.matcher.needles

        def found(self, text, real=scorer.matcher):
            scanned.append(text)
            return real.found(text)

    scorer.matcher = Counting()
    expected = {n for n in needles if n in context_text(MESSAGES)}
    assert scorer.found(MESSAGES) == expected
    assert scorer.found(MESSAGES[:5]) == {n for n in needles if n in context_text(MESSAGES[:5])}
    assert len(scanned) == len(MESSAGES)  # the second context reused every message
    rewritten = [*MESSAGES[:5], _user("Never push to main.")]
    assert "Never push" in scorer.found(rewritten) and len(scanned) == len(MESSAGES) + 1


@pytest.mark.parametrize(
    "strategy", ["truncate", "observation-masking", "extractive", "snapcompact"]
)
def test_session_scorer_agrees_with_the_benchs_text_on_the_sample(strategy):
    from _corpus import SAMPLES

    from musepi_lab.compaction._settings import CompactionSettings
    from musepi_lab.context._build import build_session_context
    from musepi_lab.context._llm import convert_to_llm
    from musepi_lab.datasets import read_facts
    from musepi_lab.strategies import compact

    session = read_session(SAMPLES[0])
    needles = [f.fact for f in read_facts(SAMPLES[0])]
    scorer = session_scorer(session, needles)
    settings = CompactionSettings.musepi(keep_recent_tokens=8000)
    after = compact(session, strategy, settings=settings).apply(session)
    for s in (session, after):
        runtime = build_session_context(s).messages
        text = context_text(runtime) + "\n" + context_text(convert_to_llm(runtime))
        assert scorer.found(runtime) == {n for n in needles if n in text}
    runtime = build_session_context(after).messages
    upper = scorer.found(runtime, archives=session_archives(after))
    assert upper >= scorer.found(runtime)
    assert (upper > scorer.found(runtime)) == (strategy == "snapcompact")


def _claude_code_counts(records):
    """Files, commands and errors of raw Claude Code lines, counted without the library."""
    paths, commands, errors = set(), set(), set()
    for record in records:
        content = (record.get("message") or {}).get("content")
        if record.get("isSidechain") or not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                args = block.get("input") or {}
                for key in ("path", "file_path", "filePath", "notebook_path"):
                    if isinstance(args.get(key), str) and args[key].strip():
                        paths.add(args[key].strip())
                if isinstance(args.get("command"), str) and _first_line(args["command"]):
                    commands.add(_first_line(args["command"]))
            if block.get("type") == "tool_result" and block.get("is_error"):
                inner = block.get("content")
                text = (
                    inner
                    if isinstance(inner, str)
                    else "\n".join(
                        b.get("text", "") for b in inner or () if b.get("type") == "text"
                    )
                )
                if _first_line(text):
                    errors.add(_first_line(text))
    return paths, commands, errors


def test_corpus_facts_match_an_independent_count_of_a_claude_code_session():
    path = corpus_file("claude-code", "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl")
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    facts = corpus_facts(read_session(path))
    by_kind = {k: {f.text for f in facts if f.kind == k} for k in ("path", "command", "error")}
    paths, commands, errors = _claude_code_counts(records)
    assert (by_kind["path"], by_kind["command"], by_kind["error"]) == (paths, commands, errors)
    assert len(paths) > 10 and len(commands) > 50 and errors


def test_scorer_bounds_count_imaged_pages_only_in_the_upper_bound():
    found = archive_text(ARCHIVE)
    context = [
        {
            "role": "compactionSummary",
            "summary": "kept: alpha_beta_gamma",
            "blocks": [{"type": "text", "text": "HEAD.."}, {"type": "image", "data": "P1"}],
        }
    ]
    scorer = SessionScorer(["alpha_beta_gamma", "page-1", "page-2", "HEAD.."])
    assert scorer.bounds(["alpha_beta_gamma", "page-1"], context) == (0.5, 0.5)
    assert scorer.bounds(["alpha_beta_gamma", "page-1"], context, [found]) == (0.5, 1.0)
    assert scorer.bounds(["page-2"], context, [found]) == (0.0, 0.0)  # frame not carried
    assert scorer.bounds([], context) == (None, None)
