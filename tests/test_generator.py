"""The bundled sample is reproduced byte for byte by its generator, and is realistic."""

from __future__ import annotations

import json
from pathlib import Path

from musepi_lab.datasets import generate_session, read_facts
from musepi_lab.datasets._generator import SAMPLE_CONFIGS, iter_sample_files
from musepi_lab.formats._registry import read_session

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample"


def test_sample_reproduced_byte_for_byte():
    expected = dict(iter_sample_files())
    on_disk = {
        p.name: p.read_bytes()
        for p in SAMPLE.iterdir()
        if p.suffix in (".jsonl", ".json") and p.name != "manifest.json"
    }
    assert set(on_disk) == set(expected)
    for name, data in expected.items():
        assert on_disk[name] == data, f"{name} differs from the generator's output"


def test_generation_is_deterministic():
    a, fa = generate_session(SAMPLE_CONFIGS[0])
    b, fb = generate_session(SAMPLE_CONFIGS[0])
    assert a.to_jsonl() == b.to_jsonl() and fa == fb


def test_sample_sessions_read_cleanly_and_hold_what_they_promise():
    for cfg in SAMPLE_CONFIGS:
        path = SAMPLE / f"sample-{cfg.seed:04d}.jsonl"
        session = read_session(path, strict=True)
        records = [json.loads(line) for line in path.read_text().splitlines()[1:]]
        types = [r["type"] for r in records]
        roles = [r["message"]["role"] for r in records if r["type"] == "message"]
        assert roles.count("toolResult") > 3 * cfg.tasks
        assert ("compaction" in types) == cfg.with_compaction
        assert ("branch_summary" in types) == cfg.with_branch
        assert any(r["message"].get("useless") for r in records if r["type"] == "message")
        assert any(r["message"].get("isError") for r in records if r["type"] == "message")
        # Every planted fact occurs verbatim in the entry it names, on the active path.
        path_ids = {e.id for e in session.path()}
        by_id = {r["id"]: r for r in records}
        for fact in read_facts(path):
            assert fact.entry_id in path_ids
            assert fact.fact in json.dumps(by_id[fact.entry_id], ensure_ascii=False)
