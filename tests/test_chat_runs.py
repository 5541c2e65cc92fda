"""Chat-mode runs end to end: what a chat backend is sent, how its answers are read and judged, and a server that
ignores tools (control flow with a scripted backend and loopback stubs of an OpenAI-compatible server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.types import ApiCallSample
from apibank_lib.data.datasets import Benchmark
from apibank_lib.models.base import Request
from apibank_lib.models.openai_compat import TOOLS_CHECK, OpenAIBackend
from tests.scripted import ScriptedBackend
from apibank_lib.prompting.toolcalls import render_tool_call
from apibank_lib.runs.config import RunConfig, plan
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.runner import RunStopped, run
from apibank_lib.runs.scoring import score_run
from tests.helpers import JsonHandler, serve


def _gold_as_hermes(request: Request) -> str:
    """A chat model that answers every API-call sample with its gold call in Qwen's tags, and replies in text."""
    item = request.item
    assert request.prompt_mode == "chat" and request.chat is not None
    if isinstance(item, ApiCallSample):
        return render_tool_call(item.gold.call, "hermes")
    return "Done."


def test_a_chat_run_sends_chat_prompts_and_judges_the_calls_they_hold(bench: Benchmark, tmp_path: Path) -> None:
    backend = ScriptedBackend(_gold_as_hermes)
    config = RunConfig("scripted", levels=(1, 2), limit=12, prompt_mode="chat", out=str(tmp_path / "chat"))
    run(config, backend=backend, bench=bench, progress=False)
    metrics = score_run(tmp_path / "chat", bench=bench)
    assert metrics.prompt_mode == "chat"
    assert metrics.levels["1"].api_correct == metrics.levels["1"].api_samples > 0
    assert metrics.levels["2"].api_correct == metrics.levels["2"].api_samples > 0
    judged = [j for j in RunFolder(tmp_path / "chat").read_judgments() if j.kind == "api"]
    assert {j.call_format for j in judged} == {"hermes"} and {j.n_calls for j in judged} == {1}
    identity = RunFolder(tmp_path / "chat").read_info().identity
    assert identity["prompt_mode"] == "chat" and identity["prompt"]["tool_choice"] == "required"


def test_malformed_and_several_calls_are_judged_not_crashed(bench: Benchmark, tmp_path: Path) -> None:
    config = RunConfig("scripted", levels=(1,), limit=2, tasks=("api",), prompt_mode="chat", out=str(tmp_path / "m"))
    sample, *others = plan(bench, config)  # the first sample drawn gets its gold call twice, the others bad JSON
    assert others
    two = render_tool_call(sample.gold.call, "hermes") + "\n" + render_tool_call(sample.gold.call, "hermes")

    def answer(request: Request) -> str:
        return two if request.item.key == sample.key else '<tool_call>\n{"name": "GetUserToken", "arguments": {{"username": 1}}\n</tool_call>'

    run(config, backend=ScriptedBackend(answer), bench=bench, progress=False)
    score_run(tmp_path / "m", bench=bench)
    judged = {j.key: j for j in RunFolder(tmp_path / "m").read_judgments()}
    assert list(judged) == [x.key for x in (sample, *others)]
    first = judged.pop(sample.key)
    assert first.correct and first.n_calls == 2 and "2 calls in one answer" in first.notes[0]
    for second in judged.values():
        assert not second.correct and second.category == "False API Call Format"
        assert "invalid JSON" in (second.reason or "") and any(n.startswith("raw answer: <tool_call>") for n in second.notes)


def test_the_prompt_mode_is_part_of_the_identity(bench: Benchmark, tmp_path: Path) -> None:
    out = str(tmp_path / "same")
    run(RunConfig("scripted", levels=(1,), limit=1, prompt_mode="chat", out=out), backend=ScriptedBackend(_gold_as_hermes), bench=bench, progress=False)
    with pytest.raises(ConfigError, match="prompt_mode"):
        run(RunConfig("scripted", levels=(1,), limit=1, prompt_mode="paper", out=out), backend=ScriptedBackend(""), bench=bench, progress=False)
    with pytest.raises(ConfigError, match="tool_choice"):
        run(RunConfig("scripted", levels=(1,), limit=1, prompt_mode="chat", tool_choice="auto", out=out), backend=ScriptedBackend(""), bench=bench, progress=False)
    with pytest.raises(ConfigError, match="it reads completion"):
        run(RunConfig("scripted", levels=(1,), limit=1, prompt_mode="chat", out=str(tmp_path / "c")), backend=_CompletionOnly(), bench=bench, progress=False)


class _CompletionOnly(ScriptedBackend):
    supported_prompt_modes = ("completion",)


# --- the OpenAI-compatible backend in chat mode -------------------------------------------------------


class _Recorder(JsonHandler):
    """Answers with a structured tool call (or plain text), and keeps every request body."""

    bodies: list[dict[str, Any]] = []
    reply: dict[str, Any] = {}

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        type(self).bodies.append(body)
        self.send_json(self.reply if "tools" in body or not type(self).bare else type(self).bare)

    bare: dict[str, Any] = {}


@pytest.fixture
def recorder() -> Iterator[type[_Recorder]]:
    _Recorder.bodies = []
    _Recorder.bare = {}
    with serve(_Recorder) as base:
        _Recorder.base = base  # type: ignore[attr-defined]
        yield _Recorder


def test_chat_mode_sends_turns_tool_messages_and_requires_a_call(bench: Benchmark, recorder: type[_Recorder], tmp_path: Path) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "GetUserToken", "arguments": '{"username": "x", "password": 1}'}}
    recorder.reply = {"choices": [{"message": {"content": None, "tool_calls": [call]}}], "usage": {"prompt_tokens": 50, "completion_tokens": 5}}
    spec = f"openai:m@{recorder.base}"  # type: ignore[attr-defined]
    sample = next(s for s in bench.samples(1, "api") if any(t.role == "API" for t in s.history))
    run(RunConfig(spec, levels=(1,), limit=4, tasks=("api",), out=str(tmp_path / "o")), bench=bench, progress=False)
    bodies = [b for b in recorder.bodies if "tools" in b]
    assert all(b["tool_choice"] == "required" for b in bodies)
    with_history = [b for b in bodies if any(m["role"] == "tool" for m in b["messages"])]
    assert with_history, f"no sample with an earlier call among the first four ({sample.key})"
    assistant = next(m for m in with_history[0]["messages"] if m.get("tool_calls"))
    assert isinstance(assistant["tool_calls"][0]["function"]["arguments"], str)  # the wire format: a JSON string
    rec = next(iter(RunFolder(tmp_path / "o").read_predictions().records.values()))
    assert rec.raw_tool_calls == [{"name": "GetUserToken", "arguments": '{"username": "x", "password": 1}'}]
    j = RunFolder(tmp_path / "o")
    score_run(j.path, bench=bench)
    assert j.read_judgments()[0].call_format == "openai"


def test_a_server_that_ignores_tools_stops_the_run_and_is_remembered(bench: Benchmark, recorder: type[_Recorder], tmp_path: Path) -> None:
    # Text without a call, and the same prompt size with or without tools: the tools never reached the model.
    recorder.reply = {"choices": [{"message": {"content": "[GetToday()]"}}], "usage": {"prompt_tokens": 80, "completion_tokens": 5}}
    spec = f"openai:m@{recorder.base}"  # type: ignore[attr-defined]
    config = RunConfig(spec, levels=(1,), limit=10, tasks=("api",), out=str(tmp_path / "ign"))
    with pytest.warns(UserWarning, match="ignores the tools"), pytest.raises(RunStopped, match="ignores the tools"):
        run(config, bench=bench, progress=False)
    folder = RunFolder(tmp_path / "ign")
    assert folder.read_warnings()[0]["kind"] == "tools_ignored"
    asked = [r for r in folder.read_predictions().records.values() if not r.reused]  # duplicates ask nothing
    assert len(asked) == TOOLS_CHECK - 1  # the third answer proved it and was not kept
    with pytest.raises(ConfigError, match="--restart"):
        run(config, bench=bench, progress=False)
    # Fixed server: the tools change the prompt size. Starting over moves the old answers aside.
    recorder.bare = {"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": 20, "completion_tokens": 1}}
    result = run(RunConfig(spec, levels=(1,), limit=10, tasks=("api",), out=str(tmp_path / "ign"), restart=True), bench=bench, progress=False)
    assert result.answered == len(plan(bench, config)) >= 10 and result.skipped == 0  # whole dialogues: at least 10
    assert (tmp_path / "ign" / "discarded-1" / "predictions.jsonl").is_file() and not folder.read_warnings()


def test_regrading_with_each_retriever_reads_chat_answers_as_tool_calls(bench: Benchmark, tmp_path: Path) -> None:
    # Notebook 07 grades a run's level-2/3 answers again with every retriever; a chat run's answers are tool calls.
    from apibank_lib.report.retrieval import accuracy_by_retriever

    out = tmp_path / "chat23"
    config = RunConfig("scripted", levels=(2, 3), limit=8, tasks=("api",), prompt_mode="chat", out=str(out))
    run(config, backend=ScriptedBackend(_gold_as_hermes), bench=bench, progress=False)
    table = accuracy_by_retriever(bench, [out], ["enriched"], n_boot=50)
    assert list(table["accuracy"]) == [100.0, 100.0]  # the gold calls, graded with v2's own retriever
