"""OAuth 2.1 for the Streamable HTTP client: MCP authorization, client side.

An :class:`OAuthProvider` rides on every request the HTTP client sends
(``connect_http(url, auth=OAuthProvider(url, ...))``). It attaches ``Authorization: Bearer``
once it holds a token and answers the server's challenges:

* ``401`` -> protected-resource metadata (RFC 9728: the ``resource_metadata`` of the
  challenge, else the well-known URI with the endpoint path inserted, then the root one),
  authorization-server metadata (RFC 8414 and OpenID Connect well-knowns in the order the
  MCP spec gives, issuer checked), client registration (pre-registered credentials, a
  Client ID Metadata Document URL, or dynamic registration per RFC 7591), then a refresh
  or a new grant: authorization code with PKCE (S256) through an injectable *user agent*,
  or client credentials, or a :class:`~typedmcp.auth.grants.Grant` (JWT bearer for workload
  identity, enterprise-managed authorization; ``auth/grants.py``). Every authorization and
  token request names the server with the RFC 8707 ``resource`` parameter. The request is then retried once.
* ``403`` with ``error="insufficient_scope"`` -> step-up: a new authorization asking for
  the union of what was asked before and what the challenge names, then one retry.

Scopes follow the spec's selection order: the challenge's ``scope``, else the protected
resource's ``scopes_supported``, else the configured default, else none at all.
``offline_access`` is only requested when the challenged request carried
``MCP-Protocol-Version`` 2026-07-28 or later, the authorization server lists it and the
client may use refresh tokens; otherwise it is dropped from the selection. Authorization responses are checked for ``state``
and for the RFC 9207 ``iss`` parameter (simple string comparison).

With ``dpop=`` the tokens are DPoP-bound (RFC 9449, ``auth/dpop.py``): every token and MCP
request carries a fresh proof, the token goes out as ``Authorization: DPoP``, and a
``use_dpop_nonce`` answer is retried with the server's nonce.

Failures a user can act on raise :class:`OAuthError` with a message naming what was tried.
Every metadata, registration and token request goes through aiohttp, by default through
the HTTP client of the connection the provider rides on (so its trust store, client
certificate, proxy and session reach the authorization server too), else through
:func:`http_fetch`; ``fetch=`` replaces both. Redirects are not followed.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs, urlencode, urlsplit

from pydantic_core import to_json

from ..transports.http_client import HttpAuth
from .discovery import (
    _origin,
    basic_credentials,
    canonical_resource,
    parse_challenge,
    pkce_pair,
    resource_covers,
    resource_metadata_urls,
    same_issuer,
    server_metadata_urls,
    union_scopes,
)
from .dpop import DPOP_NONCE_ERROR, DPoPKey, post_token
from .fetch import Fetch, HttpReply, OAuthError, UserAgent, auto_approve, fetch_through, http_fetch
from .grants import ASSERTION_TYPE_JWT, Grant, GrantRequest, PrivateKeyJwt
from .tokens import ClientMetadata, ClientRegistration, MemoryTokenStorage, Tokens, TokenStorage

if TYPE_CHECKING:
    import aiohttp

    from ..transports.http_aiohttp import HttpClient

__all__ = [
    "AuthMethod",
    "ClientMetadata",
    "ClientRegistration",
    "Fetch",
    "HttpAuth",
    "HttpReply",
    "MemoryTokenStorage",
    "OAuthError",
    "OAuthProvider",
    "TokenStorage",
    "Tokens",
    "UserAgent",
    "auto_approve",
    "canonical_resource",
    "http_fetch",
    "parse_challenge",
    "pkce_pair",
    "resource_covers",
    "resource_metadata_urls",
    "same_issuer",
    "server_metadata_urls",
    "union_scopes",
]

#: Revision from which ``offline_access`` may be requested (SEP-2207).
OFFLINE_ACCESS_SINCE = "2026-07-28"
OFFLINE_ACCESS = "offline_access"
S256 = "S256"
AuthMethod = Literal["client_secret_basic", "client_secret_post", "private_key_jwt", "none"]
AUTH_METHODS: tuple[AuthMethod, ...] = ("client_secret_basic", "client_secret_post", "none")


# -- pure helpers --------------------------------------------------------------------------


def _describe(reply: HttpReply) -> str:
    body = reply.json()
    if isinstance(body, dict) and "error" in body:
        detail = body.get("error_description")
        return f"HTTP {reply.status} {body['error']}" + (f": {detail}" if detail else "")
    text = reply.body[:200].decode("utf-8", "replace").strip()
    return f"HTTP {reply.status}" + (f": {text}" if text else "")


# -- the provider --------------------------------------------------------------------------


@dataclass
class _Discovery:
    """What was learnt about the protected resource and its authorization server."""

    resource: str
    scopes_supported: list[str] | None = None
    issuer: str = ""
    metadata: dict[str, Any] | None = None  # None: the server publishes none (legacy defaults)

    def endpoint(self, name: str, default_path: str) -> str:
        value = (self.metadata or {}).get(name)
        return value if isinstance(value, str) and value else _origin(self.issuer) + default_path


class OAuthProvider:
    """Client-side OAuth 2.1 for one MCP server (see the module docstring).

    ``grant`` is ``"authorization_code"`` (needs ``user_agent``), ``"client_credentials"``
    (needs ``client_id`` and ``client_secret`` or ``client_assertion``), or a
    :class:`~typedmcp.auth.grants.Grant` such as ``JwtBearer(assertion=...)`` or
    ``EnterpriseManaged(...)``. ``client_assertion``: a :class:`PrivateKeyJwt` that
    authenticates the client (``private_key_jwt``). ``dpop``: True (a generated key) or a
    :class:`DPoPKey` for DPoP-bound tokens. Credentials: ``client_id``/``client_secret``
    (pre-registered), else ``client_metadata_url`` when the authorization server accepts
    Client ID Metadata Documents, else dynamic registration with ``client_metadata``.
    """

    def __init__(
        self,
        server_url: str,
        *,
        user_agent: UserAgent | None = None,
        grant: Literal["authorization_code", "client_credentials"] | Grant = "authorization_code",
        client_id: str | None = None,
        client_secret: str | None = None,
        client_assertion: PrivateKeyJwt | None = None,
        dpop: bool | DPoPKey = False,
        token_endpoint_auth_method: AuthMethod | None = None,
        client_metadata_url: str | None = None,
        client_metadata: ClientMetadata | None = None,
        scope: str | None = None,
        storage: TokenStorage | None = None,
        fetch: Fetch | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if client_metadata_url is not None:
            parts = urlsplit(client_metadata_url)
            if parts.scheme != "https" or parts.path in ("", "/"):
                raise ValueError(
                    f"client_metadata_url must be an https URL with a path, not {client_metadata_url!r}"
                )
        if grant == "client_credentials" and not client_id:
            raise ValueError("the client_credentials grant needs a client_id (and a secret or assertion)")
        if client_assertion is not None and not client_id:
            raise ValueError("client_assertion (private_key_jwt) needs the client_id it was registered for")
        self.client_assertion = client_assertion
        self.dpop: DPoPKey | None = DPoPKey() if dpop is True else (dpop or None)
        self.server_url = server_url
        self.user_agent = user_agent
        self.grant = grant
        self.client_metadata_url = client_metadata_url
        self.client_metadata = client_metadata or ClientMetadata()
        self.default_scope = scope
        self.storage: TokenStorage = storage or MemoryTokenStorage()
        #: how metadata, registration and token requests are sent (None: through the HTTP
        #: client of the connection this provider rides on, else :func:`http_fetch`)
        self.fetch = fetch
        self._http: HttpClient | None = None
        self.clock = clock
        self._preregistered = (
            ClientRegistration(
                client_id,
                client_secret,
                token_endpoint_auth_method or ("private_key_jwt" if client_assertion else None),
            )
            if client_id
            else None
        )
        self._discovery: _Discovery | None = None
        self._requested_scope: str | None = None
        self._lock = asyncio.Lock()

    # -- the transport hook ----------------------------------------------------------------

    async def send(
        self, http: HttpClient, method: str, body: bytes, headers: dict[str, str]
    ) -> aiohttp.ClientResponse:
        """Send with the current token; on a 401, or a 403 ``insufficient_scope``,
        authorize and retry. Each kind of challenge is answered at most once per request:
        a repeat raises :class:`OAuthError` rather than looping."""
        self._http = http  # the flow's own requests go through it too (trust, proxy)
        answered: set[int] = set()
        nonce_retries = 0
        while True:
            sent = await self.authorization()
            if sent:
                http.headers["Authorization"] = sent
            else:
                http.headers.pop("Authorization", None)
            sending = headers
            if self.dpop is not None:
                token = sent.split(" ", 1)[1] if sent else None
                sending = {**headers, "DPoP": self.dpop.proof(method, http.url, token)}
            response = await http.request(method, body, sending)
            if response.status not in (401, 403):
                return response
            challenge = parse_challenge(response.headers.get("WWW-Authenticate", ""))
            if (
                self.dpop is not None
                and challenge.get("error") == DPOP_NONCE_ERROR
                and nonce_retries < 2
                and self.dpop.learn_nonce(http.url, response.headers)
            ):
                await http.read(response)
                nonce_retries += 1
                continue  # RFC 9449 §9: the same request, with a proof carrying the nonce
            if response.status == 403 and challenge.get("error") != "insufficient_scope":
                return response  # forbidden for another reason: not ours to fix
            reply = HttpReply(response.status, response.headers, await http.read(response))
            if response.status in answered:
                raise OAuthError(self._refused(reply, challenge))
            answered.add(response.status)
            async with self._lock:
                if sent != await self.authorization() and response.status == 401:
                    continue  # another request re-authorized meanwhile
                await self.handle_challenge(
                    response.status, challenge, headers.get("MCP-Protocol-Version")
                )

    async def _fetch(
        self, method: str, url: str, body: bytes, headers: Mapping[str, str]
    ) -> HttpReply:
        """One request of the flow: through ``fetch=``, else the connection's client."""
        if self.fetch is not None:
            return await self.fetch(method, url, body, headers)
        if self._http is not None:
            return await fetch_through(self._http, method, url, body, headers)
        return await http_fetch(method, url, body, headers)

    def _refused(self, reply: HttpReply, challenge: Mapping[str, str]) -> str:
        if reply.status == 403:
            return (
                f"{self.server_url} still answers insufficient_scope after re-authorization "
                f"(it asks for scope {challenge.get('scope', '?')!r}); giving up"
            )
        return f"{self.server_url} refused the new access token ({_describe(reply)})"

    async def authorization(self) -> str | None:
        """The ``Authorization`` header value to send now (refreshing an expired token)."""
        tokens = await self.storage.load_tokens()
        if tokens is not None and tokens.expired(self.clock()):
            tokens = await self._refresh(tokens) if tokens.refresh_token else None
            if tokens is None:
                await self.storage.save_tokens(None)
        if tokens is None:
            return None
        scheme = "DPoP" if tokens.token_type.lower() == "dpop" else "Bearer"
        return f"{scheme} {tokens.access_token}"

    # -- the flow --------------------------------------------------------------------------

    async def handle_challenge(
        self, status: int, challenge: Mapping[str, str], version: str | None = None
    ) -> Tokens:
        """Answer one challenge (``status`` 401 or 403) and store the new tokens."""
        step_up = status == 403
        if not step_up or self._discovery is None:
            await self._discover(challenge.get("resource_metadata"), version)
        discovery = self._discovery
        assert discovery is not None
        tokens = await self.storage.load_tokens()
        if not step_up and tokens is not None and tokens.refresh_token:
            refreshed = await self._refresh(tokens)
            if refreshed is not None:
                return refreshed
        scope = self._select_scope(challenge.get("scope"), version)
        if step_up:
            granted = tokens.scope if tokens else None
            scope = union_scopes(self._requested_scope, granted, scope)
        self._requested_scope = scope
        client = await self._client(scope)
        if not isinstance(self.grant, str):
            form = await self.grant.token_form(
                GrantRequest(
                    (discovery.metadata or {}).get("issuer", discovery.issuer),
                    discovery.resource,
                    scope,
                    self._fetch,
                )
            )
        elif self.grant == "client_credentials":
            form = {"grant_type": "client_credentials"}
        else:
            code, verifier, redirect_uri = await self._authorize(client, scope)
            form = {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": verifier,
            }
        if scope and self.grant != "authorization_code":
            form["scope"] = scope
        return await self._token_request(client, form, scope)

    async def _discover(self, hinted: str | None, version: str | None) -> None:
        """Protected-resource metadata, then authorization-server metadata."""
        request_headers = {"Accept": "application/json"}
        if version:
            request_headers["MCP-Protocol-Version"] = version
        prm: dict[str, Any] | None = None
        tried = resource_metadata_urls(self.server_url, hinted)
        for url in tried:
            reply = await self._fetch("GET", url, b"", request_headers)
            document = reply.json() if reply.status == 200 else None
            if isinstance(document, dict):
                prm = document
                break
            if reply.status >= 500:
                raise OAuthError(f"protected resource metadata at {url}: {_describe(reply)}")
        resource = canonical_resource(self.server_url)
        if prm is None:
            # No RFC 9728 metadata (2025-03-26 servers): the server's origin is the issuer.
            discovery = _Discovery(resource, issuer=_origin(self.server_url))
        else:
            named = prm.get("resource")
            if isinstance(named, str) and named:
                if not resource_covers(named, self.server_url):
                    raise OAuthError(
                        f"the protected resource metadata names resource {named!r}, which "
                        f"does not match {self.server_url}; refusing to authorize for it"
                    )
                resource = canonical_resource(named)
            servers = prm.get("authorization_servers")
            if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
                raise OAuthError(
                    f"the protected resource metadata of {self.server_url} lists no authorization_servers"
                )
            scopes = prm.get("scopes_supported")
            discovery = _Discovery(
                resource,
                scopes_supported=[str(s) for s in scopes] if isinstance(scopes, list) else None,
                issuer=servers[0],
            )
        discovery.metadata = await self._server_metadata(discovery.issuer, request_headers)
        if discovery.metadata is None and prm is not None:
            raise OAuthError(
                f"no authorization server metadata for {discovery.issuer} "
                f"(tried {', '.join(server_metadata_urls(discovery.issuer))})"
            )
        previous = self._discovery
        self._discovery = discovery
        if previous is not None and previous.issuer != discovery.issuer:
            await self.storage.save_tokens(None)  # tokens of the old server are of no use
            self._requested_scope = None
        client = await self.storage.load_client()
        if client is not None and client.issuer is not None and not same_issuer(client.issuer, discovery.issuer):
            await self.storage.save_client(None)  # bound to another authorization server
            await self.storage.save_tokens(None)

    async def _server_metadata(
        self, issuer: str, request_headers: Mapping[str, str]
    ) -> dict[str, Any] | None:
        for url in server_metadata_urls(issuer):
            reply = await self._fetch("GET", url, b"", request_headers)
            document = reply.json() if reply.status == 200 else None
            if not isinstance(document, dict):
                if reply.status >= 500:
                    raise OAuthError(f"authorization server metadata at {url}: {_describe(reply)}")
                continue
            named = document.get("issuer")
            if not isinstance(named, str) or not same_issuer(named, issuer):
                raise OAuthError(
                    f"the authorization server metadata at {url} names issuer {named!r}, "
                    f"not {issuer!r}; refusing to use it"
                )
            return document
        return None

    def _select_scope(self, challenged: str | None, version: str | None) -> str | None:
        """The challenge's scope, else the resource's scopes_supported, else the default;
        ``offline_access`` added or removed by what the server and revision allow."""
        discovery = self._discovery
        assert discovery is not None
        if challenged:
            scope: str | None = challenged
        elif discovery.scopes_supported is not None:
            scope = " ".join(discovery.scopes_supported) or None
        else:
            scope = self.default_scope
        if scope is None:
            return None
        words = [s for s in scope.split() if s != OFFLINE_ACCESS]
        offered = (discovery.metadata or {}).get("scopes_supported")
        if (
            isinstance(offered, list)
            and OFFLINE_ACCESS in offered
            and "refresh_token" in self.client_metadata.grant_types
            and self.grant == "authorization_code"
            and version is not None
            and version >= OFFLINE_ACCESS_SINCE
        ):
            words.append(OFFLINE_ACCESS)
        return " ".join(words) or None

    async def _client(self, scope: str | None) -> ClientRegistration:
        """Pre-registered credentials, a stored registration, a metadata-document client
        id, or a new dynamic registration, in that order."""
        discovery = self._discovery
        assert discovery is not None
        metadata = discovery.metadata or {}
        if self._preregistered is not None:
            return self._preregistered
        if not isinstance(self.grant, str):
            return ClientRegistration("", None, "none")  # the assertion grant needs no client
        stored = await self.storage.load_client()
        if stored is not None:
            return stored
        if self.client_metadata_url and metadata.get("client_id_metadata_document_supported") is True:
            client = ClientRegistration(self.client_metadata_url, None, "none")
            await self.storage.save_client(client)
            return client
        endpoint = metadata.get("registration_endpoint")
        if not isinstance(endpoint, str) or not endpoint:
            if discovery.metadata is not None:
                raise OAuthError(
                    f"the authorization server {discovery.issuer} offers no dynamic client "
                    "registration; configure a client_id (and client_secret) for it"
                    + (" or a client_metadata_url" if not self.client_metadata_url else "")
                )
            endpoint = _origin(discovery.issuer) + "/register"  # 2025-03-26 default
        wanted = self._preferred_method(metadata, secret=True)
        document = self.client_metadata.document(wanted, scope)
        reply = await self._fetch(
            "POST",
            endpoint,
            to_json(document),
            {"Content-Type": "application/json", "Accept": "application/json"},
        )
        answer = reply.json()
        if reply.status not in (200, 201) or not isinstance(answer, dict):
            raise OAuthError(f"dynamic client registration at {endpoint} failed: {_describe(reply)}")
        client_id = answer.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise OAuthError(f"dynamic client registration at {endpoint} returned no client_id")
        secret = answer.get("client_secret")
        method = answer.get("token_endpoint_auth_method")
        client = ClientRegistration(
            client_id,
            secret if isinstance(secret, str) else None,
            method if isinstance(method, str) else None,
            issuer=discovery.issuer,
        )
        await self.storage.save_client(client)
        return client

    @staticmethod
    def _preferred_method(metadata: Mapping[str, Any], *, secret: bool) -> AuthMethod:
        """The token-endpoint auth method to use when the registration does not say."""
        supported = metadata.get("token_endpoint_auth_methods_supported")
        if not isinstance(supported, list):
            return "client_secret_basic" if secret else "none"  # RFC 8414's default
        for method in AUTH_METHODS if secret else ("none",):
            if method in supported:
                return method
        return "none"

    async def _authorize(self, client: ClientRegistration, scope: str | None) -> tuple[str, str, str]:
        """Send the user to the authorization endpoint; return (code, verifier, redirect URI)."""
        discovery = self._discovery
        assert discovery is not None
        if self.user_agent is None:
            raise OAuthError(
                f"{self.server_url} needs authorization but no user agent is configured "
                "(pass user_agent= to OAuthProvider)"
            )
        if discovery.metadata is not None:
            methods = discovery.metadata.get("code_challenge_methods_supported")
            if not isinstance(methods, list) or S256 not in methods:
                raise OAuthError(
                    f"the authorization server {discovery.issuer} does not advertise PKCE "
                    "S256 support (code_challenge_methods_supported); refusing to proceed"
                )
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(24)
        redirect_uri = self.client_metadata.redirect_uris[0]
        query = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": S256,
            "resource": discovery.resource,
        }
        if scope:
            query["scope"] = scope
            if OFFLINE_ACCESS in scope.split():
                query["prompt"] = "consent"
        endpoint = discovery.endpoint("authorization_endpoint", "/authorize")
        separator = "&" if "?" in endpoint else "?"
        landed = await self.user_agent(endpoint + separator + urlencode(query))
        answer = {k: v[0] for k, v in parse_qs(urlsplit(landed).query).items()}
        if "error" in answer:
            detail = answer.get("error_description")
            raise OAuthError(
                f"authorization was refused: {answer['error']}" + (f" ({detail})" if detail else "")
            )
        if answer.get("state") != state:
            raise OAuthError("the authorization response carries the wrong state; ignoring it")
        self._check_iss(answer.get("iss"))
        code = answer.get("code")
        if not code:
            raise OAuthError("the authorization response carries no code")
        return code, verifier, redirect_uri

    def _check_iss(self, iss: str | None) -> None:
        """RFC 9207: a present ``iss`` must equal the recorded issuer exactly; an absent
        one is refused when the server advertised that it sends it."""
        discovery = self._discovery
        assert discovery is not None
        metadata = discovery.metadata or {}
        recorded = metadata.get("issuer", discovery.issuer)
        if iss is not None:
            if iss != recorded:
                raise OAuthError(
                    f"the authorization response comes from issuer {iss!r}, not {recorded!r}; "
                    "refusing it (possible mix-up attack)"
                )
        elif metadata.get("authorization_response_iss_parameter_supported") is True:
            raise OAuthError(
                f"the authorization response lacks the iss parameter that {recorded} "
                "advertises; refusing it"
            )

    async def _token_request(
        self, client: ClientRegistration, form: dict[str, str], scope: str | None
    ) -> Tokens:
        discovery = self._discovery
        assert discovery is not None
        form = {**form, "resource": discovery.resource}
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        method = client.token_endpoint_auth_method or self._preferred_method(
            discovery.metadata or {}, secret=client.client_secret is not None
        )
        if method == "client_secret_basic" and client.client_secret is not None:
            headers["Authorization"] = basic_credentials(client.client_id, client.client_secret)
        elif method == "client_secret_post" and client.client_secret is not None:
            form.update(client_id=client.client_id, client_secret=client.client_secret)
        elif method == "private_key_jwt" and self.client_assertion is not None:
            audience = (discovery.metadata or {}).get("issuer", discovery.issuer)
            form.update(
                client_id=client.client_id,
                client_assertion_type=ASSERTION_TYPE_JWT,
                client_assertion=self.client_assertion.assertion(client.client_id, audience),
            )
        elif method in ("none", "client_secret_basic", "client_secret_post"):
            if client.client_id:
                form["client_id"] = client.client_id
        else:
            raise OAuthError(
                f"token endpoint auth method {method!r} is not supported by this client; "
                f"use one of {', '.join(AUTH_METHODS)} (token_endpoint_auth_method=), or "
                "private_key_jwt with client_assertion=PrivateKeyJwt(key)"
            )
        endpoint = discovery.endpoint("token_endpoint", "/token")
        reply = await post_token(self._fetch, self.dpop, endpoint, urlencode(form).encode(), headers)
        answer = reply.json()
        if reply.status != 200 or not isinstance(answer, dict) or not answer.get("access_token"):
            raise OAuthError(f"the token request ({form['grant_type']}) to {endpoint} failed: {_describe(reply)}")
        token_type = str(answer.get("token_type", "Bearer"))
        if token_type.lower() not in (("bearer", "dpop") if self.dpop else ("bearer",)):
            raise OAuthError(
                f"the token endpoint issued a {token_type!r} token; "
                + ("only Bearer and DPoP are supported" if self.dpop else "only Bearer is supported (DPoP with dpop=True)")
            )
        lifetime = answer.get("expires_in")
        if isinstance(lifetime, str) and lifetime.isdigit():
            lifetime = int(lifetime)  # some servers send it as a string
        previous = await self.storage.load_tokens()
        tokens = Tokens(
            access_token=str(answer["access_token"]),
            token_type=token_type,
            refresh_token=answer.get("refresh_token")
            or (previous.refresh_token if previous and form["grant_type"] == "refresh_token" else None),
            scope=answer.get("scope") or scope,
            expires_at=self.clock() + float(lifetime) if isinstance(lifetime, (int, float)) else None,
        )
        await self.storage.save_tokens(tokens)
        return tokens

    async def _refresh(self, tokens: Tokens) -> Tokens | None:
        """Exchange the refresh token; None (tokens dropped) when the server refuses it."""
        client = self._preregistered or await self.storage.load_client()
        if client is None or tokens.refresh_token is None:
            return None
        if self._discovery is None:
            with contextlib.suppress(OAuthError):
                await self._discover(None, None)
            if self._discovery is None:
                return None
        form = {"grant_type": "refresh_token", "refresh_token": tokens.refresh_token}
        try:
            return await self._token_request(client, form, tokens.scope)
        except OAuthError:
            await self.storage.save_tokens(None)
            return None

    async def logout(self) -> None:
        """Forget the tokens (the registration is kept)."""
        await self.storage.save_tokens(None)
