"""apibank_lib: the API-Bank tool-use benchmark, re-implemented as a small, fast library."""

__version__ = "0.1.0"
