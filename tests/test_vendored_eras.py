"""A vendored package serves both eras in one step, and says so when it is not taken
(issue 17, requirement 4, item 1).

Before, a server built from a vendored 2025-06-18 package spoke 2025-06-18 only (a lone
package has no ``REVISIONS`` beside it), and a 2026-07-28 client that named its version in
``_meta`` was told ``server/discover before initialize``. Now ``both_eras=True`` (of
``run_stdio``, ``serve``, ``http_app``, and ``server_options`` in process) adds the
runtime's bundled packages for the other era, and without it the request gets -32022
naming the versions the server speaks, its package and the option.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import free_port, wait_listening

import mcp_generated.v2026_07_28 as modern
from typedmcp import VersionError, connect_http, connect_memory, connect_stdio
from typedmcp.connecting import connect_direct
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol.meta import UNSUPPORTED_PROTOCOL_VERSION
from typedmcp.protocol.packages import ProtocolPackage, with_bundled_eras
from typedmcp_codegen.generate import GeneratedPackage
from typedmcp_codegen.output import write_tree

VENDORED = "acme_vendored_mcp"

SERVER = f'''\
from __future__ import annotations

import sys
from typing import Any

from typedmcp import run_stdio
from {VENDORED} import models, server


class Weather(server.ServerHandlers):
    async def list_tools(self, params: Any, ctx: Any) -> models.ListToolsResult:
        schema = models.ToolInputSchema(type="object")
        return models.ListToolsResult(tools=[models.Tool(name="weather", input_schema=schema)])

    async def call_tool(self, params: Any, ctx: Any) -> models.CallToolResult:
        return models.CallToolResult(content=[models.TextContent(type="text", text="Sunny")])


both_eras = "--both-eras" in sys.argv
if "--http" in sys.argv:
    import uvicorn

    from typedmcp import http_app

    port = int(sys.argv[sys.argv.index("--http") + 1])
    uvicorn.run(http_app(Weather(), both_eras=both_eras), host="127.0.0.1", port=port, log_level="warning")
else:
    run_stdio(Weather(), both_eras=both_eras)
'''


@pytest.fixture(scope="module")
def vendored(
    tmp_path_factory: pytest.TempPathFactory, generate_revision: Callable[[str], GeneratedPackage]
) -> Iterator[ModuleType]:
    """A 2025-06-18 package generated into a fresh folder (beside a server script), imported."""
    root = tmp_path_factory.mktemp("vendored-eras")
    write_tree(generate_revision("2025-06-18").files, root / VENDORED)
    (root / "server.py").write_text(SERVER)
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    try:
        yield importlib.import_module(VENDORED)
    finally:
        sys.path.remove(str(root))


def weather(package: ModuleType) -> Any:
    """A handler object of ``package`` (tools/list and tools/call)."""
    models = package.models

    class Weather(package.server.ServerHandlers):  # type: ignore[misc, name-defined]
        async def list_tools(self, params: Any, ctx: Any) -> Any:
            schema = models.ToolInputSchema(type="object")
            return models.ListToolsResult(tools=[models.Tool(name="weather", input_schema=schema)])

        async def call_tool(self, params: Any, ctx: Any) -> Any:
            return models.CallToolResult(content=[models.TextContent(type="text", text="Sunny")])

    return Weather()


def test_a_lone_vendored_package_gains_the_bundled_packages_of_the_other_era(vendored: ModuleType) -> None:
    combined = with_bundled_eras([ProtocolPackage.of(vendored)])
    assert [p.version for p in combined] == ["2026-07-28", "2025-06-18"]
    assert combined[0].module is modern and combined[1].module is vendored
    # a package list that speaks both eras already gains nothing
    both = [ProtocolPackage.of(modern), ProtocolPackage.of(vendored)]
    assert with_bundled_eras(both) == sorted(both, key=lambda p: p.version, reverse=True)


@pytest.mark.parametrize("connector", [connect_memory, connect_direct], ids=["memory", "direct"])
def test_without_the_step_a_2026_client_is_told_why_and_how(
    vendored: ModuleType, connector: Any, caplog: pytest.LogCaptureFixture
) -> None:
    async def body() -> None:
        with pytest.raises(VersionError) as refused:
            async with connector(weather(vendored), protocol=modern):
                pass
        message = str(refused.value)
        assert "the server speaks 2025-06-18; this client speaks 2026-07-28" in message
        assert f"this server's package {VENDORED} speaks only 2025-06-18" in message
        assert "both_eras=True" in message
        assert "before initialize" not in message
        # a dual-era client falls back to the handshake, as before
        async with connector(weather(vendored), protocol=[modern, vendored]) as client:
            assert client.session.era == "handshake"
            assert client.session.protocol_version == "2025-06-18"

    with caplog.at_level(logging.INFO, logger="typedmcp"):
        asyncio.run(body())
    assert any("both_eras=True" in record.message for record in caplog.records)


def test_the_refusal_is_unsupported_protocol_version_with_the_supported_list(vendored: ModuleType) -> None:
    from typedmcp.stateless.router import build_router

    router = build_router(weather(vendored))
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    for method in ("server/discover", "tools/list"):
        with pytest.raises(RpcError) as refused:
            asyncio.run(router.on_request(method, {"_meta": meta}, 1))
        assert refused.value.code == UNSUPPORTED_PROTOCOL_VERSION
        assert refused.value.data == {"supported": ["2025-06-18"], "requested": "2026-07-28"}


@pytest.mark.parametrize("connector", [connect_memory, connect_direct], ids=["memory", "direct"])
def test_both_eras_serves_2026_and_the_handshake_from_a_vendored_package(
    vendored: ModuleType, connector: Any
) -> None:
    async def body() -> None:
        options = {"both_eras": True}
        async with connector(weather(vendored), protocol=modern, server_options=options) as client:
            assert client.session.era == "stateless"
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["weather"] and listed.ttl_ms == 0
            called = await client.call_tool(name="weather", arguments={})
            assert called.content[0].text == "Sunny"
        async with connector(weather(vendored), protocol=vendored, server_options=options) as old:
            assert old.session.era == "handshake" and old.session.protocol_version == "2025-06-18"
            assert (await old.call_tool(name="weather", arguments={})).content[0].text == "Sunny"

    asyncio.run(body())


@pytest.mark.parametrize("step", [True, False], ids=["both_eras", "without"])
def test_over_stdio_both_eras_is_one_keyword_of_run_stdio(vendored: ModuleType, step: bool) -> None:
    root = Path(vendored.__file__ or "").parent.parent
    command = [sys.executable, str(root / "server.py"), *(["--both-eras"] if step else [])]

    async def body() -> None:
        if not step:
            with pytest.raises(VersionError, match="both_eras=True"):
                async with connect_stdio(command, protocol=modern, cwd=str(root)):
                    pass
            return
        async with connect_stdio(command, protocol=modern, cwd=str(root)) as client:
            assert client.session.era == "stateless"
            called = await client.call_tool(name="weather", arguments={})
            assert called.content[0].text == "Sunny"

    asyncio.run(asyncio.wait_for(body(), 60))


@pytest.mark.parametrize("step", [True, False], ids=["both_eras", "without"])
def test_over_http_both_eras_is_one_keyword_of_http_app(vendored: ModuleType, step: bool) -> None:
    root = Path(vendored.__file__ or "").parent.parent
    port = free_port()
    command = [sys.executable, str(root / "server.py"), "--http", str(port), *(["--both-eras"] if step else [])]
    process = subprocess.Popen(command, cwd=root)
    url = f"http://127.0.0.1:{port}/mcp"

    async def body() -> None:
        if not step:
            with pytest.raises(VersionError) as refused:
                async with connect_http(url, protocol=modern, legacy_sse_fallback=False, remember_era=False):
                    pass
            assert f"this server's package {VENDORED} speaks only 2025-06-18" in str(refused.value)
            assert "both_eras=True" in str(refused.value)
            async with connect_http(url, protocol=[modern, vendored], remember_era=False) as client:
                assert client.session.era == "handshake"
                assert (await client.call_tool(name="weather", arguments={})).content[0].text == "Sunny"
            return
        async with connect_http(url, protocol=modern, remember_era=False) as client:
            assert client.session.era == "stateless"
            assert (await client.call_tool(name="weather", arguments={})).content[0].text == "Sunny"

    try:
        wait_listening(process, port)
        asyncio.run(asyncio.wait_for(body(), 60))
    finally:
        process.terminate()
        process.wait(10)
