"""Backends against real parts: the embedded Gemma model, and llama.cpp's OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.types import ApiCall, Context
from apibank_lib.data.datasets import Benchmark
from apibank_lib.env.tools.registry import toolset_for_level
from apibank_lib.models import BackendError, Request, load_backend
from apibank_lib.models.llamacpp import packaged_gemma_path
from apibank_lib.models.openai_compat import OpenAIBackend, tool_json_schema
from apibank_lib.prompting.chat import ChatPrompt
from apibank_lib.prompting.prompts import Prompt, build_prompt
from apibank_lib.runs.config import RunConfig
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.runner import run
from tests.helpers import CHAT_REPLY, JsonHandler, llama_server, serve

NO_CONTEXT = Context(1, "api", (), ())

pytestmark = pytest.mark.slow



@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server with the packaged Gemma model, on a loopback port."""
    with llama_server(packaged_gemma_path(), "--n_ctx", "2048", "--chat_format", "chatml-function-calling") as base:
        yield base


def test_prompt_mode_against_the_real_server(server: str, bench: Benchmark) -> None:
    sample = bench.samples(1, "api")[0]
    prompt = build_prompt(sample.context(), bench.toolset(1))
    backend = load_backend(f"openai:gemma@{server}", timeout_s=120)
    comp = backend.complete(Request(prompt, sample.context(), sample, max_tokens=16, stop=["\n"], prompt_mode="paper"))
    assert isinstance(comp.text, str)
    assert comp.prompt_tokens and comp.prompt_tokens > 100
    assert comp.completion_tokens is not None and comp.completion_tokens <= 16
    assert comp.latency_s > 0 and comp.attempts == 1


def test_completion_mode_against_the_real_server(server: str, bench: Benchmark) -> None:
    sample = bench.samples(1, "api")[0]
    prompt = build_prompt(sample.context(), bench.toolset(1))
    backend = OpenAIBackend("gemma", server, mode="completion", timeout_s=120)
    a = backend.complete(Request(prompt, sample.context(), sample, max_tokens=12, stop=["\n"]))
    b = backend.complete(Request(prompt, sample.context(), sample, max_tokens=12, stop=["\n"]))
    assert a.text == b.text  # greedy decoding is deterministic
    assert a.completion_tokens is not None and a.completion_tokens <= 12


def test_native_tool_calling_maps_tool_calls_back(server: str) -> None:
    schema = toolset_for_level(1).schema("GetToday")
    prompt = Prompt([{"role": "user", "content": "What is the date today?"}], "What is the date today?", [schema])
    chat = ChatPrompt([{"role": "user", "content": "What is the date today?"}], [tool_json_schema(schema)], "api", [schema])
    # llama.cpp constrains forced arguments with a grammar; a tool without arguments keeps the request short.
    backend = OpenAIBackend("gemma", server, mode="tools", tool_choice="GetToday", timeout_s=120, check_tools=False)
    comp = backend.complete(Request(prompt, NO_CONTEXT, max_tokens=16, prompt_mode="chat", chat=chat))
    assert comp.tool_calls == [ApiCall("GetToday", {})]
    assert comp.raw_tool_calls[0]["name"] == "GetToday" and json.loads(comp.raw_tool_calls[0]["arguments"]) == {}


def test_runner_against_the_real_server_with_concurrency(server: str, bench: Benchmark, tmp_path: Path) -> None:
    config = RunConfig(f"openai:gemma@{server}", levels=(1,), limit=4, draw="first", out=str(tmp_path / "srv"), concurrency=2, max_tokens=12, prompt_mode="paper", backend_options={"timeout_s": 120})
    result = run(config, bench=bench, progress=False)
    assert result.answered == 4 and result.failed == 0
    recs = RunFolder(tmp_path / "srv").read_predictions().records
    assert all(r.prompt_tokens for r in recs.values() if not r.reused)


def test_tool_schema_conversion() -> None:
    schema = tool_json_schema(toolset_for_level(1).schema("AddMeeting"))
    params = schema["function"]["parameters"]
    assert params["properties"]["attendees"] == {"type": "array", "description": params["properties"]["attendees"]["description"], "items": {"type": "string"}}
    assert "token" in params["required"] and schema["function"]["name"] == "AddMeeting"
    book = tool_json_schema(toolset_for_level(1).schema("BookHotel"))["function"]["parameters"]["properties"]
    assert book["room_count"]["type"] == "integer"


# --- retries, against a real HTTP stub on loopback -------------------------------------------------


class _Flaky(JsonHandler):
    plan: list[int] = []
    seen = 0

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        type(self).seen += 1
        self.read_body()
        status = self.plan.pop(0) if self.plan else 200
        if status == 0:
            time.sleep(1.5)  # longer than the client timeout
            status = 200
        self.send_json(CHAT_REPLY if status == 200 else {"error": "busy"}, status)


@pytest.fixture
def flaky() -> Iterator[str]:
    _Flaky.seen = 0
    with serve(_Flaky) as base:
        yield base


def _req() -> Request:
    return Request(Prompt([{"role": "user", "content": "hi"}], "hi"), NO_CONTEXT, max_tokens=4, prompt_mode="paper")


def test_retries_with_backoff_on_429_and_5xx(flaky: str) -> None:
    _Flaky.plan = [429, 503]
    comp = OpenAIBackend("m", flaky, backoff_s=0.01).complete(_req())
    assert comp.text == "[GetToday()]" and comp.attempts == 3 and _Flaky.seen == 3


def test_timeouts_are_retried_then_reported(flaky: str) -> None:
    _Flaky.plan = [0, 0, 0]
    with pytest.raises(BackendError, match="after 3 attempt"):
        OpenAIBackend("m", flaky, timeout_s=0.3, max_retries=2, backoff_s=0.01).complete(_req())


def test_client_errors_are_not_retried(flaky: str) -> None:
    _Flaky.plan = [400]
    with pytest.raises(BackendError, match="HTTP 400"):
        OpenAIBackend("m", flaky, backoff_s=0.01).complete(_req())
    assert _Flaky.seen == 1


def test_backend_names_are_checked() -> None:
    with pytest.raises(ConfigError, match="Did you mean 'oracle'"):
        load_backend("oracel")
    with pytest.raises(ConfigError, match="openai:<model>@<base_url>"):
        load_backend("openai:gpt-x")


# --- the embedded model ---------------------------------------------------------------------------


def test_embedded_gemma_is_greedy_and_deterministic(bench: Benchmark) -> None:
    backend = load_backend("llamacpp:gemma-3-270m", threads=2)
    sample = bench.samples(1, "api")[1]
    prompt = build_prompt(sample.context(), bench.toolset(1))
    first = backend.complete(Request(prompt, sample.context(), sample, max_tokens=24, stop=["\n"]))
    second = backend.complete(Request(prompt, sample.context(), sample, max_tokens=24, stop=["\n"]))
    assert first.text == second.text and first.completion_tokens and first.completion_tokens <= 24
    info = backend.info()
    assert info["decoding"] == "greedy"
    # What of the build can change an answer is recorded with every run.
    assert info["llama_cpp_python"][0].isdigit() and ("AVX" in info["llama_cpp_system"] or "NEON" in info["llama_cpp_system"])


def test_sigkill_mid_run_then_rerun_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "apibank_lib", "run", "--model", "llamacpp:gemma-3-270m", "--level", "1", "--first", "8", "--out", str(out), "--json"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    pred = out / "predictions.jsonl"
    deadline = time.time() + 240
    while time.time() < deadline and (not pred.is_file() or pred.read_text().count("\n") < 3):
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = len(RunFolder(out).read_predictions().records)
    assert 3 <= done_before < 8
    finished = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert finished.returncode == 0, finished.stderr[-2000:]
    report = json.loads(finished.stdout)
    assert report["skipped"] == done_before and report["answered"] == 8 - done_before
    lines = pred.read_text().splitlines()
    keys = [json.loads(line)["key"] for line in lines]
    assert len(keys) == len(set(keys)) == 8
    assert report["metrics"]["levels"]["1"]["api_samples"] + report["metrics"]["levels"]["1"]["response_samples"] == 8


@pytest.fixture(scope="module")
def hf_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for the transformers tests: the GGUF is converted once (about 40 s)."""
    return tmp_path_factory.mktemp("hf-cache")


def test_transformers_backend_loads_the_gguf_and_caches_the_conversion(hf_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_path = hf_cache
    monkeypatch.setenv("APIBANK_CACHE", str(tmp_path))
    from apibank_lib.models.transformers_backend import TransformersBackend

    first = TransformersBackend("gemma-3-270m", threads=2)
    prompt = Prompt([], "The capital of France is", [])
    a = first.complete(Request(prompt, NO_CONTEXT, max_tokens=6))
    assert list((tmp_path / "hf-from-gguf").glob("*/config.json"))  # converted once, saved
    again = TransformersBackend("gemma-3-270m", threads=2)
    assert again.load_s < first.load_s
    assert again.complete(Request(prompt, NO_CONTEXT, max_tokens=6)).text == a.text
    assert a.completion_tokens is not None and a.completion_tokens <= 6


def test_transformers_backend_applies_a_lora_adapter(hf_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APIBANK_CACHE", str(hf_cache))
    from peft import LoraConfig, get_peft_model

    from apibank_lib.models.transformers_backend import TransformersBackend, load_causal_lm

    lm, _, _ = load_causal_lm("gemma-3-270m")
    # A freshly initialised LoRA adapter (B = 0) leaves the model's function unchanged.
    peft_model = get_peft_model(lm, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    peft_model.save_pretrained(tmp_path / "adapter")
    prompt = Prompt([], "Two plus two is", [])
    plain = TransformersBackend("gemma-3-270m", threads=2).complete(Request(prompt, NO_CONTEXT, max_tokens=5)).text
    adapted = TransformersBackend("gemma-3-270m", adapter=str(tmp_path / "adapter"), threads=2)
    assert adapted.info()["adapter"] == str(tmp_path / "adapter")
    assert adapted.name.endswith("+" + str(tmp_path / "adapter"))
    assert adapted.complete(Request(prompt, NO_CONTEXT, max_tokens=5)).text == plain
