"""``mcp-host tools --config FILE --out DIR``: one typed package per configured server, in
one go (the generator run as a child process: the runtime never imports it). A server that
cannot start is reported, named with why; the others are written; exit code 3 then."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from typedmcp.host import cli, tools_packages
from typedmcp.host.tools_packages import package_identifier

NOTES = [sys.executable, str(REPO_ROOT / "examples" / "notes_server.py")]
FASTMCP = [sys.executable, str(REPO_ROOT / "tests" / "peers" / "fastmcp_server.py")]


def write_config(path: Path, servers: dict[str, object]) -> str:
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def test_server_names_become_package_names() -> None:
    assert package_identifier("fast-mcp") == "fast_mcp"
    assert package_identifier("My.Server v2") == "my_server_v2"
    assert package_identifier("2fa") == "server_2fa"
    assert package_identifier("class") == "class_"


def test_one_package_per_server_and_a_failed_one_is_named_with_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path / "mcp.json", {
        "notes": {"command": NOTES[0], "args": NOTES[1:]},
        "fast-mcp": {"command": FASTMCP[0], "args": FASTMCP[1:]},
        "broken": {"command": str(tmp_path / "no-such-server")},
        "off": {"command": "never-started", "disabled": True},
    })
    out = tmp_path / "packages"
    assert cli.main(["tools", "--config", config, "--out", str(out)]) == cli.SERVER_FAILED
    captured = capsys.readouterr()
    assert sorted(p.name for p in out.iterdir()) == ["fast_mcp", "notes"]  # not broken, not off
    assert "notes: wrote 3 tools" in captured.out and "fast-mcp: wrote 2 tools" in captured.out
    assert "'off'" not in captured.err  # disabled: not started, not reported
    failure = [line for line in captured.err.splitlines() if "'broken'" in line]
    assert len(failure) == 1 and "cannot start the server" in failure[0] and "no-such-server" in failure[0]
    sys.path.insert(0, str(out))
    try:
        assert hasattr(importlib.import_module("notes").Tools, "add_note")
        assert hasattr(importlib.import_module("fast_mcp").Tools, "forecast")
    finally:
        sys.path.remove(str(out))


def test_every_server_up_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path / "mcp.json", {"notes": {"command": NOTES[0], "args": NOTES[1:]}})
    assert cli.main(["tools", "--config", config, "--out", str(tmp_path / "out")]) == cli.OK
    assert (tmp_path / "out" / "notes" / "tools.json").is_file()
    assert capsys.readouterr().err == ""


def test_bad_input_exits_2_with_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clash = write_config(tmp_path / "clash.json", {
        "a-b": {"command": NOTES[0], "args": NOTES[1:]}, "a_b": {"command": NOTES[0], "args": NOTES[1:]},
    })
    assert cli.main(["tools", "--config", clash, "--out", str(tmp_path / "out")]) == cli.BAD_INPUT
    assert "servers 'a-b' and 'a_b' would both be written to" in capsys.readouterr().err
    bad = write_config(tmp_path / "bad.json", {"x": {"comand": "python"}})
    assert cli.main(["tools", "--config", bad, "--out", str(tmp_path / "out")]) == cli.BAD_INPUT
    assert "comand" in capsys.readouterr().err
    monkeypatch.setattr(tools_packages, "GENERATOR_MODULE", "typedmcp_codegen_not_installed")
    good = write_config(tmp_path / "good.json", {"notes": {"command": NOTES[0], "args": NOTES[1:]}})
    assert cli.main(["tools", "--config", good, "--out", str(tmp_path / "out")]) == cli.BAD_INPUT
    assert "pip install typedmcp-codegen" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
