"""The gateway (``mcp-host serve``) driven by the official SDK client (mcp 2.3.0) over
stdio and Streamable HTTP, and by our own client in the 2026-07-28 era: one server with
every server's tools; calls, progress, cancellation, sampling, elicitation and
list_changed forwarded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import free_port, stop_process, wait_listening
from host_support import MODERN_SERVER, REPO, fixture, reaper, stdio
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from typedmcp.connecting import connect_http

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]
__all__ = ["reaper"]
LIMIT = 30.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "new": fixture(),
        "old": fixture("--handshake-only"),
        "modern": stdio(MODERN_SERVER, "--stdio"),
    }}))
    return path


def text_of(result: Any) -> str:
    return str(result.content[0].text)


class Inbox:
    """What the SDK client was asked and told."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.changed = anyio.Event()
        self.asked: list[str] = []
        self.initialized: Any = None

    async def message(self, message: Any) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if isinstance(method, str):
            self.methods.append(method)
            if method == "notifications/tools/list_changed":
                self.changed.set()

    async def sample(self, context: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.asked.append("sampling")
        prompt = params.messages[0].content
        said = prompt.text if isinstance(prompt, types.TextContent) else "?"
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=f"sdk saw {said}"), model="m"
        )

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append("elicitation")
        return types.ElicitResult(action="accept", content={"name": "Ada"})


@asynccontextmanager
async def over_stdio(config: Path, inbox: Inbox) -> AsyncIterator[ClientSession]:
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "typedmcp.host.cli", "serve", "--config", str(config), "--stdio"],
        cwd=str(REPO),
        env=dict(os.environ),  # the SDK passes a minimal environment by default
    )
    async with (
        stdio_client(parameters) as (read, write),
        ClientSession(read, write, message_handler=inbox.message, sampling_callback=inbox.sample,
                      elicitation_callback=inbox.elicit) as session,
    ):
        with anyio.fail_after(LIMIT):
            inbox.initialized = await session.initialize()
        yield session


@asynccontextmanager
async def gateway_process(config: Path) -> AsyncIterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "typedmcp.host.cli", "serve", "--config", str(config),
         "--http", f"127.0.0.1:{port}"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(process, port, timeout=LIMIT)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process, strict=True)  # SIGTERM: the host stops its servers, then exits


@asynccontextmanager
async def over_http(url: str, inbox: Inbox) -> AsyncIterator[ClientSession]:
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, message_handler=inbox.message, sampling_callback=inbox.sample,
                      elicitation_callback=inbox.elicit) as session,
    ):
        with anyio.fail_after(LIMIT):
            inbox.initialized = await session.initialize()
        yield session


async def exercise(session: ClientSession, inbox: Inbox) -> None:
    """What both transports must do."""
    with anyio.fail_after(LIMIT):
        listed = {tool.name for tool in (await session.list_tools()).tools}
        assert {"new__echo", "old__echo", "modern__forecast", "new__sample", "old__slow"} <= listed
        echoed = await session.call_tool("old__echo", {"text": "hi"})
        assert json.loads(text_of(echoed)) == {"text": "hi"}
        forecast = await session.call_tool("modern__forecast", {"city": "Oslo"})
        assert forecast.structured_content == {"city": "Oslo", "celsius": 21.5, "sky": "clear"}
        invalid = await session.call_tool("new__echo", {"text": 3})
        assert invalid.is_error and "invalid arguments for tool 'new__echo'" in text_of(invalid)
        with pytest.raises(MCPError, match="no tool named 'nope'"):
            await session.call_tool("nope", {})
        seen: list[float] = []

        async def progressed(progress: float, total: float | None, message: str | None) -> None:
            seen.append(progress)

        for server in ("new", "old"):
            seen.clear()
            done = await session.call_tool(f"{server}__progress", {}, progress_callback=progressed)
            assert text_of(done) == "progressed" and seen == [1, 2, 3]
            # sampling and elicitation asked by the server reach this (the gateway's) client
            sampled = await session.call_tool(f"{server}__sample", {"prompt": "hello"})
            assert text_of(sampled) == "sdk saw hello"
            elicited = await session.call_tool(f"{server}__elicit", {})
            assert json.loads(text_of(elicited)) == {"action": "accept", "content": {"name": "Ada"}}
        assert inbox.asked == ["sampling", "elicitation"] * 2
        resources = {r.uri for r in (await session.list_resources()).resources}
        assert {"test://readme", "host://pid"} <= resources
        readme = await session.read_resource("test://readme")
        assert readme.contents[0].text == "Read me first."  # type: ignore[union-attr]
        prompt = await session.get_prompt("modern__summarize", {"topic": "mcp"})
        assert prompt.messages[0].content.text == "Summarize mcp."  # type: ignore[union-attr]
        # a cancelled call is cancelled on the owning server
        with pytest.raises(MCPError):
            await session.call_tool("old__slow", {"seconds": 30, "label": "gw"}, read_timeout_seconds=0.5)
        while json.loads(text_of(await session.call_tool("old__stats", {})))["cancelled"] != ["gw"]:
            await anyio.sleep(0.05)  # the server's own record; bounded by fail_after
        # the registry's changes reach the client, and the new tool is served
        await session.call_tool("new__add_tool", {"name": "late"})
        await inbox.changed.wait()
        assert "new__late" in {tool.name for tool in (await session.list_tools()).tools}
        assert text_of(await session.call_tool("new__late", {})) == "{}"


async def test_sdk_client_over_stdio(reaper: Any, config_file: Path) -> None:
    inbox = Inbox()
    async with over_stdio(config_file, inbox) as session:
        capabilities = inbox.initialized.capabilities.model_dump(by_alias=True, exclude_none=True)
        assert capabilities["tools"] == {"listChanged": True}  # what the registry offers
        assert {"resources", "prompts", "completions"} <= capabilities.keys()
        assert inbox.initialized.server_info.name == "mcp-host-gateway"
        await exercise(session, inbox)
    assert len(reaper()) == 2  # both fixture servers ran, and are gone (checked by reaper)


async def test_sdk_client_over_streamable_http(reaper: Any, config_file: Path) -> None:
    async with gateway_process(config_file) as url:
        inbox = Inbox()
        async with over_http(url, inbox) as session:
            await exercise(session, inbox)
        # a second client at once: the same registry, its own calls
        other, again = Inbox(), Inbox()
        async with over_http(url, other) as first, over_http(url, again) as second:
            with anyio.fail_after(LIMIT):
                one = await first.call_tool("new__pid", {})
                two = await second.call_tool("new__pid", {})
            assert text_of(one) == text_of(two)


async def test_a_server_request_is_never_shown_to_another_clients_session(
    reaper: Any, config_file: Path
) -> None:
    """Regression: a sampling request a server made during client A's call went to whichever
    gateway client had called that server last (here B, who would have seen A's prompt).
    With calls of several clients in flight it can be attributed to none of them: the
    host answers it (this gateway has no sampling hook, so A's call fails)."""
    async with gateway_process(config_file) as url:
        first, second = Inbox(), Inbox()
        async with over_http(url, first) as a, over_http(url, second) as b:
            with anyio.fail_after(LIMIT):
                async with anyio.create_task_group() as group:
                    outcome: dict[str, Any] = {}

                    async def call_a() -> None:
                        try:
                            await a.call_tool("old__sample", {"prompt": "secret of A", "delay": 1.0})
                        except MCPError as error:
                            outcome["a"] = error

                    group.start_soon(call_a)
                    await anyio.sleep(0.3)  # A's call is in flight; B's starts after it
                    outcome["b"] = await b.call_tool("old__slow", {"seconds": 2})
            assert second.asked == []  # B never saw A's request
            assert first.asked == []  # nor A: the request could not be attributed
            assert "does not answer sampling" in str(outcome["a"])
            assert not outcome["b"].is_error
            # Alone again, A's sampling reaches A.
            with anyio.fail_after(LIMIT):
                alone = await a.call_tool("old__sample", {"prompt": "hi"})
            assert text_of(alone) == "sdk saw hi" and first.asked == ["sampling"]


async def test_our_client_in_the_stateless_era(reaper: Any, config_file: Path) -> None:
    async with gateway_process(config_file) as url:
        with anyio.fail_after(LIMIT):
            async with connect_http(url) as client:
                assert client.session.era == "stateless"
                names = {tool.name for tool in (await client.list_tools()).tools}
                assert "modern__forecast" in names
                seen: list[float] = []
                client.session.progress_callbacks["p"] = lambda note: seen.append(note.progress)
                done = await client.call_tool(name="old__progress", meta={"progressToken": "p"})
                assert text_of(done) == "progressed" and seen == [1, 2, 3]
                echoed = await client.call_tool(name="new__echo", arguments={"text": "x"})
                assert json.loads(text_of(echoed)) == {"text": "x"}
