"""API search: embed keywords and API metadata, return the closest APIs by cosine similarity.

The original ToolSearcher reloaded its sentence-transformers model and re-embedded every API on each query (about
a second per query). Here the embedding model is loaded once per process (:mod:`apibank_lib.retrieval.embedders`), API
embeddings are computed once and cached on disk (keyed by the model and a hash of the metadata), and query
embeddings are kept in an in-memory cache that every index over the same embedding model shares (a query's vector
does not depend on the APIs it is compared with).

Only tool metadata (:class:`~apibank_lib.core.types.ToolSchema`) is known here; the ToolSearcher *tool* in
``apibank_lib.env.tools.searcher`` wraps this module, and ``apibank_lib.retrieval.retrievers`` offers other rankings.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.types import ToolSchema
from apibank_lib.retrieval.embedders import Embedder, default_embedder, embed_texts, embeddings_key

__all__ = ["ToolIndex", "default_searcher", "schemas_key", "search_text", "split_camel"]


def split_camel(name: str) -> str:
    """``QueryHealthData`` -> ``query health data`` (every capital becomes space + lower case).

    The original ToolSearcher's split of an API name, copied on purpose: the paper's search text, and so its
    recorded search results, were computed with it. The other CamelCase splits are not copies: a protocol's
    keyword rewrites (:func:`~apibank_lib.env.protocols.split_camel_words`, ours;
    :func:`~apibank_lib.env.protocols.split_before_capitals`, the original level-3 evaluator's, also copied) and the
    retrievers' query normalisation (``apibank_lib.retrieval.retrievers``, ours).
    """
    return re.sub(r"[A-Z]", lambda m: " " + m.group(0).lower(), name).strip()


def search_text(schema: ToolSchema) -> str:
    """The text embedded for an API: its split name immediately followed by its description.

    The original joins the two with no separator; we keep that, since it is what
    its gold search results were computed from.
    """
    return split_camel(schema.name) + schema.description


class _QueryCache:
    """Normalised query embeddings of one embedding model, most recent last (shared by its indexes)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self.lock = threading.Lock()


_QUERY_CACHES: weakref.WeakKeyDictionary[object, _QueryCache] = weakref.WeakKeyDictionary()
_QUERY_CACHES_LOCK = threading.Lock()


def _query_cache(embedder: Embedder, size: int) -> _QueryCache:
    """The query cache of ``embedder`` (one per embedder object; a private one where it cannot be weakly keyed)."""
    with _QUERY_CACHES_LOCK:
        try:
            cache = _QUERY_CACHES.get(embedder)
            if cache is None:
                cache = _QUERY_CACHES[embedder] = _QueryCache(size)
        except TypeError:  # not weakly referenceable or not hashable
            return _QueryCache(size)
    cache.size = max(cache.size, size)
    return cache


class ToolIndex:
    """Embedding index over a fixed list of APIs.

    Args:
        schemas: the candidate APIs, in a fixed order (the first maximum wins ties).
        embedder: the embedding model.
        use_disk_cache: keep API embeddings in :func:`cache_dir` between processes.
        query_cache_size: how many query embeddings to keep in memory (in the cache every index over ``embedder``
            shares; the largest size asked for holds).
    """

    def __init__(
        self,
        schemas: Sequence[ToolSchema],
        embedder: Embedder,
        *,
        use_disk_cache: bool = True,
        query_cache_size: int = 4096,
    ) -> None:
        if not schemas:
            raise ConfigError("a ToolIndex needs at least one API")
        self.schemas = list(schemas)
        self.embedder = embedder
        self._queries = _query_cache(embedder, query_cache_size)
        texts = [search_text(s) for s in self.schemas]
        self.key = embeddings_key(texts, embedder)
        self.matrix = embed_texts(texts, embedder, use_disk_cache=use_disk_cache)

    def embed_query(self, keywords: str) -> np.ndarray:
        """The normalised embedding of a query (cached)."""
        cache = self._queries
        with cache.lock:
            hit = cache.vectors.get(keywords)
            if hit is not None:
                cache.vectors.move_to_end(keywords)
                return hit
        v = np.asarray(self.embedder.encode([keywords]), dtype=np.float32)[0]
        norm = float(np.linalg.norm(v))
        v = v / norm if norm else v
        with cache.lock:
            cache.vectors[keywords] = v
            if len(cache.vectors) > cache.size:
                cache.vectors.popitem(last=False)
        return v

    def forget_queries(self) -> None:
        """Empty the in-memory cache of query embeddings, every index's over this embedding model (benchmarks and
        :func:`~apibank_lib.report.retrieval.rank_queries` time new queries this way)."""
        with self._queries.lock:
            self._queries.vectors.clear()

    def scores(self, keywords: str) -> np.ndarray:
        """Cosine similarity of ``keywords`` with every candidate, in candidate order."""
        return self.matrix @ self.embed_query(keywords)

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        """The ``k`` best APIs for ``keywords``, best first; ties keep candidate order."""
        s = self.scores(keywords)
        order = np.argsort(-s, kind="stable")[: max(1, k)]
        return [(self.schemas[i], float(s[i])) for i in order]


_INDEXES: dict[tuple[str, str], ToolIndex] = {}
_GLOBAL_LOCK = threading.Lock()


def schemas_key(schemas: Sequence[ToolSchema]) -> str:
    """A hash of a candidate list (names, descriptions, parameters, order): the key of the per-process caches."""
    return hashlib.sha256(json.dumps([s.to_dict() for s in schemas], sort_keys=True).encode()).hexdigest()


def default_searcher(schemas: Sequence[ToolSchema], embedder: Embedder | None = None) -> ToolIndex:
    """A shared ToolIndex for these candidates and embedder (built once per process)."""
    embedder = embedder or default_embedder()
    key = (embedder.name, schemas_key(schemas))
    with _GLOBAL_LOCK:
        index = _INDEXES.get(key)
    if index is None:
        index = ToolIndex(schemas, embedder)
        with _GLOBAL_LOCK:
            index = _INDEXES.setdefault(key, index)
    return index
