"""The package version (a module of its own, so that code inside the package can read it)."""

__version__ = "0.1.0"
