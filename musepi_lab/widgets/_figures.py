"""Figures and HTML snippets shown inside widgets.

A figure goes into an `ipywidgets.Output` as a PNG display-data item set on the widget's
`outputs` trait. That works the same in a live kernel, in a test without one, and in a
notebook saved with its widget state (the PNG is part of the state a browser renders).
"""

from __future__ import annotations

import base64
import html
import io
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ipywidgets
    from matplotlib.figure import Figure

THOUSANDS = ",d"
"""`readout_format` of integer sliders: d3-format with thousands separators (42,000)."""
FIGURE_DPI = 90
"""Resolution of figures shown in widgets (a compromise between sharpness and redraw time)."""


def figure_png(fig: Figure, *, dpi: int = FIGURE_DPI, tight: bool = True) -> bytes:
    """The PNG bytes of a figure, tightly cropped unless `tight` is False (a figure laid
    out already saves faster without the extra cropping pass)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight" if tight else None)
    return buffer.getvalue()


def png_output(png: bytes, description: str) -> dict[str, Any]:
    """A display-data output item (nbformat shape) showing a PNG."""
    return {
        "output_type": "display_data",
        "data": {
            "image/png": base64.b64encode(png).decode("ascii"),
            "text/plain": description,
        },
        "metadata": {},
    }


def text_output(text: str) -> dict[str, Any]:
    """A display-data output item showing plain text (used for messages and errors)."""
    return {"output_type": "display_data", "data": {"text/plain": text}, "metadata": {}}


def show_figure(output: ipywidgets.Output, fig: Figure, *, description: str = "figure") -> bytes:
    """Replace what `output` shows with `fig` as a PNG, and close the figure.

    Closing matters in a notebook: a pyplot figure left open would be drawn a second time
    below the cell by the inline backend.

    Returns:
        The PNG bytes shown.
    """
    import matplotlib.pyplot as plt

    try:
        png = figure_png(fig)
    finally:
        plt.close(fig)
    output.outputs = (png_output(png, f"<{description}>"),)
    return png


def show_png(output: ipywidgets.Output, png: bytes, *, description: str = "figure") -> None:
    """Replace what `output` shows with a PNG (for figures a view keeps and redraws)."""
    output.outputs = (png_output(png, f"<{description}>"),)


def show_text(output: ipywidgets.Output, text: str) -> None:
    """Replace what `output` shows with a plain text."""
    output.outputs = (text_output(text),)


def escape_clip(text: str, limit: int) -> str:
    """HTML-escaped text, cut at `limit` characters with a note of what was left out."""
    if len(text) > limit:
        text = f"{text[:limit]}… [{len(text) - limit:,} more chars]"
    return html.escape(text)


def one_line(text: str, limit: int) -> str:
    """The text on one line (newlines shown as ⏎), cut at `limit` characters."""
    flat = " ⏎ ".join(part.strip() for part in text.splitlines() if part.strip())
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)] + "…"
