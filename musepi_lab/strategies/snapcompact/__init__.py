"""Snapcompact: MusePi's local archival compaction (spec §6.2), in one place.

`_archive` builds the archive text (scoped serialization, normalisation), `_plan` lays it
out on frames, `_render` draws the 1-bit PNG frames, `_billing` prices them per provider, and
`_strategy` is the registered strategy.
"""

from ._strategy import Snapcompact

__all__ = ["Snapcompact"]
