"""The Redis stores of ``typedmcp.state``, each against a real redis-server that
the test starts (no persistence, a free port, a temporary folder): two ``RedisState`` objects
stand for two workers. The multi-worker behaviour over HTTP is in ``test_shared_state.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from shared_support import Redis

from typedmcp.transports.events import MemoryEventStore
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol.feed import ChangeFeed
from typedmcp.stateless.sealing import StateSealer
from typedmcp.state import (
    FeedRelay,
    RedisEventStore,
    RedisKeyRing,
    RedisState,
    RedisTaskStore,
    RedisUsedStates,
    StateUnavailable,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Redis]:
    server = Redis(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


_prefixes = iter(range(10**6))


@pytest.fixture
async def workers(redis_server: Redis) -> AsyncIterator[tuple[RedisState, RedisState]]:
    """Two workers' links to one Redis, under a key prefix of this test's own."""
    prefix = f"t{next(_prefixes)}:"
    first, second = RedisState(redis_server.url, prefix=prefix), RedisState(redis_server.url, prefix=prefix)
    await first.start()
    await second.start()
    await eventually(lambda: first.up and second.up)
    try:
        yield first, second
    finally:
        await first.close()
        await second.close()


async def eventually(condition: Any, timeout: float = 5.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


async def keys_of(state: RedisState) -> list[str]:
    return sorted(key.decode() for key in await state.client.keys("*"))


# -- event store ------------------------------------------------------------------------------


async def test_event_store_keeps_what_the_memory_store_keeps(
    workers: tuple[RedisState, RedisState],
) -> None:
    """Random appends and forgets of several streams over two sessions, under small bounds:
    every replay equals the in-memory store's, and so do the per-session totals."""
    first, second = workers
    bounds = {"max_events_per_session": 40, "max_bytes_per_session": 3000}
    shared, reader, memory = RedisEventStore(first, **bounds), RedisEventStore(second, **bounds), MemoryEventStore(**bounds)
    rng = random.Random(12)
    for session in ("s1", "s2"):
        next_index: dict[str, int] = {}
        for _ in range(300):
            stream = f"st{rng.randrange(5)}"
            next_index[stream] = index = next_index.get(stream, 0) + 1
            data = bytes([65 + rng.randrange(26)]) * rng.choice([1, 30, 400, 3500])
            await shared.append(session, stream, index, data)
            memory.append(session, stream, index, data)
            if rng.random() < 0.05:
                await shared.forget(session, stream)
                memory.forget(session, stream)
        for stream in [*next_index, "never"]:
            for after in (0, 5, 200):
                assert await reader.replay(session, stream, after) == await memory.replay(session, stream, after)
        count, size = await first.client.hmget(f"{first.prefix}ev:{{{session}}}:meta", ["count", "bytes"])
        assert (int(count), int(size)) == memory.retained(session)
    await shared.forget("s1")
    assert not [key for key in await keys_of(first) if "{s1}" in key]


async def test_event_store_keys_expire_and_stay_under_the_prefix(
    workers: tuple[RedisState, RedisState],
) -> None:
    first, _ = workers
    await first.client.flushdb()  # (the other tests' keys)
    store = RedisEventStore(first, retention=120)
    await store.append("sess", "a", 1, b"x")
    await store.append_next("sess", "g", b"y")
    keys = await keys_of(first)
    assert keys and all(key.startswith(first.prefix) for key in keys)
    for key in keys:
        if "ev:" in key:
            assert 0 < await first.client.ttl(key) <= 120


async def test_a_stream_written_on_one_worker_is_followed_live_on_another(
    workers: tuple[RedisState, RedisState],
) -> None:
    first, second = workers
    writer, follower = RedisEventStore(first), RedisEventStore(second)
    await writer.append("sess", "p1", 1, b"one")
    seen: list[tuple[int, bytes]] = []

    async def follow() -> None:
        async for event in follower.follow("sess", "p1", 0):
            seen.append(event)

    following = asyncio.ensure_future(follow())
    await eventually(lambda: len(seen) == 1)
    for index in (2, 3):
        await writer.append("sess", "p1", index, b"more")
    await eventually(lambda: len(seen) == 3)
    assert not following.done()  # the stream is still being written
    await writer.completed("sess", "p1", 3)
    await asyncio.wait_for(following, 5)
    assert seen == [(1, b"one"), (2, b"more"), (3, b"more")]


async def test_a_follower_stops_when_the_writing_worker_is_gone(
    workers: tuple[RedisState, RedisState],
) -> None:
    first, second = workers
    await RedisEventStore(first).append("sess", "p9", 1, b"one")
    await first.client.delete(first.key("worker", first.worker))  # its heartbeat stopped
    events = [event async for event in RedisEventStore(second).follow("sess", "p9", 0)]
    assert events == [(1, b"one")]


# -- change feed ------------------------------------------------------------------------------


async def test_a_change_reaches_every_worker_once(workers: tuple[RedisState, RedisState]) -> None:
    first, second = workers
    feeds = ChangeFeed(), ChangeFeed()
    relays = FeedRelay(first, feeds[0]), FeedRelay(second, feeds[1])
    heard: list[list[tuple[str, dict[str, Any]]]] = [[], []]
    for feed, inbox in zip(feeds, heard, strict=True):
        feed.subscribe(lambda method, params, inbox=inbox: inbox.append((method, params)))
    feeds[0].tools_changed()
    feeds[1].resource_updated("file:///a")
    await eventually(lambda: len(heard[0]) == 2 and len(heard[1]) == 2)
    await asyncio.sleep(0.2)  # nothing more comes
    expected = [("notifications/resources/updated", {"uri": "file:///a"}), ("notifications/tools/list_changed", {})]
    assert sorted(heard[0]) == expected and sorted(heard[1]) == expected
    assert all(relay.feed.relay is not None for relay in relays)


# -- tasks ------------------------------------------------------------------------------------


async def test_a_task_runs_on_one_worker_and_is_read_waited_for_and_cancelled_on_another(
    workers: tuple[RedisState, RedisState],
) -> None:
    first, second = workers
    told: list[str] = []

    async def notify(task: dict[str, Any]) -> None:
        told.append(task["status"])

    runner, other = RedisTaskStore(first, "session-1", notify), RedisTaskStore(second, "session-1", notify)
    gate = asyncio.Event()

    async def work() -> dict[str, Any]:
        await gate.wait()
        return {"content": [{"type": "text", "text": "done"}]}

    record = runner.start("tools/call", 60_000, work)
    await runner.saved(record.task_id)
    assert (await other.get_wire(record.task_id))["status"] == "working"
    waiting = asyncio.ensure_future(other.outcome(record.task_id))
    await asyncio.sleep(0.1)
    assert not waiting.done()
    gate.set()
    assert await asyncio.wait_for(waiting, 5) == {"content": [{"type": "text", "text": "done"}]}

    async def forever() -> None:
        await asyncio.sleep(3600)

    long = runner.start("tools/call", None, forever)
    await runner.saved(long.task_id)
    assert (await other.cancel_wire(long.task_id))["status"] == "cancelled"
    await eventually(lambda: long.runner is not None and long.runner.done())
    with pytest.raises(RpcError, match="was cancelled"):
        await other.outcome(long.task_id)
    with pytest.raises(RpcError, match="already cancelled"):
        await runner.cancel_wire(long.task_id)
    assert [task["status"] for task in await other.list_wire()] == ["completed", "cancelled"]
    assert told == ["completed", "cancelled"]  # once each, whoever ended it


async def test_task_ids_are_unguessable_and_scoped_to_their_session(
    workers: tuple[RedisState, RedisState],
) -> None:
    first, second = workers

    async def notify(task: dict[str, Any]) -> None:
        pass

    async def work() -> dict[str, Any]:
        return {"content": []}

    mine = RedisTaskStore(first, "session-a", notify)
    ids = set()
    for _ in range(20):
        record = mine.start("tools/call", None, work)
        await mine.saved(record.task_id)
        ids.add(record.task_id)
    assert len(ids) == 20 and all(len(task_id) >= 22 for task_id in ids)
    theirs = RedisTaskStore(second, "session-b", notify)
    for task_id in ids:
        with pytest.raises(RpcError, match="unknown task"):
            await theirs.get_wire(task_id)
    assert await theirs.list_wire() == []


async def test_a_task_whose_worker_stopped_is_reported_failed(
    workers: tuple[RedisState, RedisState],
) -> None:
    first, second = workers

    async def notify(task: dict[str, Any]) -> None:
        pass

    async def forever() -> None:
        await asyncio.sleep(3600)

    runner = RedisTaskStore(first, "session-1", notify)
    record = runner.start("tools/call", None, forever)
    await runner.saved(record.task_id)
    await first.client.delete(first.key("worker", first.worker))  # its heartbeat stopped
    task = await RedisTaskStore(second, "session-1", notify).get_wire(record.task_id)
    assert (task["status"], task["statusMessage"]) == ("failed", "the server process running this task stopped")
    with pytest.raises(RpcError) as raised:  # its result: the internal error naming why
        await RedisTaskStore(second, "session-1", notify).outcome(record.task_id)
    assert raised.value.code == -32603
    assert raised.value.message == "Internal error: the server process running this task stopped"
    runner.close()


async def test_a_task_id_that_is_not_a_string_is_an_unknown_task(
    workers: tuple[RedisState, RedisState],
) -> None:
    first, _ = workers

    async def notify(task: dict[str, Any]) -> None:
        pass

    store = RedisTaskStore(first, "session-a", notify)
    for task_id in (5, None, ["x"]):
        with pytest.raises(RpcError, match="unknown task"):
            await store.get_wire(task_id)  # type: ignore[arg-type]


async def test_a_task_that_ends_while_it_is_being_cancelled_reports_how_it_ended(
    workers: tuple[RedisState, RedisState],
) -> None:
    """tasks/cancel read the task working, but it completed before the cancel landed: the
    error names the status it ended with."""
    first, _ = workers

    async def notify(task: dict[str, Any]) -> None:
        pass

    async def forever() -> None:
        await asyncio.sleep(3600)

    store = RedisTaskStore(first, "session-r", notify)
    record = store.start("tools/call", None, forever)
    await store.saved(record.task_id)
    finish = store._finish

    async def completed_first(*args: Any, **kwargs: Any) -> dict[str, Any] | None:
        await finish(None, "completed", None, {"result": {"content": []}},
                     task_id=kwargs["task_id"], wire=kwargs["wire"])
        return await finish(*args, **kwargs)  # the cancel's own: too late, None

    store._finish = completed_first  # type: ignore[method-assign]
    with pytest.raises(RpcError, match=f"task '{record.task_id}' is already completed$"):
        await store.cancel_wire(record.task_id)
    store.close()


async def test_the_task_cap_is_shared_by_the_workers(workers: tuple[RedisState, RedisState]) -> None:
    first, second = workers

    async def notify(task: dict[str, Any]) -> None:
        pass

    async def forever() -> None:
        await asyncio.sleep(3600)

    stores = RedisTaskStore(first, "s", notify, max_tasks=3), RedisTaskStore(second, "s", notify, max_tasks=3)
    for index in range(3):
        record = stores[index % 2].start("tools/call", None, forever)
        await stores[index % 2].saved(record.task_id)
    refused = stores[1].start("tools/call", None, forever)
    with pytest.raises(RpcError, match="too many tasks are working"):
        await stores[1].saved(refused.task_id)
    for store in stores:
        store.close()


# -- requestState ---------------------------------------------------------------------------


async def test_a_single_use_state_is_claimed_once_across_workers(
    workers: tuple[RedisState, RedisState],
) -> None:
    first, second = workers
    expires = time.time() + 60
    claims = await asyncio.gather(
        *(RedisUsedStates(state).claim("state-1", expires) for state in (first, second, first, second))
    )
    assert sorted(claims) == [False, False, False, True]
    assert 55 < await first.client.ttl(first.key("used", "state-1")) <= 61


async def test_a_single_use_record_outlives_its_state_by_one_second(
    workers: tuple[RedisState, RedisState],
) -> None:
    """The record of a used state goes 1 s after the state expires, never before it: a
    worker whose clock is a little behind must not see the state open but unclaimed."""
    first, _ = workers
    expires = time.time() + 60
    assert await RedisUsedStates(first).claim("state-2", expires)
    record_expiry_ms = await first.client.pexpiretime(first.key("used", "state-2"))
    assert record_expiry_ms == int(expires * 1000) + 1000


async def test_a_ring_once_read_is_marked_loaded(workers: tuple[RedisState, RedisState]) -> None:
    """``loaded`` is what slows the reloads from every second (never read) to every
    minute: it is set by the first read of the ring."""
    first, _ = workers
    ring = RedisKeyRing(first, state_ttl=600)
    assert not ring.loaded
    await ring.load()
    assert ring.loaded


async def test_the_key_ring_rotates_without_breaking_states_in_flight(
    workers: tuple[RedisState, RedisState],
) -> None:
    first, second = workers
    rings = RedisKeyRing(first, state_ttl=600), RedisKeyRing(second, state_ttl=600)
    for ring in rings:
        await ring.load()
    assert rings[0].keys == rings[1].keys and len(rings[0].keys) == 1
    sealers = StateSealer(keys=rings[0].keys), StateSealer(keys=rings[1].keys)
    old_state = sealers[0].seal({"m": "tools/call"})
    await rings[0].rotate()
    await eventually(lambda: rings[1].keys == rings[0].keys)  # told on the bus
    assert len(rings[1].keys) == 2
    new_state = sealers[1].seal({"m": "tools/call"})
    assert sealers[0].open(old_state)["m"] == sealers[1].open(new_state)["m"] == "tools/call"
    assert sealers[1].open(old_state)["m"] == "tools/call"  # the old key still opens
    # once the old key's time is up (what state_ttl seconds later does), it opens nothing
    entries = [json.loads(raw) for raw in await first.client.lrange(rings[0].ring, 0, -1)]
    assert entries[0]["until"] is None and entries[1]["until"] > time.time() + 590
    await first.client.lset(rings[0].ring, 1, json.dumps({**entries[1], "until": time.time() - 1}))
    await rings[1].load()
    assert len(rings[1].keys) == 1
    with pytest.raises(RpcError, match="integrity"):
        sealers[1].open(old_state)
    assert sealers[1].open(new_state)["m"] == "tools/call"


# -- failure ----------------------------------------------------------------------------------


async def test_an_unreachable_redis_fails_commands_at_once_with_a_clear_error(tmp_path: Path) -> None:
    server = Redis(tmp_path)  # never started: nothing listens on its port
    state = RedisState(server.url, prefix="x:", timeout=1.0)
    await state.start()
    try:
        started = time.monotonic()
        with pytest.raises(StateUnavailable) as raised:
            await RedisUsedStates(state).claim("s", time.time() + 10)
        assert time.monotonic() - started < 3
        assert raised.value.code == -32603
        assert "shared state (Redis) cannot be reached" in raised.value.message
    finally:
        await state.close()


async def test_a_hung_redis_fails_a_command_within_its_timeout_and_the_next_at_once(
    tmp_path: Path,
) -> None:
    """Redis stops answering (SIGSTOP): a command fails after its timeout (one retry), and
    for a second after it the next ones fail at once instead of waiting too; once Redis
    answers again, so do the commands."""
    server = Redis(tmp_path)
    server.start()
    assert server.process is not None
    state = RedisState(server.url, prefix="hung:", timeout=0.5)
    try:
        await state.start()
        used = RedisUsedStates(state)
        assert await used.claim("before", time.time() + 10)
        os.kill(server.process.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(StateUnavailable):
                await used.claim("hung", time.time() + 10)
            assert time.monotonic() - started < 2.5
            started = time.monotonic()
            with pytest.raises(StateUnavailable):
                await used.claim("still hung", time.time() + 10)
            assert time.monotonic() - started < 0.1
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
        await asyncio.sleep(1.1)
        assert await used.claim("after", time.time() + 10)
    finally:
        await state.close()
        server.stop()


async def test_the_bus_comes_back_after_redis_restarts(tmp_path: Path) -> None:
    """Redis stops and starts again (losing everything): each worker's bus reconnects on
    its own, tells its listeners that lists may have changed, and changes flow again."""
    server = Redis(tmp_path)
    server.start()
    states = RedisState(server.url, prefix="r:"), RedisState(server.url, prefix="r:")
    try:
        for state in states:
            await state.start()
        await eventually(lambda: all(state.up for state in states))
        feeds = [ChangeFeed(), ChangeFeed()]
        relays = [FeedRelay(state, feed) for state, feed in zip(states, feeds, strict=True)]
        heard: list[str] = []
        feeds[1].subscribe(lambda method, params: heard.append(method))
        server.stop()
        await eventually(lambda: not any(state.up for state in states))
        feeds[0].prompts_changed()  # waits for Redis
        server.start()
        await eventually(lambda: all(state.up for state in states), timeout=10)
        await eventually(lambda: "notifications/prompts/list_changed" in heard)
        assert "notifications/tools/list_changed" in heard  # the catch-up after the outage
        heard.clear()
        feeds[0].tools_changed()
        await eventually(lambda: heard == ["notifications/tools/list_changed"])
        assert all(relay.feed is feed for relay, feed in zip(relays, feeds, strict=True))
    finally:
        for state in states:
            await state.close()
        server.stop()


async def test_a_key_ring_from_the_environment_opens_states_of_its_older_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``MCP_REQUEST_STATE_KEYS=new,old``: the new key seals, both open; a state sealed with
    a key no longer in the ring is refused."""
    monkeypatch.delenv("MCP_REQUEST_STATE_KEY", raising=False)
    monkeypatch.setenv("MCP_REQUEST_STATE_KEYS", "old-key")
    sealed_before = StateSealer().seal({"m": "tools/call"})
    monkeypatch.setenv("MCP_REQUEST_STATE_KEYS", "new-key, old-key")
    rotated = StateSealer()
    assert rotated.key == b"new-key"
    assert rotated.open(sealed_before)["m"] == "tools/call"
    assert StateSealer(keys=[b"new-key"]).open(rotated.seal({"m": "x"}))["m"] == "x"
    monkeypatch.setenv("MCP_REQUEST_STATE_KEYS", "new-key")
    with pytest.raises(RpcError, match="integrity"):
        StateSealer().open(sealed_before)
