"""DPoP (RFC 9449): sender-constrained access tokens for the OAuth client.

With ``OAuthProvider(url, ..., dpop=True)`` (or ``dpop=DPoPKey(...)``) the client holds an
asymmetric key pair, sends a signed proof of possession (a ``dpop+jwt`` naming the method
``htm``, the URL ``htu``, ``iat``, a fresh ``jti`` and, for resource requests, ``ath``: the
hash of the access token) in the ``DPoP`` header of every token request and every MCP
request, and presents the token as ``Authorization: DPoP <token>``. A server that answers
``use_dpop_nonce`` gets the request again with the ``DPoP-Nonce`` it sent (RFC 9449 §8, §9);
the nonce is kept per origin for later proofs.

Proofs are signed by PyJWT with keys from ``cryptography`` (``pip install 'typedmcp[auth]'``),
imported only when DPoP is configured.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from .fetch import Fetch, HttpReply

__all__ = ["DPOP_NONCE_ERROR", "DPoPKey", "access_token_hash", "htu", "missing_auth_extra", "post_token"]

#: The ``error`` with which a server asks for a proof carrying its nonce.
DPOP_NONCE_ERROR = "use_dpop_nonce"


def missing_auth_extra(feature: str) -> ImportError:
    """The error raised when PyJWT/cryptography are not installed."""
    return ImportError(
        f"{feature} needs PyJWT and cryptography: pip install 'typedmcp[auth]'"
    )


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def access_token_hash(access_token: str) -> str:
    """The ``ath`` claim: base64url(SHA-256(access token))."""
    return _b64url(hashlib.sha256(access_token.encode()).digest())


def htu(url: str) -> str:
    """The ``htu`` claim of a request to ``url``: the URL without query and fragment."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class DPoPKey:
    """A DPoP key pair and the nonces servers handed out for it.

    ``private_key``: a ``cryptography`` private key (EC P-256 by default, generated);
    ``algorithm``: the JWS algorithm that key signs with (``ES256``, ``RS256``, ``EdDSA``...).
    """

    def __init__(
        self,
        private_key: Any = None,
        *,
        algorithm: str = "ES256",
        clock: Callable[[], float] = time.time,
    ) -> None:
        try:
            import jwt  # noqa: F401
            from cryptography.hazmat.primitives.asymmetric import ec
        except ImportError:
            raise missing_auth_extra("DPoP") from None
        if private_key is None:
            if algorithm != "ES256":
                raise ValueError(
                    f"DPoPKey generates ES256 keys only; pass private_key= for {algorithm!r}"
                )
            private_key = ec.generate_private_key(ec.SECP256R1())
        self.private_key = private_key
        self.algorithm = algorithm
        self.clock = clock
        self._nonces: dict[str, str] = {}
        self.public_jwk: dict[str, Any] = self._public_jwk()

    def _public_jwk(self) -> dict[str, Any]:
        from jwt.algorithms import get_default_algorithms

        algorithm = get_default_algorithms()[self.algorithm]
        jwk = json.loads(algorithm.to_jwk(self.private_key.public_key()))
        private = ("d", "p", "q", "dp", "dq", "qi", "alg", "key_ops", "use", "kid")
        return {name: value for name, value in jwk.items() if name not in private}

    def proof(self, method: str, url: str, access_token: str | None = None) -> str:
        """A fresh proof for ``method url`` (with ``ath`` when presenting ``access_token``,
        and the nonce last issued by that URL's origin, if any)."""
        import jwt

        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(self.clock()),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        nonce = self._nonces.get(_origin(url))
        if nonce is not None:
            claims["nonce"] = nonce
        header = {"typ": "dpop+jwt", "jwk": self.public_jwk}
        return jwt.encode(claims, self.private_key, algorithm=self.algorithm, headers=header)

    def learn_nonce(self, url: str, headers: Mapping[str, str]) -> bool:
        """Remember the ``DPoP-Nonce`` a response from ``url`` carries; True when it is new
        (so a retry with it may succeed)."""
        nonce = next((v for k, v in headers.items() if k.lower() == "dpop-nonce"), None)
        if not nonce or self._nonces.get(_origin(url)) == nonce:
            return False
        self._nonces[_origin(url)] = nonce
        return True


async def post_token(
    fetch: Fetch, key: DPoPKey | None, endpoint: str, body: bytes, headers: Mapping[str, str]
) -> HttpReply:
    """POST a token request; with ``key``, with a DPoP proof, sent once more with the
    server's nonce when it answers ``use_dpop_nonce`` (RFC 9449 §8)."""
    for _attempt in range(2):
        sending = {**headers, "DPoP": key.proof("POST", endpoint)} if key is not None else headers
        reply = await fetch("POST", endpoint, body, sending)
        answer = reply.json() if key is not None and reply.status in (400, 401) else None
        if not (
            isinstance(answer, dict)
            and answer.get("error") == DPOP_NONCE_ERROR
            and key is not None
            and key.learn_nonce(endpoint, reply.headers)
        ):
            break
    return reply
