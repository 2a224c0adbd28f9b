"""The JSON-RPC engine alone: an in-memory transport and a fake dispatcher, no generated code.

Every test drives the engine as the peer would, with raw JSON, and reads back raw bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from typedmcp.engine.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    ConnectionClosed,
    Engine,
    MessageTooLarge,
    RequestId,
    RpcError,
)

pytestmark = pytest.mark.anyio

SECRET = "secret detail: db password hunter2"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Pipe:
    """An in-memory transport: the test puts what the peer sends and reads what we send."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue()
        self.outbox: asyncio.Queue[bytes] = asyncio.Queue()

    async def receive(self) -> bytes | None:
        item = await self.inbox.get()
        if isinstance(item, BaseException):
            raise item
        return item

    async def send(self, data: bytes) -> None:
        assert b"\n" not in data, "a framed message must fit on one line"
        self.outbox.put_nowait(data)

    def put(self, message: Any) -> None:
        self.inbox.put_nowait(
            message if isinstance(message, bytes) else json.dumps(message).encode()
        )

    def request(self, request_id: Any, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.put(message)

    async def raw(self, timeout: float = 2.0) -> bytes:
        return await asyncio.wait_for(self.outbox.get(), timeout)

    async def reply(self, timeout: float = 2.0) -> Any:
        return json.loads(await self.raw(timeout))

    async def replies(self, count: int) -> list[Any]:
        return [await self.reply() for _ in range(count)]

    async def assert_silent(self, delay: float = 0.1) -> None:
        await asyncio.sleep(delay)
        assert self.outbox.empty(), f"unexpected output: {self.outbox.get_nowait()!r}"


class Fake:
    """A dispatcher with a few methods; unknown ones are -32601 as the real seam answers."""

    def __init__(self) -> None:
        self.engine: Engine | None = None
        self.requests: list[tuple[str, Any, RequestId]] = []
        self.notifications: list[tuple[str, Any]] = []
        self.gates: dict[str, asyncio.Event] = {}
        self.cancelled: list[RequestId] = []

    def gate(self, key: str) -> asyncio.Event:
        return self.gates.setdefault(key, asyncio.Event())

    async def on_request(self, method: str, params: Any, request_id: RequestId) -> Any:
        self.requests.append((method, params, request_id))
        if method == "echo":
            return {"params": params}
        if method == "wait":  # until the test opens the gate
            try:
                await self.gate(params["gate"]).wait()
            except asyncio.CancelledError:
                self.cancelled.append(request_id)
                raise
            return {"opened": params["gate"]}
        if method == "stubborn":  # swallows cancellation and answers anyway
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.cancelled.append(request_id)
            return {"answered": "anyway"}
        if method == "ask":  # calls the peer back while serving
            assert self.engine is not None
            return {"peer said": await self.engine.request("peer/echo", params)}
        if method == "boom":
            raise RuntimeError(SECRET)
        if method == "invalid":
            raise RpcError(INVALID_PARAMS, "Invalid params: x", {"field": "x"})
        if method == "nan":
            return {"value": float("nan")}
        if method == "object":
            return {"value": object()}
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")

    async def on_notification(self, method: str, params: Any) -> None:
        self.notifications.append((method, params))


@contextlib.asynccontextmanager
async def running(
    *, batches: bool = False, eof_grace: float = 0.0
) -> AsyncIterator[tuple[Pipe, Fake, Engine]]:
    pipe, fake = Pipe(), Fake()
    engine = Engine(pipe, fake, accept_batches=lambda: batches, eof_grace=eof_grace)
    fake.engine = engine
    reader = asyncio.create_task(engine.run())
    try:
        yield pipe, fake, engine
        assert not reader.done(), "the reader stopped early"
    finally:
        pipe.inbox.put_nowait(None)
        await asyncio.wait_for(reader, 5)


def assert_error(reply: Any, code: int, request_id: Any = "absent") -> None:
    assert reply["jsonrpc"] == "2.0"
    assert reply["error"]["code"] == code, reply
    assert isinstance(reply["error"]["message"], str) and reply["error"]["message"]
    assert "result" not in reply
    if request_id == "absent":
        assert "id" not in reply, f"expected an id-less error: {reply}"
    else:
        assert reply["id"] == request_id and type(reply["id"]) is type(request_id)


# -- ids ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "request_id",
    ["7", 7, 0, -1, 2**63, 2**63 + 1, -(2**63), 10**30, "", "ünï\u2028cødé ✓ 😀", "a\nb", " 7 "],
)
async def test_ids_are_echoed_with_their_exact_type_and_value(request_id: Any) -> None:
    async with running() as (pipe, fake, _):
        pipe.request(request_id, "echo", {"n": 1})
        reply = await pipe.reply()
        assert reply == {"jsonrpc": "2.0", "id": request_id, "result": {"params": {"n": 1}}}
        assert type(reply["id"]) is type(request_id)
        assert fake.requests == [("echo", {"n": 1}, request_id)]
        pipe.request(request_id, "nope")  # errors echo it too
        assert_error(await pipe.reply(), METHOD_NOT_FOUND, request_id)


async def test_string_and_integer_ids_with_the_same_digits_are_different_requests() -> None:
    async with running() as (pipe, fake, _):
        pipe.request("7", "wait", {"gate": "g"})
        pipe.request(7, "echo")
        assert (await pipe.reply())["id"] == 7
        fake.gate("g").set()
        assert (await pipe.reply())["id"] == "7"


# -- concurrency ----------------------------------------------------------------------------


async def test_a_slow_handler_does_not_block_fast_ones() -> None:
    async with running() as (pipe, fake, _):
        pipe.request(0, "wait", {"gate": "slow"})
        for i in range(1, 51):
            pipe.request(i, "echo", {"i": i})
        fast = await pipe.replies(50)
        assert sorted(r["id"] for r in fast) == list(range(1, 51))
        await pipe.assert_silent()
        fake.gate("slow").set()
        assert await pipe.reply() == {"jsonrpc": "2.0", "id": 0, "result": {"opened": "slow"}}


async def test_many_requests_in_flight_in_both_directions() -> None:
    async with running() as (pipe, _, engine):
        # ours: 20 requests, answered by the peer in reverse order
        ours = [asyncio.create_task(engine.request("peer/echo", {"n": n})) for n in range(20)]
        sent = [await pipe.reply() for _ in range(20)]
        assert len({m["id"] for m in sent}) == 20
        # theirs: a handler that itself waits on the peer, plus fast ones meanwhile
        pipe.request("ask-1", "ask", {"q": 1})
        callback = await pipe.reply()
        assert callback["method"] == "peer/echo" and callback["params"] == {"q": 1}
        pipe.request("fast", "echo")
        assert (await pipe.reply())["id"] == "fast"
        for message in reversed(sent):
            pipe.put({"jsonrpc": "2.0", "id": message["id"], "result": message["params"]})
        pipe.put({"jsonrpc": "2.0", "id": callback["id"], "result": "pong"})
        assert await pipe.reply() == {
            "jsonrpc": "2.0",
            "id": "ask-1",
            "result": {"peer said": "pong"},
        }
        results = await asyncio.wait_for(asyncio.gather(*ours), 2)
        assert results == [{"n": n} for n in range(20)]
        assert engine._pending == {}


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data", [b'{"jsonrpc":', b"{'a': 1}", b"\xff\xfe{}", b"\x00", b'{"a":1}\x00', b'"\\ud800"']
)
async def test_malformed_json_is_an_id_less_parse_error_and_the_reader_goes_on(data: bytes) -> None:
    async with running() as (pipe, fake, _):
        pipe.put(data)
        assert_error(await pipe.reply(), PARSE_ERROR)
        pipe.request(1, "echo")
        assert (await pipe.reply())["id"] == 1
        assert fake.notifications == []


@pytest.mark.parametrize("message", [42, "x", True, None, 1.5])
async def test_json_that_is_not_an_object_is_an_id_less_invalid_request(message: Any) -> None:
    async with running() as (pipe, fake, _):
        pipe.put(message)
        assert_error(await pipe.reply(), INVALID_REQUEST)
        assert fake.requests == [] and fake.notifications == []


@pytest.mark.parametrize("version", ["absent", "1.0", 2.0, None, "2.0 "])
@pytest.mark.parametrize("request_id", [3, "3"])
async def test_a_wrong_jsonrpc_member_is_invalid_and_echoes_a_valid_id(
    version: Any, request_id: Any
) -> None:
    async with running() as (pipe, fake, _):
        message: dict[str, Any] = {"id": request_id, "method": "echo"}
        if version != "absent":
            message["jsonrpc"] = version
        pipe.put(message)
        assert_error(await pipe.reply(), INVALID_REQUEST, request_id)
        pipe.put({"jsonrpc": "1.0", "id": 1.5, "method": "echo"})
        assert_error(await pipe.reply(), INVALID_REQUEST)
        assert fake.requests == []


@pytest.mark.parametrize("request_id", [None, 1.5, 1.0, True, False, {}, [], {"a": 1}, [1]])
async def test_forbidden_id_types_get_an_id_less_invalid_request_never_a_notification(
    request_id: Any,
) -> None:
    async with running() as (pipe, fake, _):
        pipe.request(request_id, "echo")
        assert_error(await pipe.reply(), INVALID_REQUEST)
        await pipe.assert_silent()
        assert fake.requests == [] and fake.notifications == []


@pytest.mark.parametrize("method", [None, 5, ["echo"]])
async def test_a_method_that_is_not_a_string_is_invalid(method: Any) -> None:
    async with running() as (pipe, fake, _):
        pipe.put({"jsonrpc": "2.0", "id": 4, "method": method})
        assert_error(await pipe.reply(), INVALID_REQUEST, 4)
        assert fake.requests == []


async def test_junk_objects_without_method_id_or_result_are_invalid_requests() -> None:
    async with running() as (pipe, _, _):
        pipe.put({})
        assert_error(await pipe.reply(), INVALID_REQUEST)
        pipe.put({"jsonrpc": "2.0"})
        assert_error(await pipe.reply(), INVALID_REQUEST)


async def test_a_duplicate_in_flight_id_is_rejected_and_the_first_request_continues() -> None:
    async with running() as (pipe, fake, engine):
        pipe.request(1, "wait", {"gate": "first"})
        await asyncio.sleep(0.01)
        pipe.request(1, "echo", {"second": True})
        reply = await pipe.reply()
        assert_error(reply, INVALID_REQUEST, 1)
        assert "1" in reply["error"]["message"]
        assert [r[0] for r in fake.requests] == ["wait"]
        fake.gate("first").set()
        assert await pipe.reply() == {"jsonrpc": "2.0", "id": 1, "result": {"opened": "first"}}
        # completed ids are not remembered: the id can be used again
        pipe.request(1, "echo")
        assert (await pipe.reply())["result"] == {"params": None}
        assert engine._incoming == {}


@pytest.mark.parametrize("params", [[1, 2], "x", 3, True])
async def test_params_that_are_not_an_object_are_invalid_params(params: Any) -> None:
    async with running() as (pipe, fake, _):
        pipe.request(9, "echo", params)
        assert_error(await pipe.reply(), INVALID_PARAMS, 9)
        pipe.put({"jsonrpc": "2.0", "method": "note", "params": params})  # a notification
        await pipe.assert_silent()
        assert fake.requests == [] and fake.notifications == []


async def test_unknown_method_is_method_not_found_with_the_id() -> None:
    async with running() as (pipe, _, _):
        pipe.request("u", "no/such/method")
        reply = await pipe.reply()
        assert_error(reply, METHOD_NOT_FOUND, "u")
        assert "no/such/method" in reply["error"]["message"]


async def test_rpc_errors_from_handlers_keep_code_message_and_data() -> None:
    async with running() as (pipe, _, _):
        pipe.request(2, "invalid")
        assert await pipe.reply() == {
            "jsonrpc": "2.0",
            "id": 2,
            "error": {
                "code": INVALID_PARAMS,
                "message": "Invalid params: x",
                "data": {"field": "x"},
            },
        }


async def test_an_unexpected_exception_is_a_generic_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with running() as (pipe, _, _):
        with caplog.at_level(logging.ERROR, logger="typedmcp"):
            pipe.request(5, "boom")
            raw = await pipe.raw()
        reply = json.loads(raw)
        assert_error(reply, INTERNAL_ERROR, 5)
        assert reply["error"] == {"code": INTERNAL_ERROR, "message": "Internal error"}
        assert b"hunter2" not in raw and b"RuntimeError" not in raw
        assert SECRET in caplog.text  # the details go to the log only
        pipe.request(6, "echo")
        assert (await pipe.reply())["id"] == 6


@pytest.mark.parametrize("method", ["nan", "object"])
async def test_a_result_that_is_not_json_is_an_internal_error_not_silence(method: str) -> None:
    async with running() as (pipe, _, _):
        pipe.request(5, method)
        raw = await pipe.raw()
        assert b"NaN" not in raw
        assert_error(json.loads(raw), INTERNAL_ERROR, 5)


# -- notifications and responses ------------------------------------------------------------


async def test_notifications_are_never_answered() -> None:
    async with running() as (pipe, fake, _):
        pipe.put({"jsonrpc": "2.0", "method": "notifications/known", "params": {"a": 1}})
        pipe.put({"jsonrpc": "2.0", "method": "notifications/unknown"})
        pipe.put({"jsonrpc": "2.0", "method": "boom"})  # a request method without id
        pipe.put({"jsonrpc": "2.0", "method": "echo", "params": {"x": 1}})
        await pipe.assert_silent()
        assert fake.notifications == [
            ("notifications/known", {"a": 1}),
            ("notifications/unknown", None),
            ("boom", None),
            ("echo", {"x": 1}),
        ]
        assert fake.requests == []


async def test_a_failing_notification_handler_is_not_answered_and_reading_goes_on() -> None:
    async with running() as (pipe, fake, _):

        async def failing(method: str, params: Any) -> None:
            raise RuntimeError(SECRET)

        fake.on_notification = failing  # type: ignore[method-assign]
        pipe.put({"jsonrpc": "2.0", "method": "n"})
        await pipe.assert_silent()
        pipe.request(1, "echo")
        assert (await pipe.reply())["id"] == 1


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 99, "result": {}},
        {"jsonrpc": "2.0", "id": "99", "error": {"code": -1, "message": "x"}},
        {"jsonrpc": "2.0", "error": {"code": PARSE_ERROR, "message": "Parse error"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": "SDK style"}},
        {"jsonrpc": "2.0", "id": 1.5, "result": 1},
        {"jsonrpc": "1.0", "id": 99, "result": 1},
        {"jsonrpc": "2.0", "id": 99},
    ],
)
async def test_responses_for_unknown_ids_are_dropped_silently(message: Any) -> None:
    async with running() as (pipe, fake, _):
        pipe.put(message)
        await pipe.assert_silent()
        pipe.request(1, "echo")
        assert (await pipe.reply())["id"] == 1
        assert fake.notifications == []


@pytest.mark.parametrize(
    "bad",
    [
        {"result": 1, "error": {"code": 1, "message": "both"}},
        {},
        {"error": {"code": "not a number", "message": "x"}},
        {"error": {"code": True, "message": "x"}},
        {"error": {"message": "no code"}},
        {"error": "a string"},
    ],
)
async def test_malformed_responses_are_dropped_and_the_request_still_waits(bad: Any) -> None:
    async with running() as (pipe, _, engine):
        ours = asyncio.create_task(engine.request("peer/m", None))
        sent = await pipe.reply()
        assert "params" not in sent
        pipe.put({"jsonrpc": "2.0", "id": sent["id"], **bad})
        await pipe.assert_silent()
        assert not ours.done()
        pipe.put({"jsonrpc": "2.0", "id": sent["id"], "result": {"ok": True}})
        assert await asyncio.wait_for(ours, 2) == {"ok": True}


async def test_errors_from_the_peer_raise_rpc_error_with_code_message_and_data() -> None:
    async with running() as (pipe, _, engine):
        ours = asyncio.create_task(engine.request("peer/m", {"a": 1}))
        sent = await pipe.reply()
        assert sent == {"jsonrpc": "2.0", "id": sent["id"], "method": "peer/m", "params": {"a": 1}}
        error = {"code": -32042, "message": "needs a URL", "data": {"url": "https://x.test"}}
        pipe.put({"jsonrpc": "2.0", "id": sent["id"], "error": error})
        with pytest.raises(RpcError) as caught:
            await asyncio.wait_for(ours, 2)
        assert (caught.value.code, caught.value.message) == (-32042, "needs a URL")
        assert caught.value.data == {"url": "https://x.test"}


async def test_a_response_with_a_string_id_does_not_resolve_the_integer_request() -> None:
    async with running() as (pipe, _, engine):
        ours = asyncio.create_task(engine.request("peer/m", None))
        sent = await pipe.reply()
        pipe.put({"jsonrpc": "2.0", "id": str(sent["id"]), "result": "wrong"})
        pipe.put({"jsonrpc": "2.0", "id": True, "result": "wrong"})
        await pipe.assert_silent()
        assert not ours.done()
        pipe.put({"jsonrpc": "2.0", "id": sent["id"], "result": "right"})
        assert await asyncio.wait_for(ours, 2) == "right"


# -- cancellation ---------------------------------------------------------------------------


async def test_cancel_incoming_cancels_the_handler_and_nothing_is_sent() -> None:
    async with running() as (pipe, fake, engine):
        pipe.request("c", "wait", {"gate": "never"})
        await asyncio.sleep(0.01)
        assert engine.cancel_incoming("c") is True
        await pipe.assert_silent(0.2)
        assert fake.cancelled == ["c"]
        assert engine.cancel_incoming("c") is False  # finished: nothing to cancel
        pipe.request("c", "echo")  # and the id is free again
        assert (await pipe.reply())["id"] == "c"


async def test_no_response_after_cancel_even_if_the_handler_ignores_it_and_returns() -> None:
    async with running() as (pipe, fake, engine):
        pipe.request(1, "stubborn")
        await asyncio.sleep(0.01)
        assert engine.cancel_incoming(1) is True
        await pipe.assert_silent(0.2)
        assert fake.cancelled == [1]
        assert engine._incoming == {}
        pipe.request(2, "echo")
        assert (await pipe.reply())["id"] == 2


async def test_a_request_cancelled_before_its_handler_started_frees_its_id() -> None:
    async with running() as (pipe, _, engine):

        class Cancelling(Fake):
            async def on_notification(self, method: str, params: Any) -> None:
                engine.cancel_incoming(params["requestId"])

        engine.dispatcher = Cancelling()
        engine.eager = False  # handlers wait for the next loop pass (eager ones would be done)
        # both in the inbox at once: the cancel is read before the handler ever runs
        pipe.request(1, "echo")
        pipe.put({"jsonrpc": "2.0", "method": "cancel", "params": {"requestId": 1}})
        await pipe.assert_silent()
        assert engine._incoming == {}
        pipe.request(1, "echo")
        assert (await pipe.reply()) == {"jsonrpc": "2.0", "id": 1, "result": {"params": None}}


async def test_initialize_cannot_be_cancelled_by_the_peer() -> None:
    async with running() as (pipe, _, engine):
        engine.eager = False  # handlers wait for the next loop pass (eager ones would be done)
        pipe.request(1, "initialize")  # the fake does not know it: -32601, but answered
        pipe.request(2, "wait", {"gate": "never"})
        await asyncio.sleep(0)  # the reader takes both; the handlers have not run yet
        assert set(engine._incoming) == {1, 2}
        assert engine.cancel_incoming(1) is False
        assert engine.cancel_incoming(2) is True
        assert_error(await pipe.reply(), METHOD_NOT_FOUND, 1)
        await pipe.assert_silent()


@pytest.mark.parametrize("request_id", ["unknown", 42, None, 1.5, True, [1]])
async def test_cancelling_an_unknown_or_invalid_id_is_a_no_op(request_id: Any) -> None:
    async with running() as (pipe, _, engine):
        pipe.request(1, "wait", {"gate": "g"})
        await asyncio.sleep(0.01)
        assert engine.cancel_incoming(request_id) is False
        if request_id is True:  # True == 1 in Python: must not cancel request 1
            assert 1 in engine._incoming and not engine._incoming[1].cancelled
        await pipe.assert_silent()


# -- batches --------------------------------------------------------------------------------


async def test_batches_are_rejected_unless_the_revision_accepts_them() -> None:
    async with running(batches=False) as (pipe, fake, _):
        pipe.put([{"jsonrpc": "2.0", "id": 1, "method": "echo"}])
        reply = await pipe.reply()
        assert isinstance(reply, dict)
        assert_error(reply, INVALID_REQUEST)
        await pipe.assert_silent()
        assert fake.requests == []


async def test_an_accepted_batch_gets_one_array_with_a_reply_per_request() -> None:
    async with running(batches=True) as (pipe, fake, _):
        pipe.put(
            [
                {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"a": 1}},
                {"jsonrpc": "2.0", "method": "notifications/x"},
                {"jsonrpc": "2.0", "id": "two", "method": "nope"},
                42,
                {"jsonrpc": "2.0", "id": 3, "method": "echo", "params": [1]},
                {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {}},
            ]
        )
        replies = await pipe.reply()
        assert isinstance(replies, list) and len(replies) == 5
        assert replies[0] == {"jsonrpc": "2.0", "id": 1, "result": {"params": {"a": 1}}}
        assert_error(replies[1], METHOD_NOT_FOUND, "two")
        assert_error(replies[2], INVALID_REQUEST)
        assert_error(replies[3], INVALID_PARAMS, 3)
        assert_error(replies[4], INVALID_REQUEST, 4)  # initialize must not be batched
        assert fake.notifications == [("notifications/x", None)]
        assert [r[0] for r in fake.requests] == ["echo", "nope"]
        await pipe.assert_silent()


async def test_a_batch_of_notifications_and_responses_gets_no_output() -> None:
    async with running(batches=True) as (pipe, fake, _):
        pipe.put(
            [
                {"jsonrpc": "2.0", "method": "n1"},
                {"jsonrpc": "2.0", "method": "n2", "params": {}},
                {"jsonrpc": "2.0", "id": 77, "result": {}},
            ]
        )
        await pipe.assert_silent()
        assert [n[0] for n in fake.notifications] == ["n1", "n2"]


async def test_an_empty_batch_is_one_id_less_invalid_request() -> None:
    for accepted in (True, False):
        async with running(batches=accepted) as (pipe, _, _):
            pipe.put([])
            reply = await pipe.reply()
            assert isinstance(reply, dict)
            assert_error(reply, INVALID_REQUEST)
            await pipe.assert_silent()


async def test_a_slow_batch_does_not_block_the_reader_and_its_elements_can_be_cancelled() -> None:
    async with running(batches=True) as (pipe, fake, engine):
        pipe.put(
            [
                {"jsonrpc": "2.0", "id": "slow", "method": "wait", "params": {"gate": "b"}},
                {"jsonrpc": "2.0", "id": "gone", "method": "wait", "params": {"gate": "never"}},
            ]
        )
        pipe.request("solo", "echo")
        assert (await pipe.reply())["id"] == "solo"
        pipe.request("slow", "echo")  # in flight inside the batch: a duplicate
        assert_error(await pipe.reply(), INVALID_REQUEST, "slow")
        assert engine.cancel_incoming("gone") is True
        fake.gate("b").set()
        assert await pipe.reply() == [{"jsonrpc": "2.0", "id": "slow", "result": {"opened": "b"}}]


# -- end of input ---------------------------------------------------------------------------


async def test_pending_requests_fail_with_connection_closed_when_the_transport_ends() -> None:
    pipe, fake = Pipe(), Fake()
    engine = Engine(pipe, fake, eof_grace=0)
    reader = asyncio.create_task(engine.run())
    ours = [asyncio.create_task(engine.request("peer/m", {"n": n})) for n in range(3)]
    await pipe.replies(3)
    pipe.inbox.put_nowait(None)
    await asyncio.wait_for(reader, 2)
    for task in ours:
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(task, 2)
    with pytest.raises(ConnectionClosed):
        await engine.request("peer/m", None)
    await engine.notify("peer/n")  # silently dropped
    assert pipe.outbox.empty()


async def test_at_end_of_input_running_handlers_finish_within_the_grace_then_are_cancelled() -> (
    None
):
    pipe, fake = Pipe(), Fake()
    engine = Engine(pipe, fake, eof_grace=0.3)
    reader = asyncio.create_task(engine.run())
    pipe.request("quick", "echo")  # read together with the end of input
    pipe.request("forever", "wait", {"gate": "never"})
    pipe.inbox.put_nowait(None)
    started = asyncio.get_running_loop().time()
    await asyncio.wait_for(reader, 2)
    assert 0.25 < asyncio.get_running_loop().time() - started < 1.5
    assert await pipe.reply() == {"jsonrpc": "2.0", "id": "quick", "result": {"params": None}}
    assert pipe.outbox.empty()  # the cancelled one sent nothing
    assert fake.cancelled == ["forever"]


async def test_cancelling_the_reader_cancels_handlers_at_once() -> None:
    pipe, fake = Pipe(), Fake()
    engine = Engine(pipe, fake, eof_grace=10)
    reader = asyncio.create_task(engine.run())
    pipe.request(1, "wait", {"gate": "never"})
    await asyncio.sleep(0.01)
    reader.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(reader, 1)
    assert fake.cancelled == [1]
    assert pipe.outbox.empty()


async def test_an_oversized_message_from_the_transport_is_an_id_less_invalid_request() -> None:
    async with running() as (pipe, _, _):
        pipe.inbox.put_nowait(MessageTooLarge("message over the limit of 10 bytes"))
        reply = await pipe.reply()
        assert_error(reply, INVALID_REQUEST)
        assert "limit" in reply["error"]["message"]
        pipe.request(1, "echo")
        assert (await pipe.reply())["id"] == 1
