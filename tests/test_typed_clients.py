"""Clients are typed with the package the user's code is written against (issue 11, item 3).

Before, ``connect_stdio`` and ``connect_http`` yielded ``Any`` (``client.call_tool(nam=...)``
passed ``mypy --strict``), and results came back as ``mcp_generated.v2026_07_28`` models
whatever package the user had vendored, unless an undocumented ``protocol=`` module was
passed. Now ``client=acme_mcp.client.Client`` (or ``handlers=`` of that package) types the
connection statically, through overloads, and its results are that package's models at run
time; without either, the client is the newest ``mcp_generated`` revision's ``Client``.

A send method's ``meta`` takes a plain mapping beside its model (issue 17, item 3): the
2026-07-28 meta model requires what the runtime fills in itself, so
``meta={"progressToken": ...}`` needed ``# type: ignore``.

A model name the package does not define is an error too (the lazy ``models`` package
hid its ``__getattr__`` from type checkers only since then: every unknown name was ``Any``).

The typing test writes small user files (a vendored package beside them) and runs the
venv's ``mypy --strict`` on them: every line marked ``# error: CODE`` must have that error,
every ``# reveal: TYPE`` that revealed type, and no other line any error.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import REPO_ROOT

import mcp_generated
import mcp_generated.v2026_07_28 as newest
from typedmcp_codegen.generate import GeneratedPackage
from typedmcp_codegen.output import write_tree
from typedmcp import connecting
from typedmcp.connecting import connect_memory
from typedmcp.connecting import SessionOptions
from typedmcp.protocol.client import ClientSession

pytestmark = pytest.mark.anyio

VENDORED = "acme_mcp"  # a project's vendored copy of 2025-11-25

SERVER = '''\
from __future__ import annotations

from typedmcp import RequestContext, ToolError
from acme_mcp import models, server


class Weather(server.ServerHandlers):
    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[server.ClientPeer]
    ) -> models.ListToolsResult:
        schema = models.ToolInputSchema(type="object", properties={"city": {"type": "string"}})
        return models.ListToolsResult(tools=[models.Tool(name="weather", input_schema=schema)])

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[server.ClientPeer]
    ) -> models.CallToolResult:
        if (params.arguments or {}).get("city") != "Oslo":
            raise ToolError("no station there")
        return models.CallToolResult(content=[models.TextContent(text="Sunny")])
'''

MUST_PASS = '''\
from __future__ import annotations

import sys

import mcp_generated.v2025_11_25
from acme_mcp import client as acme
from acme_mcp import models
from typedmcp import (
    HttpTimeouts,
    RequestContext,
    connect_http,
    connect_memory,
    connect_sse,
    connect_stdio,
)
from typedmcp.protocol.stubs import Outbound

from server import Weather


class Roots(acme.ClientHandlers):
    async def list_roots(
        self, params: models.RequestParams | None, ctx: RequestContext[acme.Client]
    ) -> models.ListRootsResult:
        return models.ListRootsResult(roots=[models.Root(uri="file:///srv")])


async def vendored() -> str:
    async with connect_stdio([sys.executable, "server.py"], client=acme.Client, cwd=".") as client:
        reveal_type(client)  # reveal: acme_mcp.client.Client
        result = await client.call_tool(name="weather", arguments={"city": "Oslo"})
        reveal_type(result)  # reveal: acme_mcp.models.call_tool_result.CallToolResult
        block = result.content[0]
        return block.text if isinstance(block, models.TextContent) else ""


async def by_handlers() -> None:
    async with connect_http("http://127.0.0.1:1/mcp", handlers=Roots(), bearer_token="t") as client:
        reveal_type(client)  # reveal: acme_mcp.client.Client
        await client.ping()
    async with connect_sse("http://127.0.0.1:1/sse", client=acme.Client, handlers=Roots()) as same:
        reveal_type(same)  # reveal: acme_mcp.client.Client
    async with connect_memory(Weather(), client_handlers=Roots(), request_timeout=5) as local:
        reveal_type(local)  # reveal: acme_mcp.client.Client


async def over_https() -> None:
    limits = HttpTimeouts(connect=5.0, reply=60.0)
    async with connect_http(
        "https://127.0.0.1:1/mcp", client=acme.Client, verify="ca.pem", cert=("c.pem", "k.pem"),
        proxy="http://proxy:3128", trust_env=False, timeouts=limits, legacy_sse_fallback=False,
    ) as secure:
        reveal_type(secure)  # reveal: acme_mcp.client.Client
    async with connect_sse("https://127.0.0.1:1/sse", verify=False, timeouts=limits) as old:
        reveal_type(old)  # reveal: mcp_generated.v2026_07_28.client.Client


async def default() -> None:
    async with connect_stdio(["weather-server"], log_level="info") as client:
        reveal_type(client)  # reveal: mcp_generated.v2026_07_28.client.Client
        listed = await client.list_tools()
        reveal_type(listed.tools[0].name)  # reveal: str
    async with connect_http("http://127.0.0.1:1/mcp", protocol="auto") as also:
        reveal_type(also)  # reveal: mcp_generated.v2026_07_28.client.Client


async def progress() -> None:
    """Only a progress token (and keys of one's own) in meta: the runtime adds the rest."""
    async with connect_stdio(["weather-server"]) as client:
        await client.call_tool(name="weather", meta={"progressToken": "p1"})
        await client.list_tools(meta={"progressToken": 7, "example.com/trace": "t1"})
    async with connect_stdio(["weather-server"], client=acme.Client) as vendored:
        await vendored.call_tool(name="weather", meta={"progressToken": "p2"})
        await vendored.call_tool(name="weather", meta=models.ParamsMeta(progress_token="p3"))


async def pinned() -> None:
    protocol = mcp_generated.v2025_11_25
    async with connect_stdio(["weather-server"], protocol=protocol) as bare:
        reveal_type(bare)  # reveal: typedmcp.protocol.stubs.Outbound
        assert isinstance(bare, Outbound)
    async with connect_stdio(["weather-server"], protocol=protocol, client=acme.Client) as typed:
        reveal_type(typed)  # reveal: acme_mcp.client.Client
'''

MUST_FAIL = '''\
from __future__ import annotations

import mcp_generated.v2025_11_25
from acme_mcp import client as acme
from acme_mcp import models
from mcp_generated.v2026_07_28 import client as newest
from typedmcp import RequestContext, connect_http, connect_sse, connect_stdio


class WrongParams(acme.ClientHandlers):
    async def list_roots(
        self, params: models.CallToolRequestParams, ctx: RequestContext[acme.Client]  # error: override
    ) -> models.ListRootsResult:
        return models.ListRootsResult(roots=[])


def renamed(params: models.ListToolsRequestParams) -> None:  # error: name-defined
    print(models.ListToolsRequestParams)  # error: attr-defined


async def main() -> None:
    async with connect_stdio(["weather-server"], client=acme.Client) as client:
        await client.call_tool(nam="weather")  # error: call-arg
        result = await client.call_tool(name="weather")
        print(result.contents)  # error: attr-defined
        await client.initialize()  # error: attr-defined
    async with connect_stdio(["weather-server"]) as default:
        await default.ping()  # error: attr-defined
        await default.call_tool(name="weather", meta="p1")  # error: arg-type
    async with connect_stdio(["weather-server"], request_timout=3.0):  # error: call-overload
        pass
    async with connect_http("https://127.0.0.1:1/mcp", client=acme.Client, verfy=False):  # error: call-overload
        pass
    async with connect_http("https://127.0.0.1:1/mcp", timeouts=30.0):  # error: call-overload
        pass
    async with connect_sse("https://127.0.0.1:1/sse", legacy_sse_fallback=False):  # error: call-overload
        pass
    async with connect_stdio(["weather-server"], client=acme.Client, handlers=newest.ClientHandlers()):  # error: misc
        pass
    async with connect_stdio(["weather-server"], protocol=mcp_generated.v2025_11_25) as bare:
        await bare.call_tool(name="weather")  # error: attr-defined
'''

MARK = re.compile(r"# (error|reveal): (\S+)")
REPORTED = re.compile(r"^(\w+\.py):(\d+): (error|note): (.*?)(?:  \[([a-z-]+)\])?$")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def project(
    tmp_path_factory: pytest.TempPathFactory, generate_revision: Callable[[str], GeneratedPackage]
) -> Path:
    """A user's project: the vendored package, a server and the user files."""
    root = tmp_path_factory.mktemp("project")
    write_tree(generate_revision("2025-11-25").files, root / VENDORED)
    for name, text in {"server.py": SERVER, "must_pass.py": MUST_PASS, "must_fail.py": MUST_FAIL}.items():
        (root / name).write_text(text)
    return root


@pytest.fixture(scope="module")
def acme(project: Path) -> ModuleType:
    sys.path.insert(0, str(project))
    try:
        import acme_mcp  # type: ignore[import-not-found]

        return acme_mcp  # type: ignore[no-any-return]
    finally:
        sys.path.remove(str(project))


def expected(project: Path, name: str) -> set[tuple[str, int, str, str]]:
    marks = set()
    for number, line in enumerate((project / name).read_text().splitlines(), 1):
        for kind, value in MARK.findall(line):
            marks.add((name, number, kind, value))
    return marks


def test_mypy_strict_types_user_code_with_the_package_it_is_written_against(project: Path) -> None:
    config = project / "mypy.ini"
    config.write_text(
        "[mypy]\nstrict = True\n"
        f"mypy_path = {REPO_ROOT / 'runtime'}:{REPO_ROOT / 'generated'}\n"
        "[mypy-jsonschema.*]\nignore_missing_imports = True\n"
    )
    ran = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--no-error-summary",
         "--cache-dir", str(project / ".mypy_cache"), "server.py", "must_pass.py", "must_fail.py"],
        cwd=project, capture_output=True, text=True, timeout=600,
    )
    found: set[tuple[str, int, str, str]] = set()
    for line in ran.stdout.splitlines():
        match = REPORTED.match(line)
        assert match, f"unexpected mypy output: {line}\n{ran.stdout}{ran.stderr}"
        name, number, level, text, code = match.groups()
        if level == "error":
            found.add((name, int(number), "error", code or "?"))
        elif text.startswith("Revealed type is "):
            found.add((name, int(number), "reveal", text.removeprefix("Revealed type is ").strip('"')))
    wanted = expected(project, "must_pass.py") | expected(project, "must_fail.py")
    assert found == wanted, ran.stdout


async def test_results_are_the_vendored_packages_models(acme: ModuleType, project: Path) -> None:
    sys.path.insert(0, str(project))
    try:
        from server import Weather  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(project))
    vendored_client = acme.client.Client

    class Roots(acme.client.ClientHandlers):  # type: ignore[misc, name-defined]
        pass

    async def body() -> None:
        async with connect_memory(Weather(), client=vendored_client) as client:
            assert type(client) is vendored_client
            result = await client.call_tool(name="weather", arguments={"city": "Oslo"})
            assert type(result) is acme.models.CallToolResult
            assert type(result.content[0]) is acme.models.TextContent
        async with connect_memory(Weather(), client_handlers=Roots()) as by_handlers:
            assert type(by_handlers) is vendored_client
            listed = await by_handlers.list_tools()
            assert type(listed.tools[0]) is acme.models.Tool
        async with connect_memory(Weather()) as default:
            assert type(default) is newest.client.Client
            assert type(await default.list_tools()) is newest.models.ListToolsResult
        async with connect_memory(Weather(), protocol=acme) as pinned:
            assert type(pinned) is vendored_client

    await asyncio.wait_for(body(), 30)


def test_the_default_client_is_the_newest_revision_the_typing_names() -> None:
    """``DefaultClient`` (the static type without client=/handlers=) is what run time
    picks: the newest ``mcp_generated`` revision. A new revision must move both."""
    assert mcp_generated.REVISIONS[max(mcp_generated.REVISIONS)] == "v2026_07_28"
    source = Path(connecting.__file__).read_text()
    assert "from mcp_generated.v2026_07_28.client import Client as DefaultClient" in source
    assert type(ClientSession().client) is newest.client.Client


def test_a_client_and_handlers_of_different_packages_are_refused(acme: ModuleType) -> None:
    with pytest.raises(TypeError, match="client=Client is of acme_mcp, but the handlers"):
        ClientSession(client=acme.client.Client, handlers=newest.client.ClientHandlers())
    with pytest.raises(TypeError, match="is not a generated Client class"):
        ClientSession(client=dict)


@pytest.mark.parametrize(
    ("launcher", "options", "besides"),
    [
        ("connect_stdio", connecting.StdioConnectOptions, {"client", "handlers", "protocol"}),
        ("connect_http", connecting.HttpConnectOptions, {"client", "handlers", "protocol"}),
        ("connect_sse", connecting.SseConnectOptions, {"client", "handlers", "protocol"}),
        ("connect_memory", connecting.InProcessConnectOptions, {"client", "client_handlers", "protocol"}),
        ("connect_direct", connecting.InProcessConnectOptions, {"client", "client_handlers", "protocol"}),
    ],
)
def test_each_launchers_options_are_typed_in_its_typed_dict(
    launcher: str, options: Any, besides: set[str]
) -> None:
    """The overloads take every option but ``client``/``handlers``/``protocol`` through one
    ``TypedDict``: a keyword added to a launcher must be added there too (and ``**options``
    are the session's)."""
    parameters = inspect.signature(getattr(connecting, launcher)).parameters.values()
    keywords = {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert besides <= keywords
    assert set(options.__annotations__) == (keywords - besides) | set(SessionOptions.__annotations__)
    # and with the same types (as written: both modules use postponed annotations)
    session = inspect.signature(ClientSession).parameters
    signature = inspect.signature(getattr(connecting, launcher)).parameters
    for name, typed in options.__annotations__.items():
        written = getattr(typed, "__forward_arg__", typed)
        implemented = (signature[name] if name in signature else session[name]).annotation
        assert written == implemented, f"{launcher}({name}=...): {written} != {implemented}"


def test_the_session_options_are_the_client_sessions_keywords() -> None:
    parameters = inspect.signature(ClientSession).parameters.values()
    keywords = {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert keywords - {"client"} == set(SessionOptions.__annotations__)
