"""The package version, in one place (the package face and result files read it)."""

__version__ = "0.1.0"
