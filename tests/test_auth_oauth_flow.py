"""The official SDK client's whole OAuth flow (mcp 2.3.0, ``OAuthClientProvider``) against our
server guarded by ``BearerAuth.jwt`` and an authorization server built on Authlib (issue 20,
requirement 6): authorization code with PKCE (S256), the ``resource`` parameter (RFC 8707),
and JWT access tokens (RFC 9068, Authlib's ``JWTBearerTokenGenerator``) checked against the
authorization server's JWKS. Both run under uvicorn on 127.0.0.1.

The client starts without a token: our 401 names the RFC 9728 document, which names the
authorization server; the client (the SDK's, then the runtime's own ``OAuthProvider``) reads its RFC 8414 metadata, sends the user to
``/authorize`` (approved at once here, as a logged-in user would be), trades the code for a
token at ``/token`` and calls the tool, which sees the user as its principal. The token's
``aud`` is the ``resource`` the client asked for, so a client that left it out would be
refused.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import parse_qs, parse_qsl, urlsplit

import httpx2
import pytest
from auth_world import FormRequest, SigningKey
from authlib.oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import ClientMixin, grants
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from jwt.algorithms import RSAAlgorithm
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl
from test_auth_http import app as guarded_app
from test_http_server import ServerThread

from typedmcp import http_app
from typedmcp.auth.bearer import BearerAuth

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

CLIENT_ID = "sdk-client"
REDIRECT_URI = "http://localhost:3030/callback"
USER = "erin"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# -- the authorization server ---------------------------------------------------------------


@dataclass
class Code:
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    code_challenge: str | None
    code_challenge_method: str | None
    user: str

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def is_expired(self) -> bool:
        return False


@dataclass
class User:
    name: str

    def get_user_id(self) -> str:
        return self.name


class PublicClient(ClientMixin):  # type: ignore[misc]
    """The SDK client, registered beforehand: a public client (PKCE, no secret)."""

    def get_client_id(self) -> str:
        return CLIENT_ID

    def get_default_redirect_uri(self) -> str:
        return REDIRECT_URI

    def get_allowed_scope(self, scope: str) -> str:
        return scope

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri == REDIRECT_URI

    def check_client_secret(self, client_secret: str) -> bool:
        return False

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == "none"

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in ("authorization_code", "refresh_token")


class CodeGrant(grants.AuthorizationCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS: ClassVar[list[str]] = ["none"]

    def save_authorization_code(self, code: str, request: Any) -> None:
        data = request.payload.data
        self.server.codes[code] = Code(
            code, CLIENT_ID, data["redirect_uri"], data.get("scope", ""),
            data.get("code_challenge"), data.get("code_challenge_method"), request.user.name,
        )

    def query_authorization_code(self, code: str, client: Any) -> Code | None:
        found: Code | None = self.server.codes.get(code)
        return found if found is not None and found.client_id == client.get_client_id() else None

    def delete_authorization_code(self, authorization_code: Code) -> None:
        self.server.codes.pop(authorization_code.code, None)

    def authenticate_user(self, authorization_code: Code) -> User:
        return User(authorization_code.user)


class ResourceTokens(JWTBearerTokenGenerator):  # type: ignore[misc]
    """RFC 9068 access tokens whose ``aud`` is the token request's ``resource`` (RFC 8707;
    Authlib leaves that to the integration), signed with the server's RSA key."""

    def __init__(self, issuer: str, key: SigningKey) -> None:
        super().__init__(issuer, alg="RS256")
        self.key = key
        self.resource: str | None = None  # of the token request being served

    def get_jwks(self) -> dict[str, Any]:
        private = RSAAlgorithm.to_jwk(self.key.private, as_dict=True)
        return {"keys": [{**private, "kid": self.key.kid, "alg": "RS256", "use": "sig"}]}

    def get_audiences(self, client: Any, user: Any, scope: Any) -> str:
        return self.resource or str(client.get_client_id())


class AsgiAuthorizationServer(AuthorizationServer):  # type: ignore[misc]
    def __init__(self, issuer: str, key: SigningKey) -> None:
        super().__init__(scopes_supported=["notes:read", "notes:write"])
        self.codes: dict[str, Code] = {}
        self.tokens = ResourceTokens(issuer, key)
        self.register_token_generator("default", self.tokens)
        self.register_grant(CodeGrant, [CodeChallenge(required=True)])

    def query_client(self, client_id: str) -> PublicClient | None:
        return PublicClient() if client_id == CLIENT_ID else None

    def save_token(self, token: Any, request: Any) -> None:
        return None

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        return None

    def create_oauth2_request(self, request: Any) -> Any:
        return request

    def handle_response(self, status: int, body: Any, headers: Any) -> tuple[int, Any, Any]:
        return status, body, headers


class QueryRequest(FormRequest):
    """An Authlib request from a GET with a query string."""

    def __init__(self, uri: str, headers: dict[str, str], query: dict[str, str]) -> None:
        super().__init__("GET", uri, headers, query)

    @property
    def args(self) -> dict[str, str]:
        return self._form


@dataclass
class LoginServer:
    """RFC 8414 metadata, ``/authorize`` (the user already logged in: approved at once),
    ``/token`` and ``/jwks``; ``requests`` logs each (method, path, params)."""

    key: SigningKey
    base: str = ""
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    server: AsgiAuthorizationServer | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        assert self.server is not None
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        path, method = scope["path"], scope["method"]
        headers = {k.decode().title(): v.decode() for k, v in scope["headers"]}
        query = dict(parse_qsl(scope["query_string"].decode()))
        form = dict(parse_qsl(body.decode()))
        self.requests.append((method, path, query if method == "GET" else form))
        status, payload, extra = 404, {"error": "not_found"}, []
        if path == "/.well-known/oauth-authorization-server":
            status, payload = 200, {
                "issuer": self.base,
                "authorization_endpoint": f"{self.base}/authorize",
                "token_endpoint": f"{self.base}/token",
                "jwks_uri": f"{self.base}/jwks",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "scopes_supported": ["notes:read", "notes:write"],
            }
        elif path == "/jwks":
            status, payload = 200, {"keys": [self.key.public_jwk()]}
        elif path == "/authorize":
            request = QueryRequest(f"{self.base}/authorize", headers, query)
            status, payload, extra = self.server.create_authorization_response(request, grant_user=User(USER))
        elif path == "/token":
            self.server.tokens.resource = form.get("resource")
            request = FormRequest("POST", f"{self.base}/token", headers, form)
            status, payload, extra = self.server.create_token_response(request)
        data = json.dumps(payload).encode() if payload is not None and not isinstance(payload, str) else (payload or "").encode()
        response_headers = [(b"content-type", b"application/json")]
        response_headers += [(name.lower().encode(), value.encode()) for name, value in extra or []]
        await send({"type": "http.response.start", "status": status, "headers": response_headers})
        await send({"type": "http.response.body", "body": data})


# -- the SDK client's side ------------------------------------------------------------------


class Storage:
    """The SDK's token storage, with the client registered beforehand."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client = OAuthClientInformationFull(
            client_id=CLIENT_ID, redirect_uris=[AnyUrl(REDIRECT_URI)], token_endpoint_auth_method="none",
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
        )

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """The user agent: follows the authorization URL and keeps where it was sent back to."""

    def __init__(self) -> None:
        self.callback: dict[str, list[str]] = {}
        self.authorization_urls: list[str] = []

    async def redirect(self, url: str) -> None:
        self.authorization_urls.append(url)
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            reply = await http.get(url)
        assert reply.status_code == 302, reply.text
        location = reply.headers["location"]
        assert location.startswith(REDIRECT_URI)
        self.callback = parse_qs(urlsplit(location).query)

    async def returned(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=self.callback["code"][0], state=self.callback.get("state", [None])[0])


@pytest.fixture(scope="module")
def login_server() -> Iterator[LoginServer]:
    login = LoginServer(SigningKey.generate("rsa", "as-key-1"))
    with ServerThread(login) as server:
        login.base = server.url.removesuffix("/mcp")
        login.server = AsgiAuthorizationServer(login.base, login.key)
        yield login


async def test_the_sdk_client_logs_in_with_pkce_and_calls_the_tool_as_the_user(login_server: LoginServer) -> None:
    issuer = login_server.base
    auth = BearerAuth.jwt(issuer=issuer, audience="http://placeholder.invalid/mcp", jwks_url=f"{issuer}/jwks")
    login_server.requests.clear()
    with ServerThread(http_app(guarded_app, auth=auth)) as mcp_server:
        assert auth.verifier is not None
        auth.verifier.audiences = [mcp_server.url]  # type: ignore[attr-defined]  # (its port: known now)
        auth.resource_metadata.pop("resource", None)  # the endpoint's URL, as requested
        browser, storage = Browser(), Storage()
        provider = OAuthClientProvider(
            server_url=mcp_server.url,
            client_metadata=OAuthClientMetadata(redirect_uris=[AnyUrl(REDIRECT_URI)], scope="notes:read"),
            storage=storage,
            redirect_handler=browser.redirect,
            callback_handler=browser.returned,
        )
        started = time.time()
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30) as http,
            streamable_http_client(mcp_server.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("whoami", {})
    # the flow on the wire: PKCE S256 at /authorize, the verifier and resource at /token
    (authorize,) = [params for method, path, params in login_server.requests if path == "/authorize"]
    assert result.structured_content == {  # the scopes the client asked for (it chooses them)
        "subject": USER, "issuer": issuer, "client_id": CLIENT_ID, "scopes": sorted(authorize["scope"].split()),
    }
    assert authorize["code_challenge_method"] == "S256" and authorize["code_challenge"]
    assert authorize["resource"] == mcp_server.url
    (token_request,) = [params for method, path, params in login_server.requests if path == "/token"]
    assert token_request["grant_type"] == "authorization_code" and token_request["code_verifier"]
    assert token_request["resource"] == mcp_server.url
    assert storage.tokens is not None
    import jwt

    claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert claims["aud"] == mcp_server.url and claims["iat"] >= int(started) - 1
    assert jwt.get_unverified_header(storage.tokens.access_token)["typ"] == "at+jwt"


async def test_the_runtime_client_logs_in_with_pkce_and_calls_the_tool_as_the_user(login_server: LoginServer) -> None:
    from typedmcp.auth.fetch import auto_approve
    from typedmcp.auth.oauth import OAuthProvider
    from typedmcp.auth.tokens import ClientMetadata
    from typedmcp.connecting import connect_http

    issuer = login_server.base
    auth = BearerAuth.jwt(issuer=issuer, audience="http://placeholder.invalid/mcp", jwks_url=f"{issuer}/jwks")
    login_server.requests.clear()
    with ServerThread(http_app(guarded_app, auth=auth)) as mcp_server:
        assert auth.verifier is not None
        auth.verifier.audiences = [mcp_server.url]  # type: ignore[attr-defined]  # (its port: known now)
        auth.resource_metadata.pop("resource", None)
        provider = OAuthProvider(
            mcp_server.url, user_agent=auto_approve(), client_id=CLIENT_ID, token_endpoint_auth_method="none",
            client_metadata=ClientMetadata(redirect_uris=(REDIRECT_URI,)), scope="notes:write",
        )
        async with connect_http(mcp_server.url, auth=provider) as client:
            result = await client.call_tool(name="whoami", arguments={})
    assert result.structured_content == {
        "subject": USER, "issuer": issuer, "client_id": CLIENT_ID, "scopes": ["notes:write"],
    }
    (authorize,) = [params for method, path, params in login_server.requests if path == "/authorize"]
    assert authorize["code_challenge_method"] == "S256" and authorize["resource"] == mcp_server.url
