"""Benchmarks on disk: our bundled data and official API-Bank releases.

Both use the official layout, so one set of loaders serves both::

    <root>/lv1-lv2-samples/level-1-given-desc/*.jsonl   level 1 (Call) dialogues
    <root>/lv1-lv2-samples/level-2-toolsearcher/*.jsonl level 2 (Retrieve+Call) dialogues
    <root>/test-data/level-3.json                        level 3 (Plan+Retrieve+Call) items
    <root>/init_database/*.json                          level-1/2 databases

An official release also has ``apis/`` and ``lv3_apis/`` (the original tool
sources, read as text for their descriptions, never imported) and, in older
snapshots, the rendered ``test-data/level-{1,2}-{api,response}.json`` files.
Our bundled benchmark adds ``recordings/`` (recorded answers of online
services) and ``lv3_database/`` (the level-3 tables); for an official release
both are harvested from its own gold results.

This module also cuts dialogues into evaluation samples exactly as the
original evaluator does, and computes the corpus statistics.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from apibank_lib.databases import load_databases, load_json
from apibank_lib.errors import DataError
from apibank_lib.types import Dialogue, Level3Item, Level3Step, Param, Sample, ToolSchema, Turn

__all__ = [
    "Benchmark",
    "load_benchmark",
    "default_data_root",
    "is_official_release",
    "level3_path",
    "load_dialogue_file",
    "load_dialogues",
    "load_level3",
    "load_test_data",
    "read_api_metadata",
    "cut_samples",
    "cut_level3_samples",
    "LEVEL_DIRS",
]

LEVEL_DIRS = {1: "lv1-lv2-samples/level-1-given-desc", 2: "lv1-lv2-samples/level-2-toolsearcher"}
LEVEL3_CANDIDATES = ("test-data/level-3.json", "test_data/level-3.json", "json_test_data/level-3.json")
TEST_DATA_FILES = ("level-1-api", "level-1-response", "level-2-api", "level-2-response", "level-3-batch-inf", "level-3-batch-inf-response")


def default_data_root() -> Path:
    """The bundled benchmark: ``$APIBANK_DATA`` or ``data/eval`` next to the package."""
    env = os.environ.get("APIBANK_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "data" / "eval"


def is_official_release(root: str | Path) -> bool:
    """True for the root of an official API-Bank release (it carries the original tool sources)."""
    root = Path(root)
    return (root / "apis").is_dir() and (root / "lv1-lv2-samples").is_dir() and (root / "init_database").is_dir()


# --- dialogue files --------------------------------------------------------------------------------


def _turn_from_record(rec: Any, path: Path, line: int) -> Turn:
    if not isinstance(rec, dict):
        raise DataError(f"expected a JSON object, found {type(rec).__name__}", path, line)
    role = rec.get("role")
    if role in ("User", "AI"):
        text = rec.get("text")
        if not isinstance(text, str):
            raise DataError(f"a {role} record needs a text string", path, line)
        return Turn(role, text=text)
    if role == "API":
        name, params, result = rec.get("api_name"), rec.get("param_dict"), rec.get("result")
        if not isinstance(name, str) or not name:
            raise DataError("an API record needs an api_name", path, line)
        if not isinstance(params, dict):
            raise DataError(f"the API record of {name} needs a param_dict object", path, line)
        if not isinstance(result, dict) or not {"input", "output", "exception"} <= set(result):
            raise DataError(f"the API record of {name} needs a result with input, output and exception", path, line)
        return Turn("API", api_name=name, param_dict=params, result=result)
    raise DataError(f"unknown role {role!r} (expected User, AI or API)", path, line)


def load_dialogue_file(path: str | Path, level: int) -> Dialogue:
    """Read one dialogue JSONL file (empty lines are skipped; an empty file is an empty dialogue)."""
    path = Path(path)
    turns: list[Turn] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DataError(f"cannot read the file: {exc.strerror}", path) from exc
    for i, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DataError(f"invalid JSON: {exc.msg} (column {exc.colno})", path, i) from exc
        turn = _turn_from_record(rec, path, i)
        turn.line = i
        turns.append(turn)
    return Dialogue(path.stem, level, turns, str(path))


def load_dialogues(directory: str | Path, level: int) -> list[Dialogue]:
    """Every ``*.jsonl`` dialogue of a folder, sorted by file name."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError("dialogue folder not found", directory)
    return [load_dialogue_file(p, level) for p in sorted(directory.glob("*.jsonl"))]


def load_level3(path: str | Path) -> list[Level3Item]:
    """Read ``level-3.json``: a list of ``{requirement, response, apis: [{api_name, input, output}]}``."""
    path = Path(path)
    data = load_json(path)
    if not isinstance(data, list):
        raise DataError("level-3 data must be a JSON array of items", path)
    items: list[Level3Item] = []
    for i, item in enumerate(data):
        where = f"item {i}"
        if not isinstance(item, dict) or not isinstance(item.get("requirement"), str):
            raise DataError(f"{where} needs a requirement string", path)
        if not isinstance(item.get("response"), str) or not isinstance(item.get("apis"), list):
            raise DataError(f"{where} needs a response string and an apis list", path)
        steps: list[Level3Step] = []
        for j, st in enumerate(item["apis"]):
            ok = isinstance(st, dict) and isinstance(st.get("api_name"), str) and isinstance(st.get("input"), dict)
            if not ok or not isinstance(st.get("output"), dict) or "output" not in st["output"]:
                raise DataError(f"{where}, step {j} needs api_name, an input object and the full result envelope", path)
            steps.append(Level3Step(st["api_name"], st["input"], st["output"]))
        items.append(Level3Item(i, item["requirement"], item["response"], steps))
    return items


def load_test_data(path: str | Path) -> list[dict[str, Any]]:
    """Read an official rendered test-data file (a JSON array of instruction/input/... items)."""
    path = Path(path)
    data = load_json(path)
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise DataError("rendered test data must be a JSON array of objects", path)
    for i, d in enumerate(data):
        if not isinstance(d.get("instruction"), str) or not isinstance(d.get("input"), str):
            raise DataError(f"item {i} lacks instruction/input strings", path)
    return data


# --- API metadata from an official release's sources ------------------------------------------------


def read_api_metadata(directory: str | Path) -> dict[str, ToolSchema]:
    """Read API descriptions from the original tool sources without importing them.

    Each class body's literal assignments to ``description``, ``input_parameters``
    and ``output_parameters`` are evaluated with :func:`ast.literal_eval` (which
    only accepts literals); classes without a string ``description`` are skipped.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError("API source folder not found", directory)
    out: dict[str, ToolSchema] = {}
    for path in sorted(directory.glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except SyntaxError as exc:
            raise DataError(f"cannot parse the source: {exc.msg}", path, exc.lineno) from exc
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            attrs: dict[str, Any] = {}
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    key = stmt.targets[0].id
                    if key in ("description", "input_parameters", "output_parameters"):
                        try:
                            attrs[key] = ast.literal_eval(stmt.value)
                        except ValueError as exc:
                            raise DataError(f"{node.name}.{key} is not a literal", path, stmt.lineno) from exc
            if not isinstance(attrs.get("description"), str):
                continue
            out[node.name] = ToolSchema(
                node.name,
                attrs["description"],
                _params(attrs.get("input_parameters", {}), path, node.name),
                _params(attrs.get("output_parameters", {}), path, node.name),
            )
    return out


def _params(raw: Any, path: Path, cls: str) -> dict[str, Param]:
    if not isinstance(raw, dict):
        raise DataError(f"{cls}: parameters must be a dict", path)
    params: dict[str, Param] = {}
    for name, spec in raw.items():
        if not isinstance(spec, dict):
            raise DataError(f"{cls}: parameter {name!r} must map to {{type, description}}", path)
        params[str(name)] = Param(str(spec.get("type", "str")), str(spec.get("description", "")))
    return params


# --- sample cutting ----------------------------------------------------------------------------------


def cut_samples(dialogue: Dialogue) -> list[Sample]:
    """Cut a level-1/2 dialogue into API-call and response samples, as the original evaluator does.

    For the k-th API record at position i: sample ``2k`` has the records before i
    as history and record i as gold (an API-call sample); sample ``2k+1`` has the
    records up to i and record i+1 as gold: a response sample if that record is an
    AI turn, a *duplicate* API-call sample if it is another API record, nothing if
    it is a User turn. The APIs shown are those of the whole dialogue, in order of
    first appearance (the original used Python set order, which varies per run);
    level-2 API-call samples show only ToolSearcher.
    """
    names = dialogue.api_names
    samples: list[Sample] = []
    k = 0
    for i, turn in enumerate(dialogue.turns):
        if turn.role != "API":
            continue
        shown = ["ToolSearcher"] if dialogue.level == 2 else names
        samples.append(Sample("api", dialogue.level, dialogue.id, 2 * k, dialogue.turns[:i], turn, list(shown)))
        if i + 1 < len(dialogue.turns):
            nxt = dialogue.turns[i + 1]
            hist = dialogue.turns[: i + 1]
            if nxt.role == "API":
                samples.append(Sample("api", dialogue.level, dialogue.id, 2 * k + 1, hist, nxt, list(shown), duplicate=True))
            elif nxt.role == "AI":
                samples.append(Sample("response", dialogue.level, dialogue.id, 2 * k + 1, hist, nxt, list(names)))
        k += 1
    return samples


def cut_level3_samples(item: Level3Item) -> list[Sample]:
    """One API-call sample per gold step (earlier gold steps as history), then one response sample."""
    out = [
        Sample("api", 3, str(item.id), j, item.steps[:j], step, ["ToolSearcher"], requirement=item.requirement.strip())
        for j, step in enumerate(item.steps)
    ]
    out.append(
        Sample(
            "response",
            3,
            str(item.id),
            len(item.steps) - 1,
            list(item.steps),
            Turn("AI", text=item.response),
            ["ToolSearcher"],
            requirement=item.requirement.strip(),
        )
    )
    return out


# --- the benchmark -----------------------------------------------------------------------------------


@dataclass
class Benchmark:
    """A loaded benchmark: dialogues, level-3 items, databases and the two tool sets.

    Attributes:
        root: the data root.
        official: True for an official API-Bank release.
        level1, level2: level-1/2 dialogues; level3: level-3 items.
        databases: level-1/2 databases (plus recordings of online services).
        level3_databases: the level-3 tables.
        metadata_l12, metadata_l3: API descriptions read from an official release
            (empty for our bundled data, whose descriptions come from the tool classes).
        test_data: an official release's rendered samples, by file stem, when present.
    """

    root: Path
    official: bool
    level1: list[Dialogue]
    level2: list[Dialogue]
    level3: list[Level3Item]
    databases: dict[str, Any]
    level3_databases: dict[str, Any]
    metadata_l12: dict[str, ToolSchema] = field(default_factory=dict)
    metadata_l3: dict[str, ToolSchema] = field(default_factory=dict)
    test_data: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list, repr=False)

    def dialogues(self, level: int) -> list[Dialogue]:
        """The dialogues of level 1 or 2."""
        if level not in (1, 2):
            raise ValueError("dialogues exist for levels 1 and 2 only")
        return self.level1 if level == 1 else self.level2

    def samples(self, level: int, kind: str | None = None) -> list[Sample]:
        """All samples of a level (``kind``: ``"api"``, ``"response"`` or both)."""
        if level == 3:
            out = [s for item in self.level3 for s in cut_level3_samples(item)]
        else:
            out = [s for d in self.dialogues(level) for s in cut_samples(d)]
        return [s for s in out if kind is None or s.kind == kind]

    @cached_property
    def fingerprint(self) -> str:
        """A hash of every data file read (names and bytes), recorded with every result."""
        h = hashlib.sha256()
        for p in sorted(self.files):
            h.update(str(p.relative_to(self.root)).encode())
            h.update(b"\0")
            h.update(p.read_bytes())
        return h.hexdigest()[:16]


def level3_path(root: Path) -> Path | None:
    """The level-3 items file of a data root (the releases name its folder differently), or None."""
    for rel in LEVEL3_CANDIDATES:
        if (root / rel).is_file():
            return root / rel
    return None


def load_benchmark(path: str | Path | None = None) -> Benchmark:
    """Load our bundled benchmark (default) or an official API-Bank release.

    Args:
        path: a data root in the official layout; None for the bundled benchmark.

    Raises:
        DataError: a missing folder or a malformed file (named, with its line).
    """
    root = Path(path) if path is not None else default_data_root()
    if not root.is_dir():
        raise DataError("data root not found", root)
    official = is_official_release(root)
    level1 = load_dialogues(root / LEVEL_DIRS[1], 1)
    level2 = load_dialogues(root / LEVEL_DIRS[2], 2) if (root / LEVEL_DIRS[2]).is_dir() else []
    l3_path = level3_path(root)
    level3 = load_level3(l3_path) if l3_path else []
    databases = load_databases(root / "init_database")
    files = sorted((root / LEVEL_DIRS[1]).glob("*.jsonl")) + sorted((root / "init_database").glob("*.json"))
    if (root / LEVEL_DIRS[2]).is_dir():
        files += sorted((root / LEVEL_DIRS[2]).glob("*.jsonl"))
    if l3_path:
        files.append(l3_path)
    metadata_l12: dict[str, ToolSchema] = {}
    metadata_l3: dict[str, ToolSchema] = {}
    test_data: dict[str, list[dict[str, Any]]] = {}
    if official:
        from apibank_lib.tools.level3 import harvest_level3_tables
        from apibank_lib.tools.recordings import harvest_recordings

        databases.update(harvest_recordings(level1 + level2))
        level3_databases = harvest_level3_tables(level3)
        metadata_l12 = read_api_metadata(root / "apis")
        if (root / "lv3_apis").is_dir():
            metadata_l3 = read_api_metadata(root / "lv3_apis")
        for stem in TEST_DATA_FILES:
            p = root / "test-data" / f"{stem}.json"
            if p.is_file():
                test_data[stem] = load_test_data(p)
                files.append(p)
    else:
        if (root / "recordings").is_dir():
            databases.update(load_databases(root / "recordings"))
            files += sorted((root / "recordings").glob("*.json"))
        level3_databases = load_databases(root / "lv3_database") if (root / "lv3_database").is_dir() else {}
        files += sorted((root / "lv3_database").glob("*.json")) if (root / "lv3_database").is_dir() else []
    return Benchmark(root, official, level1, level2, level3, databases, level3_databases, metadata_l12, metadata_l3, test_data, files)


# --- statistics --------------------------------------------------------------------------------------


def _histogram(values: Iterable[int]) -> dict[str, int]:
    c = Counter(values)
    return {str(k): c[k] for k in sorted(c)}


def level_statistics(bench: Benchmark, level: int) -> dict[str, Any]:
    """Counts for one level, with the original cutter's definitions (see the spec §3)."""
    if level == 3:
        items = bench.level3
        steps = [s for it in items for s in it.steps]
        calls_per = [len(it.steps) for it in items]
        return {
            "dialogues": len(items),
            "dialogues_with_calls": sum(1 for n in calls_per if n),
            "user_turns": len(items),
            "ai_turns": len(items),
            "gold_calls": len(steps),
            "toolsearcher_calls": sum(1 for s in steps if s.api_name == "ToolSearcher"),
            "api_call_samples": len(steps),
            "duplicate_api_samples": 0,
            "response_samples": len(items),
            "distinct_apis": len({s.api_name for s in steps}),
            "apis": sorted({s.api_name for s in steps}),
            "single_call_dialogues": sum(1 for n in calls_per if n == 1),
            "multi_call_dialogues": sum(1 for n in calls_per if n > 1),
            "calls_per_dialogue": _histogram(calls_per),
        }
    dialogues = bench.dialogues(level)
    samples = [s for d in dialogues for s in cut_samples(d)]
    turns = [t for d in dialogues for t in d.turns]
    calls = [t for t in turns if t.role == "API"]
    calls_per = [len(d.api_turns) for d in dialogues]
    return {
        "dialogues": len(dialogues),
        "dialogues_with_calls": sum(1 for n in calls_per if n),
        "records": len(turns),
        "user_turns": sum(1 for t in turns if t.role == "User"),
        "ai_turns": sum(1 for t in turns if t.role == "AI"),
        "gold_calls": len(calls),
        "toolsearcher_calls": sum(1 for t in calls if t.api_name == "ToolSearcher"),
        "api_call_samples": sum(1 for s in samples if s.kind == "api"),
        "duplicate_api_samples": sum(1 for s in samples if s.duplicate),
        "response_samples": sum(1 for s in samples if s.kind == "response"),
        "distinct_apis": len({t.api_name for t in calls}),
        "apis": sorted({str(t.api_name) for t in calls}),
        "single_call_dialogues": sum(1 for n in calls_per if n == 1),
        "multi_call_dialogues": sum(1 for n in calls_per if n > 1),
        "calls_per_dialogue": _histogram(calls_per),
    }


def statistics(bench: Benchmark, domains: dict[str, str] | None = None) -> dict[str, Any]:
    """Per-level and total statistics of a benchmark.

    Args:
        bench: the loaded benchmark.
        domains: API name -> domain, to count domains (optional).

    Returns:
        ``{"levels": {"1": {...}, "2": {...}, "3": {...}}, "total": {...}}``; "turns"
        counts user utterances, the definition that reproduces the paper's 914.
    """
    levels = {str(lv): level_statistics(bench, lv) for lv in (1, 2, 3)}
    dialogues = sum(v["dialogues"] for v in levels.values())
    turns = sum(v["user_turns"] for v in levels.values())
    apis = sorted(set().union(*(set(v["apis"]) for v in levels.values())))
    total: dict[str, Any] = {
        "dialogues": dialogues,
        "turns": turns,
        "avg_turns_per_dialogue": round(turns / dialogues, 2) if dialogues else 0.0,
        "gold_calls": sum(v["gold_calls"] for v in levels.values()),
        "api_call_samples": sum(v["api_call_samples"] for v in levels.values()),
        "response_samples": sum(v["response_samples"] for v in levels.values()),
        "distinct_apis": len(apis),
        "single_call_dialogues": sum(v["single_call_dialogues"] for v in levels.values()),
        "multi_call_dialogues": sum(v["multi_call_dialogues"] for v in levels.values()),
    }
    if domains is not None:
        total["domains"] = len({domains[a] for a in apis if a in domains})
    return {"levels": levels, "total": total}


def used_apis(dialogues: Sequence[Dialogue]) -> set[str]:
    """Every API name called in a set of dialogues."""
    return {str(t.api_name) for d in dialogues for t in d.api_turns}
