"""Built-in server middlewares: an access log, timing, a per-principal rate limit (in
memory; ``typedmcp.state.rate_limit`` has the Redis one) and a response size limit.

::

    http_app(app, middleware=[AccessLog(), RateLimit(rate=5, burst=20), ResponseSizeLimit(1_000_000)])
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from pydantic_core import to_json

from ..engine.jsonrpc import INTERNAL_ERROR, TOO_MANY_REQUESTS, RpcError
from .middleware import CALL_TOOL, CallNext, MiddlewareContext
from .results import json_data

#: The JSON-RPC error of a rate-limited request (implementation-defined server error range).
RATE_LIMITED = TOO_MANY_REQUESTS
#: What the rate and response size limits leave alone by default: a client that cannot
#: start (or tell the server is alive) could never get under a limit.
LIFECYCLE = frozenset({"initialize", "server/discover", "ping"})
#: The logger the access log writes to, one JSON object per line.
ACCESS_LOGGER = "typedmcp.access"


def caller_key(ctx: MiddlewareContext) -> str:
    """Whom a rate limit counts a request against: the principal's identity (issuer,
    subject, client_id), else the HTTP session, else the transport (one stdio client).
    Without auth, every stateless-era HTTP caller has the same key (one shared limit):
    give the limiter a ``key=`` of your own to tell them apart (a header your proxy sets)."""
    principal = ctx.principal
    if principal is not None:
        parts = [getattr(principal, name, None) for name in ("issuer", "subject", "client_id")]
        if any(isinstance(part, str) for part in parts):
            return "p:" + "|".join(part if isinstance(part, str) else "" for part in parts)
        return f"p:{principal!r}"
    if ctx.session_id is not None:
        return "s:" + ctx.session_id
    return "t:" + ctx.transport


def rate_limited(ctx: MiddlewareContext, retry_after: float, limit: str) -> RpcError:
    """The error a refused request gets: -32029, naming the method, the limit and when
    to retry (``data.retryAfterSeconds``)."""
    what = f"{ctx.method} {ctx.tool_name}" if ctx.tool_name else ctx.method
    wait = max(0.0, retry_after)
    return RpcError(
        RATE_LIMITED,
        f"Rate limited: {what} refused, this caller is over the server's limit of {limit}; "
        f"retry in {wait:.2f} s",
        {"retryAfterSeconds": round(wait, 3), "limit": limit},
    )


class AccessLog:
    """One JSON line per request (and notification) on ``logger`` (``typedmcp.access``,
    level INFO): kind, method, tool, request id, duration in ms, outcome (``ok``,
    ``tool_error`` for an ``isError`` result, ``error`` with its JSON-RPC ``code``,
    ``exception``), principal subject, session id, transport, era and protocol version.
    No params and no arguments are logged."""

    def __init__(
        self, logger: logging.Logger | str = ACCESS_LOGGER, *, level: int = logging.INFO,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.logger = logging.getLogger(logger) if isinstance(logger, str) else logger
        self.level = level
        self.clock = clock

    async def __call__(self, ctx: MiddlewareContext, call_next: CallNext) -> Any:
        if not self.logger.isEnabledFor(self.level):
            return await call_next(ctx)
        started = self.clock()
        record: dict[str, Any] = {"kind": ctx.kind, "method": ctx.method}
        if ctx.tool_name is not None:
            record["tool"] = ctx.tool_name
        if ctx.request_id is not None:
            record["id"] = ctx.request_id
        try:
            result = await call_next(ctx)
        except RpcError as error:
            record.update(outcome="error", code=error.code)
            raise
        except BaseException as error:
            record.update(outcome="exception", error=type(error).__name__)
            raise
        else:
            is_error = isinstance(result, dict) and result.get("isError") is True
            record["outcome"] = "tool_error" if is_error or getattr(result, "is_error", None) is True else "ok"
            return result
        finally:
            record["duration_ms"] = round((self.clock() - started) * 1000, 3)
            record.update(
                subject=ctx.subject, session=ctx.session_id, transport=ctx.transport,
                era=ctx.era, version=ctx.protocol_version,
            )
            self.logger.log(self.level, to_json(record, fallback=str).decode())


class Timing:
    """Put how long the rest of the chain took (seconds) into ``ctx.state[key]``, and
    give it to ``on_duration(ctx, seconds)`` if set (a metrics histogram, say)."""

    def __init__(
        self, on_duration: Callable[[MiddlewareContext, float], Any] | None = None, *,
        key: str = "duration", clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.on_duration = on_duration
        self.key = key
        self.clock = clock

    async def __call__(self, ctx: MiddlewareContext, call_next: CallNext) -> Any:
        started = self.clock()
        try:
            return await call_next(ctx)
        finally:
            elapsed = ctx.state[self.key] = self.clock() - started
            if self.on_duration is not None:
                self.on_duration(ctx, elapsed)


class RateLimit:
    """A token bucket per caller (:func:`caller_key`: the principal, else the session),
    in this process's memory: ``burst`` requests at once, refilled at ``rate`` per
    second. A request over it is refused with -32029 (:func:`rate_limited`), a
    ``tools/call`` too: a rate limit is about the caller, not the tool, so the client
    application (not the model) gets it, with ``data.retryAfterSeconds``.

    Notifications and the lifecycle (:data:`LIFECYCLE`: ``initialize``,
    ``server/discover``, ``ping``) are not counted (``exempt``). At most ``max_callers``
    buckets are kept (the least recently used go first). ``key(ctx)`` names the caller
    (default :func:`caller_key`). Several workers: use
    :class:`~typedmcp.state.rate_limit.RedisRateLimit`."""

    def __init__(
        self, rate: float, burst: int | None = None, *, exempt: frozenset[str] = LIFECYCLE,
        clock: Callable[[], float] = time.monotonic, max_callers: int = 100_000,
        key: Callable[[MiddlewareContext], str] = caller_key,
    ) -> None:
        if not rate > 0 or not math.isfinite(rate):
            raise ValueError(f"RateLimit(rate={rate!r}): rate is requests per second, a number above 0")
        self.rate = float(rate)
        self.burst = int(burst) if burst is not None else max(1, math.ceil(rate))
        if self.burst < 1:
            raise ValueError(f"RateLimit(burst={burst!r}): burst is at least 1 request")
        self.exempt = exempt
        self.clock = clock
        self.max_callers = max_callers
        self.key = key
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    @property
    def limit(self) -> str:
        return f"{self.rate:g}/s (burst {self.burst})"

    def take(self, key: str) -> float:
        """Take one token from ``key``'s bucket: 0.0 if there was one, else the seconds
        until there is."""
        now = self.clock()
        tokens, then = self._buckets.pop(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - then) * self.rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.rate
        self._buckets[key] = (tokens, now)
        if len(self._buckets) > self.max_callers:
            self._buckets.popitem(last=False)
        return wait

    async def __call__(self, ctx: MiddlewareContext, call_next: CallNext) -> Any:
        if ctx.kind == "request" and ctx.method not in self.exempt:
            wait = self.take(self.key(ctx))
            if wait > 0.0:
                raise rate_limited(ctx, wait, self.limit)
        return await call_next(ctx)


class ResponseSizeLimit:
    """A result whose JSON is over ``max_bytes`` is not sent. A ``tools/call`` gets an
    ``isError`` result naming the size and the limit (the model can ask for less); any
    other method -32603 with the same message. The size is that of the result's JSON
    (compact, UTF-8), before the JSON-RPC envelope. The lifecycle (:data:`LIFECYCLE`)
    is left alone (``exempt``)."""

    def __init__(self, max_bytes: int, *, exempt: frozenset[str] = LIFECYCLE) -> None:
        if not isinstance(max_bytes, int) or max_bytes < 1:
            raise ValueError(f"ResponseSizeLimit(max_bytes={max_bytes!r}): a number of bytes above 0")
        self.max_bytes = max_bytes
        self.exempt = exempt

    async def __call__(self, ctx: MiddlewareContext, call_next: CallNext) -> Any:
        result = await call_next(ctx)
        if ctx.kind != "request" or result is None or ctx.method in self.exempt:
            return result
        size = len(to_json(json_data(result)))
        if size <= self.max_bytes:
            return result
        what = f"{ctx.method} {ctx.tool_name}" if ctx.tool_name else ctx.method
        message = (
            f"The result of {what} is {size} bytes of JSON, over this server's response "
            f"size limit of {self.max_bytes} bytes"
        )
        if ctx.method == CALL_TOOL:
            return {"content": [{"type": "text", "text": message}], "isError": True}
        raise RpcError(INTERNAL_ERROR, message, {"size": size, "limit": self.max_bytes})
