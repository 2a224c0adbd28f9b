"""The raw HTTP client of ``benchmarks/bench_app_peers.py`` reads what each server sends
(Content-Length JSON, chunked SSE, a 202 without a body, several answers on one keep-alive
connection) and its check refuses an answer that is not the one asked for. A local socket
plays the server: the bytes are written out here, nothing is measured."""

from __future__ import annotations

import importlib
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"

JSON_REPLY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi 1"}]}}'
SSE_EVENTS = (
    b"event: message\r\nid: s.0\r\ndata: \r\n\r\n"  # a 2025-11-25 priming event, empty data
    b'event: message\r\ndata: {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi 2"}]}}\r\n\r\n'
)


def chunked(data: bytes, size: int) -> bytes:
    pieces = [data[at : at + size] for at in range(0, len(data), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"


RESPONSES = [
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
    % (len(JSON_REPLY), JSON_REPLY),
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    + chunked(SSE_EVENTS, 40),
    b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n",
]


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module("bench_app_peers")
    finally:
        sys.path.remove(str(BENCHMARKS))


def serve_once(listener: socket.socket, requests: list[bytes]) -> None:
    """Answer three requests on one connection, each response in small writes (so the
    client has to read on), recording each request's head."""
    connection, _ = listener.accept()
    with connection:
        pending = b""
        for response in RESPONSES:
            while b"\r\n\r\n" not in pending:
                pending += connection.recv(65536)
            head, _, rest = pending.partition(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            while len(rest) < length:
                rest += connection.recv(65536)
            requests.append(head + b"\r\n\r\n" + rest[:length])
            pending = rest[length:]
            for at in range(0, len(response), 17):
                connection.sendall(response[at : at + 17])


def test_raw_client_reads_json_chunked_sse_and_empty_answers_on_one_connection(bench: ModuleType) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    requests: list[bytes] = []
    server = threading.Thread(target=serve_once, args=(listener, requests), daemon=True)
    server.start()
    client = bench.RawHttp(listener.getsockname()[1])
    try:
        answers = [
            client.exchange(client.request(bench.call(number), bench.POST_HEADERS)) for number in (1, 2, 3)
        ]
    finally:
        client.close()
        listener.close()
    server.join(5)
    (status1, headers1, body1), (status2, headers2, body2), (status3, _, body3) = answers
    assert (status1, body1) == (200, JSON_REPLY)
    assert status2 == 200 and headers2["transfer-encoding"] == "chunked" and body2 == SSE_EVENTS
    assert (status3, body3) == (202, b"")
    bench.checked(Path("peer.py"), 1, bench.http_answer(headers1, body1, 1))
    bench.checked(Path("peer.py"), 2, bench.http_answer(headers2, body2, 2))
    assert bench.http_answer(headers2, body2, 7) is None  # no answer with that id in the stream
    assert requests[0].startswith(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:")
    assert b'"text": "hi 3"' in requests[2]


@pytest.mark.parametrize(
    "reply",
    [
        {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "hi 1"}]}},  # another id
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi 11"}]}},  # another text
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi 1"}], "isError": True}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "hi 1"}},
    ],
)
def test_the_check_refuses_an_answer_that_is_not_the_echo_asked_for(
    bench: ModuleType, reply: dict[str, object]
) -> None:
    with pytest.raises(SystemExit, match="tools/call 1 failed"):
        bench.checked(Path("peer.py"), 1, reply)


def test_server_cpu_is_exact_while_its_threads_live_and_counts_ended_threads_by_ticks(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made-up /proc readings: nanoseconds per thread while the threads stay the same; once
    one has ended (its nanoseconds gone with it), the process's ticks, which still hold it."""
    readings = iter([({"1": 1_000_000, "2": 0}, 10.0), ({"1": 3_000_000, "2": 1_000_000}, 10.01)])
    reading = next(readings)
    monkeypatch.setattr(bench, "thread_cpu", lambda pid: reading[0])
    monkeypatch.setattr(bench, "cpu_seconds", lambda pid: reading[1])
    cpu = bench.ServerCpu(1234)
    reading = next(readings)
    assert cpu.per_call(10) == pytest.approx(300.0)  # 3 ms over 10 calls, from the threads
    reading = ({"1": 3_000_000}, 10.04)  # thread 2 ended: 40 ms of ticks over 10 calls
    assert cpu.per_call(10) == pytest.approx(4_000.0)


@pytest.mark.parametrize("transport", ["stdio", "Streamable HTTP", "HTTP 2026-07-28"])
def test_the_floor_answers_every_transport_the_benchmark_drives(bench: ModuleType, transport: str) -> None:
    """The floor row is a real run: the floor server passes the same answer checks as the
    servers it is set beside (ids, the echoed text, a 2026-07-28 result), on each transport."""
    rate, client_cpu, server_cpu = bench.TRANSPORTS[transport](bench.SERVERS[bench.FLOOR], 5)
    assert rate > 0 and client_cpu >= 0 and server_cpu > 0


def test_the_verdict_judges_server_cpu_against_the_goal_and_shows_the_floor_s_ceiling(bench: ModuleType) -> None:
    rates = {bench.OURS: 4000.0, "SDK MCPServer": 1600.0, bench.FLOOR: 5600.0}
    cpus = {bench.OURS: 180.0, "SDK MCPServer": 560.0, bench.FLOOR: 120.0}
    line = bench.verdict("HTTP 2026-07-28", "SDK MCPServer", rates, cpus)
    assert "server CPU 3.11x less (met)" in line
    assert "calls/s 2.50x (ceiling 3.50x" in line and "60 us of CPU above it" in line
    cpus[bench.OURS] = 190.0
    assert "2.95x less (NOT met)" in bench.verdict("HTTP 2026-07-28", "SDK MCPServer", rates, cpus)
    assert "(--quick: too few calls to judge)" in bench.verdict(
        "HTTP 2026-07-28", "SDK MCPServer", rates, cpus, judged=False
    )
