"""``requestState`` of the stateless era: sealed (HMAC) so a client can carry it but not
change it, bound to the request, and single-use on demand (:class:`UsedStates`)."""

from __future__ import annotations

import base64
import hashlib
import heapq
import hmac
import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from ..engine.jsonrpc import INVALID_PARAMS, RpcError

logger = logging.getLogger("typedmcp")


#: Environment variable holding the key that seals ``requestState`` (shared by workers).
STATE_KEY_ENV = "MCP_REQUEST_STATE_KEY"
#: The same as a key ring: comma-separated keys, newest first (the newest seals).
STATE_KEYS_ENV = "MCP_REQUEST_STATE_KEYS"


DEFAULT_STATE_TTL = 600.0


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class StateSealer:
    """Seals ``requestState`` so a client can carry it but not change it.

    Keys form a ring, newest first: the newest seals, every one of them opens (so a key
    can be rotated: states sealed with the old one stay valid until they expire). They come
    from ``keys`` (a list the caller may update in place: a key ring kept in Redis), else
    ``key``, else the ``MCP_REQUEST_STATE_KEYS`` environment variable (comma-separated,
    newest first), else ``MCP_REQUEST_STATE_KEY``, else a random per-process key. Several
    workers behind one endpoint must share the keys, or a retry that lands on another
    worker is rejected.
    """

    def __init__(
        self,
        key: bytes | str | None = None,
        ttl: float = DEFAULT_STATE_TTL,
        *,
        keys: list[bytes] | None = None,
    ) -> None:
        if keys is None:
            ring = os.environ.get(STATE_KEYS_ENV) if key is None else None
            if ring:
                keys = [part.strip().encode("utf-8") for part in ring.split(",") if part.strip()]
            else:
                if key is None:
                    key = os.environ.get(STATE_KEY_ENV) or secrets.token_bytes(32)
                keys = [key.encode("utf-8") if isinstance(key, str) else key]
        if not keys:
            raise ValueError("a StateSealer needs at least one key")
        self.keys = keys
        self.ttl = ttl

    @property
    def key(self) -> bytes:
        """The key that seals (the newest of the ring)."""
        return self.keys[0]

    def seal(self, payload: Mapping[str, Any]) -> str:
        body = _b64(json.dumps({**payload, "x": int(time.time() + self.ttl)},
                               separators=(",", ":")).encode("utf-8"))
        return body + "." + _b64(hmac.new(self.keys[0], body.encode("ascii"), hashlib.sha256).digest())

    def open(self, token: Any) -> dict[str, Any]:
        """The payload of a sealed state; RpcError(-32602) if it was altered or expired."""
        body, _, tag = token.partition(".") if isinstance(token, str) else ("", "", "")
        signed, given, keys = body.encode("ascii", "replace"), tag.encode("utf-8"), self.keys
        valid = hmac.compare_digest(given, _b64(hmac.new(keys[0], signed, hashlib.sha256).digest()).encode("ascii"))
        if not valid and len(keys) > 1:  # sealed before the newest key came (rotation)
            valid = any(
                hmac.compare_digest(given, _b64(hmac.new(key, signed, hashlib.sha256).digest()).encode("ascii"))
                for key in keys[1:]
            )
        if not body or not valid:
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params: requestState failed its integrity check; "
                "retry the request without requestState and inputResponses",
            )
        payload = json.loads(_unb64(body))
        if not isinstance(payload, dict) or payload.get("x", 0) < time.time():
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params: requestState has expired; "
                "retry the request without requestState and inputResponses",
            )
        return payload


def arguments_digest(arguments: Any) -> str:
    """A short digest of a request's ``arguments`` that a sealed state is bound to: key
    order and spacing do not matter, any changed value does."""
    try:
        canonical = json.dumps(
            {} if arguments is None else arguments,
            sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr,
        )
    except (TypeError, ValueError):  # keys of mixed types (connect_direct hands objects over)
        canonical = repr(arguments)
    return _b64(hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).digest()[:16])


@runtime_checkable
class UsedStates(Protocol):
    """Where a server remembers the single-use ``requestState`` values already used.

    :class:`MemoryUsedStates` is the default; workers behind one endpoint need one shared
    store instead (with Redis, ``claim`` is ``SET <state_id> 1 NX EXAT <expires_at>``).
    """

    async def claim(self, state_id: str, expires_at: float) -> bool:
        """True the first time ``state_id`` is claimed, False after that (or when the use
        cannot be recorded). The record may go at ``expires_at`` (Unix time), when the
        state itself expires."""
        ...


class MemoryUsedStates:
    """The used single-use states of this process, each kept until its state expires, at
    most ``max_entries`` of them: when full, new claims are refused (the client starts
    the request over) rather than an unexpired record forgotten."""

    def __init__(self, max_entries: int = 100_000, clock: Callable[[], float] = time.time) -> None:
        self.max_entries = max_entries
        self.clock = clock
        self._expiry: dict[str, float] = {}
        self._by_expiry: list[tuple[float, str]] = []  # a heap
        self._warned = False

    def __len__(self) -> int:
        return len(self._expiry)

    async def claim(self, state_id: str, expires_at: float) -> bool:
        now = self.clock()
        heap = self._by_expiry
        while heap and heap[0][0] < now:
            del self._expiry[heapq.heappop(heap)[1]]
        if state_id in self._expiry:
            return False
        if len(self._expiry) >= self.max_entries:
            if not self._warned:
                logger.warning(
                    "%d single-use requestStates are in use; refusing new ones until some "
                    "expire (raise max_entries or shorten state_ttl)", len(self._expiry),
                )
                self._warned = True
            return False
        self._warned = False
        self._expiry[state_id] = expires_at
        heapq.heappush(heap, (expires_at, state_id))
        return True


def principal_tag(principal: Any) -> str | None:
    """A short, stable fingerprint of an authenticated principal (None: anonymous)."""
    if principal is None:
        return None
    return hashlib.sha256(repr(principal).encode("utf-8")).hexdigest()[:16]
