"""A URL with the wrong path gets an error that says which path an MCP server expects.

Before, ``connect_http("http://host:port/")`` against a server on ``/mcp`` ended in a bare
``HttpError: HTTP 404: Not Found`` (after the HTTP+SSE fallback's GET got 404 too), or, with
the fallback off, in a message about the deprecated transport only. The hint comes from one
pure function, :func:`~typedmcp.protocol.errors.wrong_path_hint`, that an HTTP client calls
with the URL, the status and the body of a failed request (``HttpError(status, body, url)``).
"""

from __future__ import annotations

import asyncio

import pytest
from test_http_server import ServerThread, make_app

from typedmcp.connecting import SseFallbackDisabled, connect_http
from typedmcp.protocol.errors import HttpError, wrong_path_hint

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(
    ("url", "hint"),
    [
        ("http://h:1/", "nothing answers at /: MCP servers usually serve one path, /mcp by default (http_app's), so try http://h:1/mcp"),
        ("http://h:1", "nothing answers at /: MCP servers usually serve one path, /mcp by default (http_app's), so try http://h:1/mcp"),
        ("https://h/api/v1?x=1", "nothing answers at /api/v1: MCP servers usually serve one path, /mcp by default (http_app's), so try https://h/mcp"),
        ("http://h:1/mcp", "nothing answers at /mcp: check which path the server serves MCP on (http_app(path=...) sets it)"),
        ("http://h:1/tenant/mcp/", "nothing answers at /tenant/mcp/: check which path the server serves MCP on (http_app(path=...) sets it)"),
    ],
)
def test_a_404_without_json_rpc_names_the_path_to_try(url: str, hint: str) -> None:
    assert wrong_path_hint(url, 404, b"Not Found") == hint
    assert wrong_path_hint(url, 404, b"<html><h1>404</h1></html>") == hint


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (404, b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Session not found"}}'),
        (400, b"Bad Request"),
        (405, b"Method Not Allowed"),
        (500, b"Not Found"),
    ],
)
def test_other_replies_get_no_path_hint(status: int, body: bytes) -> None:
    """An MCP server's own 404 (a JSON-RPC error: an unknown session) is not a wrong path."""
    assert wrong_path_hint("http://h:1/", status, body) is None


def test_an_http_error_given_the_url_carries_the_hint() -> None:
    assert str(HttpError(404, b"Not Found", "http://h:1/")) == (
        "HTTP 404: Not Found (nothing answers at /: MCP servers usually serve one path, /mcp "
        "by default (http_app's), so try http://h:1/mcp)"
    )
    assert str(HttpError(404, b"Not Found")) == "HTTP 404: Not Found"


@pytest.mark.parametrize("path", ["/", "/api"])
async def test_connecting_to_the_wrong_path_says_which_path_to_try(path: str) -> None:
    with ServerThread(make_app()) as server:
        url = f"http://127.0.0.1:{server.port}{path}"

        async def body() -> tuple[pytest.ExceptionInfo[HttpError], pytest.ExceptionInfo[SseFallbackDisabled]]:
            with pytest.raises(HttpError) as fell_back:  # after the HTTP+SSE fallback's GET
                async with connect_http(url):
                    pass
            with pytest.raises(SseFallbackDisabled) as direct:
                async with connect_http(url, legacy_sse_fallback=False):
                    pass
            async with connect_http(server.url) as client:  # where the hint points: it works
                assert (await client.list_tools()).tools
            return fell_back, direct

        fell_back, direct = await asyncio.wait_for(body(), 60)
    for error in (fell_back.value, direct.value):
        assert f"nothing answers at {path}" in str(error)
        assert f"so try http://127.0.0.1:{server.port}/mcp" in str(error)
    assert "legacy_sse_fallback=True" in str(direct.value)
