"""Load and validate a directory of database JSON files.

The layout is the official ``init_database/`` one: one ``<Name>.json`` file per
database, the file stem being the database name tools refer to. The same loader
reads our bundled databases, an official release's, our recordings of offline
services and our level-3 tables. Each file is checked against the record shape
that the tools reading it declare (``Tool.database_shape``), so a broken file
fails early with a message that names the file and the offending entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import DataError
from apibank_lib.env.shapes import Shape
from apibank_lib.env.tools.registry import database_shapes

__all__ = ["load_databases", "load_json", "validate_database"]


def load_json(path: str | Path) -> Any:
    """Read one JSON file; a syntax error becomes a DataError naming the file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot read the file: {exc.strerror}", path) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"invalid JSON: {exc.msg} (column {exc.colno})", path, exc.lineno) from exc


def validate_database(name: str, data: Any, path: str | Path | None = None, shapes: Mapping[str, Shape] | None = None) -> None:
    """Check ``data`` against the shape of database ``name`` (names no tool declares pass).

    Args:
        name: the database name (file stem).
        data: its content.
        path: the file, named in the error.
        shapes: database name -> shape; default: the shapes the registered tools declare.
    """
    shape = (database_shapes() if shapes is None else shapes).get(name)
    if shape is None:
        return
    problem = shape.problem(data, name)
    if problem:
        raise DataError(f"database {name!r} is malformed: {problem}", path)


def load_databases(directory: str | Path, names: Iterable[str] | None = None) -> dict[str, Any]:
    """Load every ``*.json`` in ``directory`` (or just ``names``) as databases, validated.

    Args:
        directory: a folder in the ``init_database/`` layout.
        names: database names to load; all files when None. A requested name
            without a file is an error.

    Returns:
        Database name -> data, in sorted name order.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError("database directory not found", directory)
    if names is None:
        paths = sorted(directory.glob("*.json"))
    else:
        paths = [directory / f"{n}.json" for n in sorted(set(names))]
        for p in paths:
            if not p.is_file():
                raise DataError(f"database file {p.name} is missing", directory)
    out: dict[str, Any] = {}
    for p in paths:
        data = load_json(p)
        validate_database(p.stem, data, p)
        out[p.stem] = data
    return out
