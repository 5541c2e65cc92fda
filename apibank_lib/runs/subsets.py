"""Representative subsets: a seeded, stratified draw of whole dialogues, so that a limit gives a sample of the level.

A benchmark's files sort by name, and neighbouring dialogues are alike: on an official API-Bank release the first
level-1 dialogues are all token flows (``GetUserToken`` first), harder than the rest, so "the first 60 samples" is
a biased estimate of the level's accuracy with an interval that looks trustworthy. A limit therefore draws whole
dialogues (the samples of a dialogue are correlated, and the intervals resample dialogues) in a seeded order that
is stratified by the first API each dialogue calls, and takes the shortest prefix of that order that holds at
least the asked number of items.

Properties the runs rely on:

* **Paired across models.** The order depends on the data, the level and the seed only, never on the model or on
  what else a run asks for, so two models given the same limit and seed answer the same samples.
* **Nested.** A larger limit takes a longer prefix of the same order: it keeps every sample a smaller one drew,
  so a run folder grows instead of answering again.
* **Stratified at every size.** Dialogues are taken from each stratum in proportion to its size (the stratum
  furthest behind its share goes next; ties broken by a seeded hash, never by name), so a prefix of any length
  spreads over the first APIs as the level does.

``first`` (the old behaviour, the first N items in dataset order) stays available for debugging
(``apibank run --first N``); nothing that reports a figure uses it.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from apibank_lib.core.errors import ConfigError
from apibank_lib.data.twins import rename_stem

__all__ = ["DRAWS", "FIRST", "RANDOM", "SEARCH_API", "check_draw", "describe", "describe_plans", "dialogue_order", "stratum_of", "take"]

RANDOM = "random"
"""A seeded, stratified draw of whole dialogues (the default wherever a limit is given)."""
FIRST = "first"
"""The first items in dataset order (for debugging; biased on any data whose files sort by API name)."""
DRAWS = (RANDOM, FIRST)
"""How a limit picks its items."""

SEARCH_API = "ToolSearcher"


class _Record(Protocol):
    api_name: str


class _Item(Protocol):
    level: int

    @property
    def dialogue_id(self) -> str: ...


T = TypeVar("T", bound=_Item)


def check_draw(draw: str) -> str:
    """``draw`` itself, when it is one of :data:`DRAWS`.

    Raises:
        ConfigError: any other value.
    """
    if draw not in DRAWS:
        raise ConfigError(f"draw must be one of {', '.join(DRAWS)}, not {draw!r}")
    return draw


def _records(item: object) -> list[_Record]:
    """The API records an item shows: its history's and its gold's (a sample), or its gold steps (an episode)."""
    inner = getattr(item, "item", None)
    if inner is not None:  # an Episode
        return list(inner.steps)
    out = [t for t in getattr(item, "history", ()) if hasattr(t, "api_name")]
    gold = getattr(item, "gold", None)
    if hasattr(gold, "api_name"):
        out.append(gold)
    return out


def stratum_of(items: Iterable[object]) -> str:
    """A dialogue's stratum: the first API its items show being called, ToolSearcher left out (at levels 2 and 3
    every dialogue searches first; what it searches for is what sets it apart). ``-`` when none is shown."""
    for item in items:
        for record in _records(item):
            if record.api_name != SEARCH_API:
                return record.api_name
    return "-"


def _hash(seed: int, *parts: object) -> int:
    text = "\x1f".join(str(p) for p in (seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def dialogue_order(items: Sequence[_Item], seed: int = 0, *, source_name: Callable[[str], str] | None = None) -> list[str]:
    """Every dialogue of ``items`` (one level's, any kinds) in the draw's order for ``seed``.

    Within a stratum dialogues go in the order of a seeded hash of their level and id. The strata are then
    interleaved: at each position the stratum whose count taken so far falls furthest behind its proportional
    share goes next (ties broken by a seeded hash of the stratum's name), so every prefix is close to a
    proportionally stratified sample.

    Args:
        source_name: for a twin benchmark (:mod:`apibank_lib.data.twins`), an API's name in the source; the draw then
            hashes the source's ids and API names, so a twin draws the same dialogues as its source and the two
            runs pair sample by sample.
    """
    rename = source_name or (lambda name: name)
    by_dialogue: dict[str, list[_Item]] = defaultdict(list)
    for item in items:
        by_dialogue[item.dialogue_id].append(item)
    if not by_dialogue:
        return []
    strata: dict[str, list[str]] = defaultdict(list)
    for dialogue, its in by_dialogue.items():
        strata[rename(stratum_of(its))].append(dialogue)
    level = items[0].level
    source_id = {d: rename_stem(d, rename) for d in by_dialogue}
    queues = {
        name: sorted(ids, key=lambda d: (_hash(seed, "dialogue", level, source_id[d]), source_id[d])) for name, ids in strata.items()
    }
    tie = {name: _hash(seed, "stratum", level, name) for name in queues}
    total = len(by_dialogue)
    taken = dict.fromkeys(queues, 0)
    order: list[str] = []
    for position in range(1, total + 1):
        # Integer arithmetic for the deficit (position * size / total - taken, scaled by total): no float ties.
        open_strata = [s for s in queues if taken[s] < len(queues[s])]
        best = max(open_strata, key=lambda s: (position * len(queues[s]) - taken[s] * total, -tie[s], s))
        order.append(queues[best][taken[best]])
        taken[best] += 1
    return order


def take(items: Sequence[T], limit: int | None, *, draw: str = RANDOM, seed: int = 0, order: Sequence[str] | None = None) -> list[T]:
    """The items a limit picks, in dataset order.

    Args:
        items: one level's items of the kind being limited (API-call samples, replies or episodes), in dataset
            order.
        limit: how many items at least (whole dialogues are taken until the count is reached, so the draw can
            exceed it by the last dialogue's items); None: all of them.
        draw: :data:`RANDOM` or :data:`FIRST` (the first ``limit`` items, exactly).
        seed: the draw's seed.
        order: the dialogue order to take from (:func:`dialogue_order` of the level's items of every kind, so that
            the draw of one kind does not depend on which other kinds exist); default: the order of ``items``.
    """
    check_draw(draw)
    if limit is None:
        return list(items)
    if draw == FIRST:
        return list(items[:limit])
    counts: dict[str, int] = defaultdict(int)
    for item in items:
        counts[item.dialogue_id] += 1
    chosen: set[str] = set()
    have = 0
    for dialogue in order if order is not None else dialogue_order(items, seed):
        if have >= limit:
            break
        if counts.get(dialogue):
            chosen.add(dialogue)
            have += counts[dialogue]
    return [item for item in items if item.dialogue_id in chosen]


def describe(limit: int | None, draw: str = RANDOM, seed: int = 0) -> str:
    """How a limit reads in a table: ``all``, ``60 (random dialogues, seed 0)`` or ``60 (first)``."""
    if limit is None:
        return "all"
    return f"{limit} (first)" if draw == FIRST else f"{limit} (random dialogues, seed {seed})"


def _levels_text(levels: Sequence[int]) -> str:
    ordered = sorted(set(levels))
    if len(ordered) > 1 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"L{ordered[0]}-{ordered[-1]}"
    return "L" + ",".join(str(level) for level in ordered)


def describe_plans(plans: Sequence[Mapping[str, Any]]) -> str:
    """What a run folder holds, in words, from the plans of the commands that wrote it: ``all`` when none of them had
    a limit, else each plan's levels and limit (``L1 all; L1-3 40 (random dialogues, seed 0)``). A folder that one
    command filled with every sample and another with a draw is labelled so, not ``all``."""
    if all(plan.get("limit") is None for plan in plans):
        return "all"
    parts: list[str] = []
    for plan in plans:
        limit = plan.get("limit")
        text = f"{_levels_text(plan.get('levels') or ())} {describe(limit, plan.get('draw', RANDOM), plan.get('subset_seed', 0))}"
        if text not in parts:
            parts.append(text)
    return "; ".join(parts)
