"""The notebooks' profiles and default models (what ``apibank reproduce`` runs), without executing a notebook."""

from __future__ import annotations

from typing import Any

import pytest

from apibank_lib import load_benchmark
from apibank_lib import packaged_models, reproduce
from apibank_lib.reproduce import DEFAULT_MODELS, INSTRUCT_MODELS, PROFILES


def test_every_limited_model_is_a_default_model() -> None:
    for profile in PROFILES.values():
        assert set(profile["MODEL_LIMITS"]) <= set(DEFAULT_MODELS)


def test_the_quick_profile_gives_the_small_instruct_model_sixty_api_samples_per_level() -> None:
    # The bar: an interval over at least 60 API-call samples at each level.
    bench = load_benchmark()
    cap = PROFILES["quick"]["MODEL_LIMITS"]["llamacpp:qwen2.5-coder-0.5b"]
    for level in (1, 2, 3):
        first = bench.samples(level)[:cap]
        assert sum(s.kind == "api" for s in first) >= 60, level


def test_the_profiles_share_the_commands_step_limit() -> None:
    # Same step limit as `apibank run`, so a profile's runs land in the folders the command made.
    from apibank_lib.runs import RunConfig

    default = RunConfig("oracle").max_steps
    assert {p["MAX_STEPS"] for p in PROFILES.values()} == {default}


def _status(installed: bool) -> list[dict[str, Any]]:
    return [{"name": name, "installed": installed, "assembled": False} for name in packaged_models.PACKAGED_MODELS]


def test_instruct_models_without_their_packages_are_skipped_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packaged_models, "model_status", lambda: _status(False))
    lines: list[str] = []
    chosen = reproduce._available_defaults(lines.append)
    assert chosen == [m for m in DEFAULT_MODELS if m not in INSTRUCT_MODELS]
    assert len(lines) == len(INSTRUCT_MODELS)
    assert all("pip install 'apibank_lib[qwen-" in line for line in lines)


def test_installed_instruct_models_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packaged_models, "model_status", lambda: _status(True))
    lines: list[str] = []
    assert reproduce._available_defaults(lines.append) == list(DEFAULT_MODELS)
    assert lines == []
