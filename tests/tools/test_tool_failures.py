"""Deliberate tool failures versus tool bugs, for the level-1/2 tools.

A tool fails on purpose with the original API's text (a ToolFailure, which becomes
the envelope's ``exception``), including the texts of Python errors the original
surfaced; any other exception escaping a tool is a bug of ours and is raised as a
ToolError, never graded as the model's fault. These tests pin both halves: the
sandbox's handling of a bug, a sample of reproduced texts, and (a property test)
that no well-typed call makes any level-1/2 tool break.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apibank_lib.core.errors import ToolError
from apibank_lib.core.types import ApiCall, Param, ToolSchema
from apibank_lib.env.databases import load_databases
from apibank_lib.env.sandbox import Sandbox
from apibank_lib.env.tools.base import LEVEL12, Tool
from apibank_lib.env.tools.common import original_errors
from apibank_lib.env.tools.conversion import ORIGINAL_CONVERSION, TYPED_CONVERSION, ArgumentConversion
from apibank_lib.env.tools.registry import tools_defined_in, toolset
from apibank_lib.env.tools.toolset import ToolSet

DATA = Path(__file__).resolve().parents[2] / "data" / "eval"
MODULES = (
    "account",
    "agenda",
    "alarm",
    "calculator",
    "finance",
    "health",
    "hospital",
    "hotel",
    "knowledge",
    "meeting",
    "reminder",
    "scene",
    "searcher",
    "utility",
)
TOOLS = [t for m in MODULES for t in tools_defined_in(f"apibank_lib.env.tools.{m}") if t.toolset == LEVEL12]

ALICE = "idvwtfktangpvyqe6b"  # AliceMorgan's token in the bundled Account data


@lru_cache(maxsize=1)
def databases() -> dict[str, Any]:
    """The bundled databases and recordings (loaded once; sandboxes never change them)."""
    return {**load_databases(DATA / "init_database"), **load_databases(DATA / "recordings")}


class _WordSearcher:
    """A tiny stand-in for the embedding searcher: ranks APIs by words shared with the keywords."""

    def __init__(self, schemas: list[ToolSchema]) -> None:
        self.schemas = schemas

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        words = set(keywords.lower().split())
        scored = [(s, float(len(words & set(f"{s.name} {s.description}".lower().split())))) for s in self.schemas]
        return sorted(scored, key=lambda pair: -pair[1])[:k]


def sandbox(conversion: ArgumentConversion = TYPED_CONVERSION) -> Sandbox:
    """A fresh level-1/2 sandbox over the bundled data (ToolSearcher ranks without loading a model)."""
    tools = toolset(LEVEL12)
    return Sandbox(tools, databases(), conversion=conversion, searcher=_WordSearcher(tools.searchable()))


# --- (a) a bug in a tool is a ToolError, not an envelope ------------------------------------------


class _Broken(Tool):
    """A tool with a bug: an unexpected error, also one that an original_errors block does not list."""

    name = "Broken"
    description = "Fails unexpectedly."
    input_parameters = {"how": Param("str", "which bug")}

    def run(self, how: Any) -> Any:
        if how == "outside":
            return {}["missing"]
        with original_errors(AttributeError):  # only the listed type is the original's failure
            return int(how)


@pytest.mark.parametrize(
    ("how", "cause", "text"),
    [("outside", KeyError, "'missing'"), ("inside", ValueError, "invalid literal for int() with base 10: 'inside'")],
)
def test_a_bug_is_a_tool_error(how: str, cause: type[Exception], text: str) -> None:
    box = Sandbox(ToolSet("test", [_Broken]), {})
    with pytest.raises(ToolError) as info:
        box.execute(ApiCall("Broken", {"how": how}))
    assert info.value.tool == "Broken" and isinstance(info.value.cause, cause)
    assert box.trace[-1].tool_error and box.trace[-1].result is None

    result = box.execute_safely(ApiCall("Broken", {"how": how}))
    assert result.output is None and result.exception == str(info.value)
    assert result.exception.endswith(f"{cause.__name__}: {text}")
    assert box.trace[-1].tool_error


# --- (b) reproduced Python-error texts ------------------------------------------------------------


@pytest.mark.parametrize(
    ("conversion", "name", "args", "text"),
    [
        # A number for a text under the original conversion: the original's string method fails.
        (
            ORIGINAL_CONVERSION,
            "AddReminder",
            {"token": ALICE, "content": 5, "time": "2023-04-01 10:00:00"},
            "'int' object has no attribute 'strip'",
        ),
        (
            ORIGINAL_CONVERSION,
            "QueryStock",
            {"stock_code": 7, "date": "2023-03-31"},
            "'int' object has no attribute 'upper'",
        ),
        (
            ORIGINAL_CONVERSION,
            "Translate",
            {"src": "Hello", "tgt_lang": True},
            "'bool' object has no attribute 'lower'",
        ),
        (ORIGINAL_CONVERSION, "Wiki", {"keyword": 3}, "'int' object has no attribute 'replace'"),
        # A username that is not hashable fails the account look-up.
        (ORIGINAL_CONVERSION, "GetUserToken", {"username": {}, "password": "x"}, "unhashable type: 'dict'"),
        # QueryBalance rewords every token failure, a token that is not text included.
        (ORIGINAL_CONVERSION, "QueryBalance", {"token": 5}, "The token is incorrect."),
        # Data of the wrong shape, walked as given.
        (
            ORIGINAL_CONVERSION,
            "RecordHealthData",
            {"user_id": "A1", "time": "2023-04-01 10:00:00", "health_data": True},
            "'bool' object is not iterable",
        ),
        (
            TYPED_CONVERSION,
            "RecordHealthData",
            {"user_id": "A1", "time": "2023-04-01 10:00:00", "health_data": [{"name": "heart_rate"}]},
            "'value'",
        ),
        (
            TYPED_CONVERSION,
            "AddScene",
            {"name": "reading", "devices": [{"name": "lamp", "description": 7}]},
            "'int' object has no attribute 'strip'",
        ),
        (
            TYPED_CONVERSION,
            "ModifyScene",
            {"name": "reading", "devices": [None]},
            "argument of type 'NoneType' is not iterable",
        ),
        # Dates kept as their parse error and raised later.
        (
            TYPED_CONVERSION,
            "QueryHealthData",
            {"user_id": "A1", "start_time": "x", "end_time": "2023-02-30 10:00:00"},
            "time data 'x' does not match format '%Y-%m-%d %H:%M:%S'; day is out of range for month",
        ),
        (TYPED_CONVERSION, "QueryHistoryToday", {"date": "02-29"}, "day is out of range for month"),
        (
            TYPED_CONVERSION,
            "CancelTimedSwitch",
            {"name": "light", "time": "2023-04-01"},
            "time data '2023-04-01' does not match format '%Y-%m-%d %H:%M:%S'",
        ),
        # A blank symptom: the original lower-cases its own error object.
        (TYPED_CONVERSION, "EmergencyKnowledge", {"symptom": "  "}, "'Exception' object has no attribute 'lower'"),
    ],
)
def test_original_error_texts(conversion: ArgumentConversion, name: str, args: dict[str, Any], text: str) -> None:
    result = sandbox(conversion).execute(ApiCall(name, args))
    assert result.output is None and result.exception == text


def test_forgot_password_for_a_deleted_account_gives_the_key_error_text() -> None:
    box = sandbox()
    email = databases()["Account"]["AliceMorgan"]["email"]
    box.execute(ApiCall("ForgotPassword", {"status": "Forgot Password", "username": "AliceMorgan", "email": email}))
    assert box.execute(ApiCall("DeleteAccount", {"token": ALICE})).output == {"status": "success"}
    step2 = {"status": "Verification Code", "verification_code": 970420, "new_password": "new"}
    assert box.execute(ApiCall("ForgotPassword", step2)).exception == "'AliceMorgan'"


# --- (c) no well-typed call breaks a tool ---------------------------------------------------------

# Text mixes arbitrary strings with values the tools act on (tokens, dates, known names), so that
# calls also get past the first checks.
_WORDS = st.sampled_from(
    [
        "",
        " ",
        ALICE,
        "AliceMorgan",
        "2023-03-16 07:00:00",
        "2023-3-5 1:2:3",
        "2023-04-01",
        "04-21",
        "02-29",
        "fever",
        "AAPL",
        "light",
        "morning routine",
        "Forgot Password",
        "Verification Code",
        "(1+2)*3",
        "french",
        "https://example.com/voice1.wav",
    ]
)
_TEXT = st.one_of(_WORDS, st.text(max_size=30))
_SMALL = st.one_of(_TEXT, st.integers(-5, 100), st.floats(allow_nan=False), st.booleans(), st.none())
_OBJECT = st.dictionaries(st.sampled_from(["name", "description", "value", "x"]), _SMALL, max_size=3)

# List parameters get items of the wrong shape too (text, objects missing keys, values that are not
# text): the original fails on them with Python's own texts, which the tools reproduce as deliberate
# failures, so no strategy needs narrowing to what the original handles.
_BY_TYPE: dict[str, st.SearchStrategy[Any]] = {
    "str": _TEXT,
    "int": st.integers(-5, 10**6),
    "float": st.floats(allow_nan=False, allow_infinity=False),
    "bool": st.booleans(),
    "list(str)": st.lists(_TEXT, max_size=4),
    "list": st.lists(st.one_of(_OBJECT, _TEXT), max_size=4),
}


def _arguments(tool: type[Tool]) -> st.SearchStrategy[dict[str, Any]]:
    params = tool.input_parameters
    return st.fixed_dictionaries(
        {k: _BY_TYPE[p.type] for k, p in params.items() if p.required},
        optional={k: _BY_TYPE[p.type] for k, p in params.items() if not p.required},
    )


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_well_typed_calls_never_break_a_tool(tool: type[Tool]) -> None:
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(args=_arguments(tool))
    def check(args: dict[str, Any]) -> None:
        box = sandbox()
        try:
            box.execute(ApiCall(tool.name, args))
        except ToolError as exc:  # pragma: no cover - the failure message names the input
            pytest.fail(f"{tool.name}({args!r}) broke: {exc}")

    check()
