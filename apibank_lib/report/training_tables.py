"""Tables about training: the ToolAlpaca comparison, training data and statistics, what a model saw in training."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from apibank_lib.core.stats import N_BOOT, SEED
from apibank_lib.core.types import ToolSchema
from apibank_lib.data.datasets import Benchmark
from apibank_lib.data.reported import (
    PAPER_CORPUS,
    PAPER_TOOLALPACA,
)
from apibank_lib.report.cells import accuracy_cell, pandas_module, rouge_cell
from apibank_lib.report.main_table import ABILITIES
from apibank_lib.runs.scoring import ScoredRun

if TYPE_CHECKING:
    import pandas as pd


def toolalpaca_table(
    runs: Sequence[ScoredRun] = (),
    *,
    names: Mapping[str, str] | None = None,
    training_samples: Mapping[str, int | None] | None = None,
    common: bool = True,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> pd.DataFrame:
    """The paper's ToolAlpaca comparison layout (Call ability only): reported rows, then the runs measured here.

    Args:
        runs: scored runs (their level-1 samples are used).
        names: a display name per run model (``ScoredRun.model``), e.g. "fine-tuned on ours (300)".
        training_samples: training examples per run model (None: not fine-tuned).
        common: use only the level-1 samples every run answered, so that the rows compare the same samples
            (a run folder may hold more samples than this comparison asked for).
    Columns: model, training samples, Call acc with its 95% interval (dialogue
    bootstrap), Call ROUGE-L (%), API-call samples, source.
    """
    pd = pandas_module()
    rows = [
        {
            "model": m,
            "training samples": v["training_samples"],
            "Call acc": v["accuracy"],
            "Call acc low": None,
            "Call acc high": None,
            "Call ROUGE-L (%)": v["rouge_l"],
            "API-call samples": None,
            "dialogues": None,
            "source": "reported",
        }
        for m, v in PAPER_TOOLALPACA.items()
    ]
    shared: set[str] | None = None
    if common and runs:
        shared = set.intersection(*({j.key for j in r.judgments if j.level == 1} for r in runs))
    for r in runs:
        level1 = [j for j in r.judgments if j.level == 1 and (shared is None or j.key in shared)]
        api = [j for j in level1 if j.kind == "api"]
        acc, low, high, dialogues = accuracy_cell(api, n_boot, seed)
        rouge = rouge_cell([j for j in level1 if j.kind == "response"], n_boot, seed)[0]
        rows.append(
            {
                "model": (names or {}).get(r.model, r.model),
                "training samples": (training_samples or {}).get(r.model),
                "Call acc": acc,
                "Call acc low": low,
                "Call acc high": high,
                "Call ROUGE-L (%)": None if rouge is None else round(100 * rouge, 2),
                "API-call samples": len(api),
                "dialogues": dialogues,
                "source": f"measured here ({r.model}, {r.protocol}, {r.data})",
            }
        )
    return pd.DataFrame(rows)


def training_data_table(
    runs: Sequence[ScoredRun],
    *,
    names: Mapping[str, str] | None = None,
    training_samples: Mapping[str, int | None] | None = None,
    common: bool = True,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> pd.DataFrame:
    """Models trained on different data, side by side: API-call accuracy per ability and in total, each with its
    95% interval (dialogues resampled) and the samples it is over.

    Args:
        runs: scored runs (their API-call samples are used; level 3's are the teacher-forced steps).
        names: a display name per run model (``ScoredRun.model``), e.g. "model-made, 96".
        training_samples: training examples per run model (None: not fine-tuned).
        common: use only the API-call samples every run answered, so that each column compares the same samples.
    """
    pd = pandas_module()
    shared: set[str] | None = None
    if common and runs:
        shared = set.intersection(*({j.key for j in r.judgments if j.kind == "api"} for r in runs))
    rows = []
    for r in runs:
        api = [j for j in r.judgments if j.kind == "api" and (shared is None or j.key in shared)]
        row: dict[str, Any] = {"model": (names or {}).get(r.model, r.model), "training samples": (training_samples or {}).get(r.model)}
        for label, js in [*((ABILITIES[lv], [j for j in api if j.level == lv]) for lv in sorted(ABILITIES)), ("Total", api)]:
            if not js:
                continue
            acc, low, high, dialogues = accuracy_cell(js, n_boot, seed)
            row.update({f"{label} acc": acc, f"{label} acc low": low, f"{label} acc high": high, f"{label} n": len(js)})
            row[f"{label} dialogues"] = dialogues
        row["source"] = f"measured here ({r.model}, {r.protocol}, {r.data})"
        rows.append(row)
    table = pd.DataFrame(rows)
    counts = [c for c in table.columns if c.endswith((" n", " dialogues"))]
    return table.astype({c: "Int64" for c in counts + ["training samples"] if c in table.columns})


def adapter_training_samples(model: str) -> int | None:
    """Training examples behind a ``...+<adapter>`` run model (from the adapter folder's ``training.json``), else None."""
    from apibank_lib.models.catalog import adapter_folder

    _, plus, adapter = model.partition("+")
    if not plus:
        return None
    info = adapter_folder(adapter).parent / "training.json"
    if not info.is_file():
        return None
    return int(json.loads(info.read_text())["result"]["examples_seen"])


def training_statistics_table(
    report: Any, examples: Sequence[Any] | None = None, *, corpus: str = "our training corpus"
) -> pd.DataFrame:
    """A training corpus (a tester report's accepted dialogues) beside the paper's training statistics.

    Counted with the evaluation's definitions: turns are user utterances (a
    plan's requirement is one), calls exclude ToolSearcher, single-/multi-call
    dialogues count calls other than searches; samples are cut as evaluation
    samples are (duplicates left out).

    Args:
        report: a :class:`~apibank_lib.data.check_train.CheckReport`.
        examples: the training examples, if already made (else they are made here).
        corpus: what the measured column is called.
    """
    from apibank_lib.training.export import examples_from_corpus

    pd = pandas_module()
    accepted = report.accepted
    by = {a: sum(1 for d in accepted if d.ability == a) for a in ("call", "retrieve_call", "plan_retrieve_call")}
    turns = sum(1 if d.ability == "plan_retrieve_call" else sum(t.role == "user" for t in d.turns) for d in accepted)
    calls = [sum(1 for t in d.api_turns if t.call and t.call.name != "ToolSearcher") for d in accepted]
    used = report.called
    examples = examples if examples is not None else examples_from_corpus(report)
    p = PAPER_CORPUS["training"]
    rows = [
        ("domains", len({f.domain for f in report.files}), p["domains"]),
        ("APIs (defined / called)", f"{len(report.schemas)} / {len(used)}", p["apis"]),
        ("dialogues", len(accepted), p["dialogues"]),
        ("Call / Retrieve+Call / Plan+Retrieve+Call dialogues", f"{by['call']} / {by['retrieve_call']} / {by['plan_retrieve_call']}",
         f"{p['call_dialogues']} / {p['retrieve_call_dialogues']} / {p['plan_retrieve_call_dialogues']}"),
        ("turns (user utterances)", turns, p["turns"]),
        ("average turns per dialogue", round(turns / len(accepted), 2) if accepted else 0.0, p["avg_turns_per_dialogue"]),
        ("API calls (searches excluded)", sum(calls), None),
        ("single-call dialogues", sum(1 for n in calls if n == 1), p["single_call_instances"]),
        ("multi-call dialogues", sum(1 for n in calls if n > 1), p["multi_call_instances"]),
        ("training samples (API-call / response)", f"{sum(e.task == 'api' for e in examples)} / {sum(e.task == 'response' for e in examples)}", None),
        ("tester rejections", f"{len(report.rejected)} of {report.total}", None),
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["quantity", f"measured here ({corpus})", "reported (paper, training)"])


def corpus_vocabulary(schemas: Mapping[str, ToolSchema]) -> tuple[set[str], set[str]]:
    """The API names and input-parameter names a training corpus's APIs use (a tester report's ``schemas``)."""
    names = set(schemas)
    params = {p for s in schemas.values() for p in s.input_parameters}
    return names, params


def seen_in_training(
    run: ScoredRun, bench: Benchmark, schemas: Mapping[str, ToolSchema], *, level: int = 1
) -> pd.DataFrame:
    """Call accuracy split by how much of each gold API the training corpus has seen.

    Each API-call sample at ``level`` (duplicates left out) falls in one group by its gold API: ``name seen`` (the
    corpus has an API of that name), else ``all parameters seen`` / ``some parameters seen`` / ``no parameter
    seen`` by how many of the API's input-parameter names occur among the corpus APIs' parameters (an API without
    parameters counts as all seen). A fine-tuned model that only copies what it was trained on gains on the first
    groups and not on the last.

    Returns:
        One row per group: samples, correct, Call accuracy (%), and the group's distinct APIs.
    """
    pd = pandas_module()
    names, params = corpus_vocabulary(schemas)
    toolset = bench.toolset(level)
    rows: dict[str, dict[str, Any]] = {}
    order = ("name seen", "all parameters seen", "some parameters seen", "no parameter seen")
    for j in run.judgments:
        if j.kind != "api" or j.level != level or j.duplicate or j.gold_api is None:
            continue
        if j.gold_api in names:
            group = "name seen"
        else:
            wanted = set(toolset.schema(j.gold_api).input_parameters) if j.gold_api in toolset else set()
            known = len(wanted & params)
            group = "all parameters seen" if known == len(wanted) else ("some parameters seen" if known else "no parameter seen")
        row = rows.setdefault(group, {"samples": 0, "correct": 0, "apis": set()})
        row["samples"] += 1
        row["correct"] += bool(j.correct)
        row["apis"].add(j.gold_api)
    table = [
        {"model": run.model, "group": g, "samples": rows[g]["samples"], "correct": rows[g]["correct"],
         "Call accuracy (%)": round(100 * rows[g]["correct"] / rows[g]["samples"], 2), "APIs": len(rows[g]["apis"])}
        for g in order if g in rows
    ]
    return pd.DataFrame(table, columns=["model", "group", "samples", "correct", "Call accuracy (%)", "APIs"])
