"""Benchmarks: our bundled data or an official API-Bank release, loaded, cut into samples, counted.

Both use the official layout (see :mod:`apibank_lib.data.formats.official`), so one
loader serves both. This module also cuts dialogues into evaluation samples
exactly as the original evaluator does, and computes the corpus statistics.
Cutting works on any :class:`~apibank_lib.core.types.Dialogue`, loaded or not, so
training data can be cut like evaluation data.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import ConfigError, DataError
from apibank_lib.core.paths import PROJECT_ROOT
from apibank_lib.core.types import (
    ApiCallSample,
    ApiRecord,
    Dialogue,
    Episode,
    Level3Item,
    ResponseSample,
    Sample,
    ToolSchema,
)
from apibank_lib.data.formats.harvest import harvest_level3_tables, harvest_recordings
from apibank_lib.data.formats.official import (
    LEVEL_DIRS,
    TEST_DATA_FILES,
    is_official_release,
    level3_path,
    load_dialogues,
    load_level3,
    load_test_data,
    read_api_metadata,
)
from apibank_lib.env.databases import load_databases
from apibank_lib.env.protocols import V2, GradingProtocol
from apibank_lib.env.renaming import Renaming, renamed_toolset
from apibank_lib.env.sandbox import Sandbox
from apibank_lib.env.tools.base import LEVEL12
from apibank_lib.env.tools.registry import domains, toolset_for_level
from apibank_lib.env.tools.toolset import ToolSet

__all__ = [
    "Benchmark",
    "load_benchmark",
    "default_data_root",
    "data_source",
    "cut_samples",
    "cut_level3_samples",
    "needed_api",
    "statistics",
    "level_statistics",
]


def data_source(root: str | Path | None) -> str:
    """A data root's source name, for output folders, without loading it: ``bundled`` for the bundled benchmark
    (or None), else the folder's name (an official release, or other data in the same layout)."""
    if root is None:
        return "bundled"
    path = Path(root).resolve()
    return "bundled" if path == default_data_root().resolve() else path.name


def default_data_root() -> Path:
    """The bundled benchmark: ``$APIBANK_DATA`` or ``data/eval`` next to the package."""
    env = os.environ.get("APIBANK_DATA")
    if env:
        return Path(env)
    return PROJECT_ROOT / "data" / "eval"


# --- sample cutting --------------------------------------------------------------------------------


SEARCH_API = "ToolSearcher"
TOKEN_API = "GetUserToken"


def needed_api(later: Sequence[ApiRecord]) -> str | None:
    """The API a search is for, read from the API records that follow the search in its dialogue (or level-3 item).

    The rule: take the calls after the search up to the next search (the calls that search serves). The API needed
    is the first of them that is not a helper; GetUserToken is a helper when a later call among them takes a
    ``token`` (it fetches the token that call needs; the search tool itself returns GetUserToken beside such an
    API). When every call is a helper, it is the first call's API; when no call follows, there is none, and the
    search can only be judged by its recorded output.

    A recorded search output is what the original's retriever returned, and it is sometimes another API than the
    one the dialogue goes on to call; the call is what the user needed.
    """
    served: list[ApiRecord] = []
    for record in later:
        if record.api_name == SEARCH_API:
            break
        served.append(record)
    for i, record in enumerate(served):
        if record.api_name == TOKEN_API and any("token" in r.args for r in served[i + 1 :]):
            continue
        return record.api_name
    return served[0].api_name if served else None


def _needed(turns: Sequence[Any], i: int) -> str | None:
    """:func:`needed_api` of the record at position ``i`` when it is a search (None otherwise)."""
    if not isinstance(turns[i], ApiRecord) or turns[i].api_name != SEARCH_API:
        return None
    return needed_api([t for t in turns[i + 1 :] if isinstance(t, ApiRecord)])


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
    names = tuple(dialogue.api_names)
    shown = ("ToolSearcher",) if dialogue.level == 2 else names
    turns = dialogue.turns
    samples: list[Sample] = []
    k = 0
    for i, turn in enumerate(turns):
        if not isinstance(turn, ApiRecord):
            continue
        samples.append(
            ApiCallSample(dialogue.level, dialogue.id, 2 * k, tuple(turns[:i]), shown, turn, needed_api=_needed(turns, i))
        )
        if i + 1 < len(turns):
            nxt, hist = turns[i + 1], tuple(turns[: i + 1])
            if isinstance(nxt, ApiRecord):
                samples.append(
                    ApiCallSample(
                        dialogue.level, dialogue.id, 2 * k + 1, hist, shown, nxt, duplicate=True, needed_api=_needed(turns, i + 1)
                    )
                )
            elif nxt.role == "AI":
                samples.append(ResponseSample(dialogue.level, dialogue.id, 2 * k + 1, hist, names, nxt.text))
        k += 1
    return samples


def cut_level3_samples(item: Level3Item) -> list[Sample]:
    """One API-call sample per gold step (earlier gold steps as history), then one response sample."""
    requirement = item.requirement.strip()
    shown = ("ToolSearcher",)
    out: list[Sample] = [
        ApiCallSample(
            3, str(item.id), j, tuple(item.steps[:j]), shown, step, requirement=requirement,
            needed_api=_needed(item.steps, j),
        )
        for j, step in enumerate(item.steps)
    ]
    out.append(
        ResponseSample(
            3, str(item.id), len(item.steps) - 1, tuple(item.steps), shown, item.response, requirement=requirement
        )
    )
    return out


# --- the benchmark -----------------------------------------------------------------------------------


@dataclass(repr=False)
class Benchmark:
    """A loaded benchmark: dialogues, level-3 items, databases and the API metadata shown.

    Attributes:
        root: the data root.
        official: True for an official API-Bank release.
        level1, level2: level-1/2 dialogues; level3: level-3 items.
        databases: level-1/2 databases (plus recordings of online services).
        level3_databases: the level-3 tables.
        metadata_l12, metadata_l3: API descriptions read from an official release
            (empty for our bundled data, whose descriptions come from the tool classes).
        test_data: an official release's rendered samples, by file stem, when present.
        files: every data file read (for the fingerprint).
        renaming: a twin's new API and parameter names (:mod:`apibank_lib.data.twins`); its tool sets answer to them.
        excluded: sample key -> why a twin leaves it out (its gold did not execute to the renamed original).
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
    files: list[Path] = field(default_factory=list)
    renaming: Renaming | None = None
    excluded: dict[str, str] = field(default_factory=dict)
    _toolsets: dict[str, ToolSet] = field(default_factory=dict, init=False, compare=False)

    def __repr__(self) -> str:
        kind = "official release" if self.official else "benchmark"
        return (
            f"<Benchmark {kind} at {self.root}: {len(self.level1)} level-1 and {len(self.level2)} level-2 dialogues, "
            f"{len(self.level3)} level-3 items, fingerprint {self.fingerprint}>"
        )

    @property
    def name(self) -> str:
        """A short label for tables: ``bundled``, or the release's (or twin's) folder name."""
        return self.root.name if self.official or self.renaming is not None else "bundled"

    @property
    def source(self) -> str:
        """The data source's name, for output folders (:func:`data_source`)."""
        return data_source(self.root)

    def dialogues(self, level: int) -> list[Dialogue]:
        """The dialogues of level 1 or 2."""
        if level not in (1, 2):
            raise ConfigError("dialogues exist for levels 1 and 2 only")
        return self.level1 if level == 1 else self.level2

    def samples(self, level: int, kind: str | None = None) -> list[Sample]:
        """All samples of a level in dataset order (``kind``: ``"api"``, ``"response"`` or both)."""
        if level == 3:
            out = [s for item in self.level3 for s in cut_level3_samples(item)]
        else:
            out = [s for d in self.dialogues(level) for s in cut_samples(d)]
        return [s for s in out if kind is None or s.kind == kind]

    def episodes(self) -> list[Episode]:
        """One agent-loop episode per level-3 item, in item order."""
        return [Episode(item) for item in self.level3]

    def toolset(self, level: int) -> ToolSet:
        """The tool set of a level, showing this benchmark's API descriptions (built once per tool set)."""
        base = toolset_for_level(level)
        if base.name not in self._toolsets:
            shown = base.with_metadata(self.metadata_l3 if level == 3 else self.metadata_l12)
            self._toolsets[base.name] = shown if self.renaming is None else renamed_toolset(shown, self.renaming)
        return self._toolsets[base.name]

    def level_databases(self, level: int) -> dict[str, Any]:
        """The initial databases of a level's tool set."""
        return self.level3_databases if level == 3 else self.databases

    def sandbox(self, level: int = 1, protocol: GradingProtocol = V2, *, searcher: Any = None) -> Sandbox:
        """A fresh sandbox over a level's tools and databases, with a protocol's argument conversion.

        Args:
            level: 1, 2 or 3 (levels 1 and 2 share one tool set).
            protocol: whose argument conversion to use (:data:`~apibank_lib.env.protocols.V2` by default).
            searcher: what ToolSearcher searches with (see :class:`~apibank_lib.env.sandbox.Sandbox`);
                None for the protocol's retriever over the level's APIs.
        """
        return Sandbox(
            self.toolset(level),
            self.level_databases(level),
            conversion=protocol.conversion,
            searcher=protocol.retriever if searcher is None else searcher,
        )

    def release_prompt(self, sample: Sample) -> dict[str, Any] | None:
        """The release's own rendered test-data item for a sample, when the release ships one."""
        if sample.level == 3:
            stem = "level-3-batch-inf" if sample.kind == "api" else "level-3-batch-inf-response"
            for item in self.test_data.get(stem, []):
                if str(item.get("sample_id")) == sample.dialogue_id and (
                    sample.kind == "response" or item.get("api_id") == sample.sample_id
                ):
                    return item
            return None
        stem = f"level-{sample.level}-{sample.kind}"
        for item in self.test_data.get(stem, []):
            name = str(item.get("file", ""))
            if name.removesuffix(".jsonl") == sample.dialogue_id and item.get("id") == sample.sample_id:
                return item
        return None

    @cached_property
    def fingerprint(self) -> str:
        """A hash of every data file read (names and bytes), recorded with every result."""
        h = hashlib.sha256()
        for p in sorted(self.files):
            h.update(str(p.relative_to(self.root)).encode())
            h.update(b"\0")
            h.update(p.read_bytes())
        return h.hexdigest()[:16]


def _original_record(rec: ApiRecord, renaming: Renaming) -> ApiRecord:
    envelope = renaming.original_envelope(rec.result) if isinstance(rec.result, dict) else rec.result
    return ApiRecord(renaming.original_api(rec.api_name), renaming.original_args(rec.args), envelope, rec.line)


def _with_original_names(dialogues: list[Dialogue], renaming: Renaming | None) -> list[Dialogue]:
    """A twin's dialogues with their API records under the tools' own names (what the recordings are keyed by)."""
    if renaming is None:
        return dialogues
    return [
        Dialogue(d.id, d.level, [_original_record(t, renaming) if isinstance(t, ApiRecord) else t for t in d.turns], d.path)
        for d in dialogues
    ]


def _items_with_original_names(items: list[Level3Item], renaming: Renaming | None) -> list[Level3Item]:
    if renaming is None:
        return items
    return [Level3Item(i.id, i.requirement, i.response, [_original_record(s, renaming) for s in i.steps]) for i in items]


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
    twin = json.loads((root / "twin.json").read_text(encoding="utf-8")) if (root / "twin.json").is_file() else None
    renaming = Renaming.from_dict(twin["renaming"]) if twin is not None else None
    if official:
        # A twin's records carry the new names; the recordings are harvested under the tools' own.
        databases.update(harvest_recordings(_with_original_names(level1 + level2, renaming)))
        level3_databases = harvest_level3_tables(_items_with_original_names(level3, renaming))
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
    excluded: dict[str, str] = {}
    if twin is not None:  # a twin (apibank_lib.data.twins): the same tools under new names
        excluded = {e["key"]: e["reason"] for e in twin.get("excluded", [])}
        files.append(root / "twin.json")
    return Benchmark(
        root, official, level1, level2, level3, databases, level3_databases, metadata_l12, metadata_l3, test_data, files,
        renaming, excluded,
    )


# --- statistics --------------------------------------------------------------------------------------


def _histogram(values: Iterable[int]) -> dict[str, int]:
    c = Counter(values)
    return {str(k): c[k] for k in sorted(c)}


def level_statistics(bench: Benchmark, level: int) -> dict[str, Any]:
    """Counts for one level, with the original cutter's definitions.

    "Dialogues" are files at levels 1-2 and items at level 3; API-call samples
    include the duplicate samples the cutter makes when two API records are
    adjacent; "user turns" counts user utterances (the definition behind the
    paper's 914 turns).
    """
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
    calls = [t for t in turns if isinstance(t, ApiRecord)]
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
        "apis": sorted({t.api_name for t in calls}),
        "single_call_dialogues": sum(1 for n in calls_per if n == 1),
        "multi_call_dialogues": sum(1 for n in calls_per if n > 1),
        "calls_per_dialogue": _histogram(calls_per),
    }


def statistics(bench: Benchmark) -> dict[str, Any]:
    """Per-level and total statistics of a benchmark.

    Returns:
        ``{"levels": {"1": {...}, "2": {...}, "3": {...}}, "total": {...}}``; the
        total counts domains of the level-1/2 tool set among the APIs called.
    """
    levels = {str(lv): level_statistics(bench, lv) for lv in (1, 2, 3)}
    dialogues = sum(v["dialogues"] for v in levels.values())
    turns = sum(v["user_turns"] for v in levels.values())
    apis = sorted(set().union(*(set(v["apis"]) for v in levels.values())))
    domain_of = domains(LEVEL12)
    return {
        "levels": levels,
        "total": {
            "dialogues": dialogues,
            "turns": turns,
            "avg_turns_per_dialogue": round(turns / dialogues, 2) if dialogues else 0.0,
            "gold_calls": sum(v["gold_calls"] for v in levels.values()),
            "api_call_samples": sum(v["api_call_samples"] for v in levels.values()),
            "response_samples": sum(v["response_samples"] for v in levels.values()),
            "distinct_apis": len(apis),
            "single_call_dialogues": sum(v["single_call_dialogues"] for v in levels.values()),
            "multi_call_dialogues": sum(v["multi_call_dialogues"] for v in levels.values()),
            "domains": len({domain_of[a] for a in apis if a in domain_of}),
        },
    }
