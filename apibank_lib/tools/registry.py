"""The two tool sets of API-Bank, listed explicitly (no directory scanning, no import side effects).

Level 1-2: 53 classes. Level 3: 22 classes. Four names exist in both with
different behaviour (AddMeeting, Calculator, QueryMeeting, ToolSearcher), so
there are 71 distinct names; the paper counts 73 APIs.
"""

from __future__ import annotations

from functools import lru_cache

from apibank_lib.tools.account import CheckToken, DeleteAccount, ForgotPassword, GetUserToken, ModifyPassword, RegisterUser
from apibank_lib.tools.agenda import AddAgenda, DeleteAgenda, ModifyAgenda, QueryAgenda
from apibank_lib.tools.alarm import AddAlarm, DeleteAlarm, ModifyAlarm, QueryAlarm
from apibank_lib.tools.base import Tool
from apibank_lib.tools.calculator import Calculator
from apibank_lib.tools.finance import OpenBankAccount, QueryBalance, QueryStock
from apibank_lib.tools.health import EmergencyKnowledge, QueryHealthData, RecordHealthData, SymptomSearch
from apibank_lib.tools.hospital import AppointmentRegistration, CancelRegistration, ModifyRegistration, QueryRegistration
from apibank_lib.tools.hotel import BookHotel
from apibank_lib.tools.knowledge import (
    Dictionary,
    DocumentQA,
    ImageCaption,
    QueryHistoryToday,
    SearchEngine,
    SpeechRecognition,
    Translate,
    Wiki,
)
from apibank_lib.tools.level3 import LEVEL3_TOOLS_WITHOUT_SEARCH
from apibank_lib.tools.meeting import AddMeeting, DeleteMeeting, ModifyMeeting, QueryMeeting
from apibank_lib.tools.reminder import AddReminder, DeleteReminder, ModifyReminder, QueryReminder
from apibank_lib.tools.scene import AddScene, CancelTimedSwitch, DeleteScene, ModifyScene, QueryScene, TimedSwitch
from apibank_lib.tools.searcher import Level3ToolSearcher, ToolSearcher
from apibank_lib.tools.toolset import ToolSet
from apibank_lib.tools.utility import GetToday, PlayMusic, SendEmail

__all__ = ["LEVEL12_TOOLS", "LEVEL3_TOOLS", "DOMAINS", "level12_toolset", "level3_toolset", "toolset_for_level"]

LEVEL12_TOOLS: tuple[type[Tool], ...] = (
    AddAgenda,
    AddAlarm,
    AddMeeting,
    AddReminder,
    AddScene,
    AppointmentRegistration,
    BookHotel,
    Calculator,
    CancelRegistration,
    CancelTimedSwitch,
    CheckToken,
    DeleteAccount,
    DeleteAgenda,
    DeleteAlarm,
    DeleteMeeting,
    DeleteReminder,
    DeleteScene,
    Dictionary,
    DocumentQA,
    EmergencyKnowledge,
    ForgotPassword,
    GetToday,
    GetUserToken,
    ImageCaption,
    ModifyAgenda,
    ModifyAlarm,
    ModifyMeeting,
    ModifyPassword,
    ModifyRegistration,
    ModifyReminder,
    ModifyScene,
    OpenBankAccount,
    PlayMusic,
    QueryAgenda,
    QueryAlarm,
    QueryBalance,
    QueryHealthData,
    QueryHistoryToday,
    QueryMeeting,
    QueryRegistration,
    QueryReminder,
    QueryScene,
    QueryStock,
    RecordHealthData,
    RegisterUser,
    SearchEngine,
    SendEmail,
    SpeechRecognition,
    SymptomSearch,
    TimedSwitch,
    ToolSearcher,
    Translate,
    Wiki,
)
"""The 53 level-1/2 tool classes, in a fixed (alphabetical) order."""

LEVEL3_TOOLS: tuple[type[Tool], ...] = tuple(sorted((*LEVEL3_TOOLS_WITHOUT_SEARCH, Level3ToolSearcher), key=lambda c: c.name))
"""The 22 level-3 tool classes, in alphabetical order of API name."""

_L12_DOMAINS = {
    "account": "CheckToken DeleteAccount ForgotPassword GetUserToken ModifyPassword RegisterUser",
    "schedule": "AddAgenda DeleteAgenda ModifyAgenda QueryAgenda AddAlarm DeleteAlarm ModifyAlarm QueryAlarm "
    "AddReminder DeleteReminder ModifyReminder QueryReminder AddMeeting DeleteMeeting ModifyMeeting QueryMeeting",
    "smart home": "AddScene DeleteScene ModifyScene QueryScene TimedSwitch CancelTimedSwitch PlayMusic",
    "health": "AppointmentRegistration CancelRegistration ModifyRegistration QueryRegistration "
    "EmergencyKnowledge SymptomSearch QueryHealthData RecordHealthData",
    "travel": "BookHotel",
    "finance": "OpenBankAccount QueryBalance QueryStock",
    "knowledge": "Dictionary DocumentQA ImageCaption QueryHistoryToday SearchEngine SpeechRecognition Translate Wiki",
    "utility": "Calculator GetToday SendEmail ToolSearcher",
}
DOMAINS: dict[str, str] = {name: domain for domain, names in _L12_DOMAINS.items() for name in names.split()}
"""Level-1/2 API name -> domain (eight domains, as in the paper's evaluation set)."""


@lru_cache(maxsize=1)
def level12_toolset() -> ToolSet:
    """The level-1/2 tool set with our own descriptions."""
    return ToolSet("level-1-2", LEVEL12_TOOLS)


@lru_cache(maxsize=1)
def level3_toolset() -> ToolSet:
    """The level-3 tool set with our own descriptions."""
    return ToolSet("level-3", LEVEL3_TOOLS)


def toolset_for_level(level: int) -> ToolSet:
    """The tool set a level uses (levels 1 and 2 share one)."""
    return level3_toolset() if level == 3 else level12_toolset()
