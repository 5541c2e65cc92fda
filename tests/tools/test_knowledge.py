"""Tests for the knowledge tools (apibank_lib/env/tools/knowledge.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.errors import DataError, InvalidParameterError, MissingParameterError
from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.knowledge import (
    LANGUAGES,
    Dictionary,
    DocumentQA,
    ImageCaption,
    QueryHistoryToday,
    SearchEngine,
    SpeechRecognition,
    Translate,
    Wiki,
    history_date,
    resolve_language,
    tokenize_document,
)
from apibank_lib.env.tools.registry import tools_defined_in
from tests.helpers import sandbox_for

TOOLS = tools_defined_in("apibank_lib.env.tools.knowledge")

DATA = Path(__file__).resolve().parents[2] / "data" / "eval"

MEANINGS = [
    {
        "partOfSpeech": "adjective",
        "definitions": [{"definition": "Open and honest.", "synonyms": [], "antonyms": []}],
        "synonyms": ["frank"],
        "antonyms": [],
    }
]
DOCS = [
    {"title": "Tide Tables", "url": "https://s.test/tides", "abstract": "High and low tides twice a day."},
    {"title": "Solar Roofs", "url": "https://s.test/solar", "abstract": "Solar panels on roofs cut power bills."},
    {"title": "Wind Farms", "url": "https://s.test/wind", "abstract": "Offshore wind farms make power at sea."},
    {"title": "Bread Baking", "url": "https://s.test/bread", "abstract": "Flour, water, salt and yeast."},
    {"title": "Solar Eclipses", "url": "https://s.test/eclipse", "abstract": "The Moon hides the Sun."},
]
DBS: dict[str, Any] = {
    "Dictionary": {"candid": MEANINGS, "status quo": [dict(MEANINGS[0], partOfSpeech="noun")]},
    "Wiki": {
        "plate tectonics": {"url": "https://w.test/plates", "summary": "Plates move.", "content": "Long text."},
        "lunar eclipse": {"url": "https://w.test/lunar", "summary": "Earth's shadow.", "content": "More."},
    },
    "SearchEngine": {"raw_documents": DOCS, "tokenized_documents": [tokenize_document(d) for d in DOCS]},
    "QuestionAnswering": {"https://d.test/guide.txt": [{"question": "Who approves it?", "answer": "The manager."}]},
    "History": {
        "04-12": [
            {"Title": " Gagarin flies ", "Date": " 1961-04-12", "Description": "First human in space. "},
            {"Title": "Shuttle", "Date": "1981-04-12", "Description": "First shuttle launch."},
        ],
        "02-28": [{"Title": "Leap eve", "Date": "2000-02-28", "Description": "A day."}],
    },
    "Translate": [
        {"src": "Hello", "tgt": "fr", "output": "Bonjour"},
        {"src": "Hello", "tgt": "es", "output": "Hola"},
        {"src": "Hello", "tgt": "en", "output": "Hello"},
        {"src": "Hello", "tgt": "zh-cn", "output": "你好"},
        {"src": "Hola", "tgt": "en", "output": "Hello"},
    ],
    "ImageCaptioning": [
        {"url": "https://i.test/dog.jpg", "caption": "A dog on grass."},
        {"url": "https://i.test/dog.png", "caption": "A drawing of a dog."},
        {"url": "https://i.test/cat.jpeg", "caption": "A cat."},
    ],
    "SpeechRecognition": {"https://a.test/memo.wav": "Call Ann at noon."},
}


def run(name: str, conversion: str = "v2", **args: Any) -> dict[str, Any]:
    """Execute one call in a fresh sandbox and return the envelope dict."""
    return sandbox_for(*TOOLS, dbs=DBS, conversion=conversion).execute(ApiCall(name, args)).to_dict()


def env(api: str | None, input: Any, output: Any, exception: str | None = None) -> dict[str, Any]:
    return {"api_name": api, "input": input, "output": output, "exception": exception}


# --- Dictionary -----------------------------------------------------------------------------------


def test_dictionary_answers_from_recordings() -> None:
    r = run("Dictionary", keyword=" Candid ")
    assert r == env("Dictionary", {"keyword": " Candid "}, MEANINGS)


def test_dictionary_underscore_means_space() -> None:
    assert run("Dictionary", keyword="Status_Quo")["output"][0]["partOfSpeech"] == "noun"


def test_dictionary_unrecorded_word() -> None:
    r = run("Dictionary", keyword="Xyz_Word")
    assert r["output"] is None
    assert r["exception"] == "The meaning of 'xyz word' is not available offline."


def test_dictionary_conversion_modes() -> None:
    # v2 turns a number into text; paper passes it through and the original's replace() fails.
    assert run("Dictionary", keyword=42)["exception"] == "The meaning of '42' is not available offline."
    assert run("Dictionary", conversion="paper", keyword=42)["exception"] == "'int' object has no attribute 'replace'"


def test_dictionary_check_ignores_input() -> None:
    d = Dictionary()
    gold = env("Dictionary", {"keyword": "candid"}, MEANINGS)
    assert d.check(env("Dictionary", {"keyword": "CANDID_"}, MEANINGS), gold)
    assert not d.check(env("Wiki", {"keyword": "candid"}, MEANINGS), gold)
    assert not d.check(env("Dictionary", {"keyword": "candid"}, []), gold)
    assert not d.check(env("Dictionary", {"keyword": "candid"}, MEANINGS, "x"), gold)


# --- Wiki -----------------------------------------------------------------------------------------


def test_wiki_returns_url_and_summary_only() -> None:
    r = run("Wiki", keyword=" Plate_Tectonics ")
    assert r == env(
        "Wiki", {"keyword": " Plate_Tectonics "}, {"url": "https://w.test/plates", "summary": "Plates move."}
    )


def test_wiki_unknown_keyword() -> None:
    assert run("Wiki", keyword="solar eclipse")["exception"] == "Keyword not found."


def test_wiki_check() -> None:
    w = Wiki()
    out = {"url": "u", "summary": "s"}
    gold = env("Wiki", {"keyword": "black hole"}, out)
    assert w.check(env("Wiki", {"keyword": "Black_Hole "}, out), gold)
    assert not w.check(env("Dictionary", {"keyword": "black hole"}, out), gold)
    assert not w.check(env("Wiki", {"keyword": "black hole"}, {"url": "u", "summary": "t"}), gold)
    assert not w.check(env("Wiki", {"keyword": "black hole"}, None, "Keyword not found."), gold)


# --- SearchEngine ---------------------------------------------------------------------------------


def test_search_engine_returns_best_two_documents() -> None:
    r = run("SearchEngine", keyword="  SOLAR power ")
    assert r["exception"] is None
    # "power" also matches Wind Farms, but the shorter Solar Eclipses wins on "solar".
    assert [d["title"] for d in r["output"]] == ["Solar Roofs", "Solar Eclipses"]
    assert r["output"][0] == DOCS[1]


def test_search_engine_without_matches_returns_first_two_documents() -> None:
    assert run("SearchEngine", keyword="quantum chromodynamics")["output"] == DOCS[:2]


def test_search_engine_rejects_unpaired_documents() -> None:
    broken = {"raw_documents": DOCS, "tokenized_documents": [["a"]]}
    sb = sandbox_for(SearchEngine, dbs={"SearchEngine": broken})
    with pytest.raises(DataError, match="5 raw documents but 1 tokenized"):
        sb.execute(ApiCall("SearchEngine", {"keyword": "a"}))


def test_search_engine_check_is_order_insensitive() -> None:
    s = SearchEngine()
    gold = env("SearchEngine", {"keyword": "solar"}, [DOCS[1], DOCS[4]])
    assert s.check(env("SearchEngine", {"keyword": "sun"}, [DOCS[4], DOCS[1]]), gold)
    assert not s.check(env("SearchEngine", {"keyword": "solar"}, [DOCS[1], DOCS[2]]), gold)
    assert not s.check(env("Wiki", {"keyword": "solar"}, [DOCS[1], DOCS[4]]), gold)
    assert not s.check(env("SearchEngine", {"keyword": "solar"}, None, "boom"), gold)


def test_search_engine_check_crashes_on_missing_outputs_and_v2_fixes_it() -> None:
    s = SearchEngine()
    both_failed = env("SearchEngine", {"keyword": "x"}, None, "boom")
    with pytest.raises(UnboundLocalError):
        s.check(both_failed, dict(both_failed))
    assert s.check_corrected(both_failed, dict(both_failed))
    assert not s.check_corrected(both_failed, env("SearchEngine", {"keyword": "x"}, None, "other"))
    assert not s.check_corrected(
        env("SearchEngine", {"keyword": "x"}, None), env("SearchEngine", {"keyword": "x"}, DOCS[:2])
    )
    gold = env("SearchEngine", {"keyword": "solar"}, [DOCS[1], DOCS[4]])
    assert s.check_corrected(env("SearchEngine", {"keyword": "s"}, [DOCS[4], DOCS[1]]), gold)


# --- DocumentQA -----------------------------------------------------------------------------------


def test_document_qa_always_too_difficult_for_known_documents() -> None:
    # The question is in the data, yet the original's lookup never finds it (gold depends on this).
    r = run("DocumentQA", url=" https://d.test/guide.txt ", question="Who approves it?")
    assert r == env(
        "DocumentQA",
        {"url": " https://d.test/guide.txt ", "question": "Who approves it?"},
        "The question is too difficult to answer.",
    )
    assert run("DocumentQA", url="https://d.test/guide.txt", question="Why?")["output"] == (
        "The question is too difficult to answer."
    )


def test_document_qa_errors() -> None:
    # An empty question is reported before the url is looked at.
    assert run("DocumentQA", url="https://d.test/nope.txt", question="  ")["exception"] == "The question is empty."
    assert run("DocumentQA", url="https://d.test/nope.txt", question="Why?")["exception"] == (
        "The document of this url failed to be processed."
    )
    with pytest.raises(MissingParameterError):
        run("DocumentQA", url="https://d.test/guide.txt")


def test_document_qa_check_strips_inputs() -> None:
    q = DocumentQA()
    answer = "The question is too difficult to answer."
    gold = env("DocumentQA", {"url": "https://d.test/a.txt", "question": "Who?"}, answer)
    assert q.check(env("DocumentQA", {"url": " https://d.test/a.txt", "question": "Who? "}, answer), gold)
    assert not q.check(env("DocumentQA", {"url": "https://d.test/a.txt", "question": "who?"}, answer), gold)
    assert not q.check(env("DocumentQA", {"url": "https://d.test/b.txt", "question": "Who?"}, answer), gold)
    assert not q.check(env("DocumentQA", {"url": "https://d.test/a.txt", "question": "Who?"}, "x"), gold)


# --- QueryHistoryToday ----------------------------------------------------------------------------

APRIL_12 = [
    "Title: Gagarin flies, Date: 1961-04-12, Description: First human in space.",
    "Title: Shuttle, Date: 1981-04-12, Description: First shuttle launch.",
]


@pytest.mark.parametrize("date", ["04-12", "4-12", " 04-12 ", "2023-04-12", "23-04-12", "1961-4-12"])
def test_history_accepts_month_day_and_full_dates(date: str) -> None:
    assert run("QueryHistoryToday", date=date) == env("QueryHistoryToday", {"date": date}, APRIL_12)


@pytest.mark.parametrize(
    ("date", "message"),
    [
        ("12-04", "The date is not in the database."),
        ("02-29", "day is out of range for month"),  # month-day parses in 1900, not a leap year
        ("2023-02-30", "time data '2023-02-30' does not match format '%m-%d'"),
        ("23-02-30", "time data '0023-02-30' does not match format '%m-%d'"),
        ("April 12", "time data 'April 12' does not match format '%m-%d'"),
    ],
)
def test_history_errors(date: str, message: str) -> None:
    r = run("QueryHistoryToday", date=date)
    assert r["output"] is None
    assert r["exception"] == message


def test_history_date_filter() -> None:
    assert history_date("2024-02-29") == "02-29"  # a full date in a leap year is fine
    assert isinstance(history_date("02-29"), ValueError)


def test_history_check() -> None:
    h = QueryHistoryToday()
    gold = env("QueryHistoryToday", {"date": "2023-04-12"}, APRIL_12)
    assert h.check(env("QueryHistoryToday", {"date": "4-12"}, APRIL_12), gold)
    assert not h.check(env("QueryHistoryToday", {"date": "04-13"}, APRIL_12), gold)
    assert not h.check(env("QueryHistoryToday", {"date": "04-12"}, APRIL_12[:1]), gold)
    # Two unparsable dates never match, even when everything else does.
    bad = env("QueryHistoryToday", {"date": "02-29"}, None, "day is out of range for month")
    assert not h.check(bad, dict(bad))


# --- Translate ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (None, "en"),
        ("fr", "fr"),
        ("French", "fr"),
        ("to spanish", "es"),
        ("Chinese", "zh-cn"),
        ("Traditional Chinese", "zh-tw"),
        ("hebrew", "iw"),  # the first of two codes named hebrew
        ("malayalam", "ms"),  # "malay" is a substring and comes first
        ("zh-cn", "zh-cn"),
    ],
)
def test_resolve_language(value: str | None, code: str) -> None:
    assert resolve_language(value) == code


@pytest.mark.parametrize("value", ["zh", "klingon", ""])
def test_resolve_language_unsupported(value: str) -> None:
    with pytest.raises(Exception, match=r"^Language not supported\.$"):
        resolve_language(value)


def test_languages_table() -> None:
    assert len(LANGUAGES) == 107
    assert LANGUAGES[0] == ("af", "afrikaans") and LANGUAGES[-1] == ("zu", "zulu")


def test_translate_from_recordings() -> None:
    assert run("Translate", src="Hello", tgt_lang="French") == env(
        "Translate", {"src": "Hello", "tgt_lang": "French"}, "Bonjour"
    )
    assert run("Translate", src="Hello", tgt_lang="es", src_lang="English")["output"] == "Hola"
    assert run("Translate", src="Hello", tgt_lang="chinese")["output"] == "你好"
    assert run("Translate", src="Hola")["output"] == "Hello"  # no target means English


def test_translate_echo_puts_src_first() -> None:
    r = run("Translate", tgt_lang="fr", src="Hello")
    assert list(r["input"]) == ["src", "tgt_lang"]


def test_translate_errors() -> None:
    assert run("Translate", src="Hello", tgt_lang="Klingon")["exception"] == "Language not supported."
    # The source language is validated too, before anything is looked up.
    assert run("Translate", src="Hello", src_lang="Elvish", tgt_lang="fr")["exception"] == "Language not supported."
    assert run("Translate", src="Hello", tgt_lang="traditional chinese")["exception"] == (
        "The translation of this text is not available offline."
    )
    assert run("Translate", src="Goodbye", tgt_lang="fr")["exception"] == (
        "The translation of this text is not available offline."
    )
    with pytest.raises(InvalidParameterError):
        run("Translate", src="Hello", target="fr")


def test_translate_check_ignores_languages() -> None:
    t = Translate()
    gold = env("Translate", {"src": "Hello", "tgt_lang": "fr"}, "Bonjour")
    assert t.check(env("Translate", {"src": "Hello", "tgt_lang": "French", "src_lang": "en"}, "Bonjour"), gold)
    assert not t.check(env("Translate", {"src": "hello", "tgt_lang": "fr"}, "Bonjour"), gold)
    assert not t.check(env("Translate", {"src": "Hello", "tgt_lang": "fr"}, "Salut"), gold)
    assert not t.check(env("Dictionary", {"src": "Hello", "tgt_lang": "fr"}, "Bonjour"), gold)


# --- ImageCaption and SpeechRecognition -----------------------------------------------------------


def test_image_caption() -> None:
    assert run("ImageCaption", url=" https://i.test/dog.png ") == env(
        "ImageCaption", {"url": " https://i.test/dog.png "}, "A drawing of a dog."
    )
    assert run("ImageCaption", url="https://i.test/cat.jpeg")["output"] == "A cat."


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https://i.test/dog.JPG", "The url should end with .jpg, .jpeg or .png."),
        ("https://i.test/dog.gif", "The url should end with .jpg, .jpeg or .png."),
        ("https://i.test/cow.jpg", "The image of this url failed to be processed."),
    ],
)
def test_image_caption_errors(url: str, message: str) -> None:
    assert run("ImageCaption", url=url)["exception"] == message


def test_speech_recognition() -> None:
    assert run("SpeechRecognition", url="https://a.test/memo.wav ") == env(
        "SpeechRecognition", {"url": "https://a.test/memo.wav "}, "Call Ann at noon."
    )
    assert run("SpeechRecognition", url="https://a.test/memo.mp3")["exception"] == "The url should end with .wav."
    assert run("SpeechRecognition", url="https://a.test/other.wav")["exception"] == (
        "The audio of this url failed to be processed."
    )


@pytest.mark.parametrize("tool", [ImageCaption(), SpeechRecognition()])
def test_exact_checkers(tool: Any) -> None:
    gold = env(tool.name, {"url": "u.wav"}, "text")
    assert tool.check(env(tool.name, {"url": "u.wav"}, "text"), gold)
    assert not tool.check(env(tool.name, {"url": "u.wav "}, "text"), gold)
    assert not tool.check(env(tool.name, {"url": "u.wav"}, "other"), gold)
    assert not tool.check(env(tool.name, {"url": "u.wav"}, "text", "boom"), gold)


# --- bundled data ---------------------------------------------------------------------------------


def test_bundled_databases_answer_realistic_queries() -> None:
    names = ["Wiki", "SearchEngine", "QuestionAnswering", "History", "ImageCaptioning", "SpeechRecognition"]
    dbs = {**load_databases(DATA / "init_database", names), **load_databases(DATA / "recordings")}
    sb = sandbox_for(*TOOLS, dbs=dbs)

    def out(name: str, **args: Any) -> Any:
        result = sb.execute(ApiCall(name, args))
        assert result.exception is None, result.exception
        return result.output

    search = dbs["SearchEngine"]
    assert search["tokenized_documents"] == [tokenize_document(d) for d in search["raw_documents"]]
    titles = [d["title"] for d in out("SearchEngine", keyword="two-factor authentication for my passwords")]
    assert titles == ["Keeping Passwords Safe", "What Is Two-Factor Authentication?"]
    assert out("Wiki", keyword="Lunar_Eclipse")["url"] == "https://en.wikipedia.org/wiki/Lunar_eclipse"
    assert out("QueryHistoryToday", date="2023-03-31")[0].startswith(
        "Title: Eiffel Tower is inaugurated, Date: 1889-03-31"
    )
    assert out(
        "DocumentQA", url="https://docs.example.org/city/library-services.txt", question="How long is the loan period?"
    ) == ("The question is too difficult to answer.")
    assert out("ImageCaption", url="https://images.example.org/photos/harbour-sunset.png").startswith("A painted")
    assert out("SpeechRecognition", url="https://audio.example.org/recordings/alarm-six.wav") == (
        "Set an alarm for six thirty tomorrow morning."
    )
    assert out("Dictionary", keyword="Status_quo")[0]["partOfSpeech"] == "noun"
    assert out("Translate", src="Where is the train station?", tgt_lang="German") == "Wo ist der Bahnhof?"
