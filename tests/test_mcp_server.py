"""The sandbox as an MCP server, driven by the SDK's own client: the oracle's calls solve an item and its episode
scores 100%, a wrong call scores as our grader says, bad input gets the tool's own error text, and two sessions
side by side never see each other's state."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from apibank_lib.core.errors import ConfigError
from apibank_lib.data.datasets import Benchmark
from apibank_lib.grading.grader import Grader
from apibank_lib.integrations.mcp_server import LOCAL, SandboxServer, build_server
from apibank_lib.runs.scoring import scored

mcp = pytest.importorskip("mcp")
ROOT = Path(__file__).resolve().parent.parent


def _stdio(out: Path, item: int) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable, args=["-m", "apibank_lib", "mcp", "--level", "3", "--item", str(item), "--out", str(out)],
        cwd=str(ROOT),
    )


async def _oracle_session(server: Any, bench: Benchmark, item: int, *, wrong: bool = False) -> dict[str, Any]:
    """Play the gold steps of an item as an agent would (each API only after a search found it)."""
    from mcp import Client

    episode = next(e for e in bench.episodes() if e.item.id == item)
    seen: dict[str, Any] = {}
    async with Client(server) as client:
        seen["tools_before"] = [t.name for t in (await client.list_tools()).tools]
        seen["prompt"] = (await client.get_prompt("task")).messages[0].content.text
        for n, step in enumerate(episode.item.steps):
            args = dict(step.args)
            if wrong and n == len(episode.item.steps) - 1:
                args = {k: "not what was asked" for k in args}
            result = await client.call_tool(step.api_name, args)
            seen.setdefault("errors", []).append(result.is_error)
        seen["tools_after"] = [t.name for t in (await client.list_tools()).tools]
        bad = await client.call_tool("NoSuchTool", {"x": 1})
        seen["unknown"] = (bad.is_error, bad.content[0].text)
    return seen


def test_two_stdio_sessions_solve_an_item_apart_and_their_episodes_score(bench: Benchmark, tmp_path: Path) -> None:
    item = bench.episodes()[0].item.id

    async def both() -> list[dict[str, Any]]:
        return list(await asyncio.gather(
            _oracle_session(_stdio(tmp_path, item), bench, item),
            _oracle_session(_stdio(tmp_path, item), bench, item, wrong=True),
        ))

    right, wrong = asyncio.run(both())
    episode = next(e for e in bench.episodes() if e.item.id == item)
    assert right["tools_before"] == ["ToolSearcher"] and right["prompt"] == episode.item.requirement.strip()
    needed = [s.api_name for s in episode.item.steps if s.api_name != "ToolSearcher"]
    assert set(needed) <= set(right["tools_after"])  # what a search found became callable
    assert not any(right["errors"]) and right["unknown"][0] and "NoSuchTool" in right["unknown"][1]
    assert wrong["tools_before"] == ["ToolSearcher"]  # the other session started from a fresh sandbox too
    # Each session's log, answers and scored run folder; the two never saw each other's calls.
    logs = sorted(tmp_path.glob("calls-*.jsonl"))
    assert [p.name for p in logs] == ["calls-1.jsonl", "calls-2.jsonl"]
    calls = [[json.loads(line) for line in p.read_text().splitlines()] for p in logs]
    assert all(len(c) == len(episode.item.steps) + 1 for c in calls)
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2
    outcomes = sorted(scored(r, bench).metrics.levels["3"].episodes_succeeded for r in runs)
    assert outcomes == [0, 1]  # the oracle's session succeeds, the one with a wrong last call does not
    # The grader's own verdict on the wrong session's calls, judged directly, agrees with its run folder.
    wrong_log = next(c for c in calls if any(x["arguments"] and "not what was asked" in json.dumps(x["arguments"]) for x in c))
    from apibank_lib.core.calls import format_call
    from apibank_lib.core.types import ApiCall

    texts = [format_call(ApiCall(x["name"], x["arguments"])) for x in wrong_log]
    assert not Grader(bench).judge_episode(episode, texts).success


def test_bad_input_is_answered_and_recorded(bench: Benchmark, tmp_path: Path) -> None:
    item = bench.episodes()[0].item.id
    served = SandboxServer(bench, 3, item=item, out=tmp_path)
    session = served.session(LOCAL)
    result, is_error = served.call(session, "ToolSearcher", ["not", "an", "object"])
    assert is_error and "object" in result["exception"]
    result, is_error = served.call(session, "ToolSearcher", {"no_such_parameter": "x"})
    assert is_error and result["exception"]
    assert len(session.log.read_text().splitlines()) == 2  # logged as they came
    done = served.end(LOCAL)
    assert done is not None and done["calls"] == 2 and done["success"] is False
    with pytest.raises(ConfigError, match="has ended"):
        served.call(session, "ToolSearcher", {"keywords": "x"})
    assert served.end(LOCAL) is None  # ended once
    with pytest.raises(ConfigError, match="--item"):
        SandboxServer(bench, 3, item=10**6, out=tmp_path)
    with pytest.raises(ConfigError, match="--dialogue"):
        SandboxServer(bench, 1, dialogue="NoSuchDialogue", out=tmp_path)


def test_a_level_1_dialogue_serves_its_apis(bench: Benchmark, tmp_path: Path) -> None:
    from mcp import Client

    dialogue = bench.dialogues(1)[0]
    served = SandboxServer(bench, 1, dialogue=dialogue.id, out=tmp_path)

    async def go() -> list[str]:
        async with Client(build_server(served)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            gold = dialogue.api_turns[0]
            result = await client.call_tool(gold.api_name, dict(gold.args))
            assert not result.is_error
            return names

    assert asyncio.run(go()) == [n for n in dialogue.api_names]
    done = served.end_all()
    assert done[0]["calls"] == 1 and "run" not in done[0]  # levels 1-2: the session's log, no episode


def test_http_sessions_each_get_a_sandbox_and_are_written_when_the_server_stops(bench: Benchmark, tmp_path: Path) -> None:
    """Streamable HTTP on loopback: two MCP sessions (the handshake revisions, which have session ids) in one
    server process, each with its own sandbox; a client on the stateless revision is refused with a clear error."""
    import signal
    import socket
    import subprocess
    import time

    import httpx
    from mcp import Client

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    item = bench.episodes()[0].item.id
    cmd = [sys.executable, "-m", "apibank_lib", "mcp", "--item", str(item), "--transport", "http", "--port", str(port), "--out", str(tmp_path)]
    err = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=err)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(120):
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.25)

        async def two() -> list[list[str]]:
            async with Client(url, mode="legacy") as a, Client(url, mode="legacy") as b:
                await a.call_tool("ToolSearcher", {"keywords": "account information of a user"})
                return [[t.name for t in (await c.list_tools()).tools] for c in (a, b)]

        seen_a, seen_b = asyncio.run(two())
        assert len(seen_a) == 2 and seen_b == ["ToolSearcher"]  # b never saw a's search

        async def stateless() -> None:
            async with Client(url) as c:
                await c.list_tools()

        def messages(exc: BaseException) -> str:
            inner = getattr(exc, "exceptions", ())
            return str(exc) + " ".join(messages(e) for e in inner)

        with pytest.raises(BaseException) as refused:  # noqa: B017 - the SDK wraps the refusal in an exception group
            asyncio.run(stateless())
        assert "sandbox per MCP session" in messages(refused.value)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        err.close()
    report = (tmp_path / "server.log").read_text()
    written = json.loads(report[report.index("{\n"):])
    assert sorted(s["calls"] for s in written["sessions"]) == [0, 1] and all("run" in s for s in written["sessions"])
