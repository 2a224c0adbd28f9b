"""DPoP proofs of the OAuth client (RFC 9449): what a proof carries, and the nonce retry of
a token request. The whole flow (DPoP-bound token, ``Authorization: DPoP``, a fresh proof per
MCP request, the resource server's nonce) runs against the conformance suite's servers in
tests/test_client_auth_conformance.py."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import Mapping
from typing import Any

import jwt
import pytest
from pydantic_core import to_json

from typedmcp.auth.dpop import DPoPKey, post_token
from typedmcp.transports.http_wire import HttpReply


def verified(proof: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A proof's header and claims, its signature checked with the key its header names."""
    header = jwt.get_unverified_header(proof)
    key = jwt.PyJWK(header["jwk"], algorithm=header["alg"])
    return header, jwt.decode(proof, key, algorithms=[header["alg"]])


def test_a_proof_names_the_request_its_time_and_the_token_it_presents() -> None:
    key = DPoPKey(clock=lambda: 1_700_000_000.7)
    proof = key.proof("post", "https://rs.example/mcp?session=1#top", access_token="tok-123")
    header, claims = verified(proof)
    assert header["typ"] == "dpop+jwt"
    assert header["alg"] == "ES256"
    assert header["jwk"]["kty"] == "EC" and "d" not in header["jwk"]  # the public key only
    assert claims["htm"] == "POST"
    assert claims["htu"] == "https://rs.example/mcp"  # no query, no fragment (RFC 9449 §4.2)
    assert claims["iat"] == 1_700_000_000
    digest = hashlib.sha256(b"tok-123").digest()
    assert claims["ath"] == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert "nonce" not in claims


def test_every_proof_is_fresh_and_a_token_request_proof_has_no_ath() -> None:
    key = DPoPKey()
    first = verified(key.proof("POST", "https://as.example/token"))[1]
    second = verified(key.proof("POST", "https://as.example/token"))[1]
    assert first["jti"] != second["jti"]
    assert "ath" not in first


def test_a_nonce_is_kept_for_the_origin_that_sent_it() -> None:
    key = DPoPKey()
    assert key.learn_nonce("https://as.example/token", {"DPoP-Nonce": "n-1"}) is True
    assert key.learn_nonce("https://as.example/other", {"dpop-nonce": "n-1"}) is False  # known
    assert verified(key.proof("POST", "https://as.example/token"))[1]["nonce"] == "n-1"
    assert "nonce" not in verified(key.proof("POST", "https://rs.example/mcp"))[1]
    assert key.learn_nonce("https://as.example/token", {}) is False


def test_only_es256_keys_are_generated() -> None:
    with pytest.raises(ValueError, match="pass private_key= for 'RS256'"):
        DPoPKey(algorithm="RS256")


class TokenEndpoint:
    """Answers token requests from a script of replies; records the proofs it was sent."""

    def __init__(self, *replies: tuple[int, Mapping[str, str], dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.proofs: list[dict[str, Any]] = []

    async def __call__(self, method: str, url: str, body: bytes, headers: Mapping[str, str]) -> HttpReply:
        self.proofs.append(verified(headers["DPoP"])[1])
        status, reply_headers, answer = self.replies.pop(0)
        return HttpReply(status, reply_headers, to_json(answer))


NONCE_CHALLENGE = (400, {"dpop-nonce": "as-nonce"}, {"error": "use_dpop_nonce"})
TOKEN = (200, {}, {"access_token": "a", "token_type": "DPoP"})


def test_a_token_request_answered_use_dpop_nonce_is_sent_again_with_the_nonce() -> None:
    endpoint = TokenEndpoint(NONCE_CHALLENGE, TOKEN)
    reply = asyncio.run(post_token(endpoint, DPoPKey(), "https://as.example/token", b"x", {}))
    assert reply.status == 200
    assert [proof.get("nonce") for proof in endpoint.proofs] == [None, "as-nonce"]
    assert endpoint.proofs[0]["jti"] != endpoint.proofs[1]["jti"]


def test_a_repeated_nonce_challenge_is_returned_not_looped_on() -> None:
    endpoint = TokenEndpoint(NONCE_CHALLENGE, NONCE_CHALLENGE, TOKEN)
    reply = asyncio.run(post_token(endpoint, DPoPKey(), "https://as.example/token", b"x", {}))
    assert reply.status == 400 and len(endpoint.proofs) == 2
