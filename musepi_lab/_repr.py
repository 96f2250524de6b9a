"""Rich representations without upward imports.

Core values (`Session`, `CompactionPreparation`, `CompactionResult`, `ReplayResult`) ask
this registry for their HTML and text cards; the display layer (`musepi_lab.display`) fills
it when it is imported. The package face registers a loader that imports it the first time
a card is asked for (`add_loader`), so `import musepi_lab` stays light and the layer rule
holds with no exception: nothing below `display` imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Render = Callable[[Any], str]

_HTML: dict[type, Render] = {}
_TEXT: dict[type, Render] = {}
_LOADERS: list[Callable[[], None]] = []


def add_loader(load: Callable[[], None]) -> None:
    """Run `load` (which registers renderers) before the registry is first read."""
    _LOADERS.append(load)


def _loaded() -> None:
    while _LOADERS:
        _LOADERS.pop(0)()


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
    _loaded()
    render = _find(_HTML, obj)
    return render(obj) if render is not None else None


def text_of(obj: object) -> str | None:
    """The registered plain-text card of `obj`, or None."""
    _loaded()
    render = _find(_TEXT, obj)
    return render(obj) if render is not None else None
