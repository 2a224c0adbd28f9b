"""CPU cost of bearer-token verification per call (issue 20, requirement 7), in one run.

Run from the repository root::

    .venv/bin/python benchmarks/bench_auth.py [--quick] [--repeats N] [--json PATH]

No network: the JWKS is handed to the verifier by a ``fetch`` of the run's own (fetched once,
then cached, as in production), and HTTP requests are handed to the ASGI app in this
process. ``time.process_time()`` brackets each batch, so the figures are CPU microseconds,
not wall time (the machine may be shared). Two tables:

1. **verify**: ``JwtVerifier.verify(token)`` alone, with the JWKS cached: RS256 (2048-bit),
   ES256 and EdDSA (Ed25519) tokens, keys made for the run with ``cryptography``; a token
   seen before (remembered until its ``exp``: the cost of a client's every call after its
   first) and at first sight (the signature and claims checked: a verifier with
   ``cache_size=0``);
2. **per tools/call**: a handshake-era ``tools/call`` of the ``echo`` server
   (``peers/ours_server.py``) POSTed to ``http_app`` on an open session, without auth, with a
   custom ``BearerAuth`` hook (a dict lookup) and with ``BearerAuth.jwt`` for each algorithm;
   the last column is the ratio to no auth, measured in the same rounds.

The configurations are interleaved round by round (each round runs every one once), and the
tables show the median round. ``--quick`` is a CI smoke run (a few seconds). A wrong answer
(a call not answered 200 with the echoed text) stops the run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # mypy (explicit_package_bases) knows this file as benchmarks.bench_auth
    from benchmarks import _common as common
else:  # run as a script, benchmarks/ is sys.path[0]
    import _common as common

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from typedmcp import BearerAuth, Principal
from typedmcp.auth.jwt import JwtVerifier
from typedmcp.serving import http_app
from typedmcp.transports.http_wire import HttpReply

PEER = common.load_peer(common.OURS_SERVER)
ISSUER = "https://as.bench.test"
AUDIENCE = "http://127.0.0.1:8000/mcp"
ALGORITHMS = ("RS256", "ES256", "EdDSA")
Request = Callable[[], Awaitable[None]]


def _keys() -> dict[str, tuple[Any, dict[str, Any]]]:
    """For each algorithm: a private key and its public JWK (kid = the algorithm)."""
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    ed_key = ed25519.Ed25519PrivateKey.generate()
    return {
        "RS256": (rsa_key, {**RSAAlgorithm.to_jwk(rsa_key.public_key(), as_dict=True), "kid": "RS256"}),
        "ES256": (ec_key, {**ECAlgorithm.to_jwk(ec_key.public_key(), as_dict=True), "kid": "ES256"}),
        "EdDSA": (ed_key, {**OKPAlgorithm.to_jwk(ed_key.public_key(), as_dict=True), "kid": "EdDSA"}),
    }


def _token(private: Any, algorithm: str) -> str:
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "bench", "client_id": "bench-client",
              "scope": "echo", "exp": int(time.time()) + 86400, "iat": int(time.time())}
    return jwt.encode(claims, private, algorithm=algorithm, headers={"kid": algorithm})


def _jwks_fetch(jwks: Mapping[str, Any], counter: list[int]) -> Any:
    async def fetch(method: str, url: str, body: bytes, headers: Mapping[str, str]) -> HttpReply:
        counter.append(1)
        return HttpReply(200, {"content-type": "application/json"}, json.dumps(jwks).encode())

    return fetch


def _post(app: Any, body: bytes, headers: list[tuple[bytes, bytes]]) -> Callable[[], Awaitable[tuple[int, bytes, dict[bytes, bytes]]]]:
    """A coroutine factory: one POST of ``body`` to ``app``; (status, body, headers)."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                    (b"accept", b"application/json, text/event-stream"),
                    (b"content-length", str(len(body)).encode()), *headers],
        "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000),
    }

    async def once() -> tuple[int, bytes, dict[bytes, bytes]]:
        sent = False
        status, reply, reply_headers = 0, b"", {}

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # (never: the app stops reading once answered)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status, reply, reply_headers
            if message["type"] == "http.response.start":
                status, reply_headers = message["status"], dict(message.get("headers", []))
            elif message["type"] == "http.response.body":
                reply += message.get("body", b"")

        await app({**scope}, receive, send)
        return status, reply, reply_headers

    return once


async def _session_call(app: Any, token: str | None) -> Request:
    """Open a session on ``app`` (with ``token``); the request: one checked echo call on it."""
    auth = [(b"authorization", f"Bearer {token}".encode())] if token else []
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench-auth", "version": "1"}}})
    status, _, headers = await _post(app, init.encode(), auth)()
    if status != 200:
        raise SystemExit(f"initialize was answered {status}")
    session = [(b"mcp-session-id", headers[b"mcp-session-id"]), (b"mcp-protocol-version", b"2025-11-25")]
    initialized = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    await _post(app, initialized, auth + session)()
    call = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"text": "hi"}}}).encode()
    post = _post(app, call, auth + session)

    async def request() -> None:
        status, body, _ = await post()
        if status != 200 or b'"hi"' not in body:
            raise SystemExit(f"tools/call was answered {status}: {body[:200]!r}")

    return request


async def _measure(calls: int, rounds: int) -> dict[str, Any]:
    keys = _keys()
    jwks = {"keys": [jwk for _, jwk in keys.values()]}
    fetches: list[int] = []
    tokens = {alg: _token(private, alg) for alg, (private, _) in keys.items()}
    verifiers = {
        kind: JwtVerifier(issuer=ISSUER, audience=AUDIENCE, jwks_url="https://as.bench.test/jwks",
                          fetch=_jwks_fetch(jwks, fetches), cache_size=size)
        for kind, size in (("remembered", 10_000), ("first sight", 0))
    }
    for verifier in verifiers.values():
        for alg in ALGORITHMS:  # warm: the JWKS fetched once
            if await verifier.verify(tokens[alg]) is None:
                raise SystemExit(f"the {alg} token did not verify")
    server_info = {"name": PEER.NAME, "version": PEER.VERSION}
    hook_principal = Principal(subject="bench", issuer=ISSUER, scopes=frozenset({"echo"}))
    known = {"hook-token": hook_principal}
    configs: dict[str, tuple[Any, str | None]] = {
        "no auth": (None, None),
        "custom hook (dict lookup)": (BearerAuth(known.get, {"authorization_servers": [ISSUER]}), "hook-token"),
    }
    for alg in ALGORITHMS:
        auth = BearerAuth.jwt(issuer=ISSUER, audience=AUDIENCE, jwks_url="https://as.bench.test/jwks",
                              fetch=_jwks_fetch(jwks, fetches))
        configs[f"BearerAuth.jwt {alg}"] = (auth, tokens[alg])
    requests: dict[str, Request] = {}
    for name, (auth, token) in configs.items():
        app = http_app(PEER.Echo(), server_info=server_info, freeze_gc=False, auth=auth)
        requests[name] = await _session_call(app, token)
        for _ in range(20):
            await requests[name]()
    verify_rounds: dict[str, list[float]] = {f"{alg} {kind}": [] for alg in ALGORITHMS for kind in verifiers}
    call_rounds: dict[str, list[float]] = {name: [] for name in configs}
    for _ in range(rounds):
        for alg in ALGORITHMS:
            for kind, verifier in verifiers.items():
                token = tokens[alg]
                gc.collect()
                began = time.process_time()
                for _ in range(calls):
                    await verifier.verify(token)
                verify_rounds[f"{alg} {kind}"].append((time.process_time() - began) / calls * 1e6)
        for name, request in requests.items():
            gc.collect()
            began = time.process_time()
            for _ in range(calls):
                await request()
            call_rounds[name].append((time.process_time() - began) / calls * 1e6)
    if len(fetches) != len(verifiers) + len(ALGORITHMS):  # the verifiers' own, and one per app
        raise SystemExit(f"the JWKS was fetched {len(fetches)} times: it should be cached")
    verify_us = {alg: statistics.median(values) for alg, values in verify_rounds.items()}
    call_us = {name: statistics.median(values) for name, values in call_rounds.items()}
    baseline_rounds = call_rounds["no auth"]
    ratios = {
        name: statistics.median(v / b for v, b in zip(values, baseline_rounds, strict=True))
        for name, values in call_rounds.items()
    }
    return {"verify_us": verify_us, "call_us": call_us, "ratio_to_no_auth": ratios,
            "verify_rounds_us": verify_rounds, "call_rounds_us": call_rounds}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a CI smoke run (a few seconds)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved rounds (default 7; quick 2)")
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args(argv)
    rounds = args.repeats or (2 if args.quick else 7)
    calls = 100 if args.quick else 1000
    print(f"CPU time per call (process_time; {rounds} interleaved round(s) of {calls} calls; "
          f"load average {os.getloadavg()[0]:.2f}{', quick' if args.quick else ''})")
    report = asyncio.run(_measure(calls, rounds))
    print("\nverify (JWKS cached)")
    print(f"  {'token':<20} {'CPU us / token':>15}")
    for alg, value in report["verify_us"].items():
        print(f"  {alg:<20} {value:15.1f}")
    print("\nper tools/call through http_app (handshake era, open session)")
    print(f"  {'auth':<28} {'CPU us / call':>14} {'vs no auth':>11}")
    for name, value in report["call_us"].items():
        print(f"  {name:<28} {value:14.1f} {report['ratio_to_no_auth'][name]:10.2f}x")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"quick": args.quick, **report}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
