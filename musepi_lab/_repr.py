"""Rich representations without upward imports.

Core values (`Session`, `CompactionPreparation`, `CompactionResult`, `ReplayResult`) ask
this registry for their HTML and text cards; the display layer (`musepi_lab.display`) fills
it when it is imported, which `import musepi_lab` does. So the layer rule holds with no
exception: nothing below `display` imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Render = Callable[[Any], str]

_HTML: dict[type, Render] = {}
_TEXT: dict[type, Render] = {}


def register_repr(cls: type, *, html: Render | None = None, text: Render | None = None) -> None:
    """Render instances of `cls` (and its subclasses) with `html` and `text`."""
    if html is not None:
        _HTML[cls] = html
    if text is not None:
        _TEXT[cls] = text


def _find(table: dict[type, Render], obj: object) -> Render | None:
    for klass in type(obj).__mro__:
        render = table.get(klass)
        if render is not None:
            return render
    return None


def html_of(obj: object) -> str | None:
    """The registered HTML of `obj`, or None (IPython then falls back to the text repr)."""
    render = _find(_HTML, obj)
    return render(obj) if render is not None else None


def text_of(obj: object) -> str | None:
    """The registered plain-text card of `obj`, or None."""
    render = _find(_TEXT, obj)
    return render(obj) if render is not None else None
