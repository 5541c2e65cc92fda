"""The ``apibank`` command: :func:`main` parses the command line and runs one command."""

from apibank_lib.cli.commands import main

__all__ = ["main"]
