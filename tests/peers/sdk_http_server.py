"""The official SDK's low-level ``Server`` (mcp 2.3.0) over Streamable HTTP.

The peer that ``tests/test_interop_http.py`` drives with our generated client: the same tools,
resources, prompts and completions as ``sdk_server.py`` (imported from beside this file), served
by the SDK's own Starlette app (``Server.streamable_http_app``: its session manager, DNS-rebinding
protection for 127.0.0.1, JSON-or-SSE replies) under uvicorn on 127.0.0.1. It binds a free port
and prints ``PORT <n>`` on stdout once it is listening; the endpoint is
``http://127.0.0.1:<n>/mcp``.

``PEER_PROTOCOL_VERSION=2025-06-18`` makes it answer ``initialize`` with that revision (as
``sdk_server.py`` does); ``PEER_JSON_RESPONSE=1`` makes it answer every request with plain JSON
instead of an SSE stream.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.shared.exceptions import MCPDeprecationWarning
from _serve import serve_on_free_port
from sdk_server import build, force_protocol_version

warnings.simplefilter("ignore", MCPDeprecationWarning)


def announce_tool_list_changes(server: Server[Any]) -> None:
    """Declare ``tools.listChanged``: the HTTP session manager builds each session's
    initialize result from ``create_initialization_options()`` with no arguments."""
    create = server.create_initialization_options

    def with_tools_changed(*args: Any, **kwargs: Any) -> Any:
        if not args and "notification_options" not in kwargs:
            kwargs["notification_options"] = NotificationOptions(tools_changed=True)
        return create(*args, **kwargs)

    server.create_initialization_options = with_tools_changed  # type: ignore[method-assign]


def main() -> None:
    if forced := os.environ.get("PEER_PROTOCOL_VERSION"):
        force_protocol_version(forced)
    server = build()
    announce_tool_list_changes(server)
    app = server.streamable_http_app(json_response=os.environ.get("PEER_JSON_RESPONSE") == "1")
    serve_on_free_port(app)
    sys.exit(0)


if __name__ == "__main__":
    main()
