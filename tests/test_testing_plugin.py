"""The runtime's pytest plugin (``typedmcp.pytest_plugin``, entry point ``pytest11``) and
``typedmcp.testing``: a typed client connected to an app in memory, over a real stdio child
and over real HTTP (uvicorn on a free port, stopped after), in both eras (issue 30, req. 4).

This module's own tests use the fixtures the plugin registers (the project's tests run with
it like a user's); the subprocess tests run pytest on a user's test file, as a user would,
under ``asyncio.run``, anyio's plugin, and with nothing of the plugin used."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mcp_generated.v2025_11_25 import client as mcp
from typedmcp import McpApp, ToolError
from typedmcp import pytest_plugin
from typedmcp.testing import (
    REVISIONS,
    TRANSPORTS,
    McpClientFactory,
    ServerNotFound,
    Transport,
    stdio_command,
)

pytestmark = pytest.mark.anyio

app = McpApp("greeter", version="1.2.3", instructions="Greets people.")


@app.tool()
def greet(name: str) -> str:
    """Greet someone."""
    if not name:
        raise ToolError("say whom to greet")
    return f"Hello, {name}"


#: How each transport's connection names where its server is.
ORIGINS = {
    "memory": lambda origin: origin is None,
    "stdio": lambda origin: origin.startswith(f"stdio:{sys.executable} -c "),
    "http": lambda origin: origin.startswith("http://127.0.0.1:") and origin.endswith("/mcp"),
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


async def test_each_transport_and_era_reaches_the_app(
    mcp_client: McpClientFactory, mcp_transport: Transport, mcp_revision: str
) -> None:
    async with mcp_client(app, transport=mcp_transport, revision=mcp_revision, client=mcp.Client) as client:
        assert client.session.protocol_version == mcp_revision
        assert ORIGINS[mcp_transport](client.session.origin), client.session.origin
        assert client.session.era == ("handshake" if mcp_revision == "2025-11-25" else "stateless")
        result = await client.call_tool(name="greet", arguments={"name": "Ada"})
        assert result.structured_content == {"result": "Hello, Ada"}
        refused = await client.call_tool(name="greet", arguments={"name": ""})
        assert refused.is_error


async def test_the_fixtures_run_every_transport_and_both_eras(request: pytest.FixtureRequest) -> None:
    ids = {
        item.name
        for item in request.session.items
        if item.name.startswith("test_each_transport_and_era_reaches_the_app[")
    }
    if not ids:
        pytest.skip("run with the parametrized test it counts")
    expected = {f"test_each_transport_and_era_reaches_the_app[{t}-{r}]" for t in TRANSPORTS for r in REVISIONS}
    assert ids == expected


def test_the_plugins_parameters_are_the_testing_modules() -> None:
    assert pytest_plugin._TRANSPORTS == TRANSPORTS
    assert pytest_plugin._REVISIONS == REVISIONS


async def test_server_options_reach_the_server_on_every_transport(
    mcp_client: McpClientFactory, mcp_transport: Transport
) -> None:
    async with mcp_client(
        app, transport=mcp_transport, revision="2025-11-25", server_options={"instructions": "Be brief."}
    ) as client:
        assert client.session.instructions == "Be brief."


async def test_direct_serves_both_eras_without_a_wire(mcp_client: McpClientFactory, mcp_revision: str) -> None:
    async with mcp_client(app, transport="direct", revision=mcp_revision) as client:
        assert client.session.protocol_version == mcp_revision


async def test_the_http_server_is_stopped_after_the_block(mcp_client: McpClientFactory) -> None:
    async with mcp_client(app, transport="http") as client:
        url = client.session.origin
    assert url is not None and url.startswith("http://127.0.0.1:"), url
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


async def test_a_stdio_command_is_started_as_given(mcp_client: McpClientFactory) -> None:
    command = [sys.executable, "-c", "from test_testing_plugin import app; from typedmcp import run_stdio; run_stdio(app)"]
    async with mcp_client(command, transport="stdio") as client:
        assert client.session.server_info is not None
        assert client.session.server_info["name"] == "greeter"


def test_stdio_finds_a_module_level_app_by_its_module_and_name() -> None:
    command = stdio_command(app)
    assert command[0] == sys.executable and command[3:5] == [__name__, "app"]


def test_stdio_refuses_an_app_no_module_holds_and_says_what_to_do() -> None:
    local = McpApp("made-in-a-test")
    with pytest.raises(ServerNotFound, match=r"not a module-level name.*define it at module level, or pass the command"):
        stdio_command(local)


def test_stdio_refuses_server_options_that_are_not_json() -> None:
    with pytest.raises(ValueError, match=r"server_options= must be JSON values over stdio"):
        stdio_command(app, {"changes": object()})


async def test_an_unknown_transport_is_refused_naming_the_known_ones(mcp_client: McpClientFactory) -> None:
    with pytest.raises(ValueError, match=r"transport must be one of 'memory', 'direct', 'stdio', 'http', not 'sse'"):
        async with mcp_client(app, transport="sse"):  # type: ignore[call-overload]
            pass


# -- as a user runs it: pytest on a test file of theirs ---------------------------------------

USER_SERVER = '''
from typedmcp import McpApp

app = McpApp("shop")


@app.tool()
def price(item: str) -> float:
    """The price of an item."""
    return {"milk": 1.25}[item]
'''

USER_TESTS = '''
import asyncio

import pytest

from shop import app
from typedmcp.testing import McpClientFactory, Transport


def test_with_asyncio_run(mcp_client: McpClientFactory, mcp_transport: Transport, mcp_revision: str) -> None:
    async def check() -> None:
        async with mcp_client(app, transport=mcp_transport, revision=mcp_revision) as client:
            result = await client.call_tool(name="price", arguments={"item": "milk"})
            assert result.structured_content == {"result": 1.25}
            assert client.session.protocol_version == mcp_revision

    asyncio.run(check())


@pytest.mark.anyio
async def test_with_anyio(mcp_client: McpClientFactory) -> None:
    async with mcp_client(app, transport="stdio") as client:
        assert (await client.list_tools()).tools[0].name == "price"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
'''


def run_pytest(folder: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments],
        cwd=folder, capture_output=True, text=True, timeout=180,
    )


def test_a_users_tests_get_the_fixtures_from_the_installed_runtime(tmp_path: Path) -> None:
    (tmp_path / "shop.py").write_text(USER_SERVER)
    (tmp_path / "test_shop.py").write_text(textwrap.dedent(USER_TESTS))
    result = run_pytest(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "7 passed" in result.stdout, result.stdout


def test_the_plugin_imports_nothing_of_the_runtime_until_a_fixture_is_used() -> None:
    probe = (
        "import sys, typedmcp.pytest_plugin\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('typedmcp.', 'mcp_generated', 'pydantic')))\n"
        "print(loaded)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['typedmcp.pytest_plugin']"


USER_SCRIPT = '''
import asyncio

from typedmcp import McpApp
from typedmcp.testing import connected

app = McpApp("script")


@app.tool()
def ping() -> str:
    return "pong"


async def main() -> None:
    async with connected(app, transport="stdio") as client:
        print((await client.call_tool(name="ping")).structured_content)


if __name__ == "__main__":  # the child runs this file again, under another name: not this
    asyncio.run(main())
'''


def test_stdio_serves_an_app_of_a_script_run_as_main(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(USER_SCRIPT)
    result = subprocess.run(
        [sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "{'result': 'pong'}\n"


def test_a_script_that_connects_without_a_main_guard_is_told_to_add_one(tmp_path: Path) -> None:
    unguarded = USER_SCRIPT.replace('if __name__ == "__main__":', "if True:")
    (tmp_path / "script.py").write_text(unguarded)
    result = subprocess.run(
        [sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
    assert "put the code that connects under `if __name__ == \"__main__\":`" in result.stderr, result.stderr
