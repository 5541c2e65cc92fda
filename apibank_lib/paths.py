"""Where the project's files and the user's caches are: one place for every path that is worked out.

Paths never depend on the working directory: the project root is found from this file, and the cache from the
environment (``$APIBANK_CACHE``) or the user's home.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["NOTEBOOKS_DIR", "PROJECT_ROOT", "cache_dir", "save_atomically"]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
"""The project (or source tree) the package sits in: ``data/``, ``models/``, ``results/``, ``figures/``."""

NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"
"""The numbered notebooks and the explorer, each a ``.ipynb`` paired with a ``.py`` text file."""


def cache_dir() -> Path:
    """The user's cache (embeddings, encoder graphs, assembled models, converted weights): ``$APIBANK_CACHE`` or
    ``~/.cache/apibank_lib``."""
    return Path(os.environ.get("APIBANK_CACHE", Path.home() / ".cache" / "apibank_lib"))


def save_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """``write(tmp)`` then rename onto ``path`` (readers never see half a file); a read-only cache only costs
    recomputing next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp{path.suffix}")
        write(tmp)
        os.replace(tmp, path)
    except OSError:
        pass
