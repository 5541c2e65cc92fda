"""Resolve a backend name to an instance (lazy imports, helpful errors)."""

from __future__ import annotations

from typing import Any

from apibank_lib.errors import ConfigError, did_you_mean

__all__ = ["load_backend", "BACKEND_KINDS"]

BACKEND_KINDS = ("llamacpp", "openai", "hf", "oracle", "no-call", "heuristic")


def load_backend(spec: str, **options: Any) -> Any:
    """Build the backend named by ``spec``.

    Args:
        spec: e.g. ``llamacpp:gemma-3-270m``, ``openai:qwen2.5-7b@http://127.0.0.1:8000/v1``,
            ``hf:gemma-3-270m``, ``oracle``.
        options: backend keyword options (e.g. ``mode="tools"``, ``adapter=...``).
    """
    kind, _, rest = spec.partition(":")
    if kind == "oracle":
        from apibank_lib.backends.baselines import OracleBackend

        return OracleBackend()
    if kind == "no-call":
        from apibank_lib.backends.baselines import NoCallBackend

        return NoCallBackend()
    if kind == "heuristic":
        from apibank_lib.backends.baselines import HeuristicBackend

        return HeuristicBackend(**options)
    if kind == "llamacpp":
        from apibank_lib.backends.llamacpp import LlamaCppBackend

        return LlamaCppBackend(rest or "gemma-3-270m", **options)
    if kind == "hf":
        from apibank_lib.backends.transformers_backend import TransformersBackend

        return TransformersBackend(rest or "gemma-3-270m", **options)
    if kind == "openai":
        model, sep, base_url = rest.rpartition("@")
        if not sep or not model or not base_url:
            raise ConfigError(f"write an OpenAI-compatible model as openai:<model>@<base_url>, not {spec!r}")
        from apibank_lib.backends.openai_compat import OpenAIBackend

        return OpenAIBackend(model, base_url, **options)
    raise ConfigError(f"unknown backend {spec!r}; choose one of {', '.join(BACKEND_KINDS)}.{did_you_mean(kind, BACKEND_KINDS)}")
