"""SSE event stores and 2025-11-25 SSE polling of the Streamable HTTP server
(``typedmcp.transports.events`` and the streams of ``typedmcp.transports.http_streams``).

Checklist H-17 (priming event, ``retry`` before a deliberate drop), H-27 (event ids unique
over a session's streams and naming their stream) and H-28 (resume only the stream the id
belongs to; unknown ids are 404). The ASGI harness and the test server come from
``tests/test_http_server.py``, the client-side helpers from ``tests/test_http_client.py``.
"""

from __future__ import annotations

import asyncio

import pytest
from test_http_client import Handlers, eventually, serving, texts, token
from test_http_server import (  # the autouse fixture: hang up leftovers, re-raise app errors
    Ctx,
    _no_exchange_left_running,  # noqa: F401
    Tools,
    call,
    exchange,
    initialize,
    make_app,
    parse_sse,
    send,
)

import mcp_generated.v2025_11_25
from typedmcp.connecting import connect_http
from typedmcp.transports.events import Event, EventStore, MemoryEventStore
from typedmcp.transports.http_streams import close_sse_stream
from mcp_generated.v2025_11_25 import models

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


class RecordingStore:
    """An event store doing "I/O" (every call yields to the loop), recording its use."""

    def __init__(self) -> None:
        self.inner = MemoryEventStore()
        self.appended: list[tuple[str, str, int]] = []
        self.replayed: list[tuple[str, int]] = []
        self.forgotten: list[tuple[str, str | None]] = []

    async def append(self, session_id: str, stream_id: str, index: int, data: bytes) -> None:
        await asyncio.sleep(0)
        self.appended.append((session_id, stream_id, index))
        self.inner.append(session_id, stream_id, index, data)

    async def replay(self, session_id: str, stream_id: str, after: int) -> list[Event] | None:
        await asyncio.sleep(0)
        self.replayed.append((stream_id, after))
        return await self.inner.replay(session_id, stream_id, after)

    async def forget(self, session_id: str, stream_id: str | None = None) -> None:
        await asyncio.sleep(0)
        self.forgotten.append((session_id, stream_id))
        self.inner.forget(session_id, stream_id)


def raw_blocks(body: bytes) -> list[dict[str, str]]:
    """Every SSE block, fields as written (priming and retry-only blocks included)."""
    blocks = []
    for block in body.split(b"\n\n"):
        if block:
            fields = dict(line.partition(": ")[::2] for line in block.decode().split("\n"))
            blocks.append(fields)
    return blocks


async def test_the_memory_store_satisfies_the_protocol() -> None:
    store: EventStore = MemoryEventStore()
    assert store.append("s", "x", 1, b"{}") is None  # no await on the fast path


async def test_memory_store_replays_one_stream_and_forgets_a_session() -> None:
    store = MemoryEventStore(max_events_per_session=3)
    for index in range(1, 6):
        store.append("s", "a", index, b"a%d" % index)
    store.append("t", "a", 1, b"other session")
    assert await store.replay("s", "a", 3) == [(4, b"a4"), (5, b"a5")]
    assert await store.replay("s", "a", 0) == [(3, b"a3"), (4, b"a4"), (5, b"a5")]  # the bound
    assert await store.replay("s", "c", 0) is None
    store.append("s", "b", 1, b"b1")  # over the bound: the oldest event goes
    assert await store.replay("s", "a", 0) == [(4, b"a4"), (5, b"a5")]
    assert await store.replay("t", "a", 0) == [(1, b"other session")]
    store.forget("s")
    assert await store.replay("s", "b", 0) is None


async def test_a_custom_store_is_used_end_to_end() -> None:
    store = RecordingStore()
    tools = Tools()
    app = make_app(tools, event_store=store, replay_grace=0)  # forget as soon as delivered
    session = await initialize(app)
    reply = exchange(app, body=call(1, "hold", token="t"), session=session)
    await reply.until(lambda e: len(e.events()) == 1)
    await reply.hang_up()  # the connection is lost mid-call
    tools.gate.set()
    events = reply.events()
    stream_id = events[0]["id"].rpartition(".")[0]
    await eventually(lambda: stream_id not in app.sessions[session].transport.streams)
    assert [(s, i) for _, s, i in store.appended] == [(stream_id, 1), (stream_id, 2), (stream_id, 3)]
    assert {s for s, _, _ in store.appended} == {session}  # nothing of initialize (plain JSON)
    # The stream has ended: resuming it is the store's job.
    resumed = await send(app, "GET", session=session, headers={"last-event-id": events[0]["id"]})
    assert store.replayed == [(stream_id, 1)]
    assert [e["id"] for e in resumed.events()] == [f"{stream_id}.2", f"{stream_id}.3"]
    assert [m.get("method") for m in resumed.messages()] == ["notifications/progress", None]
    # Delivered in full now: the store may forget the stream.
    assert store.forgotten == [(session, stream_id)]
    # Unknown to the store: 404.
    missing = await send(app, "GET", session=session, headers={"last-event-id": stream_id + "9.0"})
    assert missing.status == 404
    assert (await send(app, "DELETE", session=session)).status == 200
    await eventually(lambda: store.forgotten == [(session, stream_id), (session, None)])


async def test_2025_11_25_post_streams_open_with_a_priming_event() -> None:
    tools = Tools()
    app = make_app(tools, retry_ms=250)
    session = await initialize(app)
    reply = await send(app, body=call(1, "progress", {"steps": 2}, token="t"), session=session)
    blocks = raw_blocks(reply.body)
    priming, first = blocks[0], blocks[1]
    assert priming["data"] == "" and priming["retry"] == "250"
    assert priming["id"].endswith(".0") and priming["id"] != first["id"]
    assert priming["id"].rpartition(".")[0] == first["id"].rpartition(".")[0]
    assert all("retry" not in block for block in blocks[1:])
    assert len(parse_sse(reply.body)) == 3  # the priming event carries no message
    # Resuming from the priming event replays the whole stream (a connection lost early).
    held = exchange(app, body=call(3, "hold", token="h"), session=session)
    await held.until(lambda e: len(e.events()) == 1)
    await held.hang_up()
    tools.gate.set()
    held_priming = raw_blocks(held.body)[0]
    resumed = await send(app, "GET", session=session, headers={"last-event-id": held_priming["id"]})
    assert [m.get("method") for m in resumed.messages()] == ["notifications/progress"] * 2 + [None]
    assert resumed.messages()[0] == held.messages()[0]
    # A plain JSON reply has nothing to prime.
    plain = await send(app, body=call(2, "echo"), session=session)
    assert plain.header("content-type") == "application/json"


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26"])
async def test_older_sessions_get_no_priming_event(version: str) -> None:
    app = make_app()
    session = await initialize(app, version)
    reply = await send(
        app, body=call(1, "progress", {"steps": 2}, token="t"), session=session, version=version
    )
    blocks = raw_blocks(reply.body)
    assert len(blocks) == 3 and all(block["data"] for block in blocks)
    assert all("retry" not in block for block in blocks)


async def test_event_ids_are_unique_over_1000_events_on_3_streams() -> None:
    app = make_app()
    session = await initialize(app)
    get = exchange(app, "GET", session=session)
    await get.until(lambda e: e.status == 200)
    calls = [
        send(app, body=call(n, "progress", {"steps": 400}, token=f"t{n}"), session=session)
        for n in (1, 2)
    ]
    peer = app.sessions[session].server.peer
    for _ in range(200):
        await peer.send_tool_list_changed()
    replies = await asyncio.gather(*calls)
    await get.until(lambda e: len(e.events()) == 200)
    ids = [e["id"] for reply in replies for e in reply.events()] + [e["id"] for e in get.events()]
    primes = [block["id"] for reply in replies for block in raw_blocks(reply.body)[:1]]
    assert len(ids) == 2 * 401 + 200 >= 1000
    assert len(set(ids + primes)) == len(ids) + len(primes)
    streams = {event_id.rpartition(".")[0] for event_id in ids}
    assert len(streams) == 3  # each id names its stream
    for reply in replies:  # ... and one stream's ids resume that stream only
        own = {e["id"].rpartition(".")[0] for e in reply.events()}
        assert len(own) == 1
    # An id of this session's GET stream resumes the GET stream only (once it is free).
    await get.hang_up()
    resumed = exchange(app, "GET", session=session, headers={"last-event-id": get.events()[-2]["id"]})
    await resumed.until(lambda e: len(e.events()) == 1)
    assert resumed.events()[0]["id"] == get.events()[-1]["id"]


async def test_an_event_id_of_another_session_is_not_found() -> None:
    app = make_app()
    mine, other = await initialize(app), await initialize(app)
    for session in (mine, other):  # same stream numbers in both sessions
        await send(app, body=call(1, "progress", token="t"), session=session)
    reply = await send(app, body=call(2, "progress", token="t"), session=other)
    last = reply.events()[0]["id"]
    assert (await send(app, "GET", session=mine, headers={"last-event-id": last})).status == 404


class PollingTools(Tools):
    """``poll``: progress 1, drop the SSE connection (2025-11-25 polling), progress 2, answer."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped: list[bool] = []

    async def call_tool(self, params: models.CallToolRequestParams, ctx: Ctx) -> models.CallToolResult:
        if params.name != "poll":
            return await super().call_tool(params, ctx)
        self.calls.append(params.name)
        await ctx.report_progress(1, 2)
        self.dropped.append(close_sse_stream())
        await asyncio.sleep(0.1)
        await ctx.report_progress(2, 2)
        return self.result("polled")


async def test_a_dropped_connection_ends_with_retry_and_the_client_resumes() -> None:
    tools = PollingTools()
    app = make_app(tools, retry_ms=20)
    session = await initialize(app)
    reply = await send(app, body=call(1, "poll", token="p"), session=session)
    blocks = raw_blocks(reply.body)
    assert blocks[-1] == {"retry": "20"}  # the server drops the connection, says when to return
    assert [m.get("method") for m in reply.messages()] == ["notifications/progress"]
    resumed = await send(app, "GET", session=session, headers={"last-event-id": reply.events()[-1]["id"]})
    assert [m.get("method") for m in resumed.messages()] == ["notifications/progress", None]
    assert resumed.messages()[-1]["result"]["content"][0]["text"] == "polled"
    assert tools.dropped == [True] and tools.calls == ["poll"]


async def test_our_client_resumes_a_stream_the_server_drops() -> None:
    tools = PollingTools()
    handlers = Handlers()
    app = make_app(tools, retry_ms=20)
    async with serving(app) as server, connect_http(
        server.url, protocol=mcp_generated.v2025_11_25, handlers=handlers
    ) as client:
        result = await client.call_tool(name="poll", arguments={}, meta=token("r"))
        assert texts(result) == ["polled"]
        await eventually(lambda: handlers.steps("r") == [1, 2])
        resumed = [e for e in server.requests("GET") if "last-event-id" in e["headers"]]
        assert len(resumed) == 1
    assert tools.dropped == [True] and tools.calls == ["poll"]


async def test_older_sessions_never_drop_a_stream() -> None:
    tools = PollingTools()
    app = make_app(tools)
    session = await initialize(app, "2025-06-18")
    reply = await send(app, body=call(1, "poll", token="p"), session=session, version="2025-06-18")
    assert [m.get("method") for m in reply.messages()] == ["notifications/progress"] * 2 + [None]
    assert tools.dropped == [False]
