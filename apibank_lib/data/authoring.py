"""Build the bundled benchmark from readable sources, recording every gold result with our tools.

Dialogues are written as YAML under ``data/src/``::

    data/src/level-1/<topic>.yaml   level 1 (Call)            key ``dialogues``
    data/src/level-2/<topic>.yaml   level 2 (Retrieve+Call)   key ``dialogues``
    data/src/level-3/<topic>.yaml   level 3 (Plan+Retrieve+Call) key ``items``

A dialogue is an ``id`` in the official naming scheme (``<Api>-<Api>-level-<g>-<n>``)
and a list of turns, each one of ``user: text``, ``ai: text`` or ``api: call``
(call text in our syntax, e.g. ``AddAlarm(token='...', time='2023-04-03 07:00:00')``,
brackets optional). A level-3 item is a ``requirement``, a list of ``steps``
(calls) and the final ``response``.

:func:`build` executes every gold call in order, with state carried through the
dialogue (or item) exactly as the official gold was recorded, and writes the
official JSONL/JSON files: ``param_dict`` holds the arguments as text (lists in
Python notation), ``result`` the envelope our tool returned. Gold results are
therefore always produced by our tools and are regenerated when a tool changes.
A gold call that fails, or a search that does not retrieve the API called next,
stops the build with a message naming the source file, the dialogue and the turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apibank_lib.core.calls import format_value, parse_calls
from apibank_lib.core.errors import CallError, DataError, ParseError, ToolError
from apibank_lib.core.paths import PROJECT_ROOT
from apibank_lib.core.types import ApiCall, ApiRecord, Level3Item, Turn, Utterance
from apibank_lib.core.yamlfile import read_yaml
from apibank_lib.data.datasets import default_data_root
from apibank_lib.data.formats.official import LEVEL_DIRS, dialogue_jsonl, level3_json
from apibank_lib.env.databases import load_databases
from apibank_lib.env.sandbox import Sandbox
from apibank_lib.env.tools.registry import toolset_for_level
from apibank_lib.env.tools.searcher import retrieved_names

__all__ = ["SourceDialogue", "SourceItem", "load_sources", "build", "render_param", "default_source_root"]

LEVEL_FOLDERS = {1: "level-1", 2: "level-2", 3: "level-3"}


def default_source_root() -> Path:
    """``data/src`` next to the package."""
    return PROJECT_ROOT / "data" / "src"


@dataclass
class SourceDialogue:
    """A level-1/2 dialogue as written: ``turns`` are (role, text-or-call) pairs."""

    id: str
    level: int
    turns: list[tuple[str, str]]
    source: str


@dataclass
class SourceItem:
    """A level-3 item as written."""

    requirement: str
    steps: list[str]
    response: str
    source: str
    index: int = 0


@dataclass
class BuildReport:
    """What :func:`build` wrote."""

    dialogues: dict[int, int] = field(default_factory=dict)
    items: int = 0
    files: list[Path] = field(default_factory=list)


def render_param(value: Any) -> str:
    """An argument as the official ``param_dict`` holds it: text, lists and dicts in Python notation."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return str(value)
    return format_value(value)


def _parse_call(text: str, where: str) -> ApiCall:
    text = text.strip()
    if not text.startswith("["):
        text = f"[{text}]"
    try:
        calls = parse_calls(text)
    except ParseError as exc:
        raise DataError(f"{where}: {exc}") from exc
    if len(calls) != 1:
        raise DataError(f"{where}: expected exactly one call, found {len(calls)}")
    return calls[0]


def load_source_file(path: str | Path, level: int) -> list[SourceDialogue] | list[SourceItem]:
    """Read one source file of a level (1-2: dialogues, 3: items)."""
    path = Path(path)
    data = read_yaml(path) or {}
    if level == 3:
        if not isinstance(data, dict) or not isinstance(data.get("items"), list):
            raise DataError("a level-3 source needs a top-level 'items' list", path)
        items: list[SourceItem] = []
        for i, it in enumerate(data["items"]):
            ok = isinstance(it, dict) and isinstance(it.get("requirement"), str) and isinstance(it.get("response"), str)
            if not ok or not isinstance(it.get("steps"), list) or not it["steps"]:
                raise DataError(f"item #{i + 1} needs requirement, steps and response", path)
            items.append(SourceItem(it["requirement"], [str(s) for s in it["steps"]], it["response"], str(path), i))
        return items
    if not isinstance(data, dict) or not isinstance(data.get("dialogues"), list):
        raise DataError("a level-1/2 source needs a top-level 'dialogues' list", path)
    dialogues: list[SourceDialogue] = []
    for i, d in enumerate(data["dialogues"]):
        if not isinstance(d, dict) or not isinstance(d.get("id"), str) or not isinstance(d.get("turns"), list):
            raise DataError(f"dialogue #{i + 1} needs an 'id' and a 'turns' list", path)
        turns: list[tuple[str, str]] = []
        for j, t in enumerate(d["turns"]):
            if not isinstance(t, dict) or len(t) != 1 or next(iter(t)) not in ("user", "ai", "api"):
                raise DataError(f"{d['id']}, turn {j + 1}: write exactly one of user:, ai: or api:", path)
            role, text = next(iter(t.items()))
            if not isinstance(text, str) or not text.strip():
                raise DataError(f"{d['id']}, turn {j + 1}: the {role} turn is empty", path)
            turns.append((role, text.strip() if role == "api" else text))
        dialogues.append(SourceDialogue(d["id"], level, turns, str(path)))
    return dialogues


def load_sources(root: str | Path | None = None) -> tuple[list[SourceDialogue], list[SourceItem]]:
    """Read every source file (sorted by path) into dialogues and level-3 items."""
    root = Path(root) if root is not None else default_source_root()
    dialogues: list[SourceDialogue] = []
    items: list[SourceItem] = []
    seen: dict[str, str] = {}
    for level in (1, 2):
        for path in sorted((root / LEVEL_FOLDERS[level]).glob("*.yaml")):
            for d in load_source_file(path, level):
                if d.id in seen:  # type: ignore[union-attr]
                    raise DataError(f"dialogue id {d.id!r} is also used in {seen[d.id]}", path)
                seen[d.id] = str(path)  # type: ignore[union-attr]
                dialogues.append(d)  # type: ignore[arg-type]
    for path in sorted((root / LEVEL_FOLDERS[3]).glob("*.yaml")):
        items.extend(load_source_file(path, 3))  # type: ignore[arg-type]
    for n, item in enumerate(items):
        item.index = n
    return dialogues, items


class _GoldRunner:
    """Executes one dialogue's (or item's) gold calls in order and checks each search retrieved the next API.

    Args:
        box: the episode's sandbox (state carries from call to call).
        exempt: APIs that may come between a search and the API it found
            (at levels 1-2, the login that a token-taking API needs).
    """

    def __init__(self, box: Sandbox, exempt: tuple[str, ...]) -> None:
        self.box, self.exempt = box, exempt
        self.pending: tuple[list[str], str] | None = None

    def run(self, text: str, where: str) -> ApiRecord:
        """The gold record of one call (arguments as text, the result our tool returned); DataError if it cannot be gold."""
        call = _parse_call(text, where)
        if self.pending and call.name not in self.exempt:
            names, kw = self.pending
            if call.name not in names:
                raise DataError(f"{where}: ToolSearcher(keywords={kw!r}) retrieved {names}, but the next call is {call.name}")
            self.pending = None
        try:
            result = self.box.execute(call).to_dict()
        except (CallError, ToolError) as exc:
            raise DataError(f"{where}: {exc}") from exc
        if result["exception"] is not None:
            raise DataError(f"{where}: the gold call {call.name} raised: {result['exception']}")
        if call.name == "ToolSearcher":
            self.pending = (retrieved_names(result["output"]), str(call.args.get("keywords")))
        return ApiRecord(call.name, {k: render_param(v) for k, v in call.args.items()}, result)


def _record_dialogue(d: SourceDialogue, box: Sandbox) -> list[Turn]:
    turns: list[Turn] = []
    gold = _GoldRunner(box, exempt=("ToolSearcher", "GetUserToken"))
    for j, (role, text) in enumerate(d.turns):
        if role in ("user", "ai"):
            turns.append(Utterance("User" if role == "user" else "AI", text))
        else:
            turns.append(gold.run(text, f"{d.source}: {d.id}, turn {j + 1}"))
    return turns


def _record_item(item: SourceItem, box: Sandbox) -> Level3Item:
    gold = _GoldRunner(box, exempt=("ToolSearcher",))
    steps = [
        gold.run(text, f"{item.source}: item {item.index} ({item.requirement[:40]!r}), step {j + 1}")
        for j, text in enumerate(item.steps)
    ]
    return Level3Item(item.index, item.requirement, item.response, steps)


def record(dialogues: Iterable[SourceDialogue], items: Iterable[SourceItem], data_root: Path) -> tuple[dict[str, list[Turn]], list[Level3Item]]:
    """Execute all gold calls and return (dialogue id -> turns, level-3 items) without writing."""
    dbs = load_databases(data_root / "init_database")
    if (data_root / "recordings").is_dir():
        dbs.update(load_databases(data_root / "recordings"))
    lv3 = load_databases(data_root / "lv3_database")
    out = {d.id: _record_dialogue(d, Sandbox(toolset_for_level(d.level), dbs)) for d in dialogues}
    built = [_record_item(it, Sandbox(toolset_for_level(3), lv3)) for it in items]
    return out, built


def build(source_root: str | Path | None = None, data_root: str | Path | None = None, *, check: bool = False) -> BuildReport:
    """Build (or, with ``check``, verify) the benchmark files from the sources.

    Args:
        source_root: ``data/src`` by default.
        data_root: the benchmark root to write (``data/eval`` by default); its
            databases are the ones the gold calls run against.
        check: do not write; raise DataError if any built file differs from the one on disk.

    Returns:
        Counts and the files written (or checked).
    """
    data_root = Path(data_root) if data_root is not None else default_data_root()
    dialogues, items = load_sources(source_root)
    recorded, built_items = record(dialogues, items, data_root)
    report = BuildReport()
    wanted: dict[Path, str] = {}
    for d in dialogues:
        wanted[data_root / LEVEL_DIRS[d.level] / f"{d.id}.jsonl"] = dialogue_jsonl(recorded[d.id])
        report.dialogues[d.level] = report.dialogues.get(d.level, 0) + 1
    if built_items:
        wanted[data_root / "test-data" / "level-3.json"] = level3_json(built_items)
    report.items = len(built_items)
    existing = {p for lv in (1, 2) for p in (data_root / LEVEL_DIRS[lv]).glob("*.jsonl")}
    if check:
        stale = sorted(existing - set(wanted))
        differs = sorted(p for p, text in wanted.items() if not p.is_file() or p.read_text(encoding="utf-8") != text)
        if stale or differs:
            names = ", ".join(str(p.relative_to(data_root)) for p in (differs + stale)[:5])
            raise DataError(f"the built data is out of date with data/src ({len(differs)} differ, {len(stale)} stale: {names}); run `apibank build-data`")
    else:
        for p in existing - set(wanted):
            p.unlink()
        for p, text in wanted.items():
            p.parent.mkdir(parents=True, exist_ok=True)
            if not p.is_file() or p.read_text(encoding="utf-8") != text:
                p.write_text(text, encoding="utf-8")
    report.files = sorted(wanted)
    return report


def preview(path: str | Path, data_root: str | Path | None = None) -> str:
    """Execute one source file and render its dialogues with every call's result (for authors)."""
    path = Path(path)
    data_root = Path(data_root) if data_root is not None else default_data_root()
    level = {v: k for k, v in LEVEL_FOLDERS.items()}.get(path.parent.name)
    if level is None:
        raise DataError("a source file must sit in data/src/level-1, level-2 or level-3", path)
    loaded = load_source_file(path, level)
    dialogues = [d for d in loaded if isinstance(d, SourceDialogue)]
    items = [i for i in loaded if isinstance(i, SourceItem)]
    recorded, built = record(dialogues, items, data_root)
    lines: list[str] = []
    for d in dialogues:
        lines.append(f"=== {d.id} (level {d.level})")
        for turn in recorded[d.id]:
            if isinstance(turn, ApiRecord):
                lines.append(f"  API  {turn.api_name}({turn.args})")
                lines.append(f"       -> {json.dumps(turn.output, ensure_ascii=False)}")
            else:
                lines.append(f"  {turn.role:<4} {turn.text}")
    for item in built:
        lines.append(f"=== level 3: {item.requirement}")
        for st in item.steps:
            lines.append(f"  {st.api_name}({st.args})")
            lines.append(f"       -> {json.dumps(st.output, ensure_ascii=False)}")
        lines.append(f"  response: {item.response}")
    return "\n".join(lines)
