"""Reading a YAML data file with errors that name the file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from apibank_lib.core.errors import DataError

__all__ = ["read_yaml"]


def read_yaml(path: str | Path) -> Any:
    """The parsed content of a YAML file (``yaml.safe_load``: data only, nothing executed).

    Raises:
        DataError: the file cannot be read, or is not YAML (with the line of the problem).
    """
    path = Path(path)
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise DataError(f"invalid YAML: {exc}", path, None if line is None else line + 1) from exc
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror or exc}", path) from exc
