"""A tiny language for the shapes of JSON data, used to validate databases when they are loaded.

Each tool declares the shape of the database it reads (``Tool.database_shape``);
the loader in :mod:`apibank_lib.env.databases` checks every file against it, so a
broken file fails early with a message naming the file and the offending entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Shape", "DictOf", "ListOf", "Record", "IntKeyed", "STR", "NUM", "INT", "BOOL", "ANY"]


class Shape:
    """A structural expectation for JSON data; ``problem`` returns the first mismatch or None."""

    def problem(self, value: Any, where: str) -> str | None:  # pragma: no cover - interface
        raise NotImplementedError


class _Scalar(Shape):
    def __init__(self, *types: type, label: str) -> None:
        self.types, self.label = types, label

    def problem(self, value: Any, where: str) -> str | None:
        if isinstance(value, bool) and bool not in self.types:
            return f"{where} should be {self.label}, found a boolean"
        if not isinstance(value, self.types):
            return f"{where} should be {self.label}, found {type(value).__name__}"
        return None


class _Any(Shape):
    def problem(self, value: Any, where: str) -> str | None:
        return None


class DictOf(Shape):
    """An object whose values all have one shape."""

    def __init__(self, value: Shape) -> None:
        self.value = value

    def problem(self, value: Any, where: str) -> str | None:
        if not isinstance(value, dict):
            return f"{where} should be an object, found {type(value).__name__}"
        for k, v in value.items():
            p = self.value.problem(v, f"{where}[{k!r}]")
            if p:
                return p
        return None


class ListOf(Shape):
    """An array whose items all have one shape."""

    def __init__(self, item: Shape) -> None:
        self.item = item

    def problem(self, value: Any, where: str) -> str | None:
        if not isinstance(value, list):
            return f"{where} should be an array, found {type(value).__name__}"
        for i, v in enumerate(value):
            p = self.item.problem(v, f"{where}[{i}]")
            if p:
                return p
        return None


class Record(Shape):
    """An object with required (and optional) named fields; extra fields are allowed."""

    def __init__(self, required: Mapping[str, Shape], optional: Mapping[str, Shape] | None = None) -> None:
        self.required, self.optional = dict(required), dict(optional or {})

    def problem(self, value: Any, where: str) -> str | None:
        if not isinstance(value, dict):
            return f"{where} should be an object, found {type(value).__name__}"
        for k, shape in self.required.items():
            if k not in value:
                return f"{where} lacks the field {k!r}"
            p = shape.problem(value[k], f"{where}[{k!r}]")
            if p:
                return p
        for k, shape in self.optional.items():
            if k in value:
                p = shape.problem(value[k], f"{where}[{k!r}]")
                if p:
                    return p
        return None


STR = _Scalar(str, label="text")
NUM = _Scalar(int, float, label="a number")
INT = _Scalar(int, label="an integer")
BOOL = _Scalar(bool, label="a boolean")
ANY = _Any()


class IntKeyed(DictOf):
    """An object keyed by integer ids written as canonical decimal text (``"204"``, not ``"0204"``)."""

    def problem(self, value: Any, where: str) -> str | None:
        if isinstance(value, dict):
            for k in value:
                if not (isinstance(k, str) and k.isdigit() and str(int(k)) == k):
                    return f"{where} has the key {k!r}, which is not a non-negative integer in decimal"
        return super().problem(value, where)
