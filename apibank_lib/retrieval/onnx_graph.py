"""A BERT sentence encoder as an ONNX graph, built from its weight arrays, for ONNX Runtime.

The graph embeds one text: token ids in, the mean of the last layer's token
vectors out (not normalised). It is what
:class:`~apibank_lib.retrieval.minilm.MiniLMEmbedder` computes in numpy, written as ONNX
operators (LayerNormalization, MatMul, Softmax, Erf for the exact GELU), so
ONNX Runtime can fuse and run it: a short query embeds in about 3 ms on one
core instead of 7 to 10. Built in memory from the arrays already loaded; no
export step, no torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["bert_mean_pooling_graph", "GRAPH_VERSION"]

GRAPH_VERSION = 1
"""Bumped whenever the graph this module builds changes, so that cached copies of older graphs are not used."""

_OPSET = 17  # the first with LayerNormalization


def bert_mean_pooling_graph(
    word: np.ndarray,
    position: np.ndarray,
    token_type: np.ndarray,
    embedding_norm: tuple[np.ndarray, np.ndarray],
    layers: Sequence[tuple[np.ndarray, ...]],
    heads: int,
    eps: float,
) -> bytes:
    """The serialised ONNX model of a BERT encoder with mean pooling, for one text.

    Args:
        word, position: the word and position embedding tables, ``(vocabulary, dim)`` and ``(positions, dim)``.
        token_type: the type-0 token-type embedding, ``(dim,)``.
        embedding_norm: the embedding LayerNorm's weight and bias.
        layers: per layer, in :class:`~apibank_lib.retrieval.minilm.MiniLMEmbedder`'s layout: the stacked query, key and
            value weights ``(3 dim, dim)`` and bias, the attention output weight and bias, its LayerNorm weight
            and bias, the intermediate weight and bias, the output weight and bias, its LayerNorm weight and bias
            (weights ``(out, in)``, vectors of any shape holding ``out`` values).
        heads: attention heads.
        eps: the LayerNorm epsilon.

    Input ``ids`` (int64, ``(tokens,)``); output ``vector`` (float32, ``(dim,)``).
    """
    from onnx import TensorProto, helper, numpy_helper

    dim = word.shape[1]
    head_dim = dim // heads
    initializers: list[Any] = []
    nodes: list[Any] = []
    counter = iter(range(1 << 30))

    def const(name: str, value: Any) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def vec(name: str, value: np.ndarray) -> str:
        return const(name, np.asarray(value, dtype=np.float32).reshape(-1))

    def op(kind: str, inputs: list[str], **attrs: Any) -> str:
        out = f"t{next(counter)}"
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def linear(x: str, name: str, weight: np.ndarray, bias: np.ndarray) -> str:
        w = const(f"{name}.w", np.asarray(weight, dtype=np.float32).T)  # x (tokens, in) @ w (in, out)
        return op("Add", [op("MatMul", [x, w]), vec(f"{name}.b", bias)])

    def layer_norm(x: str, name: str, weight: np.ndarray, bias: np.ndarray) -> str:
        return op("LayerNormalization", [x, vec(f"{name}.g", weight), vec(f"{name}.b", bias)], axis=-1, epsilon=eps)

    const("word", np.asarray(word, dtype=np.float32))
    const("position", np.asarray(position, dtype=np.float32))
    vec("token_type", token_type)
    const("zero", np.array([0], np.int64))
    const("split_heads", np.array([-1, heads, head_dim], np.int64))
    const("join_heads", np.array([-1, dim], np.int64))
    const("qkv_sizes", np.array([dim, dim, dim], np.int64))
    const("scale", np.array(1.0 / math.sqrt(head_dim), np.float32))
    const("inv_sqrt2", np.array(1.0 / math.sqrt(2.0), np.float32))
    const("half", np.array(0.5, np.float32))
    const("onef", np.array(1.0, np.float32))

    first_rows = op("Slice", ["position", "zero", op("Shape", ["ids"]), "zero"])  # positions 0 .. tokens-1
    x = op("Add", [op("Add", [op("Gather", ["word", "ids"]), first_rows]), "token_type"])
    x = layer_norm(x, "embeddings", *embedding_norm)
    for i, (qkv_w, qkv_b, out_w, out_b, ln1_w, ln1_b, in_w, in_b, out2_w, out2_b, ln2_w, ln2_b) in enumerate(layers):
        name = f"layer{i}"
        qkv = linear(x, f"{name}.qkv", qkv_w, qkv_b)
        q, k, v = (f"{name}.{part}" for part in ("q", "k", "v"))
        nodes.append(helper.make_node("Split", [qkv, "qkv_sizes"], [q, k, v], axis=1))
        q = op("Transpose", [op("Reshape", [q, "split_heads"])], perm=[1, 0, 2])  # (heads, tokens, head_dim)
        k = op("Transpose", [op("Reshape", [k, "split_heads"])], perm=[1, 2, 0])  # (heads, head_dim, tokens)
        v = op("Transpose", [op("Reshape", [v, "split_heads"])], perm=[1, 0, 2])
        weights = op("Softmax", [op("Mul", [op("MatMul", [q, k]), "scale"])], axis=-1)
        context = op("Reshape", [op("Transpose", [op("MatMul", [weights, v])], perm=[1, 0, 2]), "join_heads"])
        x = layer_norm(op("Add", [linear(context, f"{name}.out", out_w, out_b), x]), f"{name}.ln1", ln1_w, ln1_b)
        h = linear(x, f"{name}.inner", in_w, in_b)
        gelu = op("Mul", [op("Mul", [h, "half"]), op("Add", [op("Erf", [op("Mul", [h, "inv_sqrt2"])]), "onef"])])
        x = layer_norm(op("Add", [linear(gelu, f"{name}.ffn", out2_w, out2_b), x]), f"{name}.ln2", ln2_w, ln2_b)
    nodes.append(helper.make_node("ReduceMean", [x], ["vector"], axes=[0], keepdims=0))
    graph = helper.make_graph(
        nodes,
        "bert_mean_pooling",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["tokens"])],
        [helper.make_tensor_value_info("vector", TensorProto.FLOAT, [dim])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)])
    model.ir_version = 8  # readable by every ONNX Runtime since 1.10
    return model.SerializeToString()
