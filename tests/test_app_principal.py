"""The request's principal and headers on the app's Context (issue 18, requirement 4):
over Streamable HTTP behind ``BearerAuth``, in both eras, ``ctx.principal`` is what
``verify`` returned for the request's token and ``ctx.headers`` the request's headers
(``Authorization`` left out), in async and sync (worker-thread) tools alike; over stdio
there is neither. Driven by the FastMCP 4.1.6 client (its bearer ``auth`` and headers)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import free_port, stop_process, wait_listening
from fastmcp import Client
from fastmcp.client.transports import SSETransport, StdioTransport, StreamableHttpTransport

from typedmcp.protocol.origin import RequestOrigin, request_origin, serving_origin

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

SERVER = Path(__file__).resolve().parent / "servers" / "principal_server.py"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", str(port), "--sse"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_listening(process, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)


async def identity(client: Client[Any], tool: str) -> dict[str, Any]:
    """The tool's answer (from its text block in 2024-11-05, which has no structured content)."""
    result = await client.call_tool(tool, {})
    if client.protocol_version == "2024-11-05":
        assert result.structured_content is None
        return json.loads(result.content[0].text)  # type: ignore[union-attr,no-any-return]
    assert result.structured_content is not None
    return result.structured_content


@pytest.mark.parametrize("tool", ["whoami", "whoami_sync", "whoami_lowlevel"])
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_over_http_the_context_has_the_principal_and_headers(http_url: str, mode: str, tool: str) -> None:
    for token, user, tenant in (("alice-token", "alice", "red"), ("bob-token", "bob", "blue")):
        transport = StreamableHttpTransport(http_url, headers={"X-Tenant": tenant})
        async with Client(transport, mode=mode, auth=token) as client:
            assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
            seen = await identity(client, tool)
            assert seen["principal"] == user
            assert seen["tenant"] == tenant
            assert seen["sees_authorization"] is False  # the token stays with the transport
            assert seen["header_count"] > 1


async def test_over_http_sse_the_context_has_the_sse_connection_principal_and_headers(http_url: str) -> None:
    # 2024-11-05's HTTP+SSE: requests arrive as POSTs but are served on the GET's session
    sse_url = http_url.removesuffix("/mcp") + "/sse"
    async with Client(SSETransport(sse_url, headers={"X-Tenant": "green"}), auth="bob-token") as client:
        assert client.protocol_version == "2024-11-05"
        seen = await identity(client, "whoami")
        assert (seen["principal"], seen["tenant"], seen["sees_authorization"]) == ("bob", "green", False)


async def test_over_stdio_there_is_no_principal_and_no_header() -> None:
    transport = StdioTransport(sys.executable, [str(SERVER)], keep_alive=False)
    async with Client(transport, mode="legacy") as client:
        for tool in ("whoami", "whoami_sync", "whoami_lowlevel"):
            assert await identity(client, tool) == {
                "principal": None, "tenant": None, "sees_authorization": False, "header_count": 0,
            }


def test_the_origin_is_set_for_a_block_and_hides_authorization() -> None:
    assert request_origin() is None
    with serving_origin({"authorization": "Bearer t", "x-a": "1"}, "alice"):
        origin = request_origin()
        assert origin == RequestOrigin({"authorization": "Bearer t", "x-a": "1"}, "alice")
        assert origin.headers == {"x-a": "1"}
    assert request_origin() is None


def test_principal_as_refuses_a_principal_of_another_type() -> None:
    from typedmcp import Context
    from typedmcp.protocol.stubs import RequestContext

    with serving_origin({}, {"sub": "alice"}):
        ctx = Context(RequestContext())  # type: ignore[arg-type]
    assert ctx.principal == {"sub": "alice"}
    assert ctx.principal_as(dict) == {"sub": "alice"}
    with pytest.raises(TypeError, match=r"^the request's principal is a dict, not a str: it is what the server's BearerAuth.verify returned$"):
        ctx.principal_as(str)
