"""Snapcompact against oh-my-pi 18.2.3's own (`@oh-my-pi/snapcompact`), on the pi corpus.

The reference driver (`conformance/run.py`, Bun) archives each file's preparation for four
readers (Claude Sonnet 4.5, Claude Opus 4.7, Gemini, GPT-5); `compare_snapcompact` rebuilds
the same archives here and compares plan, archive text, frame geometry, decoded frame pixels
and billing. Every measure must agree on every case.

The driver's JSON and frame PNGs are cached under
`${XDG_CACHE_HOME:-~/.cache}/musepi-lab/conformance-json/`, keyed by the session file's digest,
the budgets and the driver's digest, so a rerun costs only our side. Missing node, npm or bun
skips, except under CI=true, where it fails.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
from functools import cache
from pathlib import Path
from typing import Any, NoReturn

import pytest
from _corpus import REPO_ROOT, corpus_file

from musepi_lab.formats._registry import read_session
from musepi_lab.strategies.snapcompact import MEASURES, compare_snapcompact

pytestmark = pytest.mark.corpus

TARGETS = {"anthropic", "anthropic-opus-4.7", "google", "openai"}
# 20,000 (the default keep) on every fixture; 1,000 on large-session, where the GPT and
# Sonnet readers hit the 17-frame cap and the archive is foveated and truncated.
CASES = [
    (("pi", "before-compaction.jsonl"), (20000,)),
    (("pi", "large-session.jsonl"), (1000, 20000)),
    (("pi", "oh-my-pi", "before-compaction.jsonl"), (20000,)),
    (("pi", "oh-my-pi", "large-session.jsonl"), (20000,)),
]


def _load_runner() -> Any:
    spec = importlib.util.spec_from_file_location(
        "musepi_conformance_run", REPO_ROOT / "conformance" / "run.py"
    )
    assert spec is not None and spec.loader is not None
    module = sys.modules.get(spec.name) or importlib.util.module_from_spec(spec)
    if spec.name not in sys.modules:
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _missing(reason: str) -> NoReturn:
    if _in_ci():
        pytest.fail(f"CI=true but the reference driver cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "musepi-lab" / "conformance-json"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


@cache
def reference(parts: tuple[str, ...], budgets: tuple[int, ...]) -> dict[str, Any]:
    """The driver's JSON for one file, with its frame PNGs, from the cache or a fresh run."""
    path = corpus_file(*parts)
    driver = _digest(REPO_ROOT / "conformance" / "driver" / "omp.ts")
    key = f"{_digest(path)}-{'_'.join(map(str, budgets))}-{driver}"
    folder = _cache_root() / key
    out = folder / "reference.json"
    if out.is_file():
        loaded: dict[str, Any] = json.loads(out.read_text())
        return loaded
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            _missing(f"{tool} not found on PATH")
    runner = _load_runner()
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        report = runner.run_reference(
            "musepi",
            path,
            budgets,
            snapcompact_budgets=budgets,
            texts="full",
            frames_dir=partial / "frames",
        )
    except runner.ReferenceToolMissing as error:
        _missing(str(error))
    # Frame paths point into the final folder; the folder is moved into place whole.
    text = json.dumps(report).replace(str(partial / "frames"), str(folder / "frames"))
    (partial / "reference.json").write_text(text)
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    result: dict[str, Any] = json.loads(text)
    return result


@pytest.mark.parametrize(("parts", "budgets"), CASES, ids=lambda v: "/".join(map(str, v)))
def test_snapcompact_matches_oh_my_pi(parts: tuple[str, ...], budgets: tuple[int, ...]) -> None:
    ref = reference(parts, budgets)
    assert ref["reference"]["packages"]["@oh-my-pi/snapcompact"] == "18.2.3"
    for budget in budgets:
        assert set(ref["budgets"][str(budget)]["snapcompact"]) == TARGETS
    rows = compare_snapcompact(ref, read_session(corpus_file(*parts)), budgets)
    assert [r["measure"] for r in rows] == list(MEASURES)
    by_measure = {r["measure"]: r for r in rows}
    frames = sum(
        len(t["frames"]) for b in budgets for t in ref["budgets"][str(b)]["snapcompact"].values()
    )
    cases = len(budgets) * len(TARGETS)
    for row in rows:
        expected = frames if row["measure"].startswith("snapcompact/frame_") else cases
        assert (row["agreed"], row["total"]) == (expected, expected), row
        assert row["first_difference"] is None
    assert by_measure["snapcompact/frame_pixels"]["max_differing_pixel_share"] == 0.0
