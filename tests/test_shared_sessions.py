"""``RedisSessions.open`` (``typedmcp.state.sessions``) at the store level: two HTTP apps in
this process stand for two workers, each with its own ``RedisState`` on a redis-server the
test starts (no persistence, a free port, a temporary folder). Each test creates a session
with a real ``initialize`` on the first worker and then calls ``open`` directly, as the HTTP
app does for every request carrying ``Mcp-Session-Id``. The same behaviour over HTTP, with
real worker processes, is in ``test_shared_state.py`` (slower: the mutation run of this
module uses these tests first, scripts/mutation/sessions.toml).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from shared_support import Redis
from test_http_server import EXCHANGES, initialize

from typedmcp.serving import http_app
from typedmcp.state import RedisSessions, RedisState
from typedmcp.state.session_scripts import _LOAD
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers
from typedmcp.protocol.stubs import RequestContext

pytestmark = pytest.mark.anyio

#: Long enough that a record's expiry, read back a moment after it was set, tells an idle
#: timeout of exactly this many seconds from one a thousandth off (86 s either way).
IDLE_SECONDS = 86_400.0


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


class Handlers(ServerHandlers):
    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        return models.ListToolsResult(tools=[])


@dataclass
class Worker:
    """One worker: its link to Redis, its HTTP app and the app's shared sessions."""

    state: RedisState
    app: Any
    sessions: RedisSessions


@asynccontextmanager
async def workers(folder: Path, count: int = 2) -> AsyncIterator[tuple[Any, ...]]:
    """A redis-server of the test's own and ``count`` workers on it: ``(redis, *workers)``."""
    redis = Redis(folder)
    redis.start()
    started: list[Worker] = []
    try:
        for _ in range(count):
            state = RedisState(redis.url, prefix="sess:")
            app = http_app(Handlers(), state=state, list_changed=["tools"], session_idle_timeout=IDLE_SECONDS)
            assert isinstance(app.shared, RedisSessions)
            started.append(Worker(state, app, app.shared))
            await state.start()
        await eventually(lambda: all(worker.state.up for worker in started))
        yield (redis, *started)
    finally:
        for request in EXCHANGES:  # (test_http_server's helpers keep their requests there)
            request.hung_up.set()
        EXCHANGES.clear()
        for worker in started:
            await worker.state.close()
        redis.stop()


async def eventually(condition: Any, timeout: float = 5.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


async def eventually_in_redis(condition: Any, timeout: float = 5.0) -> None:
    async def poll() -> None:
        while not await condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


def record_key(worker: Worker, session_id: str) -> str:
    return worker.state.key("s", session_id)


def spy_on_loads(worker: Worker) -> list[tuple[list[Any], Any]]:
    """Record each call of the worker's load script (its arguments and Redis's reply)."""
    loads: list[tuple[list[Any], Any]] = []
    script = worker.sessions._load_script
    assert script is not None

    async def recorded(*, keys: list[str], args: list[Any], client: Any) -> Any:
        reply = await script(keys=keys, args=args, client=client)
        loads.append((list(args), reply))
        return reply

    worker.sessions._load_script = recorded
    return loads


UNKNOWN = (None, 404, "Not Found: unknown or expired session; initialize again")


async def test_a_request_without_a_session_id_is_a_bad_request(tmp_path: Path) -> None:
    async with workers(tmp_path) as (_, first, _second):
        assert await first.sessions.open(None, None) == (
            None, 400, "Bad Request: missing Mcp-Session-Id header; initialize first"
        )


async def test_a_session_opened_while_redis_is_down_is_503_even_with_a_copy_here(tmp_path: Path) -> None:
    """Redis stops: the bus is down, so no copy is trusted (not even the one at home, made
    in the same bus epoch): the request is answered 503 with the clear error, never served
    from a copy that may have ended meanwhile."""
    async with workers(tmp_path) as (redis, first, second):
        session_id = await initialize(first.app)
        assert (await first.sessions.open(session_id, None))[1:] == (200, "")
        epoch = first.state.epoch
        redis.stop()
        await eventually(lambda: not first.state.up and not second.state.up)
        assert first.state.epoch == epoch  # (the epoch moves on only when the bus is back)
        message = "Service unavailable: the server's shared state (Redis) cannot be reached; retry in a moment"
        assert await first.sessions.open(session_id, None) == (None, 503, message)
        assert await second.sessions.open(session_id, None) == (None, 503, message)


async def test_a_copy_is_trusted_without_asking_redis_until_the_bus_says_it_changed(tmp_path: Path) -> None:
    """While the bus stays up, a worker serves its copy of a session without a round trip:
    even a record removed behind the bus's back (no message) is still served from the copy,
    and, once another worker announces a change to it, the next request asks Redis again
    (and finds it gone: 404)."""
    async with workers(tmp_path) as (_, first, second):
        session_id = await initialize(first.app)
        copy, status, error = await second.sessions.open(session_id, None)
        assert copy is second.app.sessions[session_id] and (status, error) == (200, "")
        loads = spy_on_loads(second)
        await second.state.client.delete(record_key(second, session_id))
        assert await second.sessions.open(session_id, None) == (copy, 200, "")
        assert loads == []
        await first.state.tell_all({"t": "changed", "s": session_id})
        await eventually(lambda: session_id not in second.sessions._trusted)
        assert await second.sessions.open(session_id, None) == UNKNOWN
        assert len(loads) == 1 and session_id not in second.app.sessions


async def test_after_an_outage_an_unchanged_copy_is_checked_in_one_short_round_trip(
    tmp_path: Path,
) -> None:
    """Redis restarts (losing everything); the home worker records its session again, and
    its copy, no longer trusted (the bus was down: messages may have been missed), is
    checked against Redis at the next request. Its version is sent along; the record has
    not changed since, so Redis answers without the fields and the copy is kept as it is,
    for its own principal only."""
    async with workers(tmp_path) as (redis, first, _second):
        session_id = await initialize(first.app)
        copy = first.app.sessions[session_id]
        loads = spy_on_loads(first) if first.sessions._load_script is not None else None
        epoch = first.state.epoch
        redis.stop()
        await eventually(lambda: not first.state.up)
        redis.start()
        await eventually(lambda: first.state.up and first.state.epoch > epoch)
        key = record_key(first, session_id)
        await eventually_in_redis(lambda: first.state.client.exists(key))
        version = await first.state.client.hget(key, "ver")
        if loads is None:  # (the script is registered at the first load)
            first.sessions._load_script = first.state.client.register_script(_LOAD)
            loads = spy_on_loads(first)
        assert await first.sessions.open(session_id, "mallory") == UNKNOWN
        assert await first.sessions.open(session_id, None) == (copy, 200, "")
        assert [args[0] for args, _ in loads] == [version, version]
        assert all(len(reply) == 3 for _, reply in loads)  # version, home, taken over: no fields
        assert first.app.sessions[session_id] is copy


async def test_a_change_made_on_another_worker_reaches_this_workers_copy(tmp_path: Path) -> None:
    """The home worker writes a state change back (here the log level) and announces it:
    the other worker's copy, rebuilt from the new record at its next request, has it."""
    async with workers(tmp_path) as (_, first, second):
        session_id = await initialize(first.app)
        copy, _, _ = await second.sessions.open(session_id, None)
        assert copy is not None and copy.server.log_level is None
        home = first.app.sessions[session_id]
        home.server.log_level = "debug"
        await first.sessions.synced(home)
        await eventually(lambda: session_id not in second.sessions._trusted)
        assert await second.sessions.open(session_id, None) == (copy, 200, "")
        assert copy.server.log_level == "debug"
        assert second.sessions._versions[session_id] == await second.state.client.hget(
            record_key(second, session_id), "ver"
        )


async def test_loading_a_session_refreshes_its_idle_expiry_and_its_place_in_the_caps(
    tmp_path: Path,
) -> None:
    """A request on a worker without a copy loads the record: its expiry is set again to
    the idle timeout, and its score in the sets the session caps count (all sessions, the
    owner's) to now."""
    async with workers(tmp_path) as (_, first, second):
        session_id = await initialize(first.app)
        client = second.state.client
        key = record_key(second, session_id)
        owner_set = (await client.hget(key, "own")).decode()
        all_sessions = second.state.key("sessions")
        await client.pexpire(key, 60_000)
        await client.zadd(all_sessions, {key: 0})
        await client.zadd(owner_set, {key: 0})
        await client.pexpire(owner_set, 60_000)
        before = time.time() * 1000
        assert (await second.sessions.open(session_id, None))[1] == 200
        after = time.time() * 1000
        idle_ms = IDLE_SECONDS * 1000
        for expiring in (key, owner_set):
            assert idle_ms - 30_000 < await client.pttl(expiring) <= idle_ms
        for scored in (all_sessions, owner_set):
            score = await client.zscore(scored, key)
            assert before - 1000 <= score <= after + 1000


async def test_a_worker_takes_over_a_session_whose_home_stopped_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """While its home worker lives, a session's copy elsewhere is not home (it does not
    forward the change feed) and nothing is logged; once the home stops (its heartbeat
    gone), the next worker to load the session becomes its home, logs the takeover (with
    only a prefix of the session id), and listens to its change feed."""
    async with workers(tmp_path, count=3) as (_, first, second, third):
        session_id = await initialize(first.app)
        caplog.set_level(logging.INFO, logger="typedmcp")
        copy, _, _ = await second.sessions.open(session_id, None)
        assert copy is not None
        assert session_id not in second.sessions._homes and copy.server._unsubscribe is None
        assert session_id in first.sessions._homes
        assert not [record for record in caplog.records if "took over" in record.getMessage()]
        await first.state.close()  # (which removes its heartbeat at once)
        taken, status, error = await third.sessions.open(session_id, None)
        assert taken is third.app.sessions[session_id] and (status, error) == (200, "")
        home = await third.state.client.hget(record_key(third, session_id), "home")
        assert home == third.state.worker.encode()
        assert session_id in third.sessions._homes and taken.server._unsubscribe is not None
        took_over = [record.getMessage() for record in caplog.records if "took over" in record.getMessage()]
        assert took_over == [f"took over session {session_id[:12]}... from a worker that stopped"]


async def test_a_killed_bus_connection_stops_trusting_copies_even_when_redis_py_reconnects_it(
    tmp_path: Path,
) -> None:
    """Redis itself stays up, but the bus's pub/sub connection is killed (``CLIENT KILL
    TYPE pubsub``: a proxy or a failover does the same). redis-py reconnects and
    resubscribes on its own, and what was published meanwhile is lost; so the bus epoch
    must move on, and copies made before are checked against Redis again."""
    async with workers(tmp_path) as (_, first, second):
        session_id = await initialize(first.app)
        copy, status, _ = await second.sessions.open(session_id, None)
        assert copy is not None and status == 200
        assert second.sessions._trusted.get(session_id) == second.state.epoch
        epoch = second.state.epoch
        killed = await second.state.client.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
        assert killed >= 2  # (both workers' bus connections)
        await eventually(lambda: second.state.up and second.state.epoch > epoch)
        assert second.sessions._trusted.get(session_id) != second.state.epoch
