"""Branch summaries in the workbench: `SessionExplorer`'s "navigate here" driven by setting
traits and clicking, and `plot_tree`'s `fromId` arcs. Expected counts come from the
generated session's paths, counted here."""

from __future__ import annotations

from typing import Any

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
pytest.importorskip("ipywidgets")

import matplotlib.pyplot as plt  # noqa: E402
from _builders import stub_server_fixtures  # noqa: E402
from matplotlib.patches import FancyArrowPatch  # noqa: E402

from musepi_lab.compaction import SessionHooks  # noqa: E402
from musepi_lab.compaction._hooks import BeforeTree  # noqa: E402
from musepi_lab.datasets._branches import generate_branch_session  # noqa: E402
from musepi_lab.llm._summarizer import OpenAICompatibleSummarizer  # noqa: E402
from musepi_lab.navigation import navigate_tree  # noqa: E402
from musepi_lab.plot import plot_tree  # noqa: E402
from musepi_lab.plot._layout import tree_layout  # noqa: E402
from musepi_lab.widgets import SessionExplorer  # noqa: E402

SUMMARY = "## Goal\nThe abandoned attempt, in short."
shared_server, server = stub_server_fixtures(lambda body: SUMMARY)


def summarizer(server: Any) -> OpenAICompatibleSummarizer:
    return OpenAICompatibleSummarizer(model="m1", base_url=server.base_url, sleep=lambda s: None)


def first_branch_leaf(session: Any) -> str:
    main = {e.id for e in session.path()}
    return next(leaf.id for leaf in session.leaves if leaf.id not in main)


def test_explorer_preview_then_navigate(server):
    session = generate_branch_session(1, forks=2).session
    target = first_branch_leaf(session)
    main_ids = [e.id for e in session.path()]
    shared = {e.id for e in session.path(target)} & set(main_ids)
    expected_abandoned = [i for i in main_ids if i not in shared]

    view = SessionExplorer(session, summarizer=summarizer(server))
    view.leaf_picker.value = target  # the branch holding the target
    view.entry_slider.value = view.entry_slider.max  # its tip
    assert view.selected_entry.id == target

    view.preview_button.click()
    assert [e.id for e in view.navigation.abandoned] == expected_abandoned
    assert "would navigate" in view.navigation_view.value
    assert server.requests == [] and view.session is session

    view.summarize_box.value = True
    view.navigate_button.click()
    ((_, body),) = server.requests
    entry = view.navigation.summary_entry
    assert entry is not None and entry.parent_id == target
    assert view.session.leaf_id == entry.id and view.leaf_id == entry.id
    assert view.context.messages[-1]["role"] == "branchSummary"
    assert SUMMARY in view.context.messages[-1]["summary"]
    assert "navigated" in view.navigation_view.value
    # The request read the abandoned side: the main path's last user message is in it.
    last_user = next(e for e in reversed(session.path()) if e.role == "user")
    assert last_user.message["content"] in body["messages"][-1]["content"]


def test_explorer_navigate_without_summary(server):
    session = generate_branch_session(1, forks=1).session
    target = first_branch_leaf(session)
    view = SessionExplorer(session)
    view.select(target)
    view.navigate_button.click()
    assert server.requests == []
    assert view.session.leaf_id == target and view.navigation.summary_entry is None
    assert "branch_summary" not in {e.type for e in view.session.entries}


def navigated() -> Any:
    session = generate_branch_session(2, forks=1).session
    target = first_branch_leaf(session)
    hooks = SessionHooks(session_before_tree=lambda ask: BeforeTree(summary="S"))
    return navigate_tree(session, target, summarize=True, hooks=hooks)


def test_layout_links_branch_summary_to_from_id():
    result = navigated()
    layout = tree_layout(result.session)
    entry = result.summary_entry
    from_id = entry.get("fromId")
    assert layout.from_links == ((layout.index[entry.id], layout.index[from_id]),)
    assert layout.by_key[layout.index[entry.id]].kind == "branch_summary"


def test_plot_tree_draws_the_from_id_arc():
    ax = plot_tree(navigated().session)
    arcs = [p for p in ax.patches if isinstance(p, FancyArrowPatch) and p.get_gid() == "from-id"]
    assert len(arcs) == 1
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "branch_summary" in labels and "→ summarized from" in labels
    plt.close(ax.figure)
