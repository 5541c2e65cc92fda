"""Tool retrievers behind one protocol: what ToolSearcher may search with, chosen by name.

Every retriever is built over a fixed list of candidate APIs and answers
``search(keywords, k) -> [(ToolSchema, score), ...]`` best first, the shape the
sandbox's ToolSearcher expects, so a level-2/3 run can switch retrievers.

* ``embedding``: the paper's recipe: each API's name split into words followed by
  its description, embedded with the default sentence-embedding model
  (all-MiniLM-L6-v2); cosine similarity with the embedded keywords.
* ``bm25``: BM25-Okapi (the ``rank_bm25`` package) over the words of the name,
  the description and the parameter names, with the query normalised.
* ``embedding-norm``: the paper's recipe with the query normalised first.
* ``fields``: embeddings of two fields per API (the paper's text; the name with
  the parameter names and descriptions), the better of the two counting.
* ``hybrid``: reciprocal rank fusion of ``embedding-norm`` and ``bm25``.

Query normalisation (:func:`normalize_query`) splits CamelCase words, lower-cases,
and drops dates, times, numbers and filler words ("please", "can you", "my" ...),
which carry no information about which API is meant.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from apibank_lib.errors import ConfigError
from apibank_lib.types import ToolSchema

__all__ = [
    "Retriever",
    "RETRIEVERS",
    "DEFAULT_RETRIEVER",
    "make_retriever",
    "shared_retriever",
    "normalize_query",
    "api_words",
    "EmbeddingRetriever",
    "BM25Retriever",
    "FieldsRetriever",
    "HybridRetriever",
]


class Retriever(Protocol):
    """Ranks a fixed list of candidate APIs for a keyword query."""

    name: str

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        """The ``k`` best APIs for ``keywords``, best first, with their scores."""
        ...


# --- query normalisation ------------------------------------------------------------------------------

_FILLER = frozenset(
    """a an the and or but so to of in on at for with from by about into as is are was were be been am do does did
    i me my mine we us our you your u ur he she it they them their this that these those there here
    please pls plz can could would will shall should may might must want wanted need needs like
    hi hello hey thanks thank ok okay just some any also too very really quite now today tomorrow tonight yesterday
    what which who whom when where how why if then than let lets get got give tell show help know make
    am pm jan feb mar apr jun jul aug sep sept oct nov dec january february march april may june july august
    september october november december monday tuesday wednesday thursday friday saturday sunday
    tmrw tmr pls thx ty""".split()
)
_DATE = re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}[/.]\d{1,2}(?:[/.]\d{2,4})?\b|\b\d{1,2}:\d{2}(?::\d{2})?\b")
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)*(?:st|nd|rd|th|am|pm|k|m|h)?\b")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[a-z]+")


def _camel_split(text: str) -> str:
    return _CAMEL.sub(" ", text)


def normalize_query(text: str) -> str:
    """Keywords without what cannot name an API: CamelCase split, lower case, no dates, numbers or filler words.

    Falls back to the lower-cased, CamelCase-split text when nothing would be left.
    """
    split = _camel_split(text)
    no_dates = _NUMBER.sub(" ", _DATE.sub(" ", split.lower()))
    words = [w for w in _WORD.findall(no_dates) if w not in _FILLER and len(w) > 1]
    return " ".join(words) if words else " ".join(_WORD.findall(split.lower())) or text.strip()


def api_words(schema: ToolSchema) -> list[str]:
    """The words BM25 indexes for an API: its split name, description and parameter names."""
    text = " ".join(
        [_camel_split(schema.name), schema.description]
        + [_camel_split(p).replace("_", " ") for p in schema.input_parameters]
    )
    return _WORD.findall(text.lower())


# --- retrievers ----------------------------------------------------------------------------------------


class EmbeddingRetriever:
    """The paper's recipe: cosine similarity of sentence embeddings (the split name followed by the description).

    Args:
        schemas: the candidates, in a fixed order (ties keep it).
        embedder: the sentence-embedding model (default: the packaged all-MiniLM-L6-v2).
        normalize: normalise queries first (:func:`normalize_query`).
    """

    def __init__(self, schemas: Sequence[ToolSchema], embedder: Any = None, *, normalize: bool = False) -> None:
        from apibank_lib.search import default_searcher

        self.name = "embedding-norm" if normalize else "embedding"
        self.schemas = list(schemas)
        self.index = default_searcher(self.schemas, embedder)
        self.normalize = normalize

    def scores(self, keywords: str) -> np.ndarray:
        """Cosine similarity with every candidate, in candidate order."""
        return self.index.scores(normalize_query(keywords) if self.normalize else keywords)

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        return _top(self.schemas, self.scores(keywords), k)


class BM25Retriever:
    """BM25-Okapi (``rank_bm25``) over each API's name words, description and parameter names; normalised queries."""

    name = "bm25"

    def __init__(self, schemas: Sequence[ToolSchema], embedder: Any = None) -> None:
        from rank_bm25 import BM25Okapi

        self.schemas = list(schemas)
        self.bm25 = BM25Okapi([api_words(s) for s in self.schemas])

    def scores(self, keywords: str) -> np.ndarray:
        """BM25 score of every candidate, in candidate order."""
        return np.asarray(self.bm25.get_scores(_WORD.findall(normalize_query(keywords))), dtype=np.float64)

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        return _top(self.schemas, self.scores(keywords), k)


def _parameter_text(schema: ToolSchema) -> str:
    params = "; ".join(f"{p.replace('_', ' ')}: {v.description}" for p, v in schema.input_parameters.items())
    return f"{_camel_split(schema.name).lower()}. {params}" if params else _camel_split(schema.name).lower()


class FieldsRetriever:
    """Two embedded fields per API, the paper's text and the parameters' text; an API scores its better field."""

    name = "fields"

    def __init__(self, schemas: Sequence[ToolSchema], embedder: Any = None) -> None:
        from apibank_lib.search import default_embedder, default_searcher

        self.schemas = list(schemas)
        self.paper = default_searcher(self.schemas, embedder)
        embedder = embedder or default_embedder()
        texts = [_parameter_text(s) for s in self.schemas]
        m = np.asarray(embedder.encode(texts), dtype=np.float32)
        self.params = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)

    def scores(self, keywords: str) -> np.ndarray:
        """The better of the two fields' cosine similarities, per candidate."""
        q = self.paper.embed_query(normalize_query(keywords))
        return np.maximum(self.paper.matrix @ q, self.params @ q)

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        return _top(self.schemas, self.scores(keywords), k)


class HybridRetriever:
    """Reciprocal rank fusion of the normalised embedding search and BM25: ``sum 1 / (k0 + rank)``.

    Args:
        k0: the fusion constant (60 in the original RRF paper; smaller trusts the top ranks more).
        weight: the embedding ranking's weight against BM25's (1.0 = equal).
    """

    name = "hybrid"

    def __init__(self, schemas: Sequence[ToolSchema], embedder: Any = None, *, k0: float = 60.0, weight: float = 1.0) -> None:
        self.schemas = list(schemas)
        self.dense = EmbeddingRetriever(self.schemas, embedder, normalize=True)
        self.sparse = BM25Retriever(self.schemas)
        self.k0, self.weight = k0, weight

    def scores(self, keywords: str) -> np.ndarray:
        """The fused score of every candidate, in candidate order."""
        fused = np.zeros(len(self.schemas))
        for scores, w in ((self.dense.scores(keywords), self.weight), (self.sparse.scores(keywords), 1.0)):
            ranks = np.empty(len(scores))
            ranks[np.argsort(-scores, kind="stable")] = np.arange(1, len(scores) + 1)
            fused += w / (self.k0 + ranks)
        return fused

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        return _top(self.schemas, self.scores(keywords), k)


def _top(schemas: list[ToolSchema], scores: np.ndarray, k: int) -> list[tuple[ToolSchema, float]]:
    order = np.argsort(-scores, kind="stable")[: max(1, k)]
    return [(schemas[i], float(scores[i])) for i in order]


RETRIEVERS: dict[str, Callable[..., Retriever]] = {
    "embedding": lambda schemas, embedder=None: EmbeddingRetriever(schemas, embedder),
    "embedding-norm": lambda schemas, embedder=None: EmbeddingRetriever(schemas, embedder, normalize=True),
    "bm25": BM25Retriever,
    "fields": FieldsRetriever,
    "hybrid": HybridRetriever,
}
"""Retriever name -> constructor ``(schemas, embedder=None)``."""

DEFAULT_RETRIEVER = "embedding"
"""The retriever ToolSearcher uses unless a run names another."""


def make_retriever(name: str, schemas: Sequence[ToolSchema], embedder: Any = None) -> Retriever:
    """Build the named retriever over ``schemas``."""
    try:
        factory = RETRIEVERS[name]
    except KeyError:
        raise ConfigError(f"unknown retriever {name!r}; choose one of {', '.join(RETRIEVERS)}") from None
    return factory(schemas, embedder)


_SHARED: dict[tuple[str, str], Retriever] = {}


def shared_retriever(name: str, schemas: Sequence[ToolSchema]) -> Retriever:
    """The named retriever over these candidates with the default embedder, built once per process.

    Sandboxes are made per sample; building a retriever (an index, embeddings)
    once per candidate list keeps that cheap.
    """
    from apibank_lib.search import schemas_key

    key = (name, schemas_key(schemas))
    found = _SHARED.get(key)
    if found is None:
        found = _SHARED.setdefault(key, make_retriever(name, schemas))
    return found

