"""The event loop of the runtime's own launchers (``typedmcp.engine.loops``): uvloop when
installed, asyncio's when ``TYPEDMCP_LOOP=asyncio`` says so, a clear error for a bad setting."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import typedmcp.serving as serving
from typedmcp.engine import loops


async def loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__.split(".")[0]


def test_auto_is_uvloop_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(loops.LOOP_ENV, raising=False)
    assert loops.uvloop_installed()  # the dev extra installs it
    assert loops.chosen_loop() == "uvloop"
    assert loops.run(loop_module()) == "uvloop"


def test_asyncio_switch_turns_uvloop_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(loops.LOOP_ENV, "asyncio")
    assert loops.chosen_loop() == "asyncio"
    assert loops.run(loop_module()) == "asyncio"
    assert loops.run(loop_module(), loop="uvloop") == "uvloop"  # an explicit choice wins


def test_auto_without_uvloop_is_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loops, "uvloop_installed", lambda: False)
    monkeypatch.setenv(loops.LOOP_ENV, "auto")
    assert loops.run(loop_module()) == "asyncio"


def test_unknown_setting_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(loops.LOOP_ENV, "tokio")
    with pytest.raises(loops.LoopChoiceError, match=r"TYPEDMCP_LOOP='tokio' names no event loop: use one of auto, uvloop, asyncio"):
        loops.chosen_loop()


def test_uvloop_asked_for_but_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loops, "uvloop_installed", lambda: False)
    with pytest.raises(loops.LoopChoiceError, match=r"uvloop is not installed: pip install 'typedmcp\[http\]'"):
        loops.chosen_loop("uvloop")


@pytest.mark.parametrize(("setting", "expected"), [("", "uvloop"), ("asyncio", "asyncio")])
def test_run_stdio_runs_on_the_chosen_loop(
    monkeypatch: pytest.MonkeyPatch, setting: str, expected: str
) -> None:
    seen: list[str] = []

    async def fake_serve_stdio(handlers: object, **options: Any) -> None:
        seen.append(await loop_module())

    monkeypatch.setenv(loops.LOOP_ENV, setting)
    monkeypatch.setattr(serving, "serve_stdio", fake_serve_stdio)
    serving.run_stdio(object())
    assert seen == [expected]
