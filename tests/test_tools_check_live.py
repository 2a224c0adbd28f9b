"""``mcp-codegen tools --check`` against a live server upgraded while the package is vendored
(issue 19): the package is generated from a running server (stdio, Streamable HTTP, an
``mcpServers`` entry); the server's tools then change (``tests/fixtures/tools/
changing_server.py`` rereads its tools file on every ``tools/list``) and ``--check`` exits 1
with the drift report, breaking and non-breaking changes marked; unchanged, it exits 0."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import REPO_ROOT, free_port, stop_process, wait_listening

from typedmcp_codegen.cli import main

SERVER = REPO_ROOT / "tests" / "fixtures" / "tools" / "changing_server.py"

GREET: dict[str, Any] = {
    "name": "greet",
    "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
}
COUNT: dict[str, Any] = {
    "name": "count",
    "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
}
#: The first release: greet(name) and count(n).
RELEASE_1 = [GREET, COUNT]
#: A compatible upgrade: count takes a new optional argument, a tool is added.
COMPATIBLE = [
    GREET,
    {**COUNT, "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}, "step": {"type": "integer"}}}},
    {"name": "wave", "inputSchema": {"type": "object"}},
]
#: A breaking upgrade: count is gone, greet needs a new argument.
BREAKING = [
    {
        "name": "greet",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "lang": {"type": "string"}},
            "required": ["name", "lang"],
        },
    },
]


def run_cli(*arguments: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(arguments))
    return result.exit_code, result.stdout + result.stderr


def release(tools_file: Path, tools: list[dict[str, Any]]) -> None:
    tools_file.write_text(json.dumps(tools))


def check_the_upgrades(tools_file: Path, package: Path, *source: str) -> None:
    """Generate ``package`` from ``source``, then --check it across each upgrade."""
    release(tools_file, RELEASE_1)
    code, out = run_cli("tools", "--out", str(package), *source)
    assert code == 0, out
    assert sorted(path.name for path in package.glob("*.py")) == [
        "__init__.py", "_support.py", "contract.py", "count.py", "greet.py",
    ]
    code, out = run_cli("tools", "--check", "--out", str(package), *source)
    assert code == 0, out
    assert "up to date" in out

    release(tools_file, COMPATIBLE)
    code, out = run_cli("tools", "--check", "--out", str(package), *source)
    assert code == 1, out
    assert "2 changes, 0 breaking." in out, out
    assert "tool added: `wave`" in out
    assert "argument added (optional) `step`" in out
    assert "**breaking**" not in out

    release(tools_file, BREAKING)
    code, out = run_cli("tools", "--check", "--out", str(package), *source)
    assert code == 1, out
    assert "**breaking** (calling code): tool removed" in out, out
    assert "**breaking** (calling code): argument added (required) `lang`" in out

    release(tools_file, RELEASE_1)  # the server back at the vendored release
    code, out = run_cli("tools", "--check", "--out", str(package), *source)
    assert code == 0, out
    assert (package / "count.py").exists() and not (package / "wave.py").exists()  # --check writes nothing


def test_check_against_a_stdio_server_upgraded_between_runs(tmp_path: Path) -> None:
    tools_file = tmp_path / "tools.json"
    check_the_upgrades(tools_file, tmp_path / "live_stdio", "--", sys.executable, str(SERVER), str(tools_file))


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """The changing server over Streamable HTTP, one process for the whole test."""
    tools_file = tmp_path / "tools.json"
    release(tools_file, RELEASE_1)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), str(tools_file), "--port", str(port)],
        cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(process, port)
        yield tools_file, f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)


def test_check_against_an_http_server_upgraded_while_it_runs(http_server: tuple[Path, str], tmp_path: Path) -> None:
    tools_file, url = http_server
    check_the_upgrades(tools_file, tmp_path / "live_http", "--url", url)


def test_check_through_a_config_entry(tmp_path: Path) -> None:
    tools_file = tmp_path / "tools.json"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "changing": {"command": sys.executable, "args": [str(SERVER), str(tools_file)]},
    }}))
    check_the_upgrades(tools_file, tmp_path / "live_config", "--config", str(config), "--server", "changing")
