"""Runtime input hardening (issue 29, requirements 2 and 6): numbers too large for a float
are refused where a peer's JSON is parsed (the transports' own tests are in
``test_hardening_engine.py``, parametrized with :data:`OVERFLOWING`), a POST cut short by a
hang-up is never executed, a body dribbled and stopped is answered 408 after the body-read
time limit, and a made-up session id does not log a warning per request.
(Resource template variables: ``test_app_resources_prompts.py``.)"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import pytest
from test_hardening_engine import OVERFLOWING
from test_http_server import (  # the autouse fixture: hang up leftovers, re-raise app errors
    ServerThread,
    Tools,
    _no_exchange_left_running,  # noqa: F401
    call,
    initialize,
    make_app,
    post_headers,
    raw_initialize,
    rpc,
    send,
)
from test_legacy_sse import initialized, serving

from typedmcp.app import McpApp
from typedmcp.engine.jsonrpc import PARSE_ERROR
from typedmcp.engine.peer_json import NonFiniteNumber, decode
from typedmcp.serving import http_app

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# == numbers too large for a float =============================================================


LARGEST = "1.7976931348623157e308"  # the largest float


@pytest.mark.parametrize(
    "literal",
    [
        *OVERFLOWING,
        "1.8e308",
        "1e0400",
        "-1e+0309",
        "9" * 309 + ".0",  # 309 digits before the point, no exponent
        "9" * 210 + ".5e99",  # 210 digits and a two-digit exponent
        "1" + "0" * 400 + "e-50",  # a long mantissa brings a negative exponent over
        "1" + "0" * 35 + "e400",  # 40 characters: named whole
    ],
)
async def test_a_number_too_large_for_a_float_is_refused_naming_it(literal: str) -> None:
    data = b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"x": [1, ' + literal.encode() + b"]}}"
    with pytest.raises(NonFiniteNumber) as refused:
        decode(data)
    named = literal if len(literal) <= 40 else f"{literal[:40]}... ({len(literal) - 40} more characters)"
    assert str(refused.value) == (
        f"the number {named} is too large for a float (it would be read as infinity, which JSON "
        "cannot carry): send a smaller number, or the value as a string"
    )
    assert refused.value.request_id == 3


@pytest.mark.parametrize(
    "literal",
    [
        LARGEST,
        "-" + LARGEST,
        "1e-400",  # underflows to 0.0: finite
        "0e999",
        "9" * 308 + ".0",  # 308 digits: 9.99e307, finite
        "1" + "0" * 209 + "e99",  # 210 digits and e99: 1e308, finite
        "1" + "0" * 400,  # an integer: Python's int, not a float
        '"1e400"',  # a string
        '"' + "1" * 400 + '.0"',
    ],
)
async def test_a_finite_number_or_a_string_that_looks_large_is_read(literal: str) -> None:
    data = b'{"x": [' + literal.encode() + b"]}"
    assert decode(data) == json.loads(data)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
async def test_nan_and_the_infinities_are_not_json(literal: str) -> None:
    with pytest.raises(ValueError) as refused:
        decode(b'{"x": [1, ' + literal.encode() + b"]}")
    assert not isinstance(refused.value, NonFiniteNumber)  # (pydantic-core's own parse error)


async def test_the_id_of_a_refused_number_is_a_requests_own() -> None:
    """Only a request's id is answered: not a response's, a notification's, a batch's, nor an
    id MCP does not allow."""
    for data, request_id in [
        (b'{"jsonrpc": "2.0", "id": "a", "method": "m", "params": {"x": 1e400}}', "a"),
        (b'{"jsonrpc": "2.0", "id": 4, "result": {"x": 1e400}}', None),
        (b'{"jsonrpc": "2.0", "method": "m", "params": {"x": 1e400}}', None),
        (b'[{"jsonrpc": "2.0", "id": 5, "method": "m", "params": {"x": 1e400}}]', None),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "m", "params": {"x": 1e400}}', None),
        (b'{"jsonrpc": "2.0", "id": true, "method": "m", "params": {"x": 1e400}}', None),
    ]:
        with pytest.raises(NonFiniteNumber) as refused:
            decode(data)
        assert refused.value.request_id == request_id, data


async def test_a_float_tool_never_runs_with_infinity_and_its_caller_gets_a_parse_error() -> None:
    """The issue's tool: ``x: float`` got ``inf`` from ``1e400`` and answered
    ``structuredContent {"result": null}`` against its own output schema."""
    app = McpApp("floats")
    seen: list[float] = []

    @app.tool()
    def double(x: float) -> float:
        seen.append(x)
        return 2 * x

    served = http_app(app)
    session = await initialize(served)
    body = json.dumps(call(1, "double", {"x": 0})).replace('{"x": 0}', '{"x": 1e400}').encode()
    refused = await send(served, body=body, session=session)
    assert refused.status == 400
    error = refused.json()["error"]
    assert error["code"] == PARSE_ERROR
    assert error["message"].startswith("Parse error: the number 1e400 is too large for a float")
    fine = await send(served, body=call(2, "double", {"x": 1.5}), session=session)
    assert fine.json()["result"]["structuredContent"] == {"result": 3.0}
    assert seen == [1.5]


# == request bodies: cut short, dribbled ==========================================================


class Connection:
    """A raw HTTP/1.1 connection to a server under uvicorn, for requests sent in pieces."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def head(self, port: int, path: str, headers: dict[str, str]) -> None:
        lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", *(f"{k}: {v}" for k, v in headers.items())]
        await self.write(("\r\n".join(lines) + "\r\n\r\n").encode())

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def answer(self, timeout: float = 5.0) -> tuple[int, dict[str, str], bytes]:
        """The status, headers and (Content-Length) body of the response."""
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), timeout)
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines if ":" in line)}
        body = await asyncio.wait_for(self.reader.readexactly(int(headers.get("content-length", "0"))), timeout)
        return int(status_line.split()[1]), headers, body

    async def closed_by_server(self, timeout: float = 5.0) -> bool:
        return await asyncio.wait_for(self.reader.read(), timeout) == b""

    def close(self) -> None:
        self.writer.close()


async def settle(seconds: float = 0.3) -> None:
    await asyncio.sleep(seconds)


def echo_call(request_id: int) -> bytes:
    return json.dumps(call(request_id, "echo", {"said": "cut short"})).encode()


MODERN_HEADERS = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}


def modern_call(request_id: int) -> bytes:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    message = call(request_id, "echo", {"said": "cut short"})
    message["params"]["_meta"] = meta
    return json.dumps(message).encode()


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_a_post_cut_short_by_a_hang_up_is_never_executed(era: str) -> None:
    """Content-Length 100 bytes more than sent, then the client hangs up: the tool does not run
    (before: the handshake era ran the JSON received so far)."""
    tools = Tools()
    with ServerThread(make_app(tools)) as server:
        if era == "handshake":
            headers = post_headers(await raw_initialize(server.port))
            body = echo_call(1)
        else:
            headers = {**post_headers(), **MODERN_HEADERS}
            body = modern_call(1)
        connection = await Connection.open(server.port)
        await connection.head(server.port, "/mcp", {**headers, "Content-Length": str(len(body) + 100)})
        await connection.write(body)
        await settle()
        connection.writer.transport.abort()  # (a hang-up: no more of the body will come)
        await settle()
        assert tools.calls == []
        whole = await Connection.open(server.port)  # the same request, whole: it runs
        await whole.head(server.port, "/mcp", {**headers, "Content-Length": str(len(body))})
        await whole.write(body)
        status, _, _ = await whole.answer()
        whole.close()
        assert status == 200 and tools.calls == ["echo"]


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
async def test_a_body_that_stops_coming_is_answered_408_after_the_body_read_time_limit(framing: str) -> None:
    tools = Tools()
    with ServerThread(make_app(tools, body_read_timeout=0.4)) as server:
        headers = post_headers(await raw_initialize(server.port))
        body = echo_call(1)
        connection = await Connection.open(server.port)
        if framing == "chunked":
            await connection.head(server.port, "/mcp", {**headers, "Transfer-Encoding": "chunked"})
            await connection.write(b"%x\r\n%s\r\n" % (len(body) - 5, body[:-5]))  # and never the last chunk
        else:
            await connection.head(server.port, "/mcp", {**headers, "Content-Length": str(len(body))})
            await connection.write(body[:-5])
        started = time.monotonic()
        status, answered, content = await connection.answer()
        waited = time.monotonic() - started
        assert status == 408 and 0.3 < waited < 3, waited
        assert answered["connection"] == "close"
        error = json.loads(content)["error"]
        assert error == {
            "code": -32600,
            "message": "Request Timeout: no part of the request body came for 0.4 seconds; send the body without pauses",
        }
        assert await connection.closed_by_server()  # nothing more is read
        connection.close()
        assert tools.calls == []


async def test_the_body_read_time_limit_is_between_parts_not_for_the_whole_body() -> None:
    """A body sent in parts 0.15 s apart, 0.9 s in all, with a limit of 0.4 s: served."""
    tools = Tools()
    with ServerThread(make_app(tools, body_read_timeout=0.4)) as server:
        headers = post_headers(await raw_initialize(server.port))
        body = echo_call(1)
        connection = await Connection.open(server.port)
        await connection.head(server.port, "/mcp", {**headers, "Content-Length": str(len(body))})
        for start in range(0, len(body), len(body) // 6 + 1):
            await connection.write(body[start : start + len(body) // 6 + 1])
            await asyncio.sleep(0.15)
        status, _, content = await connection.answer()
        connection.close()
        assert status == 200 and json.loads(content)["id"] == 1
        assert tools.calls == ["echo"]


async def test_a_legacy_sse_post_that_stops_coming_is_answered_408_and_one_cut_short_is_dropped() -> None:
    tools = Tools()
    app = make_app(tools, legacy_sse=True, body_read_timeout=0.4)
    async with serving(app) as server:
        stream, uri = await asyncio.wait_for(initialized(server.port), 10)
        body = echo_call(1)
        headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        dribbled = await Connection.open(server.port)
        await dribbled.head(server.port, uri, headers)
        await dribbled.write(body[:-5])
        status, _, _ = await dribbled.answer()
        dribbled.close()
        assert status == 408
        cut = await Connection.open(server.port)
        await cut.head(server.port, uri, {**headers, "Content-Length": str(len(body) + 100)})
        await cut.write(body)
        await settle()
        cut.writer.transport.abort()
        await settle()
        assert tools.calls == []
        stream.close()


async def test_the_body_read_time_limit_must_be_positive() -> None:
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"body_read_timeout must be a positive number of seconds"):
            make_app(body_read_timeout=bad)


# == a made-up session id =========================================================================


async def test_made_up_session_ids_of_another_worker_log_a_bounded_number_of_warnings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """1,000 requests with a made-up ``Mcp-Session-Id`` that looks like another worker's
    (it has a ``-``), unauthenticated: each gets 404, and the log has a few warnings, not 1,000."""
    app = make_app()
    with caplog.at_level(logging.DEBUG, logger="typedmcp"):
        for number in range(1000):
            reply = await send(app, body=rpc(number, "ping"), session=f"beef00-made-up-{number}")
            assert reply.status == 404
    warnings = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert 1 <= len(warnings) <= 3, [record.getMessage() for record in warnings]
    assert "created by another worker process" in warnings[0].getMessage()


async def test_a_cancelled_request_is_cancelled_while_its_body_is_read_not_answered_408() -> None:
    """Only the body's own time limit becomes a 408: a request cancelled from outside (the
    server shutting down) while it waits for its body stays cancelled."""
    app = make_app(body_read_timeout=30)
    session = await initialize(app)
    sent: list[Any] = []
    more = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if not sent and not more.is_set():
            more.set()
            return {"type": "http.request", "body": b'{"jsonrpc": "2.0", ', "more_body": True}
        await asyncio.Event().wait()  # the rest never comes
        raise AssertionError

    async def record(message: Any) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                    (b"accept", b"application/json, text/event-stream"), (b"mcp-session-id", session.encode())],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
    }
    task = asyncio.ensure_future(app(scope, receive, record))
    await more.wait()
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sent == []
    assert not app.body_deadlines._pending  # (the body's deadline left the table)
