"""``http_app`` mounted under a prefix of a FastAPI application (``api.mount("/tools", mcp)``),
served by uvicorn on 127.0.0.1.

Starlette's ``Mount`` keeps the whole path in ``scope["path"]`` and puts the prefix in
``root_path``; the app serves its endpoint below that prefix, announces the HTTP+SSE messages
URI with it, names it in the 404 of a wrong path, and points the 401 challenge at the
protected-resource metadata where RFC 9728 puts it for the mounted endpoint
(``/.well-known/oauth-protected-resource/tools/mcp`` on the outer app, a route the app hands
out: :meth:`~typedmcp.transports.http_mount.Mountable.protected_resource_route`). Starlette
does not run a mounted app's lifespan: ``FastAPI(lifespan=mcp.lifespan)`` does. Both eras,
with our client and the official SDK client (mcp 2.3.0, ``mcp.Client``).
"""

from __future__ import annotations

import asyncio
import http.client
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp.client.auth.utils as sdk_auth
import pytest
from fastapi import FastAPI
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url
from test_http_server import ServerThread, Tools, make_app

import mcp_generated.v2025_11_25
from typedmcp.auth.bearer import BearerAuth
from typedmcp.auth.discovery import parse_challenge, resource_covers
from typedmcp.connecting import connect_http, connect_sse
from typedmcp.protocol.errors import HttpError
from typedmcp.transports import http_server
from typedmcp.transports.http_mount import route_path
from typedmcp.transports.http_server import HttpApp

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

PREFIX = "/tools"
TOKEN = "mounted-token"
#: No ``resource``: the app fills in the endpoint's URL as the request reached it.
METADATA = {"authorization_servers": ["https://auth.example.com"], "scopes_supported": ["mcp"]}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def verify(token: str) -> str | None:
    return "alice" if token == TOKEN else None


def mounted(mcp: HttpApp, *, lifespan: bool = True) -> FastAPI:
    """A FastAPI app with routes of its own and ``mcp`` mounted at :data:`PREFIX`."""
    api = FastAPI(lifespan=mcp.lifespan if lifespan else None)

    @api.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    api.mount(PREFIX, mcp)
    if mcp.auth is not None:
        api.add_route(*mcp.protected_resource_route(PREFIX))
    return api


@asynccontextmanager
async def serving(api: FastAPI) -> AsyncIterator[ServerThread]:
    with ServerThread(api) as server:
        yield server


def get(server: ServerThread, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def post(server: ServerThread, path: str, message: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    try:
        connection.request("POST", path, body=json.dumps(message), headers=headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


# -- the path below the prefix ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "root", "expected"),
    [
        ("/tools/mcp", "/tools", "/mcp"),  # Starlette >= 0.33 and ASGI servers: path keeps root_path
        ("/tools/mcp/", "/tools", "/mcp"),
        ("/mcp", "/tools", "/mcp"),  # older Starlette: the prefix already cut off
        ("/tools", "/tools", "/"),
        ("/toolsmcp", "/tools", "/toolsmcp"),  # not below the prefix
        ("/mcp", "", "/mcp"),
    ],
)
def test_the_route_path_is_the_path_below_the_mount_prefix(path: str, root: str, expected: str) -> None:
    assert route_path(path, root) == expected


# -- both eras, our client and the SDK's -------------------------------------------------------


async def test_our_client_reaches_the_mounted_endpoint_in_both_eras() -> None:
    async with serving(mounted(make_app(Tools()))) as server:
        url = f"http://127.0.0.1:{server.port}{PREFIX}/mcp"

        async def body() -> None:
            async with connect_http(url) as modern:
                assert (modern.session.era, modern.session.protocol_version) == ("stateless", "2026-07-28")
                result = await modern.call_tool(name="echo", arguments={"where": "mounted"})
                assert result.content[0].text == '{"where": "mounted"}'  # type: ignore[union-attr]
            async with connect_http(url, protocol=mcp_generated.v2025_11_25) as legacy:
                assert (legacy.session.era, legacy.session.protocol_version) == ("handshake", "2025-11-25")
                result = await legacy.call_tool(name="echo", arguments={"era": "handshake"})
                assert result.content[0].text == '{"era": "handshake"}'  # type: ignore[union-attr]

        await asyncio.wait_for(body(), 30)
        assert get(server, "/health")[:1] == (200,)  # the outer app's own route is untouched


async def test_the_sdk_client_reaches_the_mounted_endpoint_in_both_eras() -> None:
    async with serving(mounted(make_app(Tools()))) as server:
        url = f"http://127.0.0.1:{server.port}{PREFIX}/mcp"

        async def body() -> None:
            async with Client(url) as modern, Client(url, mode="legacy") as legacy:
                assert (modern.protocol_version, legacy.protocol_version) == ("2026-07-28", "2025-11-25")
                for client in (modern, legacy):
                    result = await client.call_tool("echo", {"sdk": True})
                    assert result.content[0].text == '{"sdk": true}'  # type: ignore[union-attr]

        await asyncio.wait_for(body(), 30)


async def test_the_legacy_sse_endpoints_are_served_and_announced_under_the_prefix() -> None:
    async with serving(mounted(make_app(Tools(), legacy_sse=True))) as server:

        async def body() -> None:
            async with connect_sse(f"http://127.0.0.1:{server.port}{PREFIX}/sse") as client:
                result = await client.call_tool(name="echo", arguments={"sse": 1})
                assert result.content[0].text == '{"sse": 1}'  # type: ignore[union-attr]

        await asyncio.wait_for(body(), 30)
        posted = [entry for entry in server.requests("POST") if entry.get("status") == 202]
        assert posted  # the client POSTed where the endpoint event pointed: under the prefix
        stream = server.requests("GET")[0]
        assert stream.get("status") == 200


# -- the wrong path --------------------------------------------------------------------------


async def test_a_wrong_path_under_the_prefix_names_the_mounted_endpoint() -> None:
    async with serving(mounted(make_app(Tools()))) as server:
        status, _, reply = post(server, f"{PREFIX}/api", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert (status, reply) == (404, f"Not Found: this server serves MCP at {PREFIX}/mcp".encode())

        async def body() -> pytest.ExceptionInfo[HttpError]:
            with pytest.raises(HttpError) as wrong:
                async with connect_http(f"http://127.0.0.1:{server.port}{PREFIX}/", legacy_sse_fallback=False):
                    pass
            return wrong

        wrong = await asyncio.wait_for(body(), 30)
        assert f"so try http://127.0.0.1:{server.port}{PREFIX}/mcp" in str(wrong.value)


# -- the protected-resource metadata ---------------------------------------------------------


async def test_the_challenge_and_the_metadata_name_the_mounted_endpoint() -> None:
    mcp = make_app(Tools(), auth=BearerAuth(verify, METADATA))
    async with serving(mounted(mcp)) as server:
        origin = f"http://127.0.0.1:{server.port}"
        url = f"{origin}{PREFIX}/mcp"
        status, headers, _ = post(server, f"{PREFIX}/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert status == 401
        metadata_url = parse_challenge(headers["www-authenticate"])["resource_metadata"]
        assert metadata_url == f"{origin}/.well-known/oauth-protected-resource{PREFIX}/mcp"

        status, _, document = get(server, metadata_url.removeprefix(origin))
        assert status == 200
        assert json.loads(document) == {"resource": url, **METADATA}
        assert resource_covers(json.loads(document)["resource"], url)

        async def body() -> None:
            async with connect_http(url, bearer_token=TOKEN) as modern:
                assert modern.session.era == "stateless"
                assert (await modern.call_tool(name="echo", arguments={})).content
            async with connect_http(url, bearer_token=TOKEN, protocol=mcp_generated.v2025_11_25) as legacy:
                assert (await legacy.call_tool(name="echo", arguments={})).content

        await asyncio.wait_for(body(), 30)


def test_the_metadata_route_needs_auth_and_a_slash_prefix() -> None:
    with pytest.raises(ValueError, match=r"needs auth: build the app with http_app\(\.\.\., auth=BearerAuth"):
        make_app(Tools()).protected_resource_route(PREFIX)
    with pytest.raises(ValueError, match="the mount prefix must start with '/' \\(got 'tools'\\)"):
        make_app(Tools(), auth=BearerAuth(verify, METADATA)).protected_resource_route("tools")


# -- lifespans -------------------------------------------------------------------------------


async def test_the_outer_app_runs_the_mounted_apps_lifespan(monkeypatch: pytest.MonkeyPatch) -> None:
    frozen: list[bool] = []
    monkeypatch.setattr(http_server, "freeze_startup_objects", lambda: frozen.append(True))
    mcp = make_app(Tools())
    async with serving(mounted(mcp)) as server:
        assert (mcp.started, frozen) == (True, [True])  # start-up ran before the first request

        initialize = {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        }
        status, headers, _ = post(server, f"{PREFIX}/mcp", initialize)
        assert (status, list(mcp.sessions)) == (200, [headers["mcp-session-id"]])
    # (uvicorn has stopped)
    assert not mcp.started
    assert mcp.sessions == {}  # shut-down ended the session


async def test_a_lifespan_of_your_own_composes_with_the_apps() -> None:
    events: list[str] = []
    mcp = make_app(Tools())

    @asynccontextmanager
    async def lifespan(api: FastAPI) -> AsyncIterator[None]:
        events.append("outer up")
        async with mcp.lifespan(api):
            events.append(f"mcp up: {mcp.started}")
            yield
        events.append(f"mcp down: {not mcp.started}")

    api = FastAPI(lifespan=lifespan)
    api.mount(PREFIX, mcp)
    async with serving(api):
        assert events == ["outer up", "mcp up: True"]
    assert events == ["outer up", "mcp up: True", "mcp down: True"]


async def test_without_the_lifespan_the_mounted_app_never_starts() -> None:
    """Starlette does not run a mounted app's lifespan (why ``lifespan=mcp.lifespan``)."""
    mcp = make_app(Tools())
    async with serving(mounted(mcp, lifespan=False)):
        assert not mcp.started


async def test_the_sdk_clients_oauth_discovery_finds_the_mounted_endpoints_metadata() -> None:
    """The official SDK's discovery steps (mcp 2.3.0 ``mcp.client.auth.utils``), as its OAuth
    client runs them: the challenge's URL first, then the path-based well-known URI; the
    document's ``resource`` must cover the server URL (the check its OAuth client makes)."""
    mcp = make_app(Tools(), auth=BearerAuth(verify, METADATA))
    async with serving(mounted(mcp)) as server, httpx2.AsyncClient() as http:
        url = f"http://127.0.0.1:{server.port}{PREFIX}/mcp"
        challenged = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        hinted = sdk_auth.extract_resource_metadata_from_www_auth(challenged)
        candidates = sdk_auth.build_protected_resource_metadata_discovery_urls(hinted, url)
        for candidate in candidates[:2]:  # the header's URL, the path-based well-known URI
            found = await sdk_auth.handle_protected_resource_response(await http.get(candidate))
            assert found is not None, candidate
            assert check_resource_allowed(resource_url_from_server_url(url), str(found.resource))

        # and with the token, the SDK's session works under the prefix
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as authorized,
            streamable_http_client(url, http_client=authorized) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("echo", {"token": "ok"})
            assert result.content[0].text == '{"token": "ok"}'  # type: ignore[union-attr]
