"""Tables about the data: corpus and level statistics beside the paper's, calls per domain, a release's checks."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from apibank_lib.data.datasets import Benchmark, statistics
from apibank_lib.data.reported import (
    OFFICIAL_RELEASE_COUNTS,
    ORIGINAL_REPLAY,
    PAPER_CORPUS,
)
from apibank_lib.env.protocols import PAPER
from apibank_lib.env.tools.base import LEVEL3, LEVEL12
from apibank_lib.env.tools.registry import domains
from apibank_lib.grading.replay import replay
from apibank_lib.report.cells import pandas_module

if TYPE_CHECKING:
    import pandas as pd


def statistics_table(bench: Benchmark) -> pd.DataFrame:
    """The corpus statistics beside the paper's (reported) evaluation figures.

    Columns: quantity, measured here (on this data), reported (the paper).
    """
    pd = pandas_module()
    counted = statistics(bench)
    t, levels = counted["total"], counted["levels"]
    p = PAPER_CORPUS["evaluation"]
    rows = [
        ("domains (level-1/2 tool set)", t["domains"], p["domains"]),
        ("distinct APIs called", t["distinct_apis"], p["apis"]),
        ("dialogues", t["dialogues"], p["dialogues"]),
        ("Call / Retrieve+Call / Plan+Retrieve+Call dialogues", " / ".join(str(levels[k]["dialogues"]) for k in ("1", "2", "3")),
         f"{p['call_dialogues']} / {p['retrieve_call_dialogues']} / {p['plan_retrieve_call_dialogues']}"),
        ("turns (user utterances)", t["turns"], p["turns"]),
        ("average turns per dialogue", t["avg_turns_per_dialogue"], p["avg_turns_per_dialogue"]),
        ("gold API calls", t["gold_calls"], p["api_calls"]),
        ("single-call dialogues", t["single_call_dialogues"], p["single_call_instances"]),
        ("multi-call dialogues", t["multi_call_dialogues"], p["multi_call_instances"]),
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["quantity", f"measured here ({bench.name} data)", "reported (paper)"])


def level_statistics_table(bench: Benchmark) -> pd.DataFrame:
    """Per-level counts of the data (measured here) beside the official release's (counted with the original cutter).

    Columns: quantity, then for each level the count measured here and the official release's.
    """
    pd = pandas_module()
    levels = statistics(bench)["levels"]
    keys = (
        "dialogues",
        "gold_calls",
        "toolsearcher_calls",
        "api_call_samples",
        "duplicate_api_samples",
        "response_samples",
        "user_turns",
        "distinct_apis",
    )
    rows = []
    for key in keys:
        row: dict[str, Any] = {"quantity": key.replace("_", " ")}
        for lv in ("1", "2", "3"):
            row[f"L{lv} measured here"] = levels[lv].get(key)
            row[f"L{lv} official release"] = OFFICIAL_RELEASE_COUNTS[lv].get(key)
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.astype({c: "Int64" for c in frame.columns if c != "quantity"})


def calls_by_domain(bench: Benchmark) -> pd.DataFrame:
    """Gold API calls per domain and level (ToolSearcher counted under "utility")."""
    pd = pandas_module()
    domain_of = {3: domains(LEVEL3), 1: domains(LEVEL12), 2: domains(LEVEL12)}
    counts: dict[tuple[str, int], int] = defaultdict(int)
    for level in (1, 2):
        for d in bench.dialogues(level):
            for t in d.api_turns:
                counts[(domain_of[level].get(t.api_name, "?"), level)] += 1
    for item in bench.level3:
        for st in item.steps:
            counts[(domain_of[3].get(st.api_name, "?"), 3)] += 1
    frame = pd.DataFrame([{"domain": d, "level": lv, "gold calls": n} for (d, lv), n in counts.items()])
    table = frame.pivot_table(index="domain", columns="level", values="gold calls", fill_value=0, aggfunc="sum")
    table.columns = [f"L{c} gold calls" for c in table.columns]
    return table.reset_index().sort_values("domain", kind="stable").reset_index(drop=True)


def check_release(bench: Benchmark) -> pd.DataFrame:
    """Reported against measured, where both exist: an official release's counts and the original's gold replay.

    On our bundled data nothing is comparable, and every row says so.

    Returns:
        One row per check: quantity, reported, measured, tolerance, outcome
        (``agrees``, ``differs`` or ``not comparable ...``).
    """
    pd = pandas_module()
    rows: list[dict[str, Any]] = []
    levels = statistics(bench)["levels"]
    for lv, counts in OFFICIAL_RELEASE_COUNTS.items():
        for key, value in counts.items():
            rows.append(
                {
                    "quantity": f"level {lv} {key.replace('_', ' ')}",
                    "reported": value,
                    "measured": levels[lv].get(key),
                    "tolerance": 0,
                }
            )
    replayed = replay(bench, PAPER, levels=(1, 2)) if bench.official else None
    for row in ORIGINAL_REPLAY["rows"]:
        lv = str(row["level"])
        measured = None
        if replayed is not None:
            r = replayed["levels"][lv]
            measured = round(100.0 * r["correct"] / r["gold_calls"], 2) if r["gold_calls"] else None
        rows.append(
            {
                "quantity": f"level {lv} gold calls the original evaluator accepts (%)",
                "reported": row["gold_calls_judged_correct"],
                "measured": measured,
                "tolerance": ORIGINAL_REPLAY["tolerance_points"],
            }
        )
    for row in rows:
        if not bench.official:
            row["outcome"] = "not comparable (not the official release)"
        elif row["measured"] is None:
            row["outcome"] = "not measured"
        else:
            row["outcome"] = (
                "agrees" if abs(float(row["measured"]) - float(row["reported"])) <= row["tolerance"] else "differs"
            )
    return pd.DataFrame(rows)
