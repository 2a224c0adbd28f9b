"""Server middleware (issue 20, requirement 3), in process: one ordered chain around every
request and notification, in both eras, that can rewrite params, short-circuit, refuse and
time; configured on ``McpApp`` and on the low-level launchers (``serve``, ``http_app``,
``run_stdio``), with misspelt options refused; nothing on the path without middleware."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from mcp_generated import v2025_11_25, v2026_07_28
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ServerHandlers
from typedmcp import McpApp, RpcError, ToolError, UnknownOptionError, serve
from typedmcp.connecting import connect_direct, connect_memory
from typedmcp.protocol.middleware import CallNext, MiddlewareChain, MiddlewareContext, middleware_chain
from typedmcp.stateless.router import build_router

ERAS = {"handshake": v2025_11_25, "stateless": v2026_07_28}
CONNECTORS = {"memory": connect_memory, "direct": connect_direct}


def make_app(handled: list[str], *middleware: Any) -> McpApp:
    app = McpApp("mw", version="1.0.0", middleware=list(middleware))

    @app.tool()
    def echo(text: str) -> str:
        """Say it back."""
        handled.append(text)
        return text

    return app


def recorder(seen: list[MiddlewareContext]) -> Callable[[MiddlewareContext, CallNext], Awaitable[Any]]:
    async def record(ctx: MiddlewareContext, call_next: CallNext) -> Any:
        seen.append(ctx)
        return await call_next(ctx)

    return record


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


def text_of(result: Any) -> str:
    return result.content[0].text  # type: ignore[no-any-return]


@pytest.mark.parametrize("connector", sorted(CONNECTORS))
@pytest.mark.parametrize("era", sorted(ERAS))
def test_the_chain_runs_in_order_around_the_handler_in_both_eras(era: str, connector: str) -> None:
    trace: list[str] = []

    def named(name: str) -> Any:
        async def middleware(ctx: MiddlewareContext, call_next: CallNext) -> Any:
            if ctx.method != "tools/call":
                return await call_next(ctx)
            trace.append(f"{name} in")
            result = await call_next(ctx)
            trace.append(f"{name} out")
            return result

        return middleware

    handled: list[str] = []
    app = make_app(handled, named("outer"), named("inner"))

    async def main() -> str:
        async with CONNECTORS[connector](app, protocol=ERAS[era]) as client:
            return text_of(await client.call_tool(name="echo", arguments={"text": "hi"}))

    assert run(main()) == "hi"
    assert trace == ["outer in", "inner in", "inner out", "outer out"]
    assert handled == ["hi"]


@pytest.mark.parametrize("era", sorted(ERAS))
def test_the_context_tells_method_tool_era_version_transport_and_ids(era: str) -> None:
    seen: list[MiddlewareContext] = []
    app = make_app([], recorder(seen))

    async def main() -> None:
        async with connect_memory(app, protocol=ERAS[era]) as client:
            await client.call_tool(name="echo", arguments={"text": "hi"})

    run(main())
    call = next(ctx for ctx in seen if ctx.method == "tools/call")
    assert (call.kind, call.era, call.protocol_version) == ("request", era, ERAS[era].PROTOCOL_VERSION)
    assert (call.tool_name, call.arguments, call.transport) == ("echo", {"text": "hi"}, "memory")
    assert call.request_id is not None and call.session_id is None and call.principal is None
    assert call.headers == {} and call.subject is None
    if era == "handshake":  # initialize and notifications/initialized pass the chain too
        assert [ctx.method for ctx in seen][:2] == ["initialize", "notifications/initialized"]
        assert seen[1].kind == "notification" and seen[1].request_id is None


@pytest.mark.parametrize("connector", sorted(CONNECTORS))
@pytest.mark.parametrize("era", sorted(ERAS))
def test_a_middleware_rewrites_params_short_circuits_and_refuses(era: str, connector: str) -> None:
    async def policy(ctx: MiddlewareContext, call_next: CallNext) -> Any:
        arguments = ctx.arguments or {}
        if ctx.tool_name == "echo" and arguments.get("text") == "shout":
            ctx.params = {**ctx.params, "arguments": {"text": "SHOUT"}}  # the handler sees this
        elif ctx.tool_name == "echo" and arguments.get("text") == "cached":
            return {"content": [{"type": "text", "text": "from the cache"}]}  # no handler
        elif ctx.tool_name == "echo" and arguments.get("text") == "secret":
            raise RpcError(-32001, "Forbidden: echo may not say that")
        elif ctx.tool_name == "echo" and arguments.get("text") == "soft":
            raise ToolError("echo refuses to say that")
        return await call_next(ctx)

    handled: list[str] = []
    app = make_app(handled, policy)

    async def main() -> tuple[str, Any, RpcError, Any]:
        async with CONNECTORS[connector](app, protocol=ERAS[era]) as client:
            shouted = text_of(await client.call_tool(name="echo", arguments={"text": "shout"}))
            cached = await client.call_tool(name="echo", arguments={"text": "cached"})
            with pytest.raises(RpcError) as refused:
                await client.call_tool(name="echo", arguments={"text": "secret"})
            soft = await client.call_tool(name="echo", arguments={"text": "soft"})
            return shouted, cached, refused.value, soft

    shouted, cached, refused, soft = run(main())
    assert shouted == "SHOUT"
    assert text_of(cached) == "from the cache" and not cached.is_error
    if era == "stateless":  # a short-circuit result is completed as a handler's would be
        assert cached.result_type == "complete"
        assert cached.meta is not None and cached.meta.server_info.name == "mw"
    assert (refused.code, refused.message) == (-32001, "Forbidden: echo may not say that")
    assert soft.is_error and text_of(soft) == "echo refuses to say that"
    assert handled == ["SHOUT"]  # the handler ran only for the rewritten call


def test_notifications_pass_the_chain_in_the_handshake_era() -> None:
    seen: list[MiddlewareContext] = []
    cancelled: list[Any] = []

    class Handlers(ServerHandlers):
        async def on_cancelled(self, params: Any, ctx: Any) -> None:
            cancelled.append(params.request_id)

    async def main() -> None:
        async with connect_memory(Handlers(), protocol=v2025_11_25, server_options={"middleware": [recorder(seen)]}) as client:
            await client.session.engine.notify("notifications/cancelled", {"requestId": 99})
            await client.ping()
            for _ in range(100):
                if cancelled:
                    break
                await asyncio.sleep(0)  # (the user's hook runs in a task of its own)

    run(main())
    notes = [(ctx.method, ctx.params) for ctx in seen if ctx.kind == "notification"]
    assert ("notifications/cancelled", {"requestId": 99}) in notes
    assert cancelled == [99]


def test_a_stateless_era_cancel_passes_the_chain() -> None:
    seen: list[MiddlewareContext] = []
    router = build_router(make_app([]), middleware=[recorder(seen)], packages=[v2026_07_28])

    async def main() -> None:
        await router.on_notification("notifications/cancelled", {"requestId": 7})

    run(main())
    assert [(ctx.method, ctx.kind, ctx.era) for ctx in seen] == [("notifications/cancelled", "notification", "stateless")]


def test_a_middleware_can_stop_a_notification() -> None:
    cancelled: list[Any] = []

    class Handlers(ServerHandlers):
        async def on_cancelled(self, params: Any, ctx: Any) -> None:
            cancelled.append(params.request_id)

    async def swallow(ctx: MiddlewareContext, call_next: CallNext) -> Any:
        if ctx.method == "notifications/cancelled":
            return None
        return await call_next(ctx)

    async def main() -> None:
        async with connect_memory(Handlers(), protocol=v2025_11_25, server_options={"middleware": [swallow]}) as client:
            await client.session.engine.notify("notifications/cancelled", {"requestId": 1})
            await client.ping()
            await asyncio.sleep(0)

    run(main())
    assert cancelled == []


def test_app_add_middleware_appends_inside_the_ones_before() -> None:
    trace: list[str] = []

    def named(name: str) -> Any:
        async def middleware(ctx: MiddlewareContext, call_next: CallNext) -> Any:
            if ctx.method == "tools/call":
                trace.append(name)
            return await call_next(ctx)

        return middleware

    app = make_app([], named("first"))
    app.add_middleware(named("second"))

    async def main() -> None:
        async with connect_direct(app) as client:
            await client.call_tool(name="echo", arguments={"text": "x"})

    run(main())
    assert trace == ["first", "second"]
    with pytest.raises(TypeError, match="a middleware must be callable"):
        app.add_middleware("access_log")  # type: ignore[arg-type]


def test_without_middleware_the_sessions_have_no_chain() -> None:
    router = build_router(make_app([]))
    assert router.legacy is not None and router.modern is not None
    assert router.legacy.middleware is None and router.modern.middleware is None
    assert middleware_chain([]) is None and middleware_chain(None) is None
    chain = MiddlewareChain([recorder([])])
    assert middleware_chain(chain) is chain


def test_the_launchers_take_middleware_and_refuse_a_misspelling() -> None:
    with pytest.raises(UnknownOptionError, match=r"middlewares=.*did you mean middleware="):
        run(serve(make_app([]), None, middlewares=[]))
    with pytest.raises(TypeError, match=r"middleware= takes a list of middlewares"):
        build_router(make_app([]), middleware=recorder([]))
    router = build_router(make_app([]), middleware=[recorder([])])
    assert router.legacy is not None and len(router.legacy.middleware or ()) == 1
    from typedmcp.serving import http_options, server_options

    assert "middleware" in server_options() and "middleware" in http_options()


def test_a_failing_middleware_is_an_internal_error_not_a_traceback() -> None:
    async def broken(ctx: MiddlewareContext, call_next: CallNext) -> Any:
        if ctx.method == "tools/call":
            raise KeyError("oops")
        return await call_next(ctx)

    async def main() -> RpcError:
        async with connect_memory(make_app([], broken), protocol=v2025_11_25) as client:
            with pytest.raises(RpcError) as failed:
                await client.call_tool(name="echo", arguments={"text": "x"})
            return failed.value

    error = run(main())
    assert (error.code, error.message) == (-32603, "Internal error")


def test_a_low_level_handler_object_gets_the_chain_from_serve_options() -> None:
    seen: list[MiddlewareContext] = []

    class Tools(ServerHandlers):
        async def list_tools(self, params: Any, ctx: Any) -> models.ListToolsResult:
            return models.ListToolsResult(tools=[])

    async def main() -> None:
        async with connect_memory(Tools(), server_options={"middleware": [recorder(seen)]}) as client:
            await client.list_tools()

    run(main())
    assert "tools/list" in [ctx.method for ctx in seen]


def test_a_launchers_middleware_replaces_the_apps() -> None:
    app_seen: list[MiddlewareContext] = []
    launcher_seen: list[MiddlewareContext] = []
    app = make_app([], recorder(app_seen))

    async def main() -> None:
        async with connect_direct(app, server_options={"middleware": [recorder(launcher_seen)]}) as client:
            await client.call_tool(name="echo", arguments={"text": "x"})

    run(main())
    assert app_seen == [] and "tools/call" in [ctx.method for ctx in launcher_seen]
