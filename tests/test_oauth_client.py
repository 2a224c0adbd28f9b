"""The OAuth client (``runtime.oauth``) against a mock authorization server and protected
resource, end to end: ``connect_http(url, auth=OAuthProvider(...))`` to our own MCP server
behind a bearer-token gate, all in one ASGI app under uvicorn on 127.0.0.1.

:class:`World` is that app. It serves protected-resource metadata, authorization-server
metadata, ``/register``, ``/authorize`` (approves at once: redirects with a code) and
``/token``, and guards ``/mcp`` with 401 / 403 ``insufficient_scope`` challenges. Every
request is logged (``hits``), so the tests check the wire: discovery order, PKCE, the
``resource`` parameter, client authentication, scopes, refreshes, ``iss``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import pytest
from test_http_server import ServerThread, Tools, make_app

import mcp_generated.v2025_11_25
from typedmcp.auth.discovery import (
    canonical_resource,
    parse_challenge,
    pkce_pair,
    resource_covers,
    resource_metadata_urls,
    same_issuer,
    server_metadata_urls,
    union_scopes,
)
from typedmcp.auth.fetch import OAuthError, auto_approve
from typedmcp.auth.oauth import OAuthProvider
from typedmcp.auth.tokens import ClientMetadata, MemoryTokenStorage, Tokens
from typedmcp.connecting import connect_http

pytestmark = pytest.mark.anyio

LATEST = mcp_generated.v2025_11_25
CIMD_URL = "https://client.example.com/mcp-client.json"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# -- the mock world ---------------------------------------------------------------------------


@dataclass
class Hit:
    method: str
    path: str
    params: dict[str, Any]  # query (GET) or form / JSON body (POST)
    headers: dict[str, str]


@dataclass
class World:
    """Authorization server + protected resource + our MCP server, on one origin.

    The knobs say where metadata lives and how the servers behave; ``base`` is set once
    uvicorn has a port.
    """

    prm_path: str | None = "/.well-known/oauth-protected-resource/mcp"
    hint: bool = True  # resource_metadata in the 401 challenge
    prm_resource: str | None = None  # None: the MCP endpoint itself
    prm_scopes: list[str] | None = None
    challenge_scope: str | None = None  # scope="..." in the 401 challenge
    as_path: str = ""  # the issuer's path (a tenant)
    metadata_path: str | None = None  # None: RFC 8414 path for the issuer
    issuer_override: str | None = None
    as_scopes: list[str] | None = None
    auth_methods: list[str] = field(default_factory=lambda: ["client_secret_basic", "none"])
    pkce_methods: list[str] | None = field(default_factory=lambda: ["S256"])
    registration: bool = True
    registered_method: str | None = None
    registered_secret: str | None = "dcr-secret"
    cimd: bool = False
    iss_supported: bool | None = True
    iss_mode: str = "correct"  # correct | omit | wrong | slash
    deny: bool = False  # /authorize redirects with error=access_denied
    refresh: bool = False  # issue refresh tokens
    lifetime: int = 3600
    required: dict[str, list[str]] = field(default_factory=dict)  # JSON-RPC method -> scopes
    always_insufficient: bool = False
    base: str = ""
    hits: list[Hit] = field(default_factory=list)
    tokens: dict[str, set[str]] = field(default_factory=dict)
    refresh_tokens: dict[str, set[str]] = field(default_factory=dict)
    clients: dict[str, str | None] = field(default_factory=dict)  # client id -> secret
    challenges: dict[str, str] = field(default_factory=dict)  # code -> PKCE challenge
    served: int = 0  # MCP requests let through
    refused: int = 0  # MCP requests answered 403 insufficient_scope

    def __post_init__(self) -> None:
        self.app = make_app(Tools())

    # what the world looks like from outside
    @property
    def url(self) -> str:
        return self.base + "/mcp"

    @property
    def issuer(self) -> str:
        return self.base + self.as_path

    def paths(self, method: str | None = None) -> list[str]:
        return [h.path for h in self.hits if method is None or h.method == method]

    def hits_at(self, suffix: str) -> list[Hit]:
        return [h for h in self.hits if h.path.endswith(suffix) and not h.path.startswith("/.well")]

    @property
    def authorizations(self) -> list[Hit]:
        return self.hits_at("/authorize")

    @property
    def token_requests(self) -> list[Hit]:
        return self.hits_at("/token")

    @property
    def registrations(self) -> list[Hit]:
        return self.hits_at("/register")

    # ASGI
    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        path, method = scope["path"], scope["method"]
        params = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
        if method == "POST" and headers.get("content-type", "").startswith("application/x-www-form"):
            params = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        elif method == "POST" and path.endswith("/register"):
            params = json.loads(body)
        self.hits.append(Hit(method, path, params, headers))
        if path == "/mcp":
            await self._gate(scope, body, headers, receive, send)
            return
        status, extra, payload = self._route(method, path, params, headers)
        await reply(send, status, payload, extra)

    def _route(
        self, method: str, path: str, params: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], Any]:
        if method == "GET" and path == self.prm_path:
            prm: dict[str, Any] = {
                "resource": self.prm_resource or self.url,
                "authorization_servers": [self.issuer],
            }
            if self.prm_scopes is not None:
                prm["scopes_supported"] = self.prm_scopes
            return 200, {}, prm
        metadata_path = self.metadata_path or "/.well-known/oauth-authorization-server" + self.as_path
        if method == "GET" and path == metadata_path:
            return 200, {}, self._metadata()
        if path == self.as_path + "/register" and self.registration:
            return self._register(params)
        if path == self.as_path + "/authorize":
            return self._authorize(params)
        if path == self.as_path + "/token":
            return self._token(params, headers)
        return 404, {}, {"error": "not_found"}

    def _metadata(self) -> dict[str, Any]:
        root = self.issuer
        document: dict[str, Any] = {
            "issuer": self.issuer_override or self.issuer,
            "authorization_endpoint": root + "/authorize",
            "token_endpoint": root + "/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "token_endpoint_auth_methods_supported": self.auth_methods,
        }
        if self.registration:
            document["registration_endpoint"] = root + "/register"
        if self.pkce_methods is not None:
            document["code_challenge_methods_supported"] = self.pkce_methods
        if self.iss_supported is not None:
            document["authorization_response_iss_parameter_supported"] = self.iss_supported
        if self.as_scopes is not None:
            document["scopes_supported"] = self.as_scopes
        if self.cimd:
            document["client_id_metadata_document_supported"] = True
        return document

    def _register(self, params: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        client_id = f"client-{len(self.clients) + 1}"
        self.clients[client_id] = self.registered_secret
        answer: dict[str, Any] = {"client_id": client_id, "redirect_uris": params["redirect_uris"]}
        if self.registered_secret:
            answer["client_secret"] = self.registered_secret
        if self.registered_method:
            answer["token_endpoint_auth_method"] = self.registered_method
        return 201, {}, answer

    def _authorize(self, params: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        target = params["redirect_uri"]
        if self.deny:
            answer = {"error": "access_denied", "error_description": "the user said no"}
        else:
            code = secrets.token_hex(8)
            self.challenges[code] = params.get("code_challenge", "")
            answer = {"code": code, "state": params.get("state", "")}
            iss = {"correct": self.issuer, "wrong": "https://evil.example.com", "slash": self.issuer + "/"}
            if self.iss_mode in iss:
                answer["iss"] = iss[self.iss_mode]
        return 302, {"location": target + "?" + urlencode(answer)}, {}

    def _token(self, params: dict[str, str], headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        grant = params.get("grant_type")
        if grant == "authorization_code":
            challenge = self.challenges.pop(params.get("code", ""), None)
            verifier = params.get("code_verifier", "")
            computed = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
            if challenge is None or computed.decode() != challenge:
                return 400, {}, {"error": "invalid_grant", "error_description": "PKCE check failed"}
            scopes = set((self.authorizations[-1].params.get("scope") or "").split())
        elif grant == "refresh_token":
            scopes_or_none = self.refresh_tokens.pop(params.get("refresh_token", ""), None)
            if scopes_or_none is None:
                return 400, {}, {"error": "invalid_grant", "error_description": "unknown refresh token"}
            scopes = scopes_or_none
        elif grant == "client_credentials":
            scopes = set((params.get("scope") or "").split())
        else:
            return 400, {}, {"error": "unsupported_grant_type"}
        token = "at-" + secrets.token_hex(8)
        self.tokens[token] = scopes
        answer: dict[str, Any] = {"access_token": token, "token_type": "Bearer", "expires_in": self.lifetime}
        if scopes:
            answer["scope"] = " ".join(sorted(scopes))
        if self.refresh:
            answer["refresh_token"] = "rt-" + secrets.token_hex(8)
            self.refresh_tokens[answer["refresh_token"]] = scopes
        return 200, {}, answer

    async def _gate(self, scope: Any, body: bytes, headers: dict[str, str], receive: Any, send: Any) -> None:
        metadata = f'resource_metadata="{self.base}{self.prm_path}"' if self.hint and self.prm_path else ""
        authorization = headers.get("authorization", "")
        token = authorization[7:] if authorization.startswith("Bearer ") else None
        if token not in self.tokens:
            parts = [p for p in (metadata, f'scope="{self.challenge_scope}"' if self.challenge_scope else "") if p]
            await reply(send, 401, {"error": "invalid_token"}, {"www-authenticate": "Bearer " + ", ".join(parts)})
            return
        assert token is not None
        rpc = json.loads(body) if scope["method"] == "POST" else {}
        needed = set(self.required.get(rpc.get("method", ""), []))
        if self.always_insufficient or not needed <= self.tokens[token]:
            wanted = " ".join(sorted(needed)) or "admin"
            challenge = f'Bearer error="insufficient_scope", scope="{wanted}", {metadata}'
            self.refused += 1
            await reply(send, 403, {"error": "insufficient_scope"}, {"www-authenticate": challenge})
            return
        self.served += 1
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def reply(send: Any, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(payload).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


@asynccontextmanager
async def running(world: World) -> AsyncIterator[World]:
    with ServerThread(world) as server:
        world.base = f"http://127.0.0.1:{server.port}"
        yield world


def provider(world: World, **options: Any) -> OAuthProvider:
    options.setdefault("user_agent", auto_approve())
    return OAuthProvider(world.url, **options)


async def use(world: World, auth: OAuthProvider, tool: str = "echo") -> None:
    """Connect, list tools and call one: what a user of the client does."""
    async with connect_http(world.url, protocol=LATEST, auth=auth) as client:
        await client.list_tools()
        await client.call_tool(name=tool, arguments={})


# -- pure helpers -----------------------------------------------------------------------------


def test_pkce_verifier_and_s256_challenge() -> None:
    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128 and re.fullmatch(r"[A-Za-z0-9\-._~]+", verifier)
    digest = hashlib.sha256(verifier.encode()).digest()
    assert challenge == base64.urlsafe_b64encode(digest).decode().rstrip("=")
    assert "=" not in challenge and pkce_pair()[0] != verifier


def test_challenges_are_parsed_with_quoting_and_other_schemes() -> None:
    header = 'Bearer error="insufficient_scope", scope="a b", resource_metadata="http://x/y?q=1,2"'
    assert parse_challenge(header) == {
        "error": "insufficient_scope",
        "scope": "a b",
        "resource_metadata": "http://x/y?q=1,2",
    }
    assert parse_challenge('Basic realm="x", Bearer realm="mcp", error=invalid_token') == {
        "realm": "mcp",
        "error": "invalid_token",
    }
    assert parse_challenge(r'Bearer error_description="say \"hi\""') == {"error_description": 'say "hi"'}
    assert parse_challenge("") == {}


def test_discovery_urls_follow_the_spec_order() -> None:
    assert resource_metadata_urls("http://h:1/api/mcp", "http://h:1/custom.json") == [
        "http://h:1/custom.json",
        "http://h:1/.well-known/oauth-protected-resource/api/mcp",
        "http://h:1/.well-known/oauth-protected-resource",
    ]
    assert resource_metadata_urls("http://h:1", None) == ["http://h:1/.well-known/oauth-protected-resource"]
    assert server_metadata_urls("https://as.example/tenant1/") == [
        "https://as.example/.well-known/oauth-authorization-server/tenant1",
        "https://as.example/.well-known/openid-configuration/tenant1",
        "https://as.example/tenant1/.well-known/openid-configuration",
    ]
    assert server_metadata_urls("https://as.example") == [
        "https://as.example/.well-known/oauth-authorization-server",
        "https://as.example/.well-known/openid-configuration",
    ]


def test_resource_and_issuer_comparisons() -> None:
    assert canonical_resource("HTTP://Example.COM:8080/mcp/#frag") == "http://example.com:8080/mcp"
    assert resource_covers("http://h:1/mcp", "http://h:1/mcp")
    assert resource_covers("http://h:1", "http://h:1/mcp")  # a parent resource
    assert not resource_covers("http://h:1/mc", "http://h:1/mcp")
    assert not resource_covers("https://evil.example.com/mcp", "http://h:1/mcp")
    assert same_issuer("https://as.example", "https://as.example/")  # a bare origin only
    assert not same_issuer("https://as.example/t", "https://as.example/t/")
    assert not same_issuer("https://as.example", "https://AS.example")
    assert union_scopes("a b", None, "b c") == "a b c" and union_scopes(None, "") is None


def test_bad_configuration_is_refused_up_front() -> None:
    with pytest.raises(ValueError, match="https URL with a path"):
        OAuthProvider("http://h/mcp", client_metadata_url="http://client.example/doc.json")
    with pytest.raises(ValueError, match="https URL with a path"):
        OAuthProvider("http://h/mcp", client_metadata_url="https://client.example/")
    with pytest.raises(ValueError, match="needs a client_id"):
        OAuthProvider("http://h/mcp", grant="client_credentials")


# -- the whole flow ---------------------------------------------------------------------------


async def test_the_full_flow_and_a_bearer_token_on_every_request() -> None:
    async with running(World()) as world:
        await use(world, provider(world))
    # 401 -> PRM (from the challenge) -> AS metadata -> DCR -> authorize -> token -> retry
    assert world.paths()[:7] == [
        "/mcp",
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/register",
        "/authorize",
        "/token",
        "/mcp",
    ]
    after = [h for h in world.hits[6:] if h.path == "/mcp"]
    token = next(iter(world.tokens))
    assert {h.method for h in after} >= {"POST", "GET", "DELETE"}
    assert all(h.headers.get("authorization") == f"Bearer {token}" for h in after)
    assert world.served >= 4  # initialize, initialized, tools/list, tools/call (+ GET, DELETE)
    registration = world.registrations[0].params
    assert registration["application_type"] == "native"
    assert registration["grant_types"] == ["authorization_code", "refresh_token"]
    assert registration["redirect_uris"] == ["http://localhost:8765/callback"]


async def test_pkce_and_the_resource_parameter_reach_the_server() -> None:
    async with running(World()) as world:
        await use(world, provider(world))
    query = world.authorizations[0].params
    form = world.token_requests[0].params
    assert query["response_type"] == "code" and query["code_challenge_method"] == "S256"
    digest = hashlib.sha256(form["code_verifier"].encode()).digest()
    assert query["code_challenge"] == base64.urlsafe_b64encode(digest).decode().rstrip("=")
    assert query["resource"] == form["resource"] == world.url
    assert form["redirect_uri"] == query["redirect_uri"] and "state" in query


async def test_without_a_hint_the_path_based_metadata_comes_before_the_root() -> None:
    async with running(World(hint=False, prm_path="/.well-known/oauth-protected-resource")) as world:
        await use(world, provider(world))
    assert world.paths()[1:3] == [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ]
    # the root document names the origin: a parent of the endpoint, so it is the resource
    assert world.authorizations[0].params["resource"] == world.url
    world_root = World(hint=False, prm_path="/.well-known/oauth-protected-resource")
    async with running(world_root) as world:
        world.prm_resource = world.base
        await use(world, provider(world))
    assert world.authorizations[0].params["resource"] == world.base


async def test_a_tenant_issuer_is_looked_up_with_its_path_oidc_last() -> None:
    world = World(as_path="/tenant1", metadata_path="/tenant1/.well-known/openid-configuration")
    async with running(world):
        await use(world, provider(world))
    assert world.paths()[2:5] == [
        "/.well-known/oauth-authorization-server/tenant1",
        "/.well-known/openid-configuration/tenant1",
        "/tenant1/.well-known/openid-configuration",
    ]
    assert "/.well-known/oauth-authorization-server" not in world.paths()
    assert world.token_requests[0].path == "/tenant1/token"


async def test_openid_configuration_is_the_fallback_for_a_root_issuer() -> None:
    world = World(metadata_path="/.well-known/openid-configuration")
    async with running(world):
        await use(world, provider(world))
    assert world.paths()[2:4] == [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize(
    ("method", "secret_in_body", "basic"),
    [
        ("client_secret_basic", False, True),
        ("client_secret_post", True, False),
        ("none", False, False),
    ],
)
async def test_each_token_endpoint_auth_method(method: str, secret_in_body: bool, basic: bool) -> None:
    world = World(auth_methods=[method], registered_method=method)
    world.registered_secret = None if method == "none" else "dcr-secret"
    async with running(world):
        await use(world, provider(world))
    assert world.registrations[0].params["token_endpoint_auth_method"] == method
    token_request = world.token_requests[0]
    assert ("client_secret" in token_request.params) is secret_in_body
    header = token_request.headers.get("authorization", "")
    assert header.startswith("Basic ") is basic
    if basic:
        client_id, secret = map(unquote, base64.b64decode(header[6:]).decode().split(":"))
        assert (client_id, secret) == ("client-1", "dcr-secret")
    else:
        assert token_request.params["client_id"] == "client-1"


async def test_the_method_comes_from_the_server_metadata_when_registration_is_silent() -> None:
    async with running(World(auth_methods=["client_secret_post"])) as world:
        await use(world, provider(world))
    assert world.registrations[0].params["token_endpoint_auth_method"] == "client_secret_post"
    assert world.token_requests[0].params["client_secret"] == "dcr-secret"


async def test_pre_registered_credentials_skip_registration() -> None:
    async with running(World(registration=False)) as world:
        await use(world, provider(world, client_id="pre id", client_secret="pre:secret"))
    assert world.registrations == []
    header = world.token_requests[0].headers["authorization"]
    assert base64.b64decode(header[6:]).decode() == "pre%20id:pre%3Asecret"  # RFC 6749 §2.3.1


async def test_a_client_id_metadata_document_replaces_registration() -> None:
    async with running(World(cimd=True)) as world:
        await use(world, provider(world, client_metadata_url=CIMD_URL))
    assert world.registrations == []
    assert world.authorizations[0].params["client_id"] == CIMD_URL
    assert world.token_requests[0].params["client_id"] == CIMD_URL
    async with running(World(cimd=False)) as world:  # not advertised: dynamic registration
        await use(world, provider(world, client_metadata_url=CIMD_URL))
    assert len(world.registrations) == 1


async def test_client_credentials_grant() -> None:
    async with running(World(challenge_scope="mcp")) as world:
        auth = OAuthProvider(
            world.url, grant="client_credentials", client_id="svc", client_secret="pw"
        )
        await use(world, auth)
    assert world.authorizations == [] and world.registrations == []
    form = world.token_requests[0].params
    assert form["grant_type"] == "client_credentials" and form["scope"] == "mcp"
    assert form["resource"] == world.url


# -- scopes -----------------------------------------------------------------------------------


async def test_scope_comes_from_the_challenge_first() -> None:
    async with running(World(challenge_scope="mcp:basic", prm_scopes=["a", "b"])) as world:
        await use(world, provider(world, scope="configured"))
    assert world.authorizations[0].params["scope"] == "mcp:basic"


async def test_scope_then_from_scopes_supported() -> None:
    async with running(World(prm_scopes=["mcp:basic", "mcp:read"], as_scopes=["x"])) as world:
        await use(world, provider(world, scope="configured"))
    assert world.authorizations[0].params["scope"] == "mcp:basic mcp:read"


async def test_scope_is_omitted_when_nothing_defines_it() -> None:
    async with running(World(as_scopes=["as-only"])) as world:
        await use(world, provider(world))
    assert "scope" not in world.authorizations[0].params
    async with running(World()) as world:  # a configured default fills the gap
        await use(world, provider(world, scope="configured"))
    assert world.authorizations[0].params["scope"] == "configured"


@pytest.mark.parametrize(
    ("version", "as_scopes", "expected"),
    [
        ("2026-07-28", ["mcp", "offline_access"], "mcp offline_access"),
        ("2025-11-25", ["mcp", "offline_access"], "mcp"),
        ("2026-07-28", ["mcp"], "mcp"),
        (None, ["mcp", "offline_access"], "mcp"),
    ],
)
async def test_offline_access_only_when_revision_and_server_allow_it(
    version: str | None, as_scopes: list[str], expected: str
) -> None:
    world = World(prm_scopes=["mcp", "offline_access"], as_scopes=as_scopes)
    async with running(world):
        auth = provider(world)
        await auth.handle_challenge(401, {"resource_metadata": world.base + str(world.prm_path)}, version)
    query = world.authorizations[0].params
    assert query["scope"] == expected
    assert ("prompt" in query) is ("offline_access" in expected)


async def test_step_up_asks_for_the_union_and_retries_once() -> None:
    world = World(challenge_scope="mcp:basic", required={"tools/call": ["mcp:write"]})
    async with running(world):
        await use(world, provider(world))
    assert [a.params["scope"] for a in world.authorizations] == ["mcp:basic", "mcp:basic mcp:write"]
    assert len(world.registrations) == 1  # the registration is reused
    assert world.refused == 1  # tools/call was refused once, then retried with the new token


async def test_step_up_gives_up_after_one_retry() -> None:
    world = World(always_insufficient=True)
    async with running(world):
        with pytest.raises(OAuthError, match="still answers insufficient_scope after re-authorization"):
            await use(world, provider(world))
    assert len(world.authorizations) == 2  # the first authorization, then one step-up


# -- refresh ----------------------------------------------------------------------------------


async def test_an_expired_token_is_refreshed_without_a_new_authorization() -> None:
    now = [1000.0]
    world = World(refresh=True, lifetime=60)
    async with running(world):
        storage = MemoryTokenStorage()
        auth = provider(world, storage=storage, clock=lambda: now[0])
        await use(world, auth)
        first = storage.tokens
        assert first is not None and first.refresh_token and first.expires_at == 1060.0
        now[0] += 3600
        await use(world, auth)
    assert len(world.authorizations) == 1
    grants = [t.params["grant_type"] for t in world.token_requests]
    assert grants == ["authorization_code", "refresh_token"]
    assert world.token_requests[1].params["resource"] == world.url
    assert storage.tokens is not None and storage.tokens.access_token != first.access_token


def test_a_token_counts_as_expired_from_30_seconds_before_its_expiry() -> None:
    """The leeway: a token is refreshed 30 s before it expires (so it does not expire on the
    way), not earlier, not later; a token without ``expires_at`` never counts as expired."""
    tokens = Tokens("at", expires_at=1000.0)
    assert not tokens.expired(969.0)
    assert tokens.expired(970.0)
    assert tokens.expired(1000.0)
    assert not tokens.expired(999.0, leeway=0.0) and tokens.expired(1000.0, leeway=0.0)
    assert not Tokens("at").expired(1e12)


async def test_a_refused_refresh_falls_back_to_a_new_authorization() -> None:
    world = World(refresh=True)
    async with running(world):
        storage = MemoryTokenStorage()
        auth = provider(world, storage=storage)
        await use(world, auth)
        world.tokens.clear()  # the server forgets every access token...
        world.refresh_tokens.clear()  # ...and refresh token
        await use(world, auth)
    grants = [t.params["grant_type"] for t in world.token_requests]
    assert grants == ["authorization_code", "refresh_token", "authorization_code"]


async def test_a_401_with_a_refresh_token_refreshes_first() -> None:
    world = World(refresh=True)
    async with running(world):
        storage = MemoryTokenStorage()
        auth = provider(world, storage=storage)
        await use(world, auth)
        world.tokens.clear()  # access tokens revoked, refresh tokens still good
        await use(world, auth)
    grants = [t.params["grant_type"] for t in world.token_requests]
    assert grants == ["authorization_code", "refresh_token"]


# -- iss (RFC 9207) and issuer checks ---------------------------------------------------------


@pytest.mark.parametrize(
    ("supported", "mode"), [(True, "correct"), (None, "omit"), (False, "omit"), (None, "correct")]
)
async def test_iss_accepted(supported: bool | None, mode: str) -> None:
    async with running(World(iss_supported=supported, iss_mode=mode)) as world:
        await use(world, provider(world))
    assert len(world.token_requests) == 1


@pytest.mark.parametrize(
    ("supported", "mode", "message"),
    [
        (True, "wrong", "comes from issuer 'https://evil.example.com'"),
        (None, "wrong", "possible mix-up attack"),
        (True, "slash", r"comes from issuer 'http://127\.0\.0\.1:\d+/', not"),
        (True, "omit", "lacks the iss parameter"),
    ],
)
async def test_iss_refused(supported: bool | None, mode: str, message: str) -> None:
    async with running(World(iss_supported=supported, iss_mode=mode)) as world:
        with pytest.raises(OAuthError, match=message):
            await use(world, provider(world))
    assert world.authorizations and world.token_requests == []


async def test_metadata_naming_another_issuer_is_not_used() -> None:
    async with running(World(issuer_override="https://attacker.example.com")) as world:
        with pytest.raises(OAuthError, match=r"names issuer 'https://attacker\.example\.com'"):
            await use(world, provider(world))
    assert world.registrations == [] and world.authorizations == []


async def test_a_protected_resource_for_another_server_is_refused() -> None:
    async with running(World(prm_resource="https://evil.example.com/mcp")) as world:
        with pytest.raises(OAuthError, match=r"does not match .*refusing to authorize"):
            await use(world, provider(world))
    assert world.authorizations == [] and world.registrations == []


async def test_a_new_authorization_server_means_a_new_registration() -> None:
    world = World()
    async with running(world):
        storage = MemoryTokenStorage()
        auth = provider(world, storage=storage)
        await use(world, auth)
        assert storage.client is not None and storage.client.issuer == world.issuer
        # the resource moves to another issuer (a tenant path on the same host)
        world.as_path = "/tenant2"
        world.tokens.clear()
        await use(world, auth)
    assert [r.path for r in world.registrations] == ["/register", "/tenant2/register"]
    assert world.authorizations[-1].params["client_id"] == "client-2"
    assert storage.client is not None and storage.client.issuer == world.base + "/tenant2"


# -- errors the user can act on ---------------------------------------------------------------


async def test_no_registration_and_no_client_id_says_what_to_configure() -> None:
    async with running(World(registration=False)) as world:
        with pytest.raises(OAuthError, match="offers no dynamic client registration; configure a client_id"):
            await use(world, provider(world))


async def test_no_user_agent_says_so() -> None:
    async with running(World()) as world:
        with pytest.raises(OAuthError, match="no user agent is configured"):
            await use(world, OAuthProvider(world.url))


async def test_a_denied_authorization_is_reported() -> None:
    async with running(World(deny=True)) as world:
        with pytest.raises(OAuthError, match=r"authorization was refused: access_denied \(the user said no\)"):
            await use(world, provider(world))


async def test_a_wrong_state_is_refused() -> None:
    async def forger(url: str) -> str:
        landed = await auto_approve()(url)
        return re.sub(r"state=[^&]*", "state=forged", landed)

    async with running(World()) as world:
        with pytest.raises(OAuthError, match="wrong state"):
            await use(world, provider(world, user_agent=forger))
    assert world.token_requests == []


async def test_without_pkce_support_the_client_refuses() -> None:
    async with running(World(pkce_methods=None)) as world:
        with pytest.raises(OAuthError, match="does not advertise PKCE S256 support"):
            await use(world, provider(world))
    assert world.authorizations == []


async def test_a_failed_token_request_carries_the_server_error() -> None:
    async def no_verifier_match(url: str) -> str:
        landed = await auto_approve()(url)
        return re.sub(r"code=[^&]*", "code=unknown", landed)

    async with running(World()) as world:
        with pytest.raises(OAuthError, match=r"token request \(authorization_code\) to .*/token failed: HTTP 400 invalid_grant: PKCE check failed"):
            await use(world, provider(world, user_agent=no_verifier_match))


async def test_missing_metadata_is_reported_with_the_urls_tried() -> None:
    async with running(World(metadata_path="/nowhere")) as world:
        with pytest.raises(OAuthError, match=r"no authorization server metadata for .*tried .*openid-configuration"):
            await use(world, provider(world))


async def test_a_token_the_server_still_refuses_is_reported() -> None:
    world = World()
    async with running(world):
        auth = provider(world)
        original = world._token

        def forgetful(params: dict[str, str], headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
            status, extra, answer = original(params, headers)
            world.tokens.clear()  # issued, but never accepted
            return status, extra, answer

        world._token = forgetful  # type: ignore[method-assign]
        with pytest.raises(OAuthError, match="refused the new access token"):
            await use(world, auth)
    assert len(world.authorizations) == 1  # no loop


async def test_stored_tokens_are_used_without_any_discovery() -> None:
    world = World()
    async with running(world):
        storage = MemoryTokenStorage()
        world.tokens["kept"] = set()
        storage.tokens = Tokens("kept")
        await use(world, provider(world, storage=storage))
    assert world.paths() and all(p == "/mcp" for p in world.paths())


async def test_a_custom_redirect_uri_and_name_are_registered() -> None:
    metadata = ClientMetadata(client_name="tester", redirect_uris=("http://127.0.0.1:9/cb",))
    async with running(World()) as world:
        await use(world, provider(world, client_metadata=metadata))
    assert world.registrations[0].params["client_name"] == "tester"
    assert world.authorizations[0].params["redirect_uri"] == "http://127.0.0.1:9/cb"
    assert urlsplit(world.hits[5].params["redirect_uri"]).port == 9
