"""Imports every built-in strategy module, which registers it (see `_base.register`)."""
