"""Transfer: the same models on two data sources, and where the two data sets differ.

Every figure measured on our bundled benchmark says something about data written in this project; a release that
nobody here wrote (an official API-Bank copy) says whether it holds. This module puts the two side by side:

* :func:`data_profile`: per data source and level, the patterns a model has to handle, as counts and shares of
  API-call samples (token flows, date and time values, values said in words that the call writes in a format,
  values copied from an earlier API result, list arguments, multi-call dialogues, how long the API descriptions
  are and how often they state a format);
* :func:`transfer_table`: per model and level, accuracy on each source with its interval, sample and dialogue
  counts, and the difference;
* :func:`transfer_errors` and :func:`transfer_funnel`: the error taxonomy and the step funnel, one column (or row
  block) per model and source;
* :func:`compare_results`: the same three tables from results folders already written (no model is run), e.g. the
  committed ``results/bundled/`` and ``results/api-bank-dev/``.

Only aggregates leave these functions: no dialogue text, so the tables of a release may be committed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.stats import N_BOOT, SEED, TOO_FEW, bootstrap_mean, bounds
from apibank_lib.core.types import ApiCallSample, ApiRecord, Utterance
from apibank_lib.data.datasets import Benchmark
from apibank_lib.runs.scoring import ScoredRun

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PATTERNS", "compare_results", "data_profile", "transfer_errors", "transfer_funnel", "transfer_table"]

ABILITIES = {1: "Call", 2: "Retrieve+Call", 3: "Plan+Retrieve+Call"}

_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2} \d{1,2}:\d{2}(:\d{2})?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME = re.compile(r"^\d{1,2}:\d{2}(:\d{2})?$")
_RELATIVE = re.compile(
    r"\b(today|tomorrow|yesterday|tonight|next (week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|this (week|weekend|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|in \d+ (days|hours|weeks))\b",
    re.IGNORECASE,
)
_FORMAT_WORDS = re.compile(r"%[YmdHMS]|\bformat\b", re.IGNORECASE)
_DESCRIBED = re.compile(r'"(?:name|apiCode)": "(\w+)"')

PATTERNS = (
    "token flow: the call fetches a token",
    "token flow: the call passes a token",
    "a date or time value",
    "the date said relative to today",
    "a value copied from an earlier API result",
    "a list or dict value",
    "in a multi-call dialogue",
    "the dialogue calls 3 or more APIs",
    "a value said nowhere before (worked out or converted)",
    "the dialogue's first call",
    "the dialogue's first call, its API described first (v2 prompt)",
    "the dialogue's first call, its API described first (paper prompt)",
)
"""What :func:`data_profile` counts per API-call sample (a sample may show several)."""


def _values(args: Mapping[str, Any]) -> list[str]:
    return [str(v) for v in args.values()]


def _outputs(history: Sequence[Any]) -> str:
    return " ".join(str(t.result.get("output")) for t in history if isinstance(t, ApiRecord))


def _said(history: Sequence[Any]) -> str:
    return " ".join(t.text for t in history if isinstance(t, Utterance))


def _first_described(names: Sequence[str], gold: str) -> bool:
    return bool(names) and names[0] == gold


def _patterns(
    sample: ApiCallSample, calls_in_dialogue: int, apis_in_dialogue: int, release_item: Mapping[str, Any] | None
) -> dict[str, bool]:
    args = sample.gold.args
    values = _values(args)
    earlier = _outputs(sample.history)
    said = _said(sample.history) + " " + (sample.requirement or "")
    # The paper protocol sends a release's own rendered prompt, whose API list has its own order; elsewhere the
    # prompt is ours, in order of first appearance.
    paper_names = _DESCRIBED.findall(str(release_item.get("instruction", ""))) if release_item else list(sample.api_names)
    first_call = not any(isinstance(t, ApiRecord) and t.api_name != "ToolSearcher" for t in sample.history)
    return {
        PATTERNS[0]: sample.gold.api_name == "GetUserToken",
        PATTERNS[1]: "token" in args,
        PATTERNS[2]: any(_DATE_TIME.match(v) or _DATE.match(v) or _TIME.match(v) for v in values),
        PATTERNS[3]: bool(_RELATIVE.search(_said(sample.history) + " " + (sample.requirement or ""))),
        PATTERNS[4]: any(len(v) >= 4 and v in earlier for v in values),
        PATTERNS[5]: any(isinstance(v, (list, dict)) or str(v).lstrip().startswith(("[", "{")) for v in args.values()),
        PATTERNS[6]: calls_in_dialogue > 1,
        PATTERNS[7]: apis_in_dialogue >= 3,
        PATTERNS[8]: any(len(v) >= 2 and v.lower() not in (said + " " + earlier).lower() for v in values),
        PATTERNS[9]: first_call,
        PATTERNS[10]: first_call and _first_described(sample.api_names, sample.gold.api_name),
        PATTERNS[11]: first_call and _first_described(paper_names, sample.gold.api_name),
    }


def _descriptions(bench: Benchmark, level: int) -> tuple[float, float, int]:
    """Mean words per API description, the share (%) of parameter descriptions that state a format, and the number
    of APIs the level's gold calls use (ToolSearcher left out)."""
    toolset = bench.toolset(level)
    names = sorted(
        {s.gold.api_name for s in bench.samples(level, "api") if isinstance(s, ApiCallSample)} - {"ToolSearcher"}
    )
    names = [n for n in names if n in toolset]
    schemas = [toolset.schema(n) for n in names]
    if not schemas:
        return 0.0, 0.0, 0
    words = sum(len(s.description.split()) for s in schemas) / len(schemas)
    params = [p for s in schemas for p in s.input_parameters.values()]
    formats = 100.0 * sum(bool(_FORMAT_WORDS.search(p.description or "")) for p in params) / max(1, len(params))
    return round(words, 1), round(formats, 1), len(schemas)


def data_profile(benches: Mapping[str, Benchmark]) -> pd.DataFrame:
    """Per data source and level: how many API-call samples show each of :data:`PATTERNS`, and how the APIs are
    described.

    Args:
        benches: data source name -> its benchmark (e.g. ``{"bundled": ..., "api-bank-dev": ...}``).

    Returns:
        One row per source, level and feature: ``count`` and ``share (%)`` of the level's API-call samples (the
        gold searches of levels 2-3 left out: they call ToolSearcher, not an API of the data), or the value of a
        description feature.
    """
    import pandas as pd

    rows = []
    for source, bench in benches.items():
        for level in (1, 2, 3):
            samples = [s for s in bench.samples(level, "api") if isinstance(s, ApiCallSample) and not s.duplicate]
            calls: dict[str, int] = {}
            apis: dict[str, set[str]] = {}
            for s in samples:
                calls[s.dialogue_id] = calls.get(s.dialogue_id, 0) + (s.gold.api_name != "ToolSearcher")
                apis.setdefault(s.dialogue_id, set()).add(s.gold.api_name)
            counted = [s for s in samples if s.gold.api_name != "ToolSearcher"]
            if not counted:
                continue
            base = {"data": source, "level": level, "ability": ABILITIES[level]}
            rows.append({**base, "feature": "API-call samples (searches left out)", "count": len(counted), "share (%)": None})
            rows.append({**base, "feature": "dialogues", "count": len({s.dialogue_id for s in counted}), "share (%)": None})
            tallies = {p: 0 for p in PATTERNS}
            for s in counted:
                found = _patterns(s, calls[s.dialogue_id], len(apis[s.dialogue_id] - {"ToolSearcher"}), bench.release_prompt(s))
                for p, hit in found.items():
                    tallies[p] += hit
            for p in PATTERNS:
                rows.append({**base, "feature": p, "count": tallies[p], "share (%)": round(100.0 * tallies[p] / len(counted), 1)})
            words, formats, n_apis = _descriptions(bench, level)
            rows.append({**base, "feature": "APIs called", "count": n_apis, "share (%)": None})
            rows.append({**base, "feature": "words per API description (mean)", "count": words, "share (%)": None})
            rows.append({**base, "feature": "parameter descriptions stating a format", "count": None, "share (%)": formats})
    return pd.DataFrame(rows)


def _interval(low: Any, high: Any) -> str:
    """An interval as the tables write it, or :data:`TOO_FEW` where it is blank (fewer than 10 dialogues)."""
    import pandas as pd

    return TOO_FEW if pd.isna(low) or pd.isna(high) else f"[{float(low):.2f}, {float(high):.2f}]"


def _counts_as_integers(table: pd.DataFrame) -> pd.DataFrame:
    """Sample and dialogue counts as integers that may be blank (a model missing on one source)."""
    counts = [c for c in table.columns if c.endswith((" n", " dialogues"))]
    return table.astype({c: "Int64" for c in counts})


def _side_by_side(long: pd.DataFrame, index: list[str], sources: Sequence[str]) -> pd.DataFrame:
    """Long rows with a ``data`` column and a ``share (%)`` column, one ``<source> share (%)`` column per source;
    rows in order of first appearance, only the keys some source has."""
    wide = long.pivot_table(index=index, columns="data", values="share (%)", sort=False)
    wide = wide.reindex(columns=[s for s in sources if s in wide.columns]).reset_index()
    wide.columns.name = None
    return wide.rename(columns={s: f"{s} share (%)" for s in sources})


def _accuracy(run: ScoredRun, level: int, n_boot: int, seed: int) -> dict[str, Any]:
    judged = [j for j in run.judgments if j.level == level and j.kind == "api"]
    if not judged:
        return {}
    iv = bootstrap_mean([float(bool(j.correct)) for j in judged], [j.dialogue_id for j in judged], n_boot=n_boot, seed=seed)
    low, high = bounds(iv, 100)  # blank below MIN_CLUSTERS dialogues
    return {"acc": round(100 * iv.estimate, 2), "low": low, "high": high, "n": iv.samples, "dialogues": iv.clusters}


def transfer_table(
    runs: Mapping[str, Sequence[ScoredRun]], *, n_boot: int = N_BOOT, seed: int = SEED
) -> pd.DataFrame:
    """Per model and level, API-call accuracy on each data source side by side, and the difference.

    Args:
        runs: data source name -> its scored runs (the same models, matched by their label without the data);
            the first source is the reference the others are compared with.

    Returns:
        One row per model and level: for each source its accuracy (%), 95% interval (dialogues resampled), API-call
        samples and dialogues, and the subset the run is about; then each other source minus the first, in points.
    """
    import pandas as pd

    sources = list(runs)
    by_model: dict[str, dict[str, ScoredRun]] = {}
    for source, group in runs.items():
        for r in group:
            by_model.setdefault(f"{r.model} ({r.prompt_mode}, {r.protocol_version})", {})[source] = r
    rows = []
    for model, per_source in by_model.items():
        for level in (1, 2, 3):
            row: dict[str, Any] = {"model": model, "level": level, "ability": ABILITIES[level]}
            figures = {}
            for source in sources:
                r = per_source.get(source)
                got = _accuracy(r, level, n_boot, seed) if r is not None else {}
                figures[source] = got
                row[f"{source} acc"] = got.get("acc")
                row[f"{source} interval"] = _interval(got["low"], got["high"]) if got else None
                row[f"{source} n"] = got.get("n")
                row[f"{source} dialogues"] = got.get("dialogues")
                row[f"{source} subset"] = r.subset if r is not None else None
            if not any(figures.values()):
                continue
            first = figures[sources[0]]
            for source in sources[1:]:
                other = figures[source]
                row[f"{source} - {sources[0]}"] = round(other["acc"] - first["acc"], 2) if first and other else None
            rows.append(row)
    return _counts_as_integers(pd.DataFrame(rows))


def transfer_errors(runs: Mapping[str, Sequence[ScoredRun]]) -> pd.DataFrame:
    """The error taxonomy (the paper's seven categories, shares of each run's wrong calls) with one column per model
    and data source, the sources of a model side by side."""
    from apibank_lib.report.failures import error_distribution

    ordered = sorted(((r.model, i, source, r) for i, (source, group) in enumerate(runs.items()) for r in group), key=lambda t: (t[0], t[1]))
    table = error_distribution([t[3] for t in ordered], reported_columns=False)
    return table.rename(columns={t[3].label: f"{t[3].model} ({t[3].prompt_mode}) on {t[2]}" for t in ordered})


def transfer_funnel(runs: Mapping[str, Sequence[ScoredRun]], benches: Mapping[str, Benchmark]) -> pd.DataFrame:
    """The step funnel of every run, per data source: one row per model, level and stage, with each source's share
    (%) of the level's API-call samples reaching the stage, side by side."""
    import pandas as pd

    from apibank_lib.report.failures import funnel

    frames = []
    for source, group in runs.items():
        for r in group:
            f = funnel(r, benches[source])
            if len(f):
                frames.append(f.assign(data=source, model=f"{r.model} ({r.prompt_mode})"))
    if not frames:
        return pd.DataFrame()
    return _side_by_side(pd.concat(frames, ignore_index=True), ["model", "level", "ability", "stage"], list(runs))


_LEVEL_COLUMNS = {
    "Call": (1, "Call"),
    "Retrieve+Call": (2, "Retrieve+Call"),
    "Plan+Retrieve+Call": (3, "Plan+Retrieve+Call steps"),
    "Plan+Retrieve+Call items": (3, "Plan+Retrieve+Call items"),
    "Plan+Retrieve+Call episodes": (3, "Plan+Retrieve+Call episodes"),
    "Total": (None, "Total"),
}
"""The main table's column prefixes (``<prefix> acc`` or the prefix itself) and the level and measure they are."""


def _read(folder: str | Path, name: str) -> pd.DataFrame:
    import pandas as pd

    path = Path(folder) / f"{name}.csv"
    if not path.is_file():
        raise ConfigError(f"{path}: no such table; write it with `apibank reproduce` (notebooks 02 and 04) first")
    return pd.read_csv(path)


def compare_results(folders: Mapping[str, str | Path]) -> dict[str, pd.DataFrame]:
    """Notebook 08's comparison from tables already written, without running a model: each data source's committed
    (or ``apibank reproduce``-written) results folder, e.g. ``{"bundled": "results/bundled", "api-bank-dev":
    "results/api-bank-dev"}``; the first is the reference the others are compared with.

    The figures are the folders' own (main table, error distribution, step funnel), so each source keeps its own
    draw and interval; a difference between sources is not paired (different samples). Only measured rows enter
    (the paper's reported rows are left out).

    Returns:
        ``transfer``: one row per model and measure (Call, Retrieve+Call, level-3 steps, items, episodes, Total)
        with each source's accuracy, interval, n, dialogues and subset, then each other source minus the first;
        ``transfer_errors``: per model and error category, each source's share (%) of wrong calls;
        ``transfer_funnel``: per model, level and stage, each source's share (%) of the level's API-call samples.

    Raises:
        ConfigError: fewer than two folders, or a folder without the tables.
    """
    import pandas as pd

    if len(folders) < 2:
        raise ConfigError(f"compare_results: give at least two results folders, got {len(folders)}")
    sources = list(folders)
    keys = ["model", "prompt mode", "protocol"]
    measured: dict[str, dict[tuple[str, ...], pd.Series]] = {}  # source -> the main table's measured rows by key
    for source, folder in folders.items():
        t = _read(folder, "main_table")
        t = t[t["source"] == "measured here"]
        measured[source] = {tuple(k): row for k, (_, row) in zip(t[keys].astype(str).itertuples(index=False), t.iterrows())}
    models = list(dict.fromkeys(k for rows in measured.values() for k in rows))  # in order of first appearance
    rows = []
    for key in models:
        for prefix, (level, measure) in _LEVEL_COLUMNS.items():
            row: dict[str, Any] = {**dict(zip(keys, key)), "level": level, "measure": measure}
            got = {}
            for source in sources:
                r = measured[source].get(key)
                acc_col = f"{prefix} acc" if r is not None and f"{prefix} acc" in r.index else prefix
                if r is None or acc_col not in r.index or pd.isna(r[acc_col]):
                    row.update({f"{source} {part}": None for part in ("acc", "interval", "n", "dialogues", "subset")})
                    continue
                got[source] = float(r[acc_col])
                row[f"{source} acc"] = round(got[source], 2)
                row[f"{source} interval"] = _interval(r.get(f"{acc_col} low"), r.get(f"{acc_col} high"))
                row[f"{source} n"] = r.get(f"{prefix} n")
                row[f"{source} dialogues"] = r.get(f"{prefix} dialogues")
                row[f"{source} subset"] = r.get("subset")
            if not got:
                continue
            for source in sources[1:]:
                both = sources[0] in got and source in got
                row[f"{source} - {sources[0]}"] = round(got[source] - got[sources[0]], 2) if both else None
            rows.append(row)
    return {
        "transfer": _counts_as_integers(pd.DataFrame(rows)),
        "transfer_errors": _compare_errors({s: _read(f, "error_distribution") for s, f in folders.items()}),
        "transfer_funnel": _compare_funnel({s: _read(f, "funnel") for s, f in folders.items()}),
    }


_DATA_IN_LABEL = re.compile(r"^(?P<model>.+) \((?P<mode>[^,()]+), (?P<protocol>[^,()]+), (?P<data>[^()]+)\)$")


def _compare_errors(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Error distributions (columns ``<model> (<mode>, <protocol>, <data>)``) side by side: one row per model and
    category, one column per source. Reported columns (the paper's) are left out."""
    import pandas as pd

    frames = []
    for source, t in tables.items():
        for column in t.columns[1:]:
            label = _DATA_IN_LABEL.match(str(column))
            if label is None:  # "GPT-4 (reported)"
                continue
            frames.append(pd.DataFrame({
                "model": label["model"], "prompt mode": label["mode"], "protocol": label["protocol"],
                "category": t[t.columns[0]], "data": source, "share (%)": t[column],
            }))
    if not frames:
        return pd.DataFrame()
    long = pd.concat(frames, ignore_index=True)
    keys = ["model", "prompt mode", "protocol", "category"]
    # Rows in order of first appearance, only the (model, category) pairs some source has: no cross product of keys.
    wide = long.drop_duplicates(keys)[keys].reset_index(drop=True)
    for source in tables:
        mine = long[long["data"] == source].drop_duplicates(keys).set_index(keys)["share (%)"]
        wide[f"{source} share (%)"] = [mine.get(tuple(k)) for k in wide[keys].itertuples(index=False)]
    return wide


def _compare_funnel(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Step funnels (``model, level, ability, stage, samples, share (%)``) side by side, one column per source."""
    import pandas as pd

    long = pd.concat([t.assign(data=source) for source, t in tables.items()], ignore_index=True)
    if long.empty:
        return pd.DataFrame()
    return _side_by_side(long, ["model", "level", "ability", "stage"], list(tables))
