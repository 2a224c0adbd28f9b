"""Scopes seen by real clients: the step-up of this project's OAuth client and of the
SDK's OAuthClientProvider end to end (a 403 ``insufficient_scope``, a new authorization
asking for the wider scope, the retried call succeeding, the handshake-era session kept),
the official SDK client (mcp 2.3.0) seeing the refusal, the notes example behind
``BearerAuth``, and stdio (no token: not enforced)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp.client.auth.oauth2 import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.shared.exceptions import MCPError
from pydantic import AnyUrl
from scoped_app import READ, WRITE, bearer_auth, build_app, principal
from test_http_server import ServerThread
from test_oauth_client import World, provider

import mcp_generated.v2025_11_25
import mcp_generated.v2026_07_28
from typedmcp import Principal, http_app
from typedmcp.auth.bearer import BearerAuth
from typedmcp.connecting import connect_http, connect_stdio
from typedmcp.engine.jsonrpc import RpcError

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "notes_server.py"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class ScopedWorld(World):
    """The mock authorization server of the OAuth client tests, with our own scoped app
    (``http_app(..., auth=BearerAuth(...))``) as the protected resource: its verifier
    knows the tokens the authorization server issued, with their scopes."""

    statuses: list[int] | None = None

    def __post_init__(self) -> None:
        self.statuses = []
        auth = BearerAuth(verify=self.verify, resource_metadata={"authorization_servers": []})
        self.app = http_app(build_app(), auth=auth)

    def verify(self, token: str) -> Principal | None:
        scopes = self.tokens.get(token)
        if scopes is None:
            return None
        return Principal("alice", issuer=self.issuer, client_id="c", scopes=frozenset(scopes))

    async def _gate(self, scope: Any, body: bytes, headers: dict[str, str], receive: Any, send: Any) -> None:
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        async def recording_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                assert self.statuses is not None
                self.statuses.append(message["status"])
            await send(message)

        await self.app(scope, replay, recording_send)


@asynccontextmanager
async def running(world: ScopedWorld) -> AsyncIterator[ScopedWorld]:
    with ServerThread(world) as server:
        world.base = f"http://127.0.0.1:{server.port}"
        yield world


@pytest.mark.parametrize("protocol", [mcp_generated.v2025_11_25, mcp_generated.v2026_07_28], ids=["handshake", "stateless"])
async def test_our_client_steps_up_to_the_scope_the_403_names_and_the_call_succeeds(protocol: ModuleType) -> None:
    world = ScopedWorld(prm_scopes=[READ])  # the first authorization asks for notes:read
    async with running(world), connect_http(world.url, protocol=protocol, auth=provider(world)) as client:
        listed = await client.list_tools()
        assert sorted(tool.name for tool in listed.tools) == ["hello", "search"]
        result = await client.call_tool(name="add", arguments={"title": "t"})
        assert result.content[0].text == "added t"  # type: ignore[union-attr]
        listed = await client.list_tools()  # the wider token now sees the write tools too
        assert sorted(tool.name for tool in listed.tools) == ["add", "export", "hello", "search"]
    assert [a.params["scope"] for a in world.authorizations] == [READ, f"{READ} {WRITE}"]
    assert world.statuses is not None and world.statuses.count(403) == 1
    if protocol is mcp_generated.v2025_11_25:  # the stepped-up token kept the session
        sessions = {h.headers.get("mcp-session-id") for h in world.hits if h.path == "/mcp" and h.method == "POST"}
        assert len(sessions - {None}) == 1


async def test_our_client_without_oauth_gets_the_refusal_as_an_error() -> None:
    with ServerThread(http_app(build_app(), auth=bearer_auth())) as server:
        async with connect_http(server.url, protocol=mcp_generated.v2025_11_25, bearer_token="reader") as client:
            with pytest.raises(RpcError, match=r"^Forbidden: tool 'add' needs scope notes:write"):
                await client.call_tool(name="add", arguments={"title": "t"})


@asynccontextmanager
async def sdk_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_the_sdk_client_sees_the_list_filtered_and_the_403_refusal() -> None:
    with ServerThread(http_app(build_app(), auth=bearer_auth())) as server:
        async with sdk_session(server.url, "reader") as session:
            assert sorted(tool.name for tool in (await session.list_tools()).tools) == ["hello", "search"]
            with pytest.raises(MCPError) as refused:
                await session.call_tool("add", {"title": "t"})
            assert refused.value.error.code == -32600
            assert refused.value.error.message.startswith("Forbidden: tool 'add' needs scope notes:write")
            assert refused.value.error.data == {"requiredScopes": [WRITE], "missingScopes": [WRITE]}
            assert (await session.call_tool("search", {"query": "q"})).content[0].text == "found q"  # type: ignore[union-attr]
        # the 403 itself, as the SDK's HTTP client received it
        logged = [entry for entry in server.log if entry.get("status") == 403]
        assert len(logged) == 1 and b'"name":"add"' in logged[0]["body"].replace(b" ", b"")


# -- the notes example ---------------------------------------------------------------------


@pytest.fixture
def notes_app() -> Iterator[Any]:
    """``examples/notes_server.py``'s app, imported (its module state reset after)."""
    sys.path.insert(0, str(EXAMPLE.parent))
    sys.modules.pop("notes_server", None)  # (a fresh one: another test file may have used it)
    try:
        import notes_server

        yield notes_server.app
    finally:
        sys.path.remove(str(EXAMPLE.parent))
        sys.modules.pop("notes_server", None)


async def test_the_notes_example_needs_notes_read_and_notes_write_behind_auth(notes_app: Any) -> None:
    tokens = {"reader": principal("alice", "notes:read"), "writer": principal("alice", "notes:read", "notes:write")}
    with ServerThread(http_app(notes_app, auth=bearer_auth(tokens))) as server:
        async with connect_http(server.url, protocol=mcp_generated.v2025_11_25, bearer_token="reader") as client:
            names = sorted(tool.name for tool in (await client.list_tools()).tools)
            assert "search_notes" in names and "add_note" not in names
            with pytest.raises(RpcError, match="needs scope notes:write"):
                await client.call_tool(name="add_note", arguments={"title": "t", "body": "b"})
        async with connect_http(server.url, protocol=mcp_generated.v2026_07_28, bearer_token="writer") as client:
            added = await client.call_tool(name="add_note", arguments={"title": "milk", "body": "b"})
            assert added.structured_content == {"id": 1, "title": "milk", "tags": []}


async def test_over_stdio_there_is_no_token_and_the_scopes_are_not_enforced() -> None:
    async with connect_stdio([sys.executable, str(EXAMPLE)], protocol=mcp_generated.v2025_11_25) as client:
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        assert {"add_note", "search_notes"} <= set(names)
        added = await client.call_tool(name="add_note", arguments={"title": "milk", "body": "b"})
        assert added.is_error is not True
        found = await client.call_tool(name="search_notes", arguments={"query": "milk"})
        assert found.structured_content == {"result": [{"id": 1, "title": "milk", "tags": []}]}


async def test_a_forbidden_call_reaches_no_handler(notes_app: Any) -> None:
    import notes_server

    tokens = {"reader": principal("alice", "notes:read")}
    with ServerThread(http_app(notes_app, auth=bearer_auth(tokens))) as server:
        async with connect_http(server.url, protocol=mcp_generated.v2026_07_28, bearer_token="reader") as client:
            with pytest.raises(RpcError, match="needs scope notes:write"):
                await client.call_tool(name="add_note", arguments={"title": "t", "body": "b"})
    assert notes_server.NOTES == {}


class SdkMemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def test_the_sdk_oauth_client_steps_up_on_our_403_and_the_call_succeeds() -> None:
    world = ScopedWorld(prm_scopes=[READ])
    redirects: list[str] = []

    async def redirect_handler(url: str) -> None:  # the "browser": the mock server approves at once
        async with httpx2.AsyncClient() as browser:
            answer = await browser.get(url, follow_redirects=False)
        redirects.append(answer.headers["location"])

    async def callback_handler() -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(redirects[-1]).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0], iss=query.get("iss", [None])[0])

    async with running(world):
        auth = OAuthClientProvider(
            world.url,
            OAuthClientMetadata(redirect_uris=[AnyUrl("http://127.0.0.1:9/callback")], client_name="sdk"),
            SdkMemoryStorage(),
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
        )
        async with (
            httpx2.AsyncClient(auth=auth) as http,
            streamable_http_client(world.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert sorted(tool.name for tool in (await session.list_tools()).tools) == ["hello", "search"]
            added = await session.call_tool("add", {"title": "t"})
            assert added.content[0].text == "added t"  # type: ignore[union-attr]
    assert [a.params["scope"] for a in world.authorizations] == [READ, f"{READ} {WRITE}"]
    assert world.statuses is not None and world.statuses.count(403) == 1
