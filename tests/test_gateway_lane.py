"""The pass-through's lane (``typedmcp.host.fastlane``): routed calls relayed without a task
each, through the engine's lane hook (``Engine.lane``, ``request_soon``, ``send_soon``).

``tests/test_gateway_passthrough.py`` compares what the lane answers with the usual path's
bytes; here: that the lane (not a task) serves those calls, the same bytes as the task
path of the pass-through, duplicate ids, the end of input, and the engine's hook alone."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from test_gateway_passthrough import LIMIT, Lines, both_ways, call, gateway, prompt, reaper, started, untraced

from typedmcp.engine.jsonrpc import ConnectionClosed, Engine
from typedmcp.host.fastlane import PassLane
from typedmcp.host.fastpath import PassThrough

pytestmark = pytest.mark.anyio
__all__ = ["reaper", "untraced"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_lane_serves_passed_calls_without_a_task(reaper: Any, monkeypatch: Any) -> None:
    started_tasks: list[str] = []
    real_start = Engine._start

    def counting(self: Engine, request_id: Any, method: str, params: Any, *, send: bool) -> Any:
        started_tasks.append(method)
        return real_start(self, request_id, method, params, send=send)

    monkeypatch.setattr(Engine, "_start", counting)
    async with started() as host, gateway(host, passing=True) as (lines, passage):
        assert isinstance(passage.engine.lane, PassLane)
        answers = []
        for request in (call(1, "p__echo", {"text": "hi"}), prompt(2, "p__greet", {"who": "Ada"}),
                        call(3, "p__echo", {"text": 3})):  # (3 breaks the inputSchema: the usual path)
            lines.put(request)
            answers.append(json.loads((await lines.until_answer(request["id"]))[-1]))
        assert not passage.engine.lane.calls  # nothing left behind
    assert started_tasks == ["tools/call"]  # only the call the lane left to the task path
    assert answers[0]["result"]["content"] == [{"type": "text", "text": "hi"}]
    assert answers[1]["result"]["messages"][0]["content"]["text"] == "Hello Ada"
    assert answers[2]["result"]["isError"] is True


async def test_the_lane_answers_as_the_task_path(reaper: Any, monkeypatch: Any) -> None:
    """Results, errors, output checks, input rounds, progress, time limits: the same bytes
    with the lane as with the pass-through's task per call."""
    requests = [
        call(1, "p__echo", {"text": "hi"}),
        call(2, "p__odd"),
        call(3, "p__failing", {"code": -32002}),
        call(4, "p__weather", {"broken": True}),
        call(5, "p__ask", {}),
        call(6, "p__progress", {}, progressToken="tok"),
        call(7, "p__slow", {"label": "late", "seconds": 5}),
        prompt(8, "p__failing"),
        prompt(9, "p__slow"),
    ]
    async with started(timeout=0.3) as host:
        _usual, lane, passed = await both_ways(host, *requests)
        monkeypatch.setattr(PassThrough, "use_lane", False)
        _usual, tasks, passed_by_tasks = await both_ways(host, *requests)
    assert lane == tasks and passed == passed_by_tasks == 9
    assert len(lane[5]) == 4  # three progress notes, then the response


async def test_a_duplicate_id_of_a_call_in_the_lane_is_refused(reaper: Any) -> None:
    async with started() as host, gateway(host, passing=True) as (lines, _passage):
        lines.put(call(1, "p__slow", {"label": "dup", "seconds": 0.5}))
        lines.put(call(1, "p__echo", {"text": "again"}))
        first = json.loads((await lines.until_answer(1))[-1])
        second = json.loads((await lines.until_answer(1))[-1])
    assert first["error"] == {"code": -32600, "message": "Invalid Request: id 1 is already in use"}
    assert second["result"]["content"][0]["text"] == "dup finished"


async def test_calls_in_the_lane_get_the_grace_at_the_end_of_input(reaper: Any) -> None:
    """``printf '...' | mcp-host serve --stdio``: a call still running when the caller's input
    ends is answered (within the engine's grace); one slower than that is cancelled."""
    async with started() as host:
        async with gateway(host, passing=True) as (lines, passage):
            lines.put(call(1, "p__slow", {"label": "in-grace", "seconds": 0.2}))
            lines.put(call(2, "p__slow", {"label": "past-grace", "seconds": 30}))
            await asyncio.sleep(0.05)
            lane = passage.engine.lane
            assert set(lane.calls) == {1, 2}
        # (the gateway's engine has ended: its input ended, the grace is over)
        sent = []
        while not lines.sent.empty():
            sent.append(json.loads(lines.sent.get_nowait()))
        assert [message.get("id") for message in sent] == [1]
        assert sent[0]["result"]["content"][0]["text"] == "in-grace finished"
        assert not lane.calls
        async with gateway(host, passing=True) as (lines, _passage):
            for _attempt in range(200):
                lines.put(call(3, "p__cancelled", {}))
                record = json.loads(json.loads((await lines.until_answer(3))[-1])["result"]["content"][0]["text"])
                if "past-grace" in record["cancelled"]:
                    break
                await asyncio.sleep(0.02)
        assert "past-grace" in record["cancelled"], record


class Loopback:
    """An in-memory transport whose peer answers every request with its own params."""

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.written: list[bytes] = []

    async def receive(self) -> bytes | None:
        return await self.incoming.get()

    async def send(self, data: bytes) -> None:
        self.written.append(data)

    def send_now(self, data: bytes) -> bool:
        self.written.append(data)
        message = json.loads(data)
        if "id" in message and message.get("params", {}).get("answer", True):
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": message["params"]}
            self.incoming.put_nowait(json.dumps(answer).encode())
        return True


class Quiet:
    async def on_request(self, method: str, params: Any, request_id: Any) -> Any:
        raise AssertionError("no requests here")

    async def on_notification(self, method: str, params: Any) -> None:
        return None


async def test_request_soon_calls_back_with_the_answer_or_the_end() -> None:
    transport = Loopback()
    engine = Engine(transport, Quiet())
    running = asyncio.ensure_future(engine.run())
    answers: list[tuple[Any, Any]] = []
    done = asyncio.Event()

    def on_answer(result: Any, error: BaseException | None) -> None:
        answers.append((result, error))
        done.set()

    sent_id = engine.request_soon("x/echo", {"n": 1}, on_answer)
    await asyncio.wait_for(done.wait(), LIMIT)
    assert answers == [({"n": 1}, None)] and json.loads(transport.written[0])["id"] == sent_id
    assert sent_id not in engine._pending  # an answered request leaves the table
    forgotten = engine.request_soon("x/echo", {"n": 2, "answer": False}, on_answer)
    engine.forget_request(forgotten)
    waiting = engine.request_soon("x/echo", {"n": 3, "answer": False}, on_answer)
    transport.incoming.put_nowait(None)
    await asyncio.wait_for(running, LIMIT)
    assert len(answers) == 2 and answers[1][0] is None  # the forgotten one never answered
    assert isinstance(answers[1][1], ConnectionClosed) and waiting not in engine._pending
    with pytest.raises(ConnectionClosed, match="cannot send x/echo"):
        engine.request_soon("x/echo", {}, on_answer)


async def test_send_soon_waits_behind_a_transport_without_send_now() -> None:
    lines = Lines()
    engine = Engine(lines, Quiet())
    engine.send_soon(b'{"a":1}')
    engine.send_soon(b'{"a":2}')
    assert lines.sent.empty()  # (no send_now: written by a task of its own)
    assert [await asyncio.wait_for(lines.sent.get(), LIMIT) for _ in range(2)] == [b'{"a":1}', b'{"a":2}']


class Writer:
    """A stdio writer's part that LineTransport uses, recording each write call."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.transport = self

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0


async def test_lines_sent_now_in_one_loop_pass_are_one_write_ahead_of_later_sends() -> None:
    from typedmcp.transports.stdio import LineTransport

    writer = Writer()
    transport = LineTransport(asyncio.StreamReader(), writer)
    assert transport.send_now(b"1") and transport.send_now(b"2")
    assert writer.writes == []  # held for the end of this event-loop pass
    await asyncio.sleep(0)
    assert writer.writes == [b"1\n2\n"]
    assert transport.send_now(b"3")
    await transport.send(b"4")  # a later send writes what is held first
    await asyncio.sleep(0)
    assert writer.writes == [b"1\n2\n", b"3\n", b"4\n"]


async def test_one_timer_keeps_the_time_limits_of_servers_with_different_limits(reaper: Any) -> None:
    """The lane's one timer is set for the soonest deadline: a call to a server with a
    shorter limit, sent after one to a server with a longer limit, times out first, and so
    does one sent later still (the timer, once it rang, is set for the soonest left)."""
    from test_gateway_passthrough import SERVER

    from typedmcp.host import Host

    servers = {"long": {**SERVER, "timeout": 1.5}, "short": {**SERVER, "timeout": 0.2}}
    async with Host(servers) as host, gateway(host, passing=True) as (lines, passage):
        began = asyncio.get_running_loop().time()
        lines.put(call(1, "long__slow", {"label": "long", "seconds": 30}))
        lines.put(call(2, "short__slow", {"label": "short", "seconds": 30}))
        await asyncio.sleep(0.1)  # (3's deadline is after 2's, before 1's: the timer is set for it once 2 is answered)
        lines.put(call(3, "short__slow", {"label": "short again", "seconds": 30}))
        answered = []
        for _ in range(3):
            line = json.loads(await asyncio.wait_for(lines.sent.get(), LIMIT))
            answered.append((line["id"], asyncio.get_running_loop().time() - began, line["result"]))
        assert not passage.engine.lane.calls
    assert [request_id for request_id, _at, _result in answered] == [2, 3, 1]
    assert answered[1][1] < 1.0 <= answered[2][1]  # each at its own server's limit
    assert all(result["isError"] is True and "did not answer" in result["content"][0]["text"]
               for _id, _at, result in answered)
