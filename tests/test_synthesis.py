"""The synthesis agents' parsers, the pipeline over a scripted model, and the tester's rejection reasons case by case.

The scripted model answers every stage from a small world we wrote (two domains,
three APIs each, five requests and dialogues each), so the pipeline runs end to
end without a model.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from apibank_lib.cli.commands import main
from apibank_lib.core.errors import ApibankError, BackendError, ConfigError, DataError
from apibank_lib.data.check_train import (
    NEAR_EVALUATION,
    check_corpus,
    evaluation_schemas,
    evaluation_texts,
    near_evaluation,
)
from apibank_lib.data.formats.train_corpus import parse_dialogue
from apibank_lib.env.tools.registry import toolset_for_level
from apibank_lib.models.base import Completion, Request
from tests.scripted import ScriptedBackend
from apibank_lib.synthesis import pipeline as pipeline_module
from apibank_lib.synthesis.agents import (
    LEAD,
    LIST_LEAD,
    RequestDraft,
    SynthesisParseError,
    apis_prompt,
    dialogue_mapping,
    dialogue_prompt,
    domains_prompt,
    extract_payload,
    judge,
    needed_values,
    parse_apis,
    parse_dialogue_output,
    parse_domains,
    parse_request,
    request_prompt,
    slugify,
)
from apibank_lib.synthesis.pipeline import SynthesisConfig, run_pipeline

# --- the scripted world -----------------------------------------------------------------------------

KAYAK_APIS = """- name: FindKayakLessons
  description: "List the kayak lessons held on a lake on one day."
  input_parameters:
    lake: {type: str, description: "Name of the lake."}
    day: {type: str, description: "Day of the lesson, %Y-%m-%d."}
    level: {type: str, description: "Optional. beginner, intermediate or advanced.", required: false}
  output_parameters:
    lessons: {type: list, description: "Lessons, each with lesson_id, start and price."}
- name: BookKayakLesson
  description: "Reserve a place on a kayak lesson for a student."
  input_parameters:
    lesson_id: {type: str, description: "Identifier of the lesson."}
    student: {type: str, description: "Full name of the student."}
  output_parameters:
    booking_ref: {type: str, description: "Reference of the booking."}
    instructor: {type: str, description: "Who teaches the lesson."}
- name: CancelKayakLesson
  description: "Cancel a kayak lesson booking and refund it."
  input_parameters:
    booking_ref: {type: str, description: "Reference of the booking to cancel."}
  output_parameters:
    refund: {type: float, description: "Amount paid back, in euros."}
"""

BAKERY_APIS = """- name: ListCakeFlavours
  description: "List the cake flavours the bakery makes in one size."
  input_parameters:
    size: {type: str, description: "small, medium or large."}
  output_parameters:
    flavours: {type: list, description: "Flavour names."}
- name: OrderCustomCake
  description: "Order a cake to be collected on a given day."
  input_parameters:
    flavour: {type: str, description: "One of the bakery's flavours."}
    size: {type: str, description: "small, medium or large."}
    pickup_day: {type: str, description: "Collection day, %Y-%m-%d."}
    message: {type: str, description: "Optional. Text piped on top of the cake.", required: false}
  output_parameters:
    order_no: {type: str, description: "Number of the order."}
    price: {type: float, description: "Price in euros."}
- name: CakeOrderStatus
  description: "Tell how far a cake order has got."
  input_parameters:
    order_no: {type: str, description: "Number of the order."}
  output_parameters:
    status: {type: str, description: "queued, baking or ready."}
    ready_at: {type: str, description: "When it can be collected, %Y-%m-%d %H:%M:%S."}
"""

APIS = {"Kayak lessons": KAYAK_APIS, "Bakery orders": BAKERY_APIS}


def _entry(ability: str, apis: list[str], request: str, dialogue: str) -> dict[str, Any]:
    return {"ability": ability, "apis": apis, "request": request, "dialogue": dialogue}


KAYAK = [
    _entry(
        "call",
        ["FindKayakLessons"],
        "Are there beginner kayak lessons on Lake Orta on 2023-08-05?",
        """ability: call
turns:
  - user: "Are there beginner kayak lessons on Lake Orta on 2023-08-05?"
  - api: FindKayakLessons(lake='Lake Orta', day='2023-08-05', level='beginner')
    output: {lessons: [{lesson_id: "L-31", start: "09:30", price: 45.0}]}
  - ai: "Yes: lesson L-31 starts at 09:30 and costs 45.0.\"""",
    ),
    _entry(
        "call",
        ["CancelKayakLesson"],
        "Please cancel my kayak booking KB-4410.",
        """ability: call
turns:
  - user: "Please cancel my kayak booking KB-4410."
  - api: CancelKayakLesson(booking_ref='KB-4410')
    output: {refund: 38.5}
  - ai: "Booking KB-4410 is cancelled; you get 38.5 back.\"""",
    ),
    _entry(
        "retrieve_call",
        ["BookKayakLesson"],
        "Book kayak lesson L-22 for Tom Reyes, please.",
        """ability: retrieve_call
turns:
  - user: "Book kayak lesson L-22 for Tom Reyes, please."
  - api: ToolSearcher(keywords='reserve a paddling class')
  - api: BookKayakLesson(lesson_id='L-22', student='Tom Reyes')
    output: {booking_ref: "KB-6021", instructor: "Nina Berg"}
  - ai: "Tom Reyes is booked on L-22 with Nina Berg; the reference is KB-6021.\"""",
    ),
    _entry(
        "retrieve_call",
        ["CancelKayakLesson"],
        "I want my money back: drop kayak booking KB-5120.",
        """ability: retrieve_call
turns:
  - user: "I want my money back: drop kayak booking KB-5120."
  - api: ToolSearcher(keywords='cancel a lesson booking')
  - api: CancelKayakLesson(booking_ref='KB-5120')
    output: {refund: 40.0}
  - ai: "Cancelled KB-5120; 40.0 will be refunded.\"""",
    ),
    _entry(
        "plan_retrieve_call",
        ["FindKayakLessons", "BookKayakLesson"],
        "Find an intermediate kayak lesson on Lake Garda on 2023-08-12 and book it for Lea Marti.",
        """ability: plan_retrieve_call
requirement: "Find an intermediate kayak lesson on Lake Garda on 2023-08-12 and book it for Lea Marti."
steps:
  - api: ToolSearcher(keywords='kayak lessons on a lake')
  - api: FindKayakLessons(lake='Lake Garda', day='2023-08-12', level='intermediate')
    output: {lessons: [{lesson_id: "L-57", start: "14:00", price: 52.0}]}
  - api: ToolSearcher(keywords='reserve a paddling class')
  - api: BookKayakLesson(lesson_id='L-57', student='Lea Marti')
    output: {booking_ref: "KB-7788", instructor: "Ivo Sala"}
response: "Lea Marti is booked on lesson L-57 at 14:00 on Lake Garda, reference KB-7788.\"""",
    ),
]

BAKERY = [
    _entry(
        "call",
        ["ListCakeFlavours"],
        "Which flavours do you bake for a large cake?",
        """ability: call
turns:
  - user: "Which flavours do you bake for a large cake?"
  - api: ListCakeFlavours(size='large')
    output: {flavours: ["chocolate", "lemon", "carrot"]}
  - ai: "For a large cake we bake chocolate, lemon and carrot.\"""",
    ),
    _entry(
        "call",
        ["CakeOrderStatus"],
        "Is my cake order CK-781 ready yet?",
        """ability: call
turns:
  - user: "Is my cake order CK-781 ready yet?"
  - api: CakeOrderStatus(order_no='CK-781')
    output: {status: "baking", ready_at: "2023-09-01 16:00:00"}
  - ai: "Order CK-781 is still baking; it will be ready at 16:00 on September 1.\"""",
    ),
    _entry(
        "retrieve_call",
        ["OrderCustomCake"],
        "Order a medium lemon cake for pickup on 2023-09-02 that says Happy Birthday Mia.",
        """ability: retrieve_call
turns:
  - user: "Order a medium lemon cake for pickup on 2023-09-02 that says Happy Birthday Mia."
  - api: ToolSearcher(keywords='order a custom cake')
  - api: OrderCustomCake(flavour='lemon', size='medium', pickup_day='2023-09-02', message='Happy Birthday Mia')
    output: {order_no: "CK-815", price: 32.0}
  - ai: "Your lemon cake is ordered: CK-815, 32.0 to pay at pickup.\"""",
    ),
    _entry(
        "retrieve_call",
        ["CakeOrderStatus"],
        "Can you check on cake order CK-902 for me?",
        """ability: retrieve_call
turns:
  - user: "Can you check on cake order CK-902 for me?"
  - api: ToolSearcher(keywords='cake order progress')
  - api: CakeOrderStatus(order_no='CK-902')
    output: {status: "ready", ready_at: "2023-09-03 10:00:00"}
  - ai: "CK-902 is ready since 10:00 on September 3.\"""",
    ),
    _entry(
        "plan_retrieve_call",
        ["ListCakeFlavours", "OrderCustomCake"],
        "See which flavours come in small size and order a small chocolate cake for pickup on 2023-09-10.",
        """ability: plan_retrieve_call
requirement: "See which flavours come in small size and order a small chocolate cake for pickup on 2023-09-10."
steps:
  - api: ToolSearcher(keywords='cake flavours by size')
  - api: ListCakeFlavours(size='small')
    output: {flavours: ["chocolate", "vanilla"]}
  - api: ToolSearcher(keywords='order a custom cake')
  - api: OrderCustomCake(flavour='chocolate', size='small', pickup_day='2023-09-10')
    output: {order_no: "CK-930", price: 18.0}
response: "Small cakes come in chocolate and vanilla; your small chocolate cake is order CK-930 for 18.0.\"""",
    ),
]

WORLD = {"Kayak lessons": KAYAK, "Bakery orders": BAKERY}
SMALL = {"n_domains": 2, "apis_per_domain": 3, "dialogues_per_domain": 5}
"""Settings under which the world answers every slot: 2 call, 2 retrieve_call and 1 plan per domain."""


def _stage(request: Request) -> tuple[str, str]:
    """The agent a request is for, and its instructions (without the note a retry with feedback adds)."""
    user = request.prompt.messages[-1]["content"].split("\n\nAn earlier answer to this was refused:")[0]
    source = request.prompt.source
    assert source.startswith("synthesis:"), source
    return source.removeprefix("synthesis:"), user


def _field(text: str, name: str) -> str:
    m = re.search(rf"^{name}: (.+)$", text, re.MULTILINE)
    assert m is not None, f"no {name} in the prompt"
    return m.group(1).strip()


def world_answer(request: Request, *, overrides: dict[tuple[str, ...], str] | None = None) -> str:
    """The canned answer to any stage's prompt, written as a completion of the prompt's lead.

    ``overrides`` replace answers: ``("apis", domain)``, ``("requests", domain, request)``
    (the request that would have been answered) and ``("dialogues", domain, request)``.
    """
    overrides = overrides or {}
    stage, user = _stage(request)
    if stage == "domains":
        return overrides.get(("domains",), "Kayak lessons\nBakery orders\n```\nThese two are a good start.")
    domain = _field(user, "Domain")
    if stage == "apis":
        return overrides.get(("apis", domain), APIS[domain] + "```\n")
    entries = WORLD[domain]
    if stage == "requests":
        ability = _field(user, "Ability to practise").split(",")[0]
        options = [e for e in entries if e["ability"] == ability]
        done = sum(e["request"] in user for e in options)
        e = options[done]
        answer: dict[str, Any] = {"ability": e["ability"], "apis": e["apis"]}
        if "2. Under values" in user:  # request_values: the inputs the request gives, as its dialogue's calls use them
            answer["values"] = _world_values(domain, e)
        answer["request"] = e["request"]
        default = yaml.safe_dump(answer, sort_keys=False, width=1000) + "```"
        return overrides.get(("requests", domain, e["request"]), default)
    for e in entries:
        if f"The user's request: {e['request']}" in user:
            return overrides.get(("dialogues", domain, e["request"]), e["dialogue"] + "\n```\nDone.")
    raise AssertionError(f"no canned dialogue for this prompt: {user[:300]}")


def _world_values(domain: str, entry: dict[str, Any]) -> dict[str, str]:
    schemas = {s.name: s for s in parse_apis(APIS[domain])}
    needed = needed_values([schemas[a] for a in entry["apis"]])
    values: dict[str, str] = {}
    for name, args in re.findall(r"(\w+)\(([^)]*)\)", entry["dialogue"]):
        if name in entry["apis"]:
            for key, value in re.findall(r"(\w+)='([^']*)'", args):
                if key in needed:
                    values.setdefault(key, value)
    return values


class WorldBackend(ScriptedBackend):
    """The scripted world, reporting token counts like a real server and recording what it was asked."""

    def __init__(self, overrides: dict[tuple[str, ...], str] | None = None, **kwargs: Any) -> None:
        super().__init__(answer=lambda r: world_answer(r, overrides=overrides), **kwargs)
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Completion:
        out = super().complete(request)
        self.requests.append(request)
        out.prompt_tokens = len(request.prompt.text.split())
        out.completion_tokens = len(out.text.split())
        return out


class ChatWorldBackend(WorldBackend):
    """The same world from a chat model: whole fenced answers with chatter around them."""

    def default_prompt_mode(self) -> str:
        return "paper"

    def complete(self, request: Request) -> Completion:
        out = super().complete(request)
        body = out.text.split("```")[0].rstrip()
        fence = "```text" if request.prompt.lead == LIST_LEAD else "```yaml"
        out.text = f"Sure, here it is.\n{fence}\n{body}\n```\nLet me know if you need more."
        return out


@pytest.fixture(scope="module")
def evaluation() -> tuple[list[str], list[str]]:
    """The bundled benchmark's API names and requests (what a corpus must stay apart from)."""
    return evaluation_texts()


def _config(tmp: Path, backend: Any, evaluation: tuple[list[str], list[str]], **kw: Any) -> SynthesisConfig:
    settings = {**SMALL, **kw}
    return SynthesisConfig(backend, tmp, evaluation_names=evaluation[0], evaluation_requests=evaluation[1], **settings)


def _corpus_texts(out: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((out / "corpus").glob("*.yaml"))}


def _journal(out: Path, stage: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / f"{stage}.jsonl").read_text(encoding="utf-8").splitlines()]


def _row(report: Any, stage: str) -> dict[str, Any]:
    table = report.table()
    return table[table["stage"] == stage].iloc[0].to_dict()


# --- the pipeline end to end ------------------------------------------------------------------------


def test_pipeline_writes_a_corpus_that_the_tester_accepts(tmp_path: Path) -> None:
    backend = WorldBackend()
    # Default evaluation texts: the corpus is judged against the bundled benchmark, as check-train does.
    report = run_pipeline(SynthesisConfig(backend, tmp_path, **SMALL))
    assert [p.name for p in report.corpus_files] == ["kayak_lessons.yaml", "bakery_orders.yaml"]
    check = check_corpus(tmp_path / "corpus")
    assert check.rejected == [] and check.api_rejections == []
    assert len(check.accepted) == len(report.accepted) == 10
    assert check.counts()["accepted_by_ability"] == {"call": 4, "retrieve_call": 4, "plan_retrieve_call": 2}
    ids = sorted(d.id for d in check.accepted)
    assert "kayak_lessons-plan-1" in ids and "bakery_orders-retrieve-2" in ids
    assert set(check.schemas) == {
        "FindKayakLessons",
        "BookKayakLesson",
        "CancelKayakLesson",
        "ListCakeFlavours",
        "OrderCustomCake",
        "CakeOrderStatus",
    }
    # The optional input survives the round trip.
    assert check.schemas["OrderCustomCake"].input_parameters["message"].required is False
    assert main(["check-train", str(tmp_path / "corpus"), "--json"]) == 0

    table = report.table()
    assert list(table["stage"]) == ["domains", "apis", "requests", "dialogues", "tester"]
    assert list(table["attempted"]) == [1, 2, 10, 10, 10]
    assert list(table["accepted"]) == [1, 2, 10, 10, 10]
    assert list(table["rejected"]) == [0, 0, 0, 0, 0]
    assert list(table["items"]) == [2, 6, 10, 10, 10]
    assert list(table["calls"]) == [1, 2, 10, 10, 0]
    assert table["prompt_tokens"].sum() == sum(len(r.prompt.text.split()) for r in backend.requests)
    assert table["completion_tokens"].iloc[:4].gt(0).all()
    counts = report.counts()
    assert counts["dialogues_accepted"] == 10 and counts["stages"]["tester"]["rejected_by_reason"] == {}
    assert json.loads((tmp_path / "report.json").read_text())["stages"]["requests"]["items"] == 10


def test_each_stage_is_conditioned_on_the_earlier_ones(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    backend = WorldBackend()
    run_pipeline(_config(tmp_path, backend, evaluation))
    asked: dict[str, list[str]] = {}
    for r in backend.requests:
        stage, user = _stage(r)
        asked.setdefault(stage, []).append(user)
        assert r.prompt.text.endswith(r.prompt.lead) and r.prompt.lead in (LEAD, LIST_LEAD)
        assert [m["role"] for m in r.prompt.messages] == ["system", "user"]
        assert r.stop == ["```"]  # a completion model continues the opened fence until it closes it
    assert "Domain: Kayak lessons" in asked["apis"][0] or "Domain: Kayak lessons" in asked["apis"][1]
    kayak_requests = [u for u in asked["requests"] if "Domain: Kayak lessons" in u]
    assert all("CancelKayakLesson" in u for u in kayak_requests)  # the domain's APIs are shown
    assert (
        sum("Requests already written" in u for u in kayak_requests) == 4
    )  # every slot after the first lists the earlier ones
    plan = next(u for u in asked["dialogues"] if "Find an intermediate kayak lesson" in u)
    assert "FindKayakLessons" in plan and "BookKayakLesson" in plan and "CancelKayakLesson" not in plan
    assert "Ability: plan_retrieve_call" in plan


def test_a_chat_model_with_fences_and_chatter_gives_the_same_corpus(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    run_pipeline(_config(tmp_path / "completion", WorldBackend(), evaluation))
    chat = ChatWorldBackend()
    report = run_pipeline(_config(tmp_path / "chat", chat, evaluation))
    assert report.table()["rejected"].sum() == 0
    assert all(r.stop is None for r in chat.requests)
    assert _corpus_texts(tmp_path / "chat") == _corpus_texts(tmp_path / "completion")


def test_a_rerun_makes_no_backend_call_for_finished_work(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    first = run_pipeline(_config(tmp_path, WorldBackend(), evaluation))
    written = _corpus_texts(tmp_path)
    again = WorldBackend()
    second = run_pipeline(_config(tmp_path, again, evaluation))
    assert again.calls == 0
    assert _corpus_texts(tmp_path) == written
    assert list(second.table()["resumed"]) == [1, 2, 10, 10, 0]
    assert second.counts()["stages"]["tester"] == first.counts()["stages"]["tester"]
    # Tokens count the cost of the answers used, whether asked now or read back.
    assert list(second.table()["prompt_tokens"]) == list(first.table()["prompt_tokens"])
    assert len(_journal(tmp_path, "dialogues")) == 10  # nothing appended twice


def test_failed_requests_are_retried_by_the_next_run_and_only_they(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    def bakery_dialogue(r: Request) -> bool:
        stage, user = _stage(r)
        return stage == "dialogues" and "Domain: Bakery orders" in user

    report = run_pipeline(_config(tmp_path, WorldBackend(fail_on=bakery_dialogue), evaluation))
    assert _row(report, "dialogues")["rejected_by_reason"] == "backend: 5"
    assert [p.name for p in report.corpus_files] == ["kayak_lessons.yaml"]
    again = WorldBackend()
    report = run_pipeline(_config(tmp_path, again, evaluation))
    assert again.calls == 5 and len(report.accepted) == 10


def test_an_unreachable_server_stops_the_run_and_keeps_what_was_done(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    def dialogue(r: Request) -> bool:
        return _stage(r)[0] == "dialogues"

    with pytest.raises(BackendError):
        run_pipeline(_config(tmp_path, WorldBackend(fail_on=dialogue, connection_failure=True), evaluation))
    assert len(_journal(tmp_path, "requests")) == 10
    again = WorldBackend()
    report = run_pipeline(_config(tmp_path, again, evaluation))
    assert again.calls == 10 and len(report.accepted) == 10


def test_a_journal_line_cut_by_a_crash_is_asked_again(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    run_pipeline(_config(tmp_path, WorldBackend(), evaluation))
    path = tmp_path / "dialogues.jsonl"
    raw = path.read_bytes()
    path.write_bytes(raw[: raw.rfind(b"\n", 0, len(raw) - 1) + 1 + 30])  # the last record, cut mid-line
    again = WorldBackend()
    report = run_pipeline(_config(tmp_path, again, evaluation))
    assert again.calls == 1 and len(report.accepted) == 10
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_repeated_api_names_and_requests_are_dropped(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    cancel = KAYAK_APIS[KAYAK_APIS.index("- name: CancelKayakLesson") :]
    first_call = KAYAK[0]
    repeat = yaml.safe_dump(
        {"ability": "call", "apis": first_call["apis"], "request": first_call["request"]}, sort_keys=False
    )
    overrides = {
        ("apis", "Bakery orders"): BAKERY_APIS + cancel,
        # The second call slot of the kayak domain repeats the first request word for word (but in other case).
        ("requests", "Kayak lessons", KAYAK[1]["request"]): repeat.replace("Are there", "ARE THERE"),
    }
    report = run_pipeline(_config(tmp_path, WorldBackend(overrides), evaluation, apis_per_domain=4))
    apis, requests = _row(report, "apis"), _row(report, "requests")
    assert (apis["items"], apis["duplicates"]) == (6, 1)
    assert (requests["accepted"], requests["items"], requests["duplicates"]) == (10, 9, 1)
    assert len(report.accepted) == 9
    check = check_corpus(tmp_path / "corpus", evaluation_names=evaluation[0], evaluation_requests=evaluation[1])
    assert check.rejected == [] and check.api_rejections == []


def test_a_tester_rejection_is_reported_with_its_reason(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    ungrounded = KAYAK[0]["dialogue"].replace(
        "Yes: lesson L-31 starts at 09:30 and costs 45.0.", "I found something for you."
    )
    overrides = {("dialogues", "Kayak lessons", KAYAK[0]["request"]): ungrounded}
    report = run_pipeline(_config(tmp_path, WorldBackend(overrides), evaluation))
    row = _row(report, "tester")
    assert (row["attempted"], row["accepted"], row["rejected"]) == (10, 9, 1)
    assert row["rejected_by_reason"] == "grounding: 1"
    rejected = report.rejections_table()
    assert list(rejected["reason"]) == ["grounding"] and list(rejected["stage"]) == ["tester"]
    assert "repeats none of their values" in rejected["message"].iloc[0]
    assert [r["ok"] for r in _journal(tmp_path, "tester")].count(False) == 1
    # A review sheet can hold refused dialogues too, with the tester's reason, for its agreement on both sides.
    from apibank_lib.synthesis import records

    sheet = records.review_sheet(tmp_path, n=3, rejected=5)
    rows = sheet.read_text(encoding="utf-8").splitlines()[1:]
    assert len(rows) == 4 and rows[-1].startswith("kayak_lessons-call-1,grounding,")
    assert "kayak_lessons-call-1" not in {d.id for d in report.accepted}


def test_a_duplicate_opening_is_rejected_when_the_corpus_is_judged_whole(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    # A dialogue that opens with another dialogue's words passes alone; the whole-corpus check catches it.
    copy = BAKERY[3]["dialogue"].replace(
        "Can you check on cake order CK-902 for me?", "Is my cake order CK-781 ready yet?"
    ).replace("CK-902", "CK-781")
    overrides = {("dialogues", "Bakery orders", BAKERY[3]["request"]): copy}
    report = run_pipeline(_config(tmp_path, WorldBackend(overrides), evaluation))
    assert _row(report, "tester")["rejected_by_reason"] == "duplicate: 1"
    assert len(report.accepted) == 9
    check = check_corpus(tmp_path / "corpus", evaluation_names=evaluation[0], evaluation_requests=evaluation[1])
    assert check.rejected == [] and len(check.accepted) == 9
    # The journal holds one verdict per dialogue, the whole-corpus refusal included; a rerun writes none again.
    from apibank_lib.synthesis import records

    journal = _journal(tmp_path, "tester")
    assert len(journal) == 10 and list(records.tester_rejected(tmp_path).values()) == ["duplicate"]
    run_pipeline(_config(tmp_path, WorldBackend(overrides), evaluation))
    assert _journal(tmp_path, "tester") == journal


def test_a_malformed_answer_is_recorded_and_loses_nothing_else(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    overrides = {
        ("dialogues", "Bakery orders", BAKERY[2]["request"]): "turns: [ {user: 'unclosed'\n```",
        (
            "requests",
            "Kayak lessons",
            KAYAK[4]["request"],
        ): "ability: plan_retrieve_call\napis: [FindKayakLessons]\nrequest: 'Find and book.'\n```",
    }
    report = run_pipeline(_config(tmp_path, WorldBackend(overrides), evaluation))
    assert _row(report, "dialogues")["rejected_by_reason"] == "yaml: 1"
    assert _row(report, "requests")["rejected_by_reason"] == "value: 1"
    assert len(report.accepted) == 8
    bad = [r for r in _journal(tmp_path, "dialogues") if not r["ok"]]
    assert len(bad) == 1 and bad[0]["key"].startswith("dialogues/bakery_orders/")
    assert bad[0]["error"]["kind"] == "yaml" and "dialogues stage" in bad[0]["error"]["message"]
    keys = {r.key for r in report.rejections}
    assert any(k.startswith("requests/kayak_lessons/") for k in keys)
    assert {r.reason for r in report.rejections} == {"yaml", "value"}


def test_concurrency_gives_the_same_output_as_serial(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    serial = run_pipeline(_config(tmp_path / "serial", WorldBackend(), evaluation))
    parallel = run_pipeline(_config(tmp_path / "parallel", WorldBackend(delay_s=0.005), evaluation, concurrency=4))
    assert _corpus_texts(tmp_path / "parallel") == _corpus_texts(tmp_path / "serial")
    timings = ["cpu_seconds", "wall_seconds"]  # measured, not produced: they differ between any two runs
    assert parallel.table().drop(columns=timings).equals(serial.table().drop(columns=timings))


def test_the_same_seed_gives_the_same_corpus(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    a = run_pipeline(_config(tmp_path / "a", WorldBackend(), evaluation, seed=3))
    b = run_pipeline(_config(tmp_path / "b", WorldBackend(), evaluation, seed=3))
    assert _corpus_texts(tmp_path / "a") == _corpus_texts(tmp_path / "b")
    untimed = [{k: v for k, v in c.counts()["stages"].items()} for c in (a, b)]
    for stages in untimed:
        for row in stages.values():
            row.pop("cpu_seconds"), row.pop("wall_seconds")  # measured, not produced
    assert untimed[0] == untimed[1]


def test_a_folder_made_with_other_settings_is_refused(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    run_pipeline(_config(tmp_path, WorldBackend(), evaluation))
    with pytest.raises(ConfigError, match="max_tokens"):
        run_pipeline(_config(tmp_path, WorldBackend(), evaluation, max_tokens=64))


@pytest.mark.parametrize(
    "setting", ["n_domains", "apis_per_domain", "dialogues_per_domain", "concurrency", "max_tokens"]
)
def test_settings_must_be_positive(tmp_path: Path, setting: str) -> None:
    with pytest.raises(ConfigError, match=setting):
        SynthesisConfig(WorldBackend(), tmp_path, **{setting: 0})


def test_a_reference_backend_cannot_synthesize(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="reference"):
        run_pipeline(SynthesisConfig("oracle", tmp_path))


def test_the_synthesize_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    built: list[str] = []

    def fake_load(spec: str, **options: Any) -> WorldBackend:
        built.append(spec)
        return WorldBackend()

    monkeypatch.setattr(pipeline_module, "load_backend", fake_load)
    argv = ["synthesize", "--model", "openai:m@http://127.0.0.1:9/v1", "--out", str(tmp_path), "--domains", "2"]
    argv += ["--apis-per-domain", "3", "--dialogues-per-domain", "5", "--concurrency", "2", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert built == ["openai:m@http://127.0.0.1:9/v1"]
    assert out["dialogues_accepted"] == 10 and out["stages"]["apis"]["items"] == 6
    assert (
        main(
            [
                "synthesize",
                "--model",
                "openai:m@http://127.0.0.1:9/v1",
                "--out",
                str(tmp_path),
                "--domains",
                "2",
                "--apis-per-domain",
                "3",
                "--dialogues-per-domain",
                "5",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "tester" in text and "10 dialogues accepted" in text


def test_the_synthesize_command_reports_a_bad_model_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["synthesize", "--model", "nosuch", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown backend" in err


# --- the parsers, case by case ------------------------------------------------------------------------


def _parse_error(fn: Callable[[], Any], kind: str, words: str) -> SynthesisParseError:
    with pytest.raises(SynthesisParseError) as info:
        fn()
    assert info.value.kind == kind, info.value
    assert words in str(info.value), str(info.value)
    return info.value


def test_a_parse_error_belongs_to_the_error_hierarchy() -> None:
    err = _parse_error(lambda: parse_domains(""), "empty", "nothing to read")
    assert isinstance(err, DataError) and isinstance(err, ApibankError)
    assert err.stage == "domains" and str(err).startswith("domains stage: empty:")


def test_payload_extraction() -> None:
    assert extract_payload("a: 1", "apis") == "a: 1"
    assert extract_payload("Here:\n```yaml\na: 1\n```\nBye", "apis") == "a: 1"
    assert extract_payload("```yaml\n  - a\n  - b\n", "apis") == "- a\n- b"  # cut off: runs to the end
    assert extract_payload("```\nx\n```\n```\ny\n```", "apis") == "x"  # the first block only
    _parse_error(lambda: extract_payload("```yaml\n```", "apis"), "empty", "nothing to read")


def test_parse_domains_strips_numbering_and_repeats() -> None:
    text = "```text\n1. Kayak lessons\n2) Bakery orders\n- Tide tables\n* kayak-lessons\n\n3. Seed swaps & libraries\n```\nThat is all."
    assert parse_domains(text) == ["Kayak lessons", "Bakery orders", "Tide tables", "Seed swaps & libraries"]


@pytest.mark.parametrize(
    ("text", "kind", "words"),
    [
        ("```text\n```", "empty", "nothing to read"),
        ("Sure! Here are some domains:\nKayak lessons", "value", "line 1"),
        ("Kayak lessons\nA domain where people book lessons to learn kayaking on lakes", "value", "line 2"),
        ("Kayak lessons: booking", "value", "line 1"),
        ("1.\n-\n", "empty", "no domain name"),
    ],
)
def test_parse_domains_errors(text: str, kind: str, words: str) -> None:
    _parse_error(lambda: parse_domains(text), kind, words)


def test_parse_apis_reads_the_corpus_shape(evaluation: tuple[list[str], list[str]]) -> None:
    schemas = parse_apis(LEAD + KAYAK_APIS + "```\nMore?", evaluation_names=evaluation[0])
    assert [s.name for s in schemas] == ["FindKayakLessons", "BookKayakLesson", "CancelKayakLesson"]
    assert schemas[0].input_parameters["level"].required is False
    assert [s.name for s in parse_apis("apis:\n" + KAYAK_APIS)] == [s.name for s in schemas]


def _one_api(**changes: Any) -> str:
    api: dict[str, Any] = {
        "name": "FindKayakLessons",
        "description": "List lessons.",
        "input_parameters": {"lake": {"type": "str", "description": "The lake."}},
        "output_parameters": {"lessons": {"type": "list", "description": "Lessons."}},
    }
    for key, value in changes.items():
        if value is None:
            del api[key]
        else:
            api[key] = value
    return yaml.safe_dump([api], sort_keys=False)


@pytest.mark.parametrize(
    ("text", "kind", "words"),
    [
        ("- name: [unclosed", "yaml", "not valid YAML"),
        ("name: FindKayakLessons\ndescription: x", "shape", "expected a list of APIs"),
        ("- just a string", "shape", "API #1 is not a mapping"),
        (_one_api(endpoint="/lessons"), "shape", "unknown keys ['endpoint']"),
        (_one_api(description=None), "shape", "needs a name and a description"),
        (_one_api(input_parameters={"lake": {"type": "str"}}), "shape", "needs a type and a description"),
        (
            _one_api(input_parameters={"lake": {"type": "str", "description": "x", "default": "Orta"}}),
            "shape",
            "unknown keys ['default']",
        ),
        (
            _one_api(input_parameters={"pickup city": {"type": "str", "description": "x"}}),
            "value",
            "cannot be written in a call",
        ),
        (_one_api(output_parameters={}), "value", "declares no output parameter"),
        (_one_api() + _one_api(), "value", "defined twice"),
        (_one_api(name="AddAlarms"), "schema", "copies the evaluation API 'AddAlarm'"),
        (_one_api(name="find_lessons"), "schema", "is not CamelCase"),
        (_one_api(name="ToolSearcher"), "schema", "cannot be redefined"),
        (_one_api(input_parameters={"lake": {"type": "string", "description": "x"}}), "schema", "has type 'string'"),
        (
            _one_api(input_parameters={"lake": {"type": "str", "description": "x"}, "optional": {"type": "str", "description": "x"}}),
            "schema",
            "FindKayakLessons.optional is named after a word of the API format",
        ),
    ],
)
def test_parse_apis_errors(text: str, kind: str, words: str, evaluation: tuple[list[str], list[str]]) -> None:
    _parse_error(lambda: parse_apis(text, evaluation_names=evaluation[0]), kind, words)


def test_parse_apis_refuses_variations_on_one_call() -> None:
    # Three APIs that take the same inputs (in any order) are refused; two are not, and neither are three that
    # share only some inputs.
    lake = {"type": "str", "description": "The lake."}
    day = {"type": "str", "description": "The day, %Y-%m-%d."}
    out = {"lessons": {"type": "list", "description": "Lessons."}}

    def apis(*inputs: dict[str, Any]) -> str:
        return yaml.safe_dump(
            [{"name": f"FindKayak{n}", "description": "List them.", "input_parameters": i, "output_parameters": out}
             for n, i in zip(["Lessons", "Tours", "Rentals", "Races"], inputs)],
            sort_keys=False,
        )

    _parse_error(
        lambda: parse_apis(apis({"lake": lake, "day": day}, {"day": day, "lake": lake}, {"lake": lake, "day": day})),
        "value",
        "3 APIs (FindKayakLessons, FindKayakTours, FindKayakRentals) take the same inputs (day, lake)",
    )
    _parse_error(lambda: parse_apis(apis({}, {}, {}, {"lake": lake})), "value", "take the same inputs (no input)")
    assert len(parse_apis(apis({"lake": lake}, {"lake": lake}, {"lake": lake, "day": day}, {"day": day}))) == 4


@pytest.fixture(scope="module")
def kayak_schemas() -> dict[str, Any]:
    return {s.name: s for s in parse_apis(KAYAK_APIS)}


def test_parse_request(kayak_schemas: dict[str, Any]) -> None:
    text = (
        LEAD
        + 'ability: plan_retrieve_call\napis: [FindKayakLessons, BookKayakLesson]\nrequest: "Find a lesson and\n  book it."\n```\nok'
    )
    draft = parse_request(text, kayak_schemas, ability="plan_retrieve_call")
    assert draft == RequestDraft(
        "plan_retrieve_call", ("FindKayakLessons", "BookKayakLesson"), "Find a lesson and book it."
    )


@pytest.mark.parametrize(
    ("text", "kind", "words"),
    [
        ("ability: call\napis: [FindKayakLessons]", "shape", "missing ['request']"),
        ("ability: call\napis: [FindKayakLessons]\nrequest: x\nmood: happy", "shape", "unknown keys ['mood']"),
        ("- ability: call", "shape", "expected a YAML mapping"),
        ("ability: chat\napis: [FindKayakLessons]\nrequest: x", "value", "ability must be one of"),
        ("ability: retrieve_call\napis: [FindKayakLessons]\nrequest: x", "value", "a call request was asked for"),
        ("ability: call\napis: FindKayakLessons\nrequest: x", "shape", "apis must be a list"),
        ("ability: call\napis: [RentKayak]\nrequest: x", "value", "unknown API RentKayak"),
        ("ability: call\napis: [ToolSearcher, FindKayakLessons]\nrequest: x", "value", "list only the domain's APIs"),
        ("ability: call\napis: [FindKayakLessons, FindKayakLessons]\nrequest: x", "value", "listed twice"),
        ("ability: call\napis: []\nrequest: x", "value", "uses 1 to 4 APIs, not 0"),
        ("ability: call\napis: [FindKayakLessons]\nrequest: '  '", "value", "the request is empty"),
    ],
)
def test_parse_request_errors(text: str, kind: str, words: str, kayak_schemas: dict[str, Any]) -> None:
    _parse_error(lambda: parse_request(text, kayak_schemas, ability="call"), kind, words)


def test_a_plan_request_needs_two_or_three_apis(kayak_schemas: dict[str, Any]) -> None:
    text = "ability: plan_retrieve_call\napis: [FindKayakLessons]\nrequest: Find one."
    _parse_error(lambda: parse_request(text, kayak_schemas), "value", "uses 2 to 3 APIs, not 1")


def _draft(entry: dict[str, Any]) -> RequestDraft:
    return RequestDraft(entry["ability"], tuple(entry["apis"]), entry["request"])


def test_parse_dialogue_output(kayak_schemas: dict[str, Any]) -> None:
    entry = KAYAK[4]
    d = parse_dialogue_output(
        LEAD + entry["dialogue"] + "\n```",
        _draft(entry),
        dialogue_id="kayak-plan-1",
        domain="Kayak lessons",
        path="k.yaml",
    )
    assert d.id == "kayak-plan-1" and d.ability == "plan_retrieve_call" and d.requirement == entry["request"]
    assert [t.call.name for t in d.api_turns if t.call] == [
        "ToolSearcher",
        "FindKayakLessons",
        "ToolSearcher",
        "BookKayakLesson",
    ]
    assert judge(d, kayak_schemas) is None
    # The model's own id is replaced by the pipeline's.
    d = parse_dialogue_output(
        "id: mine\n" + KAYAK[0]["dialogue"], _draft(KAYAK[0]), dialogue_id="ours", domain="K", path="k.yaml"
    )
    assert d.id == "ours"
    # What is written back reads the same.
    again = parse_dialogue(dialogue_mapping(d), 0, "K", "k.yaml")
    assert dialogue_mapping(again) == dialogue_mapping(d)


@pytest.mark.parametrize(
    ("entry", "text", "kind", "words"),
    [
        (KAYAK[0], "- user: hi", "shape", "expected one mapping"),
        (KAYAK[0], "ability: call\nturns: [{user: 'hi'}\n", "yaml", "not valid YAML"),
        (KAYAK[0], KAYAK[2]["dialogue"], "value", "must be the asked call, not 'retrieve_call'"),
        (KAYAK[0], "turns:\n  - user: hi", "value", "must be the asked call, not None"),
        (KAYAK[0], KAYAK[0]["dialogue"] + "\nrequirement: x", "shape", "unknown keys ['requirement']"),
        (KAYAK[0], "ability: call\nturns: []", "shape", "needs a turns list"),
        (
            KAYAK[4],
            "ability: plan_retrieve_call\nrequirement: x\nsteps: []\nresponse: y",
            "shape",
            "needs requirement, steps and response",
        ),
        (
            KAYAK[4],
            KAYAK[4]["dialogue"].split("  - api: ToolSearcher(keywords='reserve")[0] + 'response: "L-57"',
            "value",
            "BookKayakLesson is never called",
        ),
    ],
)
def test_parse_dialogue_output_errors(entry: dict[str, Any], text: str, kind: str, words: str) -> None:
    _parse_error(
        lambda: parse_dialogue_output(text, _draft(entry), dialogue_id="x-1", domain="K", path="k.yaml"), kind, words
    )


def test_a_broken_turn_is_left_to_the_tester(kayak_schemas: dict[str, Any]) -> None:
    text = KAYAK[0]["dialogue"].replace("level='beginner')", "level='beginner'")
    d = parse_dialogue_output(text, _draft(KAYAK[0]), dialogue_id="x-1", domain="K", path="k.yaml")
    verdict = judge(d, kayak_schemas)
    assert verdict is not None and verdict[0] == "format" and "does not parse" in verdict[1]


def test_prompts_are_chat_messages_and_completion_text_with_a_lead(kayak_schemas: dict[str, Any]) -> None:
    tools = toolset_for_level(1)
    refs = [tools.schema("AddAlarm"), tools.schema("QueryStock")]
    schemas = list(kayak_schemas.values())
    prompts = [
        domains_prompt(7),
        apis_prompt("Kayak lessons", 6, refs),
        request_prompt("Kayak lessons", schemas, "retrieve_call", ["Book L-1 for me."]),
        dialogue_prompt("Kayak lessons", schemas[:2], _draft(KAYAK[4])),
    ]
    for p, stage in zip(prompts, ["domains", "apis", "requests", "dialogues"]):
        assert [m["role"] for m in p.messages] == ["system", "user"]
        assert p.text.endswith(p.lead) and p.messages[1]["content"] in p.text
        assert p.source == f"synthesis:{stage}" and "stage" not in p.text.lower()
    assert "Name 7 different" in prompts[0].text and prompts[0].lead == LIST_LEAD
    assert "name: AddAlarm" in prompts[1].text and "Invent 6 APIs" in prompts[1].text
    assert "- Book L-1 for me." in prompts[2].text and "name: CancelKayakLesson" in prompts[2].text
    assert "requirement:" in prompts[3].text and KAYAK[4]["request"] in prompts[3].text


# --- the tester's rejection reasons, case by case --------------------------------------------------------

TESTER_APIS = (
    """domain: Kayak lessons
apis:
"""
    + "\n".join("  " + line for line in KAYAK_APIS.splitlines())
    + "\n"
)

GOOD_CALL = """  - id: k-call-1
    ability: call
    turns:
      - user: "Is there a lesson on Lake Orta on 2023-08-05?"
      - api: FindKayakLessons(lake='Lake Orta', day='2023-08-05')
        output: {lessons: [{lesson_id: "L-31", start: "09:30"}]}
      - ai: "Lesson L-31 starts at 09:30."
"""


def _judge_one(
    tmp_path: Path,
    dialogues: str,
    evaluation: tuple[list[str], list[str]],
    apis: str = TESTER_APIS,
    requests: list[str] | None = None,
) -> Any:
    path = tmp_path / "case.yaml"
    path.write_text(apis + "dialogues:\n" + dialogues, encoding="utf-8")
    return check_corpus(
        path, evaluation_names=evaluation[0], evaluation_requests=evaluation[1] if requests is None else requests
    )


def test_the_tester_accepts_the_good_case(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    report = _judge_one(tmp_path, GOOD_CALL, evaluation)
    assert [d.id for d in report.accepted] == ["k-call-1"] and report.rejected == []


def _variant(old: str, new: str, base: str = GOOD_CALL) -> str:
    assert old in base, old
    return base.replace(old, new)


RETRIEVE = """  - id: k-retrieve-1
    ability: retrieve_call
    turns:
      - user: "Book lesson L-22 for Tom Reyes."
      - api: ToolSearcher(keywords='reserve a paddling class')
      - api: BookKayakLesson(lesson_id='L-22', student='Tom Reyes')
        output: {booking_ref: "KB-6021", instructor: "Nina Berg"}
      - ai: "Booked, reference KB-6021."
"""

PLAN = """  - id: k-plan-1
    ability: plan_retrieve_call
    requirement: "Find a lesson on Lake Garda on 2023-08-12 and book it for Lea Marti."
    steps:
      - api: ToolSearcher(keywords='kayak lessons on a lake')
      - api: FindKayakLessons(lake='Lake Garda', day='2023-08-12')
        output: {lessons: [{lesson_id: "L-57", start: "14:00"}]}
      - api: ToolSearcher(keywords='reserve a paddling class')
      - api: BookKayakLesson(lesson_id='L-57', student='Lea Marti')
        output: {booking_ref: "KB-7788", instructor: "Ivo Sala"}
    response: "Lea Marti is booked on L-57, reference KB-7788."
"""

TESTER_CASES = [
    # format
    ("format", "the first turn must be the user's", _variant('- user: "Is there', '- ai: "Is there')),
    ("format", "does not parse", _variant("day='2023-08-05')", "day='2023-08-05'")),
    ("format", "turn 1: the user names FindKayakLessons", _variant("Is there a lesson", "Call FindKayakLessons: is there a lesson")),
    ("format", "the user names an API", _variant("Is there a lesson", "Use the lessons API: is there a lesson")),
    (
        "format",
        "the requirement: the user is a placeholder person ('John Doe')",
        _variant("for Lea Marti.", "for John Doe.", PLAN),
    ),
    ("format", "turn 1: the user is a placeholder person ('JohnDoe')", _variant("Is there a lesson", "As JohnDoe: is there a lesson")),
    ("format", "turn 1: the user gives a placeholder ('Student B')", _variant("for Tom Reyes.", "for Student B.", RETRIEVE)),
    ("format", "the requirement: the user gives a placeholder ('path/to/')", _variant("for Lea Marti.", "for Lea Marti; her form is at path/to/form.pdf.", PLAN)),
    ("format", "turn 1: the user gives a placeholder ('a sample student')", _variant("for Tom Reyes.", "for a sample student.", RETRIEVE)),
    ("format", "ends on an API call", GOOD_CALL.split("      - ai:")[0]),
    ("format", "write exactly one of user:, ai:, or api:", _variant('- ai: "Lesson', '- assistant: "Lesson')),
    ("format", "missing id", _variant("  - id: k-call-1\n    ability", "  - ability")),
    ("format", "ability must be one of", _variant("ability: call", "ability: chat")),
    ("format", "holds a single quote", _variant("lake='Lake Orta'", 'lake="Lake O\'Orta"')),
    (
        "format",
        "turn 3: the assistant writes an API call as text",
        _variant('- ai: "Lesson L-31', '- ai: "I will run BookKayakLesson(lesson_id=\'L-31\') next. Lesson L-31'),
    ),
    # api
    (
        "api",
        "RentKayak is not defined",
        _variant("FindKayakLessons(lake='Lake Orta', day='2023-08-05')", "RentKayak(lake='Lake Orta')"),
    ),
    # parameters
    ("parameters", "has no parameter boat", _variant("day='2023-08-05')", "day='2023-08-05', boat='x')")),
    ("parameters", "misses the required day", _variant(", day='2023-08-05')", ")")),
    ("parameters", "lake='your_lake' is a placeholder", _variant("lake='Lake Orta'", "lake='your_lake'")),
    ("parameters", "lake='My Lake' is a placeholder", _variant("lake='Lake Orta'", "lake='My Lake'")),
    ("parameters", "lake='<lake>' is a placeholder", _variant("lake='Lake Orta'", "lake='<lake>'")),
    ("parameters", "student='John Doe' is a placeholder", _variant("student='Tom Reyes'", "student='John Doe'", RETRIEVE)),
    ("parameters", "lake='lake' is a placeholder", _variant("lake='Lake Orta'", "lake='lake'")),
    (
        "parameters",
        "student='Ana Silva' is in neither the request nor an earlier result",
        _variant("student='Tom Reyes'", "student='Ana Silva'", RETRIEVE),
    ),
    (
        "parameters",
        "lesson_id='LS-2231' is in neither",
        _variant("lesson_id='L-22'", "lesson_id='LS-2231'", RETRIEVE),
    ),
    (
        "parameters",
        "lake='https://example.com/orta' is in neither",
        _variant("lake='Lake Orta'", "lake='https://example.com/orta'"),
    ),
    (
        "parameters",
        "ToolSearcher takes exactly one non-empty keywords",
        _variant("keywords='reserve a paddling class'", "keywords=''", RETRIEVE),
    ),
    # result
    ("result", "has no output", _variant('        output: {lessons: [{lesson_id: "L-31", start: "09:30"}]}\n', "")),
    ("result", "undeclared fields weather", _variant("output: {lessons:", 'output: {weather: "sunny", lessons:')),
    (
        "result",
        "leave ToolSearcher's output out",
        _variant(
            "keywords='reserve a paddling class')",
            "keywords='reserve a paddling class')\n        output: [x]",
            RETRIEVE,
        ),
    ),
    # grounding
    ("grounding", "repeats none of their values", _variant('"Lesson L-31 starts at 09:30."', '"There is one."')),
    (
        "grounding",
        "the response repeats no value",
        _variant('"Lea Marti is booked on L-57, reference KB-7788."', '"All done for Lea Marti."', PLAN),
    ),
    # shape
    ("shape", "must not search", RETRIEVE.replace("ability: retrieve_call", "ability: call")),
    (
        "shape",
        "is called before any search retrieves it",
        _variant("      - api: ToolSearcher(keywords='reserve a paddling class')\n", "", RETRIEVE),
    ),
    (
        "shape",
        "contain the API's name",
        _variant("keywords='reserve a paddling class'", "keywords='BookKayakLesson please'", RETRIEVE),
    ),
    (
        "shape",
        "not followed by a call",
        RETRIEVE
        + '      - user: "Anything else?"\n      - api: ToolSearcher(keywords=\'other lessons\')\n      - ai: "Nothing more."\n',
    ),
    (
        "shape",
        "retrieves ['CancelKayakLesson'] but BookKayakLesson is called next",
        _variant(
            "keywords='reserve a paddling class')",
            "keywords='reserve a paddling class')\n        retrieves: [CancelKayakLesson]",
            RETRIEVE,
        ),
    ),
    (
        "shape",
        "a plan needs at least two retrieved calls",
        PLAN.split("      - api: ToolSearcher(keywords='reserve")[0] + '    response: "Lesson L-57 at 14:00."\n',
    ),
]


@pytest.mark.parametrize(
    ("reason", "words", "dialogue"), TESTER_CASES, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(TESTER_CASES)]
)
def test_the_tester_rejects(
    tmp_path: Path, evaluation: tuple[list[str], list[str]], reason: str, words: str, dialogue: str
) -> None:
    report = _judge_one(tmp_path, dialogue, evaluation)
    assert report.accepted == [] and len(report.rejected) == 1, report.rejected
    r = report.rejected[0]
    assert r.reason == reason and words in r.message, str(r)
    assert "case.yaml: dialogue #1" in r.where


def test_a_report_counts_the_apis_its_accepted_dialogues_call(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    """A corpus covers the APIs its accepted dialogues call, not every API its files define."""
    report = _judge_one(tmp_path, GOOD_CALL + RETRIEVE, evaluation)
    assert report.counts()["apis"] == 3 and report.called == {"FindKayakLessons", "BookKayakLesson"}
    only_call = _judge_one(tmp_path, GOOD_CALL, evaluation)
    assert only_call.called == {"FindKayakLessons"} and only_call.counts()["apis_called"] == 1


@pytest.mark.parametrize("words", ["I am in Hall B. Is there a lesson", "Is there a lesson (I do a lesson a day)", "Is there a lesson for my Plan B"])
def test_the_tester_lets_real_lettered_names_pass(tmp_path: Path, evaluation: tuple[list[str], list[str]], words: str) -> None:
    """A lettered stand-in is a generic noun and a capital (``Student B``); a real place or phrase is not one."""
    report = _judge_one(tmp_path, _variant("Is there a lesson", words), evaluation)
    assert [d.id for d in report.accepted] == ["k-call-1"], report.rejected


PHOTO_APIS = """domain: Photo editing
apis:
  - name: CropPhoto
    description: "Crop a photo to a width in pixels."
    input_parameters:
      photo: {type: str, description: "File name of the photo."}
      width: {type: int, description: "New width in pixels."}
    output_parameters:
      photo: {type: str, description: "File name of the cropped photo."}
  - name: SharpenPhoto
    description: "Sharpen a photo."
    input_parameters:
      photo: {type: str, description: "File name of the photo."}
    output_parameters:
      photo: {type: str, description: "File name of the sharpened photo."}
"""

CHAIN = """  - id: p-call-1
    ability: call
    turns:
      - user: "Crop beach.jpg to 200 pixels wide, then sharpen it."
      - api: CropPhoto(photo='beach.jpg', width='200')
        output: {photo: "beach-crop.jpg"}
      - api: SharpenPhoto(photo='beach-crop.jpg')
        output: {photo: "beach-crop-sharp.jpg"}
      - ai: "Done: beach-crop-sharp.jpg."
"""


def test_the_tester_refuses_a_call_that_ignores_what_an_earlier_call_returned(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    assert [d.id for d in _judge_one(tmp_path, CHAIN, evaluation, apis=PHOTO_APIS).accepted] == ["p-call-1"]
    broken = _variant("SharpenPhoto(photo='beach-crop.jpg')", "SharpenPhoto(photo='beach.jpg')", CHAIN)
    report = _judge_one(tmp_path, broken, evaluation, apis=PHOTO_APIS)
    assert report.accepted == [] and report.rejected[0].reason == "parameters"
    assert "SharpenPhoto.photo='beach.jpg' is what CropPhoto took, not the 'beach-crop.jpg' it returned" in report.rejected[0].message
    # A result that gives the same value back breaks no chain.
    same = _variant('output: {photo: "beach-crop.jpg"}', 'output: {photo: "beach.jpg"}', broken)
    assert len(_judge_one(tmp_path, same, evaluation, apis=PHOTO_APIS).accepted) == 1


def test_the_tester_rejects_an_api_that_copies_an_evaluation_name(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    apis = TESTER_APIS.replace("name: CancelKayakLesson", "name: QueryStocks")
    report = _judge_one(tmp_path, GOOD_CALL, evaluation, apis=apis)
    assert [(r.dialogue_id, r.reason) for r in report.api_rejections] == [("QueryStocks", "api")]
    assert "copies the evaluation API 'QueryStock'" in report.api_rejections[0].message
    assert [d.id for d in report.accepted] == ["k-call-1"]


def test_the_tester_refuses_apis_that_are_variations_on_one_call(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    # Book and Cancel given FindKayakLessons's inputs: the three are variations on one call. All three are
    # refused, and so is the dialogue that calls one of them.
    inputs = (
        '      lake: {type: str, description: "Name of the lake."}\n'
        '      day: {type: str, description: "Day of the lesson, %Y-%m-%d."}\n'
    )
    book = (
        '      lesson_id: {type: str, description: "Identifier of the lesson."}\n'
        '      student: {type: str, description: "Full name of the student."}\n'
    )
    cancel = '      booking_ref: {type: str, description: "Reference of the booking to cancel."}\n'
    level = '      level: {type: str, description: "Optional. beginner, intermediate or advanced.", required: false}\n'
    assert book in TESTER_APIS and cancel in TESTER_APIS and inputs + level in TESTER_APIS
    three = TESTER_APIS.replace(book, inputs + level).replace(cancel, level + inputs)  # the order does not matter
    report = _judge_one(tmp_path, GOOD_CALL, evaluation, apis=three)
    assert [(r.dialogue_id, r.reason) for r in report.api_rejections] == [
        ("FindKayakLessons", "api"), ("BookKayakLesson", "api"), ("CancelKayakLesson", "api")
    ]
    assert "one of 3 APIs of this domain that take the same inputs (day, lake, level)" in report.api_rejections[0].message
    assert report.accepted == [] and report.rejected[0].reason == "api"
    # Two APIs may share their inputs, as they do in one of our AI-written corpus's domains.
    two = _judge_one(tmp_path, GOOD_CALL, evaluation, apis=TESTER_APIS.replace(book, inputs + level))
    assert two.api_rejections == [] and [d.id for d in two.accepted] == ["k-call-1"]


def test_the_tester_rejects_duplicates(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    same_id = _variant("Is there a lesson on Lake Orta on 2023-08-05?", "Any lesson at Lake Como soon?")
    same_opening = _variant("k-call-1", "k-call-2")
    report = _judge_one(tmp_path, GOOD_CALL + same_id + same_opening, evaluation)
    assert [d.id for d in report.accepted] == ["k-call-1"]
    assert [(r.reason, r.message) for r in report.rejected] == [
        ("duplicate", "the id k-call-1 is used twice"),
        ("duplicate", "its request nearly repeats k-call-1's"),
    ]
    report = _judge_one(
        tmp_path, GOOD_CALL, evaluation, requests=["Is there a lesson on Lake Orta on 2023-08-05, please?"]
    )
    assert [(r.reason, r.message) for r in report.rejected] == [
        ("duplicate", "its request nearly repeats one of the evaluation benchmark")
    ]


def test_an_api_two_files_define_is_one_api_when_they_define_it_the_same(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    # Two generations that share a domain's APIs, judged together (values/ and multi-agent/ of the model-made corpus).
    later = GOOD_CALL.replace("k-call-1", "k-call-1v").replace("Lake Orta", "Lake Garda").replace("2023-08-05", "2023-08-09")
    (tmp_path / "a.yaml").write_text(TESTER_APIS + "dialogues:\n" + GOOD_CALL, encoding="utf-8")
    (tmp_path / "b.yaml").write_text(TESTER_APIS + "dialogues:\n" + later, encoding="utf-8")
    report = check_corpus(tmp_path, evaluation_names=evaluation[0], evaluation_requests=evaluation[1])
    assert report.api_rejections == [] and [d.id for d in report.accepted] == ["k-call-1", "k-call-1v"], report.rejected
    # Defined differently, the later file's definition is refused; its dialogues are judged against the first one.
    other = TESTER_APIS.replace('description: "Name of the lake."', 'description: "The lake."', 1)
    assert other != TESTER_APIS
    (tmp_path / "b.yaml").write_text(other + "dialogues:\n" + later, encoding="utf-8")
    report = check_corpus(tmp_path, evaluation_names=evaluation[0], evaluation_requests=evaluation[1])
    assert [(r.dialogue_id, r.message) for r in report.api_rejections] == [
        ("FindKayakLessons", f"FindKayakLessons is also defined, differently, in {tmp_path / 'a.yaml'}")
    ]
    assert report.schemas["FindKayakLessons"].input_parameters["lake"].description == "Name of the lake."


def test_the_tester_accepts_retrieval_and_plans(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    report = _judge_one(tmp_path, RETRIEVE + PLAN, evaluation)
    assert [d.id for d in report.accepted] == ["k-retrieve-1", "k-plan-1"], report.rejected


# --- the JSON form: each stage's answer constrained by its schema ------------------------------------------------


def _as_json(stage: str, text: str) -> str:
    """A world answer (YAML, or the domains' lines) written as the JSON object the stage's schema asks for."""
    body = text.split("```")[0]
    if stage == "domains":
        return json.dumps({"domains": [line for line in body.splitlines() if line.strip()]})
    data = yaml.safe_load(body)
    return json.dumps({"apis": data} if stage == "apis" else data)


class JsonWorldBackend(WorldBackend):
    """The world from a chat model that constrains its output: bare JSON objects, each checked against the schema
    it was sent (as a grammar would guarantee)."""

    constrains_json = True

    def default_prompt_mode(self) -> str:
        return "paper"

    def complete(self, request: Request) -> Completion:
        import jsonschema

        out = super().complete(request)
        stage, _ = _stage(request)
        assert request.response_schema is not None, stage
        out.text = _as_json(stage, out.text)
        jsonschema.validate(json.loads(out.text), request.response_schema)
        return out


def test_the_json_form_writes_the_same_corpus_as_the_yaml_form(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    yaml_report = run_pipeline(_config(tmp_path / "yaml", WorldBackend(), evaluation))
    backend = JsonWorldBackend()
    json_report = run_pipeline(_config(tmp_path / "json", backend, evaluation))
    assert len(json_report.accepted) == len(yaml_report.accepted) == 10
    assert _corpus_texts(tmp_path / "json") == _corpus_texts(tmp_path / "yaml")
    # Every request carried its stage's schema, and the prompts asked for JSON, not a YAML block.
    assert len(backend.requests) == 1 + 2 + 10 + 10
    assert all("```yaml\n" not in r.prompt.messages[-1]["content"].split("Answer with")[-1] for r in backend.requests)
    identity = json.loads((tmp_path / "json" / "synthesis.json").read_text(encoding="utf-8"))
    assert identity["form"] == "json" and "form" not in json.loads((tmp_path / "yaml" / "synthesis.json").read_text(encoding="utf-8"))
    assert all(r["schema"] for r in _journal(tmp_path / "json", "dialogues"))


def test_an_identifier_the_user_wrote_otherwise_or_a_result_gave_is_not_invented(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    spaced = _variant("lesson L-22", "lesson LS 2231", _variant("lesson_id='L-22'", "lesson_id='LS-2231'", RETRIEVE))
    from_result = PLAN.replace('"L-57"', '"LK-5701"').replace("lesson_id='L-57'", "lesson_id='LK-5701'")
    for dialogue in (spaced, from_result):
        report = _judge_one(tmp_path, dialogue, evaluation)
        assert len(report.accepted) == 1, report.rejected


def test_a_user_may_speak_of_an_api_as_a_topic(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    topic = _variant("Is there a lesson on", "Before I read the API reference: is there a lesson on")
    assert [d.id for d in _judge_one(tmp_path, topic, evaluation).accepted] == ["k-call-1"]


def test_a_placeholder_the_user_said_is_a_value(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    said = _variant("Lake Orta on", "My Lake on", _variant("lake='Lake Orta'", "lake='My Lake'"))
    report = _judge_one(tmp_path, said, evaluation)
    assert [d.id for d in report.accepted] == ["k-call-1"], report.rejected


def test_without_clarifying_the_dialogue_schema_calls_at_once_and_values_open_with_no_bracket() -> None:
    import jsonschema

    from apibank_lib.synthesis.schemas import dialogue_schema

    schemas = {s.name: s for s in parse_apis(KAYAK_APIS)}
    book = schemas["BookKayakLesson"]
    good = yaml.safe_load(KAYAK[2]["dialogue"])
    asking = json.loads(json.dumps(good))
    asking["turns"][1:1] = [{"ai": "Which lesson?"}, {"user": "L-22, please."}]
    jsonschema.validate(asking, dialogue_schema("retrieve_call", [book]))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(asking, dialogue_schema("retrieve_call", [book], clarify=False))
    jsonschema.validate(good, dialogue_schema("retrieve_call", [book], clarify=False))
    bracket = json.loads(json.dumps(good))
    bracket["turns"][2]["api"] = bracket["turns"][2]["api"].replace("lesson_id='", "lesson_id=')")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bracket, dialogue_schema("retrieve_call", [book]))
    prompt = dialogue_prompt("Kayak lessons", [book], _draft(KAYAK[0]), "json", clarify=False)
    assert "Ask the user" not in prompt.text and "call at once" in prompt.text
    from apibank_lib.synthesis.single import single_prompt

    assert "Ask the user" in single_prompt("call", [], "json").text
    assert "Ask the user" not in single_prompt("call", [], "json", clarify=False).text


def test_request_values_are_asked_for_given_and_said_in_the_request(kayak_schemas: dict[str, Any]) -> None:
    prompt = request_prompt("Kayak lessons", list(kayak_schemas.values()), "call", form="json", values=True)
    assert "2. Under values" in prompt.text and '"values"' in prompt.text
    good = {"ability": "call", "apis": ["FindKayakLessons"], "values": {"lake": "Lake Orta", "day": "2023-08-05"},
            "request": "Any kayak lesson on Lake Orta on August 5th?"}
    draft = parse_request(json.dumps(good), kayak_schemas, ability="call", values=True)
    assert draft.values == (("lake", "Lake Orta"), ("day", "2023-08-05"))
    for change, words in (
        ({"values": {"lake": "Lake Orta"}}, "no value for the required input day"),
        ({"values": {"lake": "Lake Como", "day": "2023-08-05"}}, "the request does not say lake='Lake Como'"),
        ({"values": None}, "values must map input names"),
    ):
        with pytest.raises(SynthesisParseError, match=words):
            parse_request(json.dumps({**good, **change}), kayak_schemas, ability="call", values=True)
    unasked = {k: v for k, v in good.items() if k != "values"}
    with pytest.raises(SynthesisParseError, match="missing \\['values'\\]"):
        parse_request(json.dumps(unasked), kayak_schemas, ability="call", values=True)
    assert parse_request(json.dumps(unasked), kayak_schemas, ability="call").values == ()
    # A plan's later API takes what an earlier result supplies: lesson_id comes from FindKayakLessons' lessons.
    plan = [kayak_schemas["FindKayakLessons"], kayak_schemas["BookKayakLesson"]]
    assert needed_values(plan) == ["lake", "day", "student"]


def test_request_values_hold_no_double_quote_a_grammar_would_leave_unescaped() -> None:
    import jsonschema

    from apibank_lib.synthesis.schemas import request_schema

    schema = request_schema("call", ["BookKayakLesson"], 1, 1, values=True)
    answer = {"ability": "call", "apis": ["BookKayakLesson"], "values": {"student": "Tom Reyes"}, "request": "Book Tom Reyes a lesson."}
    jsonschema.validate(answer, schema)
    jsonschema.validate({**answer, "values": {"student": "Tom Reyes", "lessons": 3}}, schema)  # a number as one
    # What Qwen2.5-Coder-1.5B wrote when the pattern let a quote through: two pairs inside one value.
    for value in ('Best Hotel", "location": "New York', "C:\\lessons"):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**answer, "values": {"student": value}}, schema)


def test_request_values_fix_the_calls_of_the_dialogue_schema() -> None:
    import jsonschema

    from apibank_lib.synthesis.schemas import dialogue_schema

    schemas = {s.name: s for s in parse_apis(KAYAK_APIS)}
    good = yaml.safe_load(KAYAK[2]["dialogue"])
    pinned = dialogue_schema("retrieve_call", [schemas["BookKayakLesson"]], values={"student": "Tom Reyes (jr.)"})
    other = json.loads(json.dumps(good))
    other["turns"][2]["api"] = "BookKayakLesson(lesson_id='L-22', student='Tom Reyes (jr.)')"
    jsonschema.validate(other, pinned)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(good, pinned)  # student='Tom Reyes' is not the value the request gave


def test_the_pipeline_with_request_values_writes_the_same_corpus_from_the_world(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    plain = run_pipeline(_config(tmp_path / "plain", WorldBackend(), evaluation))
    backend = WorldBackend()
    valued = run_pipeline(_config(tmp_path / "valued", backend, evaluation, request_values=True))
    assert [d.id for d in valued.accepted] == [d.id for d in plain.accepted] and len(valued.accepted) == 10
    dialogue_prompts = [r.prompt.text for r in backend.requests if r.prompt.source == "synthesis:dialogues"]
    assert any("The values the user gives (use them exactly): lake='Lake Orta'" in t for t in dialogue_prompts)


def test_the_dialogue_schema_allows_only_the_chosen_apis_and_their_parameters() -> None:
    import jsonschema

    from apibank_lib.synthesis.schemas import dialogue_schema

    schemas = {s.name: s for s in parse_apis(KAYAK_APIS)}
    schema = dialogue_schema("retrieve_call", [schemas["BookKayakLesson"]])
    good = yaml.safe_load(KAYAK[2]["dialogue"])
    jsonschema.validate(good, schema)
    for bad_call in ("CancelKayakLesson(booking_ref='KB-1')", "BookKayakLesson(lesson='L-22')", 'BookKayakLesson(lesson_id="L-22")'):
        bad = json.loads(json.dumps(good))
        bad["turns"][2]["api"] = bad_call
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_stage_timings_are_recorded_per_answer_and_summed_per_stage(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    report = run_pipeline(_config(tmp_path, WorldBackend(delay_s=0.01), evaluation))
    rows = _journal(tmp_path, "dialogues")
    assert all(r["wall_s"] >= 0.01 and r["cpu_s"] >= 0 for r in rows)
    assert _row(report, "dialogues")["wall_seconds"] == pytest.approx(sum(r["wall_s"] for r in rows), abs=0.1)
    again = run_pipeline(_config(tmp_path, WorldBackend(), evaluation))  # resumed: the recorded cost, not zero
    assert _row(again, "dialogues")["wall_seconds"] == _row(report, "dialogues")["wall_seconds"]


# --- the single-agent baseline -------------------------------------------------------------------------------------


def _single_answer(request: Request, plan: dict[int, str]) -> str:
    """The n-th example: ``plan[n]`` names a world domain to write it from (its first entry of the asked ability),
    or holds a raw answer."""
    _, user = _stage(request)
    ability = re.search(r"dialogue of the ability (\w+),", user).group(1)  # type: ignore[union-attr]
    n = _single_answer.count = getattr(_single_answer, "count", 0) + 1  # type: ignore[attr-defined]
    what = plan.get(n, "Bakery orders")
    if what not in WORLD:
        return what
    entry = next(e for e in WORLD[what] if e["ability"] == ability)
    return json.dumps({"domain": what, "apis": yaml.safe_load(APIS[what]), "dialogue": yaml.safe_load(entry["dialogue"])})


def test_the_single_agent_writes_whole_examples_judged_by_the_same_tester(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    from apibank_lib.synthesis.single import run_single_agent

    _single_answer.count = 0  # type: ignore[attr-defined]
    plan = {1: "Kayak lessons", 2: "Kayak lessons", 3: "{not json", 4: "Bakery orders"}
    backend = ScriptedBackend(answer=lambda r: _single_answer(r, plan))
    report = run_single_agent(_config(tmp_path, backend, evaluation, form="json"), examples=4)
    table = report.table().set_index("stage")
    assert list(table.index) == ["examples", "tester"]
    assert table.loc["examples", "attempted"] == 4 and table.loc["examples", "accepted"] == 2
    reasons = {r.key: r.message for r in report.rejections}
    assert "was defined by an earlier example" in reasons["examples/2"]  # API names are unique in a corpus
    assert "examples/3" in reasons
    assert [d.domain for d in report.accepted] == ["Kayak lessons", "Bakery orders"]
    assert check_corpus(tmp_path / "corpus", evaluation_names=evaluation[0], evaluation_requests=evaluation[1]).rejected == []
    with pytest.raises(ConfigError, match="method differ"):  # the baseline and the pipeline never share a folder
        run_pipeline(_config(tmp_path, WorldBackend(), evaluation, form="json"))


def test_the_single_agent_stops_at_its_token_budget(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    from apibank_lib.synthesis.single import run_single_agent

    _single_answer.count = 0  # type: ignore[attr-defined]
    backend = ScriptedBackend(answer=lambda r: _single_answer(r, {}))
    report = run_single_agent(_config(tmp_path, backend, evaluation, form="json"), examples=10, token_budget=1)
    assert report.table().set_index("stage").loc["examples", "attempted"] == 1


def test_the_single_agents_budget_counts_every_try(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    from apibank_lib.synthesis.single import run_single_agent

    class FirstTryBroken(ScriptedBackend):
        """Each example's first try is cut off, its retry whole; every answer costs 10 tokens."""

        def __init__(self) -> None:
            self.calls = 0
            super().__init__(answer=self.answer)

        def answer(self, request: Request) -> str:
            self.calls += 1
            return "{" if self.calls % 2 else _single_answer(request, {2: "Kayak lessons"})

        def complete(self, request: Request) -> Completion:
            out = super().complete(request)
            out.prompt_tokens, out.completion_tokens = 10, 0
            return out

    _single_answer.count = 0  # type: ignore[attr-defined]
    config = _config(tmp_path, FirstTryBroken(), evaluation, form="json", retries=1)
    report = run_single_agent(config, examples=10, token_budget=30)
    # Two tries (20 tokens) for the first example, two more for the second, then the budget is spent; counting
    # only the last try of each would have gone on to a third example.
    assert report.table().set_index("stage").loc["examples", "attempted"] == 4


def test_a_corpus_to_stay_apart_from_gives_its_domains_apis_and_requests_away(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    earlier = tmp_path / "earlier"
    run_pipeline(_config(earlier, WorldBackend(), evaluation))
    bakery = earlier / "corpus" / "bakery_orders.yaml"
    backend = WorldBackend()
    report = run_pipeline(_config(tmp_path / "new", backend, evaluation, apart_from=[bakery]))
    assert "and from these domains: Bakery orders" in backend.requests[0].prompt.messages[-1]["content"]
    # The domains agent named it anyway (the world always does): it is dropped as taken, not asked for APIs.
    assert {d.domain for d in report.accepted} == {"Kayak lessons"} and len(report.accepted) == 5
    assert _row(report, "domains")["items"] == 1
    identity = json.loads((tmp_path / "new" / "synthesis.json").read_text(encoding="utf-8"))
    assert identity["apart_from"] == [str(bakery)]


# --- finished folders read back: the comparison, reviews and costs --------------------------------------------------


def test_finished_folders_give_the_method_comparison_and_review_rates(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    import csv

    from apibank_lib.synthesis import records
    from apibank_lib.synthesis.single import run_single_agent

    multi = run_pipeline(_config(tmp_path / "multi", WorldBackend(), evaluation))
    _single_answer.count = 0  # type: ignore[attr-defined]
    backend = ScriptedBackend(answer=lambda r: _single_answer(r, {1: "Kayak lessons", 2: "{broken", 3: "Kayak lessons"}))
    run_single_agent(_config(tmp_path / "single", backend, evaluation, form="json"), examples=4)
    read = records.stage_table(tmp_path / "multi")
    assert list(read["accepted"]) == list(multi.table()["accepted"])
    sheet = records.review_sheet(tmp_path / "multi", n=4, seed=1)
    with sheet.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and {r["tester"] for r in rows} == {"accepted"}
    assert records.review_sheet(tmp_path / "multi", n=2) == sheet and len(sheet.read_text().splitlines()) == 5  # kept
    for row, verdict in zip(rows, ("yes", "yes", "no", "")):
        row.update(usable=verdict, standard="results" if verdict == "no" else "", reviewer="session" if verdict else "")
    with sheet.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=records.REVIEW_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    table = records.method_comparison({"multi-agent": tmp_path / "multi", "single agent": tmp_path / "single"}).set_index("method")
    assert table.loc["multi-agent", "answers"] == 10 and table.loc["multi-agent", "usable (tester) %"] == 100.0
    assert table.loc["multi-agent", "reviewed"] == 3 and table.loc["multi-agent", "usable (review) %"] == pytest.approx(66.7)
    assert table.loc["multi-agent", "tester agrees %"] == pytest.approx(66.7) and table.loc["multi-agent", "reviewer"] == "session"
    assert table.loc["single agent", "answers"] == 4 and table.loc["single agent", "accepted by tester"] == 2
    assert table.loc["single agent", "tester low"] < 50 < table.loc["single agent", "tester high"]
    costs = records.cost_table(tmp_path / "multi").set_index("measure")
    assert costs.loc["accepted dialogues", "value"] == 10 and costs.loc["USD per hand-annotated dialogue (paper)", "source"] == "reported"


def test_a_review_row_without_a_known_standard_is_refused_by_row(tmp_path: Path) -> None:
    from apibank_lib.synthesis import records

    sheet = tmp_path / "review.csv"
    sheet.write_text("id,tester,usable,standard,note,reviewer\na-1,accepted,yes,,,r\nb-2,accepted,no,vibes,,r\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"row 3 \(b-2\): a 'no' names the standard"):
        records.read_review(sheet)
    sheet.write_text("id,tester,usable,standard,note,reviewer\na-1,accepted,maybe,,,r\n", encoding="utf-8")
    with pytest.raises(DataError, match="usable must be yes or no"):
        records.read_review(sheet)


def test_a_generation_grows_by_domains_without_asking_for_them_again(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    first = run_pipeline(_config(tmp_path, WorldBackend(), evaluation, n_domains=1, domains_asked=2))
    assert {d.domain for d in first.accepted} == {"Kayak lessons"}
    backend = WorldBackend()
    grown = run_pipeline(_config(tmp_path, backend, evaluation, n_domains=2, domains_asked=2))
    assert _row(grown, "domains")["resumed"] == 1 and _row(grown, "apis")["resumed"] == 1
    assert len(grown.accepted) == 10 and "Name 2 different" in str(_journal(tmp_path, "domains")[0]["prompt"])
    assert not any(r.prompt.source == "synthesis:domains" for r in backend.requests)


def test_a_rerun_under_a_changed_tester_records_its_new_verdicts(
    tmp_path: Path, evaluation: tuple[list[str], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from apibank_lib.synthesis import records

    first = run_pipeline(_config(tmp_path, WorldBackend(), evaluation))
    victim = first.accepted[0].id
    assert victim not in records.tester_rejected(tmp_path)
    stricter = pipeline_module.judge

    def judge(d: Any, schemas: Any) -> Any:
        return ("format", "a rule added later") if d.id == victim else stricter(d, schemas)

    monkeypatch.setattr(pipeline_module, "judge", judge)
    again = run_pipeline(_config(tmp_path, WorldBackend(), evaluation))
    assert victim not in {d.id for d in again.accepted}
    assert records.tester_rejected(tmp_path)[victim] == "format"  # the journal's latest verdict, not the first
    lines = len(_journal(tmp_path, "tester"))
    run_pipeline(_config(tmp_path, WorldBackend(), evaluation))
    assert len(_journal(tmp_path, "tester")) == lines  # an unchanged verdict is not written again


class _AreaWorld(WorldBackend):
    """The world, whose domains agent repeats itself: every domains answer names Kayak lessons, except the one
    for ``fresh_area``, which names Bakery orders."""

    def __init__(self, fresh_area: str | None) -> None:
        super().__init__()
        self.fresh_area = fresh_area

    def complete(self, request: Request) -> Completion:
        stage, user = _stage(request)
        if stage != "domains":
            return super().complete(request)
        self.requests.append(request)
        fresh = self.fresh_area is not None and f" within {self.fresh_area} " in user
        return Completion(text=("Bakery orders" if fresh else "Kayak lessons") + "\n```\n")


def test_too_few_domains_are_topped_up_one_area_of_life_at_a_time(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    from apibank_lib.synthesis.agents import DOMAIN_AREAS
    from apibank_lib.synthesis.pipeline import FRUITLESS_AREAS

    backend = _AreaWorld(DOMAIN_AREAS[1])
    report = run_pipeline(_config(tmp_path / "topped", backend, evaluation))
    asked = [r for r in backend.requests if r.prompt.source == "synthesis:domains"]
    # The first answer gives one domain; the first area's repeats it; the second area's gives the other.
    assert len(asked) == 3 and "within" not in asked[0].prompt.messages[-1]["content"]
    assert f"Name 8 different everyday domains within {DOMAIN_AREAS[1]} in" in asked[2].prompt.messages[-1]["content"]
    assert [r["key"] for r in _journal(tmp_path / "topped", "domains")] == [
        "domains", f"domains/{slugify(DOMAIN_AREAS[0])}", f"domains/{slugify(DOMAIN_AREAS[1])}"
    ]
    assert {d.domain for d in report.accepted} == {"Kayak lessons", "Bakery orders"} and len(report.accepted) == 10
    assert _row(report, "domains")["attempted"] == 3 and _row(report, "domains")["duplicates"] == 1
    again = _AreaWorld(DOMAIN_AREAS[1])
    assert _corpus_texts(tmp_path / "topped") == _corpus_texts(run_pipeline(_config(tmp_path / "topped", again, evaluation)).out)
    assert not again.requests  # resumed from the journals
    # Grown past the first answer's size, a run keeps that answer (same prompt) and tops up from the areas.
    grown = _AreaWorld(DOMAIN_AREAS[1])
    run_pipeline(_config(tmp_path / "grown", _AreaWorld(None), evaluation, n_domains=1, domains_asked=1))
    report = run_pipeline(_config(tmp_path / "grown", grown, evaluation, n_domains=2, domains_asked=1))
    assert [r.prompt.source for r in grown.requests].count("synthesis:domains") == 2  # the two areas, not the first
    assert {d.domain for d in report.accepted} == {"Kayak lessons", "Bakery orders"}

    # A domains agent with nothing new to name is asked a few areas in a row, then the run goes on without.
    barren = _AreaWorld(None)
    report = run_pipeline(_config(tmp_path / "barren", barren, evaluation))
    assert len([r for r in barren.requests if r.prompt.source == "synthesis:domains"]) == 1 + FRUITLESS_AREAS
    assert {d.domain for d in report.accepted} == {"Kayak lessons"}


def test_a_domain_naming_an_evaluated_area_or_a_taken_domain_is_not_new() -> None:
    from apibank_lib.synthesis.agents import domain_taken

    taken = ["Gym and fitness classes", "Car rental"]
    assert domain_taken("Gym and fitness", taken) is not None  # its words are the taken one's
    assert domain_taken("Car rental services", taken) is not None
    assert "evaluated area" in (domain_taken("Hotel booking", taken) or "")
    assert domain_taken("Beekeeping supplies", taken) is None
    assert domain_taken("Bike repair", taken) is None  # one shared word is not enough


class _FirstDialogueTryBroken:
    """Mixed into a world backend: the first answer to each dialogue prompt is ``broken`` (not YAML); a retry, with
    another seed, is answered as usual."""

    broken = ""

    def complete(self, request: Request) -> Completion:
        out = super().complete(request)  # type: ignore[misc]
        stage, user = _stage(request)
        seen = self.__dict__.setdefault("_seen", set())
        if stage == "dialogues" and user not in seen:
            seen.add(user)
            out.text = self.broken
        return out


class FirstTryFails(_FirstDialogueTryBroken, WorldBackend):
    broken = "turns: [ {user: 'unclosed'\n```"


class ChatFirstTryFails(_FirstDialogueTryBroken, ChatWorldBackend):
    broken = "```yaml\nturns: [ {user: 'unclosed'\n```"


def test_a_refused_answer_is_asked_again_with_another_seed_and_both_tries_count(
    tmp_path: Path, evaluation: tuple[list[str], list[str]]
) -> None:
    backend = FirstTryFails()
    report = run_pipeline(_config(tmp_path, backend, evaluation, retries=1))
    row = _row(report, "dialogues")
    assert row["attempted"] == 20 and row["accepted"] == 10 and row["rejected_by_reason"] == "yaml: 10"
    assert len(report.accepted) == 10
    keys = [r["key"] for r in _journal(tmp_path, "dialogues")]
    assert sum(k.endswith("#2") for k in keys) == 10
    seeds = {r.seed for r in backend.requests if r.prompt.source == "synthesis:dialogues"}
    assert len(seeds) == 20  # each try sampled with its own seed
    again = run_pipeline(_config(tmp_path, FirstTryFails(), evaluation, retries=1))  # resumed: nothing asked again
    assert _row(again, "dialogues")["calls"] == 0 and len(again.accepted) == 10


def test_a_retry_with_feedback_says_why_the_try_before_was_refused(tmp_path: Path, evaluation: tuple[list[str], list[str]]) -> None:
    backend = ChatFirstTryFails()
    report = run_pipeline(_config(tmp_path, backend, evaluation, retries=1, feedback=True))
    assert len(report.accepted) == 10 and _row(report, "dialogues")["rejected_by_reason"] == "yaml: 10"
    dialogue_requests = [r for r in backend.requests if r.prompt.source == "synthesis:dialogues"]
    first, retry = dialogue_requests[0].prompt.messages, dialogue_requests[1].prompt.messages
    assert len(retry) == len(first) and retry[:-1] == first[:-1] and retry[-1]["content"].startswith(first[-1]["content"])
    note = retry[-1]["content"][len(first[-1]["content"]) :]
    assert note.startswith("\n\nAn earlier answer to this was refused: not valid YAML") and "stage:" not in note
    journal = _journal(tmp_path, "dialogues")
    assert journal[1]["key"].endswith("#2") and journal[1]["prompt"] == retry  # the retry's prompt, kept
    again = run_pipeline(_config(tmp_path, ChatFirstTryFails(), evaluation, retries=1, feedback=True))
    assert _row(again, "dialogues")["calls"] == 0 and len(again.accepted) == 10
    # A completion model has no turns to add: its retry is the same prompt, sampled again.
    completion = FirstTryFails()
    run_pipeline(_config(tmp_path / "completion", completion, evaluation, retries=1, feedback=True))
    tries = [r.prompt for r in completion.requests if r.prompt.source == "synthesis:dialogues"][:2]
    assert tries[0].text == tries[1].text and tries[0].messages == tries[1].messages


HOTEL_RENAMED = (
    "  - name: HotelBooking\n"
    '    description: "Book a hotel room for a number of nights at a location."\n'
    "    input_parameters:\n"
    '      city: {type: str, description: "The city."}\n'
    '      nights: {type: int, description: "How many nights."}\n'
    "    output_parameters:\n"
    '      booking_id: {type: str, description: "The booking."}\n'
)


def test_an_evaluation_api_under_another_name_is_refused(tmp_path: Path) -> None:
    # HotelBooking is BookHotel renamed: its name is far enough from the evaluation's names, its search text is not.
    closest = near_evaluation(parse_apis(textwrap.dedent(HOTEL_RENAMED)), evaluation_schemas())
    assert list(closest) == ["HotelBooking"] and closest["HotelBooking"][0] == "BookHotel"
    assert closest["HotelBooking"][1] >= NEAR_EVALUATION
    assert near_evaluation(parse_apis(KAYAK_APIS), evaluation_schemas()) == {}  # lessons on a lake are nothing the benchmark has
    # A wordier description brings the search text below the threshold; the name alone still gives it away.
    wordy = HOTEL_RENAMED.replace(
        "Book a hotel room for a number of nights at a location.",
        "This API allows users to book hotels based on various criteria such as location, type of hotel, check-in date,"
        " check-out date, and number of guests.",
    )
    assert near_evaluation(parse_apis(textwrap.dedent(wordy)), evaluation_schemas())["HotelBooking"][0] == "BookHotel"
    path = tmp_path / "case.yaml"
    booking = (
        "  - id: k-call-2\n    ability: call\n    turns:\n"
        '      - user: "Book me two nights in Lyon."\n'
        "      - api: HotelBooking(city='Lyon', nights=2)\n"
        '        output: {booking_id: "H-77"}\n'
        '      - ai: "Booked: H-77."\n'
    )
    path.write_text(TESTER_APIS + HOTEL_RENAMED + "dialogues:\n" + GOOD_CALL + booking, encoding="utf-8")
    report = check_corpus(path)  # the default: the bundled benchmark's names, requests and APIs
    assert [(r.dialogue_id, r.reason) for r in report.api_rejections] == [("HotelBooking", "api")]
    assert "HotelBooking is the evaluation API BookHotel under another name" in report.api_rejections[0].message
    assert [d.id for d in report.accepted] == ["k-call-1"] and [r.dialogue_id for r in report.rejected] == ["k-call-2"]
    # Given names of its own and no APIs, the check compares names only (as the pipeline does with its own lists).
    names, requests = evaluation_texts()
    assert check_corpus(path, evaluation_names=names, evaluation_requests=requests).api_rejections == []


def test_the_apis_stage_refuses_an_evaluation_api_under_another_name() -> None:
    text = yaml.safe_dump(
        [{"name": "HotelBooking", "description": "Book a hotel room for a number of nights at a location.",
          "input_parameters": {"city": {"type": "str", "description": "The city."}},
          "output_parameters": {"booking_id": {"type": "str", "description": "The booking."}}}],
        sort_keys=False,
    )
    _parse_error(lambda: parse_apis(text, evaluation=evaluation_schemas()), "schema", "the evaluation API BookHotel")
    assert [s.name for s in parse_apis(text)] == ["HotelBooking"]  # without evaluation APIs, names alone
