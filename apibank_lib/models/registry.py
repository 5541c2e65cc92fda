"""Backends by name: one line per backend, loaded lazily, options checked against the constructor.

A model spec is ``kind`` or ``kind:target``: ``llamacpp:gemma-3-270m``,
``openai:<model>@<base_url>``, ``hf:<dir | file.gguf | gemma-3-270m>``, ``oracle``,
``no-call``, ``heuristic``. A missing optional dependency only matters when its
backend is used: the module is imported on first use.
"""

from __future__ import annotations

import importlib
import inspect
import json
import types
import typing
from typing import Any, Union

from apibank_lib.core.errors import ConfigError, did_you_mean
from apibank_lib.models.base import Backend

__all__ = ["BACKENDS", "BACKEND_KINDS", "backend_class", "load_backend", "check_options", "model_help", "named_models"]

BACKENDS: dict[str, str] = {
    "llamacpp": "apibank_lib.models.llamacpp:LlamaCppBackend",
    "openai": "apibank_lib.models.openai_compat:OpenAIBackend",
    "hf": "apibank_lib.models.transformers_backend:TransformersBackend",
    "oracle": "apibank_lib.models.baselines:OracleBackend",
    "no-call": "apibank_lib.models.baselines:NoCallBackend",
    "heuristic": "apibank_lib.models.baselines:HeuristicBackend",
    "recorded": "apibank_lib.models.recorded:RecordedBackend",
}
"""Backend kind -> ``module:Class``; adding a backend is one line here plus its module."""

BACKEND_KINDS: tuple[str, ...] = tuple(BACKENDS)


def _split(spec: str) -> tuple[str, str]:
    kind, _, target = spec.partition(":")
    if kind not in BACKENDS:
        raise ConfigError(
            f"unknown backend {spec!r}; choose one of {', '.join(BACKENDS)}.{did_you_mean(kind, BACKENDS)}"
        )
    return kind, target


def backend_class(spec: str) -> type[Backend]:
    """The backend class a spec names (its module imported now)."""
    kind, _ = _split(spec)
    module, _, name = BACKENDS[kind].partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def _accepts(annotation: Any) -> tuple[type, ...]:
    """The plain types an annotation admits (``float | None`` -> (float, NoneType))."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        return tuple(t for arg in typing.get_args(annotation) for t in _accepts(arg))
    if annotation is Any or annotation is inspect.Parameter.empty:
        return (object,)
    return (origin or annotation,)


def _coerce(cls: type[Backend], key: str, value: Any, annotation: Any) -> Any:
    """``value`` as the type the option declares; text from the command line is converted."""
    allowed = _accepts(annotation)
    if object in allowed:
        return value
    if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
        if type(None) in allowed:
            return None
    if isinstance(value, str) and str not in allowed:
        try:
            value = json.loads(value if value.lower() not in ("true", "false") else value.lower())
        except json.JSONDecodeError:
            pass
    if isinstance(value, bool):
        if bool in allowed:
            return value
    elif isinstance(value, int) and int in allowed:
        return value
    elif isinstance(value, (int, float)) and float in allowed:
        return float(value)
    elif isinstance(value, str) and str in allowed:
        return value
    elif not isinstance(value, (bool, int, float, str)) and any(
        isinstance(value, t) for t in allowed if t is not type(None)
    ):
        return value
    names = " or ".join("None" if t is type(None) else t.__name__ for t in allowed)
    raise ConfigError(f"backend option {key}={value!r} of {cls.kind} must be {names}")


def check_options(cls: type[Backend], options: dict[str, Any]) -> dict[str, Any]:
    """Options checked against the backend's constructor: known names, values of the declared types.

    Raises:
        ConfigError: an unknown option (the valid ones are listed) or a value of the wrong type.
    """
    signature = inspect.signature(cls.__init__)
    hints = typing.get_type_hints(cls.__init__)
    params = {
        n: p for n, p in signature.parameters.items() if n != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD
    }
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key not in params:
            valid = ", ".join(params) or "none"
            raise ConfigError(
                f"the {cls.kind} backend has no option {key!r} (its options: {valid}).{did_you_mean(key, params)}"
            )
        out[key] = _coerce(cls, key, value, hints.get(key, Any))
    return out


def load_backend(spec: str, **options: Any) -> Backend:
    """Build the backend named by ``spec`` with checked options.

    Args:
        spec: e.g. ``llamacpp:gemma-3-270m``, ``openai:qwen2.5-7b@http://127.0.0.1:8000/v1``,
            ``hf:gemma-3-270m``, ``oracle``.
        options: backend keyword options (e.g. ``mode="tools"``, ``adapter=...``);
            text values are converted to the declared types.

    Raises:
        ConfigError: an unknown backend, a malformed target, an unknown option or
            an option value of the wrong type.
    """
    _, target = _split(spec)
    cls = backend_class(spec)
    from_target = cls.target_options(target or cls.default_target or "")
    given = check_options(cls, options)
    clash = sorted(set(from_target) & set(given))
    if clash:
        raise ConfigError(f"{', '.join(clash)} is given by the model spec {spec!r}; do not repeat it as an option")
    return cls(**from_target, **given)


def named_models() -> dict[str, list[str]]:
    """The models a ``llamacpp:`` spec can name without a path: the embedded ones (from their packages) and the
    shipped adapters (:data:`apibank_lib.models.catalog.SHIPPED`), each sorted."""
    from apibank_lib.models.catalog import SHIPPED
    from apibank_lib.models.packaged import PACKAGED_MODELS

    return {"embedded": sorted({"gemma-3-270m", *PACKAGED_MODELS}), "shipped adapters": sorted(SHIPPED)}


def model_help() -> str:
    """The ``--model`` help, built from :data:`BACKENDS` and the named models, so that it names every backend and
    model there is (a new backend's ``target_help`` or a new shipped adapter appears in it without another edit)."""
    kinds = []
    for kind in BACKENDS:
        cls = backend_class(kind)
        kinds.append(f"{kind}:{cls.target_help}" if cls.target_help else kind)
    named = "; ".join(f"{what}: {', '.join(names)}" for what, names in named_models().items())
    return f"{', '.join(kinds)} ({named})"
