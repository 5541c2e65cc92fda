"""Plain data types passed between every component.

Everything here is a small dataclass with no behaviour beyond conversion to and
from the JSON shapes of the official API-Bank release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ApiCall",
    "ApiResult",
    "Param",
    "ToolSchema",
    "Turn",
    "Dialogue",
    "Level3Step",
    "Level3Item",
    "Sample",
]

Role = Literal["User", "AI", "API"]


@dataclass
class ApiCall:
    """One API call: a name and its keyword arguments, in the order written.

    Argument values are Python values (str, int, float, bool, None, list, dict).
    """

    name: str
    args: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:  # pragma: no cover - convenience only
        from apibank_lib.calls import format_call

        return format_call(self)


@dataclass
class ApiResult:
    """The four-field result envelope every API returns.

    ``api_name`` is ``None`` for the few tools whose original envelope has no
    ``api_name`` key (CheckToken, DeleteAccount, ForgotPassword, RegisterUser);
    :meth:`to_dict` then leaves the key out, as the official data does.
    """

    api_name: str | None
    input: Any
    output: Any
    exception: str | None = None

    @property
    def ok(self) -> bool:
        """True when the call raised nothing."""
        return self.exception is None

    def to_dict(self) -> dict[str, Any]:
        """Return the envelope in the official JSON shape."""
        d: dict[str, Any] = {}
        if self.api_name is not None:
            d["api_name"] = self.api_name
        d["input"] = self.input
        d["output"] = self.output
        d["exception"] = self.exception
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ApiResult:
        """Build an envelope from its official JSON shape (``api_name`` optional)."""
        return cls(d.get("api_name"), d.get("input"), d.get("output"), d.get("exception"))


@dataclass(frozen=True)
class Param:
    """A declared input or output parameter of an API.

    Attributes:
        type: the type string of the original metadata: ``str``, ``int``,
            ``float``, ``bool``, ``list``, ``list(str)`` (outputs may also say
            ``json``, ``dict`` ...).
        description: what the parameter means (our own words).
        required: whether a call must give it (inputs only).
    """

    type: str
    description: str
    required: bool = True

    def to_dict(self) -> dict[str, str]:
        """The ``{"type", "description"}`` shape used in API descriptions."""
        return {"type": self.type, "description": self.description}


@dataclass(frozen=True)
class ToolSchema:
    """An API's metadata, as shown to models and embedded by the searcher."""

    name: str
    description: str
    input_parameters: dict[str, Param]
    output_parameters: dict[str, Param]

    def to_dict(self) -> dict[str, Any]:
        """The four-key description dict of the original (name, description, inputs, outputs)."""
        return {
            "name": self.name,
            "description": self.description,
            "input_parameters": {k: p.to_dict() for k, p in self.input_parameters.items()},
            "output_parameters": {k: p.to_dict() for k, p in self.output_parameters.items()},
        }


@dataclass
class Turn:
    """One record of a level-1/2 dialogue: a User or AI utterance, or an API call.

    For ``role == "API"``: ``api_name``, ``param_dict`` (the arguments as a model
    should write them; strings in the official data) and ``result`` (the recorded
    envelope as a dict) are set; ``text`` is None. ``line`` is the record's line
    in its file, when it was read from one.
    """

    role: Role
    text: str | None = None
    api_name: str | None = None
    param_dict: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    line: int | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The official JSONL record."""
        if self.role == "API":
            return {"role": "API", "api_name": self.api_name, "param_dict": self.param_dict, "result": self.result}
        return {"role": self.role, "text": self.text}

    @property
    def call(self) -> ApiCall:
        """The gold call of an API record."""
        if self.role != "API" or self.api_name is None:
            raise ValueError("only API records carry a call")
        return ApiCall(self.api_name, dict(self.param_dict or {}))


@dataclass
class Dialogue:
    """A level-1 or level-2 dialogue file.

    Attributes:
        id: the file name without ``.jsonl`` (e.g. ``AddAlarm-level-1-1``).
        level: the paper ability: 1 (Call) or 2 (Retrieve+Call).
        turns: the records in order.
        path: where it was read from, if anywhere.
    """

    id: str
    level: int
    turns: list[Turn]
    path: str | None = None

    @property
    def api_turns(self) -> list[Turn]:
        """The gold API records, in order."""
        return [t for t in self.turns if t.role == "API"]

    @property
    def api_names(self) -> list[str]:
        """Distinct API names called in the dialogue, in order of first appearance."""
        seen: dict[str, None] = {}
        for t in self.api_turns:
            seen.setdefault(str(t.api_name), None)
        return list(seen)


@dataclass
class Level3Step:
    """One gold step of a level-3 item: the call and its full recorded envelope."""

    api_name: str
    input: dict[str, Any]
    output: dict[str, Any]

    @property
    def call(self) -> ApiCall:
        """The gold call of this step."""
        return ApiCall(self.api_name, dict(self.input))

    def to_dict(self) -> dict[str, Any]:
        """The official ``level-3.json`` step shape."""
        return {"api_name": self.api_name, "input": self.input, "output": self.output}


@dataclass
class Level3Item:
    """A level-3 (Plan+Retrieve+Call) item: one requirement and its gold steps."""

    id: int
    requirement: str
    response: str
    steps: list[Level3Step]

    def to_dict(self) -> dict[str, Any]:
        """The official ``level-3.json`` item shape."""
        return {"requirement": self.requirement, "response": self.response, "apis": [s.to_dict() for s in self.steps]}


@dataclass
class Sample:
    """One evaluation sample cut out of a dialogue or level-3 item.

    Attributes:
        kind: ``"api"`` (predict the next call), ``"response"`` (predict the AI reply)
            or ``"episode"`` (a whole level-3 agent episode; ``gold`` is the Level3Item).
        level: 1, 2 or 3.
        dialogue_id: the dialogue file stem, or the level-3 item index as a string.
        sample_id: the index of the original cutter (``2k`` / ``2k+1`` at levels 1-2,
            the step index at level 3).
        history: the records before the gold (levels 1-2) or the earlier gold
            steps (level 3, as Level3Step objects).
        gold: the gold record (a Turn) or step (a Level3Step); for level-3 response
            samples, a Turn with the gold final response.
        api_names: APIs whose descriptions the prompt shows (first-appearance order).
        duplicate: True for the extra API-call sample the original cutter makes when
            two API records are adjacent.
        requirement: the level-3 requirement (level 3 only).
    """

    kind: Literal["api", "response", "episode"]
    level: int
    dialogue_id: str
    sample_id: int
    history: list[Any]
    gold: Any
    api_names: list[str]
    duplicate: bool = False
    requirement: str | None = None

    @property
    def key(self) -> str:
        """A stable identifier, unique within a data set."""
        return f"L{self.level}/{self.kind}/{self.dialogue_id}/{self.sample_id}"
