"""Code mode's core (issue 32): ``host.code_mode().run(code)`` type-checks a program against
stubs written from the tools' schemas, runs it in a ``pydantic-monty`` sandbox against the
host's real servers (``examples/notes_server.py`` and the host fixture server), and refuses
every escape (import, open, environment, infinite loop, memory bomb, deep recursion, a flood
of tool calls) with an error result naming the limit, the host still serving afterwards."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from host_support import REPO, fixture, reaper, stdio, text_of

from typedmcp.host import Host
from typedmcp.host.codemode import INSTALL_HINT, CodeLimits, CodeResult

__all__ = ["reaper"]
pytestmark = pytest.mark.anyio
NOTES_SERVER = REPO / "examples" / "notes_server.py"
#: small limits, so a breach is quick
QUICK = CodeLimits(seconds=1.0, wall_seconds=20.0, memory_bytes=32 * 1024 * 1024, recursion_depth=100, tool_calls=5)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def host(reaper: Any) -> AsyncIterator[Host]:
    async with Host({"notes": stdio(NOTES_SERVER), "fix": fixture()}) as started:
        yield started


# -- running code -----------------------------------------------------------------------------------


async def test_the_code_calls_typed_tools_and_answers_output_and_value(host: Host) -> None:
    result = await host.code_mode().run(
        "import tools\n"
        'note = await tools.notes_add_note(title="milk", body="2 l", tags=["shop"])\n'
        "print(note.title, note.id)\n"
        'found = await tools.notes_search_notes(query="milk")\n'
        "echoed = await tools.fix_echo(text=\"hi\")\n"
        "{'titles': [f.title for f in found], 'echo': echoed, 'note': note}\n"
    )
    assert result == CodeResult(
        "milk 1\n",
        {"titles": ["milk"], "echo": '{"text": "hi"}', "note": {"id": 1, "title": "milk", "tags": ["shop"]}},
        tool_calls=3,
    )
    assert result.ok
    assert result.wire() == {
        "content": [{"type": "text", "text": 'milk 1\n{"titles": ["milk"], "echo": "{\\"text\\": \\"hi\\"}", '
                     '"note": {"id": 1, "title": "milk", "tags": ["shop"]}}'}],
        "structuredContent": {"output": "milk 1\n", "value": result.value},
    }


@pytest.mark.parametrize(("code", "diagnostic"), [
    ('import tools\nawait tools.notes_add_nte(title="x", body="y")', "Module `tools` has no member `notes_add_nte`"),
    ('import tools\nawait tools.notes_add_note(titel="x", body="y")',
     "No argument provided for required parameter `title` of function `notes_add_note`"),
    ("import tools\nawait tools.notes_add_note(title=1, body=\"y\")", "Expected `str`, found `Literal[1]`"),
])
async def test_a_wrong_program_is_refused_before_any_tool_runs(host: Host, code: str, diagnostic: str) -> None:
    result = await host.code_mode().run(code + '\nawait tools.notes_add_note(title="ran", body="")')
    assert result.kind == "type" and result.line == 2 and result.tool_calls == 0
    assert result.error is not None and diagnostic in result.error
    assert result.error.startswith("the code does not type-check against the tools' signatures, so nothing ran")
    if "argument" in diagnostic or "Expected" in diagnostic:
        assert "async def notes_add_note(*, title: str, body: str" in result.error  # the signature
    assert result.wire()["isError"] is True and result.wire()["content"][0]["text"].startswith("line 2: ")
    found = await host.call_tool("notes__search_notes", {"query": "ran"})
    assert found.structured_content == {"result": []}  # nothing ran


async def test_a_tools_error_is_an_exception_the_code_can_catch(host: Host) -> None:
    result = await host.code_mode().run(
        "import tools\n"
        "try:\n"
        '    await tools.notes_search_notes(query="x", limit=0)\n'
        "except RuntimeError as error:\n"
        "    print('caught:', error)\n"
        "'done'\n"
    )
    assert result.ok and result.value == "done"
    assert result.output.startswith("caught: notes__search_notes: ")
    uncaught = await host.code_mode().run('import tools\n\nawait tools.notes_search_notes(query="x", limit=0)')
    assert uncaught.kind == "runtime" and uncaught.line == 3
    assert uncaught.error is not None and uncaught.error.startswith("RuntimeError: notes__search_notes: ")


ESCAPES = [
    ("import", "import subprocess\nsubprocess.run(['id'])", "type", "Cannot resolve imported module `subprocess`"),
    ("import socket", "import socket\nsocket.socket()", "type", "Cannot resolve imported module `socket`"),
    ("__import__", "__import__('os').system('id')", "type", "__import__"),
    ("open", "open('/etc/passwd').read()", "type", "Name `open` used when not defined"),
    ("pathlib", "from pathlib import Path\nPath('/etc/passwd').read_text()", "runtime", "/etc/passwd"),
    ("environment", "import os\nos.environ['HOME']", "runtime", "'os.environ' is not supported"),
    ("getenv", "import os\nos.getenv('HOME')", "runtime", "os.getenv"),
    ("infinite loop", "while True:\n    pass", "limit", "the code ran longer than 1 s (CodeLimits.seconds)"),
    ("memory bomb", "x = [0] * 10**9", "limit", "more than 33554432 bytes of memory (CodeLimits.memory_bytes)"),
    ("deep recursion", "def f(n: int) -> int:\n    return f(n + 1)\nf(0)", "limit",
     "recursed deeper than 100 calls (CodeLimits.recursion_depth)"),
    ("flood of tool calls", "import tools\nfor i in range(1000):\n    await tools.fix_echo(text='a')", "limit",
     "tool call limit reached: at most 5 tool calls per run (CodeLimits.tool_calls)"),
    ("caught flood", "import tools\nfor i in range(1000):\n    try:\n        await tools.fix_echo(text='a')\n"
     "    except RuntimeError:\n        pass", "limit", "at most 5 tool calls per run"),
]


@pytest.mark.parametrize(("what", "code", "kind", "message"), ESCAPES, ids=[e[0] for e in ESCAPES])
async def test_an_escape_is_refused_and_the_host_still_serves(
    host: Host, what: str, code: str, kind: str, message: str
) -> None:
    result = await host.code_mode(QUICK).run(code)
    assert result.kind == kind, result
    assert result.error is not None and message in result.error, result.error
    assert result.tool_calls <= QUICK.tool_calls
    echoed = await host.call_tool("fix__echo", {"text": "still here"})
    assert text_of(echoed) == '{"text": "still here"}'
    again = await host.code_mode(QUICK).run("import tools\nawait tools.fix_echo(text='again')")
    assert again.ok and again.value == '{"text": "again"}'


async def test_the_whole_run_is_bounded_in_wall_time(host: Host) -> None:
    limits = CodeLimits(seconds=1.0, wall_seconds=1.0)
    result = await host.code_mode(limits).run("import tools\nawait tools.fix_slow(seconds=30)")
    assert result.kind == "limit" and result.error is not None
    assert result.error.startswith("the run took longer than 1 s in all (CodeLimits.wall_seconds)")


async def test_without_the_extra_the_error_says_how_to_install_it(host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_monty", None)
    with pytest.raises(RuntimeError, match=r"pip install 'typedmcp\[codemode\]'"):
        await host.code_mode().run("1 + 1")
    assert "typedmcp[codemode]" in INSTALL_HINT


async def test_empty_code_is_refused(host: Host) -> None:
    with pytest.raises(ValueError, match="code must be the text of a Python program"):
        await host.code_mode().run("  \n")



async def test_the_limits_are_the_configured_ones(host: Host) -> None:
    """Just under a limit runs, just over it is refused (so the sandbox enforces the figures
    of CodeLimits, not others)."""
    recurse = "def f(n: int) -> int:\n    return n if n >= {depth} else f(n + 1)\nf(0)"
    assert (await host.code_mode(QUICK).run(recurse.format(depth=80))).value == 80
    assert (await host.code_mode(QUICK).run(recurse.format(depth=150))).kind == "limit"
    assert (await host.code_mode(CodeLimits(recursion_depth=200)).run(recurse.format(depth=150))).value == 150
    calls = "import tools\nfor i in range({n}):\n    await tools.fix_echo(text='a')\n'done'"
    five = await host.code_mode(QUICK).run(calls.format(n=5))
    assert five.ok and five.tool_calls == 5
    six = await host.code_mode(QUICK).run(calls.format(n=6))
    assert six.kind == "limit" and six.tool_calls == 5
    spin = "n = 0\nwhile n < {n}:\n    n += 1\nn"
    assert (await host.code_mode(QUICK).run(spin.format(n=1000))).value == 1000
    assert (await host.code_mode(CodeLimits(seconds=0.2)).run(spin.format(n=10**9))).kind == "limit"
