"""Isolation and supervision with real processes: crashes (SIGKILL) mid-call, a hung
server, restarts with back-off, HTTP servers that go away and come back, and reload."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from conftest import free_port, read_port, stop_process
from host_support import HOST_SERVER, LIMIT, fixture, reaper, text_of, wait_for_change, wait_state

from typedmcp.host import Host, ServerTimeout, ServerUnavailable, UnknownTool

pytestmark = pytest.mark.anyio
__all__ = ["reaper"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_one_crashes_mid_call_one_hangs_one_answers(reaper: Any) -> None:
    config = {"crashy": fixture(), "hangy": fixture(timeout=2), "good": fixture()}
    async with Host(config, initial_backoff=3.0) as host:
        stream = host.changes()
        first_pid = text_of(await asyncio.wait_for(host.call_tool("crashy__pid"), LIMIT))
        in_flight = asyncio.ensure_future(host.call_tool("crashy__slow", {"seconds": 60}))
        hung = [asyncio.ensure_future(host.call_tool("hangy__hang")) for _ in range(2)]
        began = time.monotonic()
        crash = asyncio.ensure_future(host.call_tool("crashy__crash"))

        async def good_calls() -> list[Any]:
            return [await host.call_tool("good__echo", {"text": str(i)}) for i in range(20)]

        good = asyncio.ensure_future(good_calls())
        for call in (crash, in_flight):
            with pytest.raises(ServerUnavailable, match="server 'crashy'"):
                await asyncio.wait_for(call, LIMIT)
        assert time.monotonic() - began < 10, "the crash was not noticed at once"
        await wait_state(host, stream, "crashy", "restarting")
        assert not host.available("crashy__pid")
        assert "crashy__pid" not in {d["function"]["name"] for d in host.function_definitions()}
        with pytest.raises(ServerUnavailable, match="server 'crashy' is unavailable: restarting"):
            await host.call_tool("crashy__pid")
        results = await asyncio.wait_for(good, LIMIT)
        assert [json.loads(text_of(r)) for r in results] == [{"text": str(i)} for i in range(20)]
        for call in hung:
            with pytest.raises(ServerTimeout, match="server 'hangy'"):
                await asyncio.wait_for(call, LIMIT)
        await wait_state(host, stream, "crashy", "ready")
        assert "exited with code -9" in (host.status()["crashy"]["last_error"] or "")
        again = text_of(await asyncio.wait_for(host.call_tool("crashy__pid"), LIMIT))
        assert again != first_pid
        status = host.status()
        assert status["crashy"]["restarts"] == 1 and status["good"]["restarts"] == 0
        assert status["hangy"]["state"] == "ready"  # hung, not dead: only its calls suffer
        assert len(reaper()) == 4  # crashy twice, hangy, good


async def test_external_sigkill_during_a_call_and_restart(reaper: Any) -> None:
    async with Host({"victim": fixture(), "other": fixture()}, initial_backoff=0.1) as host:
        stream = host.changes()
        pid = int(text_of(await asyncio.wait_for(host.call_tool("victim__pid"), LIMIT)))
        call = asyncio.ensure_future(host.call_tool("victim__slow", {"seconds": 60}))
        await asyncio.wait_for(host.call_tool("other__pid"), LIMIT)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(ServerUnavailable, match="victim"):
            await asyncio.wait_for(call, LIMIT)
        assert host.status()["victim"]["state"] != "ready"  # marked down before the call failed
        await wait_state(host, stream, "victim", "ready")
        new_pid = int(text_of(await asyncio.wait_for(host.call_tool("victim__pid"), LIMIT)))
        assert new_pid != pid


async def test_restart_back_off_is_bounded_and_restart_false_stays_failed(reaper: Any) -> None:
    config = {
        "mcpServers": {
            "missing": {"command": "/nonexistent/server"},
            "once": {"command": "/nonexistent/server", "restart": False},
            "fine": fixture(),
        },
        "host": {"maxBackoff": 0.3},
    }
    async with Host(config, initial_backoff=0.1) as host:
        stream = host.changes()
        assert host.status()["once"]["state"] == "failed"
        assert host.server("missing").max_backoff == 0.3  # the waits: test_host_backoff.py
        # 0.1, 0.2, 0.3, 0.3, ...: five restarts well within the limit, never longer waits
        await wait_for_change(stream, lambda c: host.status()["missing"]["restarts"] >= 5)
        assert host.status()["once"]["restarts"] == 0
        assert host.status()["fine"]["state"] == "ready"


def start_http(port: int, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(HOST_SERVER), "--port", str(port), *args],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("era_args", [(), ("--handshake-only",)], ids=["stateless", "handshake"])
async def test_an_http_server_that_goes_away_is_reconnected(reaper: Any, era_args: tuple[str, ...]) -> None:
    port = free_port()
    server = start_http(port, *era_args)
    try:
        read_port(server)
        config = {"web": {"url": f"http://127.0.0.1:{port}/mcp", "startupTimeout": 5}, "local": fixture()}
        async with Host(config, initial_backoff=0.1) as host:
            stream = host.changes()
            assert host.status()["web"]["era"] == ("handshake" if era_args else "stateless")
            first = text_of(await asyncio.wait_for(host.call_tool("web__pid"), LIMIT))
            server.kill()
            server.wait()
            if not era_args:  # the next call finds it gone: noticed, reconnected with back-off
                with pytest.raises(ServerUnavailable, match="server 'web'"):
                    await asyncio.wait_for(host.call_tool("web__pid"), LIMIT)
                await wait_state(host, stream, "web", "restarting")
                assert (await asyncio.wait_for(host.call_tool("local__pid"), LIMIT)).content
            server = start_http(port, *era_args)
            read_port(server)
            if not era_args:
                await wait_state(host, stream, "web", "ready")
            # handshake era: the new process does not know the session; the client
            # re-initializes on its 404 and the call goes through
            second = text_of(await asyncio.wait_for(host.call_tool("web__pid"), LIMIT))
            assert second != first
    finally:
        stop_process(server)


async def test_a_health_check_notices_an_idle_http_server_that_went_away(reaper: Any) -> None:
    port = free_port()
    server = start_http(port)
    try:
        read_port(server)
        config = {"web": {"url": f"http://127.0.0.1:{port}/mcp", "pingInterval": 0.3}}
        async with Host(config, initial_backoff=5.0) as host:
            stream = host.changes()
            assert host.status()["web"]["state"] == "ready"
            server.kill()
            server.wait()
            await wait_state(host, stream, "web", "restarting")  # no call was made
            assert "connection lost" in (host.status()["web"]["last_error"] or "")
    finally:
        stop_process(server)


async def test_reload_touches_only_what_changed(reaper: Any) -> None:
    old = {"keep": fixture(), "change": fixture(), "drop": fixture()}
    new = {"keep": fixture(), "change": fixture("--tools", "extra"), "add": fixture()}
    async with Host(old) as host:
        keep_pid = text_of(await asyncio.wait_for(host.call_tool("keep__pid"), LIMIT))
        change_pid = text_of(await asyncio.wait_for(host.call_tool("change__pid"), LIMIT))
        in_flight = asyncio.ensure_future(host.call_tool("keep__slow", {"seconds": 1.5}))
        dropped_call = asyncio.ensure_future(host.call_tool("drop__slow", {"seconds": 60}))
        await asyncio.wait_for(host.call_tool("drop__pid"), LIMIT)
        outcome = await asyncio.wait_for(host.reload(new), LIMIT)
        assert outcome == {"added": ["add"], "removed": ["drop"], "restarted": ["change"]}
        assert text_of(await asyncio.wait_for(in_flight, LIMIT)) == "slept"
        with pytest.raises(ServerUnavailable, match=r"server 'drop'.*removed from the configuration"):
            await asyncio.wait_for(dropped_call, LIMIT)
        assert text_of(await asyncio.wait_for(host.call_tool("keep__pid"), LIMIT)) == keep_pid
        assert text_of(await asyncio.wait_for(host.call_tool("change__pid"), LIMIT)) != change_pid
        names = {t.name for t in host.tools()}
        assert "change__extra" in names and "add__pid" in names
        assert not any(name.startswith("drop__") for name in names)
        with pytest.raises(UnknownTool):
            await host.call_tool("drop__pid")
        assert list(host.status()) == ["keep", "change", "add"]
        assert host.status()["keep"]["restarts"] == 0


async def test_a_start_up_timeout_leaves_no_task_exception_behind(reaper: Any) -> None:
    """A server that never answers negotiation is given up at ``startupTimeout``: the
    connection's negotiating task must be ended and collected with it (it used to be left
    to fail later, with 'Task exception was never retrieved')."""
    import gc

    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        silent = {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"],
                  "startupTimeout": 1, "restart": False}
        async with Host({"silent": silent, "fine": fixture()}) as host:
            assert host.status()["silent"]["state"] == "failed"
            assert "startupTimeout=1" in host.status()["silent"]["last_error"]
        for _ in range(3):
            gc.collect()
            await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    assert [c.get("message") for c in reported] == []
