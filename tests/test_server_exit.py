"""A stdio server that goes away is named: the command, how it ended, its last stderr lines.

Before, a server that died before answering gave a bare ``ConnectionResetError: Connection
lost`` when the client's first write found it gone, or "exited with code 1 ... (its own
error output, if any, is on stderr above)" when the read ended first; one that died later
left waiting requests "closed its stdout (it exited or was killed; its stderr may say why)".
Now every path raises :class:`ConnectionClosed` with the exit code (or the signal) and the
last lines of the server's stderr, which still reaches the client's own stderr as it comes.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import mcp_generated.v2025_11_25 as handshake_protocol
import mcp_generated.v2026_07_28 as stateless_protocol
from typedmcp import connecting
from typedmcp.connecting import connect_stdio
from typedmcp.engine.jsonrpc import ConnectionClosed
from typedmcp.transports.stdio import STDERR_LINE_CHARS, STDERR_TAIL_LINES, spawn

pytestmark = pytest.mark.anyio

RUNS = 20

# Dies before answering: a traceback and exit status 1. With READ set it first reads the
# client's first message (the read of the reply then ends), else it dies at once (the write
# of the first message may find it gone).
TRACEBACK = """\
import json, sys
if {read}:
    sys.stdin.readline()

def start(config):
    return json.loads(config)["port"]

start("not json at all")
"""
KILLED = """\
import os, signal, sys
if {read}:
    sys.stdin.readline()
print("about to be killed", file=sys.stderr, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""
PROTOCOLS: dict[str, Any] = {
    "auto (server/discover, then initialize)": "auto",
    "handshake (initialize)": handshake_protocol,
    "stateless (server/discover)": stateless_protocol,
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def script(tmp_path: Path, name: str, text: str) -> list[str]:
    path = tmp_path / name
    path.write_text(text)
    return [sys.executable, str(path)]


async def failure(command: Sequence[str], protocol: Any = "auto") -> str:
    """The message of the error connecting to ``command`` raises (it must raise one)."""
    try:
        async with connect_stdio(command, protocol=protocol):
            pass
    except ConnectionClosed as error:
        return str(error)
    raise AssertionError(f"{command} was connected to")


async def failures(commands: list[list[str]], protocol: Any) -> list[str]:
    return list(await asyncio.wait_for(
        asyncio.gather(*(failure(command, protocol) for command in commands)), 120
    ))


@pytest.mark.parametrize("protocol", PROTOCOLS.values(), ids=PROTOCOLS.keys())
async def test_a_server_with_a_traceback_at_start_up_is_named_with_its_exit_code_and_last_lines(
    tmp_path: Path, protocol: Any
) -> None:
    commands = [
        script(tmp_path, f"server_{run}.py", TRACEBACK.format(read=run % 2 == 1))
        for run in range(RUNS)
    ]
    for command, message in zip(commands, await failures(commands, protocol), strict=True):
        assert message.startswith(
            f"the server {shlex.join(command)!r} exited with code 1 before the connection was set up; "
            "the last lines of its stderr:\n"
        ), message
        assert message.endswith("json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)")
        assert 'return json.loads(config)["port"]' in message


@pytest.mark.parametrize("protocol", PROTOCOLS.values(), ids=PROTOCOLS.keys())
async def test_a_server_killed_by_a_signal_at_start_up_is_named_with_the_signal(
    tmp_path: Path, protocol: Any
) -> None:
    commands = [
        script(tmp_path, f"server_{run}.py", KILLED.format(read=run % 2 == 1)) for run in range(RUNS)
    ]
    for command, message in zip(commands, await failures(commands, protocol), strict=True):
        assert message == (
            f"the server {shlex.join(command)!r} was killed by signal 9 (SIGKILL) before the "
            "connection was set up; the last lines of its stderr:\n    about to be killed"
        )


async def test_the_first_write_finding_the_server_gone_gives_the_same_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path that gave ``ConnectionResetError: Connection lost``: the server is gone
    (and known to be) before the client writes its first message."""

    @contextlib.asynccontextmanager
    async def spawn_and_wait(command: Sequence[str], **options: Any) -> AsyncIterator[Any]:
        async with spawn(command, **options) as transport:
            assert transport.process is not None
            await asyncio.wait_for(transport.process.wait(), 20)
            yield transport

    monkeypatch.setattr(connecting, "spawn", spawn_and_wait)
    command = script(tmp_path, "server.py", TRACEBACK.format(read=False))
    for protocol in PROTOCOLS.values():
        message = await asyncio.wait_for(failure(command, protocol), 30)
        assert "exited with code 1 before the connection was set up" in message
        assert "JSONDecodeError" in message


async def test_the_last_lines_are_bounded_and_a_silent_server_is_said_to_be_silent(
    tmp_path: Path,
) -> None:
    noisy = script(tmp_path, "noisy.py", (
        "import sys\n"
        "for n in range(1000):\n"
        "    print(f'line {n} ' + 'x' * (1000 if n == 999 else 10), file=sys.stderr)\n"
        "sys.exit(2)\n"
    ))
    message = await asyncio.wait_for(failure(noisy), 30)
    head, _, tail = message.partition("the last lines of its stderr:\n")
    assert head.endswith("exited with code 2 before the connection was set up; ")
    lines = tail.split("\n")
    assert len(lines) == STDERR_TAIL_LINES
    assert lines[0] == f"    line {1000 - STDERR_TAIL_LINES} xxxxxxxxxx"
    assert lines[-1].startswith("    line 999 xxx") and lines[-1].endswith("...")
    assert len(lines[-1]) == 4 + STDERR_LINE_CHARS
    silent = script(tmp_path, "silent.py", "import sys\nsys.exit(5)\n")
    assert (await asyncio.wait_for(failure(silent), 30)).endswith(
        "exited with code 5 before the connection was set up (and wrote nothing to stderr)"
    )


async def test_a_child_that_keeps_its_stderr_open_does_not_hold_the_error_up(
    tmp_path: Path,
) -> None:
    """The server exits, but a process it started holds its stderr open for 30 s: the
    error comes once the server has exited and a short wait for its stderr is over."""
    command = script(tmp_path, "server.py", (
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'],\n"
        "                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)\n"
        "print('leaving a child behind', file=sys.stderr, flush=True)\n"
        "sys.exit(1)\n"
    ))
    started = time.monotonic()
    message = await asyncio.wait_for(failure(command), 30)
    assert time.monotonic() - started < 15
    assert "exited with code 1" in message and message.endswith("    leaving a child behind")


DIES_IN_A_CALL = """\
import os, sys
from typedmcp import run_stdio
from mcp_generated.v2025_11_25 import models, server

class Dying(server.ServerHandlers):
    async def call_tool(self, params, ctx):
        print("the disk is full", file=sys.stderr, flush=True)
        os._exit(3)

run_stdio(Dying())
"""


async def test_a_server_that_dies_later_is_named_the_same_way(tmp_path: Path) -> None:
    command = script(tmp_path, "server.py", DIES_IN_A_CALL)
    story = f"the server {shlex.join(command)!r} exited with code 3; the last lines of its stderr:\n"

    async def body() -> None:
        async with connect_stdio(command, protocol=handshake_protocol) as client:
            with pytest.raises(ConnectionClosed) as waiting:
                await client.call_tool(name="anything")
            assert str(waiting.value) == story + "    the disk is full"
            with pytest.raises(ConnectionClosed) as later:
                await client.list_tools()
            assert str(later.value) == "cannot send tools/list: " + story + "    the disk is full"

    await asyncio.wait_for(body(), 60)


async def test_the_server_stderr_still_reaches_ours_as_it_comes(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    starting = "import sys\nprint('starting the weather server', file=sys.stderr, flush=True)\n"
    command = script(tmp_path, "server.py", starting + DIES_IN_A_CALL)

    seen: list[str] = []

    async def passed_on(text: str) -> None:
        while text not in "".join(seen):  # our stderr gets it from a thread, soon
            seen.append(capfd.readouterr().err)
            await asyncio.sleep(0.02)

    async def body() -> None:
        async with connect_stdio(command, protocol=handshake_protocol) as client:
            await client.ping()
            await passed_on("starting the weather server\n")  # while the server runs
            with pytest.raises(ConnectionClosed):
                await client.call_tool(name="anything")
        await passed_on("the disk is full\n")

    await asyncio.wait_for(body(), 60)
