"""The memorization gap: a model's accuracy on a benchmark against its accuracy on the benchmark's twin.

A twin (:mod:`apibank_lib.data.twins`) asks the same tasks under new names, so a model that has learnt the tasks
scores the same on both, and one that recalls the names (from pre-training on the public release, or from its
fine-tuning corpus) scores lower on the twin. :func:`twin_gap_table` pairs each sample of a run on the source
with the same sample of a run on the twin and gives, per level, the two accuracies and their difference with an
interval over dialogues and a paired permutation test. Samples the twin left out are left out of both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.paths import PROJECT_ROOT
from apibank_lib.core.stats import N_BOOT, SEED, bounds, paired_comparison
from apibank_lib.data.datasets import load_benchmark
from apibank_lib.data.twins import read_twin, twin_key
from apibank_lib.env.renaming import Renaming
from apibank_lib.report.cells import dialogue_cluster, pandas_module
from apibank_lib.runs.scoring import ScoredRun

__all__ = ["twin_gap_table"]


def twin_gap_table(source: ScoredRun, twin: ScoredRun, *, n_boot: int = N_BOOT, seed: int = SEED) -> Any:
    """Source against twin, sample by sample, on the API-call samples both runs answered (see the module).

    Returns:
        One row per level (and ``all`` over several): the model and the source data, samples, dialogues, source %, twin %, source - twin with its 95% interval
        (blank below 10 dialogues), and the p-value.

    Raises:
        ConfigError: the second run's data is not a twin, or not a twin of the first run's data.
    """
    pd = pandas_module()
    manifest = read_twin(twin.info.data)
    if manifest is None:
        raise ConfigError(f"the second run's data ({twin.info.data}) is not a twin (no twin.json)")
    made_from = Path(manifest["source"])
    made_from = made_from if made_from.is_absolute() else PROJECT_ROOT / made_from
    if Path(source.info.data).resolve() != made_from.resolve() and Path(source.info.data).name != made_from.name:
        raise ConfigError(f"{twin.info.data} is a twin of {manifest['source']}, not of {source.info.data}")
    renaming = load_benchmark(twin.info.data).renaming or Renaming()
    theirs = {j.key: j for j in twin.judgments if j.kind == "api" and j.excluded is None}
    pairs = []
    for j in source.judgments:
        if j.kind != "api" or j.excluded is not None:
            continue
        other = theirs.get(twin_key(j.key, renaming))
        if other is not None:
            pairs.append((j, 100.0 if j.correct else 0.0, 100.0 if other.correct else 0.0))
    if not pairs:
        raise ConfigError("the two runs answered no API-call sample in common")
    rows = []
    levels = sorted({j.level for j, _, _ in pairs})
    for level in [*levels, None] if len(levels) > 1 else levels:  # an "all" row only over several levels
        mine = [p for p in pairs if level in (None, p[0].level)]
        a, b = [x for _, x, _ in mine], [y for _, _, y in mine]
        cmp = paired_comparison(a, b, [dialogue_cluster(j) for j, _, _ in mine], n_boot=n_boot, n_perm=n_boot, seed=seed)
        low, high = bounds(cmp, 1.0, 2)  # blank below MIN_CLUSTERS dialogues
        rows.append({
            "model": source.model, "data": source.data, "level": "all" if level is None else level, "samples": cmp.samples,
            "dialogues": cmp.clusters, "source %": round(sum(a) / len(a), 2), "twin %": round(sum(b) / len(b), 2),
            "source - twin": round(cmp.difference, 2),
            "low": low, "high": high,
            "p": round(cmp.p_value, 4), "change": "+".join(manifest.get("change", [])), "seed": manifest.get("seed"),
        })
    return pd.DataFrame(rows)
