"""Fixtures shared by the tests: the bundled benchmark and the official-layout fixture release."""

from __future__ import annotations

from pathlib import Path

import pytest

from apibank_lib.data.datasets import Benchmark, load_benchmark

OFFICIAL_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "official"
"""A tiny release in the official API-Bank layout, written by us (see fixtures/build_official_fixture.py)."""


@pytest.fixture(scope="session")
def bench() -> Benchmark:
    """Our bundled benchmark (loaded once per test session; treat it as read-only)."""
    return load_benchmark()


@pytest.fixture(scope="session")
def release() -> Benchmark:
    """The official-layout fixture release (loaded once per test session; treat it as read-only)."""
    return load_benchmark(OFFICIAL_FIXTURE)


@pytest.fixture(autouse=True, scope="session")
def _runs_outside_the_project(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Runs a test makes without naming a folder go to a temporary folder, never to the project's ``runs/`` (the
    default since there is one; a test that needs another sets ``APIBANK_RUNS`` itself)."""
    import os

    os.environ["APIBANK_RUNS"] = str(tmp_path_factory.mktemp("default-runs"))
