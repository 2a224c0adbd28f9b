"""The token verifiers behind ``http_app`` end to end (issue 20, requirements 1 and 6): a
typed app under uvicorn guarded by ``BearerAuth.jwt`` / ``BearerAuth.introspection`` /
``MCP_AUTH_*``, against the JWKS and the Authlib introspection endpoint of ``auth_world``;
called by the runtime's own client (``connect_http(bearer_token=...)``, both eras) and by
the official SDK client (mcp 2.3.0) with a bearer header. Without a token: 401 naming the
RFC 9728 document (which lists the issuer and the resource); a bad token: 401
``invalid_token``; the IdP unreachable: 503 with ``Retry-After``, logged once, no traceback.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel
from auth_world import AUDIENCE, INTROSPECTION_CLIENT, ISSUER, IdentityProvider, IssuedToken, SigningKey
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from test_http_server import ServerThread

import mcp_generated.v2025_11_25 as v2025_11_25
from typedmcp import Principal, http_app
from typedmcp.app import Context, McpApp
from typedmcp.auth.bearer import BearerAuth
from typedmcp.auth.env import AuthConfigError, unknown_auth_environment, verifier_from_env
from typedmcp.auth.fetch import http_fetch
from typedmcp.connecting import connect_http

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "raw", "version": "0"}},
}
JSON_POST = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

app = McpApp("guarded", version="1.0.0")


class Identity(BaseModel):
    """Who a bearer token speaks for."""

    subject: str
    issuer: str | None
    client_id: str | None
    scopes: list[str]


@app.tool()
def whoami(ctx: Context) -> Identity:
    """Who the bearer token speaks for."""
    principal = ctx.principal_as(Principal)
    assert principal is not None
    return Identity(subject=principal.subject, issuer=principal.issuer,
                    client_id=principal.client_id, scopes=sorted(principal.scopes))


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey.generate("ec", "ec-1")


@pytest.fixture(scope="module")
def idp_base(key: SigningKey) -> Iterator[tuple[IdentityProvider, str]]:
    idp = IdentityProvider(keys=[key])
    idp.tokens["opaque-bob"] = IssuedToken(subject="bob", scope="notes:read", expires_at=2**31)
    with ServerThread(idp) as server:
        yield idp, server.url.removesuffix("/mcp")


@pytest.fixture
def idp(idp_base: tuple[IdentityProvider, str]) -> IdentityProvider:
    idp_base[0].down = False
    idp_base[0].hits.clear()
    return idp_base[0]


@pytest.fixture
def base(idp_base: tuple[IdentityProvider, str]) -> str:
    return idp_base[1]


@pytest.fixture(scope="module")
def jwt_server(idp_base: tuple[IdentityProvider, str]) -> Iterator[ServerThread]:
    auth = BearerAuth.jwt(issuer=ISSUER, audience=AUDIENCE, jwks_url=f"{idp_base[1]}/jwks",
                          scopes_supported=["notes:write", "offline_access", "notes:read"])  # (offline_access: never listed)
    with ServerThread(http_app(app, auth=auth)) as server:
        yield server


async def post(url: str, token: str | None = None) -> Any:
    headers = dict(JSON_POST)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return await http_fetch("POST", url, json.dumps(INIT).encode(), headers)


@pytest.mark.parametrize("protocol", ["auto", "handshake"])
async def test_the_runtime_client_with_a_jwt_reaches_the_tool_as_its_principal(
    jwt_server: ServerThread, idp: IdentityProvider, key: SigningKey, protocol: str
) -> None:
    token = key.sign(sub="alice", client_id="cli", scope="notes:read")
    chosen: Any = v2025_11_25 if protocol == "handshake" else "auto"
    async with connect_http(jwt_server.url, protocol=chosen, bearer_token=token) as client:
        result = await client.call_tool(name="whoami", arguments={})
    assert result.structured_content == {
        "subject": "alice", "issuer": ISSUER, "client_id": "cli", "scopes": ["notes:read"],
    }


async def test_the_official_sdk_client_with_a_bearer_header_reaches_the_tool(
    jwt_server: ServerThread, idp: IdentityProvider, key: SigningKey
) -> None:
    token = key.sign(sub="carol", scope="notes:write")
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        streamable_http_client(jwt_server.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("whoami", {})
    assert result.structured_content is not None
    assert result.structured_content["subject"] == "carol"
    assert result.structured_content["scopes"] == ["notes:write"]


async def test_no_token_or_a_bad_one_is_401_naming_the_metadata_document(
    jwt_server: ServerThread, idp: IdentityProvider, key: SigningKey
) -> None:
    origin = jwt_server.url.removesuffix("/mcp")
    document_url = f"{origin}/.well-known/oauth-protected-resource/mcp"
    missing = await post(jwt_server.url)
    assert missing.status == 401
    assert missing.headers["www-authenticate"] == f'Bearer resource_metadata="{document_url}"'
    for bad in (key.sign(aud="https://other.test/mcp"), key.sign(exp=1), "garbage"):
        refused = await post(jwt_server.url, bad)
        assert refused.status == 401
        assert refused.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{document_url}", error="invalid_token"'
        )
    document = (await http_fetch("GET", document_url)).json()
    assert document == {
        "resource": AUDIENCE,
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["notes:read", "notes:write"],
    }


async def test_an_unreachable_idp_is_503_with_retry_after_logged_once(
    idp: IdentityProvider, base: str, key: SigningKey, caplog: pytest.LogCaptureFixture
) -> None:
    idp.down = True
    auth = BearerAuth.jwt(issuer=ISSUER, audience=AUDIENCE, jwks_url=f"{base}/jwks", refetch_interval=0)
    with ServerThread(http_app(app, auth=auth)) as server, caplog.at_level(logging.WARNING):
        replies = [await post(server.url, key.sign()) for _ in range(3)]
        idp.down = False
        recovered = await post(server.url, key.sign())
    for reply in replies:
        assert reply.status == 503
        assert reply.headers["retry-after"] == "5"
        message = reply.json()["error"]["message"]
        assert "could not be checked" in message and "502" not in message  # (details: the log's)
        assert "www-authenticate" not in reply.headers
    assert idp.hits["/jwks"] == 4  # (refetch_interval=0: each request tried)
    assert recovered.status == 200
    outage = [r for r in caplog.records if "HTTP 502" in r.getMessage()]
    assert len(outage) == 1 and outage[0].name == "typedmcp.auth"
    assert not [r for r in caplog.records if r.exc_info]  # no traceback logged


async def test_introspected_tokens_through_http_app(idp: IdentityProvider, base: str) -> None:
    auth = BearerAuth.introspection(
        introspection_url=f"{base}/introspect", client_id=INTROSPECTION_CLIENT[0],
        client_secret=INTROSPECTION_CLIENT[1], issuer=ISSUER, audience=AUDIENCE,
    )
    assert auth.resource_metadata["authorization_servers"] == [ISSUER]
    with ServerThread(http_app(app, auth=auth)) as server:
        for _ in range(2):
            async with connect_http(server.url, bearer_token="opaque-bob") as client:
                result = await client.call_tool(name="whoami", arguments={})
            assert result.structured_content is not None
            assert result.structured_content["subject"] == "bob"
        assert (await post(server.url, "opaque-nobody")).status == 401
    assert idp.hits["/introspect"] == 2  # bob's answer was cached across both connections


async def test_http_app_takes_its_verifier_from_the_environment(
    idp: IdentityProvider, base: str, key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_AUTH_ISSUER", ISSUER)
    monkeypatch.setenv("MCP_AUTH_AUDIENCE", AUDIENCE)
    monkeypatch.setenv("MCP_AUTH_JWKS_URL", f"{base}/jwks")
    served = http_app(app)
    assert served.auth is not None
    assert served.auth.resource_metadata["resource"] == AUDIENCE
    assert http_app(app, auth=None).auth is None  # (an explicit auth=None: none)
    with ServerThread(served) as server:
        assert (await post(server.url)).status == 401
        async with connect_http(server.url, bearer_token=key.sign(sub="dave")) as client:
            result = await client.call_tool(name="whoami", arguments={})
    assert result.structured_content is not None and result.structured_content["subject"] == "dave"


def test_introspection_from_the_environment() -> None:
    environ = {
        "MCP_AUTH_ISSUER": ISSUER, "MCP_AUTH_INTROSPECTION_URL": "https://as.test/introspect",
        "MCP_AUTH_CLIENT_ID": "rs", "MCP_AUTH_CLIENT_SECRET": "x",
    }
    auth = BearerAuth.from_env(environ)
    from typedmcp.auth.introspection import IntrospectionVerifier

    assert isinstance(auth.verifier, IntrospectionVerifier)
    assert auth.resource_metadata["authorization_servers"] == [ISSUER]
    assert auth.verifier.audiences == []  # no MCP_AUTH_AUDIENCE: the answer's aud is not checked
    with_audience = BearerAuth.from_env({**environ, "MCP_AUTH_AUDIENCE": f"{AUDIENCE}, https://b.test/mcp"})
    assert isinstance(with_audience.verifier, IntrospectionVerifier)
    assert with_audience.verifier.audiences == [AUDIENCE, "https://b.test/mcp"]


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"MCP_AUTH_AUDIENCE": AUDIENCE}, "MCP_AUTH_ISSUER is not set"),
        ({"MCP_AUTH_ISSUER": ISSUER}, "neither MCP_AUTH_JWKS_URL nor MCP_AUTH_INTROSPECTION_URL"),
        ({"MCP_AUTH_ISSUER": ISSUER, "MCP_AUTH_JWKS_URL": "https://as.test/jwks"}, "MCP_AUTH_AUDIENCE is not set"),
        ({"MCP_AUTH_ISSUER": ISSUER, "MCP_AUTH_INTROSPECTION_URL": "https://as.test/i", "MCP_AUTH_CLIENT_ID": "rs"},
         "MCP_AUTH_CLIENT_SECRET not set"),
        ({"MCP_AUTH_ISSUER": ISSUER, "MCP_AUTH_AUDIENCE": AUDIENCE, "MCP_AUTH_JWKS_URL": "https://as.test/jwks",
          "MCP_AUTH_INTROSPECTION_URL": "https://as.test/i"}, "both MCP_AUTH_JWKS_URL and"),
    ],
)
def test_an_incomplete_environment_names_what_to_set(environ: dict[str, str], message: str) -> None:
    with pytest.raises(AuthConfigError, match=message):
        BearerAuth.from_env(environ)


def test_a_misspelt_variable_is_warned_about(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    assert unknown_auth_environment({"MCP_AUTH_JWKS_URI": "x", "MCP_AUTH_ISSUER": ISSUER, "OTHER": "y"}) == [
        "MCP_AUTH_JWKS_URI is set, but typedmcp reads no such variable; did you mean MCP_AUTH_JWKS_URL?"
    ]
    monkeypatch.setenv("MCP_AUTH_ISUER", ISSUER)  # the issuer misspelt: auth is off, and the log says why
    with caplog.at_level(logging.WARNING, logger="typedmcp.auth"):
        served = http_app(app)
    assert served.auth is None
    assert "MCP_AUTH_ISUER is set, but typedmcp reads no such variable; did you mean MCP_AUTH_ISSUER?" in caplog.text


def test_a_verifier_made_from_the_environment_warns_of_a_misspelt_variable(caplog: pytest.LogCaptureFixture) -> None:
    environ = {"MCP_AUTH_ISSUER": ISSUER, "MCP_AUTH_AUDIENCE": AUDIENCE,
               "MCP_AUTH_JWKS_URL": "https://as.test/jwks", "MCP_AUTH_CACHE_SIZE": "5"}
    with caplog.at_level(logging.WARNING, logger="typedmcp.auth"):
        verifier_from_env(environ)
    assert "MCP_AUTH_CACHE_SIZE is set, but typedmcp reads no such variable" in caplog.text
