"""The gold replayed as predictions: every gold call of a benchmark judged as if a model had written it verbatim.

The ceiling of a grading protocol on a data source: any failure is a defect of the data, of the tools or of the
protocol (``apibank validate`` and the release checks read it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from apibank_lib.core.types import ApiCallSample
from apibank_lib.data.datasets import Benchmark
from apibank_lib.data.errata import Errata
from apibank_lib.env.protocols import V2, GradingProtocol
from apibank_lib.grading.grader import Grader
from apibank_lib.prompting.prompts import target_text

__all__ = ["replay"]


def replay(
    bench: Benchmark,
    protocol: GradingProtocol = V2,
    *,
    levels: Iterable[int] = (1, 2, 3),
    searcher: Any = None,
    errata: Errata | str | Path | None = None,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> dict[str, Any]:
    """Judge every gold call of a benchmark as if a model had predicted it verbatim.

    Each API-call sample's prediction is its :func:`~apibank_lib.prompting.prompts.target_text`
    (``API-Request: [Name(key='value', ...)]``), so a perfect model's ceiling under
    the protocol is measured, and any failure is a defect of the data, of the
    tools, or of the protocol. Under a protocol that applies errata, the samples an
    erratum excludes are listed apart and counted in neither figure; corrected ones
    are judged against their corrected gold and listed too.

    Returns:
        ``{"protocol", "protocol_version", "data", "data_fingerprint", "errata", "levels": {"1": {"samples",
        "samples_correct", "gold_calls", "correct", "failures": [...], "excluded": [...], "corrected": [...]},
        ...}}``; ``gold_calls`` and ``correct`` count distinct gold calls (duplicate samples excluded);
        ``errata`` is None when the protocol applies none.
    """
    grader = Grader(bench, protocol, searcher=searcher, errata=errata)
    out: dict[str, Any] = {
        "protocol": protocol.name,
        "protocol_version": protocol.version,
        "data": str(bench.root),
        "data_fingerprint": bench.fingerprint,
        "errata": grader.errata_summary(),
        "levels": {},
    }
    for level in levels:
        samples = [s for s in bench.samples(level, "api") if isinstance(s, ApiCallSample)]
        it: Iterable[ApiCallSample] = progress(samples) if progress else samples
        n_ok = n_samples = n_calls = n_calls_ok = 0
        failures: list[dict[str, Any]] = []
        excluded: list[dict[str, Any]] = []
        corrected: list[dict[str, Any]] = []
        for s in it:
            j = grader.judge_api(s, target_text(s))
            entry = {"dialogue": s.dialogue_id, "sample_id": s.sample_id, "api_name": s.gold.api_name, "duplicate": s.duplicate}
            if j.excluded is not None:
                excluded.append({**entry, "erratum": j.erratum, "reason": j.excluded, "correct": j.correct})
                continue
            if j.erratum is not None:
                corrected.append({**entry, "erratum": j.erratum, "correct": j.correct})
            n_samples += 1
            n_ok += j.correct
            if not s.duplicate:
                n_calls += 1
                n_calls_ok += j.correct
            if not j.correct:
                failures.append(
                    {
                        **entry,
                        "category": j.category.value if j.category else None,
                        "reason": j.reason,
                        "notes": j.notes,
                    }
                )
        out["levels"][str(level)] = {
            "samples": n_samples,
            "samples_correct": n_ok,
            "gold_calls": n_calls,
            "correct": n_calls_ok,
            "failures": failures,
            "excluded": excluded,
            "corrected": corrected,
        }
    return out
