"""Readers and writers of the official API-Bank layout.

Our bundled benchmark and an official release share this layout::

    <root>/lv1-lv2-samples/level-1-given-desc/*.jsonl   level 1 (Call) dialogues
    <root>/lv1-lv2-samples/level-2-toolsearcher/*.jsonl level 2 (Retrieve+Call) dialogues
    <root>/test-data/level-3.json                        level 3 (Plan+Retrieve+Call) items
    <root>/init_database/*.json                          level-1/2 databases

An official release also has ``apis/`` and ``lv3_apis/`` (the original tool
sources, read as text for their descriptions, never imported) and, in older
snapshots, the rendered ``test-data/level-{1,2}-{api,response}.json`` files.
Our bundled benchmark adds ``recordings/`` (recorded answers of online
services) and ``lv3_database/`` (the level-3 tables); for an official release
both are harvested from its own gold results (:mod:`apibank_lib.data.formats.harvest`).

A dialogue file holds one JSON object per line: ``{"role": "User"|"AI", "text"}``
or ``{"role": "API", "api_name", "param_dict", "result"}`` where ``result`` is
the envelope ``{api_name, input, output, exception}``. ``level-3.json`` is an
array of ``{requirement, response, apis: [{api_name, input, output}]}`` whose
``output`` is the whole envelope.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import DataError
from apibank_lib.core.types import ApiRecord, Dialogue, Level3Item, Param, ToolSchema, Turn, Utterance
from apibank_lib.env.databases import load_json

__all__ = [
    "LEVEL_DIRS",
    "LEVEL3_CANDIDATES",
    "TEST_DATA_FILES",
    "is_official_release",
    "level3_path",
    "load_dialogue_file",
    "load_dialogues",
    "load_level3",
    "load_test_data",
    "read_api_metadata",
    "turn_record",
    "dialogue_jsonl",
    "level3_json",
]

LEVEL_DIRS = {1: "lv1-lv2-samples/level-1-given-desc", 2: "lv1-lv2-samples/level-2-toolsearcher"}
"""Where the dialogues of levels 1 and 2 live under a data root."""

LEVEL3_CANDIDATES = ("test-data/level-3.json", "test_data/level-3.json", "json_test_data/level-3.json")
"""Where releases put their level-3 items (the folder name varies between snapshots)."""

TEST_DATA_FILES = (
    "level-1-api",
    "level-1-response",
    "level-2-api",
    "level-2-response",
    "level-3-batch-inf",
    "level-3-batch-inf-response",
)
"""The rendered test-data files an official release may ship."""


def is_official_release(root: str | Path) -> bool:
    """True for the root of an official API-Bank release (it carries the original tool sources)."""
    root = Path(root)
    return (root / "apis").is_dir() and (root / "lv1-lv2-samples").is_dir() and (root / "init_database").is_dir()


def level3_path(root: str | Path) -> Path | None:
    """The level-3 items file of a data root, or None."""
    for rel in LEVEL3_CANDIDATES:
        if (Path(root) / rel).is_file():
            return Path(root) / rel
    return None


# --- dialogues -----------------------------------------------------------------------------------


def _turn_from_record(rec: Any, path: Path, line: int) -> Turn:
    if not isinstance(rec, dict):
        raise DataError(f"expected a JSON object, found {type(rec).__name__}", path, line)
    role = rec.get("role")
    if role in ("User", "AI"):
        text = rec.get("text")
        if not isinstance(text, str):
            raise DataError(f"a {role} record needs a text string", path, line)
        return Utterance(role, text, line)
    if role == "API":
        name, params, result = rec.get("api_name"), rec.get("param_dict"), rec.get("result")
        if not isinstance(name, str) or not name:
            raise DataError("an API record needs an api_name", path, line)
        if not isinstance(params, dict):
            raise DataError(f"the API record of {name} needs a param_dict object", path, line)
        if not isinstance(result, dict) or not {"input", "output", "exception"} <= set(result):
            raise DataError(f"the API record of {name} needs a result with input, output and exception", path, line)
        return ApiRecord(name, params, result, line)
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
        turns.append(_turn_from_record(rec, path, i))
    return Dialogue(path.stem, level, turns, str(path))


def load_dialogues(directory: str | Path, level: int) -> list[Dialogue]:
    """Every ``*.jsonl`` dialogue of a folder, sorted by file name."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError("dialogue folder not found", directory)
    return [load_dialogue_file(p, level) for p in sorted(directory.glob("*.jsonl"))]


def turn_record(turn: Turn) -> dict[str, Any]:
    """The official JSONL record of one turn."""
    if isinstance(turn, ApiRecord):
        return {"role": "API", "api_name": turn.api_name, "param_dict": turn.args, "result": turn.result}
    return {"role": turn.role, "text": turn.text}


def dialogue_jsonl(turns: list[Turn]) -> str:
    """A dialogue file's text: one JSON record per line (non-ASCII kept as is)."""
    return "".join(json.dumps(turn_record(t), ensure_ascii=False) + "\n" for t in turns)


# --- level 3 -------------------------------------------------------------------------------------


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
        steps: list[ApiRecord] = []
        for j, st in enumerate(item["apis"]):
            ok = isinstance(st, dict) and isinstance(st.get("api_name"), str) and isinstance(st.get("input"), dict)
            if not ok or not isinstance(st.get("output"), dict) or "output" not in st["output"]:
                raise DataError(f"{where}, step {j} needs api_name, an input object and the full result envelope", path)
            steps.append(ApiRecord(st["api_name"], st["input"], st["output"]))
        items.append(Level3Item(i, item["requirement"], item["response"], steps))
    return items


def level3_json(items: list[Level3Item]) -> str:
    """The text of ``level-3.json`` for these items (indented by one space, non-ASCII kept)."""
    records = [
        {
            "requirement": it.requirement,
            "response": it.response,
            "apis": [{"api_name": st.api_name, "input": st.args, "output": st.result} for st in it.steps],
        }
        for it in items
    ]
    return json.dumps(records, indent=1, ensure_ascii=False) + "\n"


# --- rendered test data and API descriptions -------------------------------------------------------


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
