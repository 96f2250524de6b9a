"""Execute a notebook, render it to a self-contained HTML page, and serve it on 127.0.0.1.

The page refers to its scripts by relative URLs under `assets/`, so it works whatever port
the server gets; `serve_site` mounts the unpacked npm packages there.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from nbformat.notebooknode import NotebookNode

WIDGET_STATE_MIME = "application/vnd.jupyter.widget-state+json"
HTML_MANAGER_URL = "assets/html-manager/dist/embed-amd.js"
REQUIRE_JS_URL = "assets/requirejs/require.js"
NO_MATHJAX_URL = "assets/no-mathjax.js"
NO_MATHJAX_JS = b"// The fixture has no mathematics; this stands in for MathJax's CDN script.\n"
"""nbconvert's lab template always adds a MathJax <script>; this keeps it off the CDN."""


def execute_notebook(notebook: NotebookNode, cwd: Path, timeout_s: int = 120) -> NotebookNode:
    """Run every cell on a fresh kernel and keep the widget state in the metadata.

    Args:
        notebook: The notebook to run; it is not changed.
        cwd: The kernel's working directory.
        timeout_s: Longest time one cell may take.

    Returns:
        An executed copy, with outputs and `metadata.widgets`.
    """
    from nbclient import NotebookClient

    executed = copy.deepcopy(notebook)
    client = NotebookClient(
        executed,
        timeout=timeout_s,
        kernel_name="python3",
        store_widget_state=True,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    return executed


def saved_widget_models(notebook: NotebookNode) -> dict[str, dict]:
    """Model id → saved state (`model_name`, `state`, …) from an executed notebook."""
    saved = notebook.metadata.get("widgets", {}).get(WIDGET_STATE_MIME, {})
    return dict(saved.get("state", {}))


def render_html(notebook: NotebookNode) -> str:
    """nbconvert's lab HTML of `notebook`, with every script URL pointing under `assets/`."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="lab",
        require_js_url=REQUIRE_JS_URL,
        widget_renderer_url=HTML_MANAGER_URL,
        # Unused once widget_renderer_url is set, but kept local so no branch reaches a CDN.
        jupyter_widgets_base_url="assets/",
        mathjax_url=NO_MATHJAX_URL,
    )
    body, _ = exporter.from_notebook_node(notebook)
    return body


@dataclass
class ServedSite:
    """A running local server: its base URL and the request log, in arrival order."""

    base_url: str
    requests: list[tuple[str, int]] = field(default_factory=list)
    """(path, HTTP status) of every request answered."""


def _handler_class(
    mounts: Mapping[str, Path], files: Mapping[str, bytes], site: ServedSite
) -> type[SimpleHTTPRequestHandler]:
    # Longest prefix first, so "/assets/x/" wins over "/".
    ordered = sorted(mounts.items(), key=lambda item: len(item[0]), reverse=True)

    class Handler(SimpleHTTPRequestHandler):
        def translate_path(self, path: str) -> str:
            for prefix, folder in ordered:
                if path.startswith(prefix):
                    self.directory = str(folder)
                    # The base class drops ".." segments, so nothing escapes the mount.
                    return super().translate_path("/" + path[len(prefix) :])
            return str(Path(self.directory) / "\0no-such-mount")

        def do_GET(self) -> None:
            bare = self.path.split("?", 1)[0]
            if bare in files:
                body = files[bare]
                self.send_response(200)
                self.send_header("Content-Type", "text/javascript")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            site.requests.append((self.path, int(code) if str(code).isdigit() else 0))

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep pytest output clean; the request log above is the record

    return Handler


@contextmanager
def serve_site(
    mounts: Mapping[str, Path], files: Mapping[str, bytes] | None = None
) -> Iterator[ServedSite]:
    """Serve folders (URL prefix → folder) and in-memory files on 127.0.0.1, random port.

    Args:
        mounts: URL prefixes ending in "/" mapped to the folders they serve.
        files: Exact URL paths answered from memory.

    Yields:
        The running site; the server stops when the block ends.
    """
    site = ServedSite(base_url="")
    handler = _handler_class(mounts, files or {}, site)
    any_folder = next(iter(mounts.values()))
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(any_folder)))
    site.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="browser-site", daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
