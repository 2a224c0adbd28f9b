"""The example servers as users run them, spoken to by our client over real transports.

``examples/conformance_server.py --port P`` runs as a subprocess (one endpoint, both eras, as
the conformance suite drives it); several clients of both eras are connected at once.
``examples/weather_server.py`` runs over stdio. These tests pin what the examples teach:
change notifications published once reach every listener of both eras, and a tool that
cannot do its work for this client answers a short tool error, never a library's dump.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from conftest import free_port, stop_process, wait_listening

import mcp_generated.v2025_06_18
import mcp_generated.v2025_11_25
import mcp_generated.v2026_07_28
from typedmcp.connecting import connect_http, connect_stdio
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol.stubs import RequestContext
from mcp_generated.v2025_06_18 import client as client_0618
from mcp_generated.v2025_06_18 import models as models_0618
from mcp_generated.v2025_11_25 import client as client_1125
from mcp_generated.v2025_11_25 import models as models_1125

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parent.parent
CONFORMANCE_SERVER = REPO / "examples" / "conformance_server.py"
WEATHER_SERVER = REPO / "examples" / "weather_server.py"
WATCHED = "test://watched-resource"
UPDATED = "notifications/resources/updated"
ERAS = {
    "2026-07-28": mcp_generated.v2026_07_28,
    "2025-11-25": mcp_generated.v2025_11_25,
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """``conformance_server.py --port P``, every revision offered, for this module."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(CONFORMANCE_SERVER), "--port", str(port)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(process, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process, strict=True)


async def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content]


class UpdateHooks(client_1125.ClientHandlers):
    """A handshake-era client that records the ``resources/updated`` it receives."""

    def __init__(self) -> None:
        self.updated: list[str] = []

    async def on_resource_updated(
        self,
        params: models_1125.ResourceUpdatedNotificationParams,
        ctx: RequestContext[client_1125.Client],
    ) -> None:
        self.updated.append(params.uri)


# -- test_update_watched_resource: one publication, every subscriber of both eras ------------


@pytest.mark.parametrize("caller_era", list(ERAS))
async def test_a_listen_subscriber_alone_hears_update_watched_resource(
    server_url: str, caller_era: str
) -> None:
    """No handshake-era session subscribed: the 2026-07-28 listen stream is told all the same."""
    async with (
        connect_http(server_url, protocol=ERAS["2026-07-28"]) as listener,
        listener.session.listen(resource_subscriptions=[WATCHED], timeout=10) as watching,
        connect_http(server_url, protocol=ERAS[caller_era]) as caller,
    ):
        await caller.call_tool(name="test_update_watched_resource", arguments={"content": "alone"})
        notification = await watching.get(timeout=10)
    assert notification.method == UPDATED
    assert notification.params.uri == WATCHED


@pytest.mark.parametrize("caller_era", list(ERAS))
async def test_update_watched_resource_reaches_listen_streams_and_subscribed_sessions(
    server_url: str, caller_era: str
) -> None:
    async with AsyncExitStack() as stack:

        async def connect(era: str, handlers: object | None = None) -> Any:
            return await stack.enter_async_context(
                connect_http(server_url, protocol=ERAS[era], handlers=handlers)
            )

        listener = await connect("2026-07-28")
        watching = await stack.enter_async_context(
            listener.session.listen(resource_subscriptions=[WATCHED], timeout=10)
        )
        elsewhere = await stack.enter_async_context(
            listener.session.listen(resource_subscriptions=["test://static-text"], timeout=10)
        )
        subscriber_hooks, bystander_hooks = UpdateHooks(), UpdateHooks()
        subscriber = await connect("2025-11-25", subscriber_hooks)
        await subscriber.subscribe(uri=WATCHED)
        bystander = await connect("2025-11-25", bystander_hooks)
        caller = await connect(caller_era)

        result = await caller.call_tool(
            name="test_update_watched_resource", arguments={"content": f"set by {caller_era}"}
        )
        assert texts(result) == ["Watched resource updated"]
        assert not result.is_error

        notification = await watching.get(timeout=10)
        assert notification.method == UPDATED
        assert notification.params.uri == WATCHED
        await eventually(lambda: subscriber_hooks.updated == [WATCHED])
        read = await bystander.read_resource(uri=WATCHED)
        assert [c.text for c in read.contents] == [f"set by {caller_era}"]
        await bystander.ping()
        await subscriber.ping()
        await asyncio.sleep(0.2)  # anything misrouted would have arrived by now
        assert bystander_hooks.updated == []  # not subscribed: not told
        assert subscriber_hooks.updated == [WATCHED]  # told once
        with pytest.raises(asyncio.TimeoutError):
            await elsewhere.get(timeout=0.2)  # a listen stream for another resource
        with pytest.raises(asyncio.TimeoutError):
            await watching.get(timeout=0.2)  # told once


async def test_an_unsubscribed_session_hears_no_more_updates(server_url: str) -> None:
    hooks = UpdateHooks()
    async with connect_http(server_url, protocol=ERAS["2025-11-25"], handlers=hooks) as client:
        await client.subscribe(uri=WATCHED)
        await client.call_tool(name="test_update_watched_resource", arguments={"content": "one"})
        await eventually(lambda: hooks.updated == [WATCHED])
        await client.unsubscribe(uri=WATCHED)
        await client.call_tool(name="test_update_watched_resource", arguments={"content": "two"})
        await client.ping()
        await asyncio.sleep(0.2)
        assert hooks.updated == [WATCHED]


class ListHooks(client_1125.ClientHandlers):
    """A handshake-era client that counts the tools list_changed it receives."""

    def __init__(self) -> None:
        self.tools_changed = 0

    async def on_tool_list_changed(
        self,
        params: models_1125.NotificationParams | None,
        ctx: RequestContext[client_1125.Client],
    ) -> None:
        self.tools_changed += 1


async def test_trigger_tool_change_reaches_every_handshake_session(server_url: str) -> None:
    """Published on the ChangeFeed from inside one session's request: the caller and another
    session are each told once (over HTTP each on its own GET stream)."""
    caller_hooks, other_hooks = ListHooks(), ListHooks()
    async with (
        connect_http(server_url, protocol=ERAS["2025-11-25"], handlers=caller_hooks) as caller,
        connect_http(server_url, protocol=ERAS["2025-11-25"], handlers=other_hooks),
    ):
        await caller.call_tool(name="test_trigger_tool_change", arguments={})
        try:
            await eventually(lambda: (caller_hooks.tools_changed, other_hooks.tools_changed) == (1, 1))
        finally:
            await caller.call_tool(name="test_trigger_tool_change", arguments={})  # hide it again
        await eventually(lambda: (caller_hooks.tools_changed, other_hooks.tools_changed) == (2, 2))


# -- a tool that cannot do its work for this client: a short tool error ----------------------


class Accepting0618(client_0618.ClientHandlers):
    """A 2025-06-18 client that would accept any form (and records that it was asked)."""

    def __init__(self) -> None:
        self.asked = 0

    async def elicit(
        self, params: models_0618.ElicitRequestParams, ctx: RequestContext[client_0618.Client]
    ) -> models_0618.ElicitResult:
        self.asked += 1
        return models_0618.ElicitResult(action="accept", content={})


class Accepting1125(client_1125.ClientHandlers):
    async def elicit(
        self, params: models_1125.ElicitRequestParams, ctx: RequestContext[client_1125.Client]
    ) -> models_1125.ElicitResult:
        return models_1125.ElicitResult(action="accept", content={"untitledSingle": "option2"})


async def test_a_form_the_client_revision_cannot_show_is_a_short_tool_error(server_url: str) -> None:
    """2025-06-18 forms have no titled or multi-select enums (SEP-1330): the tool says so."""
    hooks = Accepting0618()
    package = mcp_generated.v2025_06_18
    async with connect_http(server_url, protocol=package, handlers=hooks) as client:
        assert client.session.protocol_version == "2025-06-18"
        result = await client.call_tool(name="test_elicitation_sep1330_enums", arguments={})
        assert result.is_error is True
        assert texts(result) == [
            "This client's MCP revision cannot show this form: it has no field type for "
            "titledMulti, untitledMulti"
        ]
        assert hooks.asked == 0  # refused before anything was sent
        plain = await client.call_tool(name="test_elicitation", arguments={"message": "Who?"})
        assert not plain.is_error and hooks.asked == 1  # a form 2025-06-18 can show is asked


async def test_the_same_form_is_shown_to_a_2025_11_25_client(server_url: str) -> None:
    async with connect_http(server_url, protocol=ERAS["2025-11-25"], handlers=Accepting1125()) as client:
        result = await client.call_tool(name="test_elicitation_sep1330_enums", arguments={})
    assert not result.is_error
    assert texts(result) == ['Elicitation completed: action=accept, content={"untitledSingle": "option2"}']


async def test_a_tool_needing_a_capability_the_client_lacks_is_a_tool_error(server_url: str) -> None:
    """Handshake era: the client declared no sampling; 2026-07-28 answers -32021 instead."""
    async with connect_http(server_url, protocol=ERAS["2025-11-25"]) as client:
        result = await client.call_tool(name="test_missing_capability", arguments={})
    assert result.is_error is True
    assert texts(result) == [
        "cannot send sampling/createMessage: the client did not declare the capability sampling"
    ]


# -- weather_server.py over stdio --------------------------------------------------------------


async def test_weather_server_answers_over_stdio() -> None:
    command = [sys.executable, str(WEATHER_SERVER)]
    async with connect_stdio(command, protocol=mcp_generated.v2025_11_25) as client:
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == ["weather"]
        result = await client.call_tool(name="weather", arguments={"city": "Oslo"})
        assert texts(result) == ["Sunny in Oslo"]
        with pytest.raises(RpcError) as raised:
            await client.call_tool(name="forecast", arguments={"city": "Oslo"})
        assert (raised.value.code, raised.value.message) == (-32602, "Unknown tool: forecast")
