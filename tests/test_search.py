"""ToolSearcher's embedding search, with the real packaged all-MiniLM-L6-v2 model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from apibank_lib.search import SentenceTransformerEmbedder, ToolIndex, search_text, split_camel
from apibank_lib.types import Param, ToolSchema


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


def _schema(name: str, description: str, token: bool = False) -> ToolSchema:
    inputs = {"token": Param("str", "login token")} if token else {}
    return ToolSchema(name, description, inputs, {})


SCHEMAS = [
    _schema("AddAlarm", "Set an alarm clock to ring at a given time.", token=True),
    _schema("BookHotel", "Reserve rooms in a hotel for given dates."),
    _schema("QueryStock", "Get the price of a stock on a given date."),
    _schema("Calculator", "Compute an arithmetic formula."),
    _schema("GetUserToken", "Log in with username and password and get a token."),
]


class CountingEmbedder:
    """Wraps the real embedder and counts how many texts it was asked to embed."""

    def __init__(self, inner: SentenceTransformerEmbedder) -> None:
        self.inner, self.name, self.calls = inner, inner.name, 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += len(texts)
        return self.inner.encode(texts)


def test_split_camel_and_search_text() -> None:
    assert split_camel("QueryHealthData") == "query health data"
    assert split_camel("DocumentQA") == "document q a"
    assert search_text(SCHEMAS[0]) == "add alarmSet an alarm clock to ring at a given time."


def test_lean_forward_equals_sentence_transformers(embedder: SentenceTransformerEmbedder) -> None:
    assert embedder._lean is not None
    for text in ["add reminder", "What is the price of NVDA on 2023-04-03? I'd like to know!", "x"]:
        ours = embedder.encode([text])[0]
        ref = embedder.model.encode([text], convert_to_numpy=True)[0]
        assert np.abs(ours - ref).max() < 1e-5


def test_search_ranks_the_obvious_api_first(embedder: SentenceTransformerEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APIBANK_CACHE", str(tmp_path))
    index = ToolIndex(SCHEMAS, embedder)
    for keywords, expected in [("set an alarm", "AddAlarm"), ("hotel reservation", "BookHotel"), ("stock price", "QueryStock"), ("calculate 3*4", "Calculator")]:
        ranked = index.search(keywords, k=3)
        assert ranked[0][0].name == expected
        assert ranked[0][1] >= ranked[1][1] >= ranked[2][1]
        assert -1.0 <= ranked[0][1] <= 1.0


def test_api_embeddings_are_cached_on_disk(embedder: SentenceTransformerEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APIBANK_CACHE", str(tmp_path))
    first = CountingEmbedder(embedder)
    ToolIndex(SCHEMAS, first)
    assert first.calls == len(SCHEMAS)
    assert len(list((tmp_path / "embeddings").glob("*.npy"))) == 1
    second = CountingEmbedder(embedder)
    index = ToolIndex(SCHEMAS, second)
    assert second.calls == 0  # read from the cache
    index.search("alarm")
    index.search("alarm")
    assert second.calls == 1  # the repeated query came from the in-memory cache


def test_changed_metadata_gets_a_new_cache_entry(embedder: SentenceTransformerEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APIBANK_CACHE", str(tmp_path))
    ToolIndex(SCHEMAS, embedder)
    changed = [SCHEMAS[0], _schema("BookHotel", "Book a room.")] + SCHEMAS[2:]
    ToolIndex(changed, embedder)
    assert len(list((tmp_path / "embeddings").glob("*.npy"))) == 2
