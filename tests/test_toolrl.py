"""ToolRL's API-Bank protocol: reading its processed files, reading answers as its script does, exact match.

The fixture is written here, in ToolRL's shape (three JSON lists of {system, user, answer, other}); no ToolRL or
API-Bank text is used.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apibank_lib.core.errors import DataError
from apibank_lib.data.formats.toolrl import FILES, is_toolrl_folder, load_toolrl
from apibank_lib.grading.toolrl import TOOLRL, accuracies, gold_answer, judge, parse_answer

SYSTEM = "You call tools.\n**Available Tools**\n1. Name: QueryStock\nParameters: {'stock_code': {'type': 'str'}}"
USER = "**Dialogue Records History**\n<user> What is ACME worth today? </user>\nMake exactly one tool call."


def _entry(name: str, params: dict, level: int = 1, listed: bool = True) -> dict:
    call = {"name": name, "parameters": params}
    other = {"file": "QueryStock-level-1-1.jsonl", "id": 0} if level < 3 else {"sample_id": 0, "api_id": 1}
    return {"system": SYSTEM, "user": USER, "answer": [call] if listed else call, "other": other}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    files = {
        1: [_entry("QueryStock", {"stock_code": "ACME"}), _entry("Calculator", {"formula": "(5+6)*3"})],
        2: [_entry("QueryStock", {"stock_code": "ACME"}, level=2, listed=False)],
        3: [_entry("AddAlarm", {"time": "2023-04-01 07:00:00"}, level=3)],
    }
    for level, entries in files.items():
        (tmp_path / FILES[level]).write_text(json.dumps(entries), encoding="utf-8")
    return tmp_path


def test_the_folder_is_recognised_and_read(folder: Path) -> None:
    assert is_toolrl_folder(folder) and not is_toolrl_folder(folder / FILES[1])
    entries = load_toolrl(folder)
    assert [len(entries[lv]) for lv in (1, 2, 3)] == [2, 1, 1]
    first = entries[1][0]
    assert (first.key, first.gold_name, first.gold_parameters) == ("TR1/0", "QueryStock", {"stock_code": "ACME"})
    assert entries[2][0].gold_name == "QueryStock"  # a bare call object, as level 2 writes it
    assert entries[3][0].source == {"sample_id": 0, "api_id": 1}


def test_a_bad_entry_names_its_file_and_index(folder: Path) -> None:
    broken = [_entry("QueryStock", {"stock_code": "ACME"}), {"system": "s", "user": "u", "answer": [1, 2]}]
    (folder / FILES[2]).write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(DataError, match=r"level-2-api_processed\.json.*entry 1: 'answer' must hold exactly one call"):
        load_toolrl(folder)
    (folder / FILES[3]).unlink()
    with pytest.raises(DataError, match="not a ToolRL API-Bank folder"):
        load_toolrl(folder, levels=(3,))


def test_answers_are_read_from_the_last_tool_call_block() -> None:
    text = (
        '<think>first try</think>\n<tool_call>\n{"name": "A", "parameters": {}}\n</tool_call>\n'
        '<tool_call>\n{"name": "B", "parameters": {"x": "1"}}\nnot json\n[1, 2]\n\n</tool_call><response>ok</response>'
    )
    assert parse_answer(text) == [{"name": "B", "parameters": {"x": "1"}}]
    assert parse_answer('{"name": "C", "parameters": {}}') == [{"name": "C", "parameters": {}}]  # no tags: all of it
    assert parse_answer('<tool_call>\n{"name": "D", "parameters": {}}') == [{"name": "D", "parameters": {}}]
    assert parse_answer("I cannot help with that.") == []


def test_exact_match_of_name_and_parameters(folder: Path) -> None:
    stock, calc = load_toolrl(folder)[1]
    assert judge(stock, gold_answer(stock)).correct
    assert judge(calc, gold_answer(calc)).correct
    spaced = '<tool_call>\n{"name": "Calculator", "parameters": {"formula": "(5 + 6) * 3"}}\n</tool_call>'
    assert not judge(calc, spaced).correct  # the same formula written otherwise is wrong: nothing is executed
    typed = judge(stock, '<tool_call>\n{"name": "QueryStock", "parameters": {"stock_code": 7}}\n</tool_call>')
    assert not typed.correct and "other parameters" in typed.reason
    other = judge(stock, '<tool_call>\n{"name": "GetUserToken", "parameters": {}}\n</tool_call>')
    assert other.reason == "called GetUserToken, expected QueryStock"
    # any of several calls may match; an object without name and parameters is the gold API's parameters
    both = '<tool_call>\n{"name": "GetUserToken", "parameters": {}}\n{"stock_code": "ACME"}\n</tool_call>'
    assert judge(stock, both).correct
    assert judge(stock, "").reason == "no call could be read from the answer"


def test_accuracies_count_unanswered_entries_as_wrong(folder: Path) -> None:
    entries = load_toolrl(folder)
    got = accuracies([(1, True), (1, False), (3, True)], entries)
    assert got["levels"]["1"] == {"right": 1, "entries": 2, "accuracy": 50.0}
    assert got["levels"]["2"] == {"right": 0, "entries": 1, "accuracy": 0.0}
    assert got["overall"] == {"right": 2, "entries": 4, "accuracy": 50.0}
    assert TOOLRL.version == "toolrl-1"
