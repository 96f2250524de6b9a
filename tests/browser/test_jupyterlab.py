"""The real-browser check: the project's notebooks in a real JupyterLab, in Chromium.

JupyterLab runs on 127.0.0.1 (own port, token and scratch folders under `test-output/`,
bounded start), serving copies of the notebooks. Debian's chromium, driven by Playwright
(`executable_path`), opens notebook 02, runs all cells from the Run menu, then drags the
`CutPointExplorer`'s keep-recent slider with the mouse and checks that the kernel answered:
the cut text and the tree figure change. The branch-summary notebook (`notebooks/06-*`) is
opened and run the same way when it exists, and its `SessionExplorer` previews and then
performs "navigate here" from mouse clicks (the branch summary must appear). Screenshots go to `test-output/browser/`.

Missing chromium, Playwright or JupyterLab skips, except under CI=true, where it fails: CI
must not pass by skipping the only check that the widgets work in JupyterLab.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from lab_server import LabServer, ServerStartError, run_lab

REPO_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO_ROOT / "notebooks"
CUT_NOTEBOOK = NOTEBOOKS / "02-tree-and-cut-points.ipynb"
BRANCH_NOTEBOOKS = sorted(NOTEBOOKS.glob("06-*.ipynb"))
OUTPUT_DIR = REPO_ROOT / "test-output" / "browser"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 1000}
OPEN_TIMEOUT_MS = 30_000
RUN_TIMEOUT_MS = 60_000
REDRAW_TIMEOUT_MS = 15_000
KEEP_LABEL = "keep recent"
DRAG_PX = 160
CELL_PROMPTS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt"
"""The execution prompts of the notebook on show (a workspace could hold others)."""
ERROR_LINE = re.compile(r"^(Traceback|\w*(Error|Exception)\b)", re.MULTILINE)


def in_ci() -> bool:
    """True when the CI environment variable says so (as .ci/run sets it)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing(reason: str) -> NoReturn:
    """Skip, or fail under CI where a skip would hide a regression."""
    if in_ci():
        pytest.fail(f"CI=true but the JupyterLab browser check cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def lab() -> Iterator[LabServer]:
    """One JupyterLab for the module, over copies of notebook 02 and any 06-* notebook."""
    if not CHROMIUM.is_file():
        missing(f"{CHROMIUM} not found (Debian: apt-get install -y chromium)")
    try:
        import jupyterlab  # noqa: F401
        import playwright.sync_api  # noqa: F401
    except ImportError as error:
        missing(f"{error.name} is not installed (pip install -e '.[test]')")
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    # Inside the repository (gitignored), so `find_up("datasets/sample/…")` finds the sample.
    scratch = OUTPUT_DIR / f"lab-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    try:
        with run_lab(scratch, REPO_ROOT, [CUT_NOTEBOOK, *BRANCH_NOTEBOOKS]) as server:
            yield server
    except ServerStartError as error:
        pytest.fail(str(error), pytrace=False)  # the scratch folder keeps the server's log
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="module")
def browser(lab: LabServer) -> Iterator[Any]:
    """Headless Debian chromium under Playwright, for the module."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()


# -- driving JupyterLab --------------------------------------------------------------------


def open_notebook(browser: Any, lab: LabServer, name: str) -> Any:
    """A page with notebook `name` open and its kernel idle."""
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(OPEN_TIMEOUT_MS)
    page.goto(lab.notebook_url(name), wait_until="domcontentloaded")
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    # The kernel is connected once the toolbar names it and the indicator says idle.
    page.wait_for_function(
        """() => {
            const name = document.querySelector('.jp-KernelName');
            return name && !/No Kernel/.test(name.textContent);
        }"""
    )
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")
    return page


def run_all(page: Any) -> None:
    """Run > Run All Cells, then wait until every code cell has an execution count."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    try:
        page.wait_for_function(
            """selector => {
                const prompts = [...document.querySelectorAll(selector)];
                return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
            }""",
            arg=CELL_PROMPTS,
            timeout=RUN_TIMEOUT_MS,
        )
    except PlaywrightTimeoutError:
        prompts = page.locator(CELL_PROMPTS).all_inner_texts()
        shot = screenshot(page, "jupyterlab-run-all-timeout.png")
        pytest.fail(f"cells not all run in {RUN_TIMEOUT_MS} ms: {prompts}; see {shot}")
    page.wait_for_selector(
        ".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=RUN_TIMEOUT_MS
    )


def error_outputs(page: Any) -> list[str]:
    """Texts of error outputs (tracebacks) on the page."""
    texts = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    return [t for t in texts.all_inner_texts() if ERROR_LINE.search(t)]


def screenshot(page: Any, name: str) -> Path:
    path = OUTPUT_DIR / name
    page.screenshot(path=str(path), full_page=False)
    return path


def explorer_state(explorer: Any) -> dict[str, str]:
    """What the CutPointExplorer shows: the cut sentence, the tree's image, the readout."""
    slider = explorer.locator(".widget-slider").filter(has_text=KEEP_LABEL)
    return {
        "cut": explorer.locator(".widget-html-content")
        .filter(has_text=re.compile(r"^(Cut|No cut)"))
        .first.inner_text(),
        "figure": explorer.locator(".widget-output img").first.get_attribute("src") or "",
        "keep": slider.locator(".widget-readout").first.inner_text(),
    }


def drag_keep_slider(page: Any, explorer: Any, dx: int) -> None:
    """Drag the keep-recent handle `dx` pixels with the mouse (released: one update)."""
    handle = explorer.locator(".widget-slider").filter(has_text=KEEP_LABEL).locator(".noUi-handle")
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    assert box is not None, "the keep-recent handle is not on screen"
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx, y, steps=12)
    page.mouse.up()


# -- the checks ----------------------------------------------------------------------------


def test_cut_point_explorer_follows_the_slider_in_jupyterlab(browser: Any, lab: LabServer) -> None:
    started = time.monotonic()
    page = open_notebook(browser, lab, CUT_NOTEBOOK.name)
    try:
        run_all(page)
        assert error_outputs(page) == []
        explorer = page.locator(".jp-OutputArea-output").filter(
            has=page.locator(".widget-label", has_text=KEEP_LABEL)
        )
        assert explorer.count() == 1, "no CutPointExplorer among the outputs"
        explorer.locator(".widget-output img").first.wait_for()
        before = explorer_state(explorer)
        # The notebook sets the smallest budget of its sweep before showing the explorer.
        assert before["keep"].replace(",", "") == "2000", before
        assert before["figure"].startswith("data:image/png")
        # The sliders at the top of the screenshot, the figure below them.
        explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
        screenshot(page, "jupyterlab-02-before.png")

        drag_keep_slider(page, explorer, DRAG_PX)
        page.wait_for_function(
            """([root, old]) => {
                const img = root.querySelector('.widget-output img');
                const cut = [...root.querySelectorAll('.widget-html-content')]
                    .find(e => /^(Cut|No cut)/.test(e.innerText));
                return img && cut && img.getAttribute('src') !== old.figure
                    && cut.innerText !== old.cut;
            }""",
            arg=[explorer.element_handle(), before],
            timeout=REDRAW_TIMEOUT_MS,
        )
        after = explorer_state(explorer)
        explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
        screenshot(page, "jupyterlab-02-after.png")
        assert int(after["keep"].replace(",", "")) > int(before["keep"].replace(",", ""))
        assert after["cut"] != before["cut"]
        assert after["figure"] != before["figure"] and after["figure"].startswith("data:image/png")
        assert error_outputs(page) == []
    finally:
        page.close()
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("notebook", BRANCH_NOTEBOOKS, ids=lambda p: p.name)
def test_branch_summary_notebook_runs_in_jupyterlab(
    browser: Any, lab: LabServer, notebook: Path
) -> None:
    page = open_notebook(browser, lab, notebook.name)
    try:
        run_all(page)
        screenshot(page, f"jupyterlab-{notebook.stem}.png")
        assert error_outputs(page) == []
        assert page.locator(".jp-OutputArea-output").count() > 0
        # The SessionExplorer's "navigate here": preview, then navigate, with the mouse.
        explorer = page.locator(".jp-OutputArea-output").filter(
            has=page.locator("button", has_text=re.compile(r"^navigate here$"))
        )
        assert explorer.count() == 1, "no SessionExplorer with navigate here among the outputs"
        view = explorer.locator(".widget-html-content")
        for button, shown in (
            ("preview: navigate here", "would navigate from"),
            ("navigate here", "branch summary"),
        ):
            explorer.locator("button", has_text=re.compile(f"^{re.escape(button)}$")).click()
            view.filter(has_text=shown).first.wait_for(timeout=REDRAW_TIMEOUT_MS)
        explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
        screenshot(page, f"jupyterlab-{notebook.stem}-navigated.png")
        assert view.filter(has_text="entries abandoned").count() >= 1
        assert error_outputs(page) == []
    finally:
        page.close()
