"""Mistakes a user makes when connecting get one clear error that says what is wrong and
what to check, promptly, never a traceback from deep inside (or a loop)."""

from __future__ import annotations

import asyncio
import http.server
import logging
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from typedmcp.connecting import connect_http, connect_stdio
from typedmcp.engine.jsonrpc import ConnectionClosed
from typedmcp.transports.http_client import NotAnMcpReply
from typedmcp.transports.http_wire import ServerUnreachable


@pytest.fixture
def web_page() -> Iterator[dict[str, Any]]:
    """A plain web server: every request gets 200 with the body and type in ``reply``."""
    reply: dict[str, Any] = {"type": "text/html", "body": b"<html>hello</html>", "posts": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            reply["posts"] += 1
            self.send_response(200)
            self.send_header("Content-Type", reply["type"])
            self.send_header("Content-Length", str(len(reply["body"])))
            self.end_headers()
            self.wfile.write(reply["body"])

        do_GET = do_POST

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    reply["url"] = f"http://127.0.0.1:{server.server_port}/mcp"
    try:
        yield reply
    finally:
        server.shutdown()
        server.server_close()


async def connect_once(connection: Any) -> None:
    async with connection:
        pass


def test_a_closed_port_says_the_server_is_unreachable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there once the socket closes
    url = f"http://127.0.0.1:{port}/mcp"
    with pytest.raises(ServerUnreachable, match="connection refused") as failed:
        asyncio.run(connect_once(connect_http(url)))
    assert url in str(failed.value) and "is the server running" in str(failed.value)


@pytest.mark.parametrize(
    ("content_type", "body", "words"),
    [
        ("text/html", b"<html>hello</html>", "no JSON-RPC"),
        ("application/json", b"{not json", "a body that is not JSON"),
    ],
)
def test_a_web_page_is_not_taken_for_an_mcp_server(
    web_page: dict[str, Any], content_type: str, body: bytes, words: str
) -> None:
    web_page.update(type=content_type, body=body)
    with pytest.raises(NotAnMcpReply, match=words) as failed:
        asyncio.run(asyncio.wait_for(connect_once(connect_http(web_page["url"])), 10))
    assert web_page["url"] in str(failed.value) and "MCP endpoint" in str(failed.value)
    assert web_page["posts"] <= 2  # the probe and initialize: no error answered back in a loop


def test_a_missing_server_program_is_named() -> None:
    with pytest.raises(FileNotFoundError, match="cannot start the server 'no-such-program-xyz --flag'"):
        asyncio.run(connect_once(connect_stdio(["no-such-program-xyz", "--flag"])))


def test_a_server_that_exits_at_once_reports_its_exit_code() -> None:
    command = [sys.executable, "-c", "import sys; sys.exit(3)"]
    with pytest.raises(ConnectionClosed, match="exited with code 3 before the connection was set up"):
        asyncio.run(asyncio.wait_for(connect_once(connect_stdio(command)), 20))


def test_a_server_that_prints_to_stdout_still_works_and_is_named_in_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    command = [sys.executable, str(Path(__file__).parent / "servers" / "noisy_server.py")]

    async def body() -> list[str]:
        async with connect_stdio(command) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    with caplog.at_level(logging.WARNING, logger="typedmcp"):
        assert asyncio.run(asyncio.wait_for(body(), 20)) == ["echo"]
    assert any(
        "not JSON" in record.message and "Starting my server" in record.message
        for record in caplog.records
    )
