"""Snapcompact: MusePi's local archival compaction (spec §6.2), as oh-my-pi 18.2.3 does it.

`_archive` and `_normalize` build the archive text (scoped serialization, dim-ink toggles
around tool output, folding to what the font draws, with ANSI stripped as Bun strips it,
`_ansi`, and the character facts of the release's runtime, `_unicode`), `_plan` lays it out
on frames, `_font` and `_render` draw the palette PNG frames with the misc-fixed 8x13
glyphs, `_providers` prices them per provider API (`image_billing_tokens`), `_strategy` is
the registered strategy. `musepi_lab.conformance.compare_snapcompact` compares it with the release's own.
"""

from ._providers import image_billing_tokens
from ._strategy import Snapcompact

__all__ = [
    "Snapcompact",
    "image_billing_tokens",
]
