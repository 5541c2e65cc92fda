"""The authoring pipeline and the validator, on a tiny benchmark built in a temporary folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from apibank_lib.core.errors import DataError
from apibank_lib.data.authoring import build, load_sources, render_param
from apibank_lib.data.datasets import default_data_root, load_benchmark
from apibank_lib.grading.validate import validate

TOKEN = json.loads((default_data_root() / "init_database" / "Account.json").read_text())["AliceMorgan"]["token"]

L1 = f"""
dialogues:
  - id: AddAlarm-level-1-1
    turns:
      - user: "Wake me at 6:45 on Monday. AliceMorgan / sunflower88"
      - api: GetUserToken(username='AliceMorgan', password='sunflower88')
      - api: AddAlarm(token='{TOKEN}', time='2023-04-03 06:45:00')
      - ai: "Your alarm is set for 6:45 on Monday."
  - id: AddMeeting-QueryMeeting-level-2-1
    turns:
      - user: "Book 'Roadmap chat' Tuesday 2-3pm in Room 7 with Ana Lima, then show it. AliceMorgan, sunflower88."
      - api: GetUserToken(username='AliceMorgan', password='sunflower88')
      - ai: "Logged in."
      - api: AddMeeting(token='{TOKEN}', meeting_topic='Roadmap chat', start_time='2023-04-04 14:00:00', end_time='2023-04-04 15:00:00', location='Room 7', attendees="['Ana Lima']")
      - ai: "Booked."
      - api: QueryMeeting(token='{TOKEN}', meeting_topic='Roadmap chat', start_time='2023-04-04 14:00:00', end_time='2023-04-04 15:00:00', location='Room 7', attendees="['Ana Lima']")
      - ai: "Roadmap chat, Tuesday 14:00-15:00 in Room 7 with Ana Lima."
"""
L2 = """
dialogues:
  - id: BookHotel-level-3-1
    turns:
      - user: "I need a room somewhere nice for two nights in May."
      - api: ToolSearcher(keywords='hotel room booking')
      - ai: "I can book hotels. Which hotel and dates?"
      - user: "Seaside Lodge, May 10 to 12, two adults."
      - api: BookHotel(hotel_name='Seaside Lodge', check_in_time='2023-05-10', check_out_time='2023-05-12', room_count='1', adult_count='2', child_count='0')
      - ai: "Booked."
"""
L3 = """
items:
  - requirement: "What should I wear today in the first city of the geocoding table?"
    steps:
      - ToolSearcher(keywords='coordinates of a city')
      - Geocoding(address='CITY')
      - ToolSearcher(keywords='weather at coordinates')
      - GetWeatherForCoordinates(latitude='LAT', longitude='LON')
    response: "Here is the weather."
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("tiny")
    data, src = base / "eval", base / "src"
    for sub in ("init_database", "recordings", "lv3_database"):
        shutil.copytree(default_data_root() / sub, data / sub)
    geo = json.loads((data / "lv3_database" / "Lv3Geocoding.json").read_text())
    city, coords = next(iter(geo.items())) if isinstance(geo, dict) else (geo[0]["address"], geo[0])
    for lv, text in ((1, L1), (2, L2), (3, L3.replace("CITY", city).replace("LAT", str(coords["latitude"])).replace("LON", str(coords["longitude"])))):
        (src / f"level-{lv}").mkdir(parents=True)
        (src / f"level-{lv}" / "x.yaml").write_text(text)
    report = build(src, data)
    assert report.dialogues == {1: 2, 2: 1} and report.items == 1
    return data


def _copy(tiny: Path, tmp_path: Path) -> Path:
    root = tmp_path / "eval"
    shutil.copytree(tiny, root)
    return root


def _l1(root: Path, name: str) -> Path:
    return root / "lv1-lv2-samples" / "level-1-given-desc" / f"{name}.jsonl"


def _edit_record(path: Path, index: int, change) -> None:  # noqa: ANN001
    lines = path.read_text().splitlines()
    rec = json.loads(lines[index])
    change(rec)
    lines[index] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")


def test_built_records_are_official_and_recorded_by_our_tools(tiny: Path) -> None:
    lines = _l1(tiny, "AddMeeting-QueryMeeting-level-2-1").read_text().splitlines()
    meeting = json.loads(lines[3])
    assert meeting["param_dict"]["attendees"] == "['Ana Lima']"  # text, as in the official data
    assert meeting["result"]["input"]["attendees"] == ["Ana Lima"]  # typed, as recorded
    query = json.loads(lines[5])
    assert query["result"]["output"]["meeting_topic"] == "Roadmap chat"  # state carried through the dialogue
    bench = load_benchmark(tiny)
    assert len(bench.level1) == 2 and len(bench.level2) == 1 and len(bench.level3) == 1
    assert render_param(True) == "True" and render_param([{"a": 1}]) == "[{'a': 1}]"


def test_the_tiny_benchmark_is_valid(tiny: Path) -> None:
    problems = validate(tiny, min_uses=0).problems
    assert problems == []


def test_build_check_detects_stale_files(tiny: Path, tmp_path: Path) -> None:
    root = _copy(tiny, tmp_path)
    src = tiny.parent / "src"
    build(src, root, check=True)
    _edit_record(_l1(root, "AddAlarm-level-1-1"), 0, lambda r: r.update(text="changed"))
    with pytest.raises(DataError, match="out of date"):
        build(src, root, check=True)


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (lambda r: r["result"].update(output="failed"), "judged wrong under v2"),
        (lambda r: r.update(api_name="AddAlarms"), "invalid tool name"),
        (lambda r: r["param_dict"].update(when="2023-04-03 06:45:00"), "invalid parameter name. parameter: when"),
        (lambda r: r["result"].update(exception="The token is invalid.", output=None), "records an exception"),
        (lambda r: r["param_dict"].update(token="not-seen-before"), "token that did not appear earlier"),
        (lambda r: r["param_dict"].update(time="2024-04-03 06:45:00"), "is not in 2023"),
    ],
)
def test_broken_gold_calls_are_located(tiny: Path, tmp_path: Path, breakage, message: str) -> None:  # noqa: ANN001
    root = _copy(tiny, tmp_path)
    path = _l1(root, "AddAlarm-level-1-1")
    _edit_record(path, 2, breakage)
    problems = validate(root, min_uses=0).problems
    hits = [p for p in problems if message in p.message]
    assert hits, problems
    assert hits[0].path.endswith("AddAlarm-level-1-1.jsonl") and hits[0].line == 3


def test_malformed_line_is_located(tiny: Path, tmp_path: Path) -> None:
    root = _copy(tiny, tmp_path)
    path = _l1(root, "AddAlarm-level-1-1")
    path.write_text(path.read_text().replace('"role": "AI"', '"role": "AI",,'))
    problems = validate(root, min_uses=0).problems
    assert len(problems) == 1 and problems[0].line == 4 and "invalid JSON" in problems[0].message


def test_duplicate_dialogue_and_coverage(tiny: Path, tmp_path: Path) -> None:
    root = _copy(tiny, tmp_path)
    shutil.copy(_l1(root, "AddAlarm-level-1-1"), _l1(root, "AddAlarm-level-1-2"))
    problems = validate(root, min_uses=1).problems
    assert any("duplicates the dialogue AddAlarm-level-1-1" in p.message for p in problems)
    assert any("CheckToken is used 0 time(s) at levels 1-2" in p.message for p in problems)
    assert any("level-3 API TaxCalculator is never used" in p.message for p in problems)


def test_broken_level3_step_is_located(tiny: Path, tmp_path: Path) -> None:
    root = _copy(tiny, tmp_path)
    path = root / "test-data" / "level-3.json"
    items = json.loads(path.read_text())
    items[0]["apis"][3]["output"]["output"] = {"temperature": -99}
    path.write_text(json.dumps(items, indent=1))
    problems = validate(root, min_uses=0).problems
    assert any("GetWeatherForCoordinates is judged wrong under v2" in p.message and p.path.endswith("level-3.json") and p.line == 3 for p in problems), problems


def test_source_errors_name_the_dialogue_and_turn(tmp_path: Path) -> None:
    src = tmp_path / "src" / "level-1"
    src.mkdir(parents=True)
    (src / "bad.yaml").write_text("dialogues:\n  - id: X-level-1-1\n    turns:\n      - user: hi\n      - robot: hello\n")
    with pytest.raises(DataError, match="X-level-1-1, turn 2: write exactly one of user:, ai: or api:"):
        load_sources(tmp_path / "src")
    (src / "bad.yaml").write_text(
        "dialogues:\n  - id: X-level-1-1\n    turns:\n      - user: hi\n      - api: AddAlarm(token='nope', time='2023-04-03 06:45:00')\n"
    )
    data = tmp_path / "eval"
    for sub in ("init_database", "recordings", "lv3_database"):
        shutil.copytree(default_data_root() / sub, data / sub)
    with pytest.raises(DataError, match=r"X-level-1-1, turn 2: the gold call AddAlarm raised: The token is invalid\."):
        build(tmp_path / "src", data)
