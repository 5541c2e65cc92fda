"""Reading ToolRL's processed API-Bank files (a user's copy of ToolRL's ``benchmarks/API-Bank/`` folder).

ToolRL and the small-model papers that follow it report API-Bank on these files, not on the release itself. The
folder holds ``level-1-api_processed.json``, ``level-2-api_processed.json`` and ``level-3-api_processed.json``, each
a JSON list of entries with four keys:

* ``system``: the system prompt (the tools it offers and the answer format asked for), as text;
* ``user``: the dialogue so far, as text, ending with the request for one call;
* ``answer``: the gold call, ``{"name": str, "parameters": {str: str}}``, or a list of one such object;
* ``other``: where it comes from in the release (``{"file", "id"}`` at levels 1-2, ``{"sample_id", "api_id"}``
  at level 3).

:func:`load_toolrl` reads them into :class:`ToolRLEntry` records; anything of the wrong shape is a
:class:`~apibank_lib.core.errors.DataError` naming the file, the entry's index and the key. The files' text is never
copied into the project: like a release, a user points us at a copy (``--data``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import DataError

__all__ = ["FILES", "ToolRLEntry", "is_toolrl_folder", "load_toolrl"]

FILES = {level: f"level-{level}-api_processed.json" for level in (1, 2, 3)}
"""The file of each level, by level."""


@dataclass(frozen=True)
class ToolRLEntry:
    """One entry of a ToolRL file: a prompt and the one call it asks for.

    Attributes:
        level: 1, 2 or 3 (the file it came from).
        index: its position in the file (from 0).
        system, user: the two messages the model is given, in this order.
        gold_name, gold_parameters: the gold call (parameter values as the file writes them: strings).
        source: the ``other`` field: where in the release the entry comes from.
    """

    level: int
    index: int
    system: str
    user: str
    gold_name: str
    gold_parameters: dict[str, Any]
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """A stable id, ``TR<level>/<index>``."""
        return f"TR{self.level}/{self.index}"

    @property
    def dialogue_id(self) -> str:
        """The release dialogue the entry comes from (the file's stem at levels 1-2, the item's index at level 3):
        what an interval resamples and a subset draws whole."""
        if "file" in self.source:
            return str(self.source["file"]).removesuffix(".jsonl")
        if "sample_id" in self.source:
            return str(self.source["sample_id"])
        return f"entry-{self.index}"

    def gold(self) -> dict[str, Any]:
        """The gold call as ToolRL writes one, ``{"name", "parameters"}``."""
        return {"name": self.gold_name, "parameters": dict(self.gold_parameters)}


def is_toolrl_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder holding ToolRL's three processed API-Bank files."""
    folder = Path(path)
    return folder.is_dir() and all((folder / name).is_file() for name in FILES.values())


def _gold(answer: Any, path: Path, index: int) -> tuple[str, dict[str, Any]]:
    if isinstance(answer, list):
        if len(answer) != 1:
            raise DataError(f"entry {index}: 'answer' must hold exactly one call, found {len(answer)}", path)
        answer = answer[0]
    call = answer
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise DataError(f"entry {index}: 'answer' must be a call {{'name': str, 'parameters': dict}}", path)
    params = call.get("parameters", {})
    if not isinstance(params, dict):
        raise DataError(f"entry {index}: the gold call's 'parameters' must be an object, found {type(params).__name__}", path)
    return call["name"], params


def _entries(path: Path, level: int) -> list[ToolRLEntry]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read the file: {exc}", path) from exc
    except json.JSONDecodeError as exc:
        raise DataError(f"not valid JSON: {exc.msg}", path, exc.lineno) from exc
    if not isinstance(data, list):
        raise DataError(f"a ToolRL file must be a JSON list of entries, found {type(data).__name__}", path)
    out = []
    for index, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise DataError(f"entry {index} is not an object", path)
        for key in ("system", "user"):
            if not isinstance(entry.get(key), str):
                raise DataError(f"entry {index}: '{key}' must be text", path)
        if "answer" not in entry:
            raise DataError(f"entry {index}: no 'answer'", path)
        name, params = _gold(entry["answer"], path, index)
        other = entry.get("other", {})
        out.append(
            ToolRLEntry(level, index, entry["system"], entry["user"], name, params, other if isinstance(other, dict) else {})
        )
    return out


def load_toolrl(folder: str | Path, levels: tuple[int, ...] = (1, 2, 3)) -> dict[int, list[ToolRLEntry]]:
    """The entries of a ToolRL folder, by level, in file order.

    Raises:
        DataError: a file missing, unreadable, or an entry of the wrong shape (file and entry index named).
    """
    root = Path(folder)
    out: dict[int, list[ToolRLEntry]] = {}
    for level in levels:
        path = root / FILES[level]
        if not path.is_file():
            raise DataError(f"no {FILES[level]} here: not a ToolRL API-Bank folder", root)
        out[level] = _entries(path, level)
    return out
