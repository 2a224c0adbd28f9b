"""What the HTTP client reads from a server is bounded (issue 29, requirement 5): a JSON
reply, an SSE event, a fetched document (OAuth metadata, a JWKS) larger than the client's
cap raises :class:`ReplyTooLarge` naming the cap and how to raise it, without being read
into memory: a ``Content-Length`` over the cap is refused before the body, and a body
without one (chunked, endless) is read only up to the cap, then its connection closed.

The servers are real (aiohttp on 127.0.0.1, in a thread of their own) and count what they
managed to send: a client that read everything would take all of a 200 MiB stream."""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import mcp_generated.v2025_11_25
from typedmcp.auth.fetch import OAuthError, http_fetch
from typedmcp.auth.jwt import JwtVerifier
from typedmcp.auth.verifiers import VerifierUnavailable
from typedmcp.connecting import connect_http
from typedmcp.host.config import ConfigError, parse_server
from typedmcp.transports.http_client import HttpClientTransport
from typedmcp.transports.http_wire import (
    MAX_FETCH_BYTES,
    MAX_REPLY_BYTES,
    HttpOptions,
    HttpTimeouts,
    ReplyTooLarge,
    parse_sse,
)
from typedmcp.transports.sse_client import SseClientTransport

pytestmark = pytest.mark.anyio

MiB = 1024 * 1024
#: what the endless servers send at most (a client without a cap reads all of it)
ENDLESS = 200 * MiB
CHUNK = b"x" * 65536
REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Served:
    """What the server saw: requests by path, and the body bytes it wrote."""

    requests: list[str] = field(default_factory=list)
    sent: int = 0


def json_head(length: int | None = None, kind: str = "application/json") -> dict[str, str]:
    return {"Content-Type": kind} if length is None else {"Content-Type": kind, "Content-Length": str(length)}


def make_app(served: Served) -> web.Application:
    async def endless(request: web.Request, prefix: bytes, kind: str, line_end: bool = False) -> web.StreamResponse:
        served.requests.append(request.path)
        response = web.StreamResponse(headers=json_head(kind=kind))
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            await response.write(prefix)
            while served.sent < ENDLESS:
                await response.write(b"data: " + CHUNK + b"\n" if line_end else CHUNK)
                served.sent += len(CHUNK)
        except (ConnectionError, RuntimeError):
            pass  # the client hung up: what it read is all it gets
        return response

    async def json_endless(request: web.Request) -> web.StreamResponse:
        return await endless(request, b'{"jsonrpc":"2.0","id":1,"result":{"x":"', "application/json")

    async def sse_line(request: web.Request) -> web.StreamResponse:  # one line without an end
        return await endless(request, b"id: 1\ndata: ", "text/event-stream")

    async def sse_event(request: web.Request) -> web.StreamResponse:  # data lines, no blank line
        return await endless(request, b"id: 1\n", "text/event-stream", line_end=True)

    async def declared(request: web.Request) -> web.StreamResponse:
        """Content-Length 200 MiB, then a few bytes, then silence (the connection kept open)."""
        served.requests.append(request.path)
        response = web.StreamResponse(headers=json_head(ENDLESS))
        await response.prepare(request)
        await response.write(b'{"jsonrpc"')
        served.sent += 10
        await asyncio.sleep(10)
        return response

    async def sized(request: web.Request) -> web.Response:
        """A JSON body of exactly ``?size=`` bytes (with Content-Length, or chunked)."""
        served.requests.append(request.path)
        size = int(request.query["size"])
        body = b'{"keys":[],"pad":"' + b"p" * (size - 20) + b'"}'
        assert len(body) == size
        if request.query.get("chunked"):
            response = web.StreamResponse(headers=json_head())
            response.enable_chunked_encoding()
            await response.prepare(request)
            for start in range(0, size, 65536):
                await response.write(body[start:start + 65536])
            await response.write_eof()
            return response  # type: ignore[return-value]
        return web.Response(body=body, headers=json_head())

    async def jwks(request: web.Request) -> web.StreamResponse:
        return await endless(request, b'{"keys":[{"kty":"oct","k":"', "application/json")

    async def plain(request: web.Request) -> web.Response:
        """Headers and body echoed; ``?status=`` (a redirect: to /elsewhere)."""
        served.requests.append(request.path)
        status = int(request.query.get("status", "200"))
        echoed = {"accept": request.headers.get("Accept"), "body": (await request.read()).decode()}
        return web.Response(status=status, body=json.dumps(echoed).encode(),
                            headers={**json_head(), "Location": "/elsewhere"})

    app = web.Application()
    app.router.add_route("*", "/plain", plain)
    app.router.add_post("/mcp/json", json_endless)
    app.router.add_post("/mcp/line", sse_line)
    app.router.add_post("/mcp/event", sse_event)
    app.router.add_get("/mcp/event", sse_event)
    app.router.add_post("/mcp/declared", declared)
    app.router.add_get("/declared", declared)
    app.router.add_get("/sized", sized)
    app.router.add_get("/jwks", jwks)
    app.router.add_get("/sse", sse_line)
    return app


class ServerThread:
    """The app on 127.0.0.1 in a thread with its own loop (a child process can reach it too)."""

    def __init__(self) -> None:
        self.served = Served()
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.runner = web.AppRunner(make_app(self.served), handle_signals=False, shutdown_timeout=1)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        self.loop.run_forever()
        left = asyncio.all_tasks(self.loop)
        for task in left:
            task.cancel()
        self.loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        self.loop.close()

    def __enter__(self) -> ServerThread:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *_exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
def server() -> Iterator[ServerThread]:
    with ServerThread() as running:
        yield running


def peak_rss() -> int:
    """This process's peak resident memory so far, bytes (Linux: ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


async def post(url: str, **options: Any) -> None:
    """One POST of the Streamable HTTP transport (handshake era), its reply delivered nowhere."""
    transport = HttpClientTransport(url, options=HttpOptions(**options))

    async def deliver(_data: bytes) -> None:
        return None

    transport.deliver = deliver
    try:
        await transport.send(REQUEST)
    finally:
        await transport.close()


def assert_names_the_cap(error: BaseException, option: str, limit: int) -> None:
    text = str(error)
    assert f"larger than {limit} bytes ({option}" in text, text
    assert f"{option}=N" in text or "--max-reply-bytes" in text, text  # how to raise it


@pytest.mark.parametrize(("path", "what"), [("/mcp/json", "a JSON reply"),
                                            ("/mcp/line", "an SSE line without an end"),
                                            ("/mcp/event", "an SSE event of endless data lines")])
async def test_an_endless_reply_fails_at_the_cap_and_is_not_read_on(server: ServerThread, path: str, what: str) -> None:
    before = peak_rss()
    began = time.monotonic()
    with pytest.raises(ReplyTooLarge) as caught:
        await post(server.url(path), max_reply_bytes=4 * MiB)
    took = time.monotonic() - began
    assert_names_the_cap(caught.value, "max_reply_bytes", 4 * MiB)
    assert path in str(caught.value) or what.startswith("an SSE")  # (the reply's URL)
    assert caught.value.option == "max_reply_bytes" and caught.value.limit == 4 * MiB
    await asyncio.sleep(0.2)  # (the server notices the closed connection)
    # the client stopped at the cap: the server got rid of the cap and its socket buffers, no more
    assert server.served.sent < 4 * MiB + 16 * MiB, (what, server.served.sent)
    assert peak_rss() - before < 64 * MiB, what
    assert took < 10, what
    assert server.served.requests == [path]  # one POST; an SSE reply too large is not resumed


async def test_the_get_stream_stops_at_an_event_over_the_cap_with_a_warning(
        server: ServerThread, caplog: pytest.LogCaptureFixture) -> None:
    transport = HttpClientTransport(server.url("/mcp/event"), options=HttpOptions(max_reply_bytes=MiB))

    async def deliver(_data: bytes) -> None:
        return None

    transport.deliver = deliver
    try:
        await transport.start_get_stream()
        assert transport._get_task is not None
        await asyncio.wait_for(transport._get_task, 10)
    finally:
        await transport.close()
    stopped = [record.getMessage() for record in caplog.records if "GET stream" in record.getMessage()]
    assert len(stopped) == 1 and f"larger than {MiB} bytes (max_reply_bytes" in stopped[0], stopped
    assert all(record.exc_info is None for record in caplog.records)  # a warning, no traceback
    assert server.served.requests == ["/mcp/event"]  # not opened again: it would come again


async def test_a_content_length_over_the_cap_is_refused_before_the_body(server: ServerThread) -> None:
    began = time.monotonic()
    with pytest.raises(ReplyTooLarge) as caught:
        await post(server.url("/mcp/declared"), max_reply_bytes=MiB, timeouts=HttpTimeouts(reply=5))
    assert time.monotonic() - began < 5  # not waiting for a body that never comes
    assert f"the reply of {server.url('/mcp/declared')} (Content-Length {ENDLESS})" in str(caught.value)
    assert_names_the_cap(caught.value, "max_reply_bytes", MiB)


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_reply_of_exactly_the_cap_is_read_and_one_byte_more_is_not(server: ServerThread, chunked: bool) -> None:
    query = "&chunked=1" if chunked else ""
    reply = await http_fetch("GET", server.url(f"/sized?size={MAX_FETCH_BYTES}{query}"))
    assert len(reply.body) == MAX_FETCH_BYTES and reply.json()["keys"] == []
    with pytest.raises(OAuthError) as caught:
        await http_fetch("GET", server.url(f"/sized?size={MAX_FETCH_BYTES + 1}{query}"))
    assert_names_the_cap(caught.value, "max_fetch_bytes", MAX_FETCH_BYTES)
    assert f"the reply of {server.url('/sized')}" in str(caught.value)
    # raised where the document is that large
    reply = await http_fetch("GET", server.url(f"/sized?size={MAX_FETCH_BYTES + 1}{query}"),
                             max_fetch_bytes=2 * MAX_FETCH_BYTES)
    assert len(reply.body) == MAX_FETCH_BYTES + 1


async def test_a_fetch_sends_its_headers_and_body_and_returns_any_status_unfollowed(server: ServerThread) -> None:
    """(``fetch`` reads through the capped path: what it sends and returns is unchanged.)"""
    reply = await http_fetch("POST", server.url("/plain"), b"grant_type=x", {"Accept": "application/json"})
    assert (reply.status, reply.json()) == (200, {"accept": "application/json", "body": "grant_type=x"})
    for status in (302, 307, 400, 503):
        reply = await http_fetch("GET", server.url(f"/plain?status={status}"))
        assert reply.status == status and reply.headers["location"] == "/elsewhere"
    assert server.served.requests == ["/plain"] * 5  # no redirect followed


async def test_a_fetch_with_a_content_length_over_the_cap_fails_at_once(server: ServerThread) -> None:
    began = time.monotonic()
    with pytest.raises(OAuthError) as caught:
        await http_fetch("GET", server.url("/declared"), timeouts=HttpTimeouts(reply=5))
    assert time.monotonic() - began < 5
    assert_names_the_cap(caught.value, "max_fetch_bytes", MAX_FETCH_BYTES)


async def test_an_endless_jwks_makes_the_verifier_unavailable_naming_the_cap(server: ServerThread) -> None:
    verifier = JwtVerifier(issuer="https://issuer.example", audience="https://mcp.example",
                           jwks_url=server.url("/jwks"))
    with pytest.raises(VerifierUnavailable) as caught:
        await verifier.key_for("k1")
    assert_names_the_cap(caught.value, "max_fetch_bytes", MAX_FETCH_BYTES)
    await asyncio.sleep(0.2)
    assert server.served.sent < MAX_FETCH_BYTES + 16 * MiB


async def test_the_http_sse_stream_fails_at_the_cap(server: ServerThread) -> None:
    transport = SseClientTransport(server.url("/sse"), options=HttpOptions(max_reply_bytes=2 * MiB))
    try:
        with pytest.raises(ReplyTooLarge) as caught:
            await transport.open(timeout=10)
    finally:
        await transport.close()
    assert_names_the_cap(caught.value, "max_reply_bytes", 2 * MiB)


async def test_connect_http_passes_its_caps_to_the_client(server: ServerThread) -> None:
    """``connect_http(max_reply_bytes=)``: the first POST (the negotiation) already capped."""
    with pytest.raises(ReplyTooLarge) as caught:
        async with connect_http(server.url("/mcp/json"), protocol=mcp_generated.v2025_11_25,
                                max_reply_bytes=3 * MiB, legacy_sse_fallback=False):
            pass
    assert_names_the_cap(caught.value, "max_reply_bytes", 3 * MiB)


async def test_mcp_codegen_tools_caps_what_it_reads_from_the_url(server: ServerThread, tmp_path: Path) -> None:
    command = [str(Path(sys.executable).parent / "mcp-codegen"), "tools", "--out", str(tmp_path / "big_tools"),
               "--url", server.url("/mcp/json"), "--max-reply-bytes", str(2 * MiB)]
    ran = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120)
    assert ran.returncode != 0
    assert f"larger than {2 * MiB} bytes (max_reply_bytes" in ran.stderr, ran.stderr
    assert "Traceback" not in ran.stderr
    assert server.served.sent < 2 * MiB + 16 * MiB


def test_the_caps_are_checked_and_named_when_given() -> None:
    assert HttpOptions().max_reply_bytes == MAX_REPLY_BYTES == 64 * MiB
    assert HttpOptions().max_fetch_bytes == MAX_FETCH_BYTES == MiB
    for bad in (0, -1, 1.5, "64", True, None):
        with pytest.raises(ValueError, match=r"max_reply_bytes=.*positive int \(e\.g\. max_reply_bytes=67108864 for"):
            HttpOptions(max_reply_bytes=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=r"max_fetch_bytes=.*positive int"):
            HttpOptions(max_fetch_bytes=bad)  # type: ignore[arg-type]


async def test_mcp_host_caps_what_it_reads_from_a_remote_server(server: ServerThread) -> None:
    """``maxReplyBytes`` of an entry reaches the host's client: the server's first reply
    (too large) fails its start-up, and the error names the cap."""
    from typedmcp.host import Host

    entry = {"url": server.url("/mcp/json"), "maxReplyBytes": 2 * MiB, "restart": False,
             "protocol": "2025-11-25", "startupTimeout": 20}
    async with Host({"big": entry}) as host:
        error = host.status()["big"]["last_error"] or ""
    assert f"larger than {2 * MiB} bytes (max_reply_bytes" in error, error
    assert server.served.sent < 2 * MiB + 16 * MiB


def test_an_mcp_host_server_entry_takes_max_reply_bytes() -> None:
    entry = parse_server("remote", {"url": "https://mcp.example/mcp", "maxReplyBytes": 8 * MiB})
    assert entry.max_reply_bytes == 8 * MiB
    assert parse_server("remote", {"url": "https://mcp.example/mcp"}).max_reply_bytes is None
    for bad in (0, -5, 2.5, "8MiB", True):
        with pytest.raises(ConfigError, match="field 'maxReplyBytes': must be a positive whole number of bytes"):
            parse_server("remote", {"url": "https://mcp.example/mcp", "maxReplyBytes": bad})
    with pytest.raises(ConfigError, match="field 'maxReplyBytes'"):
        parse_server("local", {"command": "python", "maxReplyBytes": MiB})


# -- the SSE parser ---------------------------------------------------------------------------


async def chunks_of(piece: bytes, count: list[int]) -> AsyncIterator[bytes]:
    """``piece`` again and again: 64 MiB of it at most (a parser without a cap reads it all)."""
    while count[0] * len(piece) < 64 * MiB:
        count[0] += 1
        yield piece


@pytest.mark.parametrize(("piece", "what"), [
    (b"data: " + b"x" * 65530, "one line without an end"),
    (b"data: " + b"x" * 4000 + b"\n", "data lines without the blank line that ends the event"),
    (b"data:\n" * 10000, "empty data lines (each one a newline of the event)"),
])
async def test_the_sse_parser_stops_at_the_cap(piece: bytes, what: str) -> None:
    count = [0]
    with pytest.raises(ReplyTooLarge):
        async for _event in parse_sse(chunks_of(piece, count), max_event_bytes=MiB):
            pass
    assert count[0] * len(piece) <= 8 * MiB, what


async def test_the_sse_parser_reads_an_event_of_exactly_the_cap() -> None:
    """The event's size is its data lines with a newline each (99 + 1 + 100 + 1 = 201),
    checked after each chunk: here the chunk ends with the event's last data line."""
    lines = b"id: 7\ndata: " + b"a" * 99 + b"\ndata: " + b"b" * 100 + b"\n"

    async def in_two() -> AsyncIterator[bytes]:
        yield lines
        yield b"\n"

    events = [found async for found in parse_sse(in_two(), max_event_bytes=201)]
    assert [(found.id, found.data) for found in events] == [("7", b"a" * 99 + b"\n" + b"b" * 100)]
    with pytest.raises(ReplyTooLarge):
        [found async for found in parse_sse(in_two(), max_event_bytes=200)]


class Feed:
    """Chunks for the parser, counting how many it took."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks
        self.taken = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.taken += 1
            yield chunk


async def events_of(feed: Feed, cap: int = MAX_REPLY_BYTES) -> list[tuple[str, str | None, bytes, int | None]]:
    return [tuple(found) async for found in parse_sse(feed.__aiter__(), max_event_bytes=cap)]  # type: ignore[misc]


async def test_the_sse_parser_reads_fields_as_the_sse_spec_says() -> None:
    """Event names (``message`` when unnamed), CRLF line ends, ``retry`` (digits only, that
    field only), the last id carried over, comments and events without data or retry skipped."""
    feed = Feed(b": a comment\r\nevent: endpoint\r\ndata: /post\r\n\r\n",
                b"id: 9\nretry: 300\ndata: {}\n\n",
                b"x: 123\nretry: soon\ndata: a\ndata: b\n\n",
                b"id: 10\n\n",  # no data, no retry: skipped (its id carries over)
                b"retry: 50\n\n")  # a retry alone is an event
    assert await events_of(feed) == [
        ("endpoint", None, b"/post", None),
        ("message", "9", b"{}", 300),
        ("message", "9", b"a\nb", None),
        ("message", "10", b"", 50),
    ]


async def test_a_line_without_an_end_after_data_lines_is_counted_with_them() -> None:
    """Data lines of 100 bytes (with their newlines), then a line still being read: the
    parser stops at the first chunk that takes the two past the cap, not before."""
    feed = Feed(b"data: " + b"a" * 99 + b"\ndata: ", b"b" * 95, b"b")  # 100 + 6 + 95 = 201, then 202
    with pytest.raises(ReplyTooLarge):
        await events_of(feed, cap=201)
    assert feed.taken == 3


async def test_the_sizes_start_again_at_each_event_and_line() -> None:
    """A line joined from two chunks and two events of exactly the cap each: read; one
    byte more in the second event: refused (201 = 99 + 1 + 100 + 1)."""
    def two_events(last: bytes) -> Feed:
        return Feed(b"data: " + b"a" * 99, b"\ndata: " + b"b" * 100 + b"\n", b"\n",
                    b"data: " + b"c" * 99 + b"\ndata: " + last + b"\n", b"\n")

    assert [found[2] for found in await events_of(two_events(b"d" * 100), cap=201)] == [
        b"a" * 99 + b"\n" + b"b" * 100, b"c" * 99 + b"\n" + b"d" * 100]
    with pytest.raises(ReplyTooLarge):
        await events_of(two_events(b"d" * 101), cap=201)
    with pytest.raises(ReplyTooLarge):
        await events_of(two_events(b"d" * 100), cap=200)


def test_a_cap_of_one_byte_is_a_cap() -> None:
    assert HttpOptions(max_reply_bytes=1, max_fetch_bytes=1).max_fetch_bytes == 1


def test_the_error_says_where_the_caps_are_raised() -> None:
    error = ReplyTooLarge("the reply of http://x/mcp", "max_reply_bytes", 64 * MiB)
    assert str(error).startswith("the reply of http://x/mcp is larger than 67108864 bytes (max_reply_bytes, 64 MiB)")
    for where in ("connect_http(..., max_reply_bytes=N)", '"maxReplyBytes"', "--max-reply-bytes N"):
        assert where in str(error)
    assert "http_fetch(..., max_fetch_bytes=N)" in str(ReplyTooLarge("a JWKS", "max_fetch_bytes", MiB))
    assert json.dumps(str(error))  # (one line of text)
