"""Tests for harvesting Dictionary and Translate recordings (apibank_lib/data/formats/harvest.py)."""

from __future__ import annotations

from typing import Any

from apibank_lib.core.types import ApiRecord, Dialogue, Turn, Utterance
from apibank_lib.data.formats.harvest import harvest_recordings
from apibank_lib.env.databases import validate_database
from apibank_lib.env.tools.knowledge import Dictionary, Translate
from tests.helpers import sandbox_for


def meanings(word: str) -> list[dict[str, Any]]:
    return [
        {
            "partOfSpeech": "noun",
            "definitions": [{"definition": f"The sense of {word}."}],
            "synonyms": [],
            "antonyms": [],
        }
    ]


def api(name: str, params: dict[str, Any], output: Any, exception: str | None = None, echo: bool = True) -> ApiRecord:
    """A gold API record; ``echo=False`` leaves the result without its input echo."""
    result: dict[str, Any] = {"api_name": name, "output": output, "exception": exception}
    if echo:
        result["input"] = dict(params)
    return ApiRecord(name, dict(params), result)


def dialogue(id: str, *turns: Turn) -> Dialogue:
    return Dialogue(id, 1, [Utterance("User", "hi"), *turns, Utterance("AI", "done")])


DIALOGUES = [
    dialogue(
        "Dictionary-level-1-1",
        api("Dictionary", {"keyword": " Serendipity "}, meanings("serendipity")),
        api("Dictionary", {"keyword": "status_quo"}, meanings("status quo")),
        api("Dictionary", {"keyword": "broken"}, None, "Failed."),
    ),
    dialogue(
        "Dictionary-level-1-2",
        # the same word again with a different recording: the first one wins
        api("Dictionary", {"keyword": "serendipity"}, meanings("something else")),
        api("Dictionary", {"keyword": "aloof"}, meanings("aloof"), echo=False),
    ),
    dialogue(
        "Translate-level-1-1",
        api("Translate", {"src": "Hello", "tgt_lang": "Spanish"}, "Hola"),
        api("Translate", {"src": "Hola"}, "Hello"),
        api("Translate", {"src": "Hello", "tgt_lang": "fr"}, "Bonjour"),
        api("Translate", {"src": "Hello", "tgt_lang": "Klingon"}, "nuqneH"),
        api("Translate", {"src": "Hello", "tgt_lang": "de"}, None, "Language not supported."),
        api("Translate", {"src": "Hello", "tgt_lang": "es"}, "Buenas"),
    ),
    dialogue("GetToday-level-1-1", api("GetToday", {}, "2023-03-31")),
]


def test_harvest_builds_both_databases() -> None:
    got = harvest_recordings(DIALOGUES)
    assert got == {
        "Dictionary": {
            "aloof": meanings("aloof"),
            "serendipity": meanings("serendipity"),
            "status quo": meanings("status quo"),
        },
        "Translate": [
            {"src": "Hello", "tgt": "es", "output": "Hola"},
            {"src": "Hello", "tgt": "fr", "output": "Bonjour"},
            {"src": "Hola", "tgt": "en", "output": "Hello"},
        ],
    }
    assert list(got["Dictionary"]) == ["aloof", "serendipity", "status quo"]
    validate_database("Dictionary", got["Dictionary"])
    validate_database("Translate", got["Translate"])


def test_harvest_of_nothing() -> None:
    assert harvest_recordings([]) == {"Dictionary": {}, "Translate": []}


def test_harvested_recordings_replay_the_gold() -> None:
    sb = sandbox_for(Dictionary, Translate, dbs=harvest_recordings(DIALOGUES))
    for turn in DIALOGUES[0].api_turns[:2] + DIALOGUES[2].api_turns[:3]:
        pred = sb.execute(turn.call).to_dict()
        tool = sb.tool(turn.api_name or "")
        assert tool.check(pred, dict(turn.result or {})), (turn.param_dict, pred)
