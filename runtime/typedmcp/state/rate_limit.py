"""A per-principal rate limit whose counts live in Redis, so every worker of a deployment
counts against the same limit: :class:`RedisRateLimit`, a server middleware.

The counting is the ``limits`` library's (a maintained rate limiter with a Redis storage;
the optional extra ``typedmcp[ratelimit]``): its moving window, run in Redis by its own Lua
scripts, so a check is one round trip and atomic across workers. The in-memory token
bucket (one process) is :class:`~typedmcp.protocol.middleware_builtin.RateLimit`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from ..protocol.middleware import CallNext, MiddlewareContext
from ..protocol.middleware_builtin import LIFECYCLE, caller_key, rate_limited
from .connection import REDIS_URL_ENV

#: Where the counts are kept in Redis (under the limiter's own key prefix).
DEFAULT_KEY_PREFIX = "mcp-rate"


class RedisRateLimit:
    """At most ``limit`` requests per caller per window (``"100/minute"``, ``"5/second"``:
    the ``limits`` notation), counted in Redis at ``redis_url`` (default: ``MCP_REDIS_URL``).

    A request over it is refused with -32029 (as :class:`RateLimit`), with
    ``data.retryAfterSeconds`` from the window. Notifications and the lifecycle
    (``initialize``, ``server/discover``, ``ping``) are not counted; ``key(ctx)`` names
    the caller (default: ``caller_key``). If Redis cannot be reached, the request fails
    (-32603, logged): a limit that silently stopped limiting would be worse."""

    def __init__(
        self, limit: str, *, redis_url: str | None = None, key_prefix: str = DEFAULT_KEY_PREFIX,
        exempt: frozenset[str] = LIFECYCLE, key: Callable[[MiddlewareContext], str] = caller_key,
    ) -> None:
        try:
            import limits
            from limits.aio.storage import RedisStorage
            from limits.aio.strategies import MovingWindowRateLimiter
        except ImportError:  # pragma: no cover - the extra is installed in CI
            raise ImportError(
                "RedisRateLimit needs the `limits` package: pip install 'typedmcp[ratelimit]'"
            ) from None
        url = redis_url or os.environ.get(REDIS_URL_ENV)
        if not url:
            raise ValueError(
                f"RedisRateLimit needs a Redis: pass redis_url='redis://host:6379/0' or set {REDIS_URL_ENV}"
            )
        try:
            self.item = limits.parse(limit)
        except ValueError as error:
            raise ValueError(
                f"RedisRateLimit({limit!r}): not a rate limit ({error}); write it as '100/minute' or '5/second'"
            ) from None
        self.limit = limit
        self.exempt = exempt
        self.key = key
        self.storage = RedisStorage(
            "async+" + url if not url.startswith("async+") else url,
            implementation="redispy",
            key_prefix=key_prefix,
            wrap_exceptions=True,
        )
        self.limiter = MovingWindowRateLimiter(self.storage)

    async def __call__(self, ctx: MiddlewareContext, call_next: CallNext) -> Any:
        if ctx.kind == "request" and ctx.method not in self.exempt:
            key = self.key(ctx)
            if not await self.limiter.hit(self.item, key):
                stats = await self.limiter.get_window_stats(self.item, key)
                raise rate_limited(ctx, stats.reset_time - time.time(), self.limit)
        return await call_next(ctx)

    async def reset(self) -> None:
        """Forget every count (tests, or after changing the limit)."""
        await self.storage.reset()
