"""Finished synthesis folders read back, without a model: stage tables, the single- versus multi-agent comparison,
reviews, and the cost of an accepted dialogue (what notebook 06 and the data card show).

A folder is what :func:`~apibank_lib.synthesis.pipeline.run_pipeline` or
:func:`~apibank_lib.synthesis.single.run_single_agent` wrote: ``synthesis.json`` (its identity), the stage
journals, ``report.json`` (the counts of its last run) and ``corpus/``. A review is a CSV file beside them,
``review.csv``, one row per reviewed dialogue: ``id``, ``tester`` (``accepted`` or the tester's reason, filled in
by :func:`review_sheet`), ``usable`` (``yes``/``no``, by the reviewer), ``standard`` (the data standard a ``no``
breaks, :data:`REVIEW_STANDARDS`), ``note`` and ``reviewer``. The shipped reviews were done by the AI agent session
that built the pipeline (one reviewer, not blind to the method), not by humans; the paper's usable rate
(:data:`PAPER_SYNTHESIS`) comes from a human review, so the two are not like for like.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apibank_lib.core.errors import DataError
from apibank_lib.core.stats import wilson_interval

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PAPER_SYNTHESIS",
    "REVIEW_STANDARDS",
    "REVIEW_COLUMNS",
    "read_counts",
    "stage_table",
    "accepted_ids",
    "tester_rejected",
    "review_sheet",
    "read_review",
    "method_comparison",
    "cost_table",
]

PAPER_SYNTHESIS: dict[str, float] = {
    "multi-agent usable (human review of 100)": 0.94,
    "single agent usable, ChatGPT": 0.05,
    "single agent usable, GPT-4": 0.25,
    "tester rejection rate": 0.35,
    "cost per model-made dialogue, USD": 0.1,
    "cost per hand-annotated dialogue, USD": 8.0,
}
"""The paper's synthesis figures (Li et al., 2023, section 5), reported, not measured here."""

REVIEW_STANDARDS: dict[str, str] = {
    "domain": "the domain and its APIs are plausible, everyday and new (not an evaluated API under another name)",
    "api": "each API is well described: a clear purpose, typed parameters with formats, at least one output",
    "request": "the user's request is natural and carries every detail the calls need",
    "calls": "each call names the right API with the right arguments, copied from the request or an earlier result",
    "results": "each simulated result is plausible and consistent with its call",
    "reply": "the replies and the final answer are grounded in the results and answer the request",
    "ability": "the dialogue practises its ability (call; search before each API; a plan of several searched calls)",
}
"""The review's criteria: the paper's data standards (diversity, authenticity, reasonableness and
correctness, as applied to one example), one a reason a dialogue is judged unusable."""

REVIEW_COLUMNS = ("id", "tester", "usable", "standard", "note", "reviewer")


def read_counts(folder: str | Path) -> dict[str, Any]:
    """A synthesis folder's ``report.json`` (per-stage counts) with its identity under ``identity``.

    Raises:
        DataError: the folder has no report (no run finished in it).
    """
    folder = Path(folder)
    path = folder / "report.json"
    if not path.is_file():
        raise DataError("no report.json: no synthesis run finished in this folder", folder)
    counts = json.loads(path.read_text(encoding="utf-8"))
    ident = folder / "synthesis.json"
    counts["identity"] = json.loads(ident.read_text(encoding="utf-8")) if ident.is_file() else {}
    return counts


def _model(identity: Mapping[str, Any]) -> str:
    backend = identity.get("backend") or {}
    name = backend.get("model") or backend.get("backend") or "?"
    return str(name) + (f"+{backend['adapter']}" if backend.get("adapter") else "")


def stage_table(folder: str | Path) -> pd.DataFrame:
    """One row per stage, as :meth:`~apibank_lib.synthesis.pipeline.SynthesisReport.table` gives it, read from the
    folder: attempted, accepted, rejected (and why), items, tokens, CPU and wall seconds."""
    import pandas as pd

    rows = []
    for name, c in read_counts(folder)["stages"].items():
        rows.append(
            {
                "stage": name,
                "attempted": c["attempted"],
                "accepted": c["accepted"],
                "rejected": c["rejected"],
                "rejected_by_reason": ", ".join(f"{r}: {n}" for r, n in sorted(c["rejected_by_reason"].items())),
                "items": c["items"],
                "duplicates": c["duplicates"],
                "prompt_tokens": c["prompt_tokens"],
                "completion_tokens": c["completion_tokens"],
                "cpu_seconds": round(c.get("cpu_seconds", 0.0), 1),
                "wall_seconds": round(c.get("wall_seconds", 0.0), 1),
            }
        )
    return pd.DataFrame(rows)


def accepted_ids(folder: str | Path) -> list[str]:
    """The ids of the dialogues in the folder's corpus, in file order."""
    from apibank_lib.data.formats.train_corpus import corpus_files, read_corpus_file

    corpus = Path(folder) / "corpus"
    if not corpus.is_dir():
        return []
    return [d.id for p in corpus_files(corpus) for d in read_corpus_file(p).dialogues]


def tester_rejected(folder: str | Path) -> dict[str, str]:
    """The dialogues the tester judged and refused, by id, with its reason (from ``tester.jsonl``)."""
    path = Path(folder) / "tester.jsonl"
    if not path.is_file():
        return {}
    latest: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        latest[rec["key"]] = rec
    return {rec["id"]: rec["reason"] for rec in latest.values() if not rec["ok"]}


def review_sheet(
    folder: str | Path, n: int = 50, *, rejected: int = 0, seed: int = 0, path: str | Path | None = None
) -> Path:
    """Write a review sheet of ``n`` accepted dialogues and ``rejected`` dialogues the tester refused, drawn at
    random (seeded), for a reviewer to fill in the ``usable``, ``standard``, ``note`` and ``reviewer`` columns
    (refused ones let the tester's agreement with the review be measured on both sides); an existing sheet is
    never overwritten.

    Returns:
        The sheet's path (default ``<folder>/review.csv``).
    """
    folder = Path(folder)
    out = Path(path) if path is not None else folder / "review.csv"
    if out.exists():
        return out
    ids = accepted_ids(folder)
    chosen = [(i, "accepted") for i in sorted(random.Random(seed).sample(ids, min(n, len(ids))), key=ids.index)]
    refused = tester_rejected(folder)
    picked = sorted(random.Random(f"{seed}:rejected").sample(sorted(refused), min(rejected, len(refused))))
    chosen += [(i, refused[i]) for i in picked]
    with out.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=REVIEW_COLUMNS)
        writer.writeheader()
        for dialogue_id, verdict in chosen:
            writer.writerow({"id": dialogue_id, "tester": verdict})
    return out


def read_review(path: str | Path) -> pd.DataFrame:
    """A filled-in review sheet; rows whose ``usable`` is empty are left out (not reviewed yet).

    Raises:
        DataError: a missing column, a ``usable`` other than yes/no, or a ``no`` without a known standard; the
            message names the row.
    """
    import pandas as pd

    path = Path(path)
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    missing = [c for c in REVIEW_COLUMNS if rows and c not in rows[0]]
    if missing:
        raise DataError(f"review sheet lacks columns {missing}", path)
    kept = []
    for number, row in enumerate(rows, start=2):
        usable = (row.get("usable") or "").strip().lower()
        if not usable:
            continue
        if usable not in ("yes", "no"):
            raise DataError(f"row {number} ({row['id']}): usable must be yes or no, not {row['usable']!r}", path)
        standard = (row.get("standard") or "").strip()
        if usable == "no" and standard not in REVIEW_STANDARDS:
            raise DataError(
                f"row {number} ({row['id']}): a 'no' names the standard it breaks, one of {', '.join(REVIEW_STANDARDS)}", path
            )
        kept.append({**row, "usable": usable == "yes", "standard": standard})
    return pd.DataFrame(kept, columns=list(REVIEW_COLUMNS))


def _generated(counts: Mapping[str, Any]) -> int:
    """Answers that were to hold a whole dialogue: the dialogue agent's (pipeline) or the single agent's."""
    stages = counts["stages"]
    return int((stages.get("dialogues") or stages.get("examples") or {}).get("attempted", 0))


def method_comparison(folders: Mapping[str, str | Path], *, level: float = 0.95) -> pd.DataFrame:
    """Synthesis methods side by side (e.g. ``{"multi-agent": ..., "single agent": ...}``), one row each.

    Columns: the model; answers that were to hold a dialogue; dialogues the tester accepted; the usable rate by
    the tester (accepted / answers, unparseable answers counted unusable) with a Wilson interval; the tester's own
    rejection rate (of the dialogues that reached it); where the folder has a filled-in ``review.csv``, the
    reviewed count (accepted, and refused by the tester), the usable rate of the accepted ones by the review with its
    interval, and the tester's agreement with the review (the share of all reviewed dialogues on which both say the
    same); tokens and CPU seconds per accepted dialogue.
    """
    import pandas as pd

    rows = []
    for method, folder in folders.items():
        counts = read_counts(folder)
        stages = counts["stages"]
        generated = _generated(counts)
        accepted = int(counts["dialogues_accepted"])
        tester = stages.get("tester", {})
        low, high = wilson_interval(accepted, generated, level)
        tokens = sum(s["prompt_tokens"] + s["completion_tokens"] for s in stages.values())
        cpu = sum(s.get("cpu_seconds", 0.0) for s in stages.values())
        row: dict[str, Any] = {
            "method": method,
            "model": _model(counts["identity"]),
            "answers": generated,
            "accepted by tester": accepted,
            "usable (tester) %": round(100 * accepted / generated, 1) if generated else None,
            "tester low": round(100 * low, 1),
            "tester high": round(100 * high, 1),
            "tester rejection %": round(100 * tester.get("rejected", 0) / tester["attempted"], 1) if tester.get("attempted") else None,
        }
        review_path = Path(folder) / "review.csv"
        review = read_review(review_path) if review_path.is_file() else None
        if review is not None and len(review):
            # The usable rate is the accepted dialogues'; the agreement counts refused ones reviewed too. The
            # tester's verdict is the folder's corpus as it stands (a rerun re-judges every dialogue with today's
            # tester); the sheet's tester column keeps the verdict from when the sample was drawn.
            accepted_now = set(accepted_ids(folder))
            kept = review[review["id"].isin(accepted_now)]
            usable = int(kept["usable"].sum())
            r_low, r_high = wilson_interval(usable, len(kept), level)
            agree = sum((i in accepted_now) == u for i, u in zip(review["id"], review["usable"]))
            row.update(
                {
                    "reviewed": len(kept),
                    "reviewed refused": len(review) - len(kept),
                    "usable (review) %": round(100 * usable / len(kept), 1) if len(kept) else None,
                    "review low": round(100 * r_low, 1) if len(kept) else None,
                    "review high": round(100 * r_high, 1) if len(kept) else None,
                    "tester agrees %": round(100 * agree / len(review), 1),
                    "reviewer": ", ".join(sorted(set(review["reviewer"]) - {""})),
                }
            )
        else:
            row.update({"reviewed": 0, "reviewed refused": 0, "usable (review) %": None, "review low": None, "review high": None, "tester agrees %": None, "reviewer": ""})
        row["tokens per accepted"] = round(tokens / accepted) if accepted else None
        row["CPU s per accepted"] = round(cpu / accepted, 1) if accepted else None
        rows.append(row)
    return pd.DataFrame(rows)


def cost_table(folder: str | Path) -> pd.DataFrame:
    """What an accepted dialogue cost: tokens in and out, CPU seconds and hours, beside the paper's dollars for a
    model-made ($0.1) and a hand-annotated ($8) dialogue."""
    import pandas as pd

    counts = read_counts(folder)
    stages = counts["stages"].values()
    accepted = int(counts["dialogues_accepted"]) or 1
    tokens_in = sum(s["prompt_tokens"] for s in stages)
    tokens_out = sum(s["completion_tokens"] for s in stages)
    cpu = sum(s.get("cpu_seconds", 0.0) for s in stages)
    wall = sum(s.get("wall_seconds", 0.0) for s in stages)
    rows = [
        ("accepted dialogues", counts["dialogues_accepted"], "measured"),
        ("prompt tokens per accepted dialogue", round(tokens_in / accepted), "measured"),
        ("completion tokens per accepted dialogue", round(tokens_out / accepted), "measured"),
        ("CPU seconds per accepted dialogue", round(cpu / accepted, 1), "measured"),
        ("CPU hours, whole generation", round(cpu / 3600, 2), "measured"),
        ("wall hours, whole generation", round(wall / 3600, 2), "measured"),
        ("USD per model-made dialogue (paper)", PAPER_SYNTHESIS["cost per model-made dialogue, USD"], "reported"),
        ("USD per hand-annotated dialogue (paper)", PAPER_SYNTHESIS["cost per hand-annotated dialogue, USD"], "reported"),
    ]
    return pd.DataFrame(rows, columns=["measure", "value", "source"])
