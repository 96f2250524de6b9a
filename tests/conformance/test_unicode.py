"""Snapcompact's text normalization against oh-my-pi 18.2.3's on every code point (issue 33).

The release's normalizer (`normalize`, `scanRenderability` of `@oh-my-pi/snapcompact`, and
`wrap` for the cell widths) answers every probe in one Bun process
(`conformance/driver/omp-normalize.ts`); its answers are the conformance package's cached
document, so a rerun costs only our side (about 15 s). Which code points are probed is
checked here by an independent count of the scalar values, not by the probe list's own
labels. Missing npm or bun skips, except under CI=true, where it fails.
"""

from __future__ import annotations

import gzip
import os
from functools import cache
from typing import Any, NoReturn

import pytest

from musepi_lab.conformance import ReferenceToolMissing
from musepi_lab.conformance._unicode import (
    FONTS,
    MEASURES,
    RUN_TEMPLATES,
    TABLES_DIR,
    cached_unicode_reference,
    compare_unicode,
    release_tables,
    unicode_probes,
    unicode_rows,
)


def _missing(reason: str) -> NoReturn:
    if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
        pytest.fail(f"CI=true but the reference driver cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


@cache
def reference() -> dict[str, Any]:
    try:
        return cached_unicode_reference()
    except ReferenceToolMissing as error:
        _missing(str(error))


def _scalar_values(lo: int, hi: int) -> set[str]:
    return {chr(cp) for cp in range(lo, hi + 1) if not 0xD800 <= cp <= 0xDFFF}


@pytest.mark.slow
def test_every_scalar_value_of_planes_0_to_2_is_probed_alone_and_in_every_template() -> None:
    probes = unicode_probes()
    alone = [p.text for p in probes if p.kind == "alone"]
    assert len(alone) == len(set(alone))
    assert all(len(text) == 1 for text in alone)
    probed = set(alone)
    # Planes 0-2, the emoji blocks (dingbats, symbols and pictographs, U+1F000-U+1FAFF) and
    # the emoji tags and variation selectors of plane 14 among them; no surrogate.
    assert _scalar_values(0x0, 0x2FFFF) <= probed
    assert _scalar_values(0xE0000, 0xE01EF) <= probed
    assert {chr(0x10FFFF), chr(0x10FFFE), chr(0x3134A)} <= probed
    assert not any(0xD800 <= ord(ch) <= 0xDFFF for ch in probed)
    runs: dict[str, list[str]] = {kind: [] for kind in RUN_TEMPLATES}
    for p in probes:
        if p.kind != "alone":
            runs[p.kind].append(p.text)
    for kind, texts in runs.items():
        assert probed <= set("".join(texts)), kind
        # Every run opens with a letter (the driver recovers its counts behind a prefix).
        assert all(text[0] == "a" for text in texts), kind


@pytest.mark.slow
def test_the_release_and_ours_agree_on_every_code_point_and_font() -> None:
    document = reference()
    assert document["reference"]["packages"]["@oh-my-pi/snapcompact"] == "18.2.3"
    assert document["reference"]["runtime"]["bun"] == "1.3.14"
    assert set(document["fonts"]) == set(FONTS) == {"8x13", "silver"}
    probes = unicode_probes()
    alone = sum(1 for p in probes if p.kind == "alone")
    rows = unicode_rows()
    assert [r.measure for r in rows] == list(MEASURES)
    for row in rows:
        expected = alone if row.measure == "unicode/cells" else len(probes)
        assert (row.agreed, row.total, row.first_difference) == (expected, expected, None), row


def _first_run(document: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The first run's probes (32 code points alone, then one per template) and the
    release's answers to them."""
    size = 32 + len(RUN_TEMPLATES)
    probes = unicode_probes()[:size]
    fonts = {
        font: {
            "texts": "\n".join(answers["texts"].split("\n")[:size]),
            "total": answers["total"][:size],
            "fallback": answers["fallback"][:size],
        }
        for font, answers in document["fonts"].items()
    }
    return probes, {"fonts": fonts, "cells": document["cells"][:32]}


@pytest.mark.slow
def test_a_difference_is_counted_and_named() -> None:
    probes, answers = _first_run(reference())
    assert all(r.agreed == r.total for r in compare_unicode(answers, probes))
    # The release's answers with one text, one count and one width changed: each row that
    # reads them disagrees on exactly that case and says where.
    texts = answers["fonts"]["8x13"]["texts"].split("\n")
    texts[33] = texts[33] + "x"
    answers["fonts"]["8x13"]["texts"] = "\n".join(texts)
    answers["fonts"]["silver"]["fallback"][5] += 1
    answers["cells"][7] = 2
    rows = {r.measure: r for r in compare_unicode(answers, probes)}
    text, counts, cells = (
        rows["unicode/text 8x13"],
        rows["unicode/counts silver"],
        rows["unicode/cells"],
    )
    assert (text.agreed, text.total) == (len(probes) - 1, len(probes))
    assert text.first_difference is not None
    assert text.first_difference.startswith(f"U+0000..U+001F {probes[33].kind}: ours ")
    assert (counts.agreed, counts.total) == (len(probes) - 1, len(probes))
    assert counts.first_difference is not None and counts.first_difference.startswith(
        "U+0005 alone"
    )
    assert (cells.agreed, cells.total, cells.first_difference) == (
        31,
        32,
        "U+0007: ours 1, release 2",
    )
    assert rows["unicode/text silver"].agreed == len(probes)


def test_answers_for_other_probes_are_refused() -> None:
    probes, answers = _first_run(reference())
    size = len(probes)
    with pytest.raises(ValueError, match=f"answered {size} probes of {size - 1}"):
        compare_unicode(answers, probes[:-1])


def test_the_package_data_is_what_the_release_reports() -> None:
    # The normalizer's coverage and character tables, asked of the installed release again
    # (about 2 s): the shipped files hold exactly its answers.
    reference()  # skips (or fails under CI) when the tools are missing
    for name, text in release_tables().items():
        assert gzip.decompress((TABLES_DIR / name).read_bytes()).decode("ascii") == text, name
