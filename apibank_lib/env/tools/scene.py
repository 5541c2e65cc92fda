"""Smart-home tools: scenes (groups of devices) and timed device switches.

Scenes live in the ``Scenes`` database (lower-case scene name -> list of
``{name, description}`` devices), shared by AddScene, DeleteScene, ModifyScene
and QueryScene. Timed switches live in ``TimeSwitch`` (device name -> list of
``{time, on}``), shared by TimedSwitch and CancelTimedSwitch.

As in the original, AddScene and ModifyScene normalise the device list they
are given in place (names stripped and lower-cased, descriptions stripped,
sorted by name), so the envelope's ``input.devices`` shows the normalised list.
Ours normalises a private copy, so the caller's arguments stay untouched.

Fixes made by the corrected rule:

* AddScene, ModifyScene: the original checker raises ``TypeError`` or
  ``AttributeError`` (rather than judging) when a device list holds something
  other than ``{name, description}`` objects with text values, or is not a
  list at all; ours judges such a prediction incorrect.
* TimedSwitch, CancelTimedSwitch: the gold records were made with an older
  signature whose device parameter was called ``device_id``; the original
  checker raises ``KeyError`` on them. Ours reads ``device_id`` where ``name``
  is absent (the typed conversion also accepts ``device_id`` as an alias).

QueryScene's gold records expect title-cased device names that the shipped
data does not have: a data defect, so its checker is unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from apibank_lib.core.errors import ToolFailure
from apibank_lib.core.types import ApiResult, Param
from apibank_lib.env.shapes import BOOL, STR, DictOf, ListOf, Record
from apibank_lib.env.tools.base import CORRECTED, Tool, checker_rule
from apibank_lib.env.tools.common import DT, original_errors, year_pad_normalise

__all__ = ["AddScene", "DeleteScene", "ModifyScene", "QueryScene", "TimedSwitch", "CancelTimedSwitch"]

_SCENES_SHAPE = DictOf(ListOf(Record({"name": STR, "description": STR})))
"""Record shape of the ``Scenes`` database."""

_TIME_SWITCH_SHAPE = DictOf(ListOf(Record({"time": STR, "on": BOOL})))
"""Record shape of the ``TimeSwitch`` database."""


def _scene_key(name: Any) -> str:
    """The stored form of a scene name; fails on a blank one."""
    # A name that is not text fails on .strip() with Python's text, as in the original.
    with original_errors(AttributeError):
        key = name.strip().lower()
    if key == "":
        raise ToolFailure("Scene name cannot be empty.")
    return key


def _normalise_devices(devices: Any) -> Any:
    """Validate and normalise a device list in place, then sort it by name (the original's order of checks)."""
    seen: set[str] = set()
    # The original walks the devices as given, so a list of the wrong shape fails with Python's text:
    # ``'NoneType' object is not iterable``; ``'str' object has no attribute 'sort'`` for empty text
    # (any other text fails the membership test, which on text is a substring test); on an item
    # that is not an object ``argument of type 'int' is not iterable`` or, on text that contains both
    # key names, ``string indices must be integers, not 'str'``; ``'int' object has no attribute
    # 'strip'`` for a name or description that is not text.
    with original_errors(TypeError, AttributeError):
        for device in devices:
            if "name" not in device or "description" not in device:
                raise ToolFailure("Invalid device format.")
            device["name"] = device["name"].strip().lower()
            device["description"] = device["description"].strip()
            if device["name"] in seen:
                raise ToolFailure("Device name cannot be duplicated.")
            seen.add(device["name"])
        devices.sort(key=lambda d: d["name"])
    return devices


def _checker_devices(devices: Any) -> Any:
    """The checkers' normalisation: in place, no validation (a missing key raises KeyError)."""
    for device in devices:
        device["name"] = device["name"].strip().lower()
        device["description"] = device["description"].strip()
    devices.sort(key=lambda d: d["name"])
    return devices


def _same_scene_result(pred: dict[str, Any], gold: dict[str, Any]) -> bool:
    """Scene names equal after strip and lower-case; output and exception equal."""
    return (
        pred["input"]["name"].strip().lower() == gold["input"]["name"].strip().lower()
        and pred["output"] == gold["output"]
        and pred["exception"] == gold["exception"]
    )


def _false_on_error(
    check: Callable[[dict[str, Any], dict[str, Any]], bool], pred: dict[str, Any], gold: dict[str, Any]
) -> bool:
    """Run an original checker, turning the errors it raises on malformed values into "incorrect"."""
    try:
        return check(pred, gold)
    except (TypeError, AttributeError):
        return False


class _DeviceListTool(Tool):
    """Shared by AddScene and ModifyScene: normalise a private copy of ``devices``."""

    abstract = True

    def call(self, **kwargs: Any) -> ApiResult:
        # The original mutates the caller's list; a copy keeps gold calls and parsed arguments intact
        # while the echoed input still shows the normalised devices.
        if "devices" in kwargs:
            kwargs["devices"] = copy.deepcopy(kwargs["devices"])
        return super().call(**kwargs)

    @checker_rule(CORRECTED)
    def check_corrected(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return _false_on_error(self.check, pred, gold)


class AddScene(_DeviceListTool):
    """Create a new scene from a list of devices."""

    name = "AddScene"
    domain = "smart home"
    description = "Create a smart-home scene: a named group of devices that can be controlled together."
    input_parameters = {
        "name": Param("str", "The name of the new scene."),
        "devices": Param("list", "The scene's devices, a list of objects with a 'name' and a 'description'."),
    }
    output_parameters = {"status": Param("str", "success or failed")}
    database_name = "Scenes"
    database_shape = _SCENES_SHAPE
    writes_database = True

    def run(self, name: Any, devices: Any) -> Any:
        key = _scene_key(name)
        devices = _normalise_devices(devices)
        if key in self.db:
            raise ToolFailure("Scene name already exists.")
        self.db[key] = devices
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        same_name = pred["input"]["name"].strip().lower() == gold["input"]["name"].strip().lower()
        same_devices = _checker_devices(pred["input"]["devices"]) == _checker_devices(gold["input"]["devices"])
        # The new scene's output is only judged for presence: a prediction must not succeed where the gold failed.
        if gold["output"] is None and pred["output"] is not None:
            return False
        return same_name and same_devices and pred["exception"] == gold["exception"]


class DeleteScene(Tool):
    """Delete a scene by name."""

    name = "DeleteScene"
    domain = "smart home"
    description = "Delete a smart-home scene by its name."
    input_parameters = {"name": Param("str", "The name of the scene to delete.")}
    output_parameters = {"status": Param("str", "success or failed")}
    database_name = "Scenes"
    database_shape = _SCENES_SHAPE
    writes_database = True

    def run(self, name: Any) -> Any:
        key = _scene_key(name)
        if key not in self.db:
            raise ToolFailure("The scene does not exist.")
        del self.db[key]
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return _same_scene_result(pred, gold)


class ModifyScene(_DeviceListTool):
    """Replace the device list of an existing scene."""

    name = "ModifyScene"
    domain = "smart home"
    description = "Replace the devices of an existing smart-home scene with a new list of devices."
    input_parameters = {
        "name": Param("str", "The name of the scene to change."),
        "devices": Param("list", "The scene's new devices, a list of objects with a 'name' and a 'description'."),
    }
    output_parameters = {"status": Param("str", "success or failed")}
    database_name = "Scenes"
    database_shape = _SCENES_SHAPE
    writes_database = True

    def run(self, name: Any, devices: Any) -> Any:
        key = _scene_key(name)
        devices = _normalise_devices(devices)
        if key not in self.db:
            raise ToolFailure("The scene does not exist.")
        self.db[key] = devices
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        pred_devices = _checker_devices(pred["input"]["devices"])
        gold_devices = _checker_devices(gold["input"]["devices"])
        return pred_devices == gold_devices and _same_scene_result(pred, gold)


class QueryScene(Tool):
    """List the devices of a scene."""

    name = "QueryScene"
    domain = "smart home"
    description = "Look up a smart-home scene by name and list its devices."
    input_parameters = {"name": Param("str", "The name of the scene to look up.")}
    output_parameters = {"devices": Param("list", "The scene's devices, each with a name and a description.")}
    database_name = "Scenes"
    database_shape = _SCENES_SHAPE
    read_only = True

    def run(self, name: Any) -> Any:
        key = _scene_key(name)
        if key not in self.db:
            raise ToolFailure("Scene not found.")
        return self.db[key]

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return _same_scene_result(pred, gold)


def _device_key(name: Any) -> str:
    """A device name stripped and lower-cased; a name that is not text fails with Python's text, as in the original."""
    with original_errors(AttributeError):
        return name.strip().lower()


def _name(inp: dict[str, Any]) -> Any:
    """The device a timed-switch envelope names, read as the original checkers do."""
    return inp["name"]


def _device(inp: dict[str, Any]) -> Any:
    """The device a timed-switch envelope names: ``name``, or the gold records' older ``device_id``."""
    return inp["name"] if "name" in inp else inp["device_id"]


def _same_switch(pred: dict[str, Any], gold: dict[str, Any], device: Callable[[dict[str, Any]], Any]) -> bool:
    """Device names equal after strip and lower-case, normalised times equal, output and exception equal.

    An unparsable time normalises to an exception object, which equals nothing: it never matches.
    """
    p, g = pred["input"], gold["input"]
    return (
        device(p).strip().lower() == device(g).strip().lower()
        and year_pad_normalise(p["time"], DT) == year_pad_normalise(g["time"], DT)
        and pred["output"] == gold["output"]
        and pred["exception"] == gold["exception"]
    )


class TimedSwitch(Tool):
    """Schedule a device to switch on or off at a given time."""

    name = "TimedSwitch"
    domain = "smart home"
    description = "Schedule a smart-home device to switch on or off at a given date and time."
    input_parameters = {
        "name": Param("str", "The name of the device."),
        "time": Param("str", "When to switch, as YYYY-MM-DD HH:MM:SS."),
        "on": Param("bool", "True to switch the device on, False to switch it off."),
    }
    output_parameters = {"status": Param("str", "success or failed")}
    database_name = "TimeSwitch"
    database_shape = _TIME_SWITCH_SHAPE
    writes_database = True
    aliases = {"device_id": "name"}

    def run(self, name: Any, time: Any, on: Any) -> Any:
        device = _device_key(name)
        if device == "":
            raise ToolFailure("Name cannot be empty.")
        when = year_pad_normalise(time, DT)
        if isinstance(when, Exception):
            raise ToolFailure(str(when)) from when
        schedule = self.db.setdefault(device, [])
        for entry in schedule:
            if entry["time"] == when:
                entry["on"] = on
                return "success"
        schedule.append({"time": when, "on": on})
        return "success"

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return _same_switch(pred, gold, _name) and pred["input"]["on"] == gold["input"]["on"]

    @checker_rule(CORRECTED)
    def check_corrected(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return _same_switch(pred, gold, _device) and pred["input"]["on"] == gold["input"]["on"]


class CancelTimedSwitch(Tool):
    """Cancel a scheduled switch of a device."""

    name = "CancelTimedSwitch"
    domain = "smart home"
    description = "Cancel a device's scheduled on/off switch at a given date and time."
    input_parameters = {
        "name": Param("str", "The name of the device."),
        "time": Param("str", "The scheduled switch time to cancel, as YYYY-MM-DD HH:MM:SS."),
    }
    output_parameters = {"status": Param("str", "success or failed")}
    database_name = "TimeSwitch"
    database_shape = _TIME_SWITCH_SHAPE
    writes_database = True
    aliases = {"device_id": "name"}

    def run(self, name: Any, time: Any) -> Any:
        device = _device_key(name)
        if device == "":
            raise ToolFailure("name cannot be empty.")
        when = year_pad_normalise(time, DT)
        if isinstance(when, Exception):
            raise ToolFailure(str(when)) from when
        if device not in self.db:
            raise ToolFailure("device name does not exist.")
        schedule = self.db[device]
        for i, entry in enumerate(schedule):
            if entry["time"] == when:
                schedule.pop(i)
                return "success"
        raise ToolFailure("time does not exist.")

    def check(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return _same_switch(pred, gold, _name)

    @checker_rule(CORRECTED)
    def check_corrected(self, pred: dict[str, Any], gold: dict[str, Any]) -> bool:
        return _same_switch(pred, gold, _device)
