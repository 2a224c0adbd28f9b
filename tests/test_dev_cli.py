"""The developer commands (``typedmcp.cli``; ``mcp-host run|inspect|install``, ``mcp-codegen
run|inspect``): ``run`` serves a server file a client then calls over stdio and HTTP,
``inspect`` reports a file and a URL in both eras, ``install`` writes each client's
configuration keeping what is there and refusing what it must not overwrite."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO_ROOT, free_port, stop_process, wait_listening
from typedmcp import connect_http, connect_stdio
from typedmcp.cli import main
from typedmcp.cli.install import CLIENTS, config_path
from typedmcp.cli.load import LoadError, load_app, split_target

NOTES = REPO_ROOT / "examples" / "notes_server.py"
BIN = Path(sys.executable).parent
TWO_APPS = "from typedmcp import McpApp\nfirst = McpApp('first')\nsecond = McpApp('second')\n"


def server_file(folder: Path, text: str, name: str = "server.py") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


# -- run ---------------------------------------------------------------------------------------


def test_run_serves_a_file_over_stdio_that_a_client_calls(tmp_path: Path) -> None:
    # a server file outside sys.path, importing a module beside it
    server_file(tmp_path, "def double(x: int) -> int:\n    return 2 * x\n", "helpers.py")
    server = server_file(tmp_path, (
        "from typedmcp import McpApp\nfrom helpers import double\n\napp = McpApp('doubler')\n\n"
        "@app.tool()\ndef twice(x: int) -> int:\n    return double(x)\n"
        "\nif __name__ == '__main__':\n    raise SystemExit('the main block must not run')\n"
    ))

    async def scenario() -> tuple[str, Any]:
        command = [str(BIN / "mcp-host"), "run", str(server)]
        async with connect_stdio(command, cwd=str(REPO_ROOT)) as client:
            result = await client.call_tool(name="twice", arguments={"x": 21})
            return client.session.server_info["name"], result.structured_content

    assert asyncio.run(asyncio.wait_for(scenario(), 30)) == ("doubler", {"result": 42})


@pytest.mark.parametrize("protocol", ["2025-11-25", "auto"])
def test_run_serves_a_file_over_http_that_a_client_calls(protocol: str) -> None:
    port = free_port()
    process = subprocess.Popen(
        [str(BIN / "mcp-codegen"), "run", f"{NOTES}:app", "--http", str(port)],
        cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(process, port)

        async def scenario() -> tuple[str | None, Any]:
            async with connect_http(f"http://127.0.0.1:{port}/mcp", protocol=protocol) as client:
                added = await client.call_tool(name="add_note", arguments={"title": "t", "body": "b"})
                return client.session.era, added.structured_content

        era, added = asyncio.run(asyncio.wait_for(scenario(), 30))
    finally:
        stop_process(process)
    assert era == ("handshake" if protocol == "2025-11-25" else "stateless")
    assert added["title"] == "t"


@pytest.mark.parametrize(
    ("text", "target", "message"),
    [
        ("x = 1\n", "server.py", "has no McpApp; create one"),
        (TWO_APPS, "server.py", "several McpApps (first, second); name one: "),
        (TWO_APPS, "server.py:third", "has no 'third'; it has first, second"),
        ("from typedmcp import McpApp\nApp = McpApp\n", "server.py:App", "is a class"),
        ("raise RuntimeError('boom')\n", "server.py", "failed to import: RuntimeError: boom (at "),
        ("x = 1\n", "missing.py", "no such file"),
    ],
)
def test_a_target_without_one_app_is_refused_saying_what_to_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, target: str, message: str
) -> None:
    server_file(tmp_path, text)
    assert main(["run", str(tmp_path / target)], prog="mcp-host") == 2
    error = capsys.readouterr().err
    assert error.startswith("mcp-host: ") and message in error
    assert "Traceback" not in error


def test_a_named_app_is_taken_among_several(tmp_path: Path) -> None:
    server = server_file(tmp_path, TWO_APPS, "two_apps.py")
    assert getattr(load_app(f"{server}:second"), "name", None) == "second"
    assert split_target("C:server.py") == ("C:server.py", None)  # a drive letter, not a name
    with pytest.raises(LoadError, match="no such file or module"):
        load_app("no_such_module_anywhere:app")


# -- inspect -----------------------------------------------------------------------------------


def test_inspect_reports_a_server_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(NOTES)]) == 0
    out = capsys.readouterr().out
    assert "server:    notes 1.0.0" in out
    assert "tools (3):\n  add_note  - Add a note." in out
    assert "resources (1):\n  notes://index" in out
    assert "templates (1):\n  notes://{note_id}" in out
    assert "prompts (1):\n  summarize" in out


def test_inspect_starts_a_server_file_over_stdio(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--stdio", "--json", "--protocol", "2025-06-18", str(NOTES)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["era"], report["revision"]) == ("handshake", "2025-06-18")
    assert [tool["name"] for tool in report["tools"]] == ["add_note", "search_notes", "export_notes"]


@pytest.mark.parametrize(("protocol", "era"), [("auto", "stateless"), ("2025-11-25", "handshake")])
def test_inspect_reports_a_url_in_both_eras(
    notes_http_url: str, capsys: pytest.CaptureFixture[str], protocol: str, era: str
) -> None:
    assert main(["inspect", "--json", "--protocol", protocol, notes_http_url]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["server"]["name"], report["era"]) == ("notes", era)
    assert [p["name"] for p in report["prompts"]] == ["summarize"]
    assert [t["uriTemplate"] for t in report["templates"]] == ["notes://{note_id}"]


def test_inspect_of_a_url_nobody_serves_fails_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    assert main(["inspect", url], prog="mcp-host") == 3
    error = capsys.readouterr().err
    assert error.startswith(f"mcp-host: cannot inspect {url}: ") and error.count("\n") == 1


# -- install -----------------------------------------------------------------------------------


def install(tmp_path: Path, client: str, *extra: str) -> tuple[int, Path]:
    config = tmp_path / "config" / f"{client}.json"
    code = main(["install", client, str(NOTES), "--config", str(config), *extra], prog="mcp-host")
    return code, config


@pytest.mark.parametrize(("client", "key", "extra"), [
    ("claude-desktop", "mcpServers", {}),
    ("cursor", "mcpServers", {}),
    ("vscode", "servers", {"type": "stdio"}),
])
def test_install_adds_the_server_and_keeps_every_other_entry_and_key(
    tmp_path: Path, client: str, key: str, extra: dict[str, str]
) -> None:
    config = tmp_path / "config" / f"{client}.json"
    config.parent.mkdir()
    other = {"command": "uvx", "args": ["other-server"]}
    config.write_text(json.dumps({key: {"other": other}, "theme": "dark"}))
    code, _ = install(tmp_path, client, "--env", "NOTES_DIR=/tmp/notes")
    written = json.loads(config.read_text())
    assert code == 0
    assert written["theme"] == "dark" and written[key]["other"] == other
    assert written[key]["notes"] == {
        **extra, "command": sys.executable, "args": ["-m", "typedmcp.cli", "run", str(NOTES)],
        "env": {"NOTES_DIR": "/tmp/notes"},
    }
    assert sorted(path.name for path in config.parent.iterdir()) == [config.name]  # no temp file left


def test_the_installed_entry_starts_the_server(tmp_path: Path) -> None:
    code, config = install(tmp_path, "cursor")
    entry = json.loads(config.read_text())["mcpServers"]["notes"]

    async def scenario() -> list[str]:
        async with connect_stdio([entry["command"], *entry["args"]], cwd=str(tmp_path)) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    assert code == 0
    assert asyncio.run(asyncio.wait_for(scenario(), 30)) == ["add_note", "search_notes", "export_notes"]


def test_install_refuses_an_entry_of_the_same_name_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config" / "cursor.json"
    config.parent.mkdir()
    before = json.dumps({"mcpServers": {"notes": {"command": "mine"}}})
    config.write_text(before)
    assert install(tmp_path, "cursor")[0] == 2
    assert "already has a server named 'notes'" in capsys.readouterr().err
    assert config.read_text() == before
    assert install(tmp_path, "cursor", "--force")[0] == 0
    assert json.loads(config.read_text())["mcpServers"]["notes"]["command"] == sys.executable
    assert install(tmp_path, "cursor", "--name", "notes-2")[0] == 0
    assert sorted(json.loads(config.read_text())["mcpServers"]) == ["notes", "notes-2"]


@pytest.mark.parametrize(("text", "message"), [
    ('{"mcpServers": {', "is not valid JSON (Expecting property name enclosed in double quotes at line 1"),
    ("[1, 2]", "holds a JSON list, not an object"),
    ('{"mcpServers": []}', "'mcpServers' is a JSON list, not an object of servers"),
])
def test_install_refuses_a_corrupt_file_and_leaves_it_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    config = tmp_path / "config" / "claude-desktop.json"
    config.parent.mkdir()
    config.write_text(text)
    assert install(tmp_path, "claude-desktop")[0] == 2
    error = capsys.readouterr().err
    assert message in error and "nothing was written" in error
    assert config.read_text() == text


def test_each_client_has_its_documented_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("TYPEDMCP_CLIENT_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    if sys.platform.startswith("linux"):
        assert config_path(CLIENTS["claude-desktop"], None, None) == tmp_path / "xdg" / "Claude" / "claude_desktop_config.json"
    assert config_path(CLIENTS["cursor"], None, None) == tmp_path / ".cursor" / "mcp.json"
    assert config_path(CLIENTS["cursor"], None, "proj") == tmp_path / "proj" / ".cursor" / "mcp.json"
    assert config_path(CLIENTS["vscode"], None, None) == tmp_path / ".vscode" / "mcp.json"
    monkeypatch.setenv("TYPEDMCP_CLIENT_CONFIG", str(tmp_path / "elsewhere.json"))
    assert config_path(CLIENTS["vscode"], None, None) == tmp_path / "elsewhere.json"
    assert os.environ["HOME"] == str(tmp_path)


def test_ctrl_c_ends_a_running_server_without_a_traceback() -> None:
    process = subprocess.Popen(
        [str(BIN / "mcp-host"), "run", str(NOTES)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
        process.stdin.flush()
        assert b'"id":1' in process.stdout.readline().replace(b" ", b"")  # serving
        process.send_signal(signal.SIGINT)
        _, error = process.communicate(timeout=15)
    finally:
        stop_process(process)
    assert process.returncode == 130
    assert b"Traceback" not in error


def test_the_written_file_is_indented_keeps_its_mode_and_any_text(tmp_path: Path) -> None:
    config = tmp_path / "config" / "cursor.json"
    config.parent.mkdir()
    config.write_text('{"mcpServers": {}}')
    config.chmod(0o751)  # every bit kept, the others-execute one too
    assert install(tmp_path, "cursor", "--env", "CITY=Zoë")[0] == 0
    text = config.read_text(encoding="utf-8")
    assert text.startswith('{\n  "mcpServers": {\n    "notes": {') and "Zoë" in text and text.endswith("}\n")
    assert config.stat().st_mode & 0o777 == 0o751


def test_install_creates_the_folders_of_a_new_file(tmp_path: Path) -> None:
    config = tmp_path / "a" / "b" / "mcp.json"
    assert main(["install", "vscode", str(NOTES), "--config", str(config)]) == 0
    assert list(json.loads(config.read_text())["servers"]) == ["notes"]


def test_a_file_that_cannot_be_read_or_written_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "a-folder.json"
    folder.mkdir()
    assert main(["install", "cursor", str(NOTES), "--config", str(folder)], prog="mcp-host") == 2
    assert capsys.readouterr().err == f"mcp-host: cannot read {folder}: Is a directory\n"
    config = tmp_path / "kept.json"
    config.write_text('{"mcpServers": {}}')

    def full(**options: object) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(tempfile, "mkstemp", full)
        assert main(["install", "cursor", str(NOTES), "--config", str(config)], prog="mcp-host") == 2
    assert capsys.readouterr().err == f"mcp-host: cannot write {config}: No space left on device\n"

    def refuse(source: object, target: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    assert main(["install", "cursor", str(NOTES), "--config", str(config)], prog="mcp-host") == 2
    assert capsys.readouterr().err == f"mcp-host: cannot write {config}: Permission denied; it was left as it was\n"
    assert config.read_text() == '{"mcpServers": {}}'
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-folder.json", "kept.json"]


@pytest.mark.parametrize(("platform", "environment", "expected"), [
    ("darwin", {}, "Library/Application Support/Claude/claude_desktop_config.json"),
    ("win32", {"APPDATA": "roaming"}, "roaming/Claude/claude_desktop_config.json"),
    ("win32", {}, "AppData/Roaming/Claude/claude_desktop_config.json"),
    ("linux", {}, ".config/Claude/claude_desktop_config.json"),
    ("linux", {"XDG_CONFIG_HOME": "xdg"}, "xdg/Claude/claude_desktop_config.json"),
])
def test_claude_desktops_file_is_where_each_platform_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform: str, environment: dict[str, str], expected: str
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("USERPROFILE", str(tmp_path))
    for name in ("APPDATA", "XDG_CONFIG_HOME", "TYPEDMCP_CLIENT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, str(tmp_path / value))
    monkeypatch.setattr(sys, "platform", platform)
    assert config_path(CLIENTS["claude-desktop"], None, None) == tmp_path / expected


def test_mcp_codegen_inspect_is_the_same_command_under_its_own_name(tmp_path: Path) -> None:
    ran = subprocess.run([str(BIN / "mcp-codegen"), "inspect", "--json", str(NOTES)],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["server"]["name"] == "notes"
    missing = subprocess.run([str(BIN / "mcp-codegen"), "inspect", str(tmp_path / "none.py")],
                             capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.startswith(f"mcp-codegen: {tmp_path / 'none.py'}: no such file")


def test_inspect_refuses_an_unknown_revision_and_reports_a_failure_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["inspect", "--protocol", "2025-13-01", str(NOTES)], prog="mcp-host") == 2
    error = capsys.readouterr().err
    assert error.startswith("mcp-host: --protocol '2025-13-01': give auto or one of 2024-11-05, ")

    async def refused(*args: object, **options: object) -> dict[str, Any]:
        raise TypeError("the server's answer is not a list\nsecond line")

    monkeypatch.setattr("typedmcp.cli.inspection.inspect_server", refused)
    assert main(["inspect", str(NOTES)], prog="mcp-host") == 3
    assert capsys.readouterr().err == (
        f"mcp-host: cannot inspect {NOTES}: TypeError: the server's answer is not a list\n"
    )
