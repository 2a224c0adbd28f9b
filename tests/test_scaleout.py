"""Several uvicorn workers behind one port: the stateless era needs no shared state.

``uvicorn --workers 2`` serves tests/servers/scaleout_app.py; every request goes on a new
connection, so the kernel spreads them over the workers (each reports its pid as
``serverInfo.version``). A multi round-trip request whose retry lands on another worker
succeeds when the workers share ``MCP_REQUEST_STATE_KEY`` and is rejected when they do not;
a handshake-era session that lands on another worker fails with a message that names the
fix (session affinity).
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import free_port, stop_process

SERVERS = Path(__file__).resolve().parent / "servers"
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
ATTEMPTS = 200


def _start_workers(state_key: str | None) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = dict(os.environ)
    env.pop("MCP_REQUEST_STATE_KEY", None)
    if state_key is not None:
        env["MCP_REQUEST_STATE_KEY"] = state_key
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "scaleout_app:app", "--app-dir", str(SERVERS),
         "--host", "127.0.0.1", "--port", str(port), "--workers", "2", "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    pids: set[str] = set()
    while time.monotonic() < deadline and len(pids) < 2:
        try:
            pids.add(_call(port, "whoami")[1])
        except OSError:
            time.sleep(0.1)
    if len(pids) < 2:
        process.kill()
        raise RuntimeError(f"two uvicorn workers did not come up: {process.stderr!r}")
    return process, port


@pytest.fixture(scope="module")
def shared_key_workers() -> Iterator[int]:
    process, port = _start_workers("a key every worker of this deployment shares")
    yield port
    stop_process(process, 10)


def _post(
    port: int, body: dict[str, Any], headers: dict[str, str]
) -> tuple[int, dict[str, str], dict[str, Any]]:
    """One POST on a fresh connection (so consecutive requests may reach other workers)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(
            "POST",
            "/mcp",
            body=json.dumps(body),
            headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "connection": "close",
                **headers,
            },
        )
        response = connection.getresponse()
        data = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(data)
    finally:
        connection.close()


def _call(port: int, tool: str, **extra: Any) -> tuple[dict[str, Any], str]:
    """tools/call in 2026-07-28; returns the result and the pid of the worker that served it."""
    params = {"name": tool, "arguments": {}, "_meta": META, **extra}
    status, _, reply = _post(
        port,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
        {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": tool},
    )
    assert status in (200, 400), reply
    result = reply.get("result")
    if result is None:
        return reply, ""
    return result, result["_meta"]["io.modelcontextprotocol/serverInfo"]["version"]


def _retry_elsewhere(port: int, first_pid: str, state: str) -> tuple[dict[str, Any], str]:
    """Send the MRTR retry until a worker other than ``first_pid`` answers it."""
    answer = {"elicitation-1": {"action": "accept", "content": {"ok": True}}}
    for _ in range(ATTEMPTS):
        reply, pid = _call(port, "confirm", inputResponses=answer, requestState=state)
        if pid != first_pid:
            return reply, pid
    raise AssertionError(f"no retry reached another worker in {ATTEMPTS} attempts")


def test_requests_spread_over_two_worker_processes(shared_key_workers: int) -> None:
    pids = {_call(shared_key_workers, "whoami")[1] for _ in range(40)}
    assert len(pids) == 2
    assert all(pid.isdigit() and pid != str(os.getpid()) for pid in pids)


def test_input_required_retry_is_served_by_another_worker_with_a_shared_key(
    shared_key_workers: int,
) -> None:
    first, first_pid = _call(shared_key_workers, "confirm")
    assert first["resultType"] == "input_required"
    assert list(first["inputRequests"]) == ["elicitation-1"]
    assert first["inputRequests"]["elicitation-1"]["method"] == "elicitation/create"
    result, second_pid = _retry_elsewhere(shared_key_workers, first_pid, first["requestState"])
    assert second_pid != first_pid
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": f"accept {second_pid}"}]


def test_without_a_shared_key_another_worker_rejects_the_request_state() -> None:
    process, port = _start_workers(None)  # each worker draws its own random key
    try:
        first, first_pid = _call(port, "confirm")
        assert first["resultType"] == "input_required"
        answer = {"elicitation-1": {"action": "accept", "content": {"ok": True}}}
        for _ in range(ATTEMPTS):
            reply, pid = _call(
                port, "confirm", inputResponses=answer, requestState=first["requestState"]
            )
            if pid != first_pid:
                break
        assert pid == ""  # an error reply carries no serverInfo
        assert reply["error"]["code"] == -32602
        assert "integrity" in reply["error"]["message"]
    finally:
        stop_process(process, 10)


def test_a_handshake_session_on_another_worker_fails_naming_session_affinity(
    shared_key_workers: int,
) -> None:
    status, headers, reply = _post(
        shared_key_workers,
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}},
        {},
    )
    assert status == 200 and reply["result"]["protocolVersion"] == "2025-11-25"
    session = headers["mcp-session-id"]
    legacy = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    outcomes: dict[int, dict[str, Any]] = {}
    for _ in range(ATTEMPTS):
        status, _, reply = _post(
            shared_key_workers, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, legacy
        )
        outcomes.setdefault(status, reply)
        if len(outcomes) == 2:
            break
    assert sorted(outcomes) == [200, 404]
    assert [tool["name"] for tool in outcomes[200]["result"]["tools"]] == ["whoami", "confirm"]
    assert "session affinity" in outcomes[404]["error"]["message"]
