"""The engine's and the stdio framing's fast paths: eagerly started request tasks
(``jsonrpc.start_eagerly``) and lines handed from the reader to the engine in the I/O
callback (``stdio.LineReader``). Both must keep what the slow paths guarantee: a handler
runs in its own task and context, cancellation reaches it, and messages keep their order.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Callable
from typing import Any

import pytest

from typedmcp.engine.eager import start_eagerly
from typedmcp.engine.jsonrpc import Engine, RequestId
from typedmcp.transports.stdio import LineReader, LineTransport

pytestmark = pytest.mark.anyio

CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="unset")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- start_eagerly --------------------------------------------------------------------------


async def test_an_eager_task_runs_at_once_as_itself_in_its_own_context() -> None:
    seen: dict[str, Any] = {}
    registered: list[asyncio.Task[Any]] = []

    async def body() -> str:
        seen["task"] = asyncio.current_task()
        seen["registered"] = list(registered)
        seen["caller"] = CALLER.get()
        CALLER.set("changed inside")
        return "done"

    CALLER.set("outside")
    caller = asyncio.current_task()
    task = start_eagerly(body(), registered.append)
    assert seen["task"] is task and seen["registered"] == [task]  # registered first
    assert seen["caller"] == "outside" and CALLER.get() == "outside"  # a copy, no leak back
    assert asyncio.current_task() is caller
    assert await task == "done"


async def test_an_eager_task_that_suspends_is_resumed_by_its_task() -> None:
    gate = asyncio.Event()
    tasks: list[Any] = []

    async def body() -> str:
        tasks.append(asyncio.current_task())
        await gate.wait()
        tasks.append(asyncio.current_task())
        return "opened"

    task = start_eagerly(body(), lambda _: None)
    assert tasks == [task] and not task.done()
    gate.set()
    assert await task == "opened"
    assert tasks == [task, task]


@pytest.mark.parametrize("yield_first", [False, True])
async def test_an_eager_task_cancelled_before_its_first_loop_step_sees_the_cancellation(
    yield_first: bool,
) -> None:
    cleaned: list[str] = []

    async def body() -> None:
        try:
            if yield_first:
                await asyncio.sleep(0)
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cleaned.append("cancelled")
            raise

    task = start_eagerly(body(), lambda _: None)
    task.cancel()  # the task has not had a step of its own yet
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["cancelled"]


async def test_an_eager_task_delivers_its_exception_through_the_task() -> None:
    async def body() -> None:
        raise ValueError("from the first step")

    task = start_eagerly(body(), lambda _: None)
    with pytest.raises(ValueError, match="first step"):
        await task


async def test_a_timeout_in_an_eager_handler_cancels_the_handler_not_the_caller() -> None:
    async def body() -> str:
        try:
            async with asyncio.timeout(0.05):
                await asyncio.sleep(5)
        except TimeoutError:
            return "timed out"
        return "slept"

    task = start_eagerly(body(), lambda _: None)
    await asyncio.sleep(0.2)  # the caller is not the one cancelled
    assert await task == "timed out"


# -- the engine with eager requests --------------------------------------------------------------


class Pipe:
    def __init__(self) -> None:
        self.inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.sent: list[Any] = []

    async def receive(self) -> bytes | None:
        return await self.inbox.get()

    async def send(self, data: bytes) -> None:
        self.sent.append(json.loads(data))


class Handlers:
    def __init__(self) -> None:
        self.tasks: list[Any] = []
        self.gate = asyncio.Event()
        self.cancelled: list[RequestId] = []

    async def on_request(self, method: str, params: Any, request_id: RequestId) -> Any:
        self.tasks.append(asyncio.current_task())
        if method == "wait":
            try:
                await self.gate.wait()
            except asyncio.CancelledError:
                self.cancelled.append(request_id)
                raise
        return {"method": method}

    async def on_notification(self, method: str, params: Any) -> None:
        return None


async def test_a_synchronous_handler_answers_before_receive_returns() -> None:
    pipe, handlers = Pipe(), Handlers()
    engine = Engine(pipe, handlers)
    await engine._receive(b'{"jsonrpc":"2.0","id":1,"method":"now"}')
    assert pipe.sent == [{"jsonrpc": "2.0", "id": 1, "result": {"method": "now"}}]
    assert handlers.tasks[0] is not asyncio.current_task()
    assert engine._incoming == {}


async def test_an_eager_handler_that_waits_can_be_cancelled_and_sends_nothing() -> None:
    pipe, handlers = Pipe(), Handlers()
    engine = Engine(pipe, handlers)
    await engine._receive(b'{"jsonrpc":"2.0","id":"w","method":"wait"}')
    assert set(engine._incoming) == {"w"}
    assert engine.cancel_incoming("w") is True
    await asyncio.sleep(0.01)
    assert handlers.cancelled == ["w"] and pipe.sent == [] and engine._incoming == {}


# -- LineReader: lines straight to the engine -----------------------------------------------


class Writer:
    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.lines.append(data)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None


async def reading(
    reader: LineReader, consumer: Callable[[bytes], bool]
) -> tuple[LineTransport, asyncio.Task[list[bytes]]]:
    transport = LineTransport(reader, Writer(), max_message_bytes=64)
    assert transport.set_consumer(consumer)

    async def loop() -> list[bytes]:
        read = []
        while (line := await transport.receive()) is not None:
            read.append(line)
        return read

    task = asyncio.create_task(loop())
    await asyncio.sleep(0)  # parked in receive()
    return transport, task


async def test_lines_go_to_the_consumer_while_the_reader_waits_and_keep_their_order() -> None:
    reader = LineReader(limit=64)
    taken: list[bytes] = []
    _, task = await reading(reader, lambda line: line.startswith(b"fast") and not taken.append(line))
    reader.feed_data(b"fast 1\n\nfast 2\nslow 3\nfast 4\nfast 5 partial")
    reader.feed_data(b" rest\n")
    await asyncio.sleep(0)
    reader.feed_data(b"fast 6\n")
    reader.feed_eof()
    # After a declined line, later ones queue behind it for the read loop.
    assert await task == [b"slow 3", b"fast 4", b"fast 5 partial rest"]
    assert taken == [b"fast 1", b"fast 2", b"fast 6"]


async def test_an_oversized_line_still_reaches_the_read_loop_as_too_large() -> None:
    from typedmcp.engine.jsonrpc import MessageTooLarge

    reader = LineReader(limit=64)
    taken: list[bytes] = []
    transport = LineTransport(reader, Writer(), max_message_bytes=64)
    transport.set_consumer(lambda line: not taken.append(line))
    receive = asyncio.create_task(transport.receive())
    await asyncio.sleep(0)
    reader.feed_data(b"x" * 100 + b"\nfast\n")
    with pytest.raises(MessageTooLarge):
        await receive
    assert taken == []
    assert await transport.receive() == b"fast"  # after the discarded line, as usual


async def test_a_consumer_that_raises_is_logged_and_the_line_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = LineReader(limit=64)

    def broken(line: bytes) -> bool:
        raise RuntimeError("consumer failed")

    _, task = await reading(reader, broken)
    reader.feed_data(b"one\n")
    reader.feed_eof()
    assert await task == []
    assert "could not process an incoming message" in caplog.text
