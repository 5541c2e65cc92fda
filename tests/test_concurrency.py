"""Concurrency against a server: it adapts when the server is crowded (a stub on loopback that answers 429), and it
changes no judgment (llama.cpp's OpenAI-compatible server on loopback, with an embedded instruct model in chat
mode, as a stand-in for vLLM)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from apibank_lib.data.datasets import Benchmark
from apibank_lib.runs.config import RunConfig, plan
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.runner import Governor, run
from apibank_lib.runs.scoring import score_run
from tests.helpers import CHAT_REPLY, JsonHandler, serve


def test_the_governor_halves_on_throttling_and_raises_by_one_when_calm() -> None:
    count = [0]
    g = Governor(8, lambda: count[0])
    count[0] = 2  # two 429s before the first answer came back
    g.observe()
    assert g.limit == 4
    for _ in range(Governor.RAISE_AFTER * 4 - 1):
        g.observe()
    assert g.limit == 4
    g.observe()
    assert g.limit == 5
    count[0] = 3
    g.observe()
    assert g.limit == 2
    assert [(e["from"], e["to"]) for e in g.events] == [(8, 4), (4, 5), (5, 2)]
    assert g.record()["lowest"] == 2 and g.record()["throttled"] == 3
    one = Governor(1, lambda: count[0])
    count[0] = 9
    one.observe()
    assert one.limit == 1 and one.events == []  # nothing below one


class _Crowded(JsonHandler):
    """A server that takes two requests at a time and answers 429 to a third."""

    lock = threading.Lock()
    inflight = 0
    refused = 0

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        self.read_body()
        cls = type(self)
        with cls.lock:
            cls.inflight += 1
            over = cls.inflight > 2
            cls.refused += over
        try:
            if over:
                self.send_json({"error": "too many requests"}, 429)
                return
            time.sleep(0.02)
            self.send_json(CHAT_REPLY)
        finally:
            with cls.lock:
                cls.inflight -= 1


def test_concurrency_backs_off_on_429_and_the_run_records_it(bench: Benchmark, tmp_path: Path) -> None:
    _Crowded.inflight = _Crowded.refused = 0
    with serve(_Crowded) as base:
        config = RunConfig(
            f"openai:m@{base}", levels=(1,), limit=80, tasks=("api",), concurrency=8, prompt_mode="paper",
            out=str(tmp_path / "crowded"), backend_options={"backoff_s": 0.01, "max_retries": 10, "check_tools": False},
        )
        result = run(config, bench=bench, progress=False)
    assert result.failed == 0 and result.answered == len(plan(bench, config)) >= 80  # whole dialogues: at least 80
    record = json.loads((tmp_path / "crowded" / "summary.json").read_text())["this_invocation"]["concurrency"]
    assert _Crowded.refused > 0 and record["throttled"] == _Crowded.refused
    assert record["asked"] == 8 and (record["events"][0]["from"], record["events"][0]["to"]) == (8, 4)
    assert record["lowest"] <= 2 and record["changes"] == len(record["events"])
    assert any(e["to"] > e["from"] for e in record["events"])  # raised again while the server kept up


@pytest.mark.slow
def test_concurrency_4_against_a_real_server_judges_as_concurrency_1(bench: Benchmark, qwen_server: str, tmp_path: Path) -> None:
    folders = []
    for n in (1, 4):
        config = RunConfig(
            f"openai:qwen@{qwen_server}", levels=(1,), limit=6, draw="first", tasks=("api",), concurrency=n, out=str(tmp_path / f"c{n}"),
            backend_options={"timeout_s": 300, "check_tools": False},
        )
        result = run(config, bench=bench, progress=False)
        assert result.failed == 0
        score_run(result.path, bench=bench)
        folders.append(RunFolder(result.path))
    one, four = ([(j.key, j.correct, j.category, j.call) for j in f.read_judgments()] for f in folders)
    assert one == four and len(one) == 6
    assert json.loads(folders[1].summary_path.read_text())["this_invocation"]["concurrency"]["asked"] == 4
