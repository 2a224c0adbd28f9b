"""A 2026-07-28 stdio server written by hand, line by line (no runtime): it sends what a
typedmcp server never would, for ``tests/test_gateway_passthrough.py``: a retired error
code, structured output that breaks the tool's outputSchema, progress that goes back,
a result without ``resultType`` and one with a ``resultType`` no revision has.

    python tests/servers/raw_line_server.py
"""

from __future__ import annotations

import json
import sys
from typing import Any

SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "raw-line-fixture", "version": "0.0.1"}}
OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
TOOLS = [
    {"name": "retired", "inputSchema": OBJECT},
    {"name": "broken", "inputSchema": OBJECT,
     "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
    {"name": "wobbly", "inputSchema": OBJECT},
    {"name": "bare", "inputSchema": OBJECT},
    {"name": "weird", "inputSchema": OBJECT},
]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(request_id: Any, body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": body})


def call(request_id: Any, params: dict[str, Any]) -> None:
    name = params.get("name")
    token = (params.get("_meta") or {}).get("progressToken")
    if name == "retired":  # resource-not-found's old code: -32602 since SEP-2164
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32002, "message": "gone", "data": {"uri": "x"}}})
    elif name == "broken":
        result(request_id, {"content": [], "structuredContent": {"n": "one"}, "resultType": "complete"})
    elif name == "wobbly":
        for progress, message in ((1, "one"), (1, "one again"), (0.5, "back"), (2, None)):
            note: dict[str, Any] = {"progressToken": token, "progress": progress, "total": 2}
            if message is not None:
                note["message"] = message
            if token is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress", "params": note})
        result(request_id, {"content": [{"text": "wobbled", "type": "text"}], "resultType": "complete"})
    elif name == "bare":  # no resultType, members in an unusual order
        result(request_id, {"isError": False, "content": [{"text": "bare", "type": "text"}], "_meta": {"k": 1}})
    elif name == "weird":
        result(request_id, {"content": [], "resultType": "eventually"})
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"Unknown tool: {name}"}})


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # notifications
        params = message.get("params") or {}
        if method == "server/discover":
            result(request_id, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                                "resultType": "complete", "ttlMs": 0, "cacheScope": "private", "_meta": SERVER_INFO})
        elif method == "tools/list":
            result(request_id, {"tools": TOOLS, "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        elif method == "tools/call":
            call(request_id, params)
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    main()
