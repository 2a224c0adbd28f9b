"""The floor of ``bench_app_peers.py``: a server with no MCP in it. It parses each request's
JSON and writes a canned answer around the echoed text (no validation, no schema, no
session state, no protocol checks), so its rate is the most any server could reach with the
benchmark's client on the same transport, and its CPU per call is what the transport alone
costs (for HTTP: uvicorn under the same settings as the real servers, ``peers/_uvicorn.py``).

``python floor_echo.py`` serves stdio (a blocking read of a line, a write of one); ``... http``
serves an ASGI app under uvicorn, printing ``PORT <n>``: ``initialize`` gets a fixed session
id, a notification a 202, a ``tools/call`` its text back (with ``resultType: "complete"`` when
its ``_meta`` names 2026-07-28). Not a server to use: it answers anything."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
INITIALIZE_RESULT = {
    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "floor", "version": "1"},
}
STATELESS_KEY = "io.modelcontextprotocol/protocolVersion"


def answer(request: dict[str, Any]) -> bytes | None:
    """The encoded answer to one request (None for a notification)."""
    if "id" not in request:
        return None
    params = request.get("params") or {}
    if request.get("method") == "initialize":
        result: dict[str, Any] = INITIALIZE_RESULT
    else:
        result = {"content": [{"type": "text", "text": params["arguments"]["text"]}], "isError": False}
        if STATELESS_KEY in (params.get("_meta") or {}):
            result["resultType"] = "complete"
    return json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()


def serve_stdio() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    for raw in stdin:
        reply = answer(json.loads(raw))
        if reply is not None:
            stdout.write(reply + b"\n")
            stdout.flush()


async def app(
    scope: Scope, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Awaitable[None]]
) -> None:
    """The HTTP floor, as an ASGI app (lifespan accepted, every path answered alike)."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    request = json.loads(body)
    reply = answer(request)
    headers = [(b"content-type", b"application/json")]
    if request.get("method") == "initialize":
        headers.append((b"mcp-session-id", b"floor"))
    if reply is None:
        await send({"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
        return
    headers.append((b"content-length", str(len(reply)).encode()))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": reply})


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        from _uvicorn import serve_on_free_port

        serve_on_free_port(app)
    else:
        serve_stdio()
