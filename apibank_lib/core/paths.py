"""Where the project's files and the user's caches are: one place for every path that is worked out.

Paths never depend on the working directory: the project root is found from this file, and the cache from the
environment (``$APIBANK_CACHE``) or the user's home.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "DATA_DIR",
    "NOTEBOOKS_DIR",
    "PROJECT_ROOT",
    "cache_dir",
    "figures_dir",
    "figures_root",
    "results_dir",
    "results_root",
    "runs_dir",
    "restored_environment",
    "save_atomically",
    "use_source",
]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
"""The project (or source tree) the package sits in: ``data/``, ``models/``, ``results/``, ``figures/``."""

NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"
"""The numbered notebooks and the explorer, each a ``.ipynb`` paired with a ``.py`` text file."""

DATA_DIR = PROJECT_ROOT / "data"
"""The bundled data: the evaluation benchmark, the training corpus, retrieval phrasings, errata."""


def runs_dir(path: str | Path | None = None) -> Path:
    """Where run folders go: ``path`` when given, else ``$APIBANK_RUNS``, else ``runs/`` in the project.

    The one default for the command line, the notebooks and the library (set ``APIBANK_RUNS`` to keep runs
    elsewhere, e.g. on a larger disk)."""
    if path is not None:
        return Path(path)
    return Path(os.environ.get("APIBANK_RUNS") or PROJECT_ROOT / "runs")


_source = "bundled"


def use_source(name: str) -> None:
    """Make ``name`` (a data source: ``bundled``, or an official release's folder name) the folder that
    :func:`results_dir` and :func:`figures_dir` give, so that results of one source never overwrite another's.
    Notebooks call it through :func:`apibank_lib.report.analysis.use_data` right after loading their data."""
    global _source
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"not a data source name: {name!r}")
    _source = name


def results_root() -> Path:
    """Where results go: ``$APIBANK_RESULTS``, else ``results/`` in the project (one folder per data source
    inside, and ``notebooks/`` for the executed notebooks)."""
    return Path(os.environ.get("APIBANK_RESULTS") or PROJECT_ROOT / "results")


def figures_root() -> Path:
    """Where figures go: ``$APIBANK_FIGURES``, else ``figures/`` in the project (one folder per data source)."""
    return Path(os.environ.get("APIBANK_FIGURES") or PROJECT_ROOT / "figures")


def results_dir(source: str | None = None) -> Path:
    """The tables' folder of a data source (default: the one in use, :func:`use_source`; ``bundled`` at first)."""
    return results_root() / (source or _source)


def figures_dir(source: str | None = None) -> Path:
    """The figures' folder of a data source (default: the one in use, :func:`use_source`)."""
    return figures_root() / (source or _source)


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


@contextmanager
def restored_environment(*names: str) -> Iterator[None]:
    """Inside the block, set ``os.environ[name]`` for any of ``names`` as needed (notebook kernels inherit this
    process's environment); afterwards each is what it was before, or unset again."""
    saved = {name: os.environ.get(name) for name in names}
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
