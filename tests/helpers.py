"""Small builders shared by the tests."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from apibank_lib.protocols import get_protocol
from apibank_lib.sandbox import Sandbox
from apibank_lib.tools.account import CheckToken
from apibank_lib.tools.base import Tool
from apibank_lib.tools.toolset import ToolSet


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
