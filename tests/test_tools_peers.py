"""``mcp-codegen tools`` against real third-party servers, over stdio: the npm servers
``@modelcontextprotocol/server-everything`` (pinned 2026.8.31), ``server-filesystem`` and
``server-memory`` (installed by ``scripts/peers.sh``, which the ``peers`` fixture runs: it is
idempotent, so CI and a contributor's first run install them, later runs reuse them, and a
failed install fails these tests), a FastMCP 4.1.6 server (``tests/peers/fastmcp_server.py``)
and this project's ``examples/notes_server.py``. Each is generated into a temp dir, type-checked
with user code under ``mypy --strict`` and called once, typed.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import REPO_ROOT

import mcp_generated.v2026_07_28 as v2026_07_28
from typedmcp import connect_stdio
from typedmcp_codegen.cli import main

pytestmark = pytest.mark.anyio
PEERS = REPO_ROOT / ".peers"
NPM = PEERS / "node_modules" / "@modelcontextprotocol"
NODE = str(PEERS / "bin" / "node")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass(frozen=True)
class Peer:
    """A server to generate from: its package name, command, environment additions, the
    serverInfo it must report and the tools whose schemas must fall back to ``dict``."""

    package: str
    command: list[str]
    server_name: str
    fallbacks: frozenset[str] = frozenset()
    protocol: tuple[str, ...] = ()


def peer_list(data: Path) -> list[Peer]:
    """The five servers; ``data`` holds the filesystem server's root and the memory file."""
    return [
        Peer("everything_tools", [NODE, str(NPM / "server-everything" / "dist" / "index.js"), "stdio"],
             "mcp-servers/everything"),
        Peer("filesystem_tools", [NODE, str(NPM / "server-filesystem" / "dist" / "index.js"), str(data / "files")],
             "secure-filesystem-server"),
        Peer("memory_tools", [NODE, str(NPM / "server-memory" / "dist" / "index.js")], "memory-server"),
        Peer("fastmcp_tools", [sys.executable, str(REPO_ROOT / "tests" / "peers" / "fastmcp_server.py")],
             "fastmcp-peer"),
        # pinned: under load the auto probe (server/discover) can time out, and the client's
        # fallback to initialize is then refused by a server already serving 2026-07-28
        Peer("notes_tools", [sys.executable, str(REPO_ROOT / "examples" / "notes_server.py")], "notes",
             protocol=("--protocol", "2026-07-28")),
    ]


@dataclass(frozen=True)
class Generated:
    """The packages generated from every peer under ``root``, and each one's CLI stderr."""

    root: Path
    peers: dict[str, Peer]
    stderr: dict[str, str]
    env: dict[str, str]


@pytest.fixture(scope="module")
def peers() -> None:
    """Install Node 22 and the npm servers with the project's own script (no skip: fails)."""
    ran = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "peers.sh")], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=540, check=False)
    assert ran.returncode == 0, f"scripts/peers.sh failed:\n{ran.stdout}{ran.stderr}"
    for name in ("server-everything", "server-filesystem", "server-memory"):
        assert (NPM / name / "dist" / "index.js").is_file(), f"scripts/peers.sh did not install {name}"
    everything = json.loads((NPM / "server-everything" / "package.json").read_text())
    assert everything["version"] == "2026.8.31"


@pytest.fixture(scope="module")
def generated(peers: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Generated]:
    root = tmp_path_factory.mktemp("peers")
    (root / "data" / "files").mkdir(parents=True)
    (root / "data" / "files" / "hello.txt").write_text("hello from a file\n")
    env = {**os.environ, "MEMORY_FILE_PATH": str(root / "data" / "memory.jsonl")}
    stderr: dict[str, str] = {}
    listed = peer_list(root / "data")
    for peer in listed:
        result = CliRunner().invoke(main, ["tools", "--out", str(root / peer.package), *peer.protocol, "--", *peer.command],
                                    env={"MEMORY_FILE_PATH": env["MEMORY_FILE_PATH"]})
        assert result.exit_code == 0, f"{peer.package}: {result.stderr}"
        stderr[peer.package] = result.stderr
    sys.path.insert(0, str(root))
    try:
        yield Generated(root, {peer.package: peer for peer in listed}, stderr, env)
    finally:
        sys.path.remove(str(root))


def test_each_server_is_snapshotted_and_only_named_fallbacks_warn(generated: Generated) -> None:
    for package, peer in generated.peers.items():
        snapshot: dict[str, Any] = json.loads((generated.root / package / "tools.json").read_text())
        assert snapshot["serverInfo"]["name"] == peer.server_name, package
        assert snapshot["tools"], f"{package}: no tools listed"
        warned = set(re.findall(r"^warning: tool '([^']+)'", generated.stderr[package], re.M))
        assert warned == peer.fallbacks, f"{package}: {generated.stderr[package]}"
        other = [line for line in generated.stderr[package].splitlines()
                 if line.strip() and not line.startswith("warning: tool '")]
        assert not other, f"{package}: unexpected output {other}"


USER_CODE = '''
from everything_tools import Tools as Everything
from fastmcp_tools import Tools as FastTools
from filesystem_tools import Tools as Files
from memory_tools import Tools as Memory
from memory_tools.create_entities import ParamsEntity
from notes_tools import Tools as Notes


async def use(everything: Everything, files: Files, memory: Memory, fast: FastTools, notes: Notes) -> str:
    weather = await everything.get_structured_content(location="Chicago")
    text = await files.read_text_file(path="hello.txt")
    made = await memory.create_entities(entities=[ParamsEntity(name="a", entity_type="t", observations=[])])
    high: float = (await fast.forecast(city="Oslo", unit="F")).high
    note = await notes.add_note(title="t", body="b", priority="high")
    return f"{weather.conditions}{text.content}{made.entities[0].name}{high}{note.id_}"


async def misuse(everything: Everything, fast: FastTools, notes: Notes) -> None:
    await everything.get_structured_content(location="Paris")  # error: arg-type
    await fast.forecast(citty="Oslo")  # error: call-arg
    await notes.add_note(title="t")  # error: call-arg
'''
REPORTED = re.compile(r"^(\S+?\.py):(\d+): (error|note): .*?(?:  \[([a-z-]+)\])?$")


def test_every_package_and_user_code_pass_mypy_strict(generated: Generated) -> None:
    root = generated.root
    (root / "user_code.py").write_text(USER_CODE)
    (root / "mypy.ini").write_text(
        "[mypy]\nstrict = True\n"
        f"mypy_path = {REPO_ROOT / 'runtime'}:{REPO_ROOT / 'generated'}\n"
        "[mypy-jsonschema.*]\nignore_missing_imports = True\n"
    )
    ran = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--no-error-summary",
         "--cache-dir", str(root / ".mypy_cache"), *generated.peers, "user_code.py"],
        cwd=root, capture_output=True, text=True, timeout=540, check=False,
    )
    assert ran.stderr == "" and ran.returncode in (0, 1), ran.stderr
    found = set()
    for line in ran.stdout.splitlines():
        match = REPORTED.match(line)
        assert match, f"unexpected mypy output: {line}\n{ran.stdout}"
        if match.group(3) == "error":
            found.add((match.group(1), int(match.group(2)), match.group(4)))
    wanted = {("user_code.py", number, code) for number, line in enumerate(USER_CODE.splitlines(), 1)
              for code in re.findall(r"# error: ([a-z-]+)", line)}
    assert found == wanted, ran.stdout


async def test_one_typed_call_per_server(generated: Generated) -> None:
    peers = generated.peers
    files_root = generated.root / "data" / "files"

    async def tools_of(package: str) -> Any:
        return importlib.import_module(package).Tools

    async with connect_stdio(peers["everything_tools"].command, env=generated.env) as client:
        module = importlib.import_module("everything_tools.get_structured_content")
        weather = await (await tools_of("everything_tools"))(client).get_structured_content(location="Chicago")
        assert isinstance(weather, module.Result) and weather.conditions
    async with connect_stdio(peers["filesystem_tools"].command, env=generated.env) as client:
        text = await (await tools_of("filesystem_tools"))(client).read_text_file(path=str(files_root / "hello.txt"))
        assert text.content == "hello from a file\n"
    async with connect_stdio(peers["memory_tools"].command, env=generated.env) as client:
        entity = importlib.import_module("memory_tools.create_entities").ParamsEntity
        made = await (await tools_of("memory_tools"))(client).create_entities(
            entities=[entity(name="typed", entity_type="test", observations=["generated"])])
        assert [(e.name, e.entity_type, e.observations) for e in made.entities] == [("typed", "test", ["generated"])]
    async with connect_stdio(peers["fastmcp_tools"].command, env=generated.env) as client:
        forecast = await (await tools_of("fastmcp_tools"))(client).forecast(city="Oslo", unit="F")
        assert (forecast.city, forecast.unit, forecast.high) == ("Oslo", "F", 70.7)
    async with connect_stdio(peers["notes_tools"].command, env=generated.env, protocol=v2026_07_28) as client:
        note = await (await tools_of("notes_tools"))(client).add_note(title="typed", body="b", tags=["x"])
        assert (note.id_, note.title, note.tags) == (1, "typed", ["x"])
