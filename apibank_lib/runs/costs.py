"""What a run cost: tokens in and out, seconds per answer, answers per second, and a price where one is given.

Read from a run folder's answers (each record's token counts and latency) and its ``summary.json`` (the wall time
the runner spent answering, over every invocation), never from ``metrics.json``: scores are about judgments, and
stay byte for byte the same when the same answers come from a faster machine or from shards.

An answer reused from an identical earlier prompt (a duplicate sample) cost nothing and is left out; a failed one
counts with what it spent. Token counts are the backend's (a server's ``usage``, llama.cpp's own count); a backend
that does not count leaves them out, and the figures say how many answers they rest on.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.records import PredictionRecord

__all__ = ["RunCost", "run_cost", "parse_price"]


@dataclass(frozen=True)
class RunCost:
    """A run's cost.

    Attributes:
        answers: answers that cost something (reused ones left out).
        prompt_tokens, completion_tokens: their tokens in and out (answers without counts add nothing).
        counted: answers with token counts.
        median_s, p90_s: seconds per answer (the backend's latency; an episode's, all its steps).
        answering_s: the runner's wall time answering, over every invocation (None for a folder written before
            it was kept); a merged run's is its shards' sum (machine time).
        per_s: answers per second of that wall time (None without it).
        price: the run's price at ``price_per_mtok`` (None without one).
    """

    answers: int
    prompt_tokens: int
    completion_tokens: int
    counted: int
    median_s: float | None
    p90_s: float | None
    answering_s: float | None
    per_s: float | None
    price: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _quantile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile by linear interpolation (numpy's default), None without values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    low = int(pos)
    high = min(low + 1, len(xs) - 1)
    return xs[low] + (xs[high] - xs[low]) * (pos - low)


def parse_price(text: str) -> tuple[float, float]:
    """``"IN,OUT"`` (price per million tokens in and out, e.g. ``0.15,0.60``) as two floats.

    Raises:
        ConfigError: not two non-negative numbers.
    """
    parts = str(text).split(",")
    try:
        prices = tuple(float(p) for p in parts)
    except ValueError:
        prices = ()
    if len(prices) != 2 or min(prices) < 0:
        raise ConfigError(f"a price is IN,OUT per million tokens (e.g. 0.15,0.60), not {text!r}")
    return prices[0], prices[1]


def cost_of(
    records: Iterable[PredictionRecord], answering_s: float | None, price_per_mtok: tuple[float, float] | None = None
) -> RunCost:
    """The cost of these answers (see :class:`RunCost`)."""
    paid = [r for r in records if not r.reused]
    counted = [r for r in paid if r.prompt_tokens is not None or r.completion_tokens is not None]
    tokens_in = sum(r.prompt_tokens or 0 for r in counted)
    tokens_out = sum(r.completion_tokens or 0 for r in counted)
    latencies = [r.latency_s for r in paid if r.latency_s is not None]
    median, p90 = _quantile(latencies, 0.5), _quantile(latencies, 0.9)
    price = None
    if price_per_mtok is not None:
        price = round((tokens_in * price_per_mtok[0] + tokens_out * price_per_mtok[1]) / 1e6, 6)
    return RunCost(
        answers=len(paid),
        prompt_tokens=tokens_in,
        completion_tokens=tokens_out,
        counted=len(counted),
        median_s=None if median is None else round(median, 4),
        p90_s=None if p90 is None else round(p90, 4),
        answering_s=None if answering_s is None else round(answering_s, 3),
        per_s=round(len(paid) / answering_s, 4) if answering_s else None,
        price=price,
    )


def answering_seconds(folder: RunFolder) -> float | None:
    """The runner's wall time answering into ``folder``, over every invocation (``summary.json``)."""
    if not folder.summary_path.is_file():
        return None
    summary = json.loads(folder.summary_path.read_text(encoding="utf-8"))
    value = summary.get("answering_s")
    return float(value) if value is not None else None


def run_cost(
    folder: RunFolder,
    price_per_mtok: tuple[float, float] | None = None,
    *,
    keys: Collection[str] | None = None,
    records: Iterable[PredictionRecord] | None = None,
) -> RunCost:
    """The cost of the answers in ``folder``; with ``keys`` (sample keys, without a trial's ``#t`` suffix), of
    those samples' answers only.

    The folder's answering time covers every answer it holds, so when ``keys`` leave some out, answers per second
    is not known (None); the tokens and seconds per answer are the kept answers' own. ``records``: the folder's
    answers, when the caller has already read them (a scored run's ``predictions``).
    """
    records = list(folder.read_predictions().records.values() if records is None else records)
    kept = records if keys is None else [r for r in records if r.key.removesuffix(f"#t{r.trial}") in keys]
    whole = sum(not r.reused for r in kept) == sum(not r.reused for r in records)
    return cost_of(kept, answering_seconds(folder) if whole else None, price_per_mtok)
