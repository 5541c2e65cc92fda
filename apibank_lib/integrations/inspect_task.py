"""API-Bank as inspect_ai tasks: ``inspect eval apibank_lib/api_bank --model <provider/model> -T level=1``.

**Teacher-forced samples** (levels 1-3): each of our samples becomes an inspect ``Sample`` whose messages are our
chat rendering (:func:`~apibank_lib.prompting.chat.build_chat`: the system message, the turns, earlier calls as
assistant ``tool_calls`` with their ``tool`` results) and whose tools are the APIs that prompt describes, as JSON
Schema. The model answers once (an API-call sample requires a tool call, as ``apibank run``'s chat mode does,
unless ``tool_choice=auto``); its answer is judged by the workbench's own scoring
(:func:`~apibank_lib.runs.scoring.judge_predictions` with our :class:`~apibank_lib.grading.grader.Grader`), with the
error category and the reason in the score's metadata. Accuracy comes with a standard error clustered by dialogue.

**Agent episodes** (``-T level=3 -T agent=true``): the model gets the item's requirement and ToolSearcher; each
API a search returns becomes a tool, and every call runs in the sample's own sandbox, as our agent loop runs it.
The episode is judged as our episodes are (the required calls matched, the end state compared).

The samples are the ones ``apibank run`` plans with the same ``level``, ``limit`` and ``seed`` (a seeded draw of
whole dialogues); inspect's own ``--limit`` then takes the first of them. Samples an erratum of the data excludes
are left out, as our accuracy leaves them out. An inspect log becomes a run folder with
:func:`~apibank_lib.integrations.inspect_log.import_inspect_log` (``apibank import-inspect``).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from apibank_lib.core.calls import format_call
from apibank_lib.core.errors import ConfigError
from apibank_lib.core.types import ApiCall, ApiCallSample, ApiRecord, Episode, Sample
from apibank_lib.data.datasets import Benchmark, load_benchmark
from apibank_lib.env.protocols import V2, get_protocol
from apibank_lib.grading.grader import Grader
from apibank_lib.prompting.chat import (
    CHAT_SYSTEM,
    LEVEL3_SYSTEM_EXTRA,
    build_chat,
    searched_apis,
    tool_json_schema,
    tool_result_content,
)
from apibank_lib.runs.config import RunConfig, plan
from apibank_lib.runs.records import EpisodeStep, PredictionRecord, Predictions
from apibank_lib.runs.scoring import judge_predictions

__all__ = ["TASK_NAME", "api_bank", "api_bank_task", "apibank_agent", "apibank_answer", "apibank_scorer", "inspect_samples"]


@cache
def _bench(data: str | None) -> Benchmark:
    """One benchmark per data root in a process (the dataset, solvers and scorer of a task share it)."""
    return load_benchmark(data)


@cache
def _grader(data: str | None, protocol: str) -> Grader:
    return Grader(_bench(data), get_protocol(protocol))


def planned_items(bench: Benchmark, level: int, *, protocol: str, kind: str, agent: bool, limit: int | None,
                  seed: int, grader: Grader | None = None) -> list[Sample | Episode]:
    """What ``apibank run`` plans for these settings, less the samples an erratum excludes (``grader``: the one that
    will judge them, whose verified errata are reused)."""
    if level not in (1, 2, 3):
        raise ConfigError(f"level {level}: choose 1, 2 or 3")
    if agent and level != 3:
        raise ConfigError("agent episodes exist at level 3 only (-T level=3 -T agent=true)")
    if kind not in ("api", "response"):
        raise ConfigError(f"kind {kind!r}: choose api (API calls) or response (replies)")
    config = RunConfig(
        model="oracle", levels=(level,), protocol=protocol, limit=limit, subset_seed=seed, tasks=(kind,),
        level3="loop" if agent else "steps",
    )
    items = plan(bench, config)
    report = (grader or Grader(bench, get_protocol(protocol))).errata
    if report is not None:
        items = [x for x in items if (e := report.for_sample(x.key)) is None or e.erratum.decision != "exclude"]
    return items


def _message(m: dict[str, Any]) -> Any:
    """One of our chat messages as an inspect message (the OpenAI layout, arguments as objects)."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    role = m["role"]
    if role == "system":
        return ChatMessageSystem(content=m["content"])
    if role == "user":
        return ChatMessageUser(content=m["content"])
    if role == "tool":
        return ChatMessageTool(content=m["content"], tool_call_id=m["tool_call_id"], function=m.get("name"))
    calls = [
        ToolCall(id=tc["id"], function=tc["function"]["name"], arguments=dict(tc["function"]["arguments"]))
        for tc in m.get("tool_calls") or []
    ]
    return ChatMessageAssistant(content=m.get("content") or "", tool_calls=calls or None)


def inspect_samples(bench: Benchmark, items: list[Sample | Episode]) -> list[Any]:
    """Our samples and episodes as inspect ``Sample``s (id = our sample key; the tools in the metadata)."""
    from inspect_ai.dataset import Sample as InspectSample

    out = []
    for item in items:
        meta = {"key": item.key, "dialogue_id": item.dialogue_id, "level": item.level, "kind": item.kind, "data": bench.name}
        if isinstance(item, Episode):
            system = CHAT_SYSTEM + LEVEL3_SYSTEM_EXTRA
            messages = [{"role": "system", "content": system}, {"role": "user", "content": item.item.requirement.strip()}]
            target = item.item.response
        else:
            chat = build_chat(item.context(), bench.toolset(item.level))
            messages, meta["tools"] = chat.messages, chat.tools
            target = format_call(item.gold.call) if isinstance(item, ApiCallSample) else item.gold
        out.append(InspectSample(id=item.key, input=[_message(m) for m in messages], target=target, metadata=meta))
    return out


def _tool_defs(tools: list[dict[str, Any]], run: Any = None) -> list[Any]:
    """OpenAI-style tool entries as inspect tools; ``run(name, arguments)`` executes a call (None: never called)."""
    from inspect_ai.tool import ToolDef, ToolParam, ToolParams

    defs = []
    for entry in tools:
        fn = entry["function"]
        schema = fn["parameters"]
        params = ToolParams(
            properties={k: ToolParam(**v) for k, v in schema.get("properties", {}).items()},
            required=list(schema.get("required", [])),
        )

        def make(name: str) -> Any:
            async def execute(**arguments: Any) -> str:
                if run is None:  # teacher-forced: the answer is judged, never executed
                    raise RuntimeError(f"{name} is not executed in a teacher-forced sample")
                return run(name, arguments)

            return execute

        defs.append(ToolDef(make(fn["name"]), name=fn["name"], description=fn["description"] or fn["name"], parameters=params))
    return defs


def apibank_answer(tool_choice: str = "required") -> Any:
    """The solver of a teacher-forced sample: its tools from the sample, one answer, nothing executed."""
    from inspect_ai.solver import Generate, TaskState, solver

    @solver(name="apibank_answer")
    def make() -> Any:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            state.tools = _tool_defs(state.metadata.get("tools") or [])
            # As `apibank run` asks in chat mode: a call required (or left to the model) for an API-call sample,
            # none for a reply.
            if state.metadata["kind"] == "api":
                state.tool_choice = "any" if tool_choice == "required" else "auto"
            else:
                state.tool_choice = "none"
            return await generate(state, tool_calls="none")

        return solve

    return make()


def apibank_agent(data: str | None, protocol: str, max_steps: int = 12, retriever: str | None = None) -> Any:
    """The solver of a level-3 agent episode: our agent loop, in the sample's own sandbox."""
    from inspect_ai.model import ChatMessageTool
    from inspect_ai.solver import Generate, TaskState, solver

    @solver(name="apibank_agent")
    def make() -> Any:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            bench = _bench(data)
            proto = get_protocol(protocol)
            box = bench.sandbox(3, proto, searcher=retriever)
            toolset = bench.toolset(3)
            done: list[ApiRecord] = []
            calls: list[dict[str, Any]] = []
            for _ in range(max_steps):
                names = ["ToolSearcher"] + [d["name"] for d in searched_apis(done) if d["name"] in toolset]
                state.tools = _tool_defs([tool_json_schema(toolset.schema(n)) for n in dict.fromkeys(names)])
                state.tool_choice = "auto"
                state = await generate(state, tool_calls="none")
                message = state.output.message
                if not message.tool_calls:
                    break
                for n, tc in enumerate(message.tool_calls):
                    # Our agent loop runs the first call of a step; the others get a result message saying so, since
                    # every tool call of a conversation needs one.
                    call = proto.prepare_call(ApiCall(tc.function, dict(tc.arguments or {})), 3)
                    try:
                        text = format_call(call) if n == 0 else None
                    except ValueError as exc:  # arguments no call text can hold: not run, as our loop does
                        text, reply = None, f"not run: {exc}"
                    else:
                        reply = "not run: one call per step"
                    if text is None:
                        state.messages.append(ChatMessageTool(content=reply, tool_call_id=tc.id, function=tc.function))
                        continue
                    result = box.execute_safely(call).to_dict()
                    done.append(ApiRecord(call.name, dict(call.args), result))
                    calls.append({"call": text, "result": result})
                    state.messages.append(ChatMessageTool(content=tool_result_content(result), tool_call_id=tc.id, function=tc.function))
            state.metadata["calls"] = calls
            return state

        return solve

    return make()


def _answer_of(state: Any) -> tuple[str, list[dict[str, Any]]]:
    """The model's answer: its text and its tool calls as ``{"name", "arguments"}``."""
    message = state.output.message
    raw = [{"name": tc.function, "arguments": tc.arguments if isinstance(tc.arguments, dict) else {}} for tc in message.tool_calls or []]
    return message.text or "", raw


def apibank_scorer(data: str | None, protocol: str) -> Any:
    """The scorer: the workbench's own judgment of the answer (or of the episode's calls)."""
    from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, mean, scorer, stderr
    from inspect_ai.solver import TaskState

    @scorer(name="apibank", metrics=[accuracy(), stderr(cluster="dialogue_id"), mean()])
    def make() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            bench, grader = _bench(data), _grader(data, protocol)
            key = state.metadata["key"]
            item = _item(bench, key)
            if isinstance(item, Episode):
                steps = [EpisodeStep("", c["call"], c["result"]) for c in state.metadata.get("calls", [])]
                record = PredictionRecord.for_item(item, output=state.output.message.text, steps=steps, stopped="answered")
            else:
                text, raw = _answer_of(state)
                record = PredictionRecord.for_item(item, output=text, raw_tool_calls=raw)
            (judged,) = judge_predictions(bench, grader, Predictions({key: record}), "chat")
            meta = {"key": key, "dialogue_id": item.dialogue_id, "protocol_version": judged.protocol_version}
            if item.kind == "response":
                return Score(value=judged.rouge_l or 0.0, answer=record.text(), metadata={**meta, "rouge_l": judged.rouge_l})
            meta.update(category=judged.category, paper_category=judged.paper_category, reason=judged.reason, call=judged.call)
            if isinstance(item, Episode):
                meta.update(required_calls=judged.required_calls, matched_calls=judged.matched_calls,
                            same_end_state=judged.same_end_state, calls_made=judged.calls_made)
            return Score(value=CORRECT if judged.correct else INCORRECT, answer=judged.call or record.text(),
                         explanation=judged.reason, metadata=meta)

        return score

    return make()


_INDEXES: dict[int, tuple[Benchmark, dict[str, Sample | Episode]]] = {}


def _item(bench: Benchmark, key: str) -> Sample | Episode:
    """A sample or episode by key, from an index built once per benchmark (the scorer asks for every sample)."""
    held = _INDEXES.get(id(bench))
    if held is None or held[0] is not bench:
        items = [x for lv in (1, 2, 3) for x in bench.samples(lv)] + list(bench.episodes())
        held = _INDEXES[id(bench)] = (bench, {x.key: x for x in items})
    try:
        return held[1][key]
    except KeyError:
        raise ConfigError(f"no sample {key} in the {bench.name} data") from None


def api_bank_task(
    level: int = 1,
    protocol: str = V2.name,
    data: str | None = None,
    limit: int | None = None,
    seed: int = 0,
    kind: str = "api",
    agent: bool = False,
    tool_choice: str = "required",
    max_steps: int = 12,
    retriever: str | None = None,
) -> Any:
    """The inspect ``Task`` (see the module's docstring).

    Args:
        level: 1 (Call), 2 (Retrieve+Call) or 3 (Plan+Retrieve+Call).
        protocol: the grading protocol (``v2``, or ``paper``: judged sample by sample here, so the paper's shared
            level-3 state is not carried from one sample to the next; import the log for the run's judgment).
        data: a benchmark root (default: the bundled benchmark; or an official release).
        limit, seed: a seeded draw of whole dialogues holding ``limit`` samples, as ``apibank run --limit``.
        kind: ``api`` (API-call samples) or ``response`` (replies, scored by ROUGE-L).
        agent: level-3 agent episodes instead of teacher-forced steps.
        tool_choice: ``required`` (an API-call sample must answer with a tool call) or ``auto``.
        max_steps: an episode's step limit.
        retriever: what ToolSearcher searches with in episodes (the protocol's by default).
    """
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset

    if tool_choice not in ("required", "auto"):
        raise ConfigError(f"tool_choice {tool_choice!r}: choose required or auto")
    bench = _bench(data)
    items = planned_items(bench, int(level), protocol=protocol, kind=kind, agent=bool(agent), limit=limit, seed=int(seed),
                          grader=_grader(data, protocol))
    dataset = MemoryDataset(inspect_samples(bench, items), name=f"api-bank-{bench.name}-L{level}")
    solver = apibank_agent(data, protocol, int(max_steps), retriever) if agent else apibank_answer(tool_choice)
    return Task(dataset=dataset, solver=solver, scorer=apibank_scorer(data, protocol), name="api_bank",
                metadata={"apibank": {"level": level, "protocol": protocol, "data": str(bench.root), "kind": kind,
                                      "agent": bool(agent), "limit": limit, "seed": seed, "retriever": retriever}})


TASK_NAME = "apibank_lib/api_bank"
"""The task's name for ``inspect eval``."""


def _registered() -> Any:
    from inspect_ai import task
    from inspect_ai.util import registry_info

    def api_bank(
        level: int = 1, protocol: str = V2.name, data: str | None = None, limit: int | None = None, seed: int = 0,
        kind: str = "api", agent: bool = False, tool_choice: str = "required", max_steps: int = 12,
        retriever: str | None = None,
    ) -> Any:
        """API-Bank (Li et al., 2023) on the apibank_lib sandbox: teacher-forced samples or level-3 agent episodes."""
        return api_bank_task(level, protocol, data, limit, seed, kind, agent, tool_choice, max_steps, retriever)

    registered = task(name="api_bank")(api_bank)
    if registry_info(registered).name != TASK_NAME:
        # inspect prefixes the package's name when it sees the package installed; run from the project's root, an
        # editable install's metadata is shadowed by the build's apibank_lib.egg-info there, and the prefix would be
        # missing, so `inspect eval apibank_lib/api_bank` would find nothing. Name it in full then.
        registered = task(name=TASK_NAME)(api_bank)
    return registered


try:
    api_bank = _registered()
except ImportError:  # inspect_ai is an optional extra: without it the module still imports
    api_bank = None
