"""The sandbox as a Model Context Protocol server: any MCP-capable agent evaluated on API-Bank's tools.

``apibank mcp --level 3 --item N`` serves one level-3 item: its requirement as a prompt (``task``) and a resource
(``apibank://requirement``), and the tools an agent of our own loop sees (:func:`~apibank_lib.prompting.chat.build_chat`'s
rule): ToolSearcher first, then every API a search has returned (the server says the tool list changed). Each
call runs as the agent loop runs it (the protocol's conversion, then the session's sandbox) and answers with the
API's result as JSON, or with the API's own error text as a tool error. Levels 1 and 2 serve a dialogue's tools
(``--dialogue NAME``): its APIs at level 1, ToolSearcher and what it found at level 2.

Every MCP session gets a sandbox of its own, and each call is appended to the session's log (``calls-<n>.jsonl``
under the output folder) as it comes, so that nothing is lost if the agent or the server dies. When a level-3
session ends, its calls become an episode: an answers file (:mod:`apibank_lib.models.recorded`) that the runner
plays back into a run folder, scored by our grader like any episode (``apibank score`` reads it again).
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.types import ApiCall, ApiRecord, Dialogue, Episode
from apibank_lib.data.datasets import Benchmark
from apibank_lib.env.protocols import V2, GradingProtocol, get_protocol
from apibank_lib.env.sandbox import Sandbox
from apibank_lib.models.recorded import write_answers
from apibank_lib.prompting.chat import (
    CHAT_SYSTEM,
    LEVEL3_SYSTEM_EXTRA,
    searched_apis,
    tool_json_schema,
    tool_result_content,
)

__all__ = ["McpSession", "SandboxServer", "build_server", "serve_http", "serve_stdio"]

REQUIREMENT_URI = "apibank://requirement"
"""The resource that holds a level-3 item's requirement."""

LOCAL = "local"
"""The session of a server whose transport has one client and no session ids (stdio, or in process)."""


@dataclass
class McpSession:
    """One agent's session: its sandbox, its calls so far, and where they are logged.

    Attributes:
        number: the session's number on this server (from 1), naming its files.
        sandbox: the session's own sandbox.
        calls: the calls made, in order: ``{"name", "arguments", "result"}`` (the result's envelope).
        log: the session's call log (JSON lines, appended as calls come).
        ended: whether the session has been closed and written.
        client: the client's name, as its initialisation gave it.
    """

    number: int
    sandbox: Sandbox
    log: Path
    calls: list[dict[str, Any]] = field(default_factory=list)
    ended: bool = False
    client: str = "mcp-client"

    def history(self) -> tuple[ApiRecord, ...]:
        """The calls as the records a prompt shows (what searches found comes from them)."""
        return tuple(ApiRecord(c["name"], dict(c["arguments"]), c["result"]) for c in self.calls)


class SandboxServer:
    """What a server serves (one level-3 item or one dialogue's tools) and its sessions.

    Args:
        bench: the benchmark.
        level: 1, 2 or 3.
        item: the level-3 item's id (level 3).
        dialogue: the dialogue's name (levels 1 and 2).
        protocol: the grading protocol (how calls are converted before they run, and how episodes are judged).
        out: where session logs, answers files and run folders go.
        retriever: what ToolSearcher searches with (the protocol's by default).
    """

    def __init__(
        self,
        bench: Benchmark,
        level: int,
        *,
        item: int | None = None,
        dialogue: str | None = None,
        protocol: str | GradingProtocol = V2,
        out: str | Path,
        retriever: str | None = None,
    ) -> None:
        self.bench = bench
        self.level = level
        self.protocol = get_protocol(protocol) if isinstance(protocol, str) else protocol
        self.retriever = retriever
        self.out = Path(out)
        self.toolset = bench.toolset(level)
        self.episode: Episode | None = None
        self.dialogue: Dialogue | None = None
        if level == 3:
            found = [e for e in bench.episodes() if e.item.id == item]
            if item is None or not found:
                ids = [e.item.id for e in bench.episodes()]
                raise ConfigError(f"level 3 needs --item, one of {ids[0]}..{ids[-1]} in the {bench.name} data (got {item})")
            self.episode = found[0]
        elif level in (1, 2):
            match = [d for d in bench.dialogues(level) if d.id == dialogue]
            if not match:
                raise ConfigError(f"level {level} needs --dialogue, a dialogue of the {bench.name} data (got {dialogue!r})")
            self.dialogue = match[0]
        else:
            raise ConfigError(f"level {level}: choose 1, 2 or 3")
        self._sessions: dict[str, McpSession] = {}
        self._lock = threading.Lock()
        self.finished: list[dict[str, Any]] = []

    # --- what is served -----------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The server's name: what it serves."""
        what = f"item {self.episode.item.id}" if self.episode else f"dialogue {self.dialogue.id}"  # type: ignore[union-attr]
        return f"apibank level {self.level} {what} ({self.bench.name})"

    def requirement(self) -> str:
        """The task as the agent is given it: a level-3 requirement, or the dialogue's first user turn."""
        if self.episode is not None:
            return self.episode.item.requirement.strip()
        turns = [t for t in self.dialogue.turns if getattr(t, "role", "") == "User"]  # type: ignore[union-attr]
        return turns[0].text if turns else ""

    def instructions(self) -> str:
        """The system text our chat prompts open with, for the agent's own prompt."""
        return CHAT_SYSTEM + (LEVEL3_SYSTEM_EXTRA if self.level == 3 else "")

    def tools(self, session: McpSession) -> list[dict[str, Any]]:
        """The tools the session may see now, as MCP tool entries (name, description, JSON Schema input)."""
        if self.level == 1:
            names = [n for n in self.dialogue.api_names if n in self.toolset]  # type: ignore[union-attr]
        else:
            names = ["ToolSearcher"] + [d["name"] for d in searched_apis(session.history()) if d["name"] in self.toolset]
        seen: list[str] = []
        for n in names:
            if n not in seen:
                seen.append(n)
        return [tool_json_schema(self.toolset.schema(n))["function"] for n in seen]

    # --- sessions -----------------------------------------------------------------------------------------

    def session(self, key: str, client: str | None = None) -> McpSession:
        """The session ``key`` (an MCP session id, or :data:`LOCAL` for a stdio server's one client), opened with a
        fresh sandbox on first use."""
        with self._lock:
            if key not in self._sessions:
                self.out.mkdir(parents=True, exist_ok=True)
                # Numbered by the first free log name, created exclusively: servers started side by side on one
                # output folder (one per stdio client) never share a file.
                for number in itertools.count(1):
                    log = self.out / f"calls-{number}.jsonl"
                    try:
                        log.open("x", encoding="utf-8").close()
                        break
                    except FileExistsError:
                        continue
                box = self.bench.sandbox(self.level, self.protocol, searcher=self.retriever)
                self._sessions[key] = McpSession(number, box, log, client=client or "mcp-client")
            return self._sessions[key]

    def call(self, session: McpSession, name: str, arguments: Any) -> tuple[dict[str, Any], bool]:
        """Run one call in the session's sandbox, as the agent loop runs it; log it at once.

        Returns:
            The result's envelope, and whether it is an error (an exception of the API, an unknown API or
            arguments that are not an object: the API's or the sandbox's own text, never a crash).
        """
        if session.ended:
            raise ConfigError(f"session {session.number} has ended; its episode is written")
        if not isinstance(arguments, dict):
            result = {"api_name": name, "input": arguments, "output": None, "exception": "the arguments must be an object"}
        else:
            call = self.protocol.prepare_call(ApiCall(name, dict(arguments)), self.level)
            result = session.sandbox.execute_safely(call).to_dict()
            arguments = dict(call.args)
        entry = {"name": name, "arguments": arguments, "result": result}
        with self._lock:
            session.calls.append(entry)
            with session.log.open("a", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=False, sort_keys=True, default=str) + "\n")
        return result, result.get("exception") is not None

    def end(self, key: str) -> dict[str, Any] | None:
        """Close a session: a level-3 session's calls become an episode in a scored run folder.

        Returns:
            What was written (``answers``, ``run``, ``success``...), or None for an unknown or ended session.
        """
        with self._lock:
            session = self._sessions.get(key)
            if session is None or session.ended:
                return None
            session.ended = True
        done: dict[str, Any] = {"session": session.number, "calls": len(session.calls), "log": str(session.log)}
        if self.episode is not None:
            from apibank_lib.runs.recorded import run_recorded

            steps = [{"output": "", "tool_calls": [{"name": c["name"], "arguments": c["arguments"]}]} for c in session.calls]
            answers = write_answers(
                self.out / f"answers-{session.number}.json", session.client, f"apibank mcp session {session.number}",
                {self.episode.key: {"steps": [*steps, {"output": "", "tool_calls": []}]}},
            )
            result, metrics = run_recorded(
                answers, bench=self.bench, data=str(self.bench.root), protocol=self.protocol.name,
                runs_dir=str(self.out / "runs"), retriever=self.retriever,
            )
            level = metrics.levels["3"]
            done.update(answers=str(answers), run=str(result.path), success=bool(level.episodes_succeeded))
        self.finished.append(done)
        return done

    def end_all(self) -> list[dict[str, Any]]:
        """Close every open session (the server is stopping)."""
        return [d for key in list(self._sessions) if (d := self.end(key)) is not None]


def build_server(served: SandboxServer, *, require_session_ids: bool = False) -> Any:
    """The MCP server (the SDK's low-level ``Server``) over ``served``: tools, the task prompt, the requirement.

    Args:
        require_session_ids: refuse requests that carry no MCP session id (HTTP, where many clients share the
            process) instead of giving them the process's one session.
    """
    import mcp_types as types
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError

    def session_of(ctx: Any) -> McpSession:
        # The SDK builds a context per request; the connection's session id (handshake-era HTTP) names the
        # session. Without one (stdio, in process) the server has one client: the process is the session.
        connection = getattr(ctx.session, "_connection", None)
        key = getattr(connection, "session_id", None)
        if key is None and require_session_ids:
            raise MCPError(
                types.INVALID_REQUEST,
                "this server keeps a sandbox per MCP session: connect with a protocol revision that has sessions "
                "over HTTP (2025-11-25 or earlier), or over stdio"
            )
        params = getattr(ctx.session, "client_params", None)
        client = params.client_info.name if params is not None and getattr(params, "client_info", None) else None
        return served.session(key or LOCAL, client)

    async def list_tools(ctx: Any, params: Any) -> Any:
        tools = served.tools(session_of(ctx))
        return types.ListToolsResult(
            tools=[types.Tool(name=t["name"], description=t["description"], input_schema=t["parameters"]) for t in tools]
        )

    async def call_tool(ctx: Any, params: Any) -> Any:
        session = session_of(ctx)
        before = {t["name"] for t in served.tools(session)}
        try:
            result, is_error = served.call(session, params.name, params.arguments if params.arguments is not None else {})
        except ConfigError as exc:
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(exc))], is_error=True)
        if {t["name"] for t in served.tools(session)} != before:
            await ctx.session.send_tool_list_changed()  # a search found an API: it is callable now
        text = result["exception"] if is_error else tool_result_content(result)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=str(text))], structured_content={"result": result}, is_error=is_error
        )

    async def list_prompts(ctx: Any, params: Any) -> Any:
        return types.ListPromptsResult(prompts=[types.Prompt(name="task", description="the task to do with these tools")])

    async def get_prompt(ctx: Any, params: Any) -> Any:
        if params.name != "task":
            raise MCPError(types.INVALID_PARAMS, f"unknown prompt {params.name!r}; this server has 'task'")
        message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=served.requirement()))
        return types.GetPromptResult(description=served.instructions(), messages=[message])

    async def list_resources(ctx: Any, params: Any) -> Any:
        resource = types.Resource(name="requirement", uri=REQUIREMENT_URI, mime_type="text/plain")
        return types.ListResourcesResult(resources=[resource])

    async def read_resource(ctx: Any, params: Any) -> Any:
        if str(params.uri) != REQUIREMENT_URI:
            raise MCPError(types.INVALID_PARAMS, f"unknown resource {params.uri}; this server has {REQUIREMENT_URI}")
        contents = types.TextResourceContents(uri=REQUIREMENT_URI, mime_type="text/plain", text=served.requirement())
        return types.ReadResourceResult(contents=[contents])

    return Server(
        served.name,
        instructions=served.instructions(),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


async def serve_stdio(served: SandboxServer) -> list[dict[str, Any]]:
    """Serve one session over standard input and output; when the client hangs up, write its episode."""
    from mcp.server import NotificationOptions
    from mcp.server.stdio import stdio_server

    server = build_server(served)
    options = server.create_initialization_options(notification_options=NotificationOptions(tools_changed=True))
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, options)
    finally:
        done = served.end_all()
    return done


def serve_http(served: SandboxServer, host: str = "127.0.0.1", port: int = 8765) -> list[dict[str, Any]]:
    """Serve streamable HTTP on ``host:port`` (``/mcp``), a sandbox per session, until interrupted; then write every
    session's episode."""
    import uvicorn

    app = build_server(served, require_session_ids=True).streamable_http_app(host=host)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        done = served.end_all()
    return done
