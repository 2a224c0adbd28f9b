"""``mcp-host`` as a user runs it: list (table and JSON), call (progress on stderr, result
on stdout, exit codes), errors in one line, servers that cannot start (exit code 3, each
named with why), ``call`` starting only the tool's server (or all, in parallel), and
``call --url`` through a running gateway."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import free_port, stop_process, wait_listening
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
    assert done.returncode == 3, done.stderr  # 'broken' did not start; the others are listed
    listing = json.loads(done.stdout)
    assert listing["servers"]["weather"]["state"] == "ready"
    assert listing["servers"]["weather"]["era"] == "stateless"
    assert listing["servers"]["fix"]["revision"] == "2025-11-25"
    assert listing["servers"]["broken"]["state"] != "ready"
    assert "cannot start the server" in listing["servers"]["broken"]["last_error"]
    weather = next(t for t in listing["tools"] if t["name"] == "weather__weather")
    assert weather == {"name": "weather__weather", "server": "weather", "tool": "weather",
                       "description": "Today's weather in a city", "available": True}
    assert f"mcp-host: server 'broken' did not start (check its entry in {config}): " in done.stderr
    assert "cannot start the server '/nonexistent/server'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_list_table(reaper: Any, config: str) -> None:
    done = run("list", "--config", config)
    assert done.returncode == 3, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["SERVER", "STATE", "ERA", "REVISION", "TRANSPORT", "TOOLS", "LAST", "ERROR"]
    assert lines[1].split()[:6] == ["weather", "ready", "stateless", "2026-07-28", "stdio", "1"]
    assert any(line.split()[:3] == ["weather__weather", "weather", "weather"] for line in lines)


def test_list_shows_resources_and_prompts_when_asked(reaper: Any, config: str) -> None:
    plain = run("list", "--config", config, "--json")
    assert "prompts" not in json.loads(plain.stdout) and "resources" not in json.loads(plain.stdout)
    done = run("list", "--config", config, "--json", "--resources", "--prompts")
    assert done.returncode == 3, done.stderr  # ('broken' did not start)
    listing = json.loads(done.stdout)
    assert {"uri": "host://pid", "server": "fix", "name": "pid", "description": None} in listing["resources"]
    assert listing["resource_templates"] == []
    assert listing["prompts"] == [
        {"name": "fix__hello", "server": "fix", "prompt": "hello", "arguments": [], "description": "Say hello"}
    ]
    table = run("list", "--config", config, "--resources", "--prompts").stdout.splitlines()
    assert ["RESOURCE", "SERVER", "NAME", "DESCRIPTION"] in [line.split() for line in table]
    assert ["host://pid", "fix", "pid"] in [line.split() for line in table]
    assert ["PROMPT", "SERVER", "ORIGINAL", "NAME", "ARGUMENTS", "DESCRIPTION"] in [line.split() for line in table]
    assert ["fix__hello", "fix", "hello", "-", "Say", "hello"] in [line.split() for line in table]


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
    assert unknown.returncode == 2 and unknown.stderr.strip() == (
        "mcp-host: no tool named 'nope': no enabled server's prefix begins it (prefixes: weather__, "
        f"fix__, broken__); list the tools with: mcp-host list --config {config}"
    )
    misspelt = run("call", "--config", config, "fix__ecko", "{}")
    assert misspelt.returncode == 2 and misspelt.stderr.strip() == (
        "mcp-host: no tool named 'fix__ecko'; did you mean 'fix__echo'? "
        f"list the tools with: mcp-host list --config {config}"
    )
    prefix = run("call", "--config", config, "wether__weather", "{}")
    assert prefix.returncode == 2 and prefix.stderr.strip() == (
        "mcp-host: no tool named 'wether__weather': no enabled server's prefix begins it "
        "(prefixes: weather__, fix__, broken__); did you mean a tool of 'weather__'? "
        f"list the tools with: mcp-host list --config {config}"
    )
    bad_json = run("call", "--config", config, "fix__echo", "{text")
    assert bad_json.returncode == 2 and "not JSON" in bad_json.stderr
    down = run("call", "--config", config, "broken__anything", "{}")
    assert down.returncode == 3  # the tool's server did not start
    assert "mcp-host: server 'broken' did not start" in down.stderr
    assert "no tool named 'broken__anything' among the servers that started; server 'broken' did not start" in down.stderr
    assert len(tool_error.stderr.strip().splitlines()) == 1  # only 'fix' was started
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


# -- servers that do not start -------------------------------------------------------------------


def wrong_script(tmp_path: Path) -> dict[str, Any]:
    """A server entry whose script does not exist: python says why and exits with 2; it is
    restarted (the default) and keeps failing."""
    return {"command": sys.executable, "args": ["no_such_server.py"], "cwd": str(tmp_path)}


def assert_reported(stderr: str, name: str, path: Path) -> None:
    """``name`` is reported as not started, with the command, exit code and its stderr."""
    line = f"mcp-host: server {name!r} did not start (check its entry in {path}): "
    assert line in stderr, stderr
    report = stderr[stderr.index(line):]
    assert f"the server '{sys.executable} no_such_server.py' exited with code 2" in report.splitlines()[0]
    assert "the last lines of its stderr:" in report.splitlines()[0]
    assert "can't open file" in report.splitlines()[1] and report.splitlines()[1].startswith("    ")
    assert "closed the connection during negotiation" not in stderr


def test_list_exits_3_when_its_only_server_keeps_failing_to_start(reaper: Any, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"wrong": wrong_script(tmp_path)}}))
    done = run("list", "--config", str(path))
    assert done.returncode == 3, done.stderr
    assert_reported(done.stderr, "wrong", path)
    assert done.stdout.splitlines()[1].split()[:2] == ["wrong", "restarting"]


def test_list_exits_3_and_still_lists_the_servers_that_started(reaper: Any, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "good": fixture("--tools", "extra"), "wrong": wrong_script(tmp_path), "off": fixture(disabled=True),
    }}))
    done = run("list", "--config", str(path), "--json")
    assert done.returncode == 3, done.stderr
    assert_reported(done.stderr, "wrong", path)
    assert "'good'" not in done.stderr and "'off'" not in done.stderr
    listing = json.loads(done.stdout)
    assert listing["servers"]["good"]["state"] == "ready"
    assert "good__extra" in {tool["name"] for tool in listing["tools"]}
    everything_up = tmp_path / "up.json"
    everything_up.write_text(json.dumps({"mcpServers": {"good": fixture(), "off": fixture(disabled=True)}}))
    assert run("list", "--config", str(everything_up)).returncode == 0  # a disabled one is not needed


def test_call_exits_3_naming_its_server_that_did_not_start(reaper: Any, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"good": fixture(), "wrong": wrong_script(tmp_path)}}))
    done = run("call", "--config", str(path), "wrong__echo", '{"text": "hi"}')
    assert done.returncode == 3, done.stderr
    assert_reported(done.stderr, "wrong", path)
    fine = run("call", "--config", str(path), "good__echo", '{"text": "hi"}')
    assert fine.returncode == 0 and "'wrong'" not in fine.stderr  # not needed, not started


# -- call starts only the tool's server --------------------------------------------------------


def slow_fixture(tmp_path: Path, name: str, delay: float) -> dict[str, Any]:
    return fixture("--started-marker", str(tmp_path / f"{name}.started"), "--start-delay", str(delay))


def started(tmp_path: Path) -> set[str]:
    return {marker.name.removesuffix(".started") for marker in tmp_path.glob("*.started")}


def test_call_starts_only_the_server_that_owns_the_tool(reaper: Any, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "first": slow_fixture(tmp_path, "first", 3),
        "owner.one": slow_fixture(tmp_path, "owner.one", 0),
        "third": slow_fixture(tmp_path, "third", 3),
    }}))
    done = run("call", "--config", str(path), "owner_one__echo", '{"text": "hi"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["content"] == [{"type": "text", "text": '{"text": "hi"}'}]
    assert started(tmp_path) == {"owner.one"}  # the others' processes never ran
    assert len(reaper()) == 1


def test_call_starts_every_server_in_parallel_when_the_name_cannot_tell(reaper: Any, tmp_path: Path) -> None:
    """Under ``prefixTools: "collisions"`` an unprefixed name may be any server's: all are
    started, together: each of these two serves only once the other has started, so a
    start one after the other would leave the first to time out."""
    marker = {name: str(tmp_path / f"{name}.started") for name in ("a", "b")}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"host": {"prefixTools": "collisions"}, "mcpServers": {
        name: fixture("--tools", f"only_{name}", "--started-marker", marker[name],
                      "--await-marker", marker["b" if name == "a" else "a"], startupTimeout=15)
        for name in ("a", "b")
    }}))
    done = run("call", "--config", str(path), "only_b", "{}")
    assert done.returncode == 0, done.stderr
    assert started(tmp_path) == {"a", "b"}
    assert "did not start" not in done.stderr


# -- call --url: through a running gateway -------------------------------------------------------


def test_call_through_a_running_gateway(reaper: Any, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"fix": fixture()}}))
    port = free_port()
    gateway = subprocess.Popen(
        [sys.executable, "-m", "typedmcp.host.cli", "serve", "--config", str(path), "--http", f"127.0.0.1:{port}"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(gateway, port, timeout=LIMIT)
        url = f"http://127.0.0.1:{port}/mcp"
        done = run("call", "--url", url, "fix__progress")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["content"] == [{"type": "text", "text": "progressed"}]
        assert [line for line in done.stderr.splitlines() if line.startswith("progress:")] == [
            "progress: 1/3 step 1", "progress: 2/3 step 2", "progress: 3/3 step 3",
        ]
        pids = set(reaper())
        echo = run("call", "--url", url, "fix__echo", '{"text": "hi"}')
        assert echo.returncode == 0 and json.loads(echo.stdout)["content"][0]["text"] == '{"text": "hi"}'
        assert set(reaper()) == pids  # the gateway's server answered: no new process
        unknown = run("call", "--url", url, "nope")
        assert unknown.returncode == 2 and "no tool named 'nope'" in unknown.stderr
        invalid = run("call", "--url", url, "fix__echo", '{"text": 1}')
        assert invalid.returncode == 1 and json.loads(invalid.stdout)["isError"] is True
    finally:
        stop_process(gateway, strict=True)
    gone = run("call", "--url", url, "fix__echo", '{"text": "hi"}')
    assert gone.returncode == 3
    assert f"cannot call the gateway at {url}" in gone.stderr
    assert f"start one with: mcp-host serve --config FILE --http 127.0.0.1:{port}" in gone.stderr
    assert len(gone.stderr.strip().splitlines()) == 1
    for wrong in ("127.0.0.1:8000", "ftp://host/mcp"):
        refused = run("call", "--url", wrong, "fix__echo")
        assert refused.returncode == 2
        assert refused.stderr.strip().startswith(f"mcp-host: --url {wrong!r} is not an http(s) URL with a host")


def test_call_help_says_how_to_call_through_a_gateway() -> None:
    done = run("call", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "--url URL" in text and "mcp-host serve --config FILE --http HOST:PORT" in text
    assert "only the server whose prefix begins the name is started" in text
    top = " ".join(run("--help").stdout.split())
    assert "3 a server failed: one the command needed did not start" in top
