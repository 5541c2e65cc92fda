"""What notebook 01 shows of the sandbox: the tool list, a dialogue replayed call by call, a search, and one
prediction judged under both protocols. Each returns a DataFrame (or the sample or dialogue it picked)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from apibank_lib.core.calls import format_call
from apibank_lib.core.errors import ApibankError, ConfigError
from apibank_lib.core.types import ApiCallSample, ApiRecord, Dialogue
from apibank_lib.data.datasets import Benchmark
from apibank_lib.env.protocols import PROTOCOLS, V2
from apibank_lib.env.sandbox import json_copy
from apibank_lib.env.tools.base import LEVEL3, LEVEL12
from apibank_lib.env.tools.registry import tool_classes
from apibank_lib.grading.grader import Grader
from apibank_lib.retrieval.search import default_searcher

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["tools_table", "pick_dialogue", "sample_of", "replay_dialogue", "search_table", "compare_protocols"]


def tools_table() -> pd.DataFrame:
    """Every API of both tool sets: tool set, domain, name, parameters, the database it reads, whether it writes it."""
    import pandas as pd

    rows = []
    for toolset in (LEVEL12, LEVEL3):
        for cls in tool_classes(toolset):
            rows.append(
                {
                    "tool set": toolset,
                    "domain": cls.domain,
                    "API": cls.name,
                    "parameters": ", ".join(f"{k}: {p.type}" for k, p in cls.input_parameters.items()) or "-",
                    "database": cls.database_name or "-",
                    "writes": cls.writes_database,
                }
            )
    return pd.DataFrame(rows).sort_values(["tool set", "domain", "API"], kind="stable").reset_index(drop=True)


def pick_dialogue(bench: Benchmark, level: int = 1, dialogue_id: str | None = None, *, min_calls: int = 3) -> Dialogue:
    """The dialogue ``dialogue_id``, or the first of a level with at least ``min_calls`` gold calls (else the most)."""
    dialogues = bench.dialogues(level)
    if dialogue_id is not None:
        found = [d for d in dialogues if d.id == dialogue_id]
        if not found:
            raise ConfigError(f"no level-{level} dialogue {dialogue_id!r}")
        return found[0]
    if not dialogues:
        raise ConfigError(f"the benchmark has no level-{level} dialogue")
    return next((d for d in dialogues if len(d.api_turns) >= min_calls), max(dialogues, key=lambda d: len(d.api_turns)))


def _changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """What changed between two states of the databases, in words (added, removed, changed records)."""
    parts = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            added = [k for k in new if k not in old]
            removed = [k for k in old if k not in new]
            changed = [k for k in new if k in old and new[k] != old[k]]
            words = [f"+{k}" for k in added] + [f"-{k}" for k in removed] + [f"~{k}" for k in changed]
            parts.append(f"{name}: {' '.join(str(w) for w in words)}")
        else:
            parts.append(f"{name}: changed")
    return "; ".join(parts)


def replay_dialogue(bench: Benchmark, dialogue: Dialogue, protocol: str = V2.name) -> pd.DataFrame:
    """A dialogue replayed step by step in one sandbox: each turn, each call's result, and what it changed.

    Returns:
        One row per turn: role, what was said or called, the call's output and exception,
        and the database records the call added (+), removed (-) or changed (~).
    """
    import pandas as pd

    box = bench.sandbox(dialogue.level, PROTOCOLS[protocol])
    names = sorted(box.toolset.mutable_databases)
    rows = []
    for turn in dialogue.turns:
        if not isinstance(turn, ApiRecord):
            rows.append({"role": turn.role, "turn": turn.text, "output": "", "exception": "", "state change": ""})
            continue
        before = {n: json_copy(box.database(n)) for n in names}
        result = box.execute_safely(turn.call)
        after = {n: box.database(n) for n in names}
        rows.append(
            {
                "role": "API",
                "turn": format_call(turn.call),
                "output": _short(result.output),
                "exception": result.exception or "",
                "state change": _changes(before, after),
            }
        )
    return pd.DataFrame(rows)


def _short(value: Any, width: int = 120) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def sample_of(bench: Benchmark, api: str, level: int = 1) -> ApiCallSample:
    """The first API-call sample of a level whose gold call is to ``api``."""
    for s in bench.samples(level, "api"):
        if isinstance(s, ApiCallSample) and s.gold.api_name == api:
            return s
    raise ConfigError(f"no level-{level} API-call sample calls {api}")


def search_table(bench: Benchmark, keywords: str, *, level: int = 1, k: int = 5) -> pd.DataFrame:
    """The APIs the embedding search ranks first for ``keywords``: rank, API, cosine similarity, description."""
    import pandas as pd

    index = default_searcher(bench.toolset(level).searchable())
    ranked = index.search(keywords, k)
    return pd.DataFrame(
        [
            {"rank": i + 1, "API": s.name, "cosine": round(score, 4), "description": s.description}
            for i, (s, score) in enumerate(ranked)
        ]
    )


def compare_protocols(bench: Benchmark, sample: ApiCallSample, prediction: str) -> pd.DataFrame:
    """One prediction judged under every protocol: the call each parsed, its result, the verdict and why."""
    import pandas as pd

    rows = []
    for name, protocol in PROTOCOLS.items():
        try:
            j = Grader(bench, protocol).judge_api(sample, prediction)
        except ApibankError as exc:  # pragma: no cover - a judgment never raises for a valid sample
            rows.append(
                {"protocol": name, "parsed call": "", "output": "", "correct": False, "category": "", "why": str(exc)}
            )
            continue
        rows.append(
            {
                "protocol": name,
                "parsed call": j.call_text or "",
                "output": _short((j.result or {}).get("output")),
                "correct": j.correct,
                "category": j.category.value if j.category else "",
                "why": j.reason or "",
            }
        )
    return pd.DataFrame(rows)
