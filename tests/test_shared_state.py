"""Several workers, one Redis, a round-robin load balancer with no affinity: any worker serves
any request (issue 12).

Real parts only, started here: a ``redis-server`` (no persistence, a free port, a temporary
folder), two single-process uvicorn workers of ``tests/servers/shared_app.py`` with
``MCP_REDIS_URL`` set, and HAProxy balancing every request round-robin over them (it
alternates even on one keep-alive connection). Clients: the official SDK and ours through the
balancer; where a test must know which worker serves what, it talks to the workers' own
ports (``worker_urls``), which is what the balancer would do for some request anyway.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.streamable_http import streamable_http_client
from shared_support import (
    SERVERS,
    Redis,
    Reply,
    free_port,
    open_request,
    request,
    sse_lines,
    start_haproxy,
    start_workers,
    stop,
    wait_port,
)
from test_http_server import EXCHANGES, exchange, send

from typedmcp.connecting import connect_http
from typedmcp.protocol.stubs import RequestContext
from mcp_generated import v2025_11_25, v2026_07_28
from mcp_generated.v2025_11_25 import client as client_1125
from mcp_generated.v2025_11_25 import models

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
LIST_CHANGED = "notifications/tools/list_changed"
#: What ``change`` with ``what: prompts`` publishes: a later change, through the same path,
#: that a test waits for before it checks that an earlier one came only once.
PROMPTS_CHANGED = "notifications/prompts/list_changed"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Cluster:
    redis: Redis
    url: str  # the balancer
    worker_urls: list[str]


def start_cluster(folder: Path) -> tuple[Cluster, list[Any]]:
    redis = Redis(folder)
    redis.start()
    env = {"MCP_REDIS_URL": redis.url, "MCP_REDIS_PREFIX": "test:"}
    try:  # (no MCP_REQUEST_STATE_KEY: the workers share the key ring kept in Redis)
        workers, ports = start_workers(2, "shared_app:app", env, unset=("MCP_REQUEST_STATE_KEY",))
    except BaseException:
        redis.stop()
        raise
    try:
        balancer, port = start_haproxy(folder, ports)
    except BaseException:
        for worker in workers:
            stop(worker)
        redis.stop()
        raise
    cluster = Cluster(redis, f"http://127.0.0.1:{port}/mcp", [f"http://127.0.0.1:{p}/mcp" for p in ports])
    return cluster, [balancer, *workers]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running, processes = start_cluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield running
    finally:
        for process in processes:
            stop(process)
        running.redis.stop()


# -- raw HTTP, for tests that choose the worker --------------------------------------------------


async def post(url: str, message: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    return await asyncio.wait_for(request(url, "POST", message, headers), 15)


def messages_of(response: Reply) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a JSON or SSE reply."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return [response.json()]
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: {")]


async def initialize(url: str, version: str = "2025-11-25", capabilities: dict[str, Any] | None = None) -> dict[str, str]:
    response = await post(url, {
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": capabilities or {},
                   "clientInfo": {"name": "raw", "version": "1"}},
    })
    assert response.status_code == 200, response.text
    headers = {"mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": version}
    initialized = await post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    assert initialized.status_code == 202
    return headers


async def call(url: str, headers: dict[str, str], name: str, request_id: int = 1, **extra: Any) -> dict[str, Any]:
    response = await post(url, {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                                "params": {"name": name, "arguments": {}, **extra}}, headers)
    assert response.status_code == 200, response.text
    return messages_of(response)[-1]


def text_of(reply: dict[str, Any]) -> str:
    return str(reply["result"]["content"][0]["text"])


async def stateless_call(url: str, name: str, **extra: Any) -> Reply:
    return await post(
        url,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": name, "arguments": {}, "_meta": META, **extra}},
        {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name},
    )


class SseReader:
    """Reads one SSE response in the background: (event id, message) pairs."""

    def __init__(self, url: str, method: str, headers: dict[str, str], body: dict[str, Any] | None = None) -> None:
        self.url, self.method, self.headers, self.body = url, method, headers, body
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.status = 0
        self.opened = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def _read(self) -> None:
        reader, writer, self.status, headers = await open_request(self.url, self.method, self.body, self.headers)
        self.opened.set()
        try:
            event_id = ""
            async for line in sse_lines(reader, headers):
                if line.startswith("id: "):
                    event_id = line[4:]
                elif line.startswith("data: {"):
                    self.events.append((event_id, json.loads(line[6:])))
        finally:
            writer.close()

    def start(self) -> SseReader:
        self.task = asyncio.ensure_future(self._read())
        return self

    def methods(self) -> list[str]:
        return [message.get("method", "") for _, message in self.events]

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


async def eventually(condition: Any, timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.02)


async def redis_eventually(redis: Redis, condition: Any, timeout: float = 10.0) -> None:
    """Wait until ``await condition(client)`` holds, ``client`` a link to the workers'
    Redis: what they recorded there."""
    from redis.asyncio import Redis as RedisClient

    client = RedisClient.from_url(redis.url)
    try:
        with anyio.fail_after(timeout):
            while not await condition(client):
                await anyio.sleep(0.02)
    finally:
        await client.aclose()


async def redis_read(redis: Redis, read: Any) -> Any:
    """``await read(client)``, ``client`` a link to the workers' Redis."""
    from redis.asyncio import Redis as RedisClient

    client = RedisClient.from_url(redis.url)
    try:
        return await read(client)
    finally:
        await client.aclose()


async def events_written(client: Any, session_id: str) -> int:
    """How many events the workers have written to the streams of a session (in Redis)."""
    meta = await client.hgetall(f"test:ev:{{{session_id}}}:meta")
    return sum(int(value) for field, value in meta.items() if field.startswith(b"next:"))


# -- the balancer spreads requests; a session's requests go anywhere -----------------------------


async def test_the_balancer_sends_consecutive_requests_to_both_workers(cluster: Cluster) -> None:
    pids = [text_of((await stateless_call(cluster.url, "whoami")).json()) for _ in range(4)]
    assert len(set(pids)) == 2 and pids[0] == pids[2] and pids[1] == pids[3]


async def test_sdk_client_session_hops_between_workers_and_answers_elicitation(cluster: Cluster) -> None:
    asked: list[str] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    async with (
        streamable_http_client(cluster.url) as (read, write),
        ClientSession(read, write, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        served = {(await session.call_tool("whoami", {})).content[0].text for _ in range(4)}
        assert len(served) == 2  # one session, both workers
        assert [tool.name for tool in (await session.list_tools()).tools][:2] == ["whoami", "confirm"]
        await session.set_logging_level("debug")
        for _ in range(2):  # the elicitation and its answer land on different workers
            result = await session.call_tool("confirm", {})
            assert result.content[0].text.startswith("accept ")
        assert asked == ["Proceed?", "Proceed?"]


class Accepting(client_1125.ClientHandlers):
    def __init__(self) -> None:
        self.asked = 0

    async def elicit(self, params: models.ElicitRequestParams, ctx: RequestContext[client_1125.Client]) -> models.ElicitResult:
        self.asked += 1
        return models.ElicitResult(action="accept", content={"ok": True})


async def test_our_client_session_hops_between_workers(cluster: Cluster) -> None:
    hooks = Accepting()
    async with connect_http(cluster.url, protocol=v2025_11_25, handlers=hooks) as client:
        served = set()
        for _ in range(4):
            result = await client.call_tool(name="whoami", arguments={})
            served.add(result.content[0].text)
        assert len(served) == 2
        for _ in range(2):
            result = await client.call_tool(name="confirm", arguments={})
            assert result.content[0].text.startswith("accept ")
        assert hooks.asked == 2


async def test_a_server_request_is_answered_through_the_other_worker(cluster: Cluster) -> None:
    first, second = cluster.worker_urls
    headers = await initialize(first, capabilities={"elicitation": {}})
    reader = SseReader(first, "POST", headers, {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                                "params": {"name": "confirm", "arguments": {}}}).start()
    try:
        await eventually(lambda: "elicitation/create" in reader.methods())
        question = next(message for _, message in reader.events if message.get("method") == "elicitation/create")
        assert isinstance(question["id"], str)  # it names the worker waiting for the answer
        answer = await post(second, {"jsonrpc": "2.0", "id": question["id"],
                                     "result": {"action": "accept", "content": {"ok": True}}}, headers)
        assert answer.status_code == 202
        await eventually(lambda: any(message.get("id") == 7 for _, message in reader.events))
        result = next(message for _, message in reader.events if message.get("id") == 7)
        first_pid = text_of(await call(first, headers, "whoami"))
        assert text_of(result) == f"accept {first_pid}"
    finally:
        await reader.close()


# -- a change published on one worker reaches everyone, once -------------------------------------


async def test_a_change_published_on_one_worker_reaches_clients_of_every_worker(cluster: Cluster) -> None:
    first, second = cluster.worker_urls
    # handshake sessions created on each worker, following their GET stream on the other
    sessions = [await initialize(first), await initialize(second, "2025-06-18")]
    streams = [SseReader(second, "GET", sessions[0]).start(), SseReader(first, "GET", sessions[1]).start()]
    # 2026-07-28 listen streams, one on each worker
    listen = {"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
              "params": {"notifications": {"toolsListChanged": True, "promptsListChanged": True},
                         "_meta": META}}
    listen_headers = {"mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen"}
    streams += [SseReader(url, "POST", listen_headers, listen).start() for url in (first, second)]
    try:
        for stream in streams:
            await asyncio.wait_for(stream.opened.wait(), 10)
            assert stream.status == 200
        await eventually(lambda: all("notifications/subscriptions/acknowledged" in s.methods() for s in streams[2:]))
        # (an open GET stream follows the store from the position it had when its head was sent)
        changed = await stateless_call(first, "change")  # published on the first worker
        assert changed.status_code == 200
        await eventually(lambda: all(LIST_CHANGED in stream.methods() for stream in streams))
        # a later change, published the same way: once every stream has it, a second copy of
        # the first would have come before it
        later = await stateless_call(first, "change", arguments={"what": "prompts"})
        assert later.status_code == 200
        await eventually(lambda: all(PROMPTS_CHANGED in stream.methods() for stream in streams))
        assert [stream.methods().count(LIST_CHANGED) for stream in streams] == [1, 1, 1, 1]
        assert [stream.methods().count(PROMPTS_CHANGED) for stream in streams] == [1, 1, 1, 1]
    finally:
        for stream in streams:
            await stream.close()


async def test_sdk_clients_on_the_balancer_hear_a_change_once(cluster: Cluster) -> None:
    heard: list[list[str]] = [[], []]

    def recorder(inbox: list[str]) -> Any:
        async def message(message: Any) -> None:
            method = getattr(getattr(message, "root", message), "method", None)
            if isinstance(method, str):
                inbox.append(method)

        return message

    clients = [streams_opened_client(), streams_opened_client()]
    async with (
        clients[0] as http_one,
        clients[1] as http_two,
        streamable_http_client(cluster.url, http_client=http_one) as (read, write),
        ClientSession(read, write, message_handler=recorder(heard[0])) as listener,
        streamable_http_client(cluster.url, http_client=http_two) as (read2, write2),
        ClientSession(read2, write2, message_handler=recorder(heard[1])) as caller,
    ):
        await listener.initialize()
        await caller.initialize()
        await eventually(lambda: all(client.get_opened for client in clients))  # both GET streams
        await caller.call_tool("change", {})
        await eventually(lambda: LIST_CHANGED in heard[0] and LIST_CHANGED in heard[1])
        await caller.call_tool("change", {"what": "prompts"})  # later: a second copy of the first comes before it
        await eventually(lambda: PROMPTS_CHANGED in heard[0] and PROMPTS_CHANGED in heard[1])
        assert heard[0].count(LIST_CHANGED) == 1 and heard[1].count(LIST_CHANGED) == 1


class StreamsOpenedClient(httpx2.AsyncClient):
    """The SDK's HTTP client, noting its session id and when the server answered its GET
    stream with 200 (the stream follows the session's events from then on)."""

    get_opened = False
    session_id: str | None = None


def streams_opened_client() -> StreamsOpenedClient:
    client = StreamsOpenedClient(timeout=httpx2.Timeout(30, read=300))

    async def noted(response: httpx2.Response) -> None:
        client.session_id = response.headers.get("mcp-session-id") or client.session_id
        if response.request.method == "GET" and response.status_code == 200:
            client.get_opened = True

    client.event_hooks["response"].append(noted)
    return client


# -- tasks --------------------------------------------------------------------------------------


async def test_a_task_is_polled_fetched_and_cancelled_from_the_other_worker(cluster: Cluster) -> None:
    first, second = cluster.worker_urls
    headers = await initialize(first)
    created = await call(first, headers, "slow", 2, task={"ttl": 60000})
    task = created["result"]["task"]
    assert task["status"] == "working"
    polled = messages_of(await post(second, {"jsonrpc": "2.0", "id": 3, "method": "tasks/get",
                                             "params": {"taskId": task["taskId"]}}, headers))[-1]
    assert polled["result"]["status"] == "working"
    cancelled = messages_of(await post(second, {"jsonrpc": "2.0", "id": 4, "method": "tasks/cancel",
                                                "params": {"taskId": task["taskId"]}}, headers))[-1]
    assert cancelled["result"]["status"] == "cancelled"
    quick = await call(first, headers, "slow", 5, arguments={"seconds": 0.3}, task={})
    quick_id = quick["result"]["task"]["taskId"]
    fetched = messages_of(await post(second, {"jsonrpc": "2.0", "id": 6, "method": "tasks/result",
                                              "params": {"taskId": quick_id}}, headers))[-1]
    first_pid = text_of(await call(first, headers, "whoami"))
    assert text_of(fetched) == f"slept {first_pid}"  # it ran on the first worker
    listed = messages_of(await post(second, {"jsonrpc": "2.0", "id": 7, "method": "tasks/list"}, headers))[-1]
    assert [(t["taskId"], t["status"]) for t in listed["result"]["tasks"]] == [
        (task["taskId"], "cancelled"), (quick_id, "completed")
    ]
    other = await initialize(second)  # another session sees none of them
    refused = messages_of(await post(second, {"jsonrpc": "2.0", "id": 8, "method": "tasks/get",
                                              "params": {"taskId": quick_id}}, other))[-1]
    assert refused["error"]["code"] == -32602


# -- streams resumed on another worker; cancels and DELETE reach the worker that runs ------------


async def test_a_dropped_stream_resumes_on_the_other_worker_without_loss_or_duplicates(cluster: Cluster) -> None:
    first, second = cluster.worker_urls
    headers = await initialize(first)
    body = {"jsonrpc": "2.0", "id": 11, "method": "tools/call",
            "params": {"name": "chatty", "arguments": {"count": 6}, "_meta": {"progressToken": "t"}}}
    dropped = await post(first, body, headers)  # the tool drops its stream after the first event
    seen = [(event_id, message) for event_id, message in zip(
        [line[4:] for line in dropped.text.splitlines() if line.startswith("id: ") and not line.endswith(".0")],
        messages_of(dropped), strict=True,
    )]
    assert [message["params"]["progress"] for _, message in seen] == [1]
    resumed = SseReader(second, "GET", {**headers, "last-event-id": seen[-1][0]}).start()
    try:
        await eventually(lambda: any(message.get("id") == 11 for _, message in resumed.events))
        progress = [message["params"]["progress"] for _, message in resumed.events if "params" in message]
        assert progress == [2, 3, 4, 5, 6]
        assert text_of(resumed.events[-1][1]).startswith("chatty ")
    finally:
        await resumed.close()


async def test_a_get_stream_resumes_on_the_other_worker(cluster: Cluster) -> None:
    first, second = cluster.worker_urls
    listener = await initialize(second)
    stream = SseReader(first, "GET", listener).start()
    try:
        await asyncio.wait_for(stream.opened.wait(), 10)  # (it follows from its position then)
        await stateless_call(second, "change")
        await eventually(lambda: LIST_CHANGED in stream.methods())
    finally:
        await stream.close()
    last_event_id = stream.events[-1][0]
    session_id = listener["mcp-session-id"]
    written = await redis_read(cluster.redis, lambda client: events_written(client, session_id))
    await stateless_call(first, "change")  # while no GET stream is open
    await redis_eventually(cluster.redis, lambda client: _more_events(client, session_id, written))  # stored
    again = SseReader(second, "GET", {**listener, "last-event-id": last_event_id}).start()
    try:
        await eventually(lambda: LIST_CHANGED in again.methods())
        await stateless_call(first, "change", arguments={"what": "prompts"})  # a later one
        await eventually(lambda: PROMPTS_CHANGED in again.methods())
        assert again.methods() == [LIST_CHANGED, PROMPTS_CHANGED] and again.events[0][0] != last_event_id
    finally:
        await again.close()


async def _more_events(client: Any, session_id: str, than: int) -> bool:
    return await events_written(client, session_id) > than


async def test_a_session_has_one_get_stream_whichever_worker_holds_it(cluster: Cluster) -> None:
    first, second = cluster.worker_urls
    headers = await initialize(first)
    held = SseReader(first, "GET", headers).start()
    try:
        await asyncio.wait_for(held.opened.wait(), 10)
        assert held.status == 200
        refused = await request(second, "GET", None, headers)
        assert refused.status_code == 409
    finally:
        await held.close()
    claim = f"test:s:{headers['mcp-session-id']}:get"  # the first worker lets go of it
    await redis_eventually(cluster.redis, lambda client: _gone(client, claim))
    again = SseReader(second, "GET", headers).start()
    try:
        await asyncio.wait_for(again.opened.wait(), 10)
        assert again.status == 200
    finally:
        await again.close()


async def _gone(client: Any, key: str) -> bool:
    return not await client.exists(key)


async def test_a_cancel_posted_to_the_other_worker_cancels_the_request(cluster: Cluster) -> None:
    first, second = cluster.worker_urls
    headers = await initialize(first)
    reader = SseReader(first, "POST", headers, {"jsonrpc": "2.0", "id": 21, "method": "tools/call",
                                                "params": {"name": "slow", "arguments": {"seconds": 30},
                                                           "_meta": {"progressToken": "p"}}}).start()
    try:
        await eventually(lambda: "notifications/progress" in reader.methods())  # it runs
        cancel = await post(second, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                     "params": {"requestId": 21, "reason": "changed my mind"}}, headers)
        assert cancel.status_code == 202
        await asyncio.wait_for(asyncio.shield(reader.task), 10)  # type: ignore[arg-type]
        assert reader.methods() == ["notifications/progress"]  # a cancelled request gets no response
    finally:
        await reader.close()


async def test_delete_on_one_worker_ends_the_session_on_every_worker(cluster: Cluster) -> None:
    first, second = cluster.worker_urls
    headers = await initialize(first)
    assert text_of(await call(second, headers, "whoami"))  # both workers hold a copy
    assert (await request(second, "DELETE", None, headers)).status_code == 200
    for url in (first, second):
        gone = await post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers)
        assert gone.status_code == 404


async def test_a_log_level_set_on_one_worker_applies_on_the_other(cluster: Cluster) -> None:
    first, second = cluster.worker_urls
    headers = await initialize(first)
    quiet = messages_of(await post(first, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                           "params": {"name": "log", "arguments": {}}}, headers))
    assert [message.get("method") for message in quiet] == [None]  # no level set: not sent
    level = await post(second, {"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel",
                                "params": {"level": "info"}}, headers)
    assert level.status_code == 200
    logged = messages_of(await post(first, {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                                            "params": {"name": "log", "arguments": {}}}, headers))
    assert [message.get("method") for message in logged] == ["notifications/message", None]
    assert logged[0]["params"]["level"] == "info"


async def test_an_input_required_retry_is_served_by_the_other_worker(cluster: Cluster) -> None:
    first, second = cluster.worker_urls
    round_one = (await stateless_call(first, "confirm")).json()["result"]
    assert round_one["resultType"] == "input_required"
    answer = {"elicitation-1": {"action": "accept", "content": {"ok": True}}}
    retried = (await stateless_call(second, "confirm", inputResponses=answer,
                                    requestState=round_one["requestState"])).json()
    assert text_of(retried).startswith("accept ")


async def test_our_stateless_client_on_the_balancer(cluster: Cluster) -> None:
    async with connect_http(cluster.url, protocol=v2026_07_28) as client:
        served = {(await client.call_tool(name="whoami", arguments={})).content[0].text for _ in range(4)}
    assert len(served) == 2


async def _all_exist(client: Any, keys: list[str]) -> bool:
    return bool(await client.exists(*keys) == len(keys))


# -- Redis restarted mid-test -------------------------------------------------------------------


async def test_redis_restarted_mid_test(tmp_path: Path) -> None:
    """While Redis is down, what needs it fails at once with a clear error (503 for a
    session's request) and stateless requests go on; once it is back (empty: no
    persistence), the sessions are recorded again by their home workers, states sealed
    before still open, and changes reach every worker again."""
    running, processes = start_cluster(tmp_path)
    try:
        first, second = running.worker_urls
        headers = await initialize(first)
        listener = await initialize(second)
        round_one = (await stateless_call(first, "confirm")).json()["result"]
        async with (
            streams_opened_client() as sdk_http,
            streamable_http_client(running.url, http_client=sdk_http) as (read, write),
            ClientSession(read, write) as sdk_session,
        ):
            await sdk_session.initialize()
            assert sdk_http.session_id is not None
            sessions = [headers["mcp-session-id"], listener["mcp-session-id"], sdk_http.session_id]
            running.redis.stop()
            for url in (first, second):
                started = asyncio.get_running_loop().time()
                refused = await post(url, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, headers)
                assert refused.status_code == 503
                assert "shared state (Redis) cannot be reached" in refused.json()["error"]["message"]
                assert asyncio.get_running_loop().time() - started < 3
                assert text_of((await stateless_call(url, "whoami")).json()).isdigit()
            running.redis.start()
            # both workers' buses reconnect, and each records again the sessions at home there
            # (the first worker's, the second's, the SDK's on either)
            await redis_eventually(running.redis, lambda client: _all_exist(client, [f"test:s:{s}" for s in sessions]))
            for url in (first, second, first):
                assert text_of(await call(url, headers, "whoami")).isdigit()
            for _ in range(3):  # the SDK's session too, wherever the balancer sends it
                assert (await sdk_session.call_tool("whoami", {})).content[0].text.isdigit()
        answer = {"elicitation-1": {"action": "accept", "content": {"ok": True}}}
        retried = (await stateless_call(second, "confirm", inputResponses=answer,
                                        requestState=round_one["requestState"])).json()
        assert text_of(retried).startswith("accept ")
        stream = SseReader(first, "GET", listener).start()
        try:
            await asyncio.wait_for(stream.opened.wait(), 10)  # (it follows from its position then)
            await stateless_call(second, "change")
            await eventually(lambda: LIST_CHANGED in stream.methods())
        finally:
            await stream.close()
    finally:
        for process in processes:
            stop(process)
        running.redis.stop()


# -- session caps across workers; the conformance server on Redis ---------------------------------


async def test_the_session_cap_counts_the_sessions_of_every_worker(tmp_path: Path) -> None:
    """Two workers in this process (two apps, two links to one Redis): a client's sessions
    count together whichever worker created them; one in use (seen in the last 30 s) is not
    evicted (429); the least recently used idle one is, and is gone on every worker."""
    from typedmcp.serving import http_app
    from typedmcp.state import RedisState

    Worker = load_worker_class()
    redis = Redis(tmp_path)
    redis.start()
    states = [RedisState(redis.url, prefix="caps:") for _ in range(2)]
    apps = [http_app(Worker(), state=state, max_sessions_per_client=2) for state in states]
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    try:
        first = await send(apps[0], body=initialize)
        second = await send(apps[1], body=initialize)
        assert first.status == second.status == 200
        refused = await send(apps[1], body=initialize)
        assert refused.status == 429
        evicted = first.header("mcp-session-id")
        assert evicted is not None
        key = f"caps:s:{evicted}"
        for sessions_key in await states[0].client.keys("caps:sessions*"):  # idle for a minute
            await states[0].client.zadd(sessions_key, {key: int((time.time() - 60) * 1000)}, xx=True)
        third = await send(apps[1], body=initialize)
        assert third.status == 200
        await eventually(lambda: evicted not in apps[0].sessions)
        gone = await send(apps[0], body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, session=evicted)
        assert gone.status == 404
    finally:
        await settle_exchanges()
        for state in states:
            await state.close()
        redis.stop()


async def settle_exchanges() -> None:
    """End what the in-process requests of a test left open (test_http_server's helpers
    keep them in one list, which its own tests check afterwards)."""
    for started in EXCHANGES:
        started.hung_up.set()
    tasks = [started.task for started in EXCHANGES if started.task is not None]
    EXCHANGES.clear()
    if tasks:
        await asyncio.wait(tasks, timeout=5)


def load_worker_class() -> Any:
    """``Worker`` of tests/servers/shared_app.py, loaded for an app in this process."""
    spec = importlib.util.spec_from_file_location("shared_app_in_process", SERVERS / "shared_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Worker


async def test_a_stateless_cancel_posted_to_the_other_worker_cancels_the_request(tmp_path: Path) -> None:
    """2026-07-28 with authentication: a notifications/cancelled POSTed to the worker that
    does not run the request reaches the one that does (same principal, same id); another
    principal's cancel reaches nothing, not even a request of the same id (alice's and bob's
    ``long-1`` both run: bob's cancel ends his own, and alice's runs on)."""
    from typedmcp.auth.bearer import BearerAuth
    from typedmcp.serving import http_app
    from typedmcp.state import RedisState

    redis = Redis(tmp_path)
    redis.start()
    states = [RedisState(redis.url, prefix="cancel:") for _ in range(2)]
    auth = BearerAuth(lambda token: {"alice": "alice", "bob": "bob"}.get(token), {"resource": "http://127.0.0.1/mcp"})
    started: list[str] = []  # whose slow call runs, in the first worker
    cancelled: list[str] = []

    class Recording(load_worker_class()):  # type: ignore[misc]
        async def call_tool(self, params: Any, ctx: Any) -> Any:
            who = str((params.arguments or {}).get("who"))
            started.append(who)
            try:
                return await super().call_tool(params, ctx)
            except asyncio.CancelledError:
                cancelled.append(who)
                raise

    apps = [http_app(Recording(), state=state, auth=auth) for state in states]
    headers = {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "slow"}

    def slow(who: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": "long-1", "method": "tools/call",
                "params": {"name": "slow", "arguments": {"seconds": 30, "who": who}, "_meta": META}}

    def cancel(who: str) -> Any:
        return send(apps[1], body={"jsonrpc": "2.0", "method": "notifications/cancelled",
                                   "params": {"requestId": "long-1"}},
                    headers={"authorization": f"Bearer {who}", "mcp-protocol-version": MODERN,
                             "mcp-method": "notifications/cancelled"})

    try:
        for state in states:
            await state.start()
        await eventually(lambda: all(state.up for state in states))
        running = exchange(apps[0], body=slow("alice"), headers={**headers, "authorization": "Bearer alice"})
        bobs = exchange(apps[0], body=slow("bob"), headers={**headers, "authorization": "Bearer bob"})
        await eventually(lambda: sorted(started) == ["alice", "bob"])  # both run
        assert (await cancel("bob")).status == 202
        assert (await bobs.finished(timeout=10)).status == 204  # the cancel got there...
        assert cancelled == ["bob"]  # ...and reached bob's request only
        assert running.task is not None and not running.task.done()
        assert (await cancel("alice")).status == 202
        finished = await running.finished(timeout=10)
        assert finished.status == 204  # cancelled: no response
        assert cancelled == ["bob", "alice"]
    finally:
        await settle_exchanges()
        for state in states:
            await state.close()
        redis.stop()


async def test_the_home_copy_of_a_session_forwards_its_changes_while_unused_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copies unused for a while are dropped by the sweep, but not the one at home while
    the session lives: it is what forwards the changes to the session's GET stream."""
    from typedmcp.serving import http_app
    from typedmcp.state import RedisState
    from typedmcp.state import sessions as shared_sessions

    monkeypatch.setattr(shared_sessions, "COPY_SECONDS", 0.0)
    monkeypatch.setattr(shared_sessions, "SWEEP_SECONDS", 0.1)
    redis = Redis(tmp_path)
    redis.start()
    states = [RedisState(redis.url, prefix="home:") for _ in range(2)]
    Worker = load_worker_class()
    apps = [http_app(Worker(), state=state, list_changed=["tools"]) for state in states]
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    home = apps[0].shared
    assert isinstance(home, shared_sessions.RedisSessions)
    sweep_once = home._sweep_once
    sweeps = [0]  # the first worker's sweeps done

    async def counted_sweep() -> None:
        await sweep_once()
        sweeps[0] += 1

    home._sweep_once = counted_sweep  # type: ignore[method-assign]
    try:
        for state in states:
            await state.start()
        reply = await send(apps[0], body=initialize)
        session = reply.header("mcp-session-id")
        assert session is not None
        swept = sweeps[0]
        await eventually(lambda: sweeps[0] >= swept + 3)  # several sweeps: the home copy is unused here
        assert session in apps[0].sessions
        stream = exchange(apps[1], "GET", session=session, version="2025-11-25")
        await stream.until(lambda e: e.status is not None)  # (it follows from its position then)
        assert stream.status == 200
        assert apps[0].modern is not None
        apps[0].modern.server.changes.tools_changed()
        await stream.until(lambda e: any(m.get("method") == LIST_CHANGED for m in e.messages()), timeout=5)
        await stream.hang_up()
    finally:
        await settle_exchanges()
        for state in states:
            await state.close()
        redis.stop()


def test_without_redis_nothing_is_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default stays in memory: no shared sessions, no state to start, a plain feed."""
    from typedmcp.serving import http_app

    monkeypatch.delenv("MCP_REDIS_URL", raising=False)
    app = http_app(load_worker_class()(), list_changed=["tools"])
    assert app.shared is None and app.state is None
    assert app.modern is not None and app.modern.server.changes.relay is None
    assert app.modern.cancel_elsewhere is None


CONFORMANCE_SERVER = Path(__file__).resolve().parent.parent / "examples" / "conformance_server.py"


async def test_the_conformance_server_honours_mcp_redis_url(tmp_path: Path) -> None:
    """examples/conformance_server.py, twice, sharing one Redis: a change its tool publishes
    on one process reaches a listen stream on the other."""
    redis = Redis(tmp_path)
    redis.start()
    ports = [free_port(), free_port()]
    processes = [
        subprocess.Popen([sys.executable, str(CONFORMANCE_SERVER), "--port", str(port)],
                         env={**os.environ, "MCP_REDIS_URL": redis.url}, stdout=subprocess.DEVNULL)
        for port in ports
    ]
    try:
        for process, port in zip(processes, ports, strict=True):
            wait_port(port, process)
        watched = "test://watched-resource"
        async with (
            connect_http(f"http://127.0.0.1:{ports[1]}/mcp", protocol=v2026_07_28) as listener,
            listener.session.listen(resource_subscriptions=[watched], timeout=10) as watching,
            connect_http(f"http://127.0.0.1:{ports[0]}/mcp", protocol=v2025_11_25) as caller,
        ):
            await caller.call_tool(name="test_update_watched_resource", arguments={"content": "elsewhere"})
            notification = await watching.get(timeout=10)
        assert notification.method == "notifications/resources/updated"
        assert notification.params.uri == watched
    finally:
        for process in processes:
            stop(process)
        redis.stop()


# -- a handshake session belongs to the principal that opened it, on every worker ----------------


async def test_a_session_id_is_refused_to_another_principal_on_every_worker(tmp_path: Path) -> None:
    """No affinity, bearer auth: alice's session id in bob's requests is unknown (404) on
    the worker that created it (its own copy), on a worker that has no copy yet (it reads
    the record in Redis), on a worker holding a copy alice used there, and on both again
    once their copies are no longer trusted (Redis restarted, so they ask it whether
    the record changed); alice's own requests go through everywhere."""
    from typedmcp.auth.bearer import BearerAuth
    from typedmcp.serving import http_app
    from typedmcp.state import RedisState

    redis = Redis(tmp_path)
    redis.start()
    states = [RedisState(redis.url, prefix="owner:") for _ in range(2)]
    auth = BearerAuth(lambda token: {"alice": "alice", "bob": "bob"}.get(token), {"resource": "http://127.0.0.1/mcp"})
    Worker = load_worker_class()
    apps = [http_app(Worker(), state=state, auth=auth) for state in states]
    creator, other = apps
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}

    async def ping(app: Any, who: str, session: str) -> int:
        reply = await send(app, body={"jsonrpc": "2.0", "id": 1, "method": "ping"}, session=session,
                           version="2025-11-25", headers={"authorization": f"Bearer {who}"})
        if reply.status == 404:
            assert "unknown or expired session" in reply.json()["error"]["message"]
        return reply.status

    try:
        for state in states:
            await state.start()
        await eventually(lambda: all(state.up for state in states))
        opened = await send(creator, body=initialize, headers={"authorization": "Bearer alice"})
        assert opened.status == 200
        session = opened.header("mcp-session-id")
        assert session is not None
        assert await ping(creator, "bob", session) == 404  # the creator's copy
        assert await ping(other, "bob", session) == 404  # no copy there: the record in Redis
        assert session not in other.sessions
        assert await ping(other, "alice", session) == 200
        assert session in other.sessions
        assert await ping(other, "bob", session) == 404  # the copy alice's request made there
        assert await ping(creator, "alice", session) == 200
        # Redis restarts (empty): no copy is trusted until its worker asks Redis again, and
        # finds the record (written again by the home worker) at the version it copied
        epochs = [state.epoch for state in states]
        redis.stop()
        await eventually(lambda: not any(state.up for state in states))
        redis.start()
        await eventually(lambda: all(s.up and s.epoch > e for s, e in zip(states, epochs, strict=True)))
        record = f"owner:s:{session}"
        await redis_eventually(redis, lambda client: _all_exist(client, [record]))
        assert await states[1].client.hget(record, "ver") == b"1"
        for app in apps:
            assert await ping(app, "bob", session) == 404
        for app in apps:
            assert await ping(app, "alice", session) == 200
    finally:
        await settle_exchanges()
        for state in states:
            await state.close()
        redis.stop()
