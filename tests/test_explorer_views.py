"""What `SessionExplorer` and the live view show a person (issue 29, item 6): the tree with
the cut on it, the subagents from the picker, a layout that cuts no entry text and wraps no
id, and thousands separators on every number, sliders included.

Tested without a browser: traits set, state and the PNG read. Expected entries, subagent
files and texts come from the raw files (plain `json`, `glob`).
"""

from __future__ import annotations

import html
import io
import json
import re
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets
import pytest
from _corpus import corpus_file
from PIL import Image

from musepi_lab.compaction._prepare import prepare_compaction
from musepi_lab.compaction._settings import CompactionSettings
from musepi_lab.formats._registry import read_session
from musepi_lab.tokens._counter import TokenCounter
from musepi_lab.widgets._cut import CutPointExplorer
from musepi_lab.widgets._explorer import SessionExplorer
from musepi_lab.widgets._explorer_views import entry_option_label
from musepi_lab.widgets._tree_view import TreeDrawing

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample"
SAMPLE1 = SAMPLE / "sample-0001.jsonl"
LARGEST_CLAUDE = "fa812bfe-b295-4cca-9c2f-fdf01028cb46"


def raw_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def descendants(widget: Any) -> list[Any]:
    found = [widget]
    for child in getattr(widget, "children", ()):
        found.extend(descendants(child))
    return found


def ancestors(root: Any, target: Any) -> list[Any] | None:
    """The containers from `root` down to `target` (None when it is not below root)."""
    if root is target:
        return []
    for child in getattr(root, "children", ()):
        below = ancestors(child, target)
        if below is not None:
            return [root, *below]
    return None


def summarized_pixels(png: bytes) -> int:
    """Pixels of the summarized region's shade (#fdd49e at alpha 0.6 over white)."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    target = (254, 229, 197)
    return sum(
        count
        for count, rgb in image.getcolors(maxcolors=1 << 20) or []
        if all(abs(a - b) <= 3 for a, b in zip(rgb, target, strict=True))
    )


# -- the tree with the cut -----------------------------------------------------------------
def test_session_explorer_draws_the_tree_with_the_cut_at_the_branch_leaf():
    session = read_session(SAMPLE1)
    explorer = SessionExplorer(session)
    expected = prepare_compaction(
        session, CompactionSettings.musepi(), TokenCounter.for_profile("musepi")
    )
    assert expected is not None
    assert explorer.preparation is not None
    assert explorer.preparation.first_kept_entry_id == expected.first_kept_entry_id
    cut = html.unescape(re.sub(r"<[^>]+>", "", explorer.cut_view.value))
    assert cut.startswith("Cut") and expected.first_kept_entry_id in cut
    outputs = explorer.tree_output.outputs
    assert len(outputs) == 1 and "image/png" in outputs[0]["data"]
    # The summarized region is shaded on the picture, which a tree without a cut lacks.
    uncut = TreeDrawing(session).png(leaf_id=session.leaf_id, counter=explorer.counter)
    assert summarized_pixels(explorer.tree_png) > 20 * max(1, summarized_pixels(uncut))


def test_the_tree_follows_the_branch_picked():
    session = read_session(SAMPLE / "sample-0002.jsonl")
    explorer = SessionExplorer(session)
    assert len(explorer.leaf_picker.options) > 1
    first = explorer.tree_png
    other = explorer.leaf_picker.options[1][1]
    explorer.leaf_picker.value = other
    assert explorer.preparation is None or explorer.preparation.leaf_id == other
    assert explorer.tree_png is not None and explorer.tree_png != first


def test_live_view_draws_the_tree_with_the_cut_and_redraws_after_a_write(tmp_path):
    lines = SAMPLE1.read_text(encoding="utf-8").splitlines(keepends=True)
    live = tmp_path / "live.jsonl"
    live.write_text("".join(lines[:-40]), encoding="utf-8")
    explorer = SessionExplorer(live, live=True)
    try:
        explorer.stop()  # driven by refresh() here, not by the thread
        before = explorer.tree_png
        assert before is not None and explorer.preparation is not None
        assert explorer.live_summary.cut_entry_id == explorer.preparation.first_kept_entry_id
        with live.open("a", encoding="utf-8") as out:
            out.write("".join(lines[-40:]))
        assert explorer.refresh()
        assert len(explorer.session.entries) == len(lines) - 1
        assert explorer.tree_png is not None and explorer.tree_png != before
        assert explorer.live_summary.cut_entry_id == explorer.preparation.first_kept_entry_id
    finally:
        explorer.close()


# -- subagents -----------------------------------------------------------------------------
def test_subagents_are_reached_from_the_picker_and_back():
    main = corpus_file("claude-code", f"{LARGEST_CLAUDE}.jsonl")
    files = sorted((main.parent / LARGEST_CLAUDE / "subagents").glob("agent-*.jsonl"))
    assert files
    explorer = SessionExplorer(main, plot=False)
    options = explorer.subagent_picker.options
    assert len(options) == 1 + len(files)
    assert explorer.subagent_picker.layout.display != "none"
    agent_ids = {f.stem.removeprefix("agent-") for f in files}
    assert {label.split(" · ")[0].split(" ", 1)[1] for label, _ in options[1:]} == agent_ids
    for label, value in options[1:]:
        explorer.subagent_picker.value = value
        shown = Path(explorer.session.source_path or "")
        assert shown.stem.removeprefix("agent-") in label
        # What the explorer shows comes from that file, from its first prompt on.
        records = raw_records(shown)
        uuids = {r["uuid"] for r in records if r.get("uuid")}
        assert {e.id for e in explorer.session.entries} <= uuids
        first_prompt = next(r["uuid"] for r in records if r.get("type") == "user")
        assert first_prompt in {e.id for e in explorer.path}
        assert explorer.path and explorer.selected_entry is not None
    explorer.subagent_picker.value = -1
    assert explorer.session is explorer.root_session
    assert Path(explorer.session.source_path or "") == main


def test_a_session_without_subagents_hides_the_picker():
    explorer = SessionExplorer(SAMPLE1, plot=False)
    assert explorer.subagent_picker.layout.display == "none"


# -- layout ----------------------------------------------------------------------------------
def test_a_long_entry_is_shown_whole_and_ids_do_not_wrap():
    records = raw_records(SAMPLE1)
    longest = max(
        (r for r in records if r.get("type") == "message"),
        key=lambda r: len(json.dumps(r["message"].get("content"))),
    )
    blocks = longest["message"]["content"]
    text = (
        max(
            (b.get("text") or b.get("content") or "" for b in blocks if isinstance(b, dict)),
            key=len,
        )
        if isinstance(blocks, list)
        else blocks
    )
    assert len(text) > 1500  # longer than the old view showed
    explorer = SessionExplorer(SAMPLE1, plot=False)
    explorer.select(longest["id"])
    shown = html.unescape(re.sub(r"<[^>]+>", "", explorer.entry_view.value))
    assert text in shown and "more chars]" not in shown
    ids = re.findall(
        r"<span style='white-space:nowrap[^']*'>([^<]+)</span>", explorer.entry_view.value
    )
    assert longest["id"] in ids
    rows = re.findall(
        r"<td style='white-space:nowrap[^']*'>([^<]+)</td>", explorer.context_view.value
    )
    assert rows and all(row.strip() for row in rows)


def test_entry_and_context_take_the_whole_width():
    explorer = SessionExplorer(SAMPLE1, plot=False)
    for view in (explorer.entry_list, explorer.entry_view, explorer.context_view):
        chain = ancestors(explorer, view)
        assert chain is not None
        widths = [c.layout.width for c in chain if isinstance(c, widgets.Box)]
        assert all(w in (None, "", "100%", "auto") for w in widths), widths


# -- thousands separators ----------------------------------------------------------------------
@pytest.mark.parametrize("make", [CutPointExplorer, SessionExplorer], ids=["cut", "explorer"])
def test_every_slider_reads_out_with_thousands_separators(make):
    session = read_session(SAMPLE1)
    view = make(session, plot=False)
    sliders = [
        w for w in descendants(view) if isinstance(w, (widgets.IntSlider, widgets.IntRangeSlider))
    ]
    assert sliders
    for slider in sliders:
        # ipywidgets formats the readout with d3-format, whose `,d` Python's format() shares.
        assert format(42_000, slider.readout_format) == "42,000", slider.description


def test_entry_lines_show_index_and_tokens_with_separators():
    session = read_session(SAMPLE1)
    entry = session.path()[-1]
    line = entry_option_label(12_345, entry, 67_890)
    assert line.lstrip().startswith("12,345 ·") and "67,890 est. tok" in line
