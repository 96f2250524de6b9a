"""A real-browser check: the fixture notebook, rendered with its widget state, in Chromium.

The notebook (`fixtures/tree_and_widgets.ipynb`) is run on a fresh kernel with nbclient, its
widget state saved, and turned into nbconvert's lab HTML whose widget manager and RequireJS
are served from 127.0.0.1 (npm tarballs unpacked into a cache folder), never from a CDN.
Debian's headless Chromium, driven by Playwright, opens the page with every non-loopback
request aborted and recorded; the tests then check that the tree figure and the widgets are
really there. The screenshot is kept at `test-output/browser/screenshot.png`.

Missing chromium, playwright or npm skips these tests, except under CI=true, where it fails
them: CI must not pass by skipping the only check that widgets render.
"""

from __future__ import annotations

import base64
import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

import nbformat
import pytest
from browser_assets import AssetFetchError, fetch_widget_assets, find_npm
from browser_fixture_notebook import (
    FIXTURE_NOTEBOOK,
    SAMPLE_RELATIVE,
    build_fixture_notebook,
)
from browser_page import (
    HTML_MANAGER_URL,
    NO_MATHJAX_JS,
    NO_MATHJAX_URL,
    REQUIRE_JS_URL,
    execute_notebook,
    render_html,
    saved_widget_models,
    serve_site,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
OUTPUT_DIR = REPO_ROOT / "test-output" / "browser"
SCREENSHOT = OUTPUT_DIR / "screenshot.png"
PAGE_NAME = "tree_and_widgets.html"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
# Schemes that never reach the network: inline images, blobs the page makes, blank frames.
LOCAL_SCHEMES = frozenset({"data", "blob", "about"})
RENDER_TIMEOUT_MS = 20_000
CDN_PROBE_URL = "https://unpkg.com/@jupyter-widgets/html-manager@1.0.15/dist/embed-amd.js"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def in_ci() -> bool:
    """True when the CI environment variable says so (as GitHub Actions, GitLab, … set it)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing(reason: str) -> NoReturn:
    """Skip the browser check, or fail it under CI where a skip would hide a regression."""
    if in_ci():
        pytest.fail(f"CI=true but the browser check cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def is_loopback(url: str) -> bool:
    """Whether a request for `url` stays on this machine."""
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return True
    return parts.scheme in {"http", "https", "ws", "wss"} and parts.hostname in LOOPBACK_HOSTS


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    assert data[:8] == PNG_SIGNATURE, "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def raw_sample_facts() -> tuple[str, int]:
    """The sample's session id and entry count, read from the raw file with plain json."""
    lines = (REPO_ROOT / SAMPLE_RELATIVE).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    header = next(r for r in records if r.get("type") == "session")
    return header["id"], sum(1 for r in records if r.get("type") != "session")


@dataclass
class BrowserRun:
    """What the browser saw and what the server answered, for the tests to inspect."""

    executed: Any
    html: str
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    served: list[tuple[str, int]] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)
    slider: dict[str, Any] = field(default_factory=dict)
    html_widget_texts: list[str] = field(default_factory=list)
    probe_blocked: list[str] = field(default_factory=list)
    """What the guard stopped when the page, after the checks, tried to fetch from a CDN."""
    probe_outcome: str = ""


_IMAGES_JS = """els => els.map(e => ({
    src: e.getAttribute('src') || '',
    naturalWidth: e.naturalWidth,
    naturalHeight: e.naturalHeight,
    shownWidth: e.getBoundingClientRect().width,
    inWidget: e.closest('.widget-output') !== null,
}))"""
_SLIDER_JS = """el => ({
    label: (el.querySelector('.widget-label') || {}).innerText || '',
    readout: (el.querySelector('.widget-readout') || {}).innerText || '',
    handles: el.querySelectorAll('.noUi-handle').length,
    width: el.getBoundingClientRect().width,
})"""


def browse(page_url: str, run: BrowserRun) -> None:
    """Open `page_url` in headless Chromium, fill `run` and save the screenshot."""
    from playwright.sync_api import Route, sync_playwright
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    def guard(route: Route) -> None:
        url = route.request.url
        if is_loopback(url):
            route.continue_()
        else:
            run.blocked.append(url)
            route.abort("blockedbyclient")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            context = browser.new_context(
                viewport={"width": 1280, "height": 900}, service_workers="block"
            )
            context.route("**/*", guard)
            context.on("request", lambda request: run.requests.append(request.url))
            page = context.new_page()
            page.on("pageerror", lambda error: run.page_errors.append(str(error)))
            page.goto(page_url, wait_until="load", timeout=RENDER_TIMEOUT_MS)
            try:
                # Both only exist once the html-manager has rendered the saved state.
                page.wait_for_selector(".widget-slider", timeout=RENDER_TIMEOUT_MS)
                page.wait_for_selector(".widget-output img", timeout=RENDER_TIMEOUT_MS)
                page.wait_for_function(
                    "() => [...document.images].every(i => i.complete)",
                    timeout=RENDER_TIMEOUT_MS,
                )
            except PlaywrightTimeoutError:
                SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SCREENSHOT), full_page=True)
                pytest.fail(
                    f"widgets not rendered within {RENDER_TIMEOUT_MS} ms; blocked requests: "
                    f"{run.blocked}; page errors: {run.page_errors}; screenshot: {SCREENSHOT}",
                    pytrace=False,
                )
            run.images = page.eval_on_selector_all("img", _IMAGES_JS)
            run.slider = page.eval_on_selector(".widget-slider", _SLIDER_JS)
            run.html_widget_texts = page.eval_on_selector_all(
                ".widget-html", "els => els.map(e => e.innerText)"
            )
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT), full_page=True)
            page.close()
            # Proves the guard can fail the run: a CDN fetch must be stopped and recorded.
            # Made from a fresh page once the fixture's page is closed, so it stays apart
            # from what the fixture's page asked for.
            seen, stopped = len(run.requests), len(run.blocked)
            probe = context.new_page()
            run.probe_outcome = probe.evaluate(
                "url => fetch(url).then(() => 'loaded', e => 'failed: ' + e)", CDN_PROBE_URL
            )
            run.probe_blocked = run.blocked[stopped:]
            del run.blocked[stopped:], run.requests[seen:]
        finally:
            browser.close()


@pytest.fixture(scope="module")
def browser_run() -> BrowserRun:
    """Run, render, serve and browse the fixture notebook once for every test here."""
    if not CHROMIUM.is_file():
        missing(f"{CHROMIUM} not found (Debian: apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing("playwright is not installed (pip install playwright)")
    npm = find_npm()
    if npm is None:
        missing("npm not found: it fetches @jupyter-widgets/html-manager and requirejs")
    try:
        assets = fetch_widget_assets(npm=npm)
    except AssetFetchError as error:
        missing(str(error))

    executed = execute_notebook(build_fixture_notebook(), cwd=REPO_ROOT)
    run = BrowserRun(executed=executed, html=render_html(executed))
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUTPUT_DIR / PAGE_NAME).write_text(run.html, encoding="utf-8")
    mounts = {
        "/": OUTPUT_DIR,
        "/" + HTML_MANAGER_URL.split("dist/")[0]: assets.html_manager,
        "/" + REQUIRE_JS_URL.rsplit("/", 1)[0] + "/": assets.requirejs,
    }
    with serve_site(mounts, files={"/" + NO_MATHJAX_URL: NO_MATHJAX_JS}) as site:
        browse(f"{site.base_url}/{PAGE_NAME}", run)
        run.served = list(site.requests)
    return run


def notebook_pngs(executed: Any) -> list[bytes]:
    """Every image/png the kernel produced, in cell outputs and in saved Output widgets."""
    outputs = [out for cell in executed.cells for out in cell.get("outputs", [])]
    for model in saved_widget_models(executed).values():
        if model.get("model_name") == "OutputModel":
            outputs.extend(model["state"].get("outputs", []))
    return [
        base64.b64decode(out["data"]["image/png"])
        for out in outputs
        if "image/png" in out.get("data", {})
    ]


# -- the fixture ---------------------------------------------------------------------------


def test_stored_fixture_notebook_matches_its_generator() -> None:
    stored = nbformat.read(FIXTURE_NOTEBOOK, as_version=4)
    nbformat.validate(stored)
    built = build_fixture_notebook()
    assert [(c.cell_type, c.source) for c in stored.cells] == [
        (c.cell_type, c.source) for c in built.cells
    ], "regenerate with: python tests/browser/browser_fixture_notebook.py"
    assert all(not c.get("outputs") for c in stored.cells), "stored with outputs"


# -- nothing left the machine --------------------------------------------------------------


def test_no_request_left_loopback(browser_run: BrowserRun) -> None:
    assert browser_run.blocked == []
    assert browser_run.requests, "the browser made no request at all"
    assert [url for url in browser_run.requests if not is_loopback(url)] == []


def test_the_guard_stops_a_cdn_request(browser_run: BrowserRun) -> None:
    assert browser_run.probe_blocked == [CDN_PROBE_URL]
    assert browser_run.probe_outcome.startswith("failed")


def test_widget_manager_and_requirejs_came_from_the_local_server(
    browser_run: BrowserRun,
) -> None:
    answered = dict(browser_run.served)
    assert answered.get("/" + HTML_MANAGER_URL) == 200
    assert answered.get("/" + REQUIRE_JS_URL) == 200
    # Chromium asks for /favicon.ico by itself; everything the page asked for must exist.
    failed = [(path, code) for path, code in browser_run.served if code >= 400]
    assert [f for f in failed if f[0] != "/favicon.ico"] == []
    assert browser_run.page_errors == []


# -- what is on the page -------------------------------------------------------------------


def test_tree_figure_is_drawn_as_a_cell_output_and_inside_the_output_widget(
    browser_run: BrowserRun,
) -> None:
    kernel_sizes = {png_size(png) for png in notebook_pngs(browser_run.executed)}
    assert kernel_sizes, "the kernel produced no PNG"
    figures = [img for img in browser_run.images if img["src"].startswith("data:image/png")]
    static = [img for img in figures if not img["inWidget"]]
    in_widget = [img for img in figures if img["inWidget"]]
    assert static and in_widget
    for img in figures:
        assert img["naturalWidth"] > 0 and img["shownWidth"] > 0
        # The browser decoded the very PNG the kernel drew, at its full size.
        assert (img["naturalWidth"], img["naturalHeight"]) in kernel_sizes


def test_widgets_are_rendered_from_the_saved_state(browser_run: BrowserRun) -> None:
    assert "widget-slider" not in browser_run.html, "the page must get its widgets from JS"
    models = saved_widget_models(browser_run.executed)
    by_name = {m["model_name"]: m["state"] for m in models.values()}
    assert {"IntSliderModel", "HTMLModel", "OutputModel", "VBoxModel"} <= set(by_name)

    # The page's first slider is the fixture's own (the explorer's come later).
    cut_at = next(
        m["state"]
        for m in models.values()
        if m["model_name"] == "IntSliderModel" and m["state"]["description"] == "cut at"
    )
    slider = browser_run.slider
    assert slider["label"] == cut_at["description"] == "cut at"
    assert slider["readout"] == str(cut_at["value"])
    assert slider["handles"] == 1 and slider["width"] > 0

    session_id, entry_count = raw_sample_facts()
    assert any(
        text.startswith(f"{session_id}: {entry_count} entries")
        for text in browser_run.html_widget_texts
    ), browser_run.html_widget_texts


def test_session_explorer_shows_its_navigation(browser_run: BrowserRun) -> None:
    # The explorer navigated from the session leaf to a branch tip in the kernel; its
    # buttons and the navigation it shows are drawn from the saved state.
    buttons = [
        m["state"]["description"]
        for m in saved_widget_models(browser_run.executed).values()
        if m.get("model_name") == "ButtonModel"
    ]
    assert {"navigate here", "preview: navigate here"} <= set(buttons)
    shown = [t for t in browser_run.html_widget_texts if t.startswith("navigated from")]
    assert shown and "entries abandoned" in shown[0], browser_run.html_widget_texts


def test_screenshot_is_kept_as_an_artifact(browser_run: BrowserRun) -> None:
    width, height = png_size(SCREENSHOT.read_bytes())
    assert width >= 1280 and height >= 900
