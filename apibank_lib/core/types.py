"""Plain data types passed between every component.

Everything here is a small dataclass with no behaviour beyond convenience
accessors. Reading and writing them in on-disk formats lives in
:mod:`apibank_lib.data.formats`.

The shapes, bottom up:

* :class:`ApiCall` (a name and arguments) and :class:`ApiResult` (the four-field
  envelope every API returns).
* :class:`Param` and :class:`ToolSchema`: an API's metadata.
* A dialogue is a list of turns; a :data:`Turn` is an :class:`Utterance` (User or
  AI) or an :class:`ApiRecord` (a call and its recorded envelope). A level-3
  :class:`Level3Item` is a requirement, gold :class:`ApiRecord` steps and a final
  response.
* Evaluation units: an :class:`ApiCallSample` (predict the next call), a
  :class:`ResponseSample` (predict the reply) and an :class:`Episode` (a whole
  level-3 agent loop). What a model is shown for one step is a :class:`Context`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Union

__all__ = [
    "ApiCall",
    "ApiResult",
    "Param",
    "ToolSchema",
    "Utterance",
    "ApiRecord",
    "Turn",
    "Dialogue",
    "Level3Item",
    "Context",
    "ApiCallSample",
    "ResponseSample",
    "Sample",
    "Episode",
    "Task",
]

Task = Literal["api", "response"]
"""The two prediction tasks: the next API call, or the next reply to the user."""


@dataclass
class ApiCall:
    """One API call: a name and its keyword arguments, in the order written.

    Argument values are Python values (str, int, float, bool, None, list, dict).
    """

    name: str
    args: dict[str, Any] = field(default_factory=dict)


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


# --- dialogues ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Utterance:
    """A User or AI turn of a dialogue.

    Attributes:
        role: ``"User"`` or ``"AI"``.
        text: what was said.
        line: the record's line in its file, when it was read from one.
    """

    role: Literal["User", "AI"]
    text: str
    line: int | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ApiRecord:
    """A recorded API call: the arguments as written and the envelope the API returned.

    At levels 1-2 this is a dialogue's ``API`` record (``param_dict`` and
    ``result``); at level 3 a gold step (``input`` and ``output``). Arguments are
    text in the official data (lists in Python notation).

    Attributes:
        api_name: the API called.
        args: the arguments as a model should write them.
        result: the recorded envelope (``api_name``, ``input``, ``output``, ``exception``).
        line: the record's line in its file, when it was read from one.
    """

    api_name: str
    args: dict[str, Any]
    result: dict[str, Any]
    line: int | None = field(default=None, compare=False, repr=False)

    role: ClassVar[str] = "API"

    @property
    def call(self) -> ApiCall:
        """The call, as an :class:`ApiCall` (a copy: changing it leaves the record alone)."""
        return ApiCall(self.api_name, dict(self.args))

    @property
    def output(self) -> Any:
        """The recorded output (``result["output"]``)."""
        return self.result.get("output")


Turn = Union[Utterance, ApiRecord]
"""One record of a level-1/2 dialogue."""


@dataclass
class Dialogue:
    """A level-1 or level-2 dialogue.

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
    def api_turns(self) -> list[ApiRecord]:
        """The gold API records, in order."""
        return [t for t in self.turns if isinstance(t, ApiRecord)]

    @property
    def api_names(self) -> list[str]:
        """Distinct API names called in the dialogue, in order of first appearance."""
        return list(dict.fromkeys(t.api_name for t in self.api_turns))


@dataclass
class Level3Item:
    """A level-3 (Plan+Retrieve+Call) item: one requirement, its gold steps and the final response."""

    id: int
    requirement: str
    response: str
    steps: list[ApiRecord]


# --- evaluation units -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    """Everything a model is shown for one prediction, and nothing of the answer.

    Attributes:
        level: 1, 2 or 3 (which prompt layout and tool set).
        task: ``"api"`` or ``"response"``.
        history: the turns so far (levels 1-2) or the earlier steps (level 3).
        api_names: the APIs whose descriptions the prompt shows.
        requirement: the level-3 user requirement.
    """

    level: int
    task: Task
    history: tuple[Turn, ...]
    api_names: tuple[str, ...]
    requirement: str | None = None


@dataclass(frozen=True)
class _SampleBase:
    level: int
    dialogue_id: str
    sample_id: int
    history: tuple[Turn, ...]
    api_names: tuple[str, ...]

    kind: ClassVar[Task]

    @property
    def key(self) -> str:
        """A stable identifier, unique within a data set (``L1/api/AddAlarm-level-1-1/0``)."""
        return f"L{self.level}/{self.kind}/{self.dialogue_id}/{self.sample_id}"

    def context(self) -> Context:
        """What a model is shown for this sample."""
        return Context(self.level, self.kind, self.history, self.api_names, getattr(self, "requirement", None))


@dataclass(frozen=True)
class ApiCallSample(_SampleBase):
    """Predict the next API call.

    Attributes:
        level: 1, 2 or 3.
        dialogue_id: the dialogue file stem, or the level-3 item index as text.
        sample_id: the original cutter's index (``2k`` / ``2k+1`` at levels 1-2,
            the step index at level 3).
        history: the turns before the gold (levels 1-2) or the earlier gold steps (level 3).
        api_names: APIs whose descriptions the prompt shows.
        gold: the gold record.
        duplicate: True for the extra sample the original cutter makes when two
            API records are adjacent.
        requirement: the level-3 requirement (level 3 only).
        needed_api: for a ToolSearcher gold, the API the dialogue calls for the need the search serves
            (:func:`apibank_lib.data.datasets.needed_api`; None when no call follows it, and for other golds).
    """

    gold: ApiRecord
    duplicate: bool = False
    requirement: str | None = None
    needed_api: str | None = None

    kind: ClassVar[Task] = "api"


@dataclass(frozen=True)
class ResponseSample(_SampleBase):
    """Predict the AI's reply after an API result.

    Attributes:
        gold: the reference reply.
        requirement: the level-3 requirement (level 3 only).
        (the other attributes as in :class:`ApiCallSample`)
    """

    gold: str
    requirement: str | None = None

    kind: ClassVar[Task] = "response"

    @property
    def duplicate(self) -> bool:
        """Response samples are never duplicates."""
        return False


Sample = Union[ApiCallSample, ResponseSample]
"""One evaluation sample cut out of a dialogue or a level-3 item."""


@dataclass(frozen=True)
class Episode:
    """A level-3 agent episode: the model searches, calls and sees results until it answers.

    Attributes:
        item: the level-3 item (its gold steps and end state judge the episode).
    """

    item: Level3Item

    kind: ClassVar[str] = "episode"
    level: ClassVar[int] = 3
    sample_id: ClassVar[int] = 0
    duplicate: ClassVar[bool] = False

    @property
    def dialogue_id(self) -> str:
        """The item index as text."""
        return str(self.item.id)

    @property
    def key(self) -> str:
        """A stable identifier (``L3/episode/<item>``)."""
        return f"L3/episode/{self.item.id}"

    def context(self, done: tuple[ApiRecord, ...] = ()) -> Context:
        """What the model is shown after the steps ``done``: the requirement, only ToolSearcher, the steps so far."""
        return Context(3, "api", tuple(done), ("ToolSearcher",), self.item.requirement.strip())
