"""The HTTP server's hot path (issue 22): a 2026-07-28 request whose handler needs no I/O is
answered in the POST's own turn of the event loop (its task's eager first step returned),
with no task watching for the client's hang-up; a handler that suspends still is watched,
and a hang-up still cancels it.

The ASGI app is called in-process; ``disconnected`` (the hang-up watcher) is recorded.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import typedmcp.transports.http_stateless as http_stateless
from typedmcp import McpApp, http_app
from typedmcp.engine.eager import returned_at_once, returned_value, start_eagerly

pytestmark = pytest.mark.anyio
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# -- start_eagerly: did the first step finish the coroutine? -----------------------------------


async def test_a_coroutine_that_returns_in_its_first_step_is_known_at_once() -> None:
    async def answer() -> str:
        return "done"

    task = start_eagerly(answer(), lambda _: None)
    assert not task.done()  # (the loop has not stepped it yet)
    assert returned_at_once(task)
    assert returned_value(task) == "done"
    assert await task == "done"  # the task still ends with the same result


async def test_a_coroutine_that_suspends_or_raises_is_not() -> None:
    gate = asyncio.Event()

    async def waits() -> str:
        await gate.wait()
        return "late"

    async def fails() -> str:
        raise ValueError("no")

    waiting = start_eagerly(waits(), lambda _: None)
    failing = start_eagerly(fails(), lambda _: None)
    plain = asyncio.ensure_future(fails())
    assert not returned_at_once(waiting)
    assert not returned_at_once(failing)
    assert not returned_at_once(plain)
    gate.set()
    assert await waiting == "late"
    for task in (failing, plain):
        with pytest.raises(ValueError, match="no"):
            await task


# -- the stateless JSON reply ---------------------------------------------------------------


class Slow:
    """A gate the ``wait`` tool waits on, and what became of its call."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.cancelled = False
        self.tasks: list[asyncio.Task[Any] | None] = []  # the tasks ``where`` ran in


def make_app(slow: Slow) -> Any:
    app = McpApp("hot-path", version="1.0.0")

    @app.tool()
    async def echo(text: str) -> str:
        """Echoes its text argument."""
        return text

    @app.tool()
    async def wait() -> str:
        """Waits until the test opens the gate."""
        slow.started.set()
        try:
            await slow.gate.wait()
        except asyncio.CancelledError:
            slow.cancelled = True
            raise
        return "opened"

    @app.tool()
    async def where(wait: bool) -> str:
        """Records the task it runs in, before and (``wait``) after waiting at the gate."""
        slow.tasks.append(asyncio.current_task())
        if wait:
            slow.started.set()
            try:
                await slow.gate.wait()
            except asyncio.CancelledError:  # it keeps going: it answers all the same
                slow.cancelled = True
            slow.tasks.append(asyncio.current_task())
        return "here"

    return http_app(app)


class Exchange:
    """One POST to the app as it sees it: the body, then (when the test says) a hang-up."""

    def __init__(self, app: Any, name: str, arguments: dict[str, Any]) -> None:
        self.body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": name, "arguments": arguments, "_meta": META}}).encode()
        headers = {"host": "127.0.0.1:8000", "content-type": "application/json",
                   "accept": "application/json, text/event-stream", "mcp-protocol-version": MODERN,
                   "mcp-method": "tools/call", "mcp-name": name}
        self.scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
            "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
            "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
        }
        self.app, self.read, self.hung_up = app, False, asyncio.Event()
        self.status: int | None = None
        self.received = b""

    async def receive(self) -> dict[str, Any]:
        if not self.read:
            self.read = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.hung_up.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        else:
            self.received += message.get("body", b"")

    def start(self) -> asyncio.Task[None]:
        return asyncio.ensure_future(self.app(self.scope, self.receive, self.send))


@pytest.fixture
def watchers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many hang-up watchers the stateless endpoint started (one entry each)."""
    started: list[int] = []
    watch = http_stateless.disconnected

    async def recorded(receive: Any) -> None:
        started.append(1)
        await watch(receive)

    monkeypatch.setattr(http_stateless, "disconnected", recorded)
    return started


async def test_a_handler_without_io_is_answered_with_no_hang_up_watcher(watchers: list[int]) -> None:
    exchange = Exchange(make_app(Slow()), "echo", {"text": "hello"})
    await asyncio.wait_for(exchange.start(), 5)
    assert exchange.status == 200
    assert json.loads(exchange.received)["result"]["content"] == [{"type": "text", "text": "hello"}]
    assert watchers == []


async def test_a_result_is_sent_without_parsing_it_again(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[bytes] = []
    read = http_stateless.error_code

    def recorded(reply: bytes) -> Any:
        parsed.append(reply)
        return read(reply)

    monkeypatch.setattr(http_stateless, "error_code", recorded)
    app = make_app(Slow())
    answered = Exchange(app, "echo", {"text": "hello"})
    await asyncio.wait_for(answered.start(), 5)
    assert answered.status == 200 and parsed == []
    refused = Exchange(app, "nope", {})  # an unknown tool: an error reply, whose code is read
    await asyncio.wait_for(refused.start(), 5)
    assert parsed == [refused.received]
    assert "error" in json.loads(refused.received)


async def test_a_handler_that_waits_is_watched_and_answered(watchers: list[int]) -> None:
    slow = Slow()
    exchange = Exchange(make_app(slow), "wait", {})
    served = exchange.start()
    await asyncio.wait_for(slow.started.wait(), 5)
    slow.gate.set()
    await asyncio.wait_for(served, 5)
    assert exchange.status == 200
    assert json.loads(exchange.received)["result"]["content"] == [{"type": "text", "text": "opened"}]
    assert watchers == [1]


async def test_a_hang_up_still_cancels_a_handler_that_waits(watchers: list[int]) -> None:
    slow = Slow()
    exchange = Exchange(make_app(slow), "wait", {})
    served = exchange.start()
    await asyncio.wait_for(slow.started.wait(), 5)
    exchange.hung_up.set()
    await asyncio.wait_for(served, 5)
    assert slow.cancelled
    assert exchange.status is None  # nothing is sent to a client that left
    assert watchers == [1]


def test_an_accept_header_is_parsed_once_per_value() -> None:
    from typedmcp.transports.asgi import accepts

    header = "application/json;q=0.9, text/*"
    assert accepts(header, "application/json") and accepts(header, "text/event-stream")
    assert not accepts(header, "image/png")
    before = accepts.cache_info().hits
    assert accepts(header, "application/json") and accepts(header, "text/event-stream")
    assert accepts.cache_info().hits == before + 2


async def test_a_json_reply_s_handler_runs_in_the_asgi_call_s_own_task() -> None:
    """No task of its own (issue 18: a tenth of the call's cost), whether it answers at once
    or waits first."""
    slow = Slow()
    app = make_app(slow)
    at_once = Exchange(app, "where", {"wait": False})
    served = at_once.start()
    await asyncio.wait_for(served, 5)
    waiting = Exchange(app, "where", {"wait": True})
    served_later = waiting.start()
    await asyncio.wait_for(slow.started.wait(), 5)
    slow.gate.set()
    await asyncio.wait_for(served_later, 5)
    assert slow.tasks == [served, served_later, served_later]
    for exchange in (at_once, waiting):
        assert exchange.status == 200
        assert json.loads(exchange.received)["result"]["content"] == [{"type": "text", "text": "here"}]


async def test_a_handler_that_catches_the_hang_up_s_cancel_sends_nothing_and_ends_uncancelled() -> None:
    slow = Slow()
    exchange = Exchange(make_app(slow), "where", {"wait": True})
    served = exchange.start()
    await asyncio.wait_for(slow.started.wait(), 5)
    exchange.hung_up.set()
    await asyncio.wait_for(served, 5)
    assert slow.cancelled and len(slow.tasks) == 2
    assert exchange.status is None  # the client left: its answer is not sent
    assert not served.cancelled() and served.cancelling() == 0  # type: ignore[attr-defined]


def test_a_host_check_is_remembered_per_host_and_origin_until_the_allow_lists_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from typedmcp.transports import http_hosts

    checked: list[tuple[str, str | None]] = []
    judge = http_hosts.host_problem

    def recorded(headers: Any, hosts: Any, origins: Any) -> str | None:
        checked.append((headers.get("host", ""), headers.get("origin")))
        return judge(headers, hosts, origins)

    monkeypatch.setattr(http_hosts, "host_problem", recorded)
    check = http_hosts.HostCheck()
    local, other = {"host": "127.0.0.1:8000"}, {"host": "mcp.example", "origin": "https://evil.example"}
    for _ in range(3):
        assert check.problem(local, None, None) is None
        assert "not allowed" in (check.problem(other, None, None) or "")
    assert checked == [("127.0.0.1:8000", None), ("mcp.example", "https://evil.example")]
    hosts = frozenset({"mcp.example"})
    assert check.problem(other, hosts, None) == "Forbidden: origin 'https://evil.example' is not allowed"
    assert check.problem(other, hosts, frozenset({"https://evil.example"})) is None
    assert len(checked) == 4  # each new allow-list is judged afresh


async def test_a_call_cancelled_as_its_client_hangs_up_still_ends_cancelled() -> None:
    """The hang-up's own cancel is taken back; the other one (the server stopping, say) is
    not swallowed with it."""
    slow = Slow()
    exchange = Exchange(make_app(slow), "wait", {})
    served = exchange.start()
    await asyncio.wait_for(slow.started.wait(), 5)
    exchange.hung_up.set()
    served.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(served, 5)
    assert slow.cancelled and exchange.status is None
