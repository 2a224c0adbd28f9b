"""Grants without a user: the private_key_jwt client assertion, the enterprise-managed token
exchange request, and the errors a misconfiguration gives. Each grant's whole flow runs
against the conformance suite's authorization servers in
tests/test_client_auth_conformance.py."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from pydantic_core import to_json
from test_oauth_client import World, provider, running, use

from typedmcp import OAuthProvider
from typedmcp.auth.client_credentials import ClientCredentials
from typedmcp.auth.fetch import OAuthError
from typedmcp.auth.grants import EnterpriseManaged, GrantRequest, JwtBearer, PrivateKeyJwt
from typedmcp.transports.http_wire import HttpReply


def pem_key() -> tuple[str, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return pem.decode(), key.public_key()


def test_a_client_assertion_is_signed_for_the_issuer_with_fresh_ids() -> None:
    pem, public = pem_key()
    signer = PrivateKeyJwt(pem, clock=lambda: 1_000_000.0)
    token = signer.assertion("client-7", "https://as.example")
    claims = jwt.decode(
        token, public, algorithms=["ES256"], audience="https://as.example",
        options={"verify_exp": False, "verify_iat": False},
    )
    assert (claims["iss"], claims["sub"]) == ("client-7", "client-7")
    assert (claims["iat"], claims["exp"]) == (1_000_000, 1_000_300)
    assert jwt.get_unverified_header(token)["alg"] == "ES256"
    again = jwt.decode(signer.assertion("client-7", "https://as.example"), options={"verify_signature": False})
    assert again["jti"] != claims["jti"]


def test_a_key_that_is_not_pem_is_refused_with_what_to_pass() -> None:
    with pytest.raises(ValueError, match=r"not a PEM private key.*PKCS#8 PEM text"):
        PrivateKeyJwt("-----BEGIN NOTHING-----")


def test_client_credentials_need_exactly_one_secret_or_key() -> None:
    with pytest.raises(ValueError, match="exactly one of client_secret= or private_key="):
        ClientCredentials("http://127.0.0.1:1/mcp", client_id="c")
    with pytest.raises(ValueError, match="exactly one"):
        ClientCredentials("http://127.0.0.1:1/mcp", client_id="c", client_secret="s", private_key=pem_key()[0])
    with pytest.raises(ValueError, match="needs the client_id"):
        OAuthProvider("http://127.0.0.1:1/mcp", client_assertion=PrivateKeyJwt(pem_key()[0]))


def test_without_pyjwt_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jwt", None)
    with pytest.raises(ImportError, match=r"pip install 'typedmcp\[auth\]'"):
        PrivateKeyJwt(pem_key()[0])
    with pytest.raises(ImportError, match=r"DPoP needs PyJWT"):
        OAuthProvider("http://127.0.0.1:1/mcp", dpop=True)


class IdentityProvider:
    """A token endpoint that answers with ``reply`` and records the form it was sent."""

    def __init__(self, status: int, answer: dict[str, Any]) -> None:
        self.status, self.answer = status, answer
        self.forms: list[dict[str, str]] = []

    async def __call__(self, method: str, url: str, body: bytes, headers: Mapping[str, str]) -> HttpReply:
        assert (method, url) == ("POST", "https://idp.example/token")
        self.forms.append({k: v[0] for k, v in parse_qs(body.decode()).items()})
        return HttpReply(self.status, {}, to_json(self.answer))


def run_grant(idp: IdentityProvider, grant: EnterpriseManaged | JwtBearer) -> dict[str, str]:
    request = GrantRequest("https://as.example", "https://mcp.example/mcp", "read", idp)
    return asyncio.run(grant.token_form(request))


def test_enterprise_managed_exchanges_the_id_token_for_an_id_jag_then_presents_it() -> None:
    idp = IdentityProvider(200, {"access_token": "the-id-jag", "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"})
    grant = EnterpriseManaged("https://idp.example/token", id_token=lambda: "the-id-token", idp_client_id="idp-client")
    form = run_grant(idp, grant)
    assert form == {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": "the-id-jag"}
    assert idp.forms == [{
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "subject_token": "the-id-token",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "audience": "https://as.example",
        "resource": "https://mcp.example/mcp",
        "scope": "read",
        "client_id": "idp-client",
    }]


def test_a_refused_token_exchange_names_the_identity_provider_and_its_error() -> None:
    idp = IdentityProvider(400, {"error": "invalid_grant", "error_description": "Invalid ID token"})
    with pytest.raises(OAuthError, match=re.escape(
        "identity provider https://idp.example/token failed: HTTP 400 invalid_grant: Invalid ID token"
    )):
        run_grant(idp, EnterpriseManaged("https://idp.example/token", id_token="expired"))
    issued_other = IdentityProvider(200, {"access_token": "x", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
    with pytest.raises(OAuthError, match="not an ID-JAG"):
        run_grant(issued_other, EnterpriseManaged("https://idp.example/token", id_token="t"))


def test_the_jwt_bearer_grant_presents_the_current_workload_token() -> None:
    async def current() -> str:
        return "workload-jwt"

    form = run_grant(IdentityProvider(200, {}), JwtBearer(current))
    assert form == {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": "workload-jwt"}


# -- against the OAuth client tests' mock world (tests/test_oauth_client.py) -------------------


@dataclass
class DPoPWorld(World):
    """Issues its tokens as DPoP tokens (the resource ignores the scheme)."""

    def _token(self, params: dict[str, str], headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        status, reply_headers, answer = super()._token(params, headers)
        return status, reply_headers, {**answer, "token_type": "DPoP"}


def test_a_dpop_token_without_dpop_says_how_to_turn_it_on() -> None:
    async def scenario() -> None:
        async with running(DPoPWorld()) as world:
            await use(world, provider(world))

    with pytest.raises(OAuthError, match=re.escape("'DPoP' token; only Bearer is supported (DPoP with dpop=True)")):
        asyncio.run(scenario())


def test_private_key_jwt_without_an_assertion_says_what_to_pass() -> None:
    async def scenario() -> None:
        async with running(World()) as world:
            auth = OAuthProvider(world.url, grant="client_credentials", client_id="svc",
                                 token_endpoint_auth_method="private_key_jwt")
            await use(world, auth)

    with pytest.raises(OAuthError, match=re.escape("private_key_jwt with client_assertion=PrivateKeyJwt(key)")):
        asyncio.run(scenario())


def test_a_refused_jwt_bearer_grant_is_raised_once_without_another_grant() -> None:
    world = World()  # knows no jwt-bearer grant: unsupported_grant_type

    async def scenario() -> None:
        async with running(world):
            await use(world, OAuthProvider(world.url, grant=JwtBearer("workload-jwt")))

    with pytest.raises(OAuthError, match=r"jwt-bearer.*failed: HTTP 400 unsupported_grant_type"):
        asyncio.run(scenario())
    assert [hit.params["grant_type"] for hit in world.token_requests] == [
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    ]
    assert world.token_requests[0].params["assertion"] == "workload-jwt"
    assert "client_id" not in world.token_requests[0].params and world.registrations == []
