"""Servers that fail at start-up, as the host reports them: the command, the exit code and
the last lines of its stderr, however the loss showed during negotiation."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from host_support import reaper

from typedmcp.host import Host
from typedmcp.protocol.client import ClientSession

pytestmark = pytest.mark.anyio
__all__ = ["reaper"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def wrong_script(tmp_path: Path) -> dict[str, Any]:
    """A server entry whose script does not exist: python prints why and exits with 2."""
    return {"command": sys.executable, "args": ["no_such_server.py"], "cwd": str(tmp_path), "restart": False}


def assert_names_the_death(error: str) -> None:
    assert "closed the connection during negotiation" not in error
    assert f"the server '{sys.executable} no_such_server.py' exited with code 2" in error
    assert "the last lines of its stderr:" in error
    assert "can't open file" in error and "no_such_server.py" in error.rpartition("stderr:")[2]


async def test_a_wrong_script_path_names_the_command_exit_code_and_stderr(tmp_path: Path) -> None:
    async with Host({"wrong": wrong_script(tmp_path)}) as host:
        status = host.status()["wrong"]
    assert status["state"] == "failed"
    assert_names_the_death(status["last_error"])


async def test_so_does_one_whose_end_of_output_is_seen_before_the_failed_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race a loaded machine loses now and then, made certain: the negotiation sees
    its request fail only after the reader has seen the server's stdout end (the case that
    said only "closed the connection during negotiation")."""
    original = ClientSession.open

    async def open_then_linger(self: ClientSession) -> Any:
        try:
            return await original(self)
        except Exception:
            await asyncio.Event().wait()  # never observed: the reader's end comes first
            raise

    monkeypatch.setattr(ClientSession, "open", open_then_linger)
    async with Host({"wrong": wrong_script(tmp_path)}) as host:
        status = host.status()["wrong"]
    assert status["state"] == "failed"
    assert_names_the_death(status["last_error"])
