"""JWT access tokens (RFC 9068) checked against the authorization server's JWKS, with PyJWT
(the ``auth`` extra: ``pip install 'typedmcp[auth]'``; imported when a verifier is made).

:class:`JwtVerifier` accepts a token when its signature verifies with a key of the JWKS
(RS256, ES256 or EdDSA by default: an allow-list; ``none`` and the HMAC algorithms are never
accepted, so a public key cannot be used as a shared secret), its ``iss`` is the issuer, its
``aud`` names this resource (RFC 8707), and ``exp``/``nbf`` hold (with ``leeway`` seconds of
clock skew). A token that passed is remembered (by a hash of it, at most ``cache_size``, the
least recently used dropped) until its ``exp``, so a client's next calls cost a dictionary
lookup, not a signature check; the memory is cleared when the JWKS's keys change. The JWKS
is fetched on first use, kept, refetched when it is older than
``max_jwks_age`` and when a token names a ``kid`` it does not hold (a rotation), at most once
per ``refetch_interval`` seconds: a flood of tokens with made-up ``kid`` values costs the
authorization server one request per interval.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..protocol.origin import Principal
from ..transports.http_wire import HttpTimeouts
from .fetch import Fetch, OAuthError, http_fetch
from .verifiers import OutageLog, VerifierUnavailable, principal_from_claims

if TYPE_CHECKING:
    from jwt import PyJWK

__all__ = ["DEFAULT_ALGORITHMS", "JwtVerifier", "require_pyjwt"]

logger = logging.getLogger("typedmcp.auth")

#: The asymmetric algorithms accepted unless ``algorithms=`` says otherwise.
DEFAULT_ALGORITHMS = ("RS256", "ES256", "EdDSA")
#: What may go into ``algorithms=``: signatures with a public key only.
ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
#: The time limits of a JWKS request (seconds); the verifier's own fetch uses them.
JWKS_TIMEOUTS = HttpTimeouts(connect=5.0, reply=10.0)


def require_pyjwt() -> None:
    """Import PyJWT (with its cryptography backend), or say how to install it."""
    try:
        import jwt  # noqa: F401
        from jwt.algorithms import has_crypto
    except ImportError:
        raise ImportError(
            "JWT verification needs PyJWT: pip install 'typedmcp[auth]' (or pip install 'pyjwt[crypto]')"
        ) from None
    if not has_crypto:
        raise ImportError(
            "JWT verification needs PyJWT's cryptography backend: pip install 'typedmcp[auth]' "
            "(or pip install 'pyjwt[crypto]')"
        )


class JwtVerifier:
    """Checks JWT access tokens against the JWKS at ``jwks_url`` (see the module's text).

    ``audience``: this resource's identifier (its canonical URL, RFC 8707), or several
    accepted ones; a token must name one of them in ``aud``. ``token_type="at+jwt"``: the
    header's ``typ`` must be that (RFC 9068 asks it; many identity providers send ``JWT``,
    so it is not checked by default; an ``application/`` prefix is ignored). ``fetch`` makes the JWKS
    request (default: the runtime's aiohttp client with :data:`JWKS_TIMEOUTS`;
    ``functools.partial(http_fetch, verify=ca_file)`` for a private CA). ``clock`` times the
    JWKS's age and the refetch limit (``time.monotonic``); ``wall_clock`` the expiry of
    remembered tokens (``time.time``; PyJWT checks a new token's times against ``time.time``).
    A verifier serves one event loop (the server's).
    """

    def __init__(
        self,
        *,
        issuer: str,
        audience: str | Sequence[str],
        jwks_url: str,
        algorithms: Iterable[str] = DEFAULT_ALGORITHMS,
        leeway: float = 30.0,
        refetch_interval: float = 30.0,
        max_jwks_age: float = 3600.0,
        cache_size: int = 10_000,
        token_type: str | None = None,
        fetch: Fetch | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        require_pyjwt()
        allowed = tuple(algorithms)
        refused = [name for name in allowed if name not in ASYMMETRIC_ALGORITHMS]
        if refused or not allowed:
            raise ValueError(
                f"JwtVerifier(algorithms=...) accepts only public-key signature algorithms "
                f"({', '.join(sorted(ASYMMETRIC_ALGORITHMS))}); got {allowed!r}"
            )
        if not issuer or not jwks_url:
            raise ValueError("JwtVerifier needs issuer= and jwks_url= (the authorization server's)")
        audiences = [audience] if isinstance(audience, str) else list(audience)
        if not audiences or not all(audiences):
            raise ValueError("JwtVerifier needs audience=: this resource's identifier (its URL)")
        self.issuer, self.audiences, self.jwks_url = issuer, audiences, jwks_url
        self.algorithms, self.leeway = allowed, leeway
        self.refetch_interval, self.max_jwks_age = refetch_interval, max_jwks_age
        self.fetch: Fetch = fetch or functools.partial(http_fetch, timeouts=JWKS_TIMEOUTS)
        self.clock, self.wall_clock = clock, wall_clock
        self.cache_size = cache_size
        self.token_type = token_type.lower().removeprefix("application/") if token_type else None
        # sha256(token) -> (its principal, its exp): tokens that passed, until they expire
        self.verified: OrderedDict[bytes, tuple[Principal, float]] = OrderedDict()
        self.keys: dict[str | None, PyJWK] | None = None  # by kid; None: never fetched
        self.published: frozenset[str] = frozenset()  # the JWKS's entries (JSON) as fetched
        self.fetched_at = float("-inf")  # when ``keys`` came (clock)
        self.attempted_at = float("-inf")  # the last fetch, successful or not (clock)
        self.fetches = 0  # JWKS requests made (successful or not)
        self.outage = OutageLog(f"the JWKS at {jwks_url}")
        self._lock: asyncio.Lock | None = None

    def authorization_servers(self) -> list[str]:
        """The issuer, for the protected-resource metadata."""
        return [self.issuer]

    async def verify(self, token: str) -> Principal | None:
        """The principal of a valid token; None for an invalid one (the reason is logged at
        DEBUG). Raises :class:`VerifierUnavailable` when no key could be had to check it."""
        digest = hashlib.sha256(token.encode()).digest()
        remembered = self.verified.get(digest)
        if remembered is not None:
            known, expiry = remembered
            if self.wall_clock() >= expiry + self.leeway:
                del self.verified[digest]
                return _rejected("expired")
            if self.clock() - self.fetched_at <= self.max_jwks_age:
                self.verified.move_to_end(digest)
                return known
            del self.verified[digest]  # the JWKS is due a refetch: check afresh
        principal = await self._check(token)
        if principal is not None and principal.expires_at is not None and self.cache_size > 0:
            self.verified[digest] = (principal, principal.expires_at)
            while len(self.verified) > self.cache_size:
                self.verified.popitem(last=False)
        return principal

    async def _check(self, token: str) -> Principal | None:
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as error:
            return _rejected(f"not a JWT ({error})")
        algorithm = header.get("alg")
        if algorithm not in self.algorithms:
            return _rejected(f"algorithm {algorithm!r} is not one of {', '.join(self.algorithms)}")
        if self.token_type is not None:
            kind = header.get("typ")
            if not isinstance(kind, str) or kind.lower().removeprefix("application/") != self.token_type:
                return _rejected(f"typ {kind!r} is not {self.token_type!r}")
        kid = header.get("kid")
        key = await self.key_for(kid if isinstance(kid, str) else None)
        if key is None:
            return _rejected(f"no key {kid!r} in the JWKS at {self.jwks_url}")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=[algorithm],
                audience=self.audiences,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as error:
            return _rejected(str(error))
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject:
            return _rejected("its sub is not a non-empty string")
        return principal_from_claims(claims, subject)

    async def key_for(self, kid: str | None) -> PyJWK | None:
        """The JWKS key ``kid`` names (without a kid: the only key), fetching the JWKS when
        there is none yet, when it is old, or (at most once per ``refetch_interval``) when
        it lacks ``kid``."""
        now = self.clock()
        if self.keys is None or now - self.fetched_at > self.max_jwks_age:
            await self._refresh(stale=self.keys is not None)
        key = self._lookup(kid)
        if key is None and self.clock() - self.attempted_at >= self.refetch_interval:
            await self._refresh(stale=False)
            key = self._lookup(kid)
        return key

    def _lookup(self, kid: str | None) -> PyJWK | None:
        keys = self.keys or {}
        if kid is None and len(keys) == 1:
            return next(iter(keys.values()))
        return keys.get(kid) if kid is not None else None

    async def _refresh(self, *, stale: bool) -> None:
        """Fetch the JWKS (one fetch at a time; none within ``refetch_interval`` of the last).
        A failure keeps the keys held when they are only ``stale``; else it raises."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        attempt_seen = self.attempted_at
        async with self._lock:
            recent = self.clock() - self.attempted_at < self.refetch_interval
            if self.attempted_at != attempt_seen or recent:  # fetched meanwhile, or just now
                if self.keys is None:
                    raise VerifierUnavailable(f"{self.outage.what} could not be fetched")
                return
            self.attempted_at = self.clock()
            self.fetches += 1
            try:
                keys, published = await self._fetch_keys()
            except VerifierUnavailable:
                if stale:
                    return
                raise
            entries = frozenset(json.dumps(entry, sort_keys=True) for entry in published)
            if entries != self.published:
                self.verified.clear()  # a key was withdrawn, maybe compromised: check afresh
            self.keys, self.published, self.fetched_at = keys, entries, self.clock()
            self.outage.succeeded()

    async def _fetch_keys(self) -> tuple[dict[str | None, PyJWK], list[Any]]:
        """The usable keys of the JWKS by kid, and its entries as published."""
        try:
            reply = await self.fetch("GET", self.jwks_url, b"", {"Accept": "application/json"})
        except (OAuthError, OSError, asyncio.TimeoutError) as error:
            raise self.outage.failed(str(error) or type(error).__name__) from None
        if reply.status != 200:
            raise self.outage.failed(f"answered HTTP {reply.status}")
        document = reply.json()
        entries = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise self.outage.failed('answered something other than a JWKS (no "keys" list)')
        keys = dict(self._usable(entries))
        if not keys:
            raise self.outage.failed(f"holds no key for {', '.join(self.algorithms)}")
        return keys, entries

    def _usable(self, entries: list[Any]) -> Iterable[tuple[str | None, PyJWK]]:
        """The signing keys of the JWKS this verifier may use, by kid (others are skipped)."""
        import jwt

        for entry in entries:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except (jwt.PyJWTError, ValueError, TypeError) as error:
                logger.debug("skipped a key of %s: %s", self.jwks_url, error)
                continue
            if key.algorithm_name in self.algorithms:
                kid = entry.get("kid")
                yield (kid if isinstance(kid, str) else None), key


def _rejected(reason: str) -> Principal | None:
    logger.debug("bearer token refused: %s", reason)
    return None
