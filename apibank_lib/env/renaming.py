"""A tool set under other names: the same tools, called by new API and parameter names (twin benchmarks).

A twin of a benchmark (:mod:`apibank_lib.data.twins`) asks the same tasks with new surface forms. Its tools must
behave exactly as the originals, so they are not copied: :func:`renamed_toolset` gives a view of a tool set in
which each tool is a thin subclass of the original class that

* carries the new API name and the new parameter names in its schema (what prompts, the search index and the
  argument conversion read);
* runs a call by handing the original class the arguments under their original names, and returns the envelope
  under the new ones (``api_name`` and the keys of ``input``);
* judges a result by translating both envelopes back and asking the original's correctness rule.

The mechanism of the benchmark keeps its names (:data:`KEPT_APIS`, :data:`KEPT_PARAMETERS`): ToolSearcher, the
GetUserToken companion that a level-2 search returns beside an API that takes a ``token``, that ``token``
parameter, which tools and the searcher recognise by name, and ToolSearcher's ``keywords``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from apibank_lib.core.types import ApiResult, ToolSchema
from apibank_lib.env.tools.base import Tool
from apibank_lib.env.tools.toolset import ToolSet
from apibank_lib.env.values import ValueMap

__all__ = ["KEPT_APIS", "KEPT_PARAMETERS", "Renaming", "renamed_class", "renamed_toolset"]

KEPT_APIS = frozenset({"ToolSearcher", "GetUserToken"})
"""APIs a renaming leaves as they are: the search tool, and the token helper the search names by itself."""

KEPT_PARAMETERS = frozenset({"token", "keywords"})
"""Parameters a renaming leaves as they are: the searcher and the tools recognise ``token`` by name, and
``keywords`` is ToolSearcher's own."""


@dataclass(frozen=True)
class Renaming:
    """New names for APIs and parameters (old -> new); a name not listed keeps its name.

    Attributes:
        apis: API name -> new name.
        parameters: parameter name -> new name, the same for every API that has it.
        values: the twin's values (:mod:`apibank_lib.env.values`); the data is rewritten with them already, and the
            view applies them to what tools without a database answer from code (GetToday's date).
    """

    apis: Mapping[str, str] = field(default_factory=dict)
    parameters: Mapping[str, str] = field(default_factory=dict)
    values: ValueMap = field(default_factory=ValueMap)

    def __post_init__(self) -> None:
        for kind, mapping, kept in (("API", self.apis, KEPT_APIS), ("parameter", self.parameters, KEPT_PARAMETERS)):
            bad = sorted(set(mapping) & kept)
            if bad:
                raise ValueError(f"{kind} names {bad} are the benchmark's mechanism and keep their names")
            new = list(mapping.values())
            if len(set(new)) != len(new):
                raise ValueError(f"two {kind}s would get the same new name")

    def api(self, name: str) -> str:
        """An API's new name."""
        return self.apis.get(name, name)

    def parameter(self, name: str) -> str:
        """A parameter's new name."""
        return self.parameters.get(name, name)

    @cached_property
    def _inverse(self) -> tuple[dict[str, str], dict[str, str]]:
        """New name -> old, for APIs and for parameters (built once: every call and check of a twin asks)."""
        return {v: k for k, v in self.apis.items()}, {v: k for k, v in self.parameters.items()}

    def original_api(self, name: str) -> str:
        """The API a new name stands for."""
        return self._inverse[0].get(name, name)

    def original_parameter(self, name: str) -> str:
        """The parameter a new name stands for."""
        return self._inverse[1].get(name, name)

    def args(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Arguments under their new names."""
        return {self.parameter(k): v for k, v in args.items()}

    def original_args(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Arguments under their original names."""
        return {self.original_parameter(k): v for k, v in args.items()}

    def schema(self, schema: ToolSchema) -> ToolSchema:
        """An API description under the new names (descriptions unchanged)."""
        return ToolSchema(
            self.api(schema.name), schema.description,
            {self.parameter(k): v for k, v in schema.input_parameters.items()}, dict(schema.output_parameters),
        )

    def description(self, d: Mapping[str, Any]) -> dict[str, Any]:
        """An API description as a search returns it (``name``, ``input_parameters`` ...) under the new names."""
        out = dict(d)
        if isinstance(d.get("name"), str):
            out["name"] = self.api(d["name"])
        if isinstance(d.get("input_parameters"), dict):
            out["input_parameters"] = {self.parameter(k): v for k, v in d["input_parameters"].items()}
        return out

    def envelope(self, result: Mapping[str, Any]) -> dict[str, Any]:
        """A recorded result envelope under the new names: ``api_name``, the keys of ``input``, and the API
        descriptions a search's ``output`` holds."""
        out = dict(result)
        if isinstance(out.get("api_name"), str):
            out["api_name"] = self.api(out["api_name"])
        if isinstance(out.get("input"), dict):
            out["input"] = self.args(out["input"])
        if result.get("api_name") == "ToolSearcher":
            found = out.get("output")
            if isinstance(found, list):
                out["output"] = [self.description(x) if isinstance(x, dict) else x for x in found]
            elif isinstance(found, dict):
                out["output"] = self.description(found)
        return out

    def original_envelope(self, result: Mapping[str, Any]) -> dict[str, Any]:
        """An envelope under the new names translated back (what the original tool's rules read)."""
        out = dict(result)
        if isinstance(out.get("api_name"), str):
            out["api_name"] = self.original_api(out["api_name"])
        if isinstance(out.get("input"), dict):
            out["input"] = self.original_args(out["input"])
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (sorted)."""
        out = {"apis": dict(sorted(self.apis.items())), "parameters": dict(sorted(self.parameters.items()))}
        if not self.values.empty:
            out["values"] = self.values.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Renaming:
        """The inverse of :meth:`to_dict`."""
        return cls(dict(d.get("apis", {})), dict(d.get("parameters", {})), ValueMap.from_dict(d.get("values")))


def renamed_class(cls: type[Tool], renaming: Renaming) -> type[Tool]:
    """``cls`` under the renaming: a subclass with the new names that runs and judges as ``cls`` does."""
    new_name = renaming.api(cls.name)
    inputs = {renaming.parameter(k): v for k, v in cls.input_parameters.items()}
    aliases = {k: renaming.parameter(v) for k, v in cls.aliases.items()}
    # A tool without a database answers from code; the twin's values are in its data for every other tool.
    from_code = not renaming.values.empty and getattr(cls, "database_name", None) is None

    def __init__(self: Tool, db: Any = None, env: Any = None) -> None:
        cls.__init__(self, db, env)
        # The class shows the new parameter names (the argument conversion reads them); the instance keeps the
        # original ones, which the tool's own code reads (an echo of its inputs, say).
        self.input_parameters = cls.input_parameters  # type: ignore[misc]
        self.aliases = cls.aliases  # type: ignore[misc]

    def call(self: Tool, **kwargs: Any) -> ApiResult:
        result = cls.call(self, **renaming.original_args(kwargs))
        echoed = renaming.args(result.input) if isinstance(result.input, dict) else result.input
        output = result.output
        if from_code and result.exception is None:
            output = renaming.values.json(output)  # GetToday's date moves with the twin's dates
        return ApiResult(result.api_name, echoed, output, result.exception)

    def checker(self: Tool, preference: Any) -> Any:
        rule = cls.checker(self, preference)
        return lambda pred, gold: rule(renaming.original_envelope(pred), renaming.original_envelope(gold))

    def adopt_recorded(self: Tool, result: ApiResult, recorded: dict[str, Any]) -> None:
        original = ApiResult(result.api_name, renaming.original_args(result.input) if isinstance(result.input, dict) else result.input,
                             result.output, result.exception)
        cls.adopt_recorded(self, original, renaming.original_envelope(recorded))

    namespace = {
        "name": new_name, "input_parameters": inputs, "aliases": aliases, "original": cls, "renaming": renaming,
        "__init__": __init__, "call": call, "checker": checker, "adopt_recorded": adopt_recorded, "__module__": cls.__module__,
        "__doc__": f"{cls.name} under the name {new_name} (a renaming view; behaviour is {cls.__name__}'s).",
    }
    return type(cls.__name__, (cls,), namespace)


def renamed_toolset(toolset: ToolSet, renaming: Renaming) -> ToolSet:
    """A view of ``toolset`` whose tools answer to their new names (same order, same databases, descriptions
    shown as the original tool set shows them, under the new names)."""
    classes = [renamed_class(toolset.get(n), renaming) for n in toolset]
    metadata = {renaming.api(n): renaming.schema(toolset.schema(n)) for n in toolset}
    view = ToolSet(toolset.name, classes, metadata)
    view.renaming = renaming  # type: ignore[attr-defined]  # what ToolSet.current_name reads
    return view
