"""Run a short program against the host's tools in a ``pydantic-monty`` sandbox.

``await host.code_mode().run(code)``: the code sees one module, ``tools``, in which each
tool of the registry (of a connected server) is ``async def <name>(*, ...)`` typed from
its schemas (:mod:`.stubs`). The code is type-checked against those stubs before anything
runs, so a misspelt tool, argument or a wrong type is refused with the checker's
diagnostic, which quotes the signature. Then it runs in a monty worker process: no
filesystem, network, environment, subprocess or import beyond ``tools`` and monty's own
pure modules (``asyncio``, ``json``, ``re``, ``math``, ...); a call of a tool goes through
:meth:`Host.call_tool <typedmcp.host.Host.call_tool>` (validation, timeouts, errors as a
direct call). A tool's error raises ``RuntimeError("<tool>: <message>")`` in the code,
which it may catch.

Every run is bounded (:class:`CodeLimits`): execution time, the whole run's wall time,
memory, recursion depth and tool calls; a breach is a :class:`CodeResult` error naming
the limit, never a hung or dead host (the worker is a separate process, replaced if it
dies).
"""

from __future__ import annotations

import asyncio
import json
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...protocol.results import to_wire
from ..errors import HostError
from .stubs import ToolStub, write_stubs

INSTALL_HINT = "code mode needs pydantic-monty: pip install 'typedmcp[codemode]'"
_LOCATION = re.compile(r"--> [^:\n]+:(\d+):\d+")


@dataclass(frozen=True)
class CodeLimits:
    """What one run may use. ``seconds``: the sandbox's own execution time (waiting for a
    tool does not count); ``wall_seconds``: the whole run, tools included; ``memory_bytes``:
    the sandbox's heap; ``recursion_depth``: nested calls; ``tool_calls``: calls of tools;
    ``output_bytes``: what the code may print."""

    seconds: float = 5.0
    wall_seconds: float = 60.0
    memory_bytes: int = 64 * 1024 * 1024
    recursion_depth: int = 200
    tool_calls: int = 50
    output_bytes: int = 64 * 1024

    def __post_init__(self) -> None:
        for name in ("seconds", "wall_seconds", "memory_bytes", "recursion_depth", "tool_calls", "output_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"CodeLimits.{name} must be a positive number, not {value!r}")
        for name in ("memory_bytes", "recursion_depth", "tool_calls", "output_bytes"):
            if not isinstance(getattr(self, name), int):
                raise ValueError(f"CodeLimits.{name} must be a whole number, not {getattr(self, name)!r}")


@dataclass(frozen=True)
class CodeResult:
    """What a run did: ``output`` (what it printed), ``value`` (its last expression, as
    JSON values; None without one), and on failure ``error`` (the message, for a model to
    read), ``kind`` (``type``: refused before running; ``syntax``; ``runtime``: an
    exception, a tool's error among them; ``limit``: a limit of :class:`CodeLimits`) and
    ``line`` (of the code, when known). ``tool_calls``: how many tools it called."""

    output: str = ""
    value: Any = None
    error: str | None = None
    kind: str | None = None
    line: int | None = None
    tool_calls: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None

    def wire(self) -> dict[str, Any]:
        """As a ``tools/call`` result: the output and the value as text, the value also as
        structured content (``{"output", "value"}``); an error result names the line."""
        if self.error is not None:
            where = f"line {self.line}: " if self.line is not None else ""
            text = f"{self.output}{where}{self.error}" if self.output else f"{where}{self.error}"
            return {"content": [{"type": "text", "text": text}], "isError": True}
        text = self.output
        if self.value is not None:
            text += json.dumps(self.value)
        return {
            "content": [{"type": "text", "text": text or "(no output)"}],
            "structuredContent": {"output": self.output, "value": self.value},
        }


@dataclass
class _Run:
    """One run's count of tool calls."""

    limit: int
    calls: int = 0
    stubs: dict[str, ToolStub] = field(default_factory=dict)


class CodeMode:
    """Runs programs against a host's tools (``host.code_mode(limits)``)."""

    def __init__(self, host: Any, limits: CodeLimits | None = None) -> None:
        self.host = host
        self.limits = limits or CodeLimits()

    def _definitions(self) -> dict[str, Mapping[str, Any]]:
        return {entry.name: entry.exported() for entry in self.host.tools(include_unavailable=False)}

    def stubs(self) -> str:
        """The ``tools`` module's type stubs, as the code is checked against them."""
        return write_stubs(self._definitions())[0]

    async def run(self, code: str) -> CodeResult:
        """Check ``code`` against the tools' signatures, then run it within the limits."""
        if not isinstance(code, str) or not code.strip():
            raise ValueError("code must be the text of a Python program, e.g. 'import tools\\n...'")
        try:
            import pydantic_monty
        except ImportError:
            raise RuntimeError(INSTALL_HINT) from None
        text, stubs = write_stubs(self._definitions())
        run = _Run(self.limits.tool_calls, stubs=stubs)
        module = pydantic_monty.ExternalModule(
            {function: self._tool(run, stub) for function, stub in stubs.items()}, stubs=text
        )
        limits = self.limits
        output = pydantic_monty.CollectStreams(max_bytes=limits.output_bytes)
        try:
            value = await asyncio.wait_for(self._feed(pydantic_monty, module, code, output), limits.wall_seconds)
        except asyncio.TimeoutError:
            return self._failed(run, output, f"the run took longer than {limits.wall_seconds:g} s in all "
                                "(CodeLimits.wall_seconds); call fewer or faster tools", "limit")
        except pydantic_monty.MontyTypingError as error:
            diagnostic = error.display()
            found = _LOCATION.search(diagnostic)
            return self._failed(
                run, output, "the code does not type-check against the tools' signatures, so nothing "
                f"ran:\n{diagnostic.strip()}", "type", int(found.group(1)) if found else None,
            )
        except pydantic_monty.MontySyntaxError as error:
            return self._failed(run, output, error.display("type-msg"), "syntax", _last_line(error))
        except pydantic_monty.MontyRuntimeError as error:
            return self._runtime_error(run, output, error)
        except pydantic_monty.MontyCrashedError as error:
            reason = "ran out of time" if error.timed_out else "died"
            return self._failed(run, output, f"the sandbox's worker {reason} (a limit of CodeLimits was "
                                "exceeded); nothing of it is left", "limit")
        return CodeResult(_text(output), _plain(value), tool_calls=run.calls)

    async def _feed(self, monty: Any, module: Any, code: str, output: Any) -> Any:
        limits = self.limits
        sandbox_limits = {
            "max_feed_duration_secs": limits.seconds,
            "max_turn_duration_secs": limits.seconds,
            "max_memory": limits.memory_bytes,
            "max_recursion_depth": limits.recursion_depth,
            # the host counts tool calls (a clear, catchable error); this is the backstop
            "max_suspensions": 2 * limits.tool_calls + 20,
            "max_total_sleep_secs": limits.seconds,
        }
        async with monty.AsyncMonty(
            min_processes=1, max_processes=1, request_timeout=limits.seconds + 5,
        ) as pool, pool.checkout(
            script_name="main.py", limits=sandbox_limits, type_check=True,
            external_modules={"tools": module}, os_policy={"sleep_system_max": limits.seconds},
        ) as session:
            return await session.feed_run(code, print_callback=output)

    def _tool(self, run: _Run, stub: ToolStub) -> Any:
        host, name = self.host, stub.name

        async def call(**arguments: Any) -> Any:
            if run.calls >= run.limit:
                raise RuntimeError(
                    f"tool call limit reached: at most {run.limit} tool calls per run (CodeLimits.tool_calls)"
                )
            run.calls += 1
            try:
                result = await host.call_tool(name, arguments)
            except HostError as error:
                raise RuntimeError(f"{name}: {error}") from None
            wire = to_wire(result)
            if wire.get("isError"):
                raise RuntimeError(f"{name}: {_content_text(wire) or 'the tool failed'}")
            structured = wire.get("structuredContent")
            if stub.structured and isinstance(structured, dict):
                return _wrap(structured.get("result") if stub.unwrap else structured)
            return _content_text(wire)

        return call

    def _runtime_error(self, run: _Run, output: Any, error: Any) -> CodeResult:
        inner = error.exception()
        limits, line = self.limits, _last_line(error)
        message = str(inner)
        if isinstance(inner, TimeoutError):
            return self._failed(run, output, f"the code ran longer than {limits.seconds:g} s "
                                f"(CodeLimits.seconds): {message}", "limit", line)
        if isinstance(inner, MemoryError):
            return self._failed(run, output, f"the code used more than {limits.memory_bytes} bytes "
                                f"of memory (CodeLimits.memory_bytes): {message}", "limit", line)
        if isinstance(inner, RecursionError):
            return self._failed(run, output, f"the code recursed deeper than {limits.recursion_depth} "
                                "calls (CodeLimits.recursion_depth)", "limit", line)
        if message.startswith("tool call limit reached") or "suspension limit" in message:
            return self._failed(run, output, f"tool call limit reached: at most {limits.tool_calls} "
                                "tool calls per run (CodeLimits.tool_calls)", "limit", line)
        return self._failed(run, output, error.display("type-msg"), "runtime", line)

    def _failed(self, run: _Run, output: Any, message: str, kind: str, line: int | None = None) -> CodeResult:
        return CodeResult(_text(output), None, message, kind, line, run.calls)


def _last_line(error: Any) -> int | None:
    frames = error.traceback()
    return int(frames[-1].line) if frames else None


def _text(output: Any) -> str:
    return "".join(text for _, text in output.output)


def _content_text(wire: Mapping[str, Any]) -> str:
    return "".join(
        block.get("text", "") for block in wire.get("content") or () if isinstance(block, Mapping)
    )


def _wrap(value: Any) -> Any:
    """JSON values into the sandbox: objects with attribute access (as the stubs say)."""
    from pydantic_monty import ClassInstance

    if isinstance(value, dict):
        return ClassInstance(types.SimpleNamespace(**{k: _wrap(v) for k, v in value.items()}), eager_attrs="all")
    if isinstance(value, list):
        return [_wrap(item) for item in value]
    return value


def _plain(value: Any) -> Any:
    """A value the code answered, as JSON values (objects of tools as dicts; anything else
    that is not JSON as its ``repr``)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, types.SimpleNamespace):
        return {key: _plain(item) for key, item in vars(value).items()}
    inner = getattr(value, "value", None)
    if type(value).__name__ == "ClassInstance" and inner is not None:
        return _plain(inner)
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return repr(value)


__all__ = ["INSTALL_HINT", "CodeLimits", "CodeMode", "CodeResult"]
