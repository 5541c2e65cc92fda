"""The options several ``apibank`` commands share, declared once: ``--data`` and ``--json``, ``--retriever``, the
protocol names ``--protocol`` offers."""

from __future__ import annotations

import argparse

from apibank_lib.env.protocols import PROTOCOLS
from apibank_lib.retrieval.retrievers import RETRIEVERS

__all__ = ["PROTOCOL_NAMES", "add_common", "add_json", "add_retriever"]

PROTOCOL_NAMES = list(PROTOCOLS)
"""What ``--protocol`` offers (the grading protocols by name)."""

_BY_PROTOCOL = ", ".join(f"{p.name}: {p.retriever}" for p in PROTOCOLS.values())


def add_json(p: argparse.ArgumentParser) -> None:
    """``--json``: machine-readable output."""
    p.add_argument("--json", action="store_true", help="machine-readable JSON output")


def add_common(p: argparse.ArgumentParser) -> None:
    """``--data`` (another benchmark root) and ``--json``."""
    p.add_argument(
        "--data",
        default=None,
        help="benchmark root (default: the bundled benchmark; or an official API-Bank release)",
    )
    add_json(p)


def add_retriever(p: argparse.ArgumentParser, default: str = f"the protocol's ({_BY_PROTOCOL})") -> None:
    """``--retriever``: what ToolSearcher searches with, by registered name."""
    p.add_argument(
        "--retriever",
        choices=list(RETRIEVERS),
        default=None,
        help=f"what ToolSearcher searches with (default: {default})",
    )
