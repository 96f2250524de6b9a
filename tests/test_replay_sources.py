"""The calibration's corpus by source, and its judgement leave one source out (issue 27,
item 5): each corpus session's source read from its folder's PROVENANCE.md, the manifest of
the corpus as fitted (digests), the shipped fit on every source, and a judgement that never
fits on the source it judges."""

from __future__ import annotations

import hashlib
import json

import pytest
from _corpus import CORPUS, needs_corpus

from musepi_lab import read_session
from musepi_lab.replay import (
    CALIBRATION_SPLIT,
    DEFAULT_CALIBRATION,
    calibrate,
    corpus_split,
    judge_sources,
    read_split,
)
from musepi_lab.replay._provenance import corpus_sources, folder_sources
from musepi_lab.replay._split import session_digest

PROVENANCE = """\
# Sessions

## Sources

| key | repository | commit | license | notes |
|---|---|---|---|---|
| alpha | someone/alpha-repo | abc | MIT | real sessions |
| beta | org/beta | def | MIT | Org copy of someone/alpha-repo with two more files. |

## Files

| file | source | upstream path | lines |
|---|---|---|---|
| `a.jsonl` | alpha | `x/a.jsonl` | 3 |
| `b.jsonl` | beta | `x/b.jsonl` | 4 |

## Added later

| repository | commit(s) | license | notes |
|---|---|---|---|
| third/party | 123 | MIT | small demo |

| file | repository | commit | lines |
|---|---|---|---|
| `sub/c.jsonl` | third/party | 123 | 9 |
| `d.json` | other/repo (attribution uncertain) | 9 | 1 |
"""


def test_sources_come_from_the_provenance_tables():
    assert folder_sources(PROVENANCE) == {
        "a.jsonl": "someone/alpha-repo",
        "b.jsonl": "someone/alpha-repo",  # an org copy of a user's repository is that user's
        "sub/c.jsonl": "third/party",
        "d.json": "other/repo",
    }


def test_a_fit_never_sees_the_source_it_is_judged_on(tmp_path, monkeypatch):
    from test_replay_fit import synthetic_session

    sessions = [
        ("a1", "one/a", synthetic_session(tmp_path, "a1", ratio=1.3, system=3_000, misses=set())),
        ("a2", "one/a", synthetic_session(tmp_path, "a2", ratio=1.2, system=3_000, misses={4})),
        ("b1", "two/b", synthetic_session(tmp_path, "b1", ratio=1.4, system=3_000, misses=set())),
    ]
    seen: list[tuple[set[str], set[str]]] = []

    def fit(train, exclude=()):
        seen.append(({s.id for s in train}, set(exclude)))
        return calibrate(train, exclude=exclude)

    requests, figures = judge_sources(sessions, fit=fit)
    assert seen == [({"b1"}, {"a1", "a2"}), ({"a1", "a2"}, {"b1"})]
    assert dict(zip(figures.index, figures["source"], strict=True)) == {
        "a1": "one/a",
        "a2": "one/a",
        "b1": "two/b",
    }
    assert set(requests["source"]) == {"one/a", "two/b"}
    for column in ("rules_cost_usd", "calibrated_cost_usd", "closer", "pit", "inside"):
        assert column in figures.columns
    assert ((figures["pit"] >= 0) & (figures["pit"] <= 1)).all()
    # Every recorded request of each judged session is judged (41 replies with usage each).
    assert (figures["judged_requests"] == figures["recorded_requests"]).all()
    assert set(figures["recorded_requests"]) == {41}


@needs_corpus
def test_every_corpus_session_has_its_source_and_the_manifest_is_the_corpus():
    sources = corpus_sources(CORPUS)
    for entry in CALIBRATION_SPLIT:
        file = CORPUS / entry.path
        # Independent digest: the file, then each file of its subagent folder, by path.
        digest = hashlib.sha256(file.read_bytes())
        folder = file.with_suffix("")
        for extra in sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else ():
            digest.update(extra.relative_to(folder).as_posix().encode() + extra.read_bytes())
        assert digest.hexdigest() == entry.sha256 == session_digest(file), entry.path
        assert entry.source == sources.get(entry.path) or entry.copy
    assert corpus_split(CORPUS, sources) == list(CALIBRATION_SPLIT)
    by_source = {e.source for e in CALIBRATION_SPLIT}
    # The corpus grew: Claude Code, Codex, pi (with and without recorded cost), Gemini CLI.
    assert {"marot/spotter", "elithrar/dotfiles", "lanegrid/agtrace"} <= by_source
    assert {e.path.split("/")[0] for e in CALIBRATION_SPLIT} == {
        "claude-code",
        "codex",
        "gemini-cli",
        "pi",
    }
    # The oh-my-pi copies of the pi fixtures go with the originals' source, judged once.
    copies = [e for e in CALIBRATION_SPLIT if e.copy]
    assert copies and all(e.source == "badlogic/pi-mono" for e in copies)


@needs_corpus
def test_every_recorded_request_of_the_corpus_is_counted():
    # Independent count: every Claude Code reply (by message id) and pi reply with usage.
    from test_replay_streams import billed, raw_replies

    for entry in CALIBRATION_SPLIT:
        if entry.copy or not entry.path.startswith(("claude-code", "pi")):
            continue
        file = CORPUS / entry.path
        if entry.path.startswith("claude-code"):
            files = [file, *sorted(file.with_suffix("").glob("subagents/agent-*.jsonl"))]
            expected = sum(
                sum(1 for v in raw_replies(f).values() if billed(v["usage"])) for f in files
            )
        else:
            expected = sum(
                1
                for line in file.read_text().splitlines()
                if '"role":"assistant"' in line.replace(" ", "")
                and any(
                    (json.loads(line)["message"].get("usage") or {}).get(k)
                    for k in ("input", "output", "cacheRead", "cacheWrite")
                )
            )
        from musepi_lab.replay import replay_session

        result = replay_session(read_session(file), "recorded", window=10**9)
        assert result.coverage is not None and result.coverage.complete, entry.path
        assert result.coverage.recorded == expected, entry.path


@needs_corpus
def test_the_shipped_defaults_are_the_fit_on_every_source():
    sessions = read_split(CORPUS)
    fit = calibrate([s for _, _, s in sessions])
    shipped = DEFAULT_CALIBRATION.parameters()
    for key, value in fit.parameters().items():
        assert value == pytest.approx(shipped[key], rel=1e-9, abs=1e-12), key
    assert fit.system_prompt == DEFAULT_CALIBRATION.system_prompt
    assert fit.warm_prefix == DEFAULT_CALIBRATION.warm_prefix
    assert fit.sessions == DEFAULT_CALIBRATION.sessions
    assert [r[0] for r in fit.event_rates] == [r[0] for r in DEFAULT_CALIBRATION.event_rates]
    assert DEFAULT_CALIBRATION.fitted
