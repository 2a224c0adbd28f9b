"""The gateway's pass-through (``runtime/typedmcp/host/fastpath.py``) answers a routed
``tools/call`` (and ``prompts/get``) with the same JSON as the usual path does (the handler, the host's typed call,
models both ways): results (odd key order, a result's own ``_meta``, a field no schema
names), errors (the server's, a retired code, a timeout, output that breaks the
outputSchema), input rounds answered by the host, progress and cancellation.

Real parts: the host runs here with a real stdio server (``tests/servers/passthrough_server.py``);
the gateway's connection is an engine over an in-memory line transport that the test
writes requests to and reads every message from, once with the pass-through in front
(``serve_passing``) and once without (``typedmcp.serving.serve``), on the same host.

"The same JSON" is compared in a canonical form (members sorted, each number written as
it was: ``1`` and ``1.0`` differ): the usual path writes an object's members in its
model's field order, the pass-through in the order the server sent them, and JSON gives
that order no meaning."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from host_support import REPO, reaper, stdio

from typedmcp.host import Host
from typedmcp.host.fastpath import PassThrough
from typedmcp.host.gateway import gateway_options, serve_passing
from typedmcp.protocol import telemetry
from typedmcp.serving import serve

pytestmark = pytest.mark.anyio
__all__ = ["reaper"]
LIMIT = 30.0
SERVER = stdio(REPO / "tests" / "servers" / "passthrough_server.py")
RAW_SERVER = stdio(REPO / "tests" / "servers" / "raw_line_server.py")
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def untraced(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A process with OpenTelemetry's API and no provider set, as these tests assume: a
    provider another test file set in the same pytest worker stays set for good, and with
    one the client puts a trace context in every ``_meta`` and the pass-through (rightly)
    steps aside. A fresh telemetry object that sees no provider stands in for it."""
    traced = telemetry.configure(True)
    if traced is not None:
        monkeypatch.setattr(traced, "_configured", lambda: False)
    yield
    telemetry.configure()


class Lines:
    """An in-memory transport: the test puts lines in, and reads every line sent."""

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.sent: asyncio.Queue[bytes] = asyncio.Queue()

    async def receive(self) -> bytes | None:
        return await self.incoming.get()

    async def send(self, data: bytes) -> None:
        self.sent.put_nowait(data)

    def put(self, message: dict[str, Any]) -> None:
        self.incoming.put_nowait(json.dumps(message).encode())

    async def until_answer(self, request_id: int) -> list[bytes]:
        """Every line sent up to and including the response to ``request_id``."""
        seen: list[bytes] = []
        while True:
            line = await asyncio.wait_for(self.sent.get(), LIMIT)
            seen.append(line)
            if json.loads(line).get("id") == request_id:
                return seen


@contextlib.asynccontextmanager
async def gateway(host: Host, *, passing: bool) -> AsyncIterator[tuple[Lines, Any]]:
    """The host's gateway on a :class:`Lines` transport: (lines, the PassThrough or None)."""
    handlers, options, unsubscribe = gateway_options(host)
    lines = Lines()
    serving = asyncio.ensure_future(
        serve_passing(host, handlers, lines, **options) if passing else serve(handlers, lines, **options)
    )
    try:
        await asyncio.sleep(0)
        yield lines, getattr(handlers, "pass_through", None)
    finally:
        lines.incoming.put_nowait(None)
        try:
            await asyncio.wait_for(serving, LIMIT)
        finally:
            unsubscribe()


def call(request_id: int, tool: str, arguments: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "_meta": {**META, **meta}}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def canonical(line: bytes) -> str:
    """One message as canonical JSON text: members sorted; numbers, strings and nesting as sent."""
    return json.dumps(json.loads(line), sort_keys=True, ensure_ascii=False)


async def both_ways(host: Host, *requests: dict[str, Any]) -> tuple[list[list[str]], list[list[str]], int]:
    """Each request's lines (notifications, then its response; canonical JSON) through the
    usual path and through the pass-through, and how many calls the pass-through served."""
    answers: dict[bool, list[list[str]]] = {}
    passed = 0
    for passing in (False, True):
        async with gateway(host, passing=passing) as (lines, passage):
            answers[passing] = []
            for request in requests:
                lines.put(request)
                answers[passing].append([canonical(line) for line in await lines.until_answer(request["id"])])
            if passage is not None:
                assert isinstance(passage, PassThrough)
                passed = passage.passed
    return answers[False], answers[True], passed


async def elicited(server: str, params: Any, ctx: Any) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": f"host for {server}"}}


@contextlib.asynccontextmanager
async def started(server: dict[str, Any] = SERVER, **entry: Any) -> AsyncIterator[Host]:
    async with Host({"p": {**server, **entry}}, elicitation=elicited) as host:
        assert host.status()["p"]["state"] == "ready", host.status()
        assert host.server("p").session.era == "stateless"
        yield host


async def test_results_and_errors_are_the_same_bytes(reaper: Any) -> None:
    requests = [
        call(1, "p__echo", {"text": "hi"}),
        call(2, "p__odd"),
        call(3, "p__failing", {"code": -32603}),
        call(4, "p__failing", {"code": -32002}),  # a retired code: -32602 to the caller
        call(5, "p__weather", {}),
        call(6, "p__weather", {"broken": True}),  # breaks the outputSchema
        call(7, "p__ask", {}),  # an input round, answered by the host's hook
        call(8, "p__echo", {"text": 3}),  # arguments that break the inputSchema: the usual path
        call(9, "nope__echo", {"text": "x"}),  # no such tool: the usual path
    ]
    async with started() as host:
        usual, passed_through, passed = await both_ways(host, *requests)
    assert passed_through == usual
    assert passed == 7  # the first seven passed through; the last two stepped aside
    answers = [json.loads(lines[-1]) for lines in usual]
    assert answers[0]["result"]["content"] == [{"type": "text", "text": "hi"}]
    odd = answers[1]["result"]
    assert odd["x-fixture"] == {"kept": [1, 2.5, None]} and odd["_meta"]["fixture/seen"] is True
    assert odd["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-host-gateway"
    assert answers[2]["error"] == {"code": -32603, "message": "failing with -32603", "data": {"asked": -32603}}
    assert answers[3]["error"]["code"] == -32602
    assert answers[4]["result"]["structuredContent"] == {"city": "Oslo", "celsius": 21.5}
    assert answers[5]["error"]["code"] == -32603
    assert answers[6]["result"]["content"][0]["text"] == 'accept: {"name": "host for p"}'
    assert answers[7]["result"]["isError"] is True
    assert answers[8]["error"]["code"] == -32602


async def test_what_only_a_server_of_another_runtime_sends(reaper: Any) -> None:
    """A retired error code, output that breaks the outputSchema, progress that goes back,
    a result without resultType, and a resultType no revision has (a hand-written server)."""
    requests = [
        call(1, "p__retired"),
        call(2, "p__broken"),
        call(3, "p__wobbly", progressToken="w"),
        call(4, "p__bare"),
        call(5, "p__weird"),
    ]
    async with started(RAW_SERVER) as host:
        usual, passed_through, passed = await both_ways(host, *requests)
    assert passed_through == usual and passed == 5
    answers = [json.loads(lines[-1]) for lines in usual]
    assert answers[0]["error"] == {"code": -32602, "message": "gone", "data": {"uri": "x"}}
    assert answers[1]["error"]["code"] == -32603
    assert [json.loads(line)["params"]["progress"] for line in usual[2][:-1]] == [1.0, 2.0]
    assert answers[3]["result"]["resultType"] == "complete" and answers[3]["result"]["_meta"]["k"] == 1
    assert answers[4]["error"]["code"] == -32603


def prompt(request_id: int, name: str, arguments: Any = None, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "_meta": {**META, **meta}}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": request_id, "method": "prompts/get", "params": params}


async def test_prompts_pass_through_too(reaper: Any) -> None:
    requests = [
        prompt(1, "p__greet", {"who": "Ada"}),
        prompt(2, "p__greet"),
        prompt(3, "p__greet", {}),
        prompt(4, "p__failing"),  # the server's error, as it sent it
        prompt(5, "p__greet", {"who": 3}),  # arguments are strings: the usual path refuses
        prompt(6, "nope__greet"),  # no such prompt: the usual path
        prompt(7, "p__greet", {"who": "Bo"}, progressToken="t"),  # no progress for prompts either way
    ]
    async with started() as host:
        usual, passed_through, passed = await both_ways(host, *requests)
    assert passed_through == usual and passed == 5
    answers = [json.loads(lines[-1]) for lines in usual]
    assert answers[0]["result"]["messages"][0]["content"]["text"] == "Hello Ada"
    assert answers[0]["result"]["_meta"]["fixture/prompt"] == "Ada"
    assert answers[1]["result"]["messages"][0]["content"]["text"] == "Hello nobody"
    assert answers[3]["error"] == {"code": -32602, "message": "no such topic", "data": {"prompt": "failing"}}
    assert answers[4]["error"]["code"] == -32602 and answers[5]["error"]["code"] == -32602
    assert len(usual[6]) == 1  # the response alone


async def test_progress_is_relayed_under_the_callers_token(reaper: Any) -> None:
    async with started() as host:
        usual, passed_through, passed = await both_ways(
            host, call(1, "p__progress", {}, progressToken="tok"), call(2, "p__progress", {}, progressToken=7)
        )
    assert passed_through == usual and passed == 2
    notes = [json.loads(line)["params"] for line in usual[0][:-1]]
    assert notes == [
        {"progressToken": "tok", "progress": 1.0, "total": 3.0, "message": "one"},
        {"progressToken": "tok", "progress": 2.0, "total": 3.0},
        {"progressToken": "tok", "progress": 3.0, "total": 3.0, "message": "three"},
    ]
    assert json.loads(usual[1][0])["params"]["progressToken"] == 7


async def test_a_timeout_is_the_same_tool_error(reaper: Any) -> None:
    async with started(timeout=0.3) as host:
        usual, passed_through, passed = await both_ways(
            host, call(1, "p__slow", {"label": "late", "seconds": 5}), prompt(2, "p__slow"))
    assert passed_through == usual and passed == 2
    assert "did not answer prompts/get p__slow within 0.3 s" in json.loads(usual[1][-1])["error"]["message"]
    result = json.loads(usual[0][-1])["result"]
    assert result["isError"] is True and "did not answer tools/call p__slow within 0.3 s" in result["content"][0]["text"]


async def cancel_one(host: Host, *, passing: bool, label: str) -> tuple[list[bytes], dict[str, list[str]], int]:
    """Start a slow call, cancel it once the server runs it, then ask the server what it
    saw: (every line the gateway sent for the call, the server's record, passed)."""
    async with gateway(host, passing=passing) as (lines, passage):
        lines.put(call(1, "p__slow", {"label": label, "seconds": 30}))
        record: dict[str, list[str]] = {}
        about_the_call: list[bytes] = []
        asked = iter(range(100, 1_000_000))
        deadline = asyncio.get_running_loop().time() + LIMIT

        async def look() -> dict[str, list[str]]:
            assert asyncio.get_running_loop().time() < deadline, f"the server never saw {label!r} {record}"
            ask = next(asked)
            lines.put(call(ask, "p__cancelled", {}))
            seen = await lines.until_answer(ask)
            about_the_call.extend(line for line in seen if json.loads(line).get("id") == 1)
            await asyncio.sleep(0.02)
            return json.loads(json.loads(seen[-1])["result"]["content"][0]["text"])  # type: ignore[no-any-return]

        while label not in record.get("started", []):
            record = await look()
        lines.put({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 1, "reason": "test", "_meta": META}})
        while label not in record["cancelled"]:
            record = await look()
        passed = passage.passed if passage is not None else 0
    return about_the_call, record, passed


async def test_cancellation_reaches_the_server_and_nothing_is_answered(reaper: Any) -> None:
    async with started() as host:
        usual, usual_record, _ = await cancel_one(host, passing=False, label="usual")
        passed_through, record, passed = await cancel_one(host, passing=True, label="passed")
    assert usual == passed_through == []  # a cancelled request gets no response
    assert usual_record["cancelled"] == ["usual"]
    assert record["cancelled"] == ["usual", "passed"]
    assert passed >= 3  # the slow call and the record calls passed through


async def test_it_steps_aside_for_what_it_does_not_do(reaper: Any) -> None:
    """A caller that declares elicitation (its calls may be parked), a log level, a trace
    context, params it does not relay: the usual path serves them, the same bytes."""
    requests = [
        call(1, "p__echo", {"text": "a"}, **{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}),
        call(2, "p__echo", {"text": "b"}, **{"io.modelcontextprotocol/logLevel": "error"}),
        call(3, "p__echo", {"text": "c"}, traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
        {**call(4, "p__echo", {"text": "d"}), "params": {**call(4, "p__echo", {"text": "d"})["params"], "task": {}}},
        call(5, "p__echo", {"text": "e"}, progressToken=1.5),
    ]
    async with started() as host:
        usual, passed_through, passed = await both_ways(host, *requests)
    assert passed == 0
    assert passed_through == usual
    assert json.loads(usual[0][-1])["result"]["content"][0]["text"] == "a"


async def test_the_cli_serves_stdio_through_it(reaper: Any, tmp_path: Any) -> None:
    """``mcp-host serve --stdio`` answers a routed call through the pass-through."""
    from typedmcp.connecting import connect_stdio

    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"p": SERVER}}))
    command = [sys.executable, "-m", "typedmcp.host.cli", "serve", "--config", str(config), "--stdio"]
    async with connect_stdio(command) as client:
        odd = await asyncio.wait_for(client.call_tool(name="p__odd"), LIMIT)
        echoed = await asyncio.wait_for(client.call_tool(name="p__echo", arguments={"text": "via cli"}), LIMIT)
    assert echoed.content[0].text == "via cli"  # type: ignore[union-attr]
    assert odd.content[1].text == "é ☃"  # type: ignore[union-attr]


def test_a_bad_loop_setting_is_named(tmp_path: Any) -> None:
    """``mcp-host`` runs on the runtime's loop chooser: a ``TYPEDMCP_LOOP`` naming no loop
    is exit code 2 with what to set instead."""
    import os
    import subprocess

    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    done = subprocess.run(
        [sys.executable, "-m", "typedmcp.host.cli", "list", "--config", str(config)],
        env={**os.environ, "TYPEDMCP_LOOP": "tokio"}, capture_output=True, text=True, timeout=LIMIT,
    )
    assert done.returncode == 2, done
    assert "TYPEDMCP_LOOP='tokio' names no event loop: use one of auto, uvloop, asyncio" in done.stderr
