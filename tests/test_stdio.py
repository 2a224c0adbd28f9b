"""stdio end to end: real server processes, raw JSON lines in, raw bytes out.

The servers are the scripts in ``tests/servers``; most tests speak to them through an
asyncio subprocess so that they can send exactly the bytes they mean (bad ones included).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import mcp_generated.v2025_06_18 as protocol
from typedmcp.connecting import connect_stdio
from typedmcp.engine.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
)
from typedmcp.transports.stdio import spawn

pytestmark = pytest.mark.anyio

SERVERS = Path(__file__).resolve().parent / "servers"
PROBE = [sys.executable, str(SERVERS / "probe_server.py")]
STUBBORN = [sys.executable, str(SERVERS / "stubborn_server.py")]
VERSION = "2025-06-18"
LIMIT = 64 * 1024 * 1024


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Server:
    """A probe server process spoken to in raw lines."""

    def __init__(self, process: asyncio.subprocess.Process, stderr: Path) -> None:
        self.process = process
        self.stderr = stderr
        self._ids = iter(range(1000, 10**6))
        assert process.stdin is not None and process.stdout is not None
        self.stdin = process.stdin
        self.stdout = process.stdout

    async def write(self, data: bytes) -> None:
        self.stdin.write(data)
        await self.stdin.drain()

    async def send(self, message: Any) -> None:
        await self.write(json.dumps(message).encode() + b"\n")

    async def line(self, timeout: float = 5.0) -> bytes:
        line = await asyncio.wait_for(self.stdout.readline(), timeout)
        assert line.endswith(b"\n"), f"stdout ended: {line!r}"
        return line

    async def message(self, timeout: float = 5.0) -> Any:
        line = await self.line(timeout)
        assert line.count(b"\n") == 1
        return json.loads(line)

    async def request(self, method: str, params: Any = None, timeout: float = 5.0) -> Any:
        """Send a request and return its response (nothing else may arrive first)."""
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        reply = await self.message(timeout)
        assert reply.get("id") == request_id, reply
        return reply

    async def call(self, tool: str, timeout: float = 5.0, **arguments: Any) -> Any:
        reply = await self.request(
            "tools/call", {"name": tool, "arguments": arguments}, timeout=timeout
        )
        assert "result" in reply, reply
        return reply["result"]

    async def initialize(self) -> Any:
        reply = await self.request(
            "initialize",
            {
                "protocolVersion": VERSION,
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        )
        assert reply["result"]["protocolVersion"] == VERSION
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply["result"]

    async def assert_silent(self, delay: float = 0.2) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            line = await asyncio.wait_for(self.stdout.readline(), delay)
            pytest.fail(f"unexpected output: {line[:200]!r}")

    async def close_and_wait(self, timeout: float) -> int:
        """Close stdin; the exit status, which must come within ``timeout`` seconds."""
        self.stdin.close()
        return await asyncio.wait_for(self.process.wait(), timeout)


@contextlib.asynccontextmanager
async def server(tmp_path: Path, *args: str) -> AsyncIterator[Server]:
    stderr = tmp_path / f"stderr-{time.monotonic_ns()}.txt"
    with stderr.open("wb") as errors:
        process = await asyncio.create_subprocess_exec(
            *PROBE,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=errors,
            limit=LIMIT,
        )
    try:
        yield Server(process, stderr)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def assert_error(reply: Any, code: int, request_id: Any = "absent") -> None:
    assert reply["jsonrpc"] == "2.0" and "result" not in reply
    assert reply["error"]["code"] == code, reply
    if request_id == "absent":
        assert "id" not in reply, reply
    else:
        assert reply["id"] == request_id


def text_of(result: Any) -> str:
    assert result.get("isError") is not True, result
    [content] = result["content"]
    assert content["type"] == "text"
    return str(content["text"])


# -- framing --------------------------------------------------------------------------------


async def test_one_message_per_line_and_line_breaks_in_strings_survive(tmp_path: Path) -> None:
    tricky = 'a\nb\r\nc\u2028d\u2029e\u0085f\x00g"h\\i ✓'
    async with server(tmp_path) as probe:
        await probe.initialize()
        await probe.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": tricky}},
            }
        )
        raw = await probe.line()
        assert raw.count(b"\n") == 1 and b"\r" not in raw
        assert text_of(json.loads(raw)["result"]) == tricky


async def test_the_typed_client_round_trips_text_with_line_breaks() -> None:
    async with connect_stdio(PROBE, protocol=protocol) as client:
        tools = await client.list_tools()
        assert [tool.name for tool in tools.tools] == ["echo"]
        result = await client.call_tool(name="echo", arguments={"text": "a\nb\u2028c"})
        assert result.content[0].text == "a\nb\u2028c"


async def test_print_and_writes_to_fd_1_never_reach_the_protocol_stream(tmp_path: Path) -> None:
    async with server(tmp_path) as probe:
        await probe.initialize()
        await probe.send(
            {
                "jsonrpc": "2.0",
                "id": "p",
                "method": "tools/call",
                "params": {"name": "print", "arguments": {}},
            }
        )
        await probe.send(
            {
                "jsonrpc": "2.0",
                "id": "f",
                "method": "tools/call",
                "params": {"name": "fd1", "arguments": {}},
            }
        )
        await probe.send(
            {
                "jsonrpc": "2.0",
                "id": "e",
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "after"}},
            }
        )
        await asyncio.sleep(0.3)
        assert await probe.close_and_wait(3) == 0
        raw = await asyncio.wait_for(probe.stdout.read(), 3)  # everything, byte for byte
    lines = raw.split(b"\n")
    assert lines[-1] == b"", "the stream ends with a newline"
    messages = [json.loads(line) for line in lines[:-1]]
    assert all(isinstance(m, dict) and m.get("jsonrpc") == "2.0" for m in messages)
    texts = {m["id"]: text_of(m["result"]) for m in messages}
    assert texts == {"p": "printed", "f": "wrote", "e": "after"}
    errors = probe.stderr.read_text()
    assert "a stray print" in errors and "raw bytes on fd 1" in errors


async def test_a_child_process_cannot_swallow_the_protocol_input(tmp_path: Path) -> None:
    async with server(tmp_path) as probe:
        await probe.initialize()
        assert text_of(await probe.call("child")) == "child read 0"
        assert (await probe.request("ping"))["result"] == {}


async def test_crlf_line_endings_and_blank_lines_are_accepted(tmp_path: Path) -> None:
    async with server(tmp_path) as probe:
        await probe.write(b"\r\n\n  \t \n\r\n")
        await probe.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n\r\n\n')
        assert await probe.message() == {"jsonrpc": "2.0", "id": 1, "result": {}}
        await probe.write(b'  {"jsonrpc":"2.0","id":2,"method":"ping"}  \r\n')
        assert await probe.message() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        await probe.assert_silent()


@pytest.mark.parametrize(
    "line",
    [
        b"\xff\xfe\n",
        b"\x00\n",
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}\x00\n',
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\xc3"}}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\\ud800"}}\n',
        b'{"jsonrpc":\n',
        b"\xef\xbb\xbf{}\n",
    ],
)
async def test_undecodable_lines_are_id_less_parse_errors_and_serving_goes_on(
    tmp_path: Path, line: bytes
) -> None:
    async with server(tmp_path) as probe:
        await probe.write(line)
        assert_error(await probe.message(), PARSE_ERROR)
        await probe.initialize()
        assert text_of(await probe.call("echo", text="still here")) == "still here"


@pytest.mark.parametrize(
    "message", [b"42", b'"x"', b"null", b"[]", b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]']
)
async def test_non_objects_and_batches_are_id_less_invalid_requests(
    tmp_path: Path, message: bytes
) -> None:
    async with server(tmp_path) as probe:
        await probe.initialize()  # 2025-06-18 has no batches
        await probe.write(message + b"\n")
        reply = await probe.message()
        assert isinstance(reply, dict)
        assert_error(reply, INVALID_REQUEST)
        await probe.assert_silent()


async def test_a_ten_megabyte_message_round_trips(tmp_path: Path) -> None:
    text = ("0123456789abcdef\n\u2028ü" * (10 * 1024 * 1024 // 20))[: 10 * 1024 * 1024]
    async with server(tmp_path) as probe:
        await probe.initialize()
        assert text_of(await probe.call("echo", timeout=20, text=text)) == text


async def test_300_concurrent_requests_with_large_responses_do_not_deadlock(
    tmp_path: Path,
) -> None:
    count, size = 300, 100_000
    async with server(tmp_path) as probe:
        await probe.initialize()

        async def write_all() -> None:
            for i in range(count):
                await probe.send(
                    {
                        "jsonrpc": "2.0",
                        "id": i,
                        "method": "tools/call",
                        "params": {"name": "big", "arguments": {"size": size}},
                    }
                )

        async def read_all() -> dict[int, int]:
            sizes = {}
            for _ in range(count):
                reply = await probe.message(timeout=30)
                sizes[reply["id"]] = len(text_of(reply["result"]))
            return sizes

        started = time.monotonic()
        _, sizes = await asyncio.wait_for(asyncio.gather(write_all(), read_all()), 30)
        assert sizes == dict.fromkeys(range(count), size)
        assert time.monotonic() - started < 30


async def test_an_oversized_line_is_an_error_and_the_server_goes_on(tmp_path: Path) -> None:
    async with server(tmp_path, "--max-bytes", "4096") as probe:
        await probe.initialize()
        big = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "x" * 50_000}},
            }
        )
        ok = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "ping"})
        await probe.write(big.encode() + b"\n" + ok.encode() + b"\n")  # in one write
        assert_error(await probe.message(), INVALID_REQUEST)
        assert await probe.message() == {"jsonrpc": "2.0", "id": 8, "result": {}}
        await probe.write(b"y" * 5000)  # over the limit, then the rest arrives later
        await asyncio.sleep(0.1)
        await probe.write(b"y" * 5000 + b"\n")
        assert_error(await probe.message(), INVALID_REQUEST)
        assert text_of(await probe.call("echo", text="fits")) == "fits"


# -- shutdown -------------------------------------------------------------------------------


async def test_the_server_exits_promptly_with_status_0_when_stdin_closes(tmp_path: Path) -> None:
    async with server(tmp_path) as probe:
        await probe.initialize()
        started = time.monotonic()
        assert await probe.close_and_wait(3) == 0
        assert time.monotonic() - started < 2


async def test_the_server_exits_promptly_even_during_a_long_handler(tmp_path: Path) -> None:
    async with server(tmp_path) as probe:
        await probe.initialize()
        await probe.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"seconds": 60}},
            }
        )
        await asyncio.sleep(0.2)
        started = time.monotonic()
        assert await probe.close_and_wait(3) == 0
        assert time.monotonic() - started < 2.5
        assert await probe.stdout.read() == b""  # the cancelled call is never answered


async def test_eof_mid_line_drops_the_fragment_and_shuts_down_cleanly(tmp_path: Path) -> None:
    async with server(tmp_path) as probe:
        await probe.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"me')
        assert await probe.message() == {"jsonrpc": "2.0", "id": 1, "result": {}}
        assert await probe.close_and_wait(3) == 0
        assert await probe.stdout.read() == b""


async def test_requests_read_together_with_eof_are_still_answered(tmp_path: Path) -> None:
    """``printf '...' | server`` answers: work in flight at EOF gets a short grace."""
    async with server(tmp_path) as probe:
        await probe.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        assert await probe.close_and_wait(3) == 0
        assert json.loads(await probe.stdout.read()) == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_stdin_and_stdout_may_be_regular_files(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
    )
    replies = tmp_path / "replies.jsonl"
    with requests.open("rb") as stdin, replies.open("wb") as stdout:
        done = subprocess.run(PROBE, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=10)
    assert done.returncode == 0, done.stderr.decode()
    assert [json.loads(line) for line in replies.read_bytes().splitlines()] == [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 2, "result": {}},
    ]


async def _stubborn_pid(transport: Any) -> int:
    ready = json.loads(await asyncio.wait_for(transport.receive(), 5))
    return int(ready["params"]["pid"])


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize(("flags", "least"), [((), 0.3), (("--ignore-term",), 0.6)])
async def test_spawn_terminates_then_kills_a_server_that_ignores_eof(
    flags: tuple[str, ...], least: float
) -> None:
    started = time.monotonic()
    async with spawn([*STUBBORN, *flags], shutdown_timeout=0.3) as transport:
        pid = await _stubborn_pid(transport)
        stopping = time.monotonic()
    elapsed = time.monotonic() - stopping
    assert least - 0.05 < elapsed < least + 1.0
    assert _gone(pid)
    assert time.monotonic() - started < 5


async def test_spawn_kills_the_server_if_cancelled_while_stopping_it() -> None:
    pids: asyncio.Queue[int] = asyncio.Queue()

    async def use() -> None:
        async with spawn([*STUBBORN, "--ignore-term"], shutdown_timeout=30) as transport:
            pids.put_nowait(await _stubborn_pid(transport))

    user = asyncio.create_task(use())
    pid = await asyncio.wait_for(pids.get(), 5)
    await asyncio.sleep(0.2)  # now waiting for the process to exit after stdin closed
    user.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(user, 2)
    for _ in range(50):
        if _gone(pid):
            break
        await asyncio.sleep(0.02)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the server outlived a cancelled spawn()")


# -- lifecycle and protocol-level bad input -------------------------------------------------


async def test_requests_before_initialize(tmp_path: Path) -> None:
    async with server(tmp_path) as probe:
        reply = await probe.request("tools/list")
        assert_error(reply, INVALID_REQUEST, reply["id"])
        assert "initialize" in reply["error"]["message"]
        assert (await probe.request("ping"))["result"] == {}
        await probe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await probe.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        )
        await probe.assert_silent()
        await probe.initialize()
        assert (await probe.request("tools/list"))["result"]["tools"][0]["name"] == "echo"


async def test_a_second_initialize_is_an_invalid_request(tmp_path: Path) -> None:
    async with server(tmp_path) as probe:
        first = await probe.initialize()
        reply = await probe.request(
            "initialize",
            {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "x", "version": "1"},
            },
        )
        assert_error(reply, INVALID_REQUEST, reply["id"])
        assert first["protocolVersion"] == VERSION
        assert (await probe.request("tools/list"))["result"]["tools"]  # still on 2025-06-18


async def test_initialize_without_protocol_version_is_invalid_params_listing_versions(
    tmp_path: Path,
) -> None:
    async with server(tmp_path) as probe:
        reply = await probe.request(
            "initialize", {"capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}
        )
        assert_error(reply, INVALID_PARAMS, reply["id"])
        supported = reply["error"]["data"]["supported"]
        assert VERSION in supported and supported == sorted(supported, reverse=True)
        garbled = await probe.request(
            "initialize",
            {
                "protocolVersion": 20250618,
                "capabilities": {},
                "clientInfo": {"name": "x", "version": "1"},
            },
        )
        assert_error(garbled, INVALID_PARAMS, garbled["id"])
        assert garbled["error"]["data"]["supported"] == supported
        # nothing was negotiated: a proper initialize still works
        await probe.initialize()


async def test_initialize_with_an_unknown_version_answers_with_the_newest(tmp_path: Path) -> None:
    async with server(tmp_path) as probe:
        missing = await probe.request("initialize", {"capabilities": {}})
        newest = missing["error"]["data"]["supported"][0]
        reply = await probe.request(
            "initialize",
            {
                "protocolVersion": "1999-01-01",
                "capabilities": {},
                "clientInfo": {"name": "x", "version": "1"},
            },
        )
        assert reply["result"]["protocolVersion"] == newest
        assert newest >= VERSION
        assert reply["result"]["capabilities"]["tools"] is not None


async def test_a_notification_method_sent_with_an_id_is_not_acted_on(tmp_path: Path) -> None:
    async with server(tmp_path) as probe:
        await probe.initialize()
        await probe.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"seconds": 0.5}},
            }
        )
        reply = await probe.request("notifications/cancelled", {"requestId": 1})
        assert_error(reply, METHOD_NOT_FOUND, reply["id"])
        assert text_of((await probe.message())["result"]) == "slept"  # not cancelled


async def test_cancelled_requests_get_no_response_and_bad_cancels_are_ignored(
    tmp_path: Path,
) -> None:
    async with server(tmp_path) as probe:
        # a cancel read together with initialize cannot cancel it
        init = {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "x", "version": "1"},
        }
        await probe.write(
            json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}).encode()
            + b"\n"
            + json.dumps(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 0}}
            ).encode()
            + b"\n"
        )
        assert (await probe.message())["result"]["protocolVersion"] == VERSION
        await probe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await probe.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "sleep", "arguments": {"seconds": 30}},
            }
        )
        await asyncio.sleep(0.1)
        for params in (
            {"requestId": 1, "reason": "user"},
            {},
            {"requestId": 999},
            {"requestId": None},
        ):
            await probe.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
            )
        await probe.assert_silent(0.3)
        # the id is free again, and the server serves on
        await probe.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert await probe.message() == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_progress_only_increases_and_stops_with_the_result(tmp_path: Path) -> None:
    async with server(tmp_path) as probe:
        await probe.initialize()
        await probe.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "progress", "arguments": {}, "_meta": {"progressToken": "t"}},
            }
        )
        messages = [await probe.message() for _ in range(3)]
        *notes, result = messages
        assert [n["params"]["progress"] for n in notes] == [1, 2]
        assert all(
            n["method"] == "notifications/progress" and n["params"]["progressToken"] == "t"
            for n in notes
        )
        assert result["id"] == 1 and text_of(result["result"]) == "progressed"
        await probe.assert_silent(0.4)  # the late report after the result is dropped


@pytest.mark.parametrize("token", [1.5, True, {"a": 1}, [1]])
async def test_a_progress_token_of_the_wrong_type_is_invalid_params(
    tmp_path: Path, token: Any
) -> None:
    async with server(tmp_path) as probe:
        await probe.initialize()
        reply = await probe.request(
            "tools/call",
            {"name": "echo", "arguments": {"text": "t"}, "_meta": {"progressToken": token}},
        )
        assert_error(reply, INVALID_PARAMS, reply["id"])


async def test_a_progress_token_shared_by_two_requests_serves_both(tmp_path: Path) -> None:
    async with server(tmp_path) as probe:
        await probe.initialize()
        for request_id in (1, 2):
            await probe.send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "tools/call",
                    "params": {
                        "name": "progress",
                        "arguments": {},
                        "_meta": {"progressToken": "shared"},
                    },
                }
            )
        messages = [await probe.message() for _ in range(6)]
        assert sorted(m["id"] for m in messages if "id" in m) == [1, 2]
        assert all(m["params"]["progressToken"] == "shared" for m in messages if "method" in m)


async def test_a_batch_is_answered_once_2025_03_26_is_negotiated(tmp_path: Path) -> None:
    """The one revision with JSON-RPC batches: after its handshake a batch gets one array
    of answers (``serve``'s engine asks the connection's router whether batches are on)."""
    async with server(tmp_path) as probe:
        reply = await probe.request(
            "initialize",
            {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        )
        assert reply["result"]["protocolVersion"] == "2025-03-26"
        await probe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await probe.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}])
        answers = await probe.message()
        assert isinstance(answers, list)
        assert sorted((a["id"], a["result"]) for a in answers) == [(1, {}), (2, {})]
