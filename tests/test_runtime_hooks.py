"""Hooks the runtime answers itself cannot be overridden by mistake (issue 11, item 10).

Before, a ``ServerHandlers`` subclass could override ``initialize``, ``ping``, ``set_level``
(or, in 2026-07-28, ``discover`` and ``subscriptions_listen``) and the runtime's built-ins
silently won; a ``ClientHandlers`` subclass likewise for ``ping``; with ``tasks=True`` the
``tasks/*`` overrides were never called; and ``Client.initialize()`` was public but could
only fail ("the session is already initialized"). Now the class is refused when it is
made, naming the hook to use instead; ``tasks/*`` overrides are refused when a session with
``tasks=True`` is made; the typed ``Client`` has no method for the handshake. The set of
refused hooks is derived from the runtime's built-in classes and the dispatch tables.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import mcp_generated.v2025_11_25 as v2025
import mcp_generated.v2026_07_28 as v2026
from mcp_generated.v2025_11_25 import client as client25
from mcp_generated.v2025_11_25 import models as models25
from mcp_generated.v2025_11_25 import server as server25
from mcp_generated.v2026_07_28 import client as client26
from mcp_generated.v2026_07_28 import server as server26
from typedmcp.connecting import connect_memory
from typedmcp.protocol.client import ClientSession
from typedmcp.protocol.hooks import BUILTINS, runtime_hooks
from typedmcp.protocol.server import ServerSession
from typedmcp.protocol.stubs import RequestContext
from typedmcp.stateless.server import StatelessServer

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def hook(self: Any, params: Any, ctx: Any) -> Any:
    return {}


def subclass(base: type, name: str) -> type:
    return type("Mine", (base,), {name: hook})


@pytest.mark.parametrize(
    ("base", "name", "method", "instead"),
    [
        (server25.ServerHandlers, "initialize", "initialize", "server_info="),
        (server25.ServerHandlers, "ping", "ping", "answers ping at once"),
        (server25.ServerHandlers, "set_level", "logging/setLevel", "ctx.log(level, data)"),
        (server26.ServerHandlers, "discover", "server/discover", "instructions="),
        (server26.ServerHandlers, "subscriptions_listen", "subscriptions/listen", "send_tool_list_changed()"),
        # a 2025-11-25 class is served in the stateless era too (2026-07-28 is beside it)
        (server25.ServerHandlers, "discover", "server/discover", "instructions="),
        (client25.ClientHandlers, "ping", "ping", "answers ping at once"),
        # and a 2026-07-28 client in the handshake era, where servers ping
        (client26.ClientHandlers, "ping", "ping", "answers ping at once"),
    ],
)
def test_overriding_a_hook_the_runtime_answers_is_refused_when_the_class_is_made(
    base: type, name: str, method: str, instead: str
) -> None:
    with pytest.raises(TypeError) as refused:
        subclass(base, name)
    message = str(refused.value)
    assert message.startswith(
        f"Mine.{name} would never be called: the runtime answers {method} itself. "
    )
    assert instead in message and message.endswith(f"Remove {name} from Mine.")


def test_the_refused_hooks_come_from_the_builtins_and_the_dispatch_tables() -> None:
    assert set(runtime_hooks("server", v2025.__name__)) == {
        "initialize", "ping", "set_level", "discover", "subscriptions_listen"
    }
    assert set(runtime_hooks("client", v2026.__name__)) == {"ping"}


def test_the_builtin_classes_named_are_those_the_sessions_use() -> None:
    class Tools(server25.ServerHandlers):
        async def list_tools(
            self, params: models25.PaginatedRequestParams | None, ctx: RequestContext[server25.ClientPeer]
        ) -> models25.ListToolsResult:
            return models25.ListToolsResult(tools=[])

    used = {
        "server": {type(ServerSession(Tools()).builtins), type(StatelessServer(Tools()).builtins)},
        "client": {type(ClientSession().builtins)},
    }
    for side, classes in used.items():
        assert {(c.__module__.removeprefix("typedmcp."), c.__name__) for c in classes} == set(BUILTINS[side])


def test_hooks_the_runtime_does_not_own_may_be_overridden() -> None:
    for base, name in [
        (server25.ServerHandlers, "list_tools"),
        (server25.ServerHandlers, "on_initialized"),
        (server25.ServerHandlers, "on_cancelled"),
        (server25.ServerHandlers, "get_task"),  # the user's own tasks, without tasks=True
        (client25.ClientHandlers, "on_progress"),
        (client25.ClientHandlers, "on_cancelled"),
        (client26.ClientHandlers, "elicit"),
    ]:
        subclass(base, name)


def test_with_tasks_the_runtime_answers_tasks_and_an_override_is_refused() -> None:
    class OwnTasks(server25.ServerHandlers):
        async def get_task(
            self, params: models25.GetTaskRequestParams, ctx: RequestContext[server25.ClientPeer]
        ) -> models25.GetTaskResult:
            raise NotImplementedError

    ServerSession(OwnTasks())  # without tasks=True the hook is the user's
    with pytest.raises(ValueError, match=r"^OwnTasks.get_task would never be called: with tasks=True"):
        ServerSession(OwnTasks(), tasks=True)

    class ClientTasks(client25.ClientHandlers):
        async def list_tasks(
            self, params: models25.PaginatedRequestParams | None, ctx: RequestContext[client25.Client]
        ) -> models25.ListTasksResult:
            raise NotImplementedError

    ClientSession(v2025, ClientTasks())
    with pytest.raises(ValueError, match="pass tasks=False to answer tasks yourself"):
        ClientSession(v2025, ClientTasks(), tasks=True)


def test_the_client_offers_no_method_for_the_handshake() -> None:
    for name in ("initialize", "send_initialized"):
        assert not hasattr(client25.Client, name)
    assert callable(client25.Client.ping) and callable(client25.Client.set_level)


async def test_a_cancellation_reaches_the_runtime_and_the_users_on_cancelled() -> None:
    """Notification hooks are honoured: the runtime cancels the handler, and the user's
    ``on_cancelled`` is called too."""
    started, cancelled_seen = asyncio.Event(), asyncio.Event()
    handler_cancelled: list[bool] = []

    class Slow(server25.ServerHandlers):
        async def list_tools(
            self, params: models25.PaginatedRequestParams | None, ctx: RequestContext[server25.ClientPeer]
        ) -> models25.ListToolsResult:
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                handler_cancelled.append(True)
                raise
            return models25.ListToolsResult(tools=[])

        async def on_cancelled(
            self, params: models25.CancelledNotificationParams, ctx: RequestContext[server25.ClientPeer]
        ) -> None:
            cancelled_seen.set()

    async def body() -> None:
        async with connect_memory(Slow(), client=client25.Client, protocol=v2025) as client:
            call = asyncio.ensure_future(client.list_tools())
            await started.wait()
            call.cancel()
            await cancelled_seen.wait()
        assert handler_cancelled == [True]

    await asyncio.wait_for(body(), 20)
