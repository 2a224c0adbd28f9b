"""``mcp-host`` as a user runs it: list (table and JSON), call (progress on stderr, result
on stdout, exit codes), errors in one line, and a server that cannot start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from host_support import REPO, WEATHER_SERVER, fixture, reaper, stdio

__all__ = ["reaper"]
LIMIT = 60.0


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "typedmcp.host.cli", *args],
        cwd=REPO, capture_output=True, text=True, timeout=LIMIT,
    )


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "weather": stdio(WEATHER_SERVER),
        "fix": fixture("--handshake-only"),
        "broken": {"command": "/nonexistent/server"},
    }}))
    return str(path)


def test_list_json(reaper: Any, config: str) -> None:
    done = run("list", "--config", config, "--json")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert listing["servers"]["weather"]["state"] == "ready"
    assert listing["servers"]["weather"]["era"] == "stateless"
    assert listing["servers"]["fix"]["revision"] == "2025-11-25"
    assert listing["servers"]["broken"]["state"] != "ready"
    assert "cannot start the server" in listing["servers"]["broken"]["last_error"]
    weather = next(t for t in listing["tools"] if t["name"] == "weather__weather")
    assert weather == {"name": "weather__weather", "server": "weather", "tool": "weather",
                       "description": "Today's weather in a city", "available": True}
    assert "mcp-host: server 'broken' did not start" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_list_table(reaper: Any, config: str) -> None:
    done = run("list", "--config", config)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["SERVER", "STATE", "ERA", "REVISION", "TRANSPORT", "TOOLS", "LAST", "ERROR"]
    assert lines[1].split()[:6] == ["weather", "ready", "stateless", "2026-07-28", "stdio", "1"]
    assert any(line.split()[:3] == ["weather__weather", "weather", "weather"] for line in lines)


def test_call_prints_progress_and_the_result(reaper: Any, config: str) -> None:
    done = run("call", "--config", config, "fix__progress", "{}")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["content"] == [{"type": "text", "text": "progressed"}]
    assert [line for line in done.stderr.splitlines() if line.startswith("progress:")] == [
        "progress: 1/3 step 1", "progress: 2/3 step 2", "progress: 3/3 step 3",
    ]
    weather = run("call", "--config", config, "weather__weather", '{"city": "Oslo"}')
    assert weather.returncode == 0 and "Sunny in Oslo" in weather.stdout


def test_call_exit_codes_and_one_line_errors(reaper: Any, config: str, tmp_path: Path) -> None:
    tool_error = run("call", "--config", config, "fix__echo", '{"text": 1}')
    assert tool_error.returncode == 2
    assert "invalid arguments for tool 'fix__echo' (server 'fix')" in tool_error.stderr
    unknown = run("call", "--config", config, "nope", "{}")
    assert unknown.returncode == 2 and "no tool named 'nope'" in unknown.stderr
    bad_json = run("call", "--config", config, "fix__echo", "{text")
    assert bad_json.returncode == 2 and "not JSON" in bad_json.stderr
    down = run("call", "--config", config, "broken__anything", "{}")
    assert down.returncode == 2  # a server that never started exports no tools
    errors = [line for line in tool_error.stderr.splitlines() if not line.startswith("mcp-host: server 'broken'")]
    assert len(errors) == 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"mcpServers": {"x": {"command": "run", "env": {"K": "${NOT_SET_ANYWHERE}"}}}}))
    refused = run("list", "--config", str(bad))
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "mcp-host: server 'x', field 'env.K': environment variable NOT_SET_ANYWHERE is not set "
        f"(set it, or write ${{NOT_SET_ANYWHERE:-default}}) (in {bad})"
    )


def test_a_tool_error_result_exits_1(reaper: Any, tmp_path: Path) -> None:
    path = tmp_path / "conformance.json"
    path.write_text(json.dumps({"mcpServers": {"c": stdio(REPO / "examples" / "conformance_server.py", "--stdio")}}))
    done = run("call", "--config", str(path), "c__test_error_handling")
    assert done.returncode == 1
    assert json.loads(done.stdout)["isError"] is True


def test_console_script_is_declared() -> None:
    """``mcp-host`` belongs to the runtime's distribution (runtime/pyproject.toml)."""
    text = (REPO / "runtime" / "pyproject.toml").read_text()
    assert 'mcp-host = "typedmcp.host.cli:main"' in text
    assert '"typedmcp.host",' in text
    assert "mcp-host" not in (REPO / "pyproject.toml").read_text()
