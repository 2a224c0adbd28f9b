"""The built-in server middlewares (issue 20, requirement 3): the JSON access log, timing,
the per-principal rate limit (a token bucket on a fake clock; the Redis-backed one against
a real redis-server, counted across two limiter objects as two workers would), and the
response size limit."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shared_support import Redis

from mcp_generated import v2025_11_25, v2026_07_28
from typedmcp import McpApp, Principal, RpcError
from typedmcp.connecting import connect_direct, connect_memory
from typedmcp.protocol.middleware import MiddlewareContext
from typedmcp.protocol.middleware_builtin import (
    RATE_LIMITED,
    AccessLog,
    RateLimit,
    ResponseSizeLimit,
    Timing,
    caller_key,
    rate_limited,
)
from typedmcp.state.rate_limit import RedisRateLimit

ERAS = {"handshake": v2025_11_25, "stateless": v2026_07_28}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_app(*middleware: Any) -> McpApp:
    app = McpApp("builtin", version="1.0.0", middleware=list(middleware))

    @app.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @app.tool()
    def fail(text: str) -> str:
        """Always fails (for the model to read)."""
        from typedmcp import ToolError

        raise ToolError(f"no: {text}")

    return app


def context(method: str = "tools/call", principal: Any = None, **params: Any) -> MiddlewareContext:
    return MiddlewareContext(
        method=method, params=params or None, request_id=1, kind="request", era="stateless",
        protocol_version="2026-07-28", transport="streamable-http", session_id=None, principal=principal,
    )


@pytest.mark.parametrize("era", sorted(ERAS))
def test_the_access_log_writes_one_json_line_per_request(era: str, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()

    async def main() -> None:
        async with connect_memory(make_app(AccessLog(clock=clock)), protocol=ERAS[era]) as client:
            caplog.clear()
            await client.call_tool(name="echo", arguments={"text": "hi"})
            await client.call_tool(name="fail", arguments={"text": "x"})
            with pytest.raises(RpcError):
                await client.read_resource(uri="file:///none")

    with caplog.at_level(logging.INFO, logger="typedmcp.access"):
        asyncio.run(main())
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "typedmcp.access"]
    assert [(line["method"], line.get("tool"), line["outcome"]) for line in lines] == [
        ("tools/call", "echo", "ok"), ("tools/call", "fail", "tool_error"), ("resources/read", None, "error"),
    ]
    assert lines[2]["code"] in (-32002, -32602)  # resource not found (retired in 2026-07-28)
    assert all(line["era"] == era and line["transport"] == "memory" and line["kind"] == "request" for line in lines)
    assert all(line["duration_ms"] == 0.0 and "arguments" not in line and "params" not in line for line in lines)


def test_the_access_log_names_the_subject_and_costs_nothing_when_disabled(caplog: pytest.LogCaptureFixture) -> None:
    log = AccessLog("typedmcp.access.test")
    seen: list[str] = []

    async def handler(ctx: MiddlewareContext) -> Any:
        seen.append(ctx.method)
        return {"content": []}

    async def main() -> None:
        await log(context(principal=Principal("alice", issuer="https://auth.example"), name="echo"), handler)

    with caplog.at_level(logging.INFO, logger="typedmcp.access.test"):
        asyncio.run(main())
    (line,) = [json.loads(r.getMessage()) for r in caplog.records]
    assert (line["subject"], line["tool"], line["outcome"]) == ("alice", "echo", "ok")
    caplog.clear()
    logging.getLogger("typedmcp.access.test").setLevel(logging.WARNING)
    asyncio.run(log(context(name="echo"), handler))
    assert caplog.records == [] and seen == ["tools/call", "tools/call"]


def test_timing_puts_the_duration_in_state_and_calls_back() -> None:
    clock = FakeClock()
    durations: list[tuple[str, float]] = []
    timing = Timing(lambda ctx, seconds: durations.append((ctx.method, seconds)), clock=clock)

    async def slow(ctx: MiddlewareContext) -> Any:
        clock.now += 0.25
        return {}

    ctx = context("tools/list")
    asyncio.run(timing(ctx, slow))
    assert ctx.state["duration"] == 0.25 and durations == [("tools/list", 0.25)]


def test_the_rate_limit_is_a_token_bucket_per_principal_on_a_fake_clock() -> None:
    clock = FakeClock()
    limit = RateLimit(rate=2, burst=3, clock=clock)
    alice, bob = Principal("alice", issuer="i"), Principal("bob", issuer="i")

    async def ok(ctx: MiddlewareContext) -> Any:
        return {"ok": True}

    async def call(principal: Any, method: str = "tools/call") -> Any:
        return await limit(context(method, principal, name="echo"), ok)

    async def main() -> None:
        for _ in range(3):
            assert await call(alice) == {"ok": True}  # the burst
        with pytest.raises(RpcError) as refused:
            await call(alice)
        assert refused.value.code == RATE_LIMITED
        assert refused.value.message == (
            "Rate limited: tools/call echo refused, this caller is over the server's limit of "
            "2/s (burst 3); retry in 0.50 s"
        )
        assert refused.value.data == {"retryAfterSeconds": 0.5, "limit": "2/s (burst 3)"}
        assert await call(bob) == {"ok": True}  # another principal has its own bucket
        assert await call(alice, "ping") == {"ok": True}  # ping is never counted
        clock.now += 0.5  # one token back
        assert await call(alice) == {"ok": True}
        with pytest.raises(RpcError):
            await call(alice)
        clock.now += 100  # refilled up to the burst, no more
        for _ in range(3):
            await call(alice)
        with pytest.raises(RpcError):
            await call(alice)

    asyncio.run(main())
    with pytest.raises(ValueError, match="rate is requests per second"):
        RateLimit(rate=0)


def test_the_retry_time_counts_the_part_of_a_token_already_refilled() -> None:
    clock = FakeClock()
    limit = RateLimit(rate=3, burst=1, clock=clock)
    waits = []
    for advance in (0.0, 0.0, 0.1):  # the burst; an empty bucket; 0.3 of a token back
        clock.now += advance
        try:
            asyncio.run(limit(context(), _answer))
        except RpcError as refused:
            waits.append(refused.data["retryAfterSeconds"])
    assert waits == [0.333, 0.233]  # a whole token to wait for, then (1 - 0.3) / 3, to the millisecond
    assert rate_limited(context(), -0.5, "1/s").data["retryAfterSeconds"] == 0.0  # never negative


def test_the_rate_limit_forgets_the_least_recently_seen_caller_beyond_max_callers() -> None:
    limit = RateLimit(rate=1, burst=1, clock=FakeClock(), max_callers=2)
    for caller in ("a", "b", "c"):
        assert limit.take(caller) == 0.0
    assert len(limit._buckets) == 2
    assert limit.take("b") > 0.0  # b and c are remembered, their tokens spent
    assert limit.take("a") == 0.0  # a was forgotten: a full bucket again


def test_the_burst_is_at_least_one_request() -> None:
    clock = FakeClock()
    slow = RateLimit(rate=0.5, clock=clock)  # no burst given: one request at once
    assert slow.take("k") == 0.0 and slow.take("k") > 0.0
    with pytest.raises(ValueError, match="burst is at least 1 request"):
        RateLimit(rate=1, burst=0)


async def _answer(ctx: MiddlewareContext) -> Any:
    return {}


def test_the_rate_limit_through_a_server_refuses_with_a_json_rpc_error() -> None:
    clock = FakeClock()

    async def main() -> RpcError:
        limit = RateLimit(rate=1, burst=2, clock=clock, exempt=frozenset({"server/discover", "tools/list"}))
        async with connect_direct(make_app(limit)) as client:
            await client.call_tool(name="echo", arguments={"text": "1"})
            await client.call_tool(name="echo", arguments={"text": "2"})
            with pytest.raises(RpcError) as refused:
                await client.call_tool(name="echo", arguments={"text": "3"})
            return refused.value

    error = asyncio.run(main())
    assert error.code == RATE_LIMITED and "retry in" in error.message


def test_a_rate_limit_takes_its_own_caller_key() -> None:
    clock = FakeClock()
    limit = RateLimit(rate=1, burst=1, clock=clock, key=lambda ctx: str((ctx.arguments or {}).get("tenant")))

    async def ok(ctx: MiddlewareContext) -> Any:
        return {}

    async def main() -> None:
        await limit(context(arguments={"tenant": "red"}), ok)
        await limit(context(arguments={"tenant": "blue"}), ok)  # another key: its own bucket
        with pytest.raises(RpcError):
            await limit(context(arguments={"tenant": "red"}), ok)

    asyncio.run(main())


def test_caller_key_is_the_principal_identity_else_the_session() -> None:
    assert caller_key(context(principal="alice")) != caller_key(context(principal="bob"))  # no identity fields
    refreshed = Principal("alice", issuer="i", scopes=frozenset({"more"}))
    assert caller_key(context(principal=Principal("alice", issuer="i"))) == caller_key(context(principal=refreshed))
    assert caller_key(context(principal=Principal("alice", issuer="other"))) != caller_key(context(principal=refreshed))
    anonymous = context()
    anonymous.session_id = "s-1"
    assert caller_key(anonymous) == "s:s-1"


def test_the_response_size_limit_names_the_size() -> None:
    big = "x" * 500

    async def main() -> tuple[Any, Any, RpcError]:
        async with connect_memory(make_app(ResponseSizeLimit(300)), protocol=v2025_11_25) as client:
            small = await client.call_tool(name="echo", arguments={"text": "small"})
            large = await client.call_tool(name="echo", arguments={"text": big})
            with pytest.raises(RpcError) as listed:
                async with connect_memory(make_app(ResponseSizeLimit(10)), protocol=v2025_11_25) as tiny:
                    await tiny.list_tools()
            return small, large, listed.value

    small, large, listed = asyncio.run(main())
    assert small.content[0].text == "small" and not small.is_error
    assert large.is_error
    assert large.content[0].text.startswith("The result of tools/call echo is ")
    assert large.content[0].text.endswith("bytes of JSON, over this server's response size limit of 300 bytes")
    assert listed.code == -32603 and listed.message.startswith("The result of tools/list is ")
    assert listed.data["limit"] == 10 and listed.data["size"] > 10
    with pytest.raises(ValueError, match="a number of bytes above 0"):
        ResponseSizeLimit(0)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    redis = Redis(Path(tmp_path_factory.mktemp("redis")))
    redis.start()
    try:
        yield redis.url
    finally:
        redis.stop()


def test_the_redis_rate_limit_is_shared_by_every_worker(redis_url: str) -> None:
    async def ok(ctx: MiddlewareContext) -> Any:
        return {"ok": True}

    async def main() -> None:
        worker_a = RedisRateLimit("3/minute", redis_url=redis_url)
        worker_b = RedisRateLimit("3/minute", redis_url=redis_url)  # another process's limiter
        await worker_a.reset()
        alice, bob = Principal("alice", issuer="i"), Principal("bob", issuer="i")
        assert await worker_a(context(principal=alice, name="echo"), ok) == {"ok": True}
        assert await worker_b(context(principal=alice, name="echo"), ok) == {"ok": True}
        assert await worker_a(context(principal=alice, name="echo"), ok) == {"ok": True}
        with pytest.raises(RpcError) as refused:
            await worker_b(context(principal=alice, name="echo"), ok)
        assert refused.value.code == RATE_LIMITED
        assert "over the server's limit of 3/minute" in refused.value.message
        assert 0 < refused.value.data["retryAfterSeconds"] <= 60
        assert await worker_b(context(principal=bob, name="echo"), ok) == {"ok": True}
        assert await worker_b(context("ping", principal=alice), ok) == {"ok": True}
        await worker_a.reset()

    asyncio.run(main())


def test_the_redis_rate_limit_refuses_bad_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_REDIS_URL", raising=False)
    with pytest.raises(ValueError, match="RedisRateLimit needs a Redis"):
        RedisRateLimit("3/minute")
    with pytest.raises(ValueError, match="write it as '100/minute'"):
        RedisRateLimit("three a minute", redis_url="redis://127.0.0.1:1/0")


def test_the_redis_rate_limit_takes_an_async_redis_url_as_it_is(redis_url: str) -> None:
    async def ok(ctx: MiddlewareContext) -> Any:
        return {"ok": True}

    async def main() -> None:
        limit = RedisRateLimit("5/minute", redis_url="async+" + redis_url, key_prefix="mcp-rate-async-url")
        assert await limit(context(principal=Principal("carol", issuer="i"), name="echo"), ok) == {"ok": True}
        await limit.reset()

    asyncio.run(main())


def test_the_redis_rate_limit_without_the_limits_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "limits", None)  # (None in sys.modules: the import fails)
    with pytest.raises(ImportError, match=r"pip install 'typedmcp\[ratelimit\]'"):
        RedisRateLimit("3/minute", redis_url="redis://127.0.0.1:1/0")
