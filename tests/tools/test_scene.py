"""Smart-home tools: scenes and timed switches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.errors import InvalidParameterError
from apibank_lib.core.types import ApiCall
from apibank_lib.env.databases import load_databases
from apibank_lib.env.tools.base import CORRECTED, ORIGINAL
from apibank_lib.env.tools.scene import AddScene, CancelTimedSwitch, DeleteScene, ModifyScene, QueryScene, TimedSwitch
from tests.helpers import sandbox_for

DATA = Path(__file__).resolve().parents[2] / "data" / "eval" / "init_database"
SCENE_TOOLS = (AddScene, DeleteScene, ModifyScene, QueryScene)
SWITCH_TOOLS = (TimedSwitch, CancelTimedSwitch)


def scenes() -> dict[str, Any]:
    return {
        "tea time": [
            {"name": "kettle", "description": "Electric kettle"},
            {"name": "kitchen radio", "description": "Radio on the shelf"},
        ],
        "tea party": [{"name": "kettle", "description": "Electric kettle"}],
    }


def switches() -> dict[str, Any]:
    return {
        "desk fan": [{"time": "2023-04-01 09:00:00", "on": True}, {"time": "2023-04-01 12:00:00", "on": False}],
        "Hall Lamp": [{"time": "2023-04-01 20:00:00", "on": True}],
    }


def run(tool: str, conversion: str = "v2", **args: Any) -> tuple[dict[str, Any], Any]:
    sb = sandbox_for(
        *SCENE_TOOLS, *SWITCH_TOOLS, dbs={"Scenes": scenes(), "TimeSwitch": switches()}, conversion=conversion
    )
    result = sb.execute(ApiCall(tool, args)).to_dict()
    db = sb.database("Scenes" if tool in {t.name for t in SCENE_TOOLS} else "TimeSwitch")
    return result, db


def env(api: str, inp: dict[str, Any], output: Any, exception: str | None = None) -> dict[str, Any]:
    return {"api_name": api, "input": inp, "output": output, "exception": exception}


# --- AddScene -------------------------------------------------------------------------------------


def test_add_scene_normalises_and_sorts_devices_in_the_echo_and_the_database() -> None:
    devices = [
        {"name": " Toaster ", "description": " Two-slot toaster "},
        {"name": "Blender", "description": "Jug blender"},
    ]
    call = ApiCall("AddScene", {"name": " Breakfast ", "devices": devices})
    sb = sandbox_for(*SCENE_TOOLS, dbs={"Scenes": scenes()})
    result = sb.execute(call).to_dict()
    expected = [
        {"name": "blender", "description": "Jug blender"},
        {"name": "toaster", "description": "Two-slot toaster"},
    ]
    assert result == env("AddScene", {"name": " Breakfast ", "devices": expected}, "success")
    assert sb.database("Scenes")["breakfast"] == expected
    # the caller's arguments are not mutated
    assert call.args["devices"][0] == {"name": " Toaster ", "description": " Two-slot toaster "}


def test_add_scene_accepts_an_empty_device_list() -> None:
    result, db = run("AddScene", name="Empty", devices=[])
    assert result["output"] == "success" and db["empty"] == []


@pytest.mark.parametrize(
    ("name", "devices", "message"),
    [
        ("  ", [], "Scene name cannot be empty."),
        ("new", [{"name": "lamp"}], "Invalid device format."),
        (
            "new",
            [{"name": "Lamp", "description": "a"}, {"name": " lamp ", "description": "b"}],
            "Device name cannot be duplicated.",
        ),
        ("Tea Time", [{"name": "kettle", "description": "x"}], "Scene name already exists."),
        ("Tea Time", [{"description": "x"}], "Invalid device format."),  # devices are checked before the name clash
        ("new", ["lamp"], "Invalid device format."),  # membership test on a text item is a substring test
        ("new", ["name and description"], "string indices must be integers, not 'str'"),
    ],
)
def test_add_scene_errors(name: str, devices: list[Any], message: str) -> None:
    result, db = run("AddScene", name=name, devices=devices)
    assert result["output"] is None and result["exception"] == message
    assert set(db) == {"tea time", "tea party"}


def test_add_scene_error_part_way_leaves_earlier_devices_normalised_in_the_echo() -> None:
    result, _ = run("AddScene", name="x", devices=[{"name": " A ", "description": " d "}, {"name": "b"}])
    assert result["input"]["devices"] == [{"name": "a", "description": "d"}, {"name": "b"}]


def test_add_scene_paper_conversion_keeps_list_text_unparsed() -> None:
    text = "[{'name': 'Lamp', 'description': 'Desk lamp'}]"
    result, _ = run("AddScene", conversion="paper", name="x", devices=text)
    assert result["exception"] == "Invalid device format." and result["input"]["devices"] == text
    result, _ = run("AddScene", conversion="paper", name="x", devices="")
    assert result["exception"] == "'str' object has no attribute 'sort'"
    result, db = run("AddScene", conversion="v2", name="x", devices=text)
    assert result["output"] == "success" and db["x"] == [{"name": "lamp", "description": "Desk lamp"}]


def test_add_scene_check() -> None:
    gold = env(
        "AddScene",
        {"name": "Tea", "devices": [{"name": "B", "description": "b"}, {"name": "a", "description": "a"}]},
        "success",
    )
    pred = env(
        "AddScene",
        {"name": " tea ", "devices": [{"name": " a", "description": "a "}, {"name": "b", "description": "b"}]},
        "success",
    )
    assert AddScene().check(pred, gold)
    other = env("AddScene", {"name": "tea", "devices": [{"name": "a", "description": "a"}]}, "success")
    assert not AddScene().check(other, gold)
    assert not AddScene().check(env("AddScene", gold["input"], "success"), env("AddScene", gold["input"], None, "e"))
    # the output is only judged for presence: a missing output with the same (null) exception passes
    assert AddScene().check(env("AddScene", pred["input"], None), gold)
    assert not AddScene().check(env("AddScene", pred["input"], None, "Scene name already exists."), gold)


def test_add_scene_check_raises_on_malformed_devices_and_check_v2_judges_them_wrong() -> None:
    gold = env("AddScene", {"name": "t", "devices": [{"name": "a", "description": "a"}]}, "success")
    no_description = env("AddScene", {"name": "t", "devices": [{"name": "a"}]}, None, "Invalid device format.")
    with pytest.raises(KeyError):
        AddScene().check(no_description, gold)
    text_item = env("AddScene", {"name": "t", "devices": ["a"]}, None, "Invalid device format.")
    with pytest.raises(TypeError):
        AddScene().check(text_item, gold)
    assert AddScene().check_corrected(text_item, gold) is False
    same = env("AddScene", {"name": "T", "devices": [{"name": "A", "description": "a"}]}, "success")
    assert AddScene().check_corrected(same, gold) is True


# --- DeleteScene, ModifyScene, QueryScene -----------------------------------------------------------


def test_delete_scene() -> None:
    result, db = run("DeleteScene", name=" Tea Time ")
    assert result == env("DeleteScene", {"name": " Tea Time "}, "success") and "tea time" not in db
    assert run("DeleteScene", name="tea")[0]["exception"] == "The scene does not exist."
    assert run("DeleteScene", name=" ")[0]["exception"] == "Scene name cannot be empty."


def test_delete_scene_check() -> None:
    gold = env("DeleteScene", {"name": "Tea Time"}, "success")
    assert DeleteScene().check(env("DeleteScene", {"name": "tea time "}, "success"), gold)
    assert not DeleteScene().check(env("DeleteScene", {"name": "tea party"}, "success"), gold)
    assert not DeleteScene().check(env("DeleteScene", {"name": "tea time"}, None, "The scene does not exist."), gold)


def test_modify_scene() -> None:
    new = [{"name": "Teapot ", "description": " Glass teapot"}]
    result, db = run("ModifyScene", name="TEA PARTY", devices=new)
    assert result == env(
        "ModifyScene", {"name": "TEA PARTY", "devices": [{"name": "teapot", "description": "Glass teapot"}]}, "success"
    )
    assert db["tea party"] == [{"name": "teapot", "description": "Glass teapot"}]
    assert run("ModifyScene", name="tea", devices=new)[0]["exception"] == "The scene does not exist."
    assert run("ModifyScene", name="tea", devices=[{"name": "x"}])[0]["exception"] == "Invalid device format."
    assert run("ModifyScene", name="", devices=[])[0]["exception"] == "Scene name cannot be empty."


def test_modify_scene_check_compares_output_exactly() -> None:
    devices = [{"name": "a", "description": "a"}]
    gold = env("ModifyScene", {"name": "t", "devices": devices}, "success")
    assert ModifyScene().check(
        env("ModifyScene", {"name": "T", "devices": [{"name": " A", "description": "a"}]}, "success"), gold
    )
    assert not ModifyScene().check(env("ModifyScene", {"name": "t", "devices": devices}, None), gold)
    assert not ModifyScene().check(
        env("ModifyScene", {"name": "t", "devices": [{"name": "b", "description": "a"}]}, "success"), gold
    )
    assert ModifyScene().check_corrected(env("ModifyScene", {"name": "t", "devices": "[]"}, None, "x"), gold) is False


def test_query_scene() -> None:
    result, _ = run("QueryScene", name=" Tea Party")
    assert result == env("QueryScene", {"name": " Tea Party"}, [{"name": "kettle", "description": "Electric kettle"}])
    assert run("QueryScene", name="tea")[0]["exception"] == "Scene not found."
    assert run("QueryScene", name="\t")[0]["exception"] == "Scene name cannot be empty."


def test_query_scene_check_has_no_v2_change() -> None:
    out = [{"name": "kettle", "description": "Electric kettle"}]
    gold = env("QueryScene", {"name": "Tea Party"}, [{"name": "Kettle", "description": "Electric kettle"}])
    pred = env("QueryScene", {"name": "tea party"}, out)
    assert QueryScene.checker_rules() == (ORIGINAL,)  # the corrected protocol falls back to the original rule
    assert not QueryScene().check(pred, gold) and not QueryScene().checker((CORRECTED, ORIGINAL))(pred, gold)
    assert QueryScene().check(pred, env("QueryScene", {"name": "TEA PARTY "}, out))


# --- TimedSwitch ------------------------------------------------------------------------------------


def test_timed_switch_creates_overwrites_and_appends() -> None:
    result, db = run("TimedSwitch", name=" Garden Pump ", time="2023-4-2 6:5:0", on=True)
    assert result == env("TimedSwitch", {"name": " Garden Pump ", "time": "2023-4-2 6:5:0", "on": True}, "success")
    assert db["garden pump"] == [{"time": "2023-04-02 06:05:00", "on": True}]
    _, db = run("TimedSwitch", name="desk fan", time="2023-04-01 09:00:00", on=False)
    assert db["desk fan"][0] == {"time": "2023-04-01 09:00:00", "on": False} and len(db["desk fan"]) == 2
    _, db = run("TimedSwitch", name="desk fan", time="2023-04-02 09:00:00", on=True)
    assert db["desk fan"][-1] == {"time": "2023-04-02 09:00:00", "on": True} and len(db["desk fan"]) == 3


@pytest.mark.parametrize(
    ("name", "time", "message"),
    [
        ("  ", "2023-04-01 09:00:00", "Name cannot be empty."),
        ("fan", "2023-04-01", "time data '2023-04-01' does not match format '%Y-%m-%d %H:%M:%S'"),
        ("fan", "2023-04-31 09:00:00", "day is out of range for month"),
    ],
)
def test_timed_switch_errors(name: str, time: str, message: str) -> None:
    result, db = run("TimedSwitch", name=name, time=time, on=True)
    assert result["exception"] == message and "fan" not in db


def test_timed_switch_on_conversion_paper_vs_v2() -> None:
    assert (
        run("TimedSwitch", conversion="paper", name="fan", time="2023-04-01 09:00:00", on="true")[0]["input"]["on"]
        is False
    )
    assert (
        run("TimedSwitch", conversion="paper", name="fan", time="2023-04-01 09:00:00", on="True")[0]["input"]["on"]
        is True
    )
    assert (
        run("TimedSwitch", conversion="v2", name="fan", time="2023-04-01 09:00:00", on="true")[0]["input"]["on"] is True
    )


def test_timed_switch_device_id_alias_only_in_v2() -> None:
    result, db = run("TimedSwitch", device_id="12345", time="2023-04-01 09:00:00", on=True)
    assert result["input"]["name"] == "12345" and db["12345"] == [{"time": "2023-04-01 09:00:00", "on": True}]
    with pytest.raises(InvalidParameterError, match="invalid parameter name. parameter: device_id"):
        run("TimedSwitch", conversion="paper", device_id="12345", time="2023-04-01 09:00:00", on="True")


def test_timed_switch_check() -> None:
    gold = env("TimedSwitch", {"name": "Desk Fan", "time": "2023-04-01 09:00:00", "on": True}, "success")
    assert TimedSwitch().check(
        env("TimedSwitch", {"name": "desk fan ", "time": "2023-4-1 9:0:0", "on": True}, "success"), gold
    )
    assert not TimedSwitch().check(
        env("TimedSwitch", {"name": "desk fan", "time": "2023-04-01 09:00:00", "on": False}, "success"), gold
    )
    bad = {"name": "x", "time": "soon", "on": True}
    assert not TimedSwitch().check(env("TimedSwitch", bad, None, "e"), env("TimedSwitch", bad, None, "e"))


def test_timed_switch_check_v2_reads_gold_device_id() -> None:
    gold = env("TimedSwitch", {"device_id": "12345", "time": "2023-04-01 09:00:00", "on": True}, "success")
    pred = env("TimedSwitch", {"name": "12345", "time": "2023-04-01 09:00:00", "on": True}, "success")
    with pytest.raises(KeyError):
        TimedSwitch().check(pred, gold)
    assert TimedSwitch().check_corrected(pred, gold) is True
    assert (
        TimedSwitch().check_corrected(env("TimedSwitch", {**pred["input"], "name": "12346"}, "success"), gold) is False
    )


# --- CancelTimedSwitch -------------------------------------------------------------------------------


def test_cancel_timed_switch() -> None:
    result, db = run("CancelTimedSwitch", name="Desk Fan", time="2023-4-1 12:00:00")
    assert result == env("CancelTimedSwitch", {"name": "Desk Fan", "time": "2023-4-1 12:00:00"}, "success")
    assert db["desk fan"] == [{"time": "2023-04-01 09:00:00", "on": True}]


@pytest.mark.parametrize(
    ("name", "time", "message"),
    [
        (" ", "2023-04-01 09:00:00", "name cannot be empty."),
        ("desk fan", "2023-04-01 09:00:00pm", "unconverted data remains: pm"),
        ("ceiling fan", "2023-04-01 09:00:00", "device name does not exist."),
        ("desk fan", "2023-04-01 10:00:00", "time does not exist."),
        ("Hall Lamp", "2023-04-01 20:00:00", "device name does not exist."),  # a key with capitals is unreachable
    ],
)
def test_cancel_timed_switch_errors(name: str, time: str, message: str) -> None:
    result, db = run("CancelTimedSwitch", name=name, time=time)
    assert result["exception"] == message and len(db["desk fan"]) == 2


def test_cancel_timed_switch_check_and_v2_device_id() -> None:
    gold = env("CancelTimedSwitch", {"device_id": "10000025", "time": "2023-03-19 09:30:00"}, "success")
    pred = env("CancelTimedSwitch", {"name": "10000025", "time": "2023-3-19 09:30:00"}, "success")
    with pytest.raises(KeyError):
        CancelTimedSwitch().check(pred, gold)
    assert CancelTimedSwitch().check_corrected(pred, gold) is True
    named = env("CancelTimedSwitch", {"name": "Desk Fan", "time": "2023-03-19 09:30:00"}, "success")
    assert CancelTimedSwitch().check(
        env("CancelTimedSwitch", {"name": "desk fan", "time": "2023-03-19 09:30:00"}, "success"), named
    )
    assert not CancelTimedSwitch().check(
        env("CancelTimedSwitch", {"name": "desk fan", "time": "2023-03-19 09:31:00"}, "success"), named
    )


# --- bundled data -----------------------------------------------------------------------------------


def test_bundled_databases_serve_realistic_queries() -> None:
    dbs = load_databases(DATA, ["Scenes", "TimeSwitch"])
    sb = sandbox_for(*SCENE_TOOLS, *SWITCH_TOOLS, dbs=dbs)
    devices = sb.execute("[QueryScene(name='Movie Night')]").output
    assert [d["name"] for d in devices] == ["living room lights", "projector", "soundbar", "window shades"]
    assert all(k == k.lower() for k in dbs["Scenes"])
    assert sb.execute("[CancelTimedSwitch(name='Coffee Machine', time='2023-04-01 08:00:00')]").output == "success"
    assert (
        sb.execute("[CancelTimedSwitch(name='coffee machine', time='2023-04-01 08:00:00')]").exception
        == "time does not exist."
    )
    assert "2023-04-01 08:00:00" in [e["time"] for e in dbs["TimeSwitch"]["coffee machine"]]  # pristine data untouched


def test_only_queries_are_read_only() -> None:
    assert [t.name for t in (*SCENE_TOOLS, *SWITCH_TOOLS) if t.read_only] == ["QueryScene"]
