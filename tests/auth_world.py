"""Real parts for the token-verifier tests: signing keys made with ``cryptography`` (RSA,
EC P-256, Ed25519), tokens signed with PyJWT, and one ASGI app (run under uvicorn by
``ServerThread``) serving a JWKS that can rotate and an RFC 7662 introspection endpoint
built on Authlib's ``IntrospectionEndpoint``. Every request it gets is counted by path."""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import jwt
from authlib.oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import ClientMixin
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload, OAuth2Request
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

# Authlib refuses plain-HTTP URLs unless told this is a test (127.0.0.1 only, here).
os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")

ISSUER = "https://as.example.test"
AUDIENCE = "https://mcp.example.test/mcp"
INTROSPECTION_CLIENT = ("resource-server", "s3cret:with/odd chars")
ALGORITHM_OF_KIND = {"rsa": "RS256", "ec": "ES256", "ed25519": "EdDSA"}


@dataclass
class SigningKey:
    """A private key, its kid and algorithm, and its public JWK."""

    kid: str
    algorithm: str
    private: Any

    @classmethod
    def generate(cls, kind: str, kid: str) -> SigningKey:
        if kind == "rsa":
            private: Any = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        elif kind == "ec":
            private = ec.generate_private_key(ec.SECP256R1())
        else:
            private = ed25519.Ed25519PrivateKey.generate()
        return cls(kid, ALGORITHM_OF_KIND[kind], private)

    def public_jwk(self) -> dict[str, Any]:
        return {**_jwk_of(self.private.public_key()), "kid": self.kid, "use": "sig"}

    def sign(self, claims: dict[str, Any] | None = None, *, kid: str | None = "", **overrides: Any) -> str:
        """A token: default claims (iss, aud, sub, exp in an hour) with ``overrides``;
        ``kid=""`` puts this key's kid in the header, None leaves it out."""
        now = int(time.time())
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now + 3600, "iat": now,
                "client_id": "the-client", "scope": "notes:read notes:write"}
        body.update(claims or {})
        body.update(overrides)
        body = {name: value for name, value in body.items() if value is not None}
        headers = {} if kid is None else {"kid": kid or self.kid}
        return jwt.encode(body, self.private, algorithm=self.algorithm, headers=headers)


def _jwk_of(public_key: Any) -> dict[str, Any]:
    from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

    if isinstance(public_key, rsa.RSAPublicKey):
        return RSAAlgorithm.to_jwk(public_key, as_dict=True)
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        return ECAlgorithm.to_jwk(public_key, as_dict=True)
    return OKPAlgorithm.to_jwk(public_key, as_dict=True)


# -- the Authlib introspection endpoint -------------------------------------------------------


@dataclass
class IssuedToken:
    """An opaque token the authorization server knows."""

    subject: str
    scope: str
    expires_at: int
    revoked: bool = False
    audience: str | None = AUDIENCE
    issuer: str | None = ISSUER

    def is_expired(self) -> bool:
        return self.expires_at <= time.time()

    def is_revoked(self) -> bool:
        return self.revoked


class ResourceServerClient(ClientMixin):  # type: ignore[misc]
    """The MCP server's own registration at the authorization server."""

    def __init__(self, client_id: str, secret: str) -> None:
        self.client_id, self.secret = client_id, secret

    def get_client_id(self) -> str:
        return self.client_id

    def check_client_secret(self, client_secret: str) -> bool:
        return client_secret == self.secret

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == "client_secret_basic" and endpoint == "introspection"


class Introspection(IntrospectionEndpoint):  # type: ignore[misc]
    def __init__(self, server: Any, tokens: dict[str, IssuedToken]) -> None:
        super().__init__(server)
        self.tokens = tokens

    def query_token(self, token_string: str, token_type_hint: str | None) -> IssuedToken | None:
        return self.tokens.get(token_string)

    def check_permission(self, token: IssuedToken, client: Any, request: Any) -> bool:
        return bool(client.get_client_id() == INTROSPECTION_CLIENT[0])

    def introspect_token(self, token: IssuedToken) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "active": True, "sub": token.subject, "scope": token.scope, "client_id": "the-client",
            "token_type": "Bearer", "exp": token.expires_at,
        }
        if token.audience is not None:
            answer["aud"] = token.audience
        if token.issuer is not None:
            answer["iss"] = token.issuer
        return answer


class FormRequest(OAuth2Request):  # type: ignore[misc]
    """An Authlib request from a form POST."""

    def __init__(self, method: str, uri: str, headers: dict[str, str], form: dict[str, str]) -> None:
        super().__init__(method, uri, headers=headers)
        self._form = form
        self.payload = BasicOAuth2Payload(form)

    @property
    def args(self) -> dict[str, str]:
        return {}

    @property
    def form(self) -> dict[str, str]:
        return self._form


class AsgiAuthorizationServer(AuthorizationServer):  # type: ignore[misc]
    """Authlib's authorization server with just the introspection endpoint."""

    def __init__(self, tokens: dict[str, IssuedToken]) -> None:
        super().__init__()
        self.clients = {INTROSPECTION_CLIENT[0]: ResourceServerClient(*INTROSPECTION_CLIENT)}
        self.register_endpoint(Introspection(self, tokens))

    def query_client(self, client_id: str) -> ResourceServerClient | None:
        return self.clients.get(client_id)

    def save_token(self, token: Any, request: Any) -> None:
        raise NotImplementedError

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        return None

    def create_oauth2_request(self, request: Any) -> Any:
        return request

    def handle_response(self, status: int, body: Any, headers: Any) -> tuple[int, Any, Any]:
        return status, body, headers


# -- the app ---------------------------------------------------------------------------------


@dataclass
class IdentityProvider:
    """JWKS at ``/jwks``, introspection at ``/introspect``; ``hits`` counts requests by
    path; ``down`` makes every answer a 502 (the IdP unreachable behind its proxy)."""

    keys: list[SigningKey] = field(default_factory=list)
    tokens: dict[str, IssuedToken] = field(default_factory=dict)
    hits: Counter[str] = field(default_factory=Counter)
    down: bool = False

    def __post_init__(self) -> None:
        self.authorization_server = AsgiAuthorizationServer(self.tokens)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.hits[scope["path"]] += 1
        status, payload = 404, {"error": "not found"}
        if self.down:
            status, payload = 502, {"error": "bad gateway"}
        elif scope["path"] == "/jwks":
            status, payload = 200, {"keys": [key.public_jwk() for key in self.keys]}
        elif scope["path"] == "/introspect":
            headers = {k.decode().title(): v.decode() for k, v in scope["headers"]}
            form = dict(parse_qsl(body.decode()))
            request = FormRequest("POST", f"http://127.0.0.1{scope['path']}", headers, form)
            status, payload, _ = self.authorization_server.create_endpoint_response("introspection", request)
        import json

        data = json.dumps(payload).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": data})
