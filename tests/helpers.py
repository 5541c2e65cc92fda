"""Small builders shared by the tests."""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from apibank_lib.env.protocols import get_protocol
from apibank_lib.env.sandbox import Sandbox
from apibank_lib.env.tools.account import CheckToken
from apibank_lib.env.tools.base import Tool
from apibank_lib.env.tools.toolset import ToolSet

TOOL_COUNTS = {"level-1-2": 53, "level-3": 22, "names": 71}
"""The one place the tests pin how many tools there are: tool classes per tool set, and distinct API names (four
names exist in both tool sets). Adding a tool changes these numbers and nothing else in the tests; the docs' "75 tool
classes" is checked against the registry (tests/test_docs.py)."""


def sandbox_for(*tools: type[Tool], dbs: dict[str, Any] | None = None, conversion: str = "v2", searcher: Any = None) -> Sandbox:
    """A sandbox over just ``tools`` (plus CheckToken, which token tools need).

    Args:
        conversion: the name of the protocol whose argument conversion to use (``v2`` or ``paper``).
    """
    listed = [CheckToken, *[t for t in tools if t is not CheckToken]]
    return Sandbox(ToolSet("test", listed), dbs or {}, conversion=get_protocol(conversion).conversion, searcher=searcher)


CHAT_REPLY = {"choices": [{"message": {"content": "[GetToday()]"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
"""What the loopback stubs answer to a chat completion."""


class JsonHandler(http.server.BaseHTTPRequestHandler):
    """Base of the loopback stubs of an OpenAI-compatible server: JSON replies, nothing logged."""

    def send_json(self, body: Any, status: int = 200) -> None:
        """Answer with ``body`` as JSON."""
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def read_body(self) -> None:
        """Consume the request body."""
        self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serve(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """Run a stub on a free loopback port; yields its base URL (``http://127.0.0.1:<port>/v1``)."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    finally:
        srv.shutdown()


@contextmanager
def llama_server(model: Path, *args: str, startup_s: float = 120) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server for ``model`` on a free loopback port; yields its base URL.

    Args:
        model: a GGUF file.
        args: more server flags (``--n_ctx``, ``--chat_format`` ...); two threads unless given.

    Raises:
        RuntimeError: the server did not answer ``/v1/models`` within ``startup_s`` (its log tail is in the message).
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    threads = () if "--n_threads" in args else ("--n_threads", "2")
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1", "--port", str(port), *threads, *args]
    log = tempfile.TemporaryFile()  # a file, not a pipe: nobody reads the log while it runs, and a full pipe blocks
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.time() + startup_s
        while True:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                log.seek(0)
                tail = log.read()[-2000:].decode(errors="replace")
                raise RuntimeError(f"llama.cpp server for {model.name} did not start: {tail}")
            try:
                if httpx.get(base + "/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
