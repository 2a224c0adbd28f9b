"""The token verifiers (issue 20, requirements 1 and 6) against real parts: keys made with
``cryptography``, tokens signed with PyJWT, a JWKS served over HTTP on 127.0.0.1 and an
RFC 7662 introspection endpoint from Authlib (``auth_world``), under uvicorn.

``JwtVerifier``: RS256, ES256 and EdDSA accepted; expired, not yet valid, wrong audience,
wrong issuer, bad signature, ``alg=none`` and HS256-with-the-public-key refused; an unknown
``kid`` refetches the JWKS once, then not again within the refetch interval; a rotated JWKS
is picked up without a restart; an unreachable JWKS is ``VerifierUnavailable``, logged once.
``IntrospectionVerifier``: active and inactive tokens, answers cached (the endpoint's hits
counted) for the token's life and no longer, the cache bounded, iss/aud checked.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from auth_world import AUDIENCE, INTROSPECTION_CLIENT, ISSUER, IdentityProvider, IssuedToken, SigningKey
from test_http_server import ServerThread

from typedmcp import Principal
from typedmcp.auth.fetch import OAuthError
from typedmcp.auth.introspection import IntrospectionVerifier
from typedmcp.auth.jwt import JwtVerifier
from typedmcp.auth.verifiers import OutageLog, VerifierUnavailable, scopes_of
from typedmcp.transports.http_wire import HttpReply

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


class Clock:
    """A monotonic clock the test moves by hand (the refetch limit without sleeping)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def keys() -> dict[str, SigningKey]:
    return {kind: SigningKey.generate(kind, f"{kind}-1") for kind in ("rsa", "ec", "ed25519")}


@pytest.fixture(scope="module")
def idp_server(keys: dict[str, SigningKey]) -> Iterator[tuple[IdentityProvider, str]]:
    idp = IdentityProvider(keys=list(keys.values()))
    with ServerThread(idp) as server:
        yield idp, server.url.removesuffix("/mcp")


@pytest.fixture
def idp(idp_server: tuple[IdentityProvider, str], keys: dict[str, SigningKey]) -> Iterator[IdentityProvider]:
    provider, _ = idp_server
    provider.keys[:] = list(keys.values())
    provider.tokens.clear()
    provider.hits.clear()
    provider.down = False
    yield provider


@pytest.fixture
def base(idp_server: tuple[IdentityProvider, str]) -> str:
    return idp_server[1]


def serving(document: Any) -> Any:
    """A JWKS fetch answering ``document`` (entries the IdP fixture would not publish)."""

    async def fetch(method: str, url: str, body: bytes, headers: Any) -> HttpReply:
        return HttpReply(200, {"content-type": "application/json"}, json.dumps(document).encode())

    return fetch


def verifier(base: str, clock: Clock | None = None, **options: Any) -> JwtVerifier:
    return JwtVerifier(
        issuer=ISSUER, audience=AUDIENCE, jwks_url=f"{base}/jwks", clock=clock or Clock(), **options
    )


# -- JWT ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["rsa", "ec", "ed25519"])
async def test_a_token_signed_with_each_key_type_gives_its_principal(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey], kind: str
) -> None:
    token = keys[kind].sign(sub="alice", client_id=None, azp="web-app", scope="notes:read notes:write")
    principal = await verifier(base).verify(token)
    assert principal == Principal(subject="alice", issuer=ISSUER, client_id="web-app")
    assert principal is not None
    assert principal.scopes == {"notes:read", "notes:write"}
    assert principal.claims["aud"] == AUDIENCE
    assert principal.expires_at == jwt.decode(token, options={"verify_signature": False})["exp"]
    assert idp.hits["/jwks"] == 1


async def test_scopes_come_from_scp_as_a_list_too(idp: IdentityProvider, base: str, keys: dict[str, SigningKey]) -> None:
    principal = await verifier(base).verify(keys["rsa"].sign(scope=None, scp=["a", "b"]))
    assert principal is not None and principal.scopes == {"a", "b"}
    assert scopes_of({"scp": "x y"}) == {"x", "y"} and scopes_of({}) == frozenset()


async def test_the_jwks_is_fetched_once_for_many_tokens(idp: IdentityProvider, base: str, keys: dict[str, SigningKey]) -> None:
    check = verifier(base)
    for kind in ("rsa", "ec", "ed25519", "rsa"):
        assert await check.verify(keys[kind].sign()) is not None
    assert idp.hits["/jwks"] == 1


async def test_a_known_key_is_not_refetched_until_the_jwks_is_old(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey]
) -> None:
    clock = Clock()
    check = verifier(base, clock, refetch_interval=30, max_jwks_age=600)
    assert await check.verify(keys["rsa"].sign(sub="first")) is not None
    clock.now += 300  # past the refetch interval, within the JWKS's age: its keys still serve
    assert await check.verify(keys["ec"].sign(sub="second")) is not None
    assert idp.hits["/jwks"] == 1 and check.fetches == 1


async def test_a_token_without_a_kid_is_checked_against_the_only_key_and_else_refused(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey]
) -> None:
    idp.keys[:] = [keys["ec"]]
    assert await verifier(base).verify(keys["ec"].sign(kid=None)) is not None
    idp.keys[:] = [keys["ec"], keys["rsa"]]  # two keys: which one is meant cannot be known
    assert await verifier(base).verify(keys["ec"].sign(kid=None)) is None
    idp.keys[:] = [keys["ec"]]  # a kid names its key: the only key does not stand in for another
    assert await verifier(base).verify(keys["ec"].sign(kid="another-key")) is None


@pytest.mark.parametrize(
    ("claims", "why"),
    [
        ({"exp": -120}, "expired past the leeway"),
        ({"nbf": +120}, "not valid yet"),
        ({"aud": "https://other.example.test/mcp"}, "another resource's token"),
        ({"iss": "https://evil.example.test"}, "another issuer's token"),
        ({"exp": None}, "no expiry"),
        ({"sub": None}, "no subject"),
        ({"sub": ""}, "an empty subject"),
        ({"aud": None}, "no audience"),
    ],
)
async def test_a_token_that_is_not_for_here_now_is_refused(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey], claims: dict[str, Any], why: str
) -> None:
    # exp and nbf are offsets from now, taken when the test runs (not when it is collected: on a
    # slow run a "not valid yet" token computed at collection is already valid)
    now = int(time.time())
    claims = {k: now + v if k in ("exp", "nbf") and v is not None else v for k, v in claims.items()}
    assert await verifier(base).verify(keys["ec"].sign(**claims)) is None, why


async def test_expiry_and_nbf_have_a_small_leeway(idp: IdentityProvider, base: str, keys: dict[str, SigningKey]) -> None:
    now = int(time.time())
    check = verifier(base, leeway=30)
    assert await check.verify(keys["rsa"].sign(exp=now - 10)) is not None
    assert await check.verify(keys["rsa"].sign(nbf=now + 10)) is not None
    assert await verifier(base, leeway=0).verify(keys["rsa"].sign(exp=now - 10)) is None


async def test_one_of_several_audiences_is_enough(idp: IdentityProvider, base: str, keys: dict[str, SigningKey]) -> None:
    check = JwtVerifier(issuer=ISSUER, audience=["https://a.test", AUDIENCE], jwks_url=f"{base}/jwks")
    assert await check.verify(keys["rsa"].sign(aud=["https://unrelated.test", AUDIENCE])) is not None


async def test_a_bad_signature_is_refused(idp: IdentityProvider, base: str, keys: dict[str, SigningKey]) -> None:
    impostor = SigningKey.generate("rsa", keys["rsa"].kid)  # same kid, another key
    assert await verifier(base).verify(impostor.sign()) is None
    header, payload, signature = keys["rsa"].sign().split(".")
    tampered = payload[:-2] + ("AA" if payload[-2:] != "AA" else "BB")
    assert await verifier(base).verify(f"{header}.{tampered}.{signature}") is None


async def test_alg_none_and_hmac_with_the_public_key_are_refused(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey]
) -> None:
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "mallory", "exp": int(time.time()) + 60}
    unsigned = jwt.encode(claims, None, algorithm="none", headers={"kid": keys["rsa"].kid})
    check = verifier(base)
    assert await check.verify(unsigned) is None
    # the RSA public key's PEM as an HMAC secret: the classic key-confusion forgery
    from cryptography.hazmat.primitives import serialization

    pem = keys["rsa"].private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    import hashlib
    import hmac

    signing_input = unsigned.rsplit(".", 1)[0].replace(
        jwt.utils.base64url_encode(b'{"alg":"none","kid":"rsa-1","typ":"JWT"}').decode(),
        jwt.utils.base64url_encode(b'{"alg":"HS256","kid":"rsa-1","typ":"JWT"}').decode(),
    )
    mac = hmac.new(pem, signing_input.encode(), hashlib.sha256).digest()
    forged = f"{signing_input}.{jwt.utils.base64url_encode(mac).decode()}"
    assert jwt.get_unverified_header(forged)["alg"] == "HS256"
    assert await check.verify(forged) is None
    assert await check.verify("not a token") is None


async def test_an_ec_token_cannot_pass_as_rs256(idp: IdentityProvider, base: str, keys: dict[str, SigningKey]) -> None:
    # the header claims RS256 but names the EC key: the key's own algorithm decides
    token = keys["ec"].sign()
    _, rest = token.split(".", 1)
    relabelled = jwt.utils.base64url_encode(b'{"alg":"RS256","kid":"ec-1","typ":"JWT"}').decode() + "." + rest
    assert await verifier(base).verify(relabelled) is None


async def test_a_refused_algorithm_or_key_type_is_refused_before_any_jwks_fetch(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey]
) -> None:
    clock = Clock()
    check = verifier(base, clock, algorithms=["RS256"])
    assert await check.verify(keys["rsa"].sign()) is not None
    clock.now += 31  # a refetch would be allowed now
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "mallory", "exp": int(time.time()) + 60}
    assert await check.verify(jwt.encode(claims, None, algorithm="none", headers={"kid": "new"})) is None
    assert await check.verify(keys["ec"].sign()) is None  # ES256 is not allowed here
    assert idp.hits["/jwks"] == 1  # neither spent the refetch budget


async def test_token_type_at_jwt_is_checked_when_asked(idp: IdentityProvider, base: str, keys: dict[str, SigningKey]) -> None:
    plain = keys["rsa"].sign()  # typ: JWT (PyJWT's default, and many identity providers')
    access = jwt.encode(jwt.decode(plain, options={"verify_signature": False}), keys["rsa"].private,
                        algorithm="RS256", headers={"kid": keys["rsa"].kid, "typ": "at+jwt"})
    assert await verifier(base).verify(plain) is not None  # not checked by default
    strict = verifier(base, token_type="application/at+jwt")
    assert await strict.verify(access) is not None
    assert await strict.verify(plain) is None


def test_only_public_key_algorithms_may_be_allowed() -> None:
    for algorithms in (["HS256"], ["none"], ["RS256", "HS512"], []):
        with pytest.raises(ValueError, match="public-key signature algorithms"):
            JwtVerifier(issuer=ISSUER, audience=AUDIENCE, jwks_url="http://x/jwks", algorithms=algorithms)
    with pytest.raises(ValueError, match="audience="):
        JwtVerifier(issuer=ISSUER, audience="", jwks_url="http://x/jwks")
    for issuer, jwks_url in (("", "http://x/jwks"), (ISSUER, "")):
        with pytest.raises(ValueError, match="issuer= and jwks_url="):
            JwtVerifier(issuer=issuer, audience=AUDIENCE, jwks_url=jwks_url)


async def test_an_unknown_kid_refetches_once_then_is_rate_limited(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey]
) -> None:
    clock = Clock()
    check = verifier(base, clock, refetch_interval=30)
    assert await check.verify(keys["rsa"].sign()) is not None
    assert idp.hits["/jwks"] == 1
    clock.now += 31
    stranger = SigningKey.generate("rsa", "made-up")
    assert await check.verify(stranger.sign()) is None
    assert idp.hits["/jwks"] == 2  # the unknown kid refetched the JWKS once
    for index in range(20):  # a flood of made-up kids within the interval: no more fetches
        assert await check.verify(SigningKey.generate("ec", f"flood-{index}").sign()) is None
    assert idp.hits["/jwks"] == 2
    clock.now += 30
    assert await check.verify(stranger.sign()) is None
    assert idp.hits["/jwks"] == 3  # the next interval (from its very start) allows one more
    assert check.fetches == 3


async def test_a_rotated_jwks_is_picked_up_without_a_restart(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey]
) -> None:
    clock = Clock()
    check = verifier(base, clock, refetch_interval=30)
    before = keys["rsa"].sign(sub="before-rotation")
    assert await check.verify(before) is not None
    rotated = SigningKey.generate("rsa", "rsa-2")
    idp.keys[:] = [rotated]  # the IdP rotates: the old key is gone, the new one published
    clock.now += 31
    principal = await check.verify(rotated.sign(sub="bob"))
    assert principal is not None and principal.subject == "bob"
    assert await check.verify(keys["rsa"].sign()) is None  # the retired key no longer passes
    assert await check.verify(before) is None  # nor a token it signed that passed before
    assert idp.hits["/jwks"] == 2


async def test_an_unknown_kid_while_the_jwks_is_down_is_unavailable_not_refused(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey]
) -> None:
    clock = Clock()
    check = verifier(base, clock, refetch_interval=30)
    assert await check.verify(keys["rsa"].sign()) is not None
    idp.down = True
    clock.now += 31
    with pytest.raises(VerifierUnavailable, match="JWKS"):  # maybe a new key: 503, not 401
        await check.verify(SigningKey.generate("rsa", "rotated-in").sign())
    assert await check.verify(keys["rsa"].sign()) is not None  # the keys held still serve


async def test_only_the_signing_keys_of_the_jwks_are_used(keys: dict[str, SigningKey]) -> None:
    encryption = {**keys["ec"].public_jwk(), "use": "enc"}
    url = "http://idp.test/jwks"
    check = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, jwks_url=url, fetch=serving({"keys": [encryption, keys["rsa"].public_jwk()]}))
    assert await check.verify(keys["rsa"].sign()) is not None
    assert await check.verify(keys["ec"].sign()) is None  # an encryption key signs nothing
    unknown_curve = {"kty": "EC", "crv": "P-999", "x": "AA", "y": "AA", "kid": "broken"}
    listed_alg = {**keys["ec"].public_jwk(), "alg": ["ES256"]}  # PyJWK raises TypeError on it
    junk_first = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, jwks_url=url,
                             fetch=serving({"keys": ["junk", unknown_curve, listed_alg, keys["rsa"].public_jwk()]}))
    assert await junk_first.verify(keys["rsa"].sign()) is not None  # entries that are no keys are skipped


async def test_a_jwks_republished_in_another_member_order_keeps_what_it_passed(keys: dict[str, SigningKey]) -> None:
    published = [keys["rsa"].public_jwk(), keys["ec"].public_jwk()]
    document = {"keys": published}

    async def fetch(method: str, url: str, body: bytes, headers: Any) -> HttpReply:
        return HttpReply(200, {}, json.dumps(document).encode())

    clock = Clock()
    check = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, jwks_url="http://idp.test/jwks", fetch=fetch, clock=clock)
    token = keys["rsa"].sign()
    remembered = await check.verify(token)
    document["keys"] = [dict(reversed(entry.items())) for entry in reversed(published)]  # same keys
    clock.now += 31
    assert await check.verify(SigningKey.generate("rsa", "unknown").sign()) is None  # refetched
    assert check.fetches == 2 and await check.verify(token) is remembered


async def test_a_token_that_passed_is_remembered_until_it_expires(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey]
) -> None:
    now = [float(int(time.time()))]
    check = verifier(base, leeway=5, wall_clock=lambda: now[0], cache_size=2)
    token = keys["ed25519"].sign(exp=int(now[0]) + 60)
    first = await check.verify(token)
    assert first is not None and await check.verify(token) is first  # remembered, not decoded again
    now[0] += 64  # past exp, within the leeway, by the wall clock: still remembered
    assert await check.verify(token) is first
    now[0] += 1  # exp and the leeway reached
    assert await check.verify(token) is None
    tokens = {sub: keys["rsa"].sign(sub=sub, exp=int(time.time()) + 600) for sub in ("a", "b", "c")}
    for sub in ("a", "b"):
        assert await check.verify(tokens[sub]) is not None
    assert await check.verify(tokens["a"]) is not None  # "a" used again: "b" is now the oldest
    assert await check.verify(tokens["c"]) is not None  # bounded: the least recently used is dropped
    assert sorted(principal.subject for principal, _ in check.verified.values()) == ["a", "c"]


async def test_a_cache_of_one_remembers_the_last_token_and_a_cache_of_zero_none(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey]
) -> None:
    token = keys["rsa"].sign()
    one = verifier(base, cache_size=1)
    first = await one.verify(token)
    assert first is not None and await one.verify(token) is first
    none = verifier(base, cache_size=0)
    decoded = await none.verify(token)
    assert decoded is not None and await none.verify(token) is not decoded and not none.verified


async def test_a_remembered_token_is_checked_afresh_once_the_jwks_is_old(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey]
) -> None:
    clock = Clock()
    check = verifier(base, clock, max_jwks_age=600)
    token = keys["rsa"].sign(sub="long-session")
    remembered = await check.verify(token)
    assert remembered is not None
    idp.keys[:] = [keys["ec"]]  # the RSA key is withdrawn
    clock.now += 600  # the JWKS is exactly as old as allowed: it and what it passed still serve
    assert await check.verify(token) is remembered
    assert await check.verify(keys["rsa"].sign(sub="new")) is not None and idp.hits["/jwks"] == 1
    clock.now += 1  # the JWKS is due a refetch: even a remembered token waits for it
    assert await check.verify(token) is None
    assert idp.hits["/jwks"] == 2


async def test_an_old_jwks_is_refetched_and_kept_when_the_refetch_fails(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey]
) -> None:
    clock = Clock()
    check = verifier(base, clock, max_jwks_age=600)
    assert await check.verify(keys["ec"].sign()) is not None
    idp.down = True
    clock.now += 601
    assert await check.verify(keys["ec"].sign()) is not None  # stale keys still serve
    assert idp.hits["/jwks"] == 2


async def test_an_unreachable_jwks_is_unavailable_logged_once(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey], caplog: pytest.LogCaptureFixture
) -> None:
    idp.down = True
    clock = Clock()
    check = verifier(base, clock, refetch_interval=30)
    with caplog.at_level(logging.WARNING, logger="typedmcp.auth"):
        for _ in range(5):
            with pytest.raises(VerifierUnavailable, match="JWKS"):
                await check.verify(keys["rsa"].sign())
        assert idp.hits["/jwks"] == 1  # the failures are rate limited too
        idp.down = False
        clock.now += 31
        assert await check.verify(keys["rsa"].sign()) is not None
    outages = [r.getMessage() for r in caplog.records if "HTTP 502" in r.getMessage()]
    assert len(outages) == 1, caplog.text
    assert any("reachable again" in r.getMessage() for r in caplog.records)


def test_each_outage_is_logged_once_when_it_starts_and_once_when_it_ends(caplog: pytest.LogCaptureFixture) -> None:
    outage = OutageLog("the JWKS at https://idp.test/jwks")
    with caplog.at_level(logging.WARNING, logger="typedmcp.auth"):
        for event in ("failed", "failed", "succeeded", "succeeded", "failed", "succeeded"):
            if event == "failed":
                assert isinstance(outage.failed("HTTP 502"), VerifierUnavailable)
            else:
                outage.succeeded()
    messages = [record.getMessage().split(": ", 1)[1] for record in caplog.records]
    assert [message.split(";")[0] for message in messages] == ["HTTP 502", "reachable again", "HTTP 502", "reachable again"]


async def test_requests_waiting_on_a_failed_first_fetch_are_unavailable_too(
    idp: IdentityProvider, base: str, keys: dict[str, SigningKey]
) -> None:
    idp.down = True
    check = verifier(base, Clock(), refetch_interval=30)
    outcomes = await asyncio.gather(*(check.verify(keys["rsa"].sign()) for _ in range(5)), return_exceptions=True)
    assert all(isinstance(outcome, VerifierUnavailable) for outcome in outcomes), outcomes
    assert idp.hits["/jwks"] == 1  # one fetch for all of them


async def test_a_jwks_at_a_closed_port_is_unavailable(keys: dict[str, SigningKey]) -> None:
    from conftest import free_port

    check = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, jwks_url=f"http://127.0.0.1:{free_port()}/jwks")
    with pytest.raises(VerifierUnavailable, match="cannot reach"):
        await check.verify(keys["rsa"].sign())


# -- introspection --------------------------------------------------------------------------


def introspector(base: str, clock: Any = time.time, **options: Any) -> IntrospectionVerifier:
    return IntrospectionVerifier(
        introspection_url=f"{base}/introspect",
        client_id=INTROSPECTION_CLIENT[0],
        client_secret=INTROSPECTION_CLIENT[1],
        issuer=ISSUER,
        audience=AUDIENCE,
        clock=clock,
        **options,
    )


def issue(idp: IdentityProvider, token: str, lifetime: int = 3600, **fields: Any) -> IssuedToken:
    issued = IssuedToken(subject=fields.pop("subject", "alice"), scope=fields.pop("scope", "notes:read"),
                         expires_at=int(time.time()) + lifetime, **fields)
    idp.tokens[token] = issued
    return issued


async def test_an_active_token_gives_its_principal_and_is_cached(idp: IdentityProvider, base: str) -> None:
    issued = issue(idp, "opaque-alice", scope="notes:read notes:write")
    check = introspector(base)
    for _ in range(3):
        principal = await check.verify("opaque-alice")
        assert principal == Principal(subject="alice", issuer=ISSUER, client_id="the-client")
        assert principal is not None and principal.scopes == {"notes:read", "notes:write"}
        assert principal.expires_at == issued.expires_at
    assert idp.hits["/introspect"] == 1  # cached


async def test_inactive_unknown_and_revoked_tokens_are_refused(idp: IdentityProvider, base: str) -> None:
    issue(idp, "revoked", revoked=True)
    issue(idp, "expired", lifetime=-5)
    check = introspector(base)
    for token in ("revoked", "expired", "never-issued"):
        assert await check.verify(token) is None


async def test_the_cache_never_outlives_the_token(idp: IdentityProvider, base: str) -> None:
    now = [time.time()]
    issue(idp, "short-lived", lifetime=60)
    check = introspector(base, clock=lambda: now[0], max_cache_seconds=300, leeway=0)
    assert await check.verify("short-lived") is not None
    now[0] += 30
    assert await check.verify("short-lived") is not None
    assert idp.hits["/introspect"] == 1
    now[0] += 31  # past exp: the cache does not answer; the endpoint is asked again
    idp.tokens["short-lived"].expires_at = int(now[0]) + 60  # (the AS's clock is the real one)
    assert await check.verify("short-lived") is not None
    assert idp.hits["/introspect"] == 2


async def test_the_cache_is_bounded_and_caps_how_long_an_answer_is_kept(idp: IdentityProvider, base: str) -> None:
    for name in ("a", "b", "c"):
        issue(idp, name, subject=name)
    now = [time.time()]
    check = introspector(base, clock=lambda: now[0], cache_size=2, max_cache_seconds=100)
    for name in ("a", "b", "c"):
        assert await check.verify(name) is not None
    assert len(check.cache) == 2 and idp.hits["/introspect"] == 3  # "a" was dropped
    assert await check.verify("b") is not None and idp.hits["/introspect"] == 3  # b: most recent now
    assert await check.verify("a") is not None and idp.hits["/introspect"] == 4  # drops c, not b
    assert await check.verify("b") is not None and idp.hits["/introspect"] == 4
    now[0] += 101  # past max_cache_seconds (the tokens live an hour): asked again (a revocation shows)
    idp.tokens["c"].revoked = True
    assert await check.verify("c") is None and idp.hits["/introspect"] == 5


async def test_a_foreign_issuer_or_audience_in_the_answer_is_refused(idp: IdentityProvider, base: str) -> None:
    issue(idp, "for-another-api", audience="https://other.example.test")
    issue(idp, "other-issuer", issuer="https://evil.example.test")
    issue(idp, "no-aud-no-iss", audience=None, issuer=None)
    check = introspector(base)
    assert await check.verify("for-another-api") is None
    assert await check.verify("other-issuer") is None
    principal = await check.verify("no-aud-no-iss")  # (absent fields are not checked)
    assert principal is not None and principal.issuer == ISSUER


async def test_an_inactive_answer_is_refused_whatever_else_it_says() -> None:
    from typedmcp.transports.http_wire import HttpReply

    async def answer(method: str, url: str, body: bytes, headers: Any) -> HttpReply:
        payload = {"active": False, "sub": "alice", "scope": "notes:read", "iss": ISSUER}
        return HttpReply(200, {"content-type": "application/json"}, json.dumps(payload).encode())

    check = IntrospectionVerifier(introspection_url="https://as.test/introspect", client_id="rs",
                                  client_secret="x", fetch=answer)
    assert await check.verify("t") is None


class Introspected:
    """An introspection endpoint answering ``answer`` (a dict the test changes), counting
    the requests, and the clock its verifier reads."""

    def __init__(self, **answer: Any) -> None:
        self.answer: dict[str, Any] = {"active": True, "sub": "alice", **answer}
        self.requests = 0
        self.now = 1_000_000.0

    async def __call__(self, method: str, url: str, body: bytes, headers: Any) -> HttpReply:
        self.requests += 1
        return HttpReply(200, {"content-type": "application/json"}, json.dumps(self.answer).encode())

    def verifier(self, **options: Any) -> IntrospectionVerifier:
        return IntrospectionVerifier(introspection_url="https://as.test/introspect", client_id="rs",
                                     client_secret="x", fetch=self, clock=lambda: self.now, **options)


async def test_an_inactive_answer_is_remembered_for_inactive_cache_seconds() -> None:
    endpoint = Introspected(active=False)
    check = endpoint.verifier(inactive_cache_seconds=10)
    assert await check.verify("t") is None
    endpoint.now += 9
    assert await check.verify("t") is None and endpoint.requests == 1
    endpoint.now += 1
    assert await check.verify("t") is None and endpoint.requests == 2


async def test_the_answers_exp_and_nbf_have_the_leeway_to_the_second() -> None:
    endpoint = Introspected()
    check = endpoint.verifier(leeway=30, cache_size=0)
    for exp, nbf, accepted in [
        (endpoint.now - 29, None, True), (endpoint.now - 30, None, False),
        (None, endpoint.now + 30, True), (None, endpoint.now + 31, False),
    ]:
        endpoint.answer = {"active": True, "sub": "alice", "exp": exp, "nbf": nbf}
        assert (await check.verify("t") is not None) is accepted, (exp, nbf)


async def test_the_subject_is_the_first_non_empty_string_of_sub_username_client_id() -> None:
    endpoint = Introspected(sub=7, username="", client_id="the-client")
    principal = await endpoint.verifier().verify("t")
    assert principal is not None and principal.subject == "the-client"
    endpoint.answer = {"active": True, "sub": ["alice"], "username": 0}
    assert await endpoint.verifier().verify("t") is None  # names no one


async def test_the_claims_are_the_answer_as_given_without_a_configured_issuer() -> None:
    endpoint = Introspected(scope="notes:read")
    principal = await endpoint.verifier().verify("t")
    assert principal is not None and principal.claims == endpoint.answer and principal.issuer is None


@pytest.mark.parametrize(
    ("failure", "reason"),
    [(OAuthError("TLS handshake failed"), "TLS handshake failed"), (ConnectionResetError(), "ConnectionResetError"),
     (asyncio.TimeoutError(), "TimeoutError")],
)
async def test_an_introspection_request_that_fails_is_unavailable_naming_why(failure: Exception, reason: str) -> None:
    async def fetch(method: str, url: str, body: bytes, headers: Any) -> HttpReply:
        raise failure

    check = IntrospectionVerifier(introspection_url="https://as.test/introspect", client_id="rs",
                                  client_secret="x", fetch=fetch)
    with pytest.raises(VerifierUnavailable, match=f"introspection endpoint .*: {reason}$"):
        await check.verify("t")


async def test_an_answer_already_past_its_exp_is_not_cached_and_evicts_nothing() -> None:
    endpoint = Introspected(exp=1_000_000 + 3600)
    check = endpoint.verifier(leeway=30, cache_size=1)
    assert await check.verify("lasting") is not None
    for expiry in (endpoint.now - 10, endpoint.now):  # within the leeway: valid, not cacheable
        endpoint.answer = {"active": True, "sub": "bob", "exp": expiry}
        assert await check.verify(f"ending-{expiry}") is not None
    assert await check.verify("lasting") is not None
    assert endpoint.requests == 3 and check.requests == 3  # "lasting" still cached


@pytest.mark.parametrize("answer", [[], {"active": "true", "sub": "alice"}, {"sub": "alice"}])
async def test_an_answer_that_is_not_rfc_7662_is_unavailable(answer: Any) -> None:
    endpoint = Introspected()
    endpoint.answer = answer
    with pytest.raises(VerifierUnavailable, match="other than an RFC 7662 response"):
        await endpoint.verifier().verify("t")


@pytest.mark.parametrize("status", [401, 403])
async def test_a_refusal_of_the_client_credentials_says_so(status: int) -> None:
    async def fetch(method: str, url: str, body: bytes, headers: Any) -> HttpReply:
        return HttpReply(status, {}, b"{}")

    check = IntrospectionVerifier(introspection_url="https://as.test/introspect", client_id="rs",
                                  client_secret="x", fetch=fetch)
    with pytest.raises(VerifierUnavailable, match=f"refused this server's client credentials \\(HTTP {status}\\)"):
        await check.verify("t")


def test_the_introspection_cache_size_is_zero_or_more() -> None:
    assert Introspected().verifier(cache_size=0).cache_size == 0
    with pytest.raises(ValueError, match="cache_size must be 0"):
        Introspected().verifier(cache_size=-1)
    for url, client, secret in (("", "rs", "x"), ("https://as.test/i", "", "x"), ("https://as.test/i", "rs", "")):
        with pytest.raises(ValueError, match="needs introspection_url=, client_id= and client_secret="):
            IntrospectionVerifier(introspection_url=url, client_id=client, client_secret=secret)


async def test_wrong_client_credentials_or_a_down_endpoint_are_unavailable(
    idp: IdentityProvider, base: str, caplog: pytest.LogCaptureFixture
) -> None:
    issue(idp, "fine")
    wrong = IntrospectionVerifier(
        introspection_url=f"{base}/introspect", client_id=INTROSPECTION_CLIENT[0], client_secret="nope"
    )
    with pytest.raises(VerifierUnavailable, match="client credentials"):
        await wrong.verify("fine")
    idp.down = True
    check = introspector(base)
    with caplog.at_level(logging.WARNING, logger="typedmcp.auth"):
        for _ in range(3):
            with pytest.raises(VerifierUnavailable, match="HTTP 502"):
                await check.verify("fine")
    assert sum("HTTP 502" in r.getMessage() for r in caplog.records) == 1
