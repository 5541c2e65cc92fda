"""Shards: a deterministic part of a run's samples, so that several jobs can answer one run between them.

``apibank run --shard I/N`` answers the samples and episodes whose dialogue falls in shard ``I`` of ``N``;
``apibank merge`` (:mod:`apibank_lib.runs.merge`) joins the ``N`` folders into one. A dialogue is never split: its
samples share the dialogue's prefix (a server's prompt cache) and, at level 3, its item (the teacher-forced steps
and the agent episode of one item go together). Which shard a dialogue falls in depends on its level and id only,
through a hash, not on what else is planned: a shard that later runs more levels or a larger limit keeps the
samples it had, and two machines that plan the same run agree without talking to each other.
"""

from __future__ import annotations

import hashlib
import re
from typing import Protocol

from apibank_lib.core.errors import ConfigError

__all__ = ["parse_shard", "shard_of", "in_shard", "shard_label"]

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class _Item(Protocol):
    level: int

    @property
    def dialogue_id(self) -> str: ...


def parse_shard(spec: str) -> tuple[int, int]:
    """``"I/N"`` as ``(I, N)``, with ``1 <= I <= N``.

    Raises:
        ConfigError: not of that form, or I outside 1..N.
    """
    m = _SPEC.match(str(spec))
    if not m:
        raise ConfigError(f"a shard is written I/N (e.g. 2/8), not {spec!r}")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ConfigError(f"shard {spec!r}: I must be between 1 and N")
    return index, count


def shard_of(item: _Item, count: int) -> int:
    """The shard (1 to ``count``) that ``item``'s dialogue falls in."""
    digest = hashlib.sha256(f"L{item.level}/{item.dialogue_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(item: _Item, spec: str | None) -> bool:
    """Whether ``item`` belongs to shard ``spec`` (``"I/N"``; None: the whole run)."""
    if spec is None:
        return True
    index, count = parse_shard(spec)
    return shard_of(item, count) == index


def shard_label(spec: str) -> str:
    """The shard as a folder-name suffix: ``shard-2of8``."""
    index, count = parse_shard(spec)
    return f"shard-{index}of{count}"
